// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_MUTEX_HPP
#define ASIO_SYNC_MUTEX_HPP

/// @file
/// The asynchronous mutex: asio_sync::basic_mutex and the asio_sync::mutex alias.

#include <asio_sync/call_site.hpp>
#include <asio_sync/detail/access.hpp>
#include <asio_sync/detail/deadline.hpp>
#include <asio_sync/detail/grant.hpp>
#include <asio_sync/detail/holder_records.hpp>
#include <asio_sync/semaphore.hpp>
#include <asio_sync/wait_observer.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/execution_context.hpp>
#include <boost/assert.hpp>
#include <boost/system/error_code.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <mutex>
#include <type_traits>
#include <utility>

namespace asio_sync {

/// An asynchronous mutex for Asio: a semaphore of one permit.
///
/// It inherits everything the semaphore guarantees: strict FIFO hand-off (an unlock passes the
/// lock to the oldest waiter, nobody barges in, `try_lock` fails while anyone waits), per-operation
/// cancellation, one allocation per wait through the handler's allocator, completions always
/// posted through the handler's associated executor and never invoked inside a member function.
///
/// The mutex is not recursive and has no owner: any code may unlock it, as with a semaphore.
/// Every member function may be called concurrently from any thread. Unlocking happens-before
/// the completion of the lock operation that receives the lock.
///
/// Not copyable, not movable. There is no `close()`: to stop the waiters, `cancel()` them.
///
/// @tparam Executor The I/O executor: the default executor for completion handlers and the
/// context whose shutdown destroys pending operations.
template <class Executor = boost::asio::any_io_executor>
class basic_mutex
{
public:
    /// The type of the executor associated with the mutex.
    using executor_type = Executor;

    /// Rebinds the mutex to another executor type.
    ///
    /// @tparam OtherExecutor The executor type to rebind to.
    template <class OtherExecutor>
    struct rebind_executor
    {
        /// The mutex type when rebound to the specified executor.
        using other = basic_mutex<OtherExecutor>;
    };

    /// Constructs an unlocked mutex.
    ///
    /// @param ex The I/O executor: the default executor of completion handlers.
    explicit basic_mutex(const executor_type& ex) : semaphore_(ex, 1)
    {
        detail::access::entry(semaphore_).names = {"mutex", "async_lock", this};
        detail::access::entry(semaphore_).lock_permits = 1;
    }

    /// Constructs an unlocked mutex that uses the context's executor.
    ///
    /// @tparam ExecutionContext An execution context, such as `boost::asio::io_context`, whose
    /// executor converts to `executor_type`.
    /// @param ctx The execution context; its `get_executor()` becomes the I/O executor.
    template <
        class ExecutionContext,
        std::enable_if_t<std::is_convertible_v<ExecutionContext&, boost::asio::execution_context&>, int> = 0>
    explicit basic_mutex(ExecutionContext& ctx) : basic_mutex(executor_type(ctx.get_executor()))
    {
    }

    /// Not copyable (nor movable): lock operations and guards refer to the mutex by address.
    basic_mutex(const basic_mutex&) = delete;
    /// Not copy-assignable (nor move-assignable).
    basic_mutex& operator=(const basic_mutex&) = delete;

    /// Destroys the mutex. Pending lock operations complete with
    /// `boost::asio::error::operation_aborted` (posted, oldest first). No lock guard may outlive
    /// the mutex.
    ~basic_mutex() = default;

    /// Returns the executor associated with the mutex: the default executor of completion
    /// handlers.
    const executor_type& get_executor() const noexcept { return semaphore_.get_executor(); }

