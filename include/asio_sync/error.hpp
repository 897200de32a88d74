#ifndef ASIO_SYNC_ERROR_HPP
#define ASIO_SYNC_ERROR_HPP

/// @file
/// Error codes reported through the completion handlers of asio_sync operations.

#include <boost/system/error_category.hpp>
#include <boost/system/error_code.hpp>

#include <string>
#include <type_traits>

namespace asio_sync {

/// Errors reported by asio_sync operations, in the category `asio_sync::error_category()`.
///
/// Cancellation is not in this list: a cancelled operation reports
/// `boost::asio::error::operation_aborted`, as Asio's own operations do.
enum class error
{
    /// The object was closed: by `close()` while the operation was queued, or before it began.
    closed = 1,

    /// More permits were asked for than the object can ever grant: more than `max_permits`, or
    /// more than a bounded semaphore's capacity, at the call (nothing was queued) or because
    /// `reduce_permits` lowered the capacity while the acquire waited (it holds nothing).
    too_many_permits,

    /// A timed acquire (`async_acquire_for`, `async_acquire_permit_for`) ran out of time before
    /// it was granted. It holds no permits: those it had collected were handed on.
    timed_out,
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
        }
        return "unknown asio_sync error";
    }
};

} // namespace detail

/// The category of `asio_sync::error` values.
inline const boost::system::error_category& error_category() noexcept
{
    static constexpr detail::error_category_impl instance;
    return instance;
}

/// Makes an `error_code` from an `asio_sync::error`; found by argument-dependent lookup.
inline boost::system::error_code make_error_code(error e) noexcept
{
    return {static_cast<int>(e), error_category()};
}

} // namespace asio_sync

namespace boost::system {

template <>
struct is_error_code_enum<asio_sync::error> : std::true_type
{
};

} // namespace boost::system

#endif // ASIO_SYNC_ERROR_HPP
