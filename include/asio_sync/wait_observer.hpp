// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_WAIT_OBSERVER_HPP
#define ASIO_SYNC_WAIT_OBSERVER_HPP

/// @file
/// The interface through which a primitive reports its waits: asio_sync::wait_observer and
/// asio_sync::wait_outcome.

#include <chrono>

namespace asio_sync {

/// How an observed wait ended.
enum class wait_outcome
{
    /// Granted: the wait got what it asked for.
    granted,
    /// Cancelled: per-operation cancellation, `cancel()`, the primitive's destruction, or the
    /// context's shutdown (the handler then is destroyed without being invoked).
    cancelled,
    /// Its deadline passed first (`asio_sync::error::timed_out`).
    timed_out,
    /// Failed otherwise: the semaphore was closed, its capacity was lowered below the request,
    /// or the timer of a timed wait could not be started.
    failed,
};

/// Receives the waits of the primitives it is attached to (`set_observer` on each of them): each
/// wait that queues, once when it is queued and once when it ends, with how long it waited.
///
/// A lock, acquire or wait decided at once, without queueing, is not a wait and is not reported:
/// the lock-free paths never look at the observer, so a primitive without one costs what it cost
/// before, and one with an observer costs nothing more until something has to wait.
///
/// **Where the calls run.** `on_queued` runs on the thread that starts the wait, after it is
/// queued; `on_finished` on the thread that ends it (the one that releases, unlocks, sets, cancels,
/// or runs the timer's handler, or the one that shuts the context down), before the wait's
/// completion is submitted. Neither runs under the primitive's lock. The two calls of one wait
/// may run on different threads, at the same time, in either order: an observer shared between
/// threads must be thread-safe, and should be quick, as it runs inside the caller's `release`,
/// `unlock` or `set`.
///
/// **Exceptions.** An exception thrown by either function is caught and discarded: the wait goes
/// on, and the release or cancellation that reported it completes as if nobody observed it. A
/// function that must not lose a report should not throw.
///
/// **Lifetime.** The observer must outlive every wait queued while it was attached; attach it
/// before the primitive is used and detach it (`set_observer(nullptr)`) only once no wait is in
/// flight.
class wait_observer
{
public:
    /// The clock the wait times are measured on.
    using clock = std::chrono::steady_clock;

    /// Called when a wait has been queued.
    virtual void on_queued() = 0;

    /// Called when a queued wait ends, before its completion is submitted.
    ///
    /// @param outcome How it ended.
    /// @param waited From the moment it was queued until now.
    virtual void on_finished(wait_outcome outcome, clock::duration waited) = 0;

protected:
    /// Not destroyed through this interface.
    ~wait_observer() = default;
};

} // namespace asio_sync

#endif // ASIO_SYNC_WAIT_OBSERVER_HPP
