// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_DETAIL_GRANT_HPP
#define ASIO_SYNC_DETAIL_GRANT_HPP

#include <boost/system/error_code.hpp>

#include <cstddef>
#include <mutex>
#include <tuple>
#include <type_traits>
#include <utility>

namespace asio_sync::detail {

// A grant says what an acquire hands its handler, given how it ended. The operations hold one by
// value (copied at initiation) and need from it:
//  - `static constexpr bool to_permit`: whether the permits stay in circulation, owned by what the
//    grant makes (a permit object), or leave it until the caller releases them (a plain acquire, a
//    lock guard: see semaphore_core's bound);
//  - `operator()(error_code ec) const`: the handler's arguments as a tuple, error code first, made
//    at the moment the outcome is decided, before the completion is submitted. What it makes may
//    own the permits (a permit object, a lock guard), so that a handler destroyed without running
//    still gives them back. A grant that hands over the waiter's count (a barrier's phase) has
//    `operator()(error_code ec, std::size_t n) const` instead;
//  - `undelivered(std::size_t n) const noexcept`: called when a granted completion of n permits
//    cannot be submitted (its executor or allocator throws). It gives back what nothing else owns,
//    and does nothing for grants whose arguments own the permits: their destructors have already
//    given them back.
// A grant whose arguments need per-waiter data (a remote permit's id and fence) receives it from
// its operation, through acquire_parts::grant(), before the operation completes.
template <class Grant>
auto grant_arguments(const Grant& grant, boost::system::error_code ec, std::size_t n)
{
    if constexpr (std::is_invocable_v<const Grant&, boost::system::error_code, std::size_t>)
        return grant(ec, n);
    else
        return grant(ec);
}

template <class Grant>
using grant_result_t =
    decltype(grant_arguments(std::declval<const Grant&>(), boost::system::error_code(), std::size_t()));

// The grant of a scoped lock: on success the handler receives a `Lock` (std::unique_lock or
// std::shared_lock) that adopts the lock. On error the Lock owns nothing.
template <class Lock>
struct adopt_lock_grant
{
    static constexpr bool to_permit = false;

    typename Lock::mutex_type* mutex;

    std::tuple<boost::system::error_code, Lock> operator()(boost::system::error_code ec) const
    {
        if (ec)
            return {ec, Lock()};
        return {ec, Lock(*mutex, std::adopt_lock)};
    }

    // The Lock of an undelivered completion has unlocked.
    void undelivered(std::size_t) const noexcept {}
};

// The grant of a wait for a signal that a completion does not consume (a manual-reset event, a
// latch, a closed gate): the handler receives only the error code, and an undelivered completion
// has nothing to give back.
struct signal_grant
{
    static constexpr bool to_permit = false;

    std::tuple<boost::system::error_code> operator()(boost::system::error_code ec) const noexcept
    {
        return std::tuple<boost::system::error_code>(ec);
    }

    void undelivered(std::size_t) const noexcept {}
};

// The grant of a barrier arrival: the handler receives the error code and the phase the arrival
// belonged to, which the barrier keeps as the waiter's count. The arrival has counted whether or
// not the completion is delivered: nothing to give back.
struct phase_grant
{
    static constexpr bool to_permit = false;

    std::tuple<boost::system::error_code, std::size_t> operator()(boost::system::error_code ec,
                                                                  std::size_t phase) const noexcept
    {
        return {ec, phase};
    }

    void undelivered(std::size_t) const noexcept {}
};

} // namespace asio_sync::detail

#endif // ASIO_SYNC_DETAIL_GRANT_HPP
