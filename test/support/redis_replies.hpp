// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_TEST_SUPPORT_REDIS_REPLIES_HPP
#define ASIO_SYNC_TEST_SUPPORT_REDIS_REPLIES_HPP

// Replies made by hand, as the reader would make them from the server's bytes, for the tests of
// what consumes them without a server; and the bytes of a command, for the tests of what writes
// them.

#include <asio_sync/redis/detail/command.hpp>
#include <asio_sync/redis/reply.hpp>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
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

// The command `args` as the connection writes it to the server.
inline std::string bytes(std::initializer_list<std::string_view> args)
{
    return std::string(redis::detail::formatted_command::format(args).bytes());
}

} // namespace asio_sync::test

#endif // ASIO_SYNC_TEST_SUPPORT_REDIS_REPLIES_HPP
