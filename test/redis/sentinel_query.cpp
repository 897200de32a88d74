// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#define BOOST_TEST_MODULE redis_sentinel_query

// The question to one sentinel without a socket: the bytes (with and without AUTH), an address
// found, a primary the sentinel does not know, a refused AUTH, and replies that are not addresses.

#include <asio_sync/redis/detail/sentinel_query.hpp>

#include "support/redis_replies.hpp"

#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

BOOST_AUTO_TEST_SUITE(redis_sentinel_query)

namespace {

namespace redis = asio_sync::redis;
using asio_sync::test::array_reply;
using asio_sync::test::bytes;
using asio_sync::test::integer_reply;
using asio_sync::test::text_reply;
using redis::detail::sentinel_query;
using result = sentinel_query::result;

redis::connection_options options(std::string user = {}, std::string password = {})
{
    redis::connection_options o;
    o.sentinels = {{"127.0.0.1", 26379}};
    o.master_name = "main";
    o.sentinel_user = std::move(user);
    o.sentinel_password = std::move(password);
    return o;
}

redis::reply string(std::string text)
{
    return text_reply(redis::reply_kind::string, std::move(text));
}

redis::reply address(std::string host, std::string port)
{
    return array_reply({string(host), string(port)});
}

} // namespace

BOOST_AUTO_TEST_CASE(asks_for_the_primary_by_name_and_reads_its_address)
{
    sentinel_query q(options());
    BOOST_TEST(q.request() == bytes({"SENTINEL", "GET-MASTER-ADDR-BY-NAME", "main"}));
    BOOST_TEST((q.on_reply(address("10.0.0.7", "6380")) == result::found));
    BOOST_TEST(q.host() == "10.0.0.7");
    BOOST_TEST(q.port() == 6380);
    BOOST_TEST((q.on_reply(address("10.0.0.8", "6380")) == result::failed)); // nothing more was asked
}

BOOST_AUTO_TEST_CASE(authenticates_first_when_given_credentials)
{
    sentinel_query with_user(options("ops", "secret"));
    BOOST_TEST(with_user.request() ==
               bytes({"AUTH", "ops", "secret"}) + bytes({"SENTINEL", "GET-MASTER-ADDR-BY-NAME", "main"}));
    BOOST_TEST((with_user.on_reply(text_reply(redis::reply_kind::status, "OK")) == result::pending));
    BOOST_TEST((with_user.on_reply(address("::1", "7000")) == result::found));
    BOOST_TEST(with_user.host() == "::1");

    sentinel_query password_only(options({}, "secret"));
    BOOST_TEST(password_only.request() ==
               bytes({"AUTH", "secret"}) + bytes({"SENTINEL", "GET-MASTER-ADDR-BY-NAME", "main"}));
    BOOST_TEST((password_only.on_reply(text_reply(redis::reply_kind::error, "WRONGPASS invalid")) ==
                result::refused));
    BOOST_TEST(password_only.refusal().text == "WRONGPASS invalid");

    sentinel_query none(options());
    BOOST_TEST((none.on_reply(text_reply(redis::reply_kind::error, "NOAUTH Authentication required.")) ==
                result::refused));
    BOOST_TEST((password_only.on_reply(address("::1", "7000")) == result::failed));
}

BOOST_AUTO_TEST_CASE(a_primary_the_sentinel_does_not_know_and_bad_replies)
{
    BOOST_TEST((sentinel_query(options()).on_reply(redis::reply()) == result::unknown));
    const std::vector<redis::reply> bad{
        text_reply(redis::reply_kind::error, "ERR unknown command"),
        integer_reply(6379),
        array_reply({string("10.0.0.7")}),
        address("", "6379"),
        address("10.0.0.7", "0"),
        address("10.0.0.7", "65536"),
        address("10.0.0.7", "63x"),
        array_reply({string("10.0.0.7"), integer_reply(6379)}),
    };
    for (const redis::reply& r : bad)
        BOOST_TEST((sentinel_query(options()).on_reply(r) == result::failed));
}

// The end of a failover, as a sentinel publishes it on +switch-master.
BOOST_AUTO_TEST_CASE(a_switch_of_the_primary_is_read_from_its_announcement)
{
    using redis::detail::switched_primary;
    const auto message = [](std::string channel, std::string text) {
        return array_reply({string("message"), string(std::move(channel)), string(std::move(text))});
    };
    const auto to = switched_primary(message("+switch-master", "main 10.0.0.7 6379 10.0.0.8 6380"), "main");
    BOOST_TEST_REQUIRE(to.has_value());
    BOOST_TEST(to->host == "10.0.0.8");
    BOOST_TEST(to->port == 6380);
    // Anything else is not a switch of this primary.
    BOOST_TEST(!switched_primary(message("+switch-master", "other 10.0.0.7 6379 10.0.0.8 6380"), "main"));
    BOOST_TEST(!switched_primary(message("+switch-master", "mai 10.0.0.7 6379 10.0.0.8 6380"), "main"));
    // A name that starts with ours is another primary's: read as a prefix, it moved the connection.
    BOOST_TEST(!switched_primary(message("+switch-master", "main2 10.0.0.7 6379 10.0.0.8 6380"), "main"));
    BOOST_TEST(!switched_primary(message("+sdown", "main 10.0.0.7 6379 10.0.0.8 6380"), "main"));
    BOOST_TEST(!switched_primary(
        array_reply({string("subscribe"), string("+switch-master"), integer_reply(1)}), "main"));
    BOOST_TEST(!switched_primary(message("+switch-master", "main 10.0.0.7 6379 10.0.0.8"), "main"));
    BOOST_TEST(!switched_primary(message("+switch-master", "main 10.0.0.7 6379 10.0.0.8 0"), "main"));
    BOOST_TEST(!switched_primary(message("+switch-master", "main 10.0.0.7 6379 10.0.0.8 70000"), "main"));
    BOOST_TEST(!switched_primary(message("+switch-master", "main 10.0.0.7 6379 10.0.0.8 6380 x"), "main"));
    BOOST_TEST(!switched_primary(message("+switch-master", "main  10.0.0.7 6379 10.0.0.8 6380"), "main"));
    BOOST_TEST(!switched_primary(message("+switch-master", ""), "main"));
    BOOST_TEST(!switched_primary(string("main 10.0.0.7 6379 10.0.0.8 6380"), "main"));
}

BOOST_AUTO_TEST_SUITE_END()
