// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#define BOOST_TEST_MODULE redis_sentinel_resolver

// Finding the primary through three sentinels, without a server: the order in which an attempt
// asks them, what each answer or failure leads to, the error an attempt gives up with, which
// sentinel the next attempt starts from (the one that answered, the one after a sentinel whose
// primary was not one, the one that announced a switch), the watch link's rotation and each
// sentinel's share of the attempt's time.

#include <asio_sync/redis/detail/sentinel_resolver.hpp>

#include "support/redis_replies.hpp"

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

BOOST_AUTO_TEST_SUITE(redis_sentinel_resolver)

namespace {

namespace redis = asio_sync::redis;
using asio_sync::test::array_reply;
using asio_sync::test::text_reply;
using redis::detail::sentinel_resolver;
using kind = sentinel_resolver::step::kind;

redis::connection_options options(std::string password = {})
{
    redis::connection_options o;
    o.sentinels = {{"10.0.0.1", 26379}, {"10.0.0.2", 26379}, {"10.0.0.3", 26379}};
    o.master_name = "main";
    o.sentinel_password = std::move(password);
    return o;
}

enum class answer
{
    address,     // 10.0.0.9 6379
    unknown,     // nil: it does not know the primary
    refused,     // NOAUTH
    garbage,     // not an address
    unreachable, // no connection, no reply in time, or a hang-up
};

redis::reply reply_of(answer a)
{
    switch (a)
    {
    case answer::address:
        return array_reply({text_reply(redis::reply_kind::string, "10.0.0.9"),
                            text_reply(redis::reply_kind::string, "6379")});
    case answer::refused:
        return text_reply(redis::reply_kind::error, "NOAUTH Authentication required.");
    case answer::garbage:
        return text_reply(redis::reply_kind::status, "OK");
    default:
        return {};
    }
}

// Carries out `answers` in an attempt of `resolver`: the sentinels asked, in order, and the last step.
sentinel_resolver::step run(sentinel_resolver& resolver, sentinel_resolver::attempt& a,
                            const std::vector<answer>& answers, std::vector<std::size_t>& asked)
{
    sentinel_resolver::step s = resolver.begin(a);
    for (const answer each : answers)
    {
        BOOST_TEST_REQUIRE((s.what == kind::ask));
        asked.push_back(s.sentinel);
        s = each == answer::unreachable ? resolver.on_failure(a) : resolver.on_reply(a, reply_of(each));
    }
    return s;
}

} // namespace

BOOST_AUTO_TEST_CASE(an_attempt_asks_the_sentinels_in_turn)
{
    struct row
    {
        const char* name;
        std::size_t first; // the sentinel that announced a switch before the attempt
        std::vector<answer> answers;
        std::vector<std::size_t> asked;
        kind last;
        boost::system::error_code error;
    };
    const row rows[] = {
        {"the first answers", 0, {answer::address}, {0}, kind::connect, {}},
        {"the next after one that does not know",
         0,
         {answer::unknown, answer::address},
         {0, 1},
         kind::connect,
         {}},
        {"past one unreachable and one that talks nonsense",
         0,
         {answer::unreachable, answer::garbage, answer::address},
         {0, 1, 2},
         kind::connect,
         {}},
        {"from the one that announced a switch",
         2,
         {answer::unknown, answer::address},
         {2, 0},
         kind::connect,
         {}},
        {"all refuse: auth_failed",
         1,
         {answer::refused, answer::refused, answer::refused},
         {1, 2, 0},
         kind::fail,
         redis::error::auth_failed},
        {"none knows it: unknown_master",
         0,
         {answer::unknown, answer::unknown, answer::unknown},
         {0, 1, 2},
         kind::fail,
         redis::error::unknown_master},
        {"mixed failures: no error, the link tries again",
         0,
         {answer::refused, answer::unknown, answer::unreachable},
         {0, 1, 2},
         kind::fail,
         {}},
        {"two refuse, one does not know: no error",
         0,
         {answer::refused, answer::refused, answer::unknown},
         {0, 1, 2},
         kind::fail,
         {}},
    };
    for (const row& r : rows)
    {
        BOOST_TEST_CONTEXT(r.name)
        {
            sentinel_resolver resolver(options());
            resolver.on_switch(r.first);
            sentinel_resolver::attempt a;
            std::vector<std::size_t> asked;
            const sentinel_resolver::step last = run(resolver, a, r.answers, asked);
            BOOST_TEST(asked == r.asked, boost::test_tools::per_element());
            BOOST_TEST((last.what == r.last));
            BOOST_TEST(last.error == r.error);
            if (r.last == kind::connect)
            {
                BOOST_TEST(a.primary.host == "10.0.0.9");
                BOOST_TEST(a.primary.port == 6379);
                BOOST_TEST(a.sentinel == r.asked.back());
            }
            if (r.error == redis::error::auth_failed)
                BOOST_TEST(a.refusal.text == "NOAUTH Authentication required.");
        }
    }
}

