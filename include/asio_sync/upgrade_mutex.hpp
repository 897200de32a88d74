// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_UPGRADE_MUTEX_HPP
#define ASIO_SYNC_UPGRADE_MUTEX_HPP

/// @file
/// The asynchronous upgrade mutex: asio_sync::basic_upgrade_mutex and the asio_sync::upgrade_mutex
/// alias.

#include <asio_sync/call_site.hpp>
#include <asio_sync/detail/deadline.hpp>
#include <asio_sync/detail/grant.hpp>
#include <asio_sync/detail/holder_records.hpp>
#include <asio_sync/detail/upgrade_core.hpp>
#include <asio_sync/detail/upgrade_lock_op.hpp>
#include <asio_sync/detail/waiter_list.hpp>
#include <asio_sync/upgrade_lock.hpp>
#include <asio_sync/wait_observer.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/execution/context.hpp>
#include <boost/asio/execution_context.hpp>
#include <boost/asio/query.hpp>
#include <boost/assert.hpp>
#include <boost/system/error_code.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <mutex>
#include <shared_mutex>
#include <type_traits>
#include <utility>

namespace asio_sync {

/// An asynchronous reader-writer mutex with an upgrade mode, for Asio, in the vocabulary of
/// Boost.Thread's `upgrade_mutex`: shared locks (readers), one exclusive lock (a writer), and the
/// upgrade lock, a shared lock that at most one holder has at a time and that can become the
/// exclusive lock without letting go.
///
/// **Modes.** Readers hold the lock together, with at most one upgrade holder among them. A
/// writer holds it alone. `async_upgrade` turns the upgrade lock into the exclusive lock,
/// atomically, once the other readers have left: no writer gets in between, so what the holder
/// read under the upgrade lock is still true when it writes. `downgrade` turns the exclusive lock
/// into a shared one, `downgrade_to_upgrade` into the upgrade lock, and
/// `unlock_upgrade_and_lock_shared` the upgrade lock into a shared one, each atomically.
///
/// **Fairness.** Lock operations wait in one FIFO queue, whatever their mode: each is granted once
/// nothing it excludes is held, and never past an earlier one that still waits, so a queued writer
/// blocks the readers behind it and writers do not starve. An upgrade in progress goes before
/// every queued lock operation (as folly's `SharedMutexFair` lets upgraders jump the queue): it
/// waits only for the readers that hold the lock when it asks, and nothing queued is granted
/// until it has completed. While anything waits, `try_lock`, `try_lock_shared` and
/// `try_lock_upgrade` fail.
///
/// **No upgrade deadlock.** Two readers that both try to become writers deadlock with a lock that
/// lets any reader upgrade (tokio-rs/tokio#7282): each waits for the other to leave. Here that
/// cannot happen by construction: only the upgrade holder may upgrade, there is at most one, and
/// it waits only for plain readers, which never wait for anything while they hold their share. A
/// writer queued before the upgrade cannot block it, since the upgrade does not queue behind it.
///
/// Every wait keeps the contract of \ref async_waits, with the `_for` and `_until` forms of
/// [Deadlines](deadlines.md); an unlock happens-before the completion of every lock operation it
/// lets through. `try_lock*`, an unlock while nobody waits and a lock granted at once are a
/// lock-free compare-and-swap.
///
/// Not copyable, not movable; not recursive, and with no owner: the preconditions of the unlock
/// and downgrade functions are asserted in debug builds where the state shows them broken. There
/// is no `close()`: to stop the waiters, `cancel()` them.
///
/// @tparam Executor The I/O executor: the default executor for completion handlers, the executor
/// of the timers of timed locks, and the context whose shutdown destroys pending operations.
template <class Executor = boost::asio::any_io_executor>
class basic_upgrade_mutex
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
        using other = basic_upgrade_mutex<OtherExecutor>;
    };

    /// Constructs an unlocked mutex.
    ///
    /// \ctorex
    explicit basic_upgrade_mutex(const executor_type& ex)
        : executor_(ex), impl_(boost::asio::query(executor_, boost::asio::execution::context))
    {
        impl_.names = {"upgrade_mutex", "async_lock", this};
        impl_.lock_permits = detail::exclusive_mode; // its modes decide (upgrade_core::excludes)
    }

    /// Constructs an unlocked mutex that uses the context's executor.
    ///
    /// \ctorctx
    template <
        class ExecutionContext,
        std::enable_if_t<std::is_convertible_v<ExecutionContext&, boost::asio::execution_context&>, int> = 0>
    explicit basic_upgrade_mutex(ExecutionContext& ctx)
        : basic_upgrade_mutex(executor_type(ctx.get_executor()))
    {
    }

    /// Not copyable (nor movable): lock operations and guards refer to the mutex by address.
    basic_upgrade_mutex(const basic_upgrade_mutex&) = delete;
    /// Not copy-assignable (nor move-assignable).
    basic_upgrade_mutex& operator=(const basic_upgrade_mutex&) = delete;

    /// Destroys the mutex. Pending lock operations and a pending upgrade complete with
    /// `boost::asio::error::operation_aborted` (posted, oldest first). No guard may outlive the
    /// mutex.
    ~basic_upgrade_mutex() = default;

    /// Returns the executor associated with the mutex.
    const executor_type& get_executor() const noexcept { return executor_; }

    /// Starts an asynchronous exclusive lock. On success the caller holds the lock alone and must
    /// `unlock()` it (or downgrade it).
    ///
    /// The writer waits until nobody holds the lock in any mode, and behind every lock operation
    /// queued before it; readers that arrive later wait behind it. A cancelled writer lets the
    /// waiters it held up move on.
    ///
    /// \ecsig
    /// \aborterrors
    /// \asyncwait
    /// \waitparams
    template <BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code))
                  LockToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_lock(LockToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type),
                    call_site where = call_site())
    {
        return plain_lock(detail::exclusive_mode, std::forward<LockToken>(token), detail::no_deadline(),
                          where);
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
        return plain_lock(detail::exclusive_mode, std::forward<LockToken>(token),
                          detail::deadline_after(timeout), where);
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
        return plain_lock(detail::exclusive_mode, std::forward<LockToken>(token), detail::deadline_at(expiry),
                          where);
    }

    /// Starts `async_lock` whose handler receives a `std::unique_lock` that owns the lock; errors
    /// as `async_lock`.
    ///
    /// \guardsig{std::unique_lock<basic_upgrade_mutex>}
    /// \asyncwait
    /// \waitparams
    template <BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code,
                                                   std::unique_lock<basic_upgrade_mutex>))
                  LockToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_scoped_lock(LockToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type),
                           call_site where = call_site())
    {
        return scoped_lock<std::unique_lock<basic_upgrade_mutex>>(
            detail::exclusive_mode, std::forward<LockToken>(token), detail::no_deadline(), where);
    }

    /// Starts `async_scoped_lock` that gives up after `timeout`.
    ///
    /// \guardsig{std::unique_lock<basic_upgrade_mutex>}
    /// \timedwait
    /// \forparams
    /// \waitparams
    template <class Rep, class Period,
              BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code,
                                                   std::unique_lock<basic_upgrade_mutex>))
                  LockToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_scoped_lock_for(const std::chrono::duration<Rep, Period>& timeout,
                               LockToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type),
                               call_site where = call_site())
    {
        return scoped_lock<std::unique_lock<basic_upgrade_mutex>>(
            detail::exclusive_mode, std::forward<LockToken>(token), detail::deadline_after(timeout), where);
    }

    /// Starts `async_scoped_lock` that gives up at `expiry`.
    ///
    /// \guardsig{std::unique_lock<basic_upgrade_mutex>}
    /// \timedwait
    /// \untilparams
    /// \waitparams
    template <class Clock, class Duration,
              BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code,
                                                   std::unique_lock<basic_upgrade_mutex>))
                  LockToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_scoped_lock_until(const std::chrono::time_point<Clock, Duration>& expiry,
                                 LockToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type),
                                 call_site where = call_site())
    {
        return scoped_lock<std::unique_lock<basic_upgrade_mutex>>(
            detail::exclusive_mode, std::forward<LockToken>(token), detail::deadline_at(expiry), where);
    }

    /// Starts an asynchronous shared lock. On success the caller holds a share of the lock and must
    /// `unlock_shared()` it.
    ///
    /// Waits while a writer holds the lock, while an upgrade is in progress, or while any lock
    /// operation is queued (FIFO). An upgrade holder does not keep readers out.
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
        return plain_lock(detail::shared_mode, std::forward<LockToken>(token), detail::no_deadline(), where);
    }

    /// Starts `async_lock_shared` that gives up after `timeout`.
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
        return plain_lock(detail::shared_mode, std::forward<LockToken>(token),
                          detail::deadline_after(timeout), where);
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
        return plain_lock(detail::shared_mode, std::forward<LockToken>(token), detail::deadline_at(expiry),
                          where);
    }

    /// Starts `async_lock_shared` whose handler receives a `std::shared_lock` that owns the lock;
    /// errors as `async_lock_shared`.
    ///
    /// \guardsig{std::shared_lock<basic_upgrade_mutex>}
    /// \asyncwait
    /// \waitparams
    template <BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code,
                                                   std::shared_lock<basic_upgrade_mutex>))
                  LockToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_scoped_lock_shared(LockToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type),
                                  call_site where = call_site())
    {
        return scoped_lock<std::shared_lock<basic_upgrade_mutex>>(
            detail::shared_mode, std::forward<LockToken>(token), detail::no_deadline(), where);
    }

    /// Starts `async_scoped_lock_shared` that gives up after `timeout`.
    ///
    /// \guardsig{std::shared_lock<basic_upgrade_mutex>}
    /// \timedwait
    /// \forparams
    /// \waitparams
    template <class Rep, class Period,
              BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code,
                                                   std::shared_lock<basic_upgrade_mutex>))
                  LockToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_scoped_lock_shared_for(const std::chrono::duration<Rep, Period>& timeout,
                                      LockToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type),
                                      call_site where = call_site())
    {
        return scoped_lock<std::shared_lock<basic_upgrade_mutex>>(
            detail::shared_mode, std::forward<LockToken>(token), detail::deadline_after(timeout), where);
    }

    /// Starts `async_scoped_lock_shared` that gives up at `expiry`.
    ///
    /// \guardsig{std::shared_lock<basic_upgrade_mutex>}
    /// \timedwait
    /// \untilparams
    /// \waitparams
    template <class Clock, class Duration,
              BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code,
                                                   std::shared_lock<basic_upgrade_mutex>))
                  LockToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_scoped_lock_shared_until(const std::chrono::time_point<Clock, Duration>& expiry,
                                        LockToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type),
                                        call_site where = call_site())
    {
        return scoped_lock<std::shared_lock<basic_upgrade_mutex>>(
            detail::shared_mode, std::forward<LockToken>(token), detail::deadline_at(expiry), where);
    }

    /// Starts an asynchronous upgrade lock: a share of the lock that at most one holder has at a
    /// time, and that `async_upgrade` can turn into the exclusive lock. On success the caller must
    /// `unlock_upgrade()` it (or upgrade or downgrade it).
    ///
    /// Waits while a writer or another upgrade holder holds the lock, or while any lock operation
    /// is queued (FIFO). Readers do not keep it out.
    ///
    /// \ecsig
    /// \aborterrors
    /// \asyncwait
    /// \waitparams
    template <BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code))
                  LockToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_lock_upgrade(LockToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type),
                            call_site where = call_site())
    {
        return plain_lock(detail::upgrade_mode, std::forward<LockToken>(token), detail::no_deadline(), where);
    }

    /// Starts `async_lock_upgrade` that gives up after `timeout`.
    ///
    /// \ecsig
    /// \timedwait
    /// \forparams
    /// \waitparams
    template <class Rep, class Period,
              BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code))
                  LockToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_lock_upgrade_for(const std::chrono::duration<Rep, Period>& timeout,
                                LockToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type),
                                call_site where = call_site())
    {
        return plain_lock(detail::upgrade_mode, std::forward<LockToken>(token),
                          detail::deadline_after(timeout), where);
    }

    /// Starts `async_lock_upgrade` that gives up at `expiry`.
    ///
    /// \ecsig
    /// \timedwait
    /// \untilparams
    /// \waitparams
    template <class Clock, class Duration,
              BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code))
                  LockToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_lock_upgrade_until(const std::chrono::time_point<Clock, Duration>& expiry,
                                  LockToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type),
                                  call_site where = call_site())
    {
        return plain_lock(detail::upgrade_mode, std::forward<LockToken>(token), detail::deadline_at(expiry),
                          where);
    }

    /// Starts `async_lock_upgrade` whose handler receives a `upgrade_lock` that owns the lock;
    /// errors as `async_lock_upgrade`.
    ///
    /// \guardsig{upgrade_lock<basic_upgrade_mutex>}
    /// \asyncwait
    /// \waitparams
    template <BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code,
                                                   upgrade_lock<basic_upgrade_mutex>))
                  LockToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_scoped_lock_upgrade(LockToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type),
                                   call_site where = call_site())
    {
        return scoped_lock<upgrade_lock<basic_upgrade_mutex>>(
            detail::upgrade_mode, std::forward<LockToken>(token), detail::no_deadline(), where);
    }

    /// Starts `async_scoped_lock_upgrade` that gives up after `timeout`.
    ///
    /// \guardsig{upgrade_lock<basic_upgrade_mutex>}
    /// \timedwait
    /// \forparams
    /// \waitparams
    template <class Rep, class Period,
              BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code,
                                                   upgrade_lock<basic_upgrade_mutex>))
                  LockToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_scoped_lock_upgrade_for(const std::chrono::duration<Rep, Period>& timeout,
                                       LockToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type),
                                       call_site where = call_site())
    {
        return scoped_lock<upgrade_lock<basic_upgrade_mutex>>(
            detail::upgrade_mode, std::forward<LockToken>(token), detail::deadline_after(timeout), where);
    }

    /// Starts `async_scoped_lock_upgrade` that gives up at `expiry`.
    ///
    /// \guardsig{upgrade_lock<basic_upgrade_mutex>}
    /// \timedwait
    /// \untilparams
    /// \waitparams
    template <class Clock, class Duration,
              BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code,
                                                   upgrade_lock<basic_upgrade_mutex>))
                  LockToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_scoped_lock_upgrade_until(const std::chrono::time_point<Clock, Duration>& expiry,
                                         LockToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type),
                                         call_site where = call_site())
    {
        return scoped_lock<upgrade_lock<basic_upgrade_mutex>>(
            detail::upgrade_mode, std::forward<LockToken>(token), detail::deadline_at(expiry), where);
    }

    /// Starts an upgrade: the caller's upgrade lock becomes the exclusive lock, atomically, once
    /// the other readers have left. On success the caller holds the lock alone (and no longer the
    /// upgrade lock) and must `unlock()` it; on error it still holds the upgrade lock.
    ///
    /// The upgrade goes before every lock operation queued: it waits only for the readers that hold
    /// the lock now, and readers arriving meanwhile wait behind it. With no reader left it is
    /// granted at once (posted, as always).
    ///
    /// Precondition: the caller holds the upgrade lock. Called while nobody holds it, or while an
    /// upgrade is already in progress, it completes with `asio_sync::error::no_upgrade_lock`
    /// (posted) and changes nothing; called by another thread of control while someone else holds
    /// it (the mutex has no owner to check), it upgrades the holder's lock on the caller's behalf.
    ///
    /// \ecsig
    /// @par Errors and cancellation
    /// - `asio_sync::error::no_upgrade_lock`: nobody held the upgrade lock, or an upgrade was
    ///   already in progress; decided at the call, nothing changed.
    /// - `boost::asio::error::operation_aborted`: cancellation (terminal, partial, total),
    ///   `cancel()`, or the mutex's destruction, while the upgrade waited. The caller still holds
    ///   the upgrade lock, and the lock operations the upgrade held up move on. A cancellation
    ///   racing the last reader's leaving has exactly one outcome: the exclusive lock, or the
    ///   upgrade lock still.
    /// .
    /// If the completion cannot be submitted, the handler is destroyed and the exclusive lock it
    /// was
    /// granted is given back.
    /// \asyncwait
    /// \waitparams
    template <BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code))
                  UpgradeToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_upgrade(UpgradeToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type),
                       call_site where = call_site())
    {
        return plain_lock(detail::upgrading_mode, std::forward<UpgradeToken>(token), detail::no_deadline(),
                          where);
    }

    /// Starts `async_upgrade` that gives up after `timeout`; on `timed_out` the caller still
    /// holds the upgrade lock.
    ///
    /// \ecsig
    /// \timedwait
    /// \forparams
    /// \waitparams
    template <class Rep, class Period,
              BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code))
                  UpgradeToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_upgrade_for(const std::chrono::duration<Rep, Period>& timeout,
                           UpgradeToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type),
                           call_site where = call_site())
    {
        return plain_lock(detail::upgrading_mode, std::forward<UpgradeToken>(token),
                          detail::deadline_after(timeout), where);
    }

    /// Starts `async_upgrade` that gives up at `expiry`; on `timed_out` the caller still holds
    /// the upgrade lock.
    ///
    /// \ecsig
    /// \timedwait
    /// \untilparams
    /// \waitparams
    template <class Clock, class Duration,
              BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code))
                  UpgradeToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_upgrade_until(const std::chrono::time_point<Clock, Duration>& expiry,
                             UpgradeToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type),
                             call_site where = call_site())
    {
        return plain_lock(detail::upgrading_mode, std::forward<UpgradeToken>(token),
                          detail::deadline_at(expiry), where);
    }

    /// Takes the exclusive lock if that can be done at once: fails while anyone holds the lock in
    /// any mode or any lock operation waits. Lock-free.
    ///
    /// @returns true if the caller now holds the lock alone.
    bool try_lock() noexcept { return impl_.core.try_acquire(detail::exclusive_mode); }

    /// Takes a share of the lock if that can be done at once: fails while a writer holds it or any
    /// lock operation waits. Lock-free.
    ///
    /// @returns true if the caller now holds a share.
    bool try_lock_shared() noexcept { return impl_.core.try_acquire(detail::shared_mode); }

    /// Takes the upgrade lock if that can be done at once: fails while a writer or another upgrade
    /// holder holds the lock or any lock operation waits. Lock-free.
    ///
    /// @returns true if the caller now holds the upgrade lock.
    bool try_lock_upgrade() noexcept { return impl_.core.try_acquire(detail::upgrade_mode); }

    /// Turns the caller's upgrade lock into the exclusive lock if no other reader holds the lock:
    /// `async_upgrade` without waiting. Lock-free while nothing waits; it may go ahead of queued
    /// lock operations, as `async_upgrade` does.
    ///
    /// Precondition: the caller holds the upgrade lock (without it, this returns false).
    ///
    /// @returns true if the caller now holds the exclusive lock; false, with the upgrade lock
    /// still held, otherwise.
    bool try_upgrade() noexcept
    {
        const bool upgraded = impl_.core.try_acquire(detail::upgrading_mode);
        if (upgraded)
            detail::holder_released(&impl_, detail::upgrade_mode, detail::exclusive_mode);
        return upgraded;
    }

    /// Releases the exclusive lock, passing it on to the oldest waiters (their handlers are
    /// posted, never invoked here).
    ///
    /// Precondition: the caller holds the exclusive lock (asserted in debug builds).
    void unlock()
    {
        BOOST_ASSERT_MSG(impl_.core.writer_held(), "asio_sync::basic_upgrade_mutex::unlock without the lock");
        detail::holder_released(&impl_, detail::exclusive_mode);
        impl_.release(detail::exclusive_mode);
    }

    /// Releases a share of the lock. When the last reader leaves, a pending upgrade, or else the
    /// writer at the head of the queue, gets the lock (its handler is posted, never invoked here).
    ///
    /// Precondition: the caller holds a shared lock (asserted in debug builds).
    void unlock_shared()
    {
        BOOST_ASSERT_MSG(impl_.core.readers() != 0,
                         "asio_sync::basic_upgrade_mutex::unlock_shared without a shared lock");
        detail::holder_released(&impl_, detail::shared_mode);
        impl_.release(detail::shared_mode);
    }

    /// Releases the upgrade lock, letting the next upgrade lock operation or writer through.
    ///
    /// Precondition: the caller holds the upgrade lock and no upgrade of it is in progress
    /// (asserted in debug builds where the state shows it).
    void unlock_upgrade()
    {
        BOOST_ASSERT_MSG(impl_.core.upgrade_held(),
                         "asio_sync::basic_upgrade_mutex::unlock_upgrade without the upgrade lock");
        detail::holder_released(&impl_, detail::upgrade_mode);
        impl_.release(detail::upgrade_mode);
    }

    /// Turns the caller's exclusive lock into a shared lock, atomically: no writer can take the
    /// lock in between. Readers at the head of the queue may proceed.
    ///
    /// Precondition: the caller holds the exclusive lock (asserted in debug builds).
    void downgrade()
    {
        BOOST_ASSERT_MSG(impl_.core.writer_held(),
                         "asio_sync::basic_upgrade_mutex::downgrade without the lock");
        detail::holder_released(&impl_, detail::exclusive_mode, detail::shared_mode);
        detail::waiter_list done;
        impl_.core.downgrade(detail::shared_mode, done);
        detail::complete_all(done, detail::relation::continuation);
    }

    /// Turns the caller's exclusive lock into the upgrade lock, atomically: readers at the head of
    /// the queue may proceed; writers and upgrade lock operations still wait.
    ///
    /// Precondition: the caller holds the exclusive lock (asserted in debug builds).
    void downgrade_to_upgrade()
    {
        BOOST_ASSERT_MSG(impl_.core.writer_held(),
                         "asio_sync::basic_upgrade_mutex::downgrade_to_upgrade without the lock");
        detail::holder_released(&impl_, detail::exclusive_mode, detail::upgrade_mode);
        detail::waiter_list done;
        impl_.core.downgrade(detail::upgrade_mode, done);
        detail::complete_all(done, detail::relation::continuation);
    }

    /// Turns the caller's upgrade lock into a plain shared lock, atomically, letting the next
    /// upgrade lock operation through.
    ///
    /// Precondition: the caller holds the upgrade lock and no upgrade of it is in progress
    /// (asserted in debug builds where the state shows it).
    void unlock_upgrade_and_lock_shared()
    {
        BOOST_ASSERT_MSG(
            impl_.core.upgrade_held(),
            "asio_sync::basic_upgrade_mutex::unlock_upgrade_and_lock_shared without the upgrade lock");
        detail::holder_released(&impl_, detail::upgrade_mode, detail::shared_mode);
        detail::waiter_list done;
        impl_.core.downgrade_upgrade(done);
        detail::complete_all(done, detail::relation::continuation);
    }

    /// Aborts every pending lock operation and a pending upgrade with
    /// `boost::asio::error::operation_aborted` (posted, oldest first). Those who hold the lock keep
    /// it; an upgrade holder whose upgrade was aborted keeps the upgrade lock.
    ///
    /// @returns the number of operations aborted.
    std::size_t cancel()
    {
        detail::waiter_list done;
        const std::size_t count = impl_.core.abort_all(detail::waiter_outcome::aborted, done);
        detail::complete_all(done);
        return count;
    }

    /// \setobserver
    void set_observer(wait_observer* observer) noexcept
    {
        impl_.observer.store(observer, std::memory_order_release);
    }

    /// Returns the number of lock operations queued now, a pending upgrade included. A snapshot,
    /// for monitoring and tests.
    std::size_t waiting() const noexcept { return impl_.core.waiting(); }

private:
    template <class LockToken, class Deadline>
    auto plain_lock(std::size_t mode, LockToken&& token, Deadline expiry, call_site where)
    {
        return detail::async_upgrade_lock<void(boost::system::error_code)>(
            executor_, impl_, mode, detail::mode_grant{&impl_}, std::forward<LockToken>(token), expiry,
            where);
    }

    template <class Lock, class LockToken, class Deadline>
    auto scoped_lock(std::size_t mode, LockToken&& token, Deadline expiry, call_site where)
    {
        return detail::async_upgrade_lock<void(boost::system::error_code, Lock)>(
            executor_, impl_, mode, detail::adopt_lock_grant<Lock>{this}, std::forward<LockToken>(token),
            expiry, where);
    }

    executor_type executor_;
    detail::upgrade_impl impl_;
};

/// An upgrade mutex with the default executor type, `boost::asio::any_io_executor`.
using upgrade_mutex = basic_upgrade_mutex<>;

} // namespace asio_sync

#endif // ASIO_SYNC_UPGRADE_MUTEX_HPP
