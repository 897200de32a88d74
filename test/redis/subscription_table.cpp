// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#define BOOST_TEST_MODULE redis_subscription_table

// The subscriber link's subscriptions without a socket: the commands that keep the server in step
// with the subscriptions, confirmations that make channels active, messages to every subscriber of
// a channel, a link lost and set up again, and the answers to health checks.

#include <asio_sync/redis/detail/subscription_table.hpp>

#include "support/redis_replies.hpp"

#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <string>
#include <vector>

BOOST_AUTO_TEST_SUITE(redis_subscription_table)

namespace {

namespace redis = asio_sync::redis;
using asio_sync::test::bytes;
using redis::detail::subscription_table;
using need = subscription_table::need;
using push = subscription_table::push;

constexpr auto text = asio_sync::test::text_reply;

redis::reply pushed(std::string kind, std::string channel, std::string payload)
{
    return asio_sync::test::array_reply({text(redis::reply_kind::string, std::move(kind)),
                                         text(redis::reply_kind::string, std::move(channel)),
                                         text(redis::reply_kind::string, std::move(payload))});
}

struct fixture
{
    // A subscription whose callbacks log "<name> <message>" and "<name> subscribed".
    need add(std::uint64_t id, const std::string& channel, const std::string& name, bool started, bool ready,
             std::string& command)
    {
        return table.add(
            id, channel, [this, name](std::string m) { log.push_back(name + " " + m); },
            [this, name] { log.push_back(name + " subscribed"); }, started, ready, command);
    }

    std::vector<std::string> take_log() { return std::exchange(log, {}); }

    subscription_table table;
    std::vector<std::string> log;
};

} // namespace

BOOST_FIXTURE_TEST_CASE(the_first_subscription_starts_the_link_which_subscribes_every_channel, fixture)
{
    std::string command;
    BOOST_TEST((add(1, "news", "a", false, false, command) == need::link));
    BOOST_TEST((add(2, "sports", "b", true, false, command) == need::nothing)); // subscribed once up
    BOOST_TEST(command.empty());
    BOOST_TEST(table.on_link_up() == bytes({"SUBSCRIBE", "news", "sports"}));
    BOOST_TEST((table.on_push(pushed("subscribe", "news", "1")) == push::handled));
    BOOST_TEST((table.on_push(pushed("subscribe", "sports", "2")) == push::handled));
    BOOST_TEST(take_log() == (std::vector<std::string>{"a subscribed", "b subscribed"}));
    BOOST_TEST(table.active("news"));
}

BOOST_FIXTURE_TEST_CASE(a_channel_is_subscribed_once_and_messages_reach_each_subscriber, fixture)
{
    std::string command;
    table.on_link_up();
    BOOST_TEST((add(1, "news", "a", true, true, command) == need::write));
    BOOST_TEST(command == bytes({"SUBSCRIBE", "news"}));
    command.clear();
    BOOST_TEST((add(2, "news", "b", true, true, command) == need::nothing)); // awaits the same confirmation
    table.on_push(pushed("subscribe", "news", "1"));
    BOOST_TEST(take_log() == (std::vector<std::string>{"a subscribed", "b subscribed"}));
    BOOST_TEST((add(3, "news", "c", true, true, command) == need::nothing)); // active: told at once
    BOOST_TEST(take_log() == (std::vector<std::string>{"c subscribed"}));

    table.on_push(pushed("message", "news", "hello"));
    table.on_push(pushed("message", "elsewhere", "ignored"));
    BOOST_TEST(take_log() == (std::vector<std::string>{"a hello", "b hello", "c hello"}));
}

BOOST_FIXTURE_TEST_CASE(the_last_subscription_of_a_channel_unsubscribes_it, fixture)
{
    std::string command;
    table.on_link_up();
    add(1, "news", "a", true, true, command);
    add(2, "news", "b", true, true, command);
    table.on_push(pushed("subscribe", "news", "1"));
    BOOST_TEST(table.remove(1, true).empty());
    BOOST_TEST(table.remove(2, true) == bytes({"UNSUBSCRIBE", "news"}));
    BOOST_TEST(!table.active("news"));
    BOOST_TEST(table.remove(2, true).empty()); // ended already
    take_log();
    table.on_push(pushed("message", "news", "late"));
    BOOST_TEST(take_log().empty());
}

BOOST_FIXTURE_TEST_CASE(a_subscription_ended_before_its_confirmation_leaves_nothing_behind, fixture)
{
    std::string command;
    table.on_link_up();
    add(1, "news", "a", true, true, command);
    BOOST_TEST(table.remove(1, true) == bytes({"UNSUBSCRIBE", "news"}));
    table.on_push(pushed("subscribe", "news", "1")); // the confirmation of the SUBSCRIBE still comes
    BOOST_TEST(take_log().empty());
    // Subscribed again: a new SUBSCRIBE, as the UNSUBSCRIBE in flight would undo the old one.
    BOOST_TEST((add(2, "news", "b", true, true, command) == need::write));
}

BOOST_FIXTURE_TEST_CASE(a_lost_link_deactivates_every_channel_until_it_is_set_up_again, fixture)
{
    std::string command;
    table.on_link_up();
    add(1, "news", "a", true, true, command);
    table.on_push(pushed("subscribe", "news", "1"));
    take_log();
    table.on_link_down();
    BOOST_TEST(!table.active("news"));
    BOOST_TEST((add(2, "news", "b", true, false, command) == need::nothing));
    BOOST_TEST(table.on_link_up() == bytes({"SUBSCRIBE", "news"}));
    table.on_push(pushed("subscribe", "news", "1"));
    BOOST_TEST(take_log() == (std::vector<std::string>{"a subscribed", "b subscribed"}));
    table.clear();
    BOOST_TEST(table.on_link_up().empty());
}

BOOST_FIXTURE_TEST_CASE(the_answer_to_a_ping_is_a_health_check_answered, fixture)
{
    const redis::reply pong = asio_sync::test::array_reply(
        {text(redis::reply_kind::string, "pong"), text(redis::reply_kind::string, "")});
    BOOST_TEST((table.on_push(pong) == push::health));
    BOOST_TEST((table.on_push(text(redis::reply_kind::status, "PONG")) == push::health)); // no channel
    BOOST_TEST((table.on_push(text(redis::reply_kind::status, "OK")) == push::handled));
    BOOST_TEST((table.on_push(redis::reply()) == push::handled));
}

BOOST_AUTO_TEST_SUITE_END()
