// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_UPGRADE_LOCK_HPP
#define ASIO_SYNC_UPGRADE_LOCK_HPP

/// @file
/// The guard of an upgrade lock: asio_sync::upgrade_lock, as Boost.Thread's `upgrade_lock`.

#include <mutex>
#include <utility>

namespace asio_sync {

/// Owns an upgrade lock of a mutex (`basic_upgrade_mutex`), and gives it back with
/// `unlock_upgrade()` when destroyed: what `std::unique_lock` is to the exclusive lock and
/// `std::shared_lock` to the shared one, in Boost.Thread's vocabulary.
///
/// Obtained from `basic_upgrade_mutex::async_scoped_lock_upgrade`, or made by adopting a lock the
/// caller holds. Move-only. One guard must not be used by two threads at once.
///
/// @tparam Mutex A type with `try_lock_upgrade()` and `unlock_upgrade()`.
template <class Mutex>
class upgrade_lock
{
public:
    /// The type of the mutex.
    using mutex_type = Mutex;

    /// Owns nothing.
    upgrade_lock() noexcept = default;

    /// Adopts the upgrade lock of `m`, which the caller holds.
    ///
    /// @param m The mutex.
    upgrade_lock(mutex_type& m, std::adopt_lock_t) noexcept : mutex_(&m), owns_(true) {}

    /// Takes the upgrade lock of `m` if that can be done at once (`m.try_lock_upgrade()`).
    ///
    /// @param m The mutex.
    upgrade_lock(mutex_type& m, std::try_to_lock_t) : mutex_(&m), owns_(m.try_lock_upgrade()) {}

    /// Takes over what `other` owns; `other` then owns nothing.
    ///
    /// @param other The guard to take over.
    upgrade_lock(upgrade_lock&& other) noexcept
        : mutex_(std::exchange(other.mutex_, nullptr)), owns_(std::exchange(other.owns_, false))
    {
    }

    /// Gives back what this guard owns, then takes over what `other` owns.
    ///
    /// @param other The guard to take over.
    /// @returns `*this`.
    upgrade_lock& operator=(upgrade_lock&& other) noexcept
    {
        if (this != &other)
        {
            if (owns_)
                mutex_->unlock_upgrade();
            mutex_ = std::exchange(other.mutex_, nullptr);
            owns_ = std::exchange(other.owns_, false);
        }
        return *this;
    }

    /// Not copyable.
    upgrade_lock(const upgrade_lock&) = delete;
    /// Not copy-assignable.
    upgrade_lock& operator=(const upgrade_lock&) = delete;

    /// Gives back the upgrade lock, if owned.
    ~upgrade_lock()
    {
        if (owns_)
            mutex_->unlock_upgrade();
    }

    /// Gives back the upgrade lock now. Precondition: `owns_lock()`.
    void unlock()
    {
        owns_ = false;
        mutex_->unlock_upgrade();
    }

    /// Stops owning the lock without giving it back.
    ///
    /// @returns the mutex, whose upgrade lock the caller now holds (if this guard owned it).
    mutex_type* release() noexcept
    {
        owns_ = false;
        return std::exchange(mutex_, nullptr);
    }

    /// Returns true while the guard owns an upgrade lock.
    bool owns_lock() const noexcept { return owns_; }

    /// Returns `owns_lock()`.
    explicit operator bool() const noexcept { return owns_; }

    /// Returns the mutex, or null.
    mutex_type* mutex() const noexcept { return mutex_; }

private:
    mutex_type* mutex_ = nullptr;
    bool owns_ = false;
};

} // namespace asio_sync

#endif // ASIO_SYNC_UPGRADE_LOCK_HPP
