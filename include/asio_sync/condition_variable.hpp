// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_CONDITION_VARIABLE_HPP
#define ASIO_SYNC_CONDITION_VARIABLE_HPP

/// @file
/// The asynchronous condition variable: asio_sync::basic_condition_variable and the
/// asio_sync::condition_variable alias.

#include <asio_sync/detail/condition_wait.hpp>
#include <asio_sync/detail/event_core.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/execution/context.hpp>
#include <boost/asio/execution_context.hpp>
#include <boost/asio/query.hpp>
#include <boost/system/error_code.hpp>

#include <chrono>
#include <cstddef>
#include <memory>
#include <type_traits>
#include <utility>

namespace asio_sync {

/// An asynchronous condition variable for Asio, used with `asio_sync::mutex` (or
/// `asio_sync::shared_mutex`, in either mode).
///
/// `async_wait(lock, token)` gives up the lock that `lock` owns and waits for a notification, then
/// takes the lock back before it completes: the handler always runs holding the lock, and `lock`
/// owns it again. The waiter is queued before the mutex is unlocked, so a notification by whoever
/// takes the lock next, or by anyone who changed the shared state under the lock, is never lost.
/// `notify_one()` wakes the oldest waiter, `notify_all()` every waiter, oldest first; with nobody
/// waiting a notification does nothing (it is not stored, as with `std::condition_variable`).
///
/// **Why a reference to the caller's lock.** The wait takes a `std::unique_lock<Mutex>&` (or
/// `std::shared_lock<Mutex>&`) as `std::condition_variable_any::wait` does, so that code reads as
/// with threads: the lock object stays where the caller keeps it, in a coroutine frame or in the
/// object that owns the composed operation. The operation refers to it as Asio operations refer to
/// their buffers: the caller must keep the lock object alive, and leave it alone, until the handler
/// is invoked. At initiation the lock object lets go of the mutex (it owns nothing while the
/// operation waits); the relocked mutex is handed to it only when the handler is invoked, on the
/// handler's executor, so a handler that is never invoked (at context shutdown) never leaves the
/// mutex locked and never writes to a lock object that may be gone.
///
/// **Relocking** uses the mutex's own `async_scoped_lock` (`async_scoped_lock_shared` for a
/// `std::shared_lock`) with the handler's executor and allocator: a woken waiter queues for the
/// mutex behind the lockers already waiting, in FIFO order, and a relock is not cancellable. If
/// the mutex aborts the relock (its `cancel()`, or its destruction), the handler receives
/// `operation_aborted` and `lock` does not own the mutex: the only case where it does not.
///
/// **Predicate waits** (`async_wait(lock, pred, token)`) run in rounds: each notification relocks,
/// evaluates `pred` and, while it is false, waits again. Per-operation cancellation, `cancel()`
/// and the destruction of the condition variable reach such a wait in every phase: queued,
/// relocking after a notification, or evaluating `pred` after one. It then completes with
/// `operation_aborted`, once, holding the lock, instead of waiting again. The first evaluation,
/// made by the initiating function, comes before the wait exists: a `cancel()` made then does not
/// count it, and a cancellation signal emitted then finds no handler installed yet, as for any
/// operation not yet started.
///
/// **Deadlines.** `async_wait_for` and `async_wait_until`, with or without a predicate, give up
/// when the time runs out: the wait relocks and completes with `asio_sync::error::timed_out`,
/// holding the lock; a predicate wait first evaluates its predicate once more, and completes
/// with success if it is true. See [Deadlines](deadlines.md).
///
/// The waits keep the contract of \ref async_waits, with these particulars:
/// - **Faults.** A notified wait whose relock cannot start (the handler's associated allocator or
///   executor throws) loses only its own handler, which is destroyed without being invoked; the
///   notification passes to the next waiter, and the notifying call does not throw. A relock whose
///   completion cannot be submitted follows the mutex's fault rule: the lock goes back. An
///   `async_wait` that cannot allocate its operation or install its cancellation handler throws,
///   and the lock is still held by `lock`.
/// - **Allocation.** A wait's one operation is freed before the relock starts (a predicate wait
///   keeps it for all its rounds; a timed wait until its timer is done); the relock allocates as a
///   lock of the mutex does. The condition variable allocates its internal state once, at
///   construction, with `std::allocator`: a predicate wait between rounds shares it, so that it can
///   still learn, after the condition variable is gone, that it must end.
/// - **Lifetime.** Destroying the condition variable aborts the waits still queued, which relock
///   and complete with `operation_aborted`, and the predicate waits between rounds, which complete
///   with `operation_aborted` once their relock is done. The mutex must outlive every wait on it.
/// .
/// **Not copyable, not movable:** queued operations refer to the condition variable by address.
///
/// @tparam Executor The I/O executor: the default executor for completion handlers, and the
/// context whose shutdown destroys pending operations.
template <class Executor = boost::asio::any_io_executor>
class basic_condition_variable
{
public:
    /// The type of the executor associated with the condition variable.
    using executor_type = Executor;

