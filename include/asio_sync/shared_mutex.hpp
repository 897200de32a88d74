// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_SHARED_MUTEX_HPP
#define ASIO_SYNC_SHARED_MUTEX_HPP

/// @file
/// The asynchronous shared (reader-writer) mutex: asio_sync::basic_shared_mutex and the
/// asio_sync::shared_mutex alias.

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
#include <boost/throw_exception.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <mutex>
#include <shared_mutex>
#include <stdexcept>
#include <type_traits>
#include <utility>

namespace asio_sync {

/// An asynchronous reader-writer mutex for Asio: a semaphore of `max_readers` permits, where a
/// reader takes one permit and a writer takes all of them.
///
/// **Fairness.** Readers and writers wait in one FIFO queue. A queued writer blocks every reader
/// that arrives after it, so writers cannot starve behind a stream of readers; readers queued
/// before a writer are not overtaken by it. While any lock operation waits, `try_lock` and
/// `try_lock_shared` fail.
///
/// It inherits the rest from the semaphore: direct hand-off on unlock, per-operation
/// cancellation, one allocation per wait through the handler's allocator, completions posted
/// through the handler's associated executor and never invoked inside a member function. Every
/// member function may be called concurrently from any thread; an unlock happens-before the
/// completion of every lock operation it lets through.
///
/// Not copyable, not movable; not recursive, and with no owner thread. There is no `close()`: to
/// stop the waiters, `cancel()` them.
///
/// @tparam Executor The I/O executor: the default executor for completion handlers and the
/// context whose shutdown destroys pending operations.
template <class Executor = boost::asio::any_io_executor>
class basic_shared_mutex
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
        using other = basic_shared_mutex<OtherExecutor>;
    };

    /// The most readers that may hold the lock at once by default: `basic_semaphore::max_permits`,
    /// no practical limit.
    static constexpr std::size_t default_max_readers = basic_semaphore<Executor>::max_permits;

    /// Constructs an unlocked mutex that admits at most `max_readers` readers at once.
    ///
    /// @param ex The I/O executor: the default executor of completion handlers.
    /// @param max_readers The most readers that may hold the lock at once; the next reader waits.
    /// @throws std::invalid_argument if `max_readers` is 0 or above the semaphore's `max_permits`.
    explicit basic_shared_mutex(const executor_type& ex, std::size_t max_readers = default_max_readers)
        : semaphore_(ex, checked(max_readers)), max_readers_(max_readers)
    {
        detail::access::entry(semaphore_).names = {"shared_mutex", "async_lock", this};
        detail::access::entry(semaphore_).lock_permits = max_readers;
    }

    /// Constructs an unlocked mutex that uses the context's executor.
    ///
    /// @tparam ExecutionContext An execution context, such as `boost::asio::io_context`, whose
    /// executor converts to `executor_type`.
    /// @param ctx The execution context; its `get_executor()` becomes the I/O executor.
    /// @param max_readers The most readers that may hold the lock at once; the next reader waits.
    /// @throws std::invalid_argument if `max_readers` is 0 or above the semaphore's `max_permits`.
    template <
        class ExecutionContext,
        std::enable_if_t<std::is_convertible_v<ExecutionContext&, boost::asio::execution_context&>, int> = 0>
    explicit basic_shared_mutex(ExecutionContext& ctx, std::size_t max_readers = default_max_readers)
        : basic_shared_mutex(executor_type(ctx.get_executor()), max_readers)
    {
    }

    /// Not copyable (nor movable): lock operations and guards refer to the mutex by address.
    basic_shared_mutex(const basic_shared_mutex&) = delete;
    /// Not copy-assignable (nor move-assignable).
    basic_shared_mutex& operator=(const basic_shared_mutex&) = delete;

    /// Destroys the mutex. Pending lock operations complete with
    /// `boost::asio::error::operation_aborted` (posted, oldest first). No lock guard may outlive
    /// the mutex.
    ~basic_shared_mutex() = default;

    /// Returns the executor associated with the mutex: the default executor of completion
    /// handlers.
    const executor_type& get_executor() const noexcept { return semaphore_.get_executor(); }

    /// Returns the most readers that may hold the lock at once.
    std::size_t max_readers() const noexcept { return max_readers_; }

    /// Starts an asynchronous exclusive lock. On success the caller holds the lock alone and must
    /// `unlock()` it (or `downgrade()` it to a shared lock).
    ///
    /// The writer waits until no reader and no writer holds the lock, and behind every lock
    /// operation queued before it; from the moment it is queued, readers that arrive later wait
    /// behind it.
    ///
    /// @par Completion signature
    /// `void(boost::system::error_code)`.
    ///
    /// @par Per-operation cancellation
    /// `boost::asio::cancellation_type::terminal`, `partial` and `total`, through the handler's
    /// associated cancellation slot. A cancelled writer that had collected part of the lock
    /// (readers leaving before it) passes that on to the waiters behind it, so the readers it was
    /// blocking proceed. A cancellation racing the grant has exactly one outcome: success with the
    /// lock held, or `operation_aborted` with nothing held.
    ///
    /// @par Executor
    /// The handler is never invoked from within this function, nor from within the unlock
    /// functions, `downgrade`, `cancel` or the destructor; it is submitted to its associated
    /// executor (default: `get_executor()`) as if by `boost::asio::post`, also when the lock is
    /// free at once, with outstanding work tracked until then.
    ///
    /// @par Errors
    /// - none: the caller holds the lock alone.
    /// - `boost::asio::error::operation_aborted`: per-operation cancellation, `cancel()`, or the
    ///   mutex's destruction, while the operation waited. The lock is then not held.
    /// .
    /// No other error is reported: the mutex cannot be closed, and a writer never asks for more
    /// than `max_readers()`.
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
        return semaphore_.async_acquire(max_readers_, std::forward<LockToken>(token), where);
    }

    /// Starts an asynchronous exclusive lock whose handler receives a `std::unique_lock`.
    ///
    /// @par Completion signature
    /// `void(boost::system::error_code, std::unique_lock<basic_shared_mutex>)`. On success it owns
    /// the lock (adopted) and unlocks it when destroyed, also if the handler is destroyed without
    /// being invoked; on error it owns nothing.
    ///
    /// @par Per-operation cancellation
    /// Terminal, partial and total, as `async_lock`.
    ///
    /// @par Executor
    /// The handler is never invoked from within this function; it is submitted to its associated
    /// executor (default: `get_executor()`) as if by `boost::asio::post`.
    ///
    /// @par Errors
    /// As `async_lock`: only `boost::asio::error::operation_aborted`, with an empty
    /// `unique_lock`.
    ///
    /// If the completion cannot be submitted, the handler is destroyed instead and the lock goes
    /// back (see **Faults** in `basic_semaphore`'s description); this function then throws only
    /// if that happens at the call, with the mutex as before it.
    ///
    /// @par Thread safety
    /// May be called concurrently with any member function but the destructor.
    ///
    /// @par Object lifetimes
    /// As `async_lock`; in addition the mutex must outlive the `unique_lock` the handler receives.
    ///
    /// @param token The completion token.
    /// @param where Where the wait is started, for the holder registry: leave it defaulted.
    template <BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code,
                                                   std::unique_lock<basic_shared_mutex>))
                  LockToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_scoped_lock(LockToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type),
                           call_site where = call_site())
    {
        return scoped_lock_until<std::unique_lock<basic_shared_mutex>>(
            max_readers_, std::forward<LockToken>(token), detail::no_deadline(), where);
    }

    /// Starts an asynchronous exclusive lock that gives up after `timeout`: `async_lock` with a
    /// time limit.
    ///
    /// Everything said of `async_lock` holds, and in addition the operation completes with
    /// `asio_sync::error::timed_out` if the lock has not been granted when the time runs out. The
    /// lock is then not held, and what the writer had collected (readers that left before it)
    /// goes on to the waiters behind it, so the readers it was blocking proceed. An unlock that
    /// races the deadline has exactly one outcome: success with the lock held, or `timed_out`
    /// with nothing held. A lock granted at once starts no timer. See [Deadlines](deadlines.md).
    ///
    /// @par Completion signature
    /// `void(boost::system::error_code)`.
    ///
    /// @par Per-operation cancellation
    /// Terminal, partial and total, as for `async_lock`; reported as `operation_aborted`, never as
    /// `timed_out`. The timer is cancelled with the operation.
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
    /// In every error case nothing is held.
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
    /// negative: give up unless the lock can be had at once.
    /// @param token The completion token.
    /// @param where Where the wait is started, for the holder registry: leave it defaulted.
    template <class Rep, class Period,
              BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code))
                  LockToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_lock_for(const std::chrono::duration<Rep, Period>& timeout,
                        LockToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type),
                        call_site where = call_site())
    {
        return semaphore_.async_acquire_for(max_readers_, timeout, std::forward<LockToken>(token), where);
    }

    /// Starts an asynchronous exclusive lock that gives up at `expiry`: `async_lock_for` with
    /// a point in time instead of a duration.
    ///
    /// @par Completion signature
    /// `void(boost::system::error_code)`.
    ///
    /// @par Per-operation cancellation
    /// Terminal, partial and total, as for the lock without a time limit; reported as
    /// `operation_aborted`, never as `timed_out`. The timer is cancelled with the operation.
    ///
    /// @par Executor
    /// The handler is never invoked from within this function; it is submitted to its associated
    /// executor (default: `get_executor()`) as if by `boost::asio::post`, with outstanding work
    /// tracked until then. The timer runs on `get_executor()`.
    ///
    /// @par Errors
    /// Those of `async_lock_for`.
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
    /// @param expiry When to give up; a deadline already past gives up unless the lock can be had at once.
    /// @param token The completion token.
    /// @param where Where the wait is started, for the holder registry: leave it defaulted.
    template <class Clock, class Duration,
              BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code))
                  LockToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_lock_until(const std::chrono::time_point<Clock, Duration>& expiry,
                          LockToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type),
                          call_site where = call_site())
    {
        return semaphore_.async_acquire_until(max_readers_, expiry, std::forward<LockToken>(token), where);
    }

    /// Starts an asynchronous exclusive lock whose handler receives a `std::unique_lock`, giving
    /// up after `timeout`: `async_scoped_lock` with the time limit of `async_lock_for`.
    ///
    /// @par Completion signature
    /// `void(boost::system::error_code, std::unique_lock<basic_shared_mutex>)`. On success the
    /// `unique_lock` owns the lock; on any error, `timed_out` included, it owns nothing.
    ///
    /// @par Per-operation cancellation
    /// Terminal, partial and total, as for the lock without a time limit; reported as
    /// `operation_aborted`, never as `timed_out`. The timer is cancelled with the operation.
    ///
    /// @par Executor
    /// The handler is never invoked from within this function; it is submitted to its associated
    /// executor (default: `get_executor()`) as if by `boost::asio::post`, with outstanding work
    /// tracked until then. The timer runs on `get_executor()`.
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
              BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code,
                                                   std::unique_lock<basic_shared_mutex>))
                  LockToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_scoped_lock_for(const std::chrono::duration<Rep, Period>& timeout,
                               LockToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type),
                               call_site where = call_site())
    {
        return scoped_lock_until<std::unique_lock<basic_shared_mutex>>(
            max_readers_, std::forward<LockToken>(token), detail::deadline_after(timeout), where);
    }

    /// Starts an asynchronous exclusive lock whose handler receives a `std::unique_lock`, giving
    /// up at `expiry`: `async_scoped_lock` with the deadline of `async_lock_until`.
    ///
    /// @par Completion signature
    /// `void(boost::system::error_code, std::unique_lock<basic_shared_mutex>)`, as for
    /// `async_scoped_lock_for`.
    ///
    /// @par Per-operation cancellation
    /// Terminal, partial and total, as for the lock without a time limit; reported as
    /// `operation_aborted`, never as `timed_out`. The timer is cancelled with the operation.
    ///
    /// @par Executor
    /// The handler is never invoked from within this function; it is submitted to its associated
    /// executor (default: `get_executor()`) as if by `boost::asio::post`, with outstanding work
    /// tracked until then. The timer runs on `get_executor()`.
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
    /// @tparam Clock The deadline's clock. The timer runs on `std::chrono::steady_clock`; a
    /// deadline of another clock is converted once, at the call, into the time left until it.
    /// @tparam Duration The time point's duration.
    /// @param expiry When to give up; a deadline already past gives up unless the lock can be had at once.
    /// @param token The completion token.
    /// @param where Where the wait is started, for the holder registry: leave it defaulted.
    template <class Clock, class Duration,
              BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code,
                                                   std::unique_lock<basic_shared_mutex>))
                  LockToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_scoped_lock_until(const std::chrono::time_point<Clock, Duration>& expiry,
                                 LockToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type),
                                 call_site where = call_site())
    {
        return scoped_lock_until<std::unique_lock<basic_shared_mutex>>(
            max_readers_, std::forward<LockToken>(token), detail::deadline_at(expiry), where);
    }

    /// Takes the exclusive lock if that can be done at once: fails while anyone holds the lock in
    /// any mode or any lock operation waits. Lock-free.
    ///
    /// @returns true if the caller now holds the lock alone.
    bool try_lock() noexcept { return semaphore_.try_acquire(max_readers_); }

    /// Releases the exclusive lock, passing it on to the oldest waiters (their handlers are posted,
    /// never invoked here): the writer at the head of the queue, or the readers queued ahead of
    /// the first waiting writer (up to `max_readers()`), that writer then collecting what is left.
    ///
    /// Precondition: the caller holds the exclusive lock (asserted in debug builds).
    void unlock()
    {
        BOOST_ASSERT_MSG(semaphore_.available() == 0,
                         "asio_sync::basic_shared_mutex::unlock without the lock");
        detail::holder_released(&detail::access::entry(semaphore_), max_readers_);
        semaphore_.release(max_readers_);
    }

    /// Starts an asynchronous shared lock. On success the caller holds a share of the lock and
    /// must `unlock_shared()` it.
    ///
    /// Waits while a writer holds the lock, while `max_readers` readers hold it, or while any
    /// other lock operation is queued (FIFO: a queued writer is not overtaken).
    ///
    /// @par Completion signature
    /// `void(boost::system::error_code)`.
    ///
    /// @par Per-operation cancellation
    /// Terminal, partial and total, as `async_lock`; a cancellation racing the grant has exactly
    /// one outcome.
    ///
    /// @par Executor
    /// The handler is never invoked from within this function; it is submitted to its associated
    /// executor (default: `get_executor()`) as if by `boost::asio::post`, with outstanding work
    /// tracked until then.
    ///
    /// @par Errors
    /// - none: the caller holds a share of the lock.
    /// - `boost::asio::error::operation_aborted`: per-operation cancellation, `cancel()`, or the
    ///   mutex's destruction, while the operation waited. Nothing is held.
    ///
    /// If the completion cannot be submitted, the handler is destroyed instead and the lock goes
    /// back (see **Faults** in `basic_semaphore`'s description); this function then throws only
    /// if that happens at the call, with the mutex as before it.
    ///
    /// @par Thread safety
    /// May be called concurrently with any member function but the destructor.
    ///
    /// @par Object lifetimes
    /// As `async_lock`.
    ///
    /// @param token The completion token.
    /// @param where Where the wait is started, for the holder registry: leave it defaulted.
    template <BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code))
                  LockToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_lock_shared(LockToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type),
                           call_site where = call_site())
    {
        return semaphore_.async_acquire(1, std::forward<LockToken>(token), where);
    }

    /// Starts an asynchronous shared lock whose handler receives a `std::shared_lock`.
    ///
    /// @par Completion signature
    /// `void(boost::system::error_code, std::shared_lock<basic_shared_mutex>)`. On success it
    /// owns a share of the lock (adopted) and releases it when destroyed, also if the handler is
    /// destroyed without being invoked; on error it owns nothing.
    ///
    /// @par Per-operation cancellation
    /// Terminal, partial and total, as `async_lock_shared`.
    ///
    /// @par Executor
    /// The handler is never invoked from within this function; it is submitted to its associated
    /// executor (default: `get_executor()`) as if by `boost::asio::post`.
    ///
    /// @par Errors
    /// As `async_lock_shared`: only `boost::asio::error::operation_aborted`, with an empty
    /// `shared_lock`.
    ///
    /// If the completion cannot be submitted, the handler is destroyed instead and the lock goes
    /// back (see **Faults** in `basic_semaphore`'s description); this function then throws only
    /// if that happens at the call, with the mutex as before it.
    ///
    /// @par Thread safety
    /// May be called concurrently with any member function but the destructor.
    ///
    /// @par Object lifetimes
    /// As `async_lock_shared`; in addition the mutex must outlive the `shared_lock` the handler
    /// receives.
    ///
    /// @param token The completion token.
    /// @param where Where the wait is started, for the holder registry: leave it defaulted.
    template <BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code,
                                                   std::shared_lock<basic_shared_mutex>))
                  LockToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_scoped_lock_shared(LockToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type),
                                  call_site where = call_site())
    {
        return scoped_lock_until<std::shared_lock<basic_shared_mutex>>(1, std::forward<LockToken>(token),
                                                                       detail::no_deadline(), where);
    }

    /// Starts an asynchronous shared lock that gives up after `timeout`: `async_lock_shared`
    /// with the time limit of `async_lock_for`. A reader that times out holds nothing; a queued
    /// writer it stood in front of is not affected.
    ///
    /// @par Completion signature
    /// `void(boost::system::error_code)`.
    ///
    /// @par Per-operation cancellation
    /// Terminal, partial and total, as for the lock without a time limit; reported as
    /// `operation_aborted`, never as `timed_out`. The timer is cancelled with the operation.
    ///
    /// @par Executor
    /// The handler is never invoked from within this function; it is submitted to its associated
    /// executor (default: `get_executor()`) as if by `boost::asio::post`, with outstanding work
    /// tracked until then. The timer runs on `get_executor()`.
    ///
    /// @par Errors
    /// Those of `async_lock_shared`, and `asio_sync::error::timed_out` and
    /// `boost::asio::error::no_memory` as for `async_lock_for`. In every error case nothing is held.
    ///
    /// @par Thread safety
    /// May be called concurrently with any member function but the destructor.
    ///
    /// @par Object lifetimes
    /// As `async_lock_for`.
    ///
    /// @tparam Rep The arithmetic type of the duration's count.
    /// @tparam Period The duration's tick period.
    /// @param timeout How long to wait once queued, on `std::chrono::steady_clock`. Zero or
    /// negative: give up unless the lock can be had at once.
    /// @param token The completion token.
    /// @param where Where the wait is started, for the holder registry: leave it defaulted.
    template <class Rep, class Period,
              BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code))
                  LockToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_lock_shared_for(const std::chrono::duration<Rep, Period>& timeout,
                               LockToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type),
                               call_site where = call_site())
    {
        return semaphore_.async_acquire_for(1, timeout, std::forward<LockToken>(token), where);
    }

    /// Starts an asynchronous shared lock that gives up at `expiry`: `async_lock_shared_for`
    /// with a point in time instead of a duration.
    ///
    /// @par Completion signature
    /// `void(boost::system::error_code)`.
    ///
    /// @par Per-operation cancellation
    /// Terminal, partial and total, as for the lock without a time limit; reported as
    /// `operation_aborted`, never as `timed_out`. The timer is cancelled with the operation.
    ///
    /// @par Executor
    /// The handler is never invoked from within this function; it is submitted to its associated
    /// executor (default: `get_executor()`) as if by `boost::asio::post`, with outstanding work
    /// tracked until then. The timer runs on `get_executor()`.
    ///
    /// @par Errors
    /// Those of `async_lock_shared_for`.
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
    /// @param expiry When to give up; a deadline already past gives up unless the lock can be had at once.
    /// @param token The completion token.
    /// @param where Where the wait is started, for the holder registry: leave it defaulted.
    template <class Clock, class Duration,
              BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code))
                  LockToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_lock_shared_until(const std::chrono::time_point<Clock, Duration>& expiry,
                                 LockToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type),
                                 call_site where = call_site())
    {
        return semaphore_.async_acquire_until(1, expiry, std::forward<LockToken>(token), where);
    }

    /// Starts an asynchronous shared lock whose handler receives a `std::shared_lock`, giving
    /// up after `timeout`: `async_scoped_lock_shared` with the time limit of
    /// `async_lock_shared_for`.
    ///
    /// @par Completion signature
    /// `void(boost::system::error_code, std::shared_lock<basic_shared_mutex>)`. On success the
    /// `shared_lock` owns a share of the lock; on any error it owns nothing.
    ///
    /// @par Per-operation cancellation
    /// Terminal, partial and total, as for the lock without a time limit; reported as
    /// `operation_aborted`, never as `timed_out`. The timer is cancelled with the operation.
    ///
    /// @par Executor
    /// The handler is never invoked from within this function; it is submitted to its associated
    /// executor (default: `get_executor()`) as if by `boost::asio::post`, with outstanding work
    /// tracked until then. The timer runs on `get_executor()`.
    ///
    /// @par Errors
    /// Those of `async_lock_shared_for`.
    ///
    /// @par Thread safety
    /// May be called concurrently with any member function but the destructor.
    ///
    /// @par Object lifetimes
    /// As `async_lock_for`; the mutex must outlive the `shared_lock` the handler receives.
    ///
    /// @tparam Rep The arithmetic type of the duration's count.
    /// @tparam Period The duration's tick period.
    /// @param timeout How long to wait, as for `async_lock_shared_for`.
    /// @param token The completion token.
    /// @param where Where the wait is started, for the holder registry: leave it defaulted.
    template <class Rep, class Period,
              BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code,
                                                   std::shared_lock<basic_shared_mutex>))
                  LockToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_scoped_lock_shared_for(const std::chrono::duration<Rep, Period>& timeout,
                                      LockToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type),
                                      call_site where = call_site())
    {
        return scoped_lock_until<std::shared_lock<basic_shared_mutex>>(
            1, std::forward<LockToken>(token), detail::deadline_after(timeout), where);
    }

    /// Starts an asynchronous shared lock whose handler receives a `std::shared_lock`, giving
    /// up at `expiry`: `async_scoped_lock_shared` with the deadline of
    /// `async_lock_shared_until`.
    ///
    /// @par Completion signature
    /// `void(boost::system::error_code, std::shared_lock<basic_shared_mutex>)`, as for
    /// `async_scoped_lock_shared_for`.
    ///
    /// @par Per-operation cancellation
    /// Terminal, partial and total, as for the lock without a time limit; reported as
    /// `operation_aborted`, never as `timed_out`. The timer is cancelled with the operation.
    ///
    /// @par Executor
    /// The handler is never invoked from within this function; it is submitted to its associated
    /// executor (default: `get_executor()`) as if by `boost::asio::post`, with outstanding work
    /// tracked until then. The timer runs on `get_executor()`.
    ///
    /// @par Errors
    /// Those of `async_lock_shared_until`.
    ///
    /// @par Thread safety
    /// May be called concurrently with any member function but the destructor.
    ///
    /// @par Object lifetimes
    /// As `async_lock_for`; the mutex must outlive the `shared_lock` the handler receives.
    ///
    /// @tparam Clock The deadline's clock. The timer runs on `std::chrono::steady_clock`; a
    /// deadline of another clock is converted once, at the call, into the time left until it.
    /// @tparam Duration The time point's duration.
    /// @param expiry When to give up; a deadline already past gives up unless the lock can be had at once.
    /// @param token The completion token.
    /// @param where Where the wait is started, for the holder registry: leave it defaulted.
    template <class Clock, class Duration,
              BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code,
                                                   std::shared_lock<basic_shared_mutex>))
                  LockToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_scoped_lock_shared_until(const std::chrono::time_point<Clock, Duration>& expiry,
                                        LockToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type),
                                        call_site where = call_site())
    {
        return scoped_lock_until<std::shared_lock<basic_shared_mutex>>(1, std::forward<LockToken>(token),
                                                                       detail::deadline_at(expiry), where);
    }

    /// Takes a share of the lock if that can be done at once: fails while a writer holds it,
    /// while `max_readers` readers hold it, or while any lock operation waits. Lock-free.
    ///
    /// @returns true if the caller now holds a share of the lock.
    bool try_lock_shared() noexcept { return semaphore_.try_acquire(1); }

    /// Releases a share of the lock. When the last reader leaves, a writer waiting at the head of
    /// the queue gets the lock (its handler is posted, never invoked here).
    ///
    /// Precondition: the caller holds a shared lock (asserted in debug builds).
    void unlock_shared()
    {
        BOOST_ASSERT_MSG(semaphore_.available() < max_readers_,
                         "asio_sync::basic_shared_mutex::unlock_shared without a shared lock");
        detail::holder_released(&detail::access::entry(semaphore_), 1);
        semaphore_.release(1);
    }

    /// Turns the caller's exclusive lock into a shared lock, atomically: no writer can take the
    /// lock in between. Readers queued at the head of the queue may proceed; a writer queued at
    /// the head stays blocked (it now waits for this reader), and so do the readers behind it.
    ///
    /// Precondition: the caller holds the exclusive lock (asserted in debug builds).
    void downgrade()
    {
        BOOST_ASSERT_MSG(semaphore_.available() == 0,
                         "asio_sync::basic_shared_mutex::downgrade without the lock");
        detail::holder_released(&detail::access::entry(semaphore_), max_readers_, 1);
        semaphore_.release(max_readers_ - 1);
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

    /// Aborts every pending lock operation, shared or exclusive, with
    /// `boost::asio::error::operation_aborted` (posted, oldest first). Those who hold the lock
    /// keep it; the mutex stays usable.
    ///
    /// @returns the number of operations aborted.
    std::size_t cancel() { return semaphore_.cancel(); }

private:
    // A lock of n permits whose handler receives a Lock that adopts it.
    template <class Lock, class LockToken, class Deadline>
    auto scoped_lock_until(std::size_t n, LockToken&& token, Deadline expiry, call_site where)
    {
        return detail::access::async_acquire_as<void(boost::system::error_code, Lock)>(
            semaphore_, n, detail::adopt_lock_grant<Lock>{this}, std::forward<LockToken>(token), expiry,
            where);
    }

    static std::size_t checked(std::size_t max_readers)
    {
        if (max_readers == 0 || max_readers > basic_semaphore<Executor>::max_permits)
            boost::throw_exception(std::invalid_argument(
                "asio_sync::basic_shared_mutex: max_readers must be in [1, max_permits]"));
        return max_readers;
    }

    basic_semaphore<Executor> semaphore_;
    std::size_t max_readers_;
};

/// A shared mutex with the default executor type, `boost::asio::any_io_executor`.
using shared_mutex = basic_shared_mutex<>;

} // namespace asio_sync

#endif // ASIO_SYNC_SHARED_MUTEX_HPP
