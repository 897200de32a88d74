// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_ERROR_HPP
#define ASIO_SYNC_ERROR_HPP

/// @file
/// Error codes reported through the completion handlers of asio_sync operations: the
/// asio_sync::error enumeration, its category and its `error_code` conversion.

#include <boost/system/error_category.hpp>
#include <boost/system/error_code.hpp>

#include <cstddef>
#include <string>
#include <type_traits>

namespace asio_sync {

/// Errors reported by asio_sync operations, in the category `asio_sync::error_category()`.
///
/// Cancellation is not in this list: a cancelled operation reports
/// `boost::asio::error::operation_aborted`, as Asio's own operations do (per-operation
/// cancellation, `cancel()`, destruction of the object). A timed wait whose timer could not be
/// started reports `boost::asio::error::no_memory`. The values start at 1, so that no value means
/// success, and compare equal to an `error_code` of their category:
/// `ec == asio_sync::error::timed_out`.
enum class error
{
    /// The semaphore was closed: `basic_semaphore::close()` was called while the acquire was
    /// queued (it completes with this error, holding nothing) or before the acquire began
    /// (it completes with this error without queueing, also for `n == 0`). Reported by every
    /// acquire of `basic_semaphore`; the mutexes cannot be closed and never report it.
    closed = 1,

    /// More permits were asked for than the semaphore can ever grant: `n > capacity()`, which
    /// for an unbounded semaphore means `n > max_permits`. Reported at the call, with nothing
    /// queued (also on a closed semaphore), or for a queued acquire of a bounded semaphore whose
    /// `reduce_permits` lowered the capacity below `n` while it waited; it then holds nothing,
    /// what it had collected having been handed on.
    too_many_permits,

    /// A timed wait (a `_for` or `_until` form: `basic_semaphore::async_acquire_for`,
    /// `basic_mutex::async_lock_until`, `basic_manual_reset_event::async_wait_for`, ...) was not
    /// granted before its deadline on `std::chrono::steady_clock`. It holds nothing: what it had
    /// collected was handed to the waiters behind it (or paid a `reduce_permits` debt). A grant
    /// that races the deadline wins or loses as a whole. Distinct from
    /// `boost::asio::error::operation_aborted`, which reports a cancellation.
    timed_out,

    /// `basic_upgrade_mutex::async_upgrade` was called while nobody held the upgrade lock, or
    /// while an upgrade was already in progress. Reported at the call, with nothing queued and
    /// nothing changed.
    no_upgrade_lock,
};

namespace detail {

class error_category_impl final : public boost::system::error_category
{
public:
    // A fixed 64-bit identifier makes equal categories compare equal across shared libraries.
    constexpr error_category_impl() noexcept : boost::system::error_category(0xa51c5e3a70b2d914ULL) {}

    const char* name() const noexcept override { return "asio_sync"; }

    std::string message(int value) const override { return message(value, nullptr, 0); }

    const char* message(int value, char*, std::size_t) const noexcept override
    {
        switch (static_cast<error>(value))
        {
        case error::closed:
            return "the synchronization object is closed";
        case error::too_many_permits:
            return "more permits were requested than the object can ever grant";
        case error::timed_out:
            return "the time limit of the operation ran out";
        case error::no_upgrade_lock:
            return "an upgrade was asked for without the upgrade lock";
        }
        return "unknown asio_sync error";
    }
};

} // namespace detail

/// Returns the category of `asio_sync::error` values, named `"asio_sync"`.
///
/// It is a single constant object with a fixed 64-bit identifier, so two copies of the category
/// (from different shared libraries) compare equal.
inline const boost::system::error_category& error_category() noexcept
{
    static constexpr detail::error_category_impl instance;
    return instance;
}

/// Makes an `error_code` from an `asio_sync::error`; found by argument-dependent lookup, which
/// is how `boost::system::error_code ec = asio_sync::error::closed;` works.
///
/// @param e The error value.
/// @returns `{static_cast<int>(e), asio_sync::error_category()}`.
inline boost::system::error_code make_error_code(error e) noexcept
{
    return {static_cast<int>(e), error_category()};
}

} // namespace asio_sync

namespace boost::system {

/// Declares `asio_sync::error` an error-code enumeration, so that its values convert to
/// `boost::system::error_code` and compare with it.
template <>
struct is_error_code_enum<asio_sync::error> : std::true_type
{
};

} // namespace boost::system

#endif // ASIO_SYNC_ERROR_HPP
