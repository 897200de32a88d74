// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_LATCH_HPP
#define ASIO_SYNC_LATCH_HPP

#include <asio_sync/call_site.hpp>
#include <asio_sync/detail/deadline.hpp>
#include <asio_sync/detail/event_core.hpp>
#include <asio_sync/detail/event_wait.hpp>
#include <asio_sync/detail/latch_count.hpp>
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

/// An asynchronous single-use countdown latch for Asio, as `std::latch` but without blocking.
///
/// The latch starts with a count; `count_down(n)` lowers it, and once it reaches zero every queued
/// `async_wait` completes, oldest first, and every later wait completes at once. It never resets:
/// for a join of N tasks, give it N and let each task count down once.
///
/// Counting below zero is a programming error: `count_down(n)` with `n` greater than the count
/// throws `std::invalid_argument` and leaves the count as it was.
///
/// Its waits are those of a `basic_manual_reset_event` that is set once the count reaches zero
/// (the contract of \ref async_waits, the event's fault rule, `use_awaitable` on an open latch
/// continuing without suspending).
///
/// **Thread safety.** Every member function may be called concurrently from any thread.
/// `count_down` that does not reach zero, `try_wait`, `count` and a wait on an open latch are
/// lock-free.
///
/// **Memory ordering.** Everything each thread did before its `count_down` happens-before the
/// completion of every wait, and before a `try_wait()` that returns true.
///
/// **Not copyable, not movable:** queued operations refer to the latch by address.
///
/// @tparam Executor The I/O executor: the default executor for completion handlers, and the
/// context whose shutdown destroys pending operations.
template <class Executor = boost::asio::any_io_executor>
class basic_latch
{
public:
    /// The type of the executor associated with the latch.
    using executor_type = Executor;

    /// Rebinds the latch to another executor type.
    ///
    /// @tparam OtherExecutor The executor type to rebind to.
    template <class OtherExecutor>
    struct rebind_executor
    {
        /// The latch type when rebound to the specified executor.
        using other = basic_latch<OtherExecutor>;
    };

    /// Constructs a latch with the count `expected`; a count of 0 makes it open at once.
    ///
    /// \ctorex
    /// @param expected The initial count.
    basic_latch(const executor_type& ex, std::size_t expected)
        : executor_(ex), impl_(boost::asio::query(executor_, boost::asio::execution::context), expected == 0),
          count_(expected)
    {
        impl_.names = {"latch", "async_wait", this};
    }

    /// Constructs a latch that uses the context's executor.
    ///
    /// \ctorctx
    /// @param expected The initial count.
    template <
        class ExecutionContext,
        std::enable_if_t<std::is_convertible_v<ExecutionContext&, boost::asio::execution_context&>, int> = 0>
    basic_latch(ExecutionContext& ctx, std::size_t expected)
        : basic_latch(executor_type(ctx.get_executor()), expected)
    {
    }

    /// Not copyable (nor movable): operations refer to the latch by address.
    basic_latch(const basic_latch&) = delete;
    /// Not copy-assignable (nor move-assignable).
    basic_latch& operator=(const basic_latch&) = delete;

    /// Destroys the latch. Queued waits complete with `boost::asio::error::operation_aborted`
    /// (posted, oldest first); none is invoked inside the destructor. No cancellation signal bound
    /// to one of its waits may be emitted after this.
    ~basic_latch() = default;

    /// Returns the executor associated with the latch.
    const executor_type& get_executor() const noexcept { return executor_; }

    /// Lowers the count by `n`. The call that brings it to zero completes every queued wait,
    /// oldest first (posted, never inside this call). `count_down(0)` does nothing.
    ///
    /// @param n How much to lower the count by.
    /// @throws std::invalid_argument if `n > count()`; the count is left as it was.
    void count_down(std::size_t n = 1)
    {
        if (count_.count_down(n))
            impl_.set();
    }

    /// Returns true once the count has reached zero. Lock-free.
    bool try_wait() const noexcept { return impl_.core.is_set(); }

    /// Returns the current count. Lock-free.
    std::size_t count() const noexcept { return count_.load(); }

    /// \setobserver
    void set_observer(wait_observer* observer) noexcept
    {
        impl_.observer.store(observer, std::memory_order_release);
    }

    /// Completes every queued wait with `boost::asio::error::operation_aborted`, oldest first;
    /// the count is not affected.
    ///
    /// @returns the number of waits aborted.
    std::size_t cancel() { return impl_.cancel(); }

    /// Starts an asynchronous wait until the count reaches zero.
    ///
    /// On an open latch the wait completes at once (posted, never inline); otherwise it is queued
    /// until the `count_down` that brings the count to zero.
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
    detail::event_impl impl_; // set once the count reaches zero
    detail::latch_count<> count_;
};

/// A latch with the default executor type, `boost::asio::any_io_executor`.
using latch = basic_latch<>;

} // namespace asio_sync

#endif // ASIO_SYNC_LATCH_HPP
