// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_REDIS_DETAIL_SEMAPHORE_REPLY_HPP
#define ASIO_SYNC_REDIS_DETAIL_SEMAPHORE_REPLY_HPP

// The answer to a call of the semaphore's function library (or to the commands the client sends
// around it), decoded once, in one place, into a typed value: the client compares enums, never
// words.

#include <asio_sync/error.hpp>
#include <asio_sync/redis/detail/semaphore_library.hpp>
#include <asio_sync/redis/error.hpp>
#include <asio_sync/redis/reply.hpp>

#include <boost/system/error_code.hpp>

#include <charconv>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <system_error>

namespace asio_sync::redis::detail {

struct semaphore_reply
{
    enum class outcome
    {
        // the library's answers (see semaphore_library.lua)
        granted,         // fence, n, left
        queued,          // position, left
        busy,            // a try that found no room
        released,        // n
        cancelled,       // a waiter removed
        lost,            // the id is unknown: its lease lapsed
        state_lost,      // the id is unknown: its state was lost
        resized,         // capacity, stamp, calm: a resize stored (or replayed)
        conflict,        // capacity, stamp: a resize from another stamp, not stored
        usage,           // capacity, held, queued, stamp, calm, clock
        wake,            // left: the time until a writing call may serve the queue
        idle,            // nothing to wait for
        loaded,          // FUNCTION LOAD succeeded
                         // failures
        connection_lost, // sent, and the link dropped before the reply: it may have run
        retry,           // LOADING or BUSY: the same call later will get through
        no_replicas,     // NOREPLICAS: the primary refused a write, too few replicas acknowledge it
        library_missing, // the library is not loaded (a FUNCTION FLUSH, a restart without it)
        failed,          // error; capacity_mismatch carries the capacity and stamp in force
    };

