// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#define BOOST_TEST_MODULE redis_semaphore_reply

// The decoding of the semaphore library's replies into typed values, without a server: every
// reply word with its numbers, every error the client tells apart, malformed replies, and the
// check of the eviction policy from CONFIG GET.

#include <asio_sync/redis/detail/semaphore_reply.hpp>

#include "support/redis_replies.hpp"

#include <boost/asio/error.hpp>
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

BOOST_AUTO_TEST_SUITE(redis_semaphore_reply)

namespace {

namespace redis = asio_sync::redis;
using redis::reply;
using redis::reply_kind;
using redis::detail::decode_semaphore_reply;
using redis::detail::judge_server;
using redis::detail::server_check;

using outcome = redis::detail::semaphore_reply::outcome;
constexpr auto text = asio_sync::test::text_reply;
constexpr auto integer = asio_sync::test::integer_reply;
using boost::system::error_code;

// An array: a word, then integers.
reply words(std::string word, std::vector<std::int64_t> numbers = {})
{
    std::vector<reply> elements{text(reply_kind::string, std::move(word))};
    for (const std::int64_t n : numbers)
        elements.push_back(integer(n));
    return asio_sync::test::array_reply(std::move(elements));
}

reply error_reply(std::string message)
{
    return text(reply_kind::error, std::move(message));
}

} // namespace

BOOST_AUTO_TEST_CASE(decodes_every_reply_word_with_its_numbers)
{
    auto r = decode_semaphore_reply({}, words("granted", {1795653439204772, 2, 2999}));
    BOOST_TEST((r.what == outcome::granted));
    BOOST_TEST(r.fence == 1795653439204772u);
    BOOST_TEST(r.n == 2u);
    BOOST_TEST(r.left.count() == 2999);

    r = decode_semaphore_reply({}, words("queued", {3, 1500}));
    BOOST_TEST((r.what == outcome::queued));
    BOOST_TEST(r.position == 3u);
    BOOST_TEST(r.left.count() == 1500);

    r = decode_semaphore_reply({}, words("released", {4}));
    BOOST_TEST((r.what == outcome::released));
    BOOST_TEST(r.n == 4u);

    r = decode_semaphore_reply(
        {}, words("usage", {5, 3, 7, 1795653439204772, 1795653439204000, 1795653439205000}));
    BOOST_TEST((r.what == outcome::usage));
    BOOST_TEST(r.capacity == 5u);
    BOOST_TEST(r.held == 3u);
    BOOST_TEST(r.queued == 7u);
    BOOST_TEST(r.stamp == 1795653439204772u);
    BOOST_TEST(r.calm == 1795653439204000u);
    BOOST_TEST(r.clock == 1795653439205000u);

    r = decode_semaphore_reply({}, words("resized", {4, 1795653439204772, 1795653439204000}));
    BOOST_TEST((r.what == outcome::resized));
    BOOST_TEST(r.capacity == 4u);
    BOOST_TEST(r.stamp == 1795653439204772u);
    BOOST_TEST(r.calm == 1795653439204000u);

    r = decode_semaphore_reply({}, words("conflict", {6, 1795653439204772}));
    BOOST_TEST((r.what == outcome::conflict));
    BOOST_TEST(r.capacity == 6u);
    BOOST_TEST(r.stamp == 1795653439204772u);

    r = decode_semaphore_reply({}, words("wake", {250}));
    BOOST_TEST((r.what == outcome::wake));
    BOOST_TEST(r.left.count() == 250);

    const std::pair<const char*, outcome> bare[] = {{"busy", outcome::busy},
                                                    {"cancelled", outcome::cancelled},
                                                    {"lost", outcome::lost},
                                                    {"state_lost", outcome::state_lost},
                                                    {"idle", outcome::idle}};
    for (const auto& [word, expected] : bare)
        BOOST_TEST((decode_semaphore_reply({}, words(word)).what == expected), word);

    BOOST_TEST(
        (decode_semaphore_reply({}, text(reply_kind::string, "asio_sync_v4")).what == outcome::loaded));
}

