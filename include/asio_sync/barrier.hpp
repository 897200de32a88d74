// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_BARRIER_HPP
#define ASIO_SYNC_BARRIER_HPP

#include <asio_sync/detail/barrier_arrival.hpp>
#include <asio_sync/detail/barrier_core.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/execution/context.hpp>
#include <boost/asio/execution_context.hpp>
#include <boost/asio/query.hpp>
#include <boost/system/error_code.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <type_traits>
#include <utility>

namespace asio_sync {

/// An asynchronous reusable barrier for Asio, as `std::barrier` but without blocking.
///
/// A barrier expects a number of participants in each phase. Each one arrives, with
/// `async_arrive_and_wait` (and waits for the others) or `arrive_and_drop` (and leaves: every
/// later phase expects one participant fewer). The arrival that completes a phase runs the
/// completion function, if any, then completes every waiting arrival of the phase, oldest first,
/// each with the phase number (0 for the first phase). The barrier is then ready for the next
/// phase at once: a participant may arrive again as soon as its handler runs.
///
/// **The completion function** runs once per phase, on the thread that makes the last arrival,
/// inside that call (`async_arrive_and_wait` or `arrive_and_drop`), without the barrier's internal
/// lock held, and before the completion of any waiter of that phase is submitted: nobody
/// continues before it has returned. It may call the barrier's observers (`phase()` is already
/// the next phase's number). If it throws, the phase has completed all the same: its waiters
/// complete successfully, then the exception propagates out of the call that made the last
/// arrival; an `async_arrive_and_wait` that throws this way never invokes its own handler (its
/// arrival has counted). A coroutine awaiting with `use_awaitable` or `as_tuple(use_awaitable)`
/// gets the exception from its `co_await`; one awaiting a `deferred` operation does not: that
/// arrival starts once the coroutine has suspended, and the exception propagates from the
/// executor that resumed it (out of its `run()`), the coroutine destroyed without resuming, as
/// with any initiating function that throws there. `std::barrier` requires a completion function
/// that does not throw; a throwing one is best kept to `use_awaitable` and plain handlers. Two
/// phases complete one after the other, but their completion functions may overlap if an arrival
/// of the next phase comes from a thread other than the one running the function (only possible
/// with arrivals that do not wait, or with one participant). The function is stored once, at
/// construction.
///
/// The arrivals keep the contract of \ref async_waits. **Faults:** a completion that cannot be
/// submitted loses only its own handler; its arrival has counted, and the call that completed the
/// phase still completes every other waiter and does not throw because of it. Only the last
/// arrival's own completion is reported, by throwing from its `async_arrive_and_wait`: the phase
/// has completed, the other waiters are released. An arrival that cannot allocate its operation
/// or install its cancellation handler throws and has not arrived.
///
/// **Memory ordering.** Everything each participant did before its arrival happens-before the
/// completion function of that phase, and both happen-before the completion of every waiter of
/// the phase.
///
/// **Not copyable, not movable:** queued operations refer to the barrier by address.
///
/// @tparam Executor The I/O executor: the default executor for completion handlers, and the
/// context whose shutdown destroys pending operations.
template <class Executor = boost::asio::any_io_executor>
class basic_barrier
{
public:
    /// The type of the executor associated with the barrier.
    using executor_type = Executor;

    /// The type of the completion function, run once per phase.
    using completion_function_type = std::function<void()>;

    /// Rebinds the barrier to another executor type.
    ///
    /// @tparam OtherExecutor The executor type to rebind to.
    template <class OtherExecutor>
    struct rebind_executor
    {
        /// The barrier type when rebound to the specified executor.
        using other = basic_barrier<OtherExecutor>;
    };

    /// Constructs a barrier whose phases each expect `expected` arrivals.
    ///
    /// \ctorex
    /// @param expected The number of participants of each phase. With 0, every arrival throws.
    /// @param completion_function Run once per phase, when its last participant arrives, before
    /// any waiter of the phase continues; empty for none.
    basic_barrier(const executor_type& ex, std::size_t expected,
                  completion_function_type completion_function = completion_function_type())
        : executor_(ex), impl_(boost::asio::query(executor_, boost::asio::execution::context), expected,
                               std::move(completion_function))
    {
    }

    /// Constructs a barrier that uses the context's executor.
    ///
    /// \ctorctx
    /// @param expected The number of participants of each phase.
    /// @param completion_function Run once per phase; empty for none.
    template <
        class ExecutionContext,
        std::enable_if_t<std::is_convertible_v<ExecutionContext&, boost::asio::execution_context&>, int> = 0>
    basic_barrier(ExecutionContext& ctx, std::size_t expected,
                  completion_function_type completion_function = completion_function_type())
        : basic_barrier(executor_type(ctx.get_executor()), expected, std::move(completion_function))
    {
    }

    /// Not copyable (nor movable): operations refer to the barrier by address.
    basic_barrier(const basic_barrier&) = delete;
    /// Not copy-assignable (nor move-assignable).
    basic_barrier& operator=(const basic_barrier&) = delete;

