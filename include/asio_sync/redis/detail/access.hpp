// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_REDIS_DETAIL_ACCESS_HPP
#define ASIO_SYNC_REDIS_DETAIL_ACCESS_HPP

#include <utility>

namespace asio_sync::redis::detail {

// The one door to the internals of the Redis classes, for the classes built on them and for the
// tests: a class with members to share befriends `access` and no one else, and each function here
// says what it reaches and for whom (as Boost.MySQL's detail::access does).
struct access
{
    // The engine behind a connection: its set-up commands and connect listeners, for the
    // semaphore's link to its connection (semaphore_link.hpp) and the tests.
    template <class Connection>
    static auto& impl(Connection& connection) noexcept
    {
        return *connection.impl_;
    }

    // The same, shared: what the semaphore's link keeps (weakly) to send its commands.
    template <class Connection>
    static const auto& shared_impl(Connection& connection) noexcept
    {
        return connection.impl_;
    }

    // A permit made by the engine that granted it, with the constructor only it may call.
    template <class T, class... Args>
    static T construct(Args&&... args)
    {
        return T(std::forward<Args>(args)...);
    }
};

} // namespace asio_sync::redis::detail

#endif // ASIO_SYNC_REDIS_DETAIL_ACCESS_HPP