BOOST_AUTO_TEST_CASE(tells_apart_the_errors_the_client_acts_on)
{
    BOOST_TEST((decode_semaphore_reply(redis::error::connection_lost, {}).what == outcome::connection_lost));
    const std::pair<const char*, outcome> special[] = {
        {"LOADING Redis is loading the dataset in memory", outcome::retry},
        {"BUSY Redis is busy running a script", outcome::retry},
        {"ERR Function not found", outcome::library_missing},
        {"NOREPLICAS Not enough good replicas to write.", outcome::no_replicas}};
    for (const auto& [message, expected] : special)
        BOOST_TEST(
            (decode_semaphore_reply(redis::error::server_error, error_reply(message)).what == expected),
            message);

    const std::pair<const char*, error_code> errors[] = {
        {"ASIO_SYNC_CAPACITY 3 1795653439204772", redis::error::capacity_mismatch},
        {"ASIO_SYNC_TOO_MANY 4 > 3", asio_sync::error::too_many_permits},
        {"ASIO_SYNC_ARGUMENT n must be positive", redis::error::invalid_argument},
        {"WRONGTYPE Operation against a key holding the wrong kind of value", redis::error::wrong_type},
        {"NOPERM this user has no permissions", redis::error::no_permission},
        {"READONLY You can't write against a read only replica.", redis::error::read_only},
        {"OOM command not allowed when used memory > 'maxmemory'.", redis::error::out_of_memory},
        {"MOVED 3999 127.0.0.1:6381", redis::error::cluster_redirect},
        {"ASK 3999 127.0.0.1:6381", redis::error::cluster_redirect},
        {"NOAUTH Authentication required.", redis::error::auth_failed},
        {"ERR something else", redis::error::server_error}};
    for (const auto& [message, expected] : errors)
    {
        const auto r = decode_semaphore_reply(redis::error::server_error, error_reply(message));
        BOOST_TEST((r.what == outcome::failed), message);
        BOOST_TEST(r.error == expected, message);
    }

    BOOST_TEST(
        decode_semaphore_reply(redis::error::server_error, error_reply("NOREPLICAS Not enough")).error ==
        error_code(redis::error::no_replicas));

    // A refused capacity tells the one in force and its stamp; a text without them, zeros.
    const std::pair<const char*, std::pair<std::size_t, std::uint64_t>> in_force[] = {
        {"ASIO_SYNC_CAPACITY 3 1795653439204772", {3, 1795653439204772}},
        {"ASIO_SYNC_CAPACITY 3 0", {3, 0}},
        {"ASIO_SYNC_CAPACITY 3", {0, 0}},
        {"ASIO_SYNC_CAPACITY x 5", {0, 0}},
        {"ASIO_SYNC_CAPACITY 3 y", {0, 0}}};
    for (const auto& [message, expected] : in_force)
    {
        const auto r = decode_semaphore_reply(redis::error::server_error, error_reply(message));
        BOOST_TEST(r.error == error_code(redis::error::capacity_mismatch), message);
        BOOST_TEST(r.capacity == expected.first, message);
        BOOST_TEST(r.stamp == expected.second, message);
    }

    const auto closed = decode_semaphore_reply(asio_sync::error::closed, {});
    BOOST_TEST((closed.what == outcome::failed));
    BOOST_TEST(closed.error == error_code(asio_sync::error::closed));
}

BOOST_AUTO_TEST_CASE(a_malformed_reply_is_a_server_error)
{
    const reply malformed[] = {
        reply(),                             // nil
        integer(1),                          // not an array
        text(reply_kind::string, "granted"), // not an array
        words("granted", {1, 2}),            // a number short
        words("granted", {1, 2, 3, 4}),      // a number too many
        words("queued", {-1, 2}),            // negative
        words("busy", {1}),                  // a number too many
        words("usage", {1, 2, 3}),           // the form of the library's previous version
        words("resized", {1, 2}),            // a number short
        words("conflict", {1, 2, 3}),        // a number too many
        words("bogus"),                      // an unknown word
        [] {
            reply r = words("granted", {1, 2});
            r.elements.push_back(text(reply_kind::string, "3")); // a number as text
            return r;
        }(),
    };
    for (const reply& r : malformed)
    {
        const auto decoded = decode_semaphore_reply({}, r);
        BOOST_TEST((decoded.what == outcome::failed));
        BOOST_TEST(decoded.error == error_code(redis::error::server_error));
    }
}

// The verdict on CONFIG GET maxmemory* min-replicas-*: the values a server tells, and whether it
// must refuse writes without its replicas (Sentinel without durable grants).
BOOST_AUTO_TEST_CASE(the_check_of_the_servers_configuration)
{
    const auto config = [](std::string maxmemory, std::string policy, std::string to_write, std::string lag) {
        reply r;
        r.kind = reply_kind::array;
        for (std::string s : {std::string("maxmemory"), std::move(maxmemory), std::string("maxmemory-policy"),
                              std::move(policy), std::string("maxmemory-samples"), std::string("5"),
                              std::string("min-replicas-to-write"), std::move(to_write),
                              std::string("min-replicas-max-lag"), std::move(lag)})
            r.elements.push_back(text(reply_kind::string, std::move(s)));
        return r;
    };
    const reply refused = error_reply("NOPERM this user has no permissions to run the 'config|get' command");
    struct row
    {
        const char* name;
        error_code ec;
        reply r;
        bool replicas_required;
        server_check expected;
    };
    const row rows[] = {
        {"evicts (lru)", {}, config("1000000", "allkeys-lru", "1", "1"), false, server_check::evicts},
        {"evicts (ttl)", {}, config("1000000", "volatile-ttl", "1", "1"), true, server_check::evicts},
        {"noeviction", {}, config("1000000", "noeviction", "0", "10"), false, server_check::passed},
        {"no maxmemory", {}, config("0", "allkeys-lru", "0", "10"), false, server_check::passed},
        {"guarded", {}, config("0", "noeviction", "1", "1"), true, server_check::passed},
        {"guarded, two replicas", {}, config("0", "noeviction", "2", "3"), true, server_check::passed},
        {"the default: writes alone",
         {},
         config("0", "noeviction", "0", "10"),
         true,
         server_check::unguarded},
        {"no lag allowed is no guard",
         {},
         config("0", "noeviction", "1", "0"),
         true,
         server_check::unguarded},
        {"evicting and unguarded", {}, config("1", "allkeys-lru", "0", "10"), true, server_check::evicts},
        {"not told", {}, refused, true, server_check::passed},
        {"no reply", {}, reply(), true, server_check::passed},
        {"the link dropped", redis::error::connection_lost, reply(), true, server_check::unanswered},
    };
    for (const row& r : rows)
        BOOST_TEST_CONTEXT(r.name)
        {
            BOOST_TEST((judge_server(r.ec, r.r, r.replicas_required) == r.expected));
        }
}

BOOST_AUTO_TEST_SUITE_END()