    /// Rebinds the condition variable to another executor type.
    ///
    /// @tparam OtherExecutor The executor type to rebind to.
    template <class OtherExecutor>
    struct rebind_executor
    {
        /// The condition variable type when rebound to the specified executor.
        using other = basic_condition_variable<OtherExecutor>;
    };

    /// Constructs a condition variable.
    ///
    /// \ctorex
    explicit basic_condition_variable(const executor_type& ex)
        : executor_(ex), impl_(std::make_shared<detail::event_impl>(
                             boost::asio::query(executor_, boost::asio::execution::context), false))
    {
    }

    /// Constructs a condition variable that uses the context's executor.
    ///
    /// \ctorctx
    template <
        class ExecutionContext,
        std::enable_if_t<std::is_convertible_v<ExecutionContext&, boost::asio::execution_context&>, int> = 0>
    explicit basic_condition_variable(ExecutionContext& ctx)
        : basic_condition_variable(executor_type(ctx.get_executor()))
    {
    }

    /// Not copyable (nor movable): operations refer to the condition variable by address.
    basic_condition_variable(const basic_condition_variable&) = delete;
    /// Not copy-assignable (nor move-assignable).
    basic_condition_variable& operator=(const basic_condition_variable&) = delete;

    /// Destroys the condition variable. Queued waits relock and complete with
    /// `boost::asio::error::operation_aborted` (posted, oldest first), and so do the predicate
    /// waits between rounds (relocking, or evaluating their predicate) once their relock is done;
    /// none is invoked inside the destructor.
    ~basic_condition_variable() { impl_->cancel(); }

    /// Returns the executor associated with the condition variable.
    const executor_type& get_executor() const noexcept { return executor_; }

    /// Wakes the oldest queued wait, if any: it relocks and then completes successfully. Does
    /// nothing if nobody waits.
    void notify_one() { impl_->notify_one(); }

    /// Wakes every queued wait, oldest first: each relocks in turn and then completes
    /// successfully. Does nothing if nobody waits.
    void notify_all() { impl_->notify_all(); }

    /// Wakes every queued wait, oldest first, with `boost::asio::error::operation_aborted`: each
    /// relocks and then completes. A predicate wait between rounds (relocking after a
    /// notification, or evaluating its predicate) is aborted too: it completes with
    /// `operation_aborted` once its relock is done, without evaluating its predicate again.
    ///
    /// @returns the number of waits aborted, those between rounds included.
    std::size_t cancel() { return impl_->cancel(); }