    /// Destroys the barrier. Waiting arrivals complete with `boost::asio::error::operation_aborted`
    /// (posted, oldest first); none is invoked inside the destructor. No cancellation signal bound
    /// to one of its arrivals may be emitted after this.
    ~basic_barrier() = default;

    /// Returns the executor associated with the barrier.
    const executor_type& get_executor() const noexcept { return executor_; }

    /// Returns the number of the current phase: 0 until the first phase completes.
    std::size_t phase() const { return impl_.core.phase(); }

    /// Returns the number of arrivals the current phase still misses.
    std::size_t missing() const { return impl_.core.missing(); }

    /// Returns the number of participants each later phase expects: the constructor's `expected`
    /// less the `arrive_and_drop` calls so far.
    std::size_t expected() const { return impl_.core.expected(); }

    /// Arrives at the current phase without waiting, and lowers by one the number of participants
    /// that every later phase expects. If this is the last arrival of the phase, runs the
    /// completion function and completes the phase's waiters (posted, never inside this call).
    ///
    /// @throws std::logic_error if no participant is left (the phase expects no arrival); nothing
    /// changes. Whatever the completion function throws, once the phase has completed.
    void arrive_and_drop() { detail::barrier_arrive_and_drop(impl_); }

    /// Completes every waiting arrival with `boost::asio::error::operation_aborted`, oldest first,
    /// and withdraws their arrivals: the current phase misses them again.
    ///
    /// @returns the number of arrivals withdrawn.
    std::size_t cancel() { return impl_.cancel(); }

    /// Arrives at the current phase and waits for it to complete.
    ///
    /// If this is the last arrival of the phase, the completion function runs inside this call,
    /// then every waiter of the phase completes, oldest first, and this operation last; none is
    /// invoked inside this call. Otherwise the arrival waits until the last one. With
    /// `boost::asio::use_awaitable` the last arrival continues without suspending, once the
    /// completion function has run and the others are released (after 64 arrivals, acquires or
    /// waits
    /// in a row completed that way on a thread, the next one first yields through the executor).
    ///
    /// @par Completion signature
    /// `void(boost::system::error_code, std::size_t phase)`: the phase the arrival belonged to,
    /// also on error.
    ///
    /// @par Errors and cancellation
    /// `boost::asio::error::operation_aborted`: cancellation, `cancel()`, or the barrier's
    /// destruction, while the arrival waited; the arrival was withdrawn (the phase misses it
    /// again).
    /// A cancellation that races the last arrival has exactly one outcome: the arrival is
    /// withdrawn,
    /// or the phase completes with it. The last arrival of a phase is not cancellable. Throws
    /// `std::logic_error` if no participant is left, having changed nothing; and, from the last
    /// arrival of a phase, whatever the completion function throws or the submission of its own
    /// completion throws.
    /// \asyncwait
    /// @param token The completion token (\ref async_waits_tokens).
    template <BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code, std::size_t))
                  ArriveToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_arrive_and_wait(ArriveToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type))
    {
        return detail::async_barrier_arrival(executor_, impl_, std::forward<ArriveToken>(token));
    }

    /// Starts `async_arrive_and_wait` that gives up after `timeout`: a timed-out arrival is
    /// withdrawn,
    /// as a cancelled one is. The last arrival of a phase completes it whatever the time limit, and
    /// starts no timer.
    ///
    /// @par Completion signature
    /// `void(boost::system::error_code, std::size_t phase)`, as `async_arrive_and_wait`.
    /// \timedwait
    /// \forparams
    /// @param token The completion token (\ref async_waits_tokens).
    template <class Rep, class Period,
              BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code, std::size_t))
                  ArriveToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_arrive_and_wait_for(const std::chrono::duration<Rep, Period>& timeout,
                                   ArriveToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type))
    {
        return detail::async_barrier_arrival(executor_, impl_, std::forward<ArriveToken>(token),
                                             detail::deadline_after(timeout));
    }

    /// Starts `async_arrive_and_wait` that gives up at `expiry`, as `async_arrive_and_wait_for`.
    ///
    /// @par Completion signature
    /// `void(boost::system::error_code, std::size_t phase)`, as `async_arrive_and_wait`.
    /// \timedwait
    /// \untilparams
    /// @param token The completion token (\ref async_waits_tokens).
    template <class Clock, class Duration,
              BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code, std::size_t))
                  ArriveToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_arrive_and_wait_until(const std::chrono::time_point<Clock, Duration>& expiry,
                                     ArriveToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type))
    {
        return detail::async_barrier_arrival(executor_, impl_, std::forward<ArriveToken>(token),
                                             detail::deadline_at(expiry));
    }

private:
    executor_type executor_;
    detail::barrier_impl impl_;
};

/// A barrier with the default executor type, `boost::asio::any_io_executor`.
using barrier = basic_barrier<>;

} // namespace asio_sync

#endif // ASIO_SYNC_BARRIER_HPP
