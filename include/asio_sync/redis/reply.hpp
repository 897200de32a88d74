// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_REDIS_REPLY_HPP
#define ASIO_SYNC_REDIS_REPLY_HPP

/// @file
/// A Redis reply as a C++ value: asio_sync::redis::reply and asio_sync::redis::reply_kind.

#include <cstdint>
#include <string>
#include <vector>

namespace asio_sync::redis {

/// The RESP2 types a reply can have.
enum class reply_kind
{
    /// No value: a missing key (`GET`), a null array, or a default-constructed reply.
    nil,
    /// A bulk string; its bytes are in `reply::text`.
    string,
    /// A status reply such as `OK` or `PONG`; its text is in `reply::text`.
    status,
    /// An error reply; the server's message, such as `ERR unknown command`, is in `reply::text`.
    error,
    /// An integer; its value is in `reply::integer`.
    integer,
    /// An array; its elements are in `reply::elements`.
    array,
};

/// A reply from the server, copied out of the parser: it owns all its data.
///
/// Only the members that the kind names hold a value; the others are empty or zero. Arrays nest
/// at most 7 levels deep (a limit of the parser: a deeper reply drops the connection).
struct reply
{
    /// What the reply holds.
    reply_kind kind = reply_kind::nil;
    /// The bytes of a string, status or error reply.
    std::string text;
    /// The value of an integer reply.
    std::int64_t integer = 0;
    /// The elements of an array reply, in order.
    std::vector<reply> elements;
};

} // namespace asio_sync::redis

#endif // ASIO_SYNC_REDIS_REPLY_HPP
