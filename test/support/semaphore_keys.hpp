// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_TEST_SUPPORT_SEMAPHORE_KEYS_HPP
#define ASIO_SYNC_TEST_SUPPORT_SEMAPHORE_KEYS_HPP

// What a test reads directly from the keys of a fleet-wide semaphore.

#include "redis_server.hpp"

#include <asio_sync/redis/detail/semaphore_script.hpp>

#include <string>

namespace asio_sync::test {

// The waiters in the queue of the semaphore `name`, as Redis answers it: the count of members scored
// below +inf, which leaves out the placeholder that keeps the queue in existence.
inline std::string queue_length(const redis_server& server, const std::string& name)
{
    const redis::detail::semaphore_script s(name);
    return server.command({"ZCOUNT", s.key(redis::detail::semaphore_key::queue), "-inf", "(+inf"});
}

// The cluster slot of the semaphore `name`.
inline int slot_of_semaphore(const std::string& name)
{
    return redis::detail::semaphore_script(name).slot();
}

} // namespace asio_sync::test

#endif // ASIO_SYNC_TEST_SUPPORT_SEMAPHORE_KEYS_HPP
