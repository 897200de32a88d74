// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_TEST_SUPPORT_REDIS_REPLIES_HPP
#define ASIO_SYNC_TEST_SUPPORT_REDIS_REPLIES_HPP

// Replies made by hand, as the reader would make them from the server's bytes, for the tests of
// what consumes them without a server.

#include <asio_sync/redis/reply.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace asio_sync::test {

inline redis::reply text_reply(redis::reply_kind kind, std::string text)
{
    redis::reply r;
    r.kind = kind;
    r.text = std::move(text);
    return r;
}

inline redis::reply integer_reply(std::int64_t value)
{
    redis::reply r;
    r.kind = redis::reply_kind::integer;
    r.integer = value;
    return r;
}

inline redis::reply array_reply(std::vector<redis::reply> elements)
{
    redis::reply r;
    r.kind = redis::reply_kind::array;
    r.elements = std::move(elements);
    return r;
}

} // namespace asio_sync::test

#endif // ASIO_SYNC_TEST_SUPPORT_REDIS_REPLIES_HPP
