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
/// The waits keep the contract of \ref async_waits; `set`, `reset` and `cancel` never invoke a
/// handler. A completion that cannot be submitted loses only its own handler: the event stays set,
/// so nothing is lost, and `set` still completes every other waiter and does not throw. An
/// `async_wait` decided at once whose completion cannot be submitted throws, and the event is as
/// it was. With `boost::asio::use_awaitable` a wait on a set event continues without suspending
/// (after 64 such waits in a row on a thread, the next one first yields through the executor).
///
/// **Thread safety.** Every member function may be called concurrently from any thread.
/// `is_set`, `reset` and a wait on a set event are lock-free.
///
/// **Memory ordering.** Everything a thread did before `set()` happens-before the completion of a
/// wait that the set lets through, and before an `is_set()` that returns true because of it.
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
    /// \ctorex
    /// @param initially_set Whether the event starts set.
    explicit basic_manual_reset_event(const executor_type& ex, bool initially_set = false)
        : executor_(ex), impl_(boost::asio::query(executor_, boost::asio::execution::context), initially_set)
    {
        impl_.names = {"manual_reset_event", "async_wait", this};
    }

    /// Constructs an event that uses the context's executor.
    ///
    /// \ctorctx
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

    /// \setobserver
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
    /// until the next `set()`, which completes it with every other queued wait, oldest first. A
    /// cancelled wait leaves the queue; the event stays set for everyone else.
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
        return detail::async_event_wait(executor_, impl_, std::forward<WaitToken>(token),
                                        detail::no_deadline(), where);
    }

    /// Starts `async_wait` that gives up after `timeout`.
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
        return detail::async_event_wait(executor_, impl_, std::forward<WaitToken>(token),
                                        detail::deadline_after(timeout), where);
    }

    /// Starts `async_wait` that gives up at `expiry`.
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