    /// Starts an asynchronous wait: unlocks the mutex that `lock` owns, waits for a notification,
    /// and locks it again before completing.
    ///
    /// The wait is queued before the mutex is unlocked: a notification made after that, even by
    /// the next holder of the lock before this function returns, wakes it. Like
    /// `std::condition_variable`, a wait may end without the awaited state being true (another
    /// waiter woken first may have changed it): check the state again, or use the predicate
    /// overload.
    ///
    /// @par Completion signature
    /// `void(boost::system::error_code)`. When the handler runs, `lock` owns the mutex again, also
    /// on error, unless the mutex aborted the relock.
    ///
    /// @par Errors and cancellation
    /// - `boost::asio::error::operation_aborted`: cancellation, `cancel()`, or the destruction of
    /// the
    ///   condition variable, while the wait was queued (it leaves the queue and relocks first); or
    /// the
    ///   mutex aborted the relock (then `lock` does not own the mutex).
    /// .
    /// A cancellation that races a notification has exactly one outcome: the wait is woken (and
    /// completes successfully), or it is cancelled and the notification wakes the next waiter
    /// instead. A cancellation after the wait was woken does nothing; the relock is not
    /// cancellable.
    /// If the operation cannot be allocated or its cancellation handler installed, this function
    /// throws and `lock` still owns the mutex.
    ///
    /// @par Object lifetimes
    /// `lock` must own its mutex at the call (an assertion in debug builds), and the caller must
    /// keep the `lock` object alive, and not use it, until the handler is invoked; the mutex must
    /// outlive the operation. At context shutdown a queued wait's handler is destroyed without
    /// being
    /// invoked, and `lock` stays without the mutex.
    /// \asyncwait
    ///
    /// @tparam Lock `std::unique_lock<M>` (exclusive) or `std::shared_lock<M>` (shared), where
    /// `M` is an `asio_sync::basic_mutex` or `asio_sync::basic_shared_mutex`.
    /// @param lock The lock the caller holds.
    /// @param token The completion token. A callable that accepts a `boost::system::error_code` is
    /// a completion handler here, even one that could also be called with no arguments (a
    /// variadic lambda); any other callable with no arguments that returns something convertible
    /// to `bool` is taken for a predicate (see the overload below).
    /// @returns what the token makes of the operation.
    template <class Lock,
              BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code))
                  WaitToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type),
              std::enable_if_t<!detail::is_wait_predicate_v<WaitToken>, int> = 0>
    auto async_wait(Lock& lock, WaitToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type))
    {
        return boost::asio::async_initiate<WaitToken, void(boost::system::error_code)>(
            detail::initiate_condition_wait<Executor>(executor_, impl_), token, &lock);
    }

    /// Starts an asynchronous wait that completes once `pred()` is true: the loop
    /// `while (!pred()) wait(lock)`, with `pred` evaluated holding the lock.
    ///
    /// If `pred()` is true at the call, the wait completes at once (posted, never inline) without
    /// unlocking. Otherwise it waits in rounds, each one as `async_wait(lock, ...)` above, all of
    /// them one operation with the handler's executor, allocator and cancellation slot. `pred` runs
    /// on the handler's executor, except the first time: in the initiating function, or, for a
    /// coroutine awaiting with `boost::asio::use_awaitable` or `as_tuple(use_awaitable)`, in the
    /// coroutine before it suspends. `pred` is moved into the operation.
    ///
    /// @par Completion signature
    /// `void(boost::system::error_code)`. When the handler runs, `lock` owns the mutex, as for
    /// `async_wait(lock, token)`; on success `pred()` was true when last evaluated.
    ///
    /// @par Cancellation
    /// Terminal, partial and total, in every phase of the wait after the first evaluation of
    /// `pred`: queued (it leaves the queue and relocks), relocking after a notification, or
    /// evaluating `pred`. The operation completes with `operation_aborted` once the lock is held
    /// again, exactly once, and does not evaluate `pred` after the cancellation (one that arrives
    /// while `pred` runs ends the wait when `pred` returns, whatever it returned). A cancellation
    /// that races the notification that makes `pred` true has exactly one outcome. A wait that
    /// `notify_one` woke and that a cancellation then ends (while it relocks or evaluates `pred`)
    /// passes that notification on to the oldest queued wait: no notification is lost. The first
    /// evaluation comes before the wait exists, as for any operation not yet started: a
    /// cancellation
    /// signal emitted by it finds no handler installed, and a `cancel()` made by it does not count
    /// the wait, which then queues.
    ///
    /// @par Errors
    /// As `async_wait(lock, token)`, except that `operation_aborted` also comes from a
    /// cancellation, `cancel()` or the destruction of the condition variable while a notified
    /// round relocks or evaluates `pred`. An exception thrown by `pred` propagates from where it
    /// ran: the initiating function (a coroutine awaiting with `use_awaitable` or
    /// `as_tuple(use_awaitable)` gets it from its `co_await`), or the handler's executor. Either
    /// way `lock` then owns the mutex, and after the first round the handler (for a coroutine, its
    /// frame) is destroyed without being invoked. A `deferred` operation awaited in a coroutine
    /// starts once the coroutine has suspended: what `pred` throws at its first evaluation then
    /// propagates from the executor, as an exception from any initiating function does there.
    /// \asyncwait
    ///
    /// @tparam Lock As `async_wait(lock, token)`.
    /// @tparam Predicate Callable with no arguments, returning something convertible to `bool`,
    /// and not callable with a `boost::system::error_code`: such a callable (a variadic lambda, for
    /// one) is a completion handler for `async_wait(lock, token)`.
    /// @param lock The lock the caller holds.
    /// @param pred The condition to wait for.
    /// @param token The completion token.
    /// @returns what the token makes of the operation.
    template <class Lock, class Predicate,
              BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code))
                  WaitToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type),
              std::enable_if_t<detail::is_wait_predicate_v<Predicate>, int> = 0>
    auto async_wait(Lock& lock, Predicate&& pred,
                    WaitToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type))
    {
        return detail::async_predicate_wait(executor_, impl_, lock, std::forward<Predicate>(pred),
                                            std::forward<WaitToken>(token));
    }

    /// Starts `async_wait(lock, token)` that gives up after `timeout`: if no notification has woken
    /// the wait when the time runs out, it leaves the queue, relocks, and completes with
    /// `asio_sync::error::timed_out`, `lock` owning the mutex again (as
    /// `std::condition_variable::wait_for` returns holding the lock). A notification that races the
    /// deadline has exactly one outcome: the wait is woken, or it times out and the notification
    /// wakes the next waiter instead.
    ///
    /// \ecsig When the handler runs, `lock` owns the mutex, as for `async_wait(lock, token)`.
    /// \timedwait
    ///
    /// @tparam Lock As `async_wait(lock, token)`.
    /// @tparam Rep The arithmetic type of the duration's count.
    /// @tparam Period The duration's tick period.
    /// @param lock The lock the caller holds.
    /// @param timeout How long to wait, on `std::chrono::steady_clock`. Zero or negative: the wait
    /// times out unless a notification reaches it first (it is queued all the same).
    /// @param token The completion token.
    /// @returns what the token makes of the operation.
    template <class Lock, class Rep, class Period,
              BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code))
                  WaitToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type),
              std::enable_if_t<!detail::is_wait_predicate_v<WaitToken>, int> = 0>
    auto async_wait_for(Lock& lock, const std::chrono::duration<Rep, Period>& timeout,
                        WaitToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type))
    {
        return boost::asio::async_initiate<WaitToken, void(boost::system::error_code)>(
            detail::initiate_condition_wait<Executor, detail::timeout>(executor_, impl_,
                                                                       detail::deadline_after(timeout)),
            token, &lock);
    }

    /// Starts `async_wait(lock, token)` that gives up at `expiry`, as `async_wait_for(lock,
    /// timeout,
    /// token)` does after `timeout`.
    ///
    /// \ecsig When the handler runs, `lock` owns the mutex, as for `async_wait(lock, token)`.
    /// \timedwait
    ///
    /// @tparam Lock As `async_wait(lock, token)`.
    /// @tparam Clock The deadline's clock, converted once, at the call, into time left on
    /// `std::chrono::steady_clock`.
    /// @tparam Duration The time point's duration.
    /// @param lock The lock the caller holds.
    /// @param expiry When to give up; a deadline already past times out unless a notification
    /// reaches the wait first.
    /// @param token The completion token.
    /// @returns what the token makes of the operation.
    template <class Lock, class Clock, class Duration,
              BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code))
                  WaitToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type),
              std::enable_if_t<!detail::is_wait_predicate_v<WaitToken>, int> = 0>
    auto async_wait_until(Lock& lock, const std::chrono::time_point<Clock, Duration>& expiry,
                          WaitToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type))
    {
        return boost::asio::async_initiate<WaitToken, void(boost::system::error_code)>(
            detail::initiate_condition_wait<Executor, detail::deadline_type>(executor_, impl_,
                                                                             detail::deadline_at(expiry)),
            token, &lock);
    }

    /// Starts `async_wait(lock, pred, token)` that gives up after `timeout`. Once the time has run
    /// out, the wait evaluates `pred` one more time, holding the lock, and completes with success
    /// if
    /// it is true, with `asio_sync::error::timed_out` otherwise, `lock` owning the mutex either
    /// way:
    /// what `std::condition_variable::wait_for(lock, timeout, pred)` returns is `pred()`. A wait
    /// still queued when the time runs out leaves the queue, relocks and evaluates `pred`; one that
    /// a
    /// notification had already woken uses that notification for the same evaluation, and waits no
    /// more. If `pred()` is true at the call, the wait completes at once and starts no timer. A
    /// cancellation does not evaluate `pred` again, also after the time ran out.
    ///
    /// \ecsig As for `async_wait(lock, pred, token)`.
    /// \timedwait
    ///
    /// @tparam Lock As `async_wait(lock, token)`.
    /// @tparam Rep The arithmetic type of the duration's count.
    /// @tparam Period The duration's tick period.
    /// @tparam Predicate As `async_wait(lock, pred, token)`.
    /// @param lock The lock the caller holds.
    /// @param timeout How long to wait, on `std::chrono::steady_clock`, counted once the wait
    /// queues. Zero or negative: `pred` is evaluated once more after the wait has queued and
    /// relocked, unless a notification reaches it first.
    /// @param pred The condition to wait for.
    /// @param token The completion token.
    /// @returns what the token makes of the operation.
    template <class Lock, class Rep, class Period, class Predicate,
              BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code))
                  WaitToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type),
              std::enable_if_t<detail::is_wait_predicate_v<Predicate>, int> = 0>
    auto async_wait_for(Lock& lock, const std::chrono::duration<Rep, Period>& timeout, Predicate&& pred,
                        WaitToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type))
    {
        return detail::async_predicate_wait(executor_, impl_, lock, std::forward<Predicate>(pred),
                                            std::forward<WaitToken>(token), detail::deadline_after(timeout));
    }

    /// Starts `async_wait(lock, pred, token)` that gives up at `expiry`, as
    /// `async_wait_for(lock, timeout, pred, token)` does after `timeout`.
    ///
    /// \ecsig As for `async_wait(lock, pred, token)`.
    /// \timedwait
    ///
    /// @tparam Lock As `async_wait(lock, token)`.
    /// @tparam Clock The deadline's clock, converted once, at the call, into time left on
    /// `std::chrono::steady_clock`.
    /// @tparam Duration The time point's duration.
    /// @tparam Predicate As `async_wait(lock, pred, token)`.
    /// @param lock The lock the caller holds.
    /// @param expiry When to give up; a deadline already past behaves as a zero timeout.
    /// @param pred The condition to wait for.
    /// @param token The completion token.
    /// @returns what the token makes of the operation.
    template <class Lock, class Clock, class Duration, class Predicate,
              BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code))
                  WaitToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type),
              std::enable_if_t<detail::is_wait_predicate_v<Predicate>, int> = 0>
    auto async_wait_until(Lock& lock, const std::chrono::time_point<Clock, Duration>& expiry,
                          Predicate&& pred,
                          WaitToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type))
    {
        return detail::async_predicate_wait(executor_, impl_, lock, std::forward<Predicate>(pred),
                                            std::forward<WaitToken>(token), detail::deadline_at(expiry));
    }

private:
    executor_type executor_;
    // Shared with the predicate waits between rounds, which may outlive the condition variable.
    std::shared_ptr<detail::event_impl> impl_;
};

/// A condition variable with the default executor type, `boost::asio::any_io_executor`.
using condition_variable = basic_condition_variable<>;

} // namespace asio_sync

#endif // ASIO_SYNC_CONDITION_VARIABLE_HPP