// What happened after an attempt in which sentinel 1 named the primary, and the sentinel the next
// attempt asks first.
BOOST_AUTO_TEST_CASE(the_next_attempt_starts_from_the_sentinel_to_trust)
{
    enum class event
    {
        got_up,      // the link got up on the primary named
        not_primary, // ROLE or READONLY said it is not the primary
        ended,       // the session ended
        switched_0,  // sentinel 0 announced a switch
    };
    struct row
    {
        const char* name;
        std::vector<event> events;
        std::size_t next;
    };
    const row rows[] = {
        {"the one that answered", {}, 1},
        {"it got up, then dropped: the same one", {event::got_up, event::ended}, 1},
        {"it never got up: the one after", {event::ended}, 2},
        {"not the primary: the one after", {event::not_primary}, 2},
        {"a switch announced: the one that announced it", {event::switched_0}, 0},
        {"a switch, then the session ends unused: the announcer stays", {event::switched_0, event::ended}, 0},
    };
    for (const row& r : rows)
    {
        BOOST_TEST_CONTEXT(r.name)
        {
            sentinel_resolver resolver(options());
            sentinel_resolver::attempt a;
            std::vector<std::size_t> asked;
            BOOST_TEST_REQUIRE(
                (run(resolver, a, {answer::unknown, answer::address}, asked).what == kind::connect));
            for (const event e : r.events)
            {
                switch (e)
                {
                case event::got_up:
                    a.ran = true;
                    break;
                case event::not_primary:
                    resolver.on_not_primary();
                    break;
                case event::ended:
                    resolver.on_end(a);
                    break;
                case event::switched_0:
                    resolver.on_switch(0);
                    break;
                }
            }
            sentinel_resolver::attempt next;
            BOOST_TEST(resolver.begin(next).sentinel == r.next);
        }
    }
}

BOOST_AUTO_TEST_CASE(with_credentials_the_sentinel_answers_auth_first)
{
    sentinel_resolver resolver(options("secret"));
    sentinel_resolver::attempt a;
    BOOST_TEST((resolver.begin(a).what == kind::ask));
    BOOST_TEST((resolver.on_reply(a, text_reply(redis::reply_kind::status, "OK")).what == kind::pending));
    BOOST_TEST(sentinel_resolver::asking(a, 0));
    BOOST_TEST((resolver.on_reply(a, reply_of(answer::address)).what == kind::connect));
    BOOST_TEST(!sentinel_resolver::asking(a, 0)); // a timer armed for it is stale
}

BOOST_AUTO_TEST_CASE(a_timer_of_an_earlier_sentinel_is_stale)
{
    sentinel_resolver resolver(options());
    sentinel_resolver::attempt a;
    resolver.begin(a);
    BOOST_TEST(sentinel_resolver::asking(a, 0));
    resolver.on_failure(a);
    BOOST_TEST(!sentinel_resolver::asking(a, 0));
    BOOST_TEST(sentinel_resolver::asking(a, 1));
}

BOOST_AUTO_TEST_CASE(the_watch_link_goes_round_from_the_last_that_answered)
{
    sentinel_resolver resolver(options());
    resolver.on_switch(1);
    std::vector<std::size_t> watched;
    for (int i = 0; i < 4; ++i)
        watched.push_back(resolver.next_watched());
    BOOST_TEST(watched == (std::vector<std::size_t>{1, 2, 0, 1}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(each_sentinel_gets_an_equal_share_of_the_attempt)
{
    const sentinel_resolver resolver(options());
    BOOST_TEST(resolver.ask_timeout(std::chrono::milliseconds(400)).count() ==
               100); // 3 sentinels + the primary
}

BOOST_AUTO_TEST_CASE(a_switch_sends_back_the_links_that_are_not_on_the_new_primary)
{
    sentinel_resolver::attempt a;
    a.primary = {"10.0.0.9", 6379};
    BOOST_TEST(!sentinel_resolver::elsewhere(a, {"10.0.0.9", 6379}));
    BOOST_TEST(sentinel_resolver::elsewhere(a, {"10.0.0.9", 6380}));
    BOOST_TEST(sentinel_resolver::elsewhere(a, {"10.0.0.8", 6379}));
    BOOST_TEST(
        sentinel_resolver::elsewhere(sentinel_resolver::attempt(), {"10.0.0.9", 6379})); // still looking
}

BOOST_AUTO_TEST_SUITE_END()
