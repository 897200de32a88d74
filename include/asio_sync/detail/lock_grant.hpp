// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_DETAIL_LOCK_GRANT_HPP
#define ASIO_SYNC_DETAIL_LOCK_GRANT_HPP

#include <boost/system/error_code.hpp>

#include <cstddef>
#include <mutex>
#include <tuple>

namespace asio_sync::detail {

// The grant of a scoped lock: on success the handler receives a `Lock` (std::unique_lock or
// std::shared_lock) that adopts the lock, made as soon as the lock is granted, so that a handler
// destroyed without running still unlocks. On error the Lock owns nothing.
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

} // namespace asio_sync::detail

#endif // ASIO_SYNC_DETAIL_LOCK_GRANT_HPP
