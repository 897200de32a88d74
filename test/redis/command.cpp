// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#define BOOST_TEST_MODULE redis_command

// Commands in the wire format, made by hiredis' formatter, and the commands a pipelined link
// refuses.

#include <asio_sync/redis/detail/command.hpp>

#include "support/redis_printing.hpp"

#include <boost/asio/error.hpp>
#include <boost/test/unit_test.hpp>

#include <array>
#include <string>
#include <string_view>
#include <vector>

namespace {

namespace redis = asio_sync::redis;
using redis::detail::formatted_command;

} // namespace

BOOST_AUTO_TEST_SUITE(redis_command)

BOOST_AUTO_TEST_CASE(formats_binary_safe_bulk_strings)
{
    const std::string value("a\0\r\n", 4);
    const formatted_command command = formatted_command::format({"SET", "k", value});
    BOOST_TEST(!command.rejection());
    BOOST_TEST(command.bytes() == std::string("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$4\r\na\0\r\n\r\n", 30));

    const std::vector<std::string> args{"GET", ""};
    BOOST_TEST(formatted_command::format(args).bytes() == "*2\r\n$3\r\nGET\r\n$0\r\n\r\n");
}

BOOST_AUTO_TEST_CASE(refuses_for_the_pipeline_what_breaks_reply_order)
{
    const auto refusal = [](std::vector<std::string> args) {
        return formatted_command::format_for_pipeline(args).rejection();
    };
    BOOST_TEST(refusal({}) == boost::asio::error::invalid_argument);
    for (const char* name :
         {"SUBSCRIBE", "psubscribe", "SSubscribe", "UNSUBSCRIBE", "PUNSUBSCRIBE", "sunsubscribe", "MONITOR"})
        BOOST_TEST(refusal({name, "x"}) == redis::error::unsupported_command, name);
    BOOST_TEST(refusal({"client", "Reply", "OFF"}) == redis::error::unsupported_command);
    BOOST_TEST(!refusal({"CLIENT", "ID"}));
    BOOST_TEST(!refusal({"SUBSCRIBERS"})); // the whole name, not a prefix
    BOOST_TEST(!refusal({"PUBLISH", "c", "m"}));

    const formatted_command refused =
        formatted_command::format_for_pipeline(std::array<std::string_view, 1>{"MONITOR"});
    BOOST_TEST(refused.bytes().empty());
    // Set-up and subscriber commands are formatted without that check.
    BOOST_TEST(formatted_command::format({"SUBSCRIBE", "c"}).bytes() ==
               "*2\r\n$9\r\nSUBSCRIBE\r\n$1\r\nc\r\n");
}

// The values Redis Cluster's specification gives, and its hash tag rules.
BOOST_AUTO_TEST_CASE(computes_the_cluster_slot_of_a_key)
{
    using redis::detail::key_slot;
    BOOST_TEST(key_slot("123456789") == 0x31C3);
    BOOST_TEST(key_slot("foo") == 12182);
    BOOST_TEST(key_slot("{user1000}.following") == key_slot("user1000"));
    BOOST_TEST(key_slot("foo{}{bar}") != key_slot("bar"));
    BOOST_TEST(key_slot("foo{{bar}}zap") == key_slot("{bar"));
    BOOST_TEST(key_slot("foo{bar}{zap}") == key_slot("bar"));
    BOOST_TEST(key_slot("") == 0);
}

// A command goes for the slot of its first key: the first argument, or the one after numkeys for
// the scripting calls; a keyless one for any node; and the engine can send one for a given slot.
BOOST_AUTO_TEST_CASE(sends_a_command_for_the_slot_of_its_first_key)
{
    using redis::detail::key_slot;
    const auto slot = [](std::vector<std::string> args) {
        return formatted_command::format_for_pipeline(args).slot();
    };
    BOOST_TEST(slot({"GET", "foo"}) == key_slot("foo"));
    BOOST_TEST(slot({"fcall", "f", "2", "{a}x", "{a}y", "arg"}) == key_slot("a"));
    BOOST_TEST(slot({"EVALSHA", "sha", "0", "arg"}) == -1);
    BOOST_TEST(slot({"PING"}) == -1);
    BOOST_TEST(slot({"wait", "1", "100"}) == -1);
    BOOST_TEST(slot({"CONFIG", "GET", "maxmemory"}) == -1);
    BOOST_TEST(formatted_command::format_for_pipeline(std::vector<std::string>{"WAIT", "1", "0"}).waits());
    BOOST_TEST(!formatted_command::format_for_pipeline(std::vector<std::string>{"GET", "WAIT"}).waits());
    formatted_command routed = formatted_command::format_for_pipeline(std::vector<std::string>{"PING"});
    routed.route_to(42);
    BOOST_TEST(routed.slot() == 42);
}

BOOST_AUTO_TEST_SUITE_END()
