// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_AUTO_RESET_EVENT_HPP
#define ASIO_SYNC_AUTO_RESET_EVENT_HPP

#include <asio_sync/call_site.hpp>
#include <asio_sync/detail/access.hpp>
#include <asio_sync/semaphore.hpp>
#include <asio_sync/wait_observer.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/execution_context.hpp>
#include <boost/system/error_code.hpp>

#include <chrono>
#include <cstddef>
#include <type_traits>
#include <utility>

namespace asio_sync {

/// An asynchronous auto-reset event for Asio: a set lets exactly one waiter through.
///
/// `set()` completes the oldest queued `async_wait`, or, if nobody waits, leaves the event set so
/// that the next wait completes at once and clears it. A set event stays set once: setting it
/// again does nothing, so a set is never handed to two waiters. A wait that is cancelled never
/// swallows a set: a set that races the cancellation either completes the wait successfully or
/// passes to the next waiter (or stays set).
///
/// This is exactly a `basic_semaphore` bounded at one permit whose release saturates, and it is
/// built on one: every guarantee of the semaphore holds for `async_wait` as for `async_acquire(1)`
/// (the contract of \ref async_waits, and the semaphore's **Faults** rule: the set of a completion
/// that cannot be delivered passes to the next waiter or stays). `is_set`, `reset` and a wait on a
/// set event are lock-free; `set` takes the internal lock for a moment (see `set`).
///
/// **Memory ordering.** Everything a thread did before `set()` happens-before the completion of
/// the wait that this set lets through (or the `reset()` that clears it).
///
/// **Not copyable, not movable:** queued operations refer to the event by address.
///
/// @tparam Executor The I/O executor: the default executor for completion handlers, and the
/// context whose shutdown destroys pending operations.
template <class Executor = boost::asio::any_io_executor>
class basic_auto_reset_event
{
public:
    /// The type of the executor associated with the event.
    using executor_type = Executor;

    /// Rebinds the event to another executor type.
    ///
    /// @tparam OtherExecutor The executor type to rebind to.
    template <class OtherExecutor>
    struct rebind_executor
    {
        /// The event type when rebound to the specified executor.
        using other = basic_auto_reset_event<OtherExecutor>;
    };

    /// Constructs an event, clear unless `initially_set`.
    ///
    /// \ctorex
    /// @param initially_set Whether the event starts set.
    explicit basic_auto_reset_event(const executor_type& ex, bool initially_set = false)
        : signal_(ex, initially_set ? 1 : 0, 1)
    {
        detail::access::entry(signal_).names = {"auto_reset_event", "async_wait", this};
    }

    /// Constructs an event that uses the context's executor.
    ///
    /// \ctorctx
    /// @param initially_set Whether the event starts set.
    template <
        class ExecutionContext,
        std::enable_if_t<std::is_convertible_v<ExecutionContext&, boost::asio::execution_context&>, int> = 0>
    explicit basic_auto_reset_event(ExecutionContext& ctx, bool initially_set = false)
        : basic_auto_reset_event(executor_type(ctx.get_executor()), initially_set)
    {
    }

    /// Not copyable (nor movable): operations refer to the event by address.
    basic_auto_reset_event(const basic_auto_reset_event&) = delete;
    /// Not copy-assignable (nor move-assignable).
    basic_auto_reset_event& operator=(const basic_auto_reset_event&) = delete;

    /// Destroys the event. Queued waits complete with `boost::asio::error::operation_aborted`
    /// (posted, oldest first); none is invoked inside the destructor. No cancellation signal bound
    /// to one of its waits may be emitted after this.
    ~basic_auto_reset_event() = default;

    /// Returns the executor associated with the event.
    const executor_type& get_executor() const noexcept { return signal_.get_executor(); }

    /// Sets the event: completes the oldest queued wait, or, if nobody waits, leaves the event set
    /// for the next wait. Setting a set event does nothing. Sets made at the same time from other
    /// threads are decided one after the other under the internal lock, so each of them that finds
    /// a wait queued completes one.
    void set() noexcept { signal_.try_release(1); }

    /// Clears the event if it is set. Lock-free.
    ///
    /// @returns true if the event was set (this call consumed the set).
    bool reset() noexcept { return signal_.try_acquire(1); }

    /// Returns true while the event is set and nobody has consumed the set. Lock-free.
    bool is_set() const noexcept { return signal_.available() != 0; }

    /// Completes every queued wait with `boost::asio::error::operation_aborted`, oldest first;
    /// the event stays as it is.
    ///
    /// @returns the number of waits aborted.
    std::size_t cancel() { return signal_.cancel(); }

    /// Starts an asynchronous wait until a set.
    ///
    /// On a set event the wait consumes the set and completes at once (posted, never inline);
    /// otherwise it is queued behind earlier waits until a `set()` reaches it. A cancellation that
    /// races a `set()` has exactly one outcome: success (the wait consumed the set) or
    /// `operation_aborted` (the set passed to the next waiter, or the event stays set). If the
    /// completion of a wait decided at once cannot be submitted, this function throws, and the
    /// event
    /// is set again.
    ///
    /// Racing the wait against a timer with `||` (Asio's awaitable operators) can lose a set: when
    /// the wait takes a set just as the timer wins, `||` reports the timer and discards the wait's
    /// success, and the event is clear although nobody acted on the set; use `async_wait_for`.
    /// `basic_semaphore::async_acquire` has the same hazard (see the FAQ).
    /// `experimental::make_parallel_group` with `wait_for_one` hands its handler the wait's own
    /// result instead: a wait that succeeded took the set, to act on or to put back with `set()`.
    ///
    /// \ecsig
    /// \aborterrors
    /// \asyncwait
    /// \waitparams
    template <BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code))
                  WaitToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_wait(WaitToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type),
                    call_site where = call_site())
    {
        return signal_.async_acquire(1, std::forward<WaitToken>(token), where);
    }

    /// Starts `async_wait` that gives up after `timeout`; a set racing the deadline is consumed or
    /// goes to the next wait, never lost.
    ///
    /// \ecsig
    /// \timedwait
    /// \forparams
    /// \waitparams
    template <class Rep, class Period,
              BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code))
                  WaitToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_wait_for(const std::chrono::duration<Rep, Period>& timeout,
                        WaitToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type),
                        call_site where = call_site())
    {
        return signal_.async_acquire_for(1, timeout, std::forward<WaitToken>(token), where);
    }

    /// Starts `async_wait` that gives up at `expiry`; a set racing the deadline is consumed or goes
    /// to the next wait, never lost.
    ///
    /// \ecsig
    /// \timedwait
    /// \untilparams
    /// \waitparams
    template <class Clock, class Duration,
              BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code))
                  WaitToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_wait_until(const std::chrono::time_point<Clock, Duration>& expiry,
                          WaitToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type),
                          call_site where = call_site())
    {
        return signal_.async_acquire_until(1, expiry, std::forward<WaitToken>(token), where);
    }

    /// \setobserver
    void set_observer(wait_observer* observer) noexcept { signal_.set_observer(observer); }

private:
    // One permit at most: the set. A wait takes it out of circulation, making room for the next.
    basic_semaphore<Executor> signal_;
};

/// An auto-reset event with the default executor type, `boost::asio::any_io_executor`.
using auto_reset_event = basic_auto_reset_event<>;

} // namespace asio_sync

#endif // ASIO_SYNC_AUTO_RESET_EVENT_HPP