    outcome what = outcome::failed;
    std::uint64_t fence = 0;
    std::size_t n = 0;
    std::size_t position = 0;
    std::chrono::milliseconds left{0};
    std::size_t capacity = 0;
    std::size_t held = 0;
    std::size_t queued = 0;
    std::uint64_t stamp = 0;         // of the resize in force (0: declared, never resized)
    std::uint64_t calm = 0;          // of the latest resize whose capacity the permits held came down to
    std::uint64_t clock = 0;         // below every stamp a later resize takes
    boost::system::error_code error; // for failed
    bool stored = false;             // failed: the call stored its state all the same (durable grants,
                                     // WAIT refused), which must be given back
};

namespace reply_decoding {

inline bool starts_with(std::string_view text, std::string_view prefix) noexcept
{
    return text.substr(0, prefix.size()) == prefix;
}

inline std::string_view prefix_of(semaphore_library::error_prefix p) noexcept
{
    return semaphore_library::error_prefixes[static_cast<std::size_t>(p)];
}

// The capacity and stamp in force that "ASIO_SYNC_CAPACITY <capacity> <stamp>" tells; left 0 when
// the text does not have that form.
inline void capacity_in_force(std::string_view text, semaphore_reply& decoded) noexcept
{
    const char* const end = text.data() + text.size();
    const std::size_t space = text.find(' ');
    std::uint64_t capacity = 0;
    std::uint64_t stamp = 0;
    if (space == std::string_view::npos)
        return;
    const auto [next, error] = std::from_chars(text.data() + space + 1, end, capacity);
    if (error != std::errc() || next == end || *next != ' ' ||
        std::from_chars(next + 1, end, stamp).ec != std::errc())
        return;
    decoded.capacity = static_cast<std::size_t>(capacity);
    decoded.stamp = stamp;
}

// The error code of an error reply.
inline semaphore_reply from_error(const reply& r)
{
    using semaphore_library::error_prefix;
    const std::string_view text = r.text;
    semaphore_reply decoded;
    if (starts_with(text, "LOADING") || starts_with(text, "BUSY"))
        decoded.what = semaphore_reply::outcome::retry;
    else if (starts_with(text, "NOREPLICAS"))
    {
        decoded.what = semaphore_reply::outcome::no_replicas;
        decoded.error = redis::error::no_replicas;
    }
    else if (starts_with(text, "ERR Function not found"))
        decoded.what = semaphore_reply::outcome::library_missing;
    else if (starts_with(text, prefix_of(error_prefix::capacity)))
    {
        decoded.error = redis::error::capacity_mismatch;
        capacity_in_force(text, decoded);
    }
    else if (starts_with(text, prefix_of(error_prefix::too_many)))
        decoded.error = asio_sync::error::too_many_permits;
    else if (starts_with(text, prefix_of(error_prefix::argument)))
        decoded.error = redis::error::invalid_argument;
    else if (starts_with(text, "WRONGTYPE"))
        decoded.error = redis::error::wrong_type;
    else if (starts_with(text, "NOPERM"))
        decoded.error = redis::error::no_permission;
    else if (starts_with(text, "READONLY"))
        decoded.error = redis::error::read_only;
    else if (starts_with(text, "OOM"))
        decoded.error = redis::error::out_of_memory;
    else if (starts_with(text, "MOVED ") || starts_with(text, "ASK "))
        decoded.error = redis::error::cluster_redirect;
    else if (starts_with(text, "NOAUTH ") || starts_with(text, "WRONGPASS "))
        decoded.error = redis::error::auth_failed;
    else
        decoded.error = redis::error::server_error;
    return decoded;
}

// A non-negative integer element, or false.
inline bool number(const reply& r, std::uint64_t& value) noexcept
{
    if (r.kind != reply_kind::integer || r.integer < 0)
        return false;
    value = static_cast<std::uint64_t>(r.integer);
    return true;
}

inline semaphore_reply malformed()
{
    semaphore_reply decoded;
    decoded.error = redis::error::server_error;
    return decoded;
}

} // namespace reply_decoding

// Decodes the completion of a call of the library: `ec` and `r` as the connection reports them.
inline semaphore_reply decode_semaphore_reply(boost::system::error_code ec, const reply& r)
{
    using outcome = semaphore_reply::outcome;
    using semaphore_library::reply_word;
    semaphore_reply decoded;
    if (ec == redis::error::connection_lost)
    {
        decoded.what = outcome::connection_lost;
        return decoded;
    }
    if (r.kind == reply_kind::error)
        return reply_decoding::from_error(r);
    if (ec)
    {
        decoded.error = ec;
        return decoded;
    }
    if (r.kind == reply_kind::string && r.text == semaphore_library::name)
    {
        decoded.what = outcome::loaded;
        return decoded;
    }
    if (r.kind != reply_kind::array || r.elements.empty())
        return reply_decoding::malformed();
    const std::string_view word = r.elements[0].text;
    std::uint64_t values[6] = {};
    const std::size_t count = r.elements.size() - 1;
    if (count > 6)
        return reply_decoding::malformed();
    for (std::size_t i = 0; i < count; ++i)
        if (!reply_decoding::number(r.elements[i + 1], values[i]))
            return reply_decoding::malformed();
    const auto is = [&](reply_word w, std::size_t arguments) {
        return word == semaphore_library::reply_words[static_cast<std::size_t>(w)] && count == arguments;
    };
    if (is(reply_word::granted, 3))
    {
        decoded.what = outcome::granted;
        decoded.fence = values[0];
        decoded.n = static_cast<std::size_t>(values[1]);
        decoded.left = std::chrono::milliseconds(values[2]);
    }
    else if (is(reply_word::queued, 2))
    {
        decoded.what = outcome::queued;
        decoded.position = static_cast<std::size_t>(values[0]);
        decoded.left = std::chrono::milliseconds(values[1]);
    }
    else if (is(reply_word::busy, 0))
        decoded.what = outcome::busy;
    else if (is(reply_word::released, 1))
    {
        decoded.what = outcome::released;
        decoded.n = static_cast<std::size_t>(values[0]);
    }
    else if (is(reply_word::cancelled, 0))
        decoded.what = outcome::cancelled;
    else if (is(reply_word::lost, 0))
        decoded.what = outcome::lost;
    else if (is(reply_word::state_lost, 0))
        decoded.what = outcome::state_lost;
    else if (is(reply_word::resized, 3))
    {
        decoded.what = outcome::resized;
        decoded.capacity = static_cast<std::size_t>(values[0]);
        decoded.stamp = values[1];
        decoded.calm = values[2];
    }
    else if (is(reply_word::conflict, 2))
    {
        decoded.what = outcome::conflict;
        decoded.capacity = static_cast<std::size_t>(values[0]);
        decoded.stamp = values[1];
    }
    else if (is(reply_word::usage, 6))
    {
        decoded.what = outcome::usage;
        decoded.capacity = static_cast<std::size_t>(values[0]);
        decoded.held = static_cast<std::size_t>(values[1]);
        decoded.queued = static_cast<std::size_t>(values[2]);
        decoded.stamp = values[3];
        decoded.calm = values[4];
        decoded.clock = values[5];
    }
    else if (is(reply_word::wake, 1))
    {
        decoded.what = outcome::wake;
        decoded.left = std::chrono::milliseconds(values[0]);
    }
    else if (is(reply_word::idle, 0))
        decoded.what = outcome::idle;
    else
        return reply_decoding::malformed();
    return decoded;
}

// The answer to the check of the server's configuration.
enum class server_check
{
    passed,     // nothing to object to, or the server does not let the client read its configuration
    evicts,     // a maxmemory and a policy other than noeviction
    unguarded,  // required to refuse writes without its replicas, and min-replicas-* lets it write
    unanswered, // the link dropped before the reply
};

// The verdict on the reply to CONFIG GET maxmemory* min-replicas-*, `ec` and `r` as the connection
// reports them. The server evicts keys with expiries unless maxmemory is 0 or maxmemory-policy is
// noeviction. With `replicas_required` (Sentinel without durable grants), it must refuse writes
// when it hears from no replica: min-replicas-to-write and min-replicas-max-lag both above 0. A
// server that does not let the client read its configuration (an error reply, such as NOPERM or
// a renamed CONFIG), or does not tell a value, cannot be checked: that passes.
inline server_check judge_server(boost::system::error_code ec, const reply& r, bool replicas_required)
{
    if (ec == redis::error::connection_lost)
        return server_check::unanswered;
    if (r.kind != reply_kind::array)
        return server_check::passed;
    bool limited = false;
    bool evicting = false;
    bool unguarded = false;
    for (std::size_t i = 0; i + 1 < r.elements.size(); i += 2)
    {
        const std::string_view name = r.elements[i].text;
        const std::string_view value = r.elements[i + 1].text;
        if (name == "maxmemory")
            limited = value != "0";
        else if (name == "maxmemory-policy")
            evicting = value != "noeviction";
        else if (name == "min-replicas-to-write" || name == "min-replicas-max-lag")
            unguarded = unguarded || value == "0";
    }
    if (limited && evicting)
        return server_check::evicts;
    return replicas_required && unguarded ? server_check::unguarded : server_check::passed;
}

} // namespace asio_sync::redis::detail

#endif // ASIO_SYNC_REDIS_DETAIL_SEMAPHORE_REPLY_HPP
