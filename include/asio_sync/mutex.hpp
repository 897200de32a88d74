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
/// lock to the oldest waiter, nobody barges in, `try_lock` fails while anyone waits), and the
/// contract of \ref async_waits.
///
/// The mutex is not recursive and has no owner: any code may unlock it, as with a semaphore.
/// Unlocking happens-before the completion of the lock operation that receives the lock.
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
    /// \ctorex
    explicit basic_mutex(const executor_type& ex) : semaphore_(ex, 1)
    {
        detail::access::entry(semaphore_).names = {"mutex", "async_lock", this};
        detail::access::entry(semaphore_).lock_permits = 1;
    }

    /// Constructs an unlocked mutex that uses the context's executor.
    ///
    /// \ctorctx
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
    /// \ecsig
    /// \aborterrors A mutex cannot be closed, and one permit never exceeds its capacity.
    /// \asyncwait
    /// \waitparams
    template <BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code))
                  LockToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_lock(LockToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type),
                    call_site where = call_site())
    {
        return semaphore_.async_acquire(1, std::forward<LockToken>(token), where);
    }

    /// Starts `async_lock` whose handler receives a `std::unique_lock` that owns the lock; errors
    /// as `async_lock`.
    ///
    /// \guardsig{std::unique_lock<basic_mutex>}
    /// \asyncwait
    /// \waitparams
    template <BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code, std::unique_lock<basic_mutex>))
                  LockToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_scoped_lock(LockToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type),
                           call_site where = call_site())
    {
        return scoped_lock_until(std::forward<LockToken>(token), detail::no_deadline(), where);
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
        return semaphore_.async_acquire_for(1, timeout, std::forward<LockToken>(token), where);
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
        return semaphore_.async_acquire_until(1, expiry, std::forward<LockToken>(token), where);
    }

    /// Starts `async_scoped_lock` that gives up after `timeout`.
    ///
    /// \guardsig{std::unique_lock<basic_mutex>}
    /// \timedwait
    /// \forparams
    /// \waitparams
    template <class Rep, class Period,
              BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code, std::unique_lock<basic_mutex>))
                  LockToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_scoped_lock_for(const std::chrono::duration<Rep, Period>& timeout,
                               LockToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type),
                               call_site where = call_site())
    {
        return scoped_lock_until(std::forward<LockToken>(token), detail::deadline_after(timeout), where);
    }

    /// Starts `async_scoped_lock` that gives up at `expiry`.
    ///
    /// \guardsig{std::unique_lock<basic_mutex>}
    /// \timedwait
    /// \untilparams
    /// \waitparams
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

    /// \setobserver
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
