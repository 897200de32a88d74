// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_MANUAL_RESET_EVENT_HPP
#define ASIO_SYNC_MANUAL_RESET_EVENT_HPP

#include <asio_sync/call_site.hpp>
#include <asio_sync/detail/deadline.hpp>
#include <asio_sync/detail/event_core.hpp>
#include <asio_sync/detail/event_wait.hpp>
#include <asio_sync/wait_observer.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/execution/context.hpp>
#include <boost/asio/execution_context.hpp>
#include <boost/asio/query.hpp>
#include <boost/system/error_code.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <type_traits>
#include <utility>

namespace asio_sync {

/// An asynchronous manual-reset event for Asio: once set, it lets every waiter through until it is
/// reset.
///
/// `set()` completes every queued `async_wait`, oldest first, and the event stays set: later waits
/// complete at once (posted) until `reset()`. A set event is what a "ready" or "started" signal
/// needs: any number of tasks wait for it, however late they arrive.
///
/// **Completion.** A handler is never invoked from inside `async_wait`, `set`, `reset`, `cancel`
/// or the destructor, and never while the event's internal lock is held. It runs through its
/// associated executor (by default the event's), as if by `boost::asio::post`, and the operation
/// keeps that executor's work outstanding until then.
///
/// **Faults.** A completion that cannot be submitted (the handler's associated allocator or
/// executor throws) loses only its own handler, which is destroyed without being invoked; the
/// event stays set, so nothing is lost, and `set` still completes every other waiter and does not
/// throw. An `async_wait` decided at once whose completion cannot be submitted throws, and the
/// event is as it was.
///
/// **Allocation.** A wait on a set event allocates nothing of its own. A wait that is queued
/// allocates one operation object with the handler's associated allocator; nothing else.
///
/// **Thread safety.** Every member function may be called concurrently from any thread.
/// `is_set`, `reset` and a wait on a set event are lock-free.
///
/// **Memory ordering.** Everything a thread did before `set()` happens-before the completion of a
/// wait that the set lets through, and before an `is_set()` that returns true because of it.
///
/// **Lifetime.** The event must outlive any call on it; destroying it aborts the waits still
/// queued, and no cancellation signal bound to one of its waits may be emitted afterwards. It may
/// outlive its execution context: context shutdown destroys the queued waits' handlers without
/// invoking them.
///
/// **Not copyable, not movable:** queued operations refer to the event by address.
///
/// @tparam Executor The I/O executor: the default executor for completion handlers, and the
/// context whose shutdown destroys pending operations.
template <class Executor = boost::asio::any_io_executor>
class basic_manual_reset_event
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
        using other = basic_manual_reset_event<OtherExecutor>;
    };

    /// Constructs an event, clear unless `initially_set`.
    ///
    /// @param ex The I/O executor: the default executor of completion handlers.
    /// @param initially_set Whether the event starts set.
    explicit basic_manual_reset_event(const executor_type& ex, bool initially_set = false)
        : executor_(ex), impl_(boost::asio::query(executor_, boost::asio::execution::context), initially_set)
    {
        impl_.names = {"manual_reset_event", "async_wait", this};
    }

    /// Constructs an event that uses the context's executor.
    ///
    /// @tparam ExecutionContext An execution context, such as `boost::asio::io_context`, whose
    /// executor converts to `executor_type`.
    /// @param ctx The execution context; its `get_executor()` becomes the I/O executor.
    /// @param initially_set Whether the event starts set.
    template <
        class ExecutionContext,
        std::enable_if_t<std::is_convertible_v<ExecutionContext&, boost::asio::execution_context&>, int> = 0>
    explicit basic_manual_reset_event(ExecutionContext& ctx, bool initially_set = false)
        : basic_manual_reset_event(executor_type(ctx.get_executor()), initially_set)
    {
    }

    /// Not copyable (nor movable): operations refer to the event by address.
    basic_manual_reset_event(const basic_manual_reset_event&) = delete;
    /// Not copy-assignable (nor move-assignable).
    basic_manual_reset_event& operator=(const basic_manual_reset_event&) = delete;

    /// Destroys the event. Queued waits complete with `boost::asio::error::operation_aborted`
    /// (posted, oldest first); none is invoked inside the destructor. No cancellation signal bound
    /// to one of its waits may be emitted after this.
    ~basic_manual_reset_event() = default;

    /// Returns the executor associated with the event.
    const executor_type& get_executor() const noexcept { return executor_; }

    /// Sets the event: every queued wait completes successfully, oldest first, and later waits
    /// complete at once until `reset()`. Setting a set event does nothing more.
    void set() { impl_.set(); }

    /// Clears the event: later waits queue until the next `set()`. Waits the last set already
    /// completed are not affected. Lock-free.
    void reset() noexcept { impl_.core.reset(); }

    /// Returns true while the event is set. Lock-free.
    bool is_set() const noexcept { return impl_.core.is_set(); }

    /// Attaches `observer` to the event's waits, or detaches it (null): every wait that
    /// queues from now on is reported to it, when queued and when it ends, with how long it waited
    /// (see `wait_observer`). Waits decided at once are not reported, and the lock-free
    /// paths never look at the observer. See [Observing waits](observing.md).
    ///
    /// @param observer The observer, or null. It must outlive every wait queued while it is
    /// attached.
    void set_observer(wait_observer* observer) noexcept
    {
        impl_.observer.store(observer, std::memory_order_release);
    }

    /// Completes every queued wait with `boost::asio::error::operation_aborted`, oldest first;
    /// the event stays as it is.
    ///
    /// @returns the number of waits aborted.
    std::size_t cancel() { return impl_.cancel(); }

    /// Starts an asynchronous wait until the event is set.
    ///
    /// On a set event the wait completes at once (posted, never inline); otherwise it is queued
    /// until the next `set()`, which completes it with every other queued wait, oldest first.
    ///
    /// @par Completion signature
    /// `void(boost::system::error_code)`.
    ///
    /// @par Per-operation cancellation
    /// `boost::asio::cancellation_type::terminal`, `partial` and `total` are supported and do the
    /// same: the wait leaves the queue and completes with `operation_aborted`. A cancellation that
    /// races a `set()` has exactly one outcome: success or `operation_aborted`. Either way the
    /// event stays set for everyone else. A wait decided at initiation is not cancellable.
    ///
    /// @par Executor
    /// The handler is submitted to its associated executor (default: `get_executor()`) as if by
    /// `boost::asio::post`; outstanding work is tracked on it from initiation until then. With
    /// `boost::asio::use_awaitable` a wait on a set event continues without suspending (after 64
    /// such waits in a row on a thread, the next one first yields through the executor).
    ///
    /// @par Errors
    /// - none: the event was set.
    /// - `boost::asio::error::operation_aborted`: per-operation cancellation, `cancel()`, or the
    ///   event's destruction, while the wait was queued.
    /// .
    /// If the completion of a wait decided at once cannot be submitted, this function throws what
    /// the executor or allocator threw; a queued wait that cannot allocate its operation throws
    /// and changes nothing.
    ///
    /// @par Object lifetimes
    /// The event must exist for the whole call; afterwards it may be destroyed while the wait is
    /// queued, which then completes with `operation_aborted`. A cancellation signal bound to the
    /// operation must not be emitted after the event is destroyed: its cancellation handler refers
    /// to the event (the behaviour is undefined).
    ///
    /// @par Thread safety
    /// May be called concurrently with any member function.
    ///
    /// @param token The completion token.
    /// @returns what the token makes of the operation.
    /// @param where Where the wait is started, for the holder registry: leave it defaulted.
    template <BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code))
                  WaitToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_wait(WaitToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type),
                    call_site where = call_site())
    {
        return detail::async_event_wait(executor_, impl_, std::forward<WaitToken>(token),
                                        detail::no_deadline(), where);
    }

    /// Starts an asynchronous wait until the event is set, giving up after `timeout`: `async_wait` with a
    /// time limit.
    ///
    /// Everything said of `async_wait` holds, and in addition the wait completes with
    /// `asio_sync::error::timed_out` if the event has not been set when the time runs out. A `set()` that
    /// races the deadline has exactly one outcome: success or `timed_out`. A wait decided at once starts no
    /// timer. See [Deadlines](deadlines.md).
    ///
    /// @par Completion signature
    /// `void(boost::system::error_code)`.
    ///
    /// @par Per-operation cancellation
    /// Terminal, partial and total, as for `async_wait`; reported as `operation_aborted`, never as
    /// `timed_out`. The timer is cancelled with the operation.
    ///
    /// @par Executor
    /// As `async_wait`. The timer runs on `get_executor()`.
    ///
    /// @par Errors
    /// Those of `async_wait`, and
    /// - `asio_sync::error::timed_out`: the time ran out first;
    /// - `boost::asio::error::no_memory`: the wait was queued but its timer could not be started,
    ///   so it left the queue rather than wait without a limit.
    ///
    /// @par Thread safety
    /// May be called concurrently with any member function.
    ///
    /// @par Object lifetimes
    /// The object may be destroyed, and the context may shut down, while the timer is pending. A
    /// wait that is queued allocates one object, which holds the timer, and the timer's wait, both
    /// with the handler's associated allocator.
    ///
    /// @tparam Rep The arithmetic type of the duration's count.
    /// @tparam Period The duration's tick period.
    /// @param timeout How long to wait once queued, on `std::chrono::steady_clock`. Zero or
    /// negative: give up unless the wait can be decided at once.
    /// @param token The completion token.
    /// @returns what the token makes of the operation.
    /// @param where Where the wait is started, for the holder registry: leave it defaulted.
    template <class Rep, class Period,
              BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code))
                  WaitToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_wait_for(const std::chrono::duration<Rep, Period>& timeout,
                        WaitToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type),
                        call_site where = call_site())
    {
        return detail::async_event_wait(executor_, impl_, std::forward<WaitToken>(token),
                                        detail::deadline_after(timeout), where);
    }

    /// Starts an asynchronous wait until the event is set, giving up at `expiry`: `async_wait_for` with a
    /// point in time instead of a duration.
    ///
    /// @par Completion signature
    /// `void(boost::system::error_code)`.
    ///
    /// @par Per-operation cancellation
    /// Terminal, partial and total, as for `async_wait`; reported as `operation_aborted`.
    ///
    /// @par Executor
    /// As `async_wait`. The timer runs on `get_executor()`.
    ///
    /// @par Errors
    /// Those of `async_wait_for`.
    ///
    /// @par Thread safety
    /// May be called concurrently with any member function.
    ///
    /// @par Object lifetimes
    /// As `async_wait_for`.
    ///
    /// @tparam Clock The deadline's clock. The timer runs on `std::chrono::steady_clock`; a
    /// deadline of another clock is converted once, at the call, into the time left until it.
    /// @tparam Duration The time point's duration.
    /// @param expiry When to give up; a deadline already past gives up unless the wait can be
    /// decided at once.
    /// @param token The completion token.
    /// @returns what the token makes of the operation.
    /// @param where Where the wait is started, for the holder registry: leave it defaulted.
    template <class Clock, class Duration,
              BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code))
                  WaitToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_wait_until(const std::chrono::time_point<Clock, Duration>& expiry,
                          WaitToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type),
                          call_site where = call_site())
    {
        return detail::async_event_wait(executor_, impl_, std::forward<WaitToken>(token),
                                        detail::deadline_at(expiry), where);
    }

private:
    executor_type executor_;
    detail::event_impl impl_;
};

/// A manual-reset event with the default executor type, `boost::asio::any_io_executor`.
using manual_reset_event = basic_manual_reset_event<>;

} // namespace asio_sync

#endif // ASIO_SYNC_MANUAL_RESET_EVENT_HPP
