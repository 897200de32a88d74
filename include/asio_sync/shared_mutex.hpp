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
/// It inherits the rest from the semaphore: direct hand-off on unlock, and the contract of
/// \ref async_waits. An unlock happens-before the completion of every lock operation it lets
/// through.
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
    /// \ctorex
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
    /// \ctorctx
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
    /// behind it. A writer cancelled or timed out after collecting part of the lock (readers
    /// leaving
    /// before it) passes that on to the waiters behind it, so the readers it was blocking proceed.
    ///
    /// \ecsig
    /// \aborterrors The mutex cannot be closed, and a writer never asks for more than
    /// `max_readers()`.
    /// \asyncwait
    /// \waitparams
    template <BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code))
                  LockToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_lock(LockToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type),
                    call_site where = call_site())
    {
        return semaphore_.async_acquire(max_readers_, std::forward<LockToken>(token), where);
    }

    /// Starts `async_lock` whose handler receives a `std::unique_lock` that owns the lock; errors
    /// as `async_lock`.
    ///
    /// \guardsig{std::unique_lock<basic_shared_mutex>}
    /// \asyncwait
    /// \waitparams
    template <BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code,
                                                   std::unique_lock<basic_shared_mutex>))
                  LockToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_scoped_lock(LockToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type),
                           call_site where = call_site())
    {
        return scoped_lock_until<std::unique_lock<basic_shared_mutex>>(
            max_readers_, std::forward<LockToken>(token), detail::no_deadline(), where);
    }

    /// Starts `async_lock` that gives up after `timeout`.
    ///
    /// \ecsig
    /// \timedwait
    /// \forparams
    /// \waitparams
    template <class Rep, class Period,
              BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code))
                  LockToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_lock_for(const std::chrono::duration<Rep, Period>& timeout,
                        LockToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type),
                        call_site where = call_site())
    {
        return semaphore_.async_acquire_for(max_readers_, timeout, std::forward<LockToken>(token), where);
    }

    /// Starts `async_lock` that gives up at `expiry`.
    ///
    /// \ecsig
    /// \timedwait
    /// \untilparams
    /// \waitparams
    template <class Clock, class Duration,
              BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code))
                  LockToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_lock_until(const std::chrono::time_point<Clock, Duration>& expiry,
                          LockToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type),
                          call_site where = call_site())
    {
        return semaphore_.async_acquire_until(max_readers_, expiry, std::forward<LockToken>(token), where);
    }

    /// Starts `async_scoped_lock` that gives up after `timeout`.
    ///
    /// \guardsig{std::unique_lock<basic_shared_mutex>}
    /// \timedwait
    /// \forparams
    /// \waitparams
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

    /// Starts `async_scoped_lock` that gives up at `expiry`.
    ///
    /// \guardsig{std::unique_lock<basic_shared_mutex>}
    /// \timedwait
    /// \untilparams
    /// \waitparams
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
    /// \ecsig
    /// \aborterrors
    /// \asyncwait
    /// \waitparams
    template <BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code))
                  LockToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_lock_shared(LockToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type),
                           call_site where = call_site())
    {
        return semaphore_.async_acquire(1, std::forward<LockToken>(token), where);
    }

    /// Starts `async_lock_shared` whose handler receives a `std::shared_lock` that owns the lock;
    /// errors as `async_lock_shared`.
    ///
    /// \guardsig{std::shared_lock<basic_shared_mutex>}
    /// \asyncwait
    /// \waitparams
    template <BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code,
                                                   std::shared_lock<basic_shared_mutex>))
                  LockToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_scoped_lock_shared(LockToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type),
                                  call_site where = call_site())
    {
        return scoped_lock_until<std::shared_lock<basic_shared_mutex>>(1, std::forward<LockToken>(token),
                                                                       detail::no_deadline(), where);
    }

    /// Starts `async_lock_shared` that gives up after `timeout`; a queued writer it stood in front
    /// of is not affected.
    ///
    /// \ecsig
    /// \timedwait
    /// \forparams
    /// \waitparams
    template <class Rep, class Period,
              BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code))
                  LockToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_lock_shared_for(const std::chrono::duration<Rep, Period>& timeout,
                               LockToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type),
                               call_site where = call_site())
    {
        return semaphore_.async_acquire_for(1, timeout, std::forward<LockToken>(token), where);
    }

    /// Starts `async_lock_shared` that gives up at `expiry`.
    ///
    /// \ecsig
    /// \timedwait
    /// \untilparams
    /// \waitparams
    template <class Clock, class Duration,
              BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code))
                  LockToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_lock_shared_until(const std::chrono::time_point<Clock, Duration>& expiry,
                                 LockToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type),
                                 call_site where = call_site())
    {
        return semaphore_.async_acquire_until(1, expiry, std::forward<LockToken>(token), where);
    }

    /// Starts `async_scoped_lock_shared` that gives up after `timeout`.
    ///
    /// \guardsig{std::shared_lock<basic_shared_mutex>}
    /// \timedwait
    /// \forparams
    /// \waitparams
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

    /// Starts `async_scoped_lock_shared` that gives up at `expiry`.
    ///
    /// \guardsig{std::shared_lock<basic_shared_mutex>}
    /// \timedwait
    /// \untilparams
    /// \waitparams
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

    /// \setobserver
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
