// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_REDIS_DETAIL_ACCESS_HPP
#define ASIO_SYNC_REDIS_DETAIL_ACCESS_HPP

namespace asio_sync::redis::detail {

// The one door to the internals of the Redis classes, for the classes built on them (the
// semaphore engine) and for the tests.
struct access
{
    // The engine behind a connection: its set-up commands and connect listeners.
    template <class Connection>
    static auto& impl(Connection& connection) noexcept
    {
        return *connection.impl_;
    }
};

} // namespace asio_sync::redis::detail

#endif // ASIO_SYNC_REDIS_DETAIL_ACCESS_HPP