    /// Starts an asynchronous lock. On success the caller holds the lock and must `unlock()` it.
    ///
    /// Lock operations are served in FIFO order; an `unlock()` hands the lock directly to the
    /// oldest waiter.
    ///
    /// @par Completion signature
    /// `void(boost::system::error_code)`.
    ///
    /// @par Per-operation cancellation
    /// `boost::asio::cancellation_type::terminal`, `partial` and `total`, through the handler's
    /// associated cancellation slot; all three remove the operation from the queue and complete it
    /// with `operation_aborted`. A cancellation that races the grant either completes with
    /// success (the lock is held) or with `operation_aborted` (the lock passed on to the next
    /// waiter); never both, never neither. A cancellation after the grant does nothing.
    ///
    /// @par Executor
    /// The handler is never invoked from within this function, nor from within `unlock`,
    /// `cancel` or the destructor; it is submitted to its associated executor (default:
    /// `get_executor()`) as if by `boost::asio::post`, also when the mutex is free at once, with
    /// outstanding work tracked until then.
    ///
    /// @par Errors
    /// - none: the caller holds the lock.
    /// - `boost::asio::error::operation_aborted`: per-operation cancellation, `cancel()`, or the
    ///   mutex's destruction, while the operation waited. The lock is then not held.
    /// .
    /// No other error is reported: a mutex cannot be closed, and one permit never exceeds its
    /// capacity.
    ///
    /// If the completion cannot be submitted, the handler is destroyed instead and the lock goes
    /// back (see **Faults** in `basic_semaphore`'s description); this function then throws only
    /// if that happens at the call, with the mutex as before it.
    ///
    /// @par Thread safety
    /// May be called concurrently, from any thread, with any member function but the destructor.
    ///
    /// @par Object lifetimes
    /// The mutex must exist for the whole call; destroying it afterwards aborts the pending lock.
    /// A cancellation signal bound to the operation must not be emitted after the mutex is
    /// destroyed. At context shutdown a pending lock's handler is destroyed without being
    /// invoked. A lock that waits allocates one object with the handler's associated allocator,
    /// freed before the handler is invoked.
    ///
    /// @param token The completion token: a handler, `boost::asio::use_awaitable`,
    /// `boost::asio::use_future`, `boost::asio::deferred`, or any other.
    /// @param where Where the wait is started, for the holder registry: leave it defaulted.
    template <BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code))
                  LockToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_lock(LockToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type),
                    call_site where = call_site())
    {
        return semaphore_.async_acquire(1, std::forward<LockToken>(token), where);
    }

    /// Starts an asynchronous lock whose handler receives a `std::unique_lock` owning the lock.
    ///
    /// @par Completion signature
    /// `void(boost::system::error_code, std::unique_lock<basic_mutex>)`. On success the
    /// `unique_lock` owns the lock (adopted) and unlocks it when destroyed; on error it owns
    /// nothing. The guard is made when the lock is granted, so a handler destroyed without being
    /// invoked (say, at context shutdown) still unlocks.
    ///
    /// @par Per-operation cancellation
    /// Terminal, partial and total, as `async_lock`: exactly one outcome when racing the grant.
    ///
    /// @par Executor
    /// The handler is never invoked from within this function; it is submitted to its associated
    /// executor (default: `get_executor()`) as if by `boost::asio::post`.
    ///
    /// @par Errors
    /// As `async_lock`: only `boost::asio::error::operation_aborted` (per-operation
    /// cancellation, `cancel()`, destruction of the mutex), with an empty `unique_lock`.
    ///
    /// If the completion cannot be submitted, the handler is destroyed instead and the lock goes
    /// back (see **Faults** in `basic_semaphore`'s description); this function then throws only
    /// if that happens at the call, with the mutex as before it.
    ///
    /// @par Thread safety
    /// May be called concurrently with any member function but the destructor.
    ///
    /// @par Object lifetimes
    /// As `async_lock`; in addition the mutex must outlive the `unique_lock` the handler
    /// receives.
    ///
    /// @param token The completion token.
    /// @param where Where the wait is started, for the holder registry: leave it defaulted.
    template <BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code, std::unique_lock<basic_mutex>))
                  LockToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_scoped_lock(LockToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type),
                           call_site where = call_site())
    {
        return scoped_lock_until(std::forward<LockToken>(token), detail::no_deadline(), where);
    }

    /// Starts an asynchronous lock that gives up after `timeout`: `async_lock` with a time limit.
    ///
    /// Everything said of `async_lock` holds, and in addition the operation completes with
    /// `asio_sync::error::timed_out` if the lock has not been granted when the time runs out; the
    /// lock is then not held, and the waiters behind move up. An unlock that races the deadline
    /// has exactly one outcome: success (the caller holds the lock) or `timed_out` (the lock went
    /// to the next waiter, or stays free); never both, never neither. A lock granted at once
    /// starts no timer. See [Deadlines](deadlines.md).
    ///
    /// @par Completion signature
    /// `void(boost::system::error_code)`.
    ///
    /// @par Per-operation cancellation
    /// Terminal, partial and total, as for `async_lock`, and reported as `operation_aborted`,
    /// never as `timed_out`; the timer is cancelled with the operation.
    ///
    /// @par Executor
    /// The handler is never invoked from within this function; it is submitted to its associated
    /// executor (default: `get_executor()`) as if by `boost::asio::post`, with outstanding work
    /// tracked until then. The timer runs on `get_executor()`.
    ///
    /// @par Errors
    /// Those of `async_lock`, and
    /// - `asio_sync::error::timed_out`: the time ran out before the lock was granted;
    /// - `boost::asio::error::no_memory`: the lock was queued but its timer could not be started,
    ///   so it left the queue rather than wait without a limit.
    /// .
    /// In every error case the lock is not held.
    ///
    /// @par Thread safety
    /// May be called concurrently with any member function but the destructor.
    ///
    /// @par Object lifetimes
    /// As `async_lock`. The mutex may be destroyed, and the context may shut down, while the timer
    /// is pending. A lock that waits allocates one object, which holds the timer, and the timer's
    /// wait, both with the handler's associated allocator.
    ///
    /// @tparam Rep The arithmetic type of the duration's count.
    /// @tparam Period The duration's tick period.
    /// @param timeout How long to wait once queued, on `std::chrono::steady_clock`. Zero or
    /// negative: give up unless the mutex is free at once (a lock that has to queue times out when
    /// its timer's handler runs, unless an unlock grants it first).
    /// @param token The completion token.
    /// @param where Where the wait is started, for the holder registry: leave it defaulted.
    template <class Rep, class Period,
              BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code))
                  LockToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_lock_for(const std::chrono::duration<Rep, Period>& timeout,
                        LockToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type),
                        call_site where = call_site())
    {
        return semaphore_.async_acquire_for(1, timeout, std::forward<LockToken>(token), where);
    }

    /// Starts an asynchronous lock that gives up at `expiry`: `async_lock_for` with a point in
    /// time instead of a duration.
    ///
    /// @par Completion signature
    /// `void(boost::system::error_code)`.
    ///
    /// @par Per-operation cancellation
    /// Terminal, partial and total, as for `async_lock`; reported as `operation_aborted`.
    ///
    /// @par Executor
    /// The handler is never invoked from within this function; it is submitted to its associated
    /// executor (default: `get_executor()`) as if by `boost::asio::post`. The timer runs on
    /// `get_executor()`.
    ///
    /// @par Errors
    /// Those of `async_lock_for`. A deadline already past times out unless the mutex is free at
    /// once.
    ///
    /// @par Thread safety
    /// May be called concurrently with any member function but the destructor.
    ///
    /// @par Object lifetimes
    /// As `async_lock_for`.
    ///
    /// @tparam Clock The deadline's clock. The timer runs on `std::chrono::steady_clock`; a
    /// deadline of another clock is converted once, at the call, into the time left until it.
    /// @tparam Duration The time point's duration.
    /// @param expiry When to give up.
    /// @param token The completion token.
    /// @param where Where the wait is started, for the holder registry: leave it defaulted.
    template <class Clock, class Duration,
              BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code))
                  LockToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_lock_until(const std::chrono::time_point<Clock, Duration>& expiry,
                          LockToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type),
                          call_site where = call_site())
    {
        return semaphore_.async_acquire_until(1, expiry, std::forward<LockToken>(token), where);
    }

    /// Starts an asynchronous lock whose handler receives a `std::unique_lock`, giving up after
    /// `timeout`: `async_scoped_lock` with the time limit of `async_lock_for`.
    ///
    /// @par Completion signature
    /// `void(boost::system::error_code, std::unique_lock<basic_mutex>)`. On success the
    /// `unique_lock` owns the lock; on any error, `timed_out` included, it owns nothing.
    ///
    /// @par Per-operation cancellation
    /// Terminal, partial and total, as for `async_lock`; reported as `operation_aborted`.
    ///
    /// @par Executor
    /// The handler is never invoked from within this function; it is submitted to its associated
    /// executor (default: `get_executor()`) as if by `boost::asio::post`. The timer runs on
    /// `get_executor()`.
    ///
    /// @par Errors
    /// Those of `async_lock_for`.
    ///
    /// @par Thread safety
    /// May be called concurrently with any member function but the destructor.
    ///
    /// @par Object lifetimes
    /// As `async_lock_for`; the mutex must outlive the `unique_lock` the handler receives.
    ///
    /// @tparam Rep The arithmetic type of the duration's count.
    /// @tparam Period The duration's tick period.
    /// @param timeout How long to wait, as for `async_lock_for`.
    /// @param token The completion token.
    /// @param where Where the wait is started, for the holder registry: leave it defaulted.
    template <class Rep, class Period,
              BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code, std::unique_lock<basic_mutex>))
                  LockToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_scoped_lock_for(const std::chrono::duration<Rep, Period>& timeout,
                               LockToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type),
                               call_site where = call_site())
    {
        return scoped_lock_until(std::forward<LockToken>(token), detail::deadline_after(timeout), where);
    }

    /// Starts an asynchronous lock whose handler receives a `std::unique_lock`, giving up at
    /// `expiry`: `async_scoped_lock` with the deadline of `async_lock_until`.
    ///
    /// @par Completion signature
    /// `void(boost::system::error_code, std::unique_lock<basic_mutex>)`, as for
    /// `async_scoped_lock_for`.
    ///
    /// @par Per-operation cancellation
    /// Terminal, partial and total, as for `async_lock`; reported as `operation_aborted`.
    ///
    /// @par Executor
    /// The handler is never invoked from within this function; it is submitted to its associated
    /// executor (default: `get_executor()`) as if by `boost::asio::post`. The timer runs on
    /// `get_executor()`.
    ///
    /// @par Errors
    /// Those of `async_lock_until`.
    ///
    /// @par Thread safety
    /// May be called concurrently with any member function but the destructor.
    ///
    /// @par Object lifetimes
    /// As `async_lock_for`; the mutex must outlive the `unique_lock` the handler receives.
    ///
    /// @tparam Clock The deadline's clock, as for `async_lock_until`.
    /// @tparam Duration The time point's duration.
    /// @param expiry When to give up.
    /// @param token The completion token.
    /// @param where Where the wait is started, for the holder registry: leave it defaulted.
    template <class Clock, class Duration,
              BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code, std::unique_lock<basic_mutex>))
                  LockToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_scoped_lock_until(const std::chrono::time_point<Clock, Duration>& expiry,
                                 LockToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type),
                                 call_site where = call_site())
    {
        return scoped_lock_until(std::forward<LockToken>(token), detail::deadline_at(expiry), where);
    }

    /// Locks the mutex if that can be done at once: fails while it is locked or anyone waits.
    /// Lock-free.
    ///
    /// @returns true if the caller now holds the lock.
    bool try_lock() noexcept { return semaphore_.try_acquire(1); }

    /// Unlocks the mutex, passing it to the oldest waiter if there is one (its handler is posted,
    /// never invoked here). Everything done while holding the lock happens-before the completion
    /// of the lock operation that receives it.
    ///
    /// Precondition: the mutex is locked. Unlocking an unlocked mutex is a precondition violation,
    /// caught by an assertion in debug builds.
    void unlock()
    {
        BOOST_ASSERT_MSG(semaphore_.available() == 0, "asio_sync::basic_mutex::unlock of an unlocked mutex");
        detail::holder_released(&detail::access::entry(semaphore_), 1);
        semaphore_.release(1);
    }

    /// Attaches `observer` to the mutex's waits, or detaches it (null): every lock that
    /// queues from now on is reported to it, when queued and when it ends, with how long it waited
    /// (see `wait_observer`). Locks decided at once are not reported, and the lock-free
    /// paths never look at the observer. See [Observing waits](observing.md).
    ///
    /// @param observer The observer, or null. It must outlive every wait queued while it is
    /// attached.
    void set_observer(wait_observer* observer) noexcept
    {
        detail::access::entry(semaphore_).observer.store(observer, std::memory_order_release);
    }

    /// Aborts every pending lock operation with `boost::asio::error::operation_aborted` (posted,
    /// oldest first). The holder of the lock, if any, keeps it; the mutex stays usable.
    ///
    /// @returns the number of operations aborted.
    std::size_t cancel() { return semaphore_.cancel(); }

private:
    template <class LockToken, class Deadline>
    auto scoped_lock_until(LockToken&& token, Deadline expiry, call_site where)
    {
        using lock_type = std::unique_lock<basic_mutex>;
        return detail::access::async_acquire_as<void(boost::system::error_code, lock_type)>(
            semaphore_, 1, detail::adopt_lock_grant<lock_type>{this}, std::forward<LockToken>(token), expiry,
            where);
    }

    basic_semaphore<Executor> semaphore_;
};

/// A mutex with the default executor type, `boost::asio::any_io_executor`.
using mutex = basic_mutex<>;

} // namespace asio_sync

#endif // ASIO_SYNC_MUTEX_HPP
