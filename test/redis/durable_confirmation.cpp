// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#define BOOST_TEST_MODULE redis_durable_confirmation

// What a call made with durable grants answers once its WAIT has, without a server: an answer
// that stores state stands only with enough replicas (else connection_lost, sent again; or, with
// WAIT refused by an ACL, failed with no_permission and marked stored); an answer that stores
// nothing stands as it is; in either order of arrival. And WAIT's timeout.

#include <asio_sync/redis/detail/durable_confirmation.hpp>

#include "support/redis_replies.hpp"

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <optional>

BOOST_AUTO_TEST_SUITE(redis_durable_confirmation)

namespace {

namespace redis = asio_sync::redis;
using asio_sync::test::integer_reply;
using asio_sync::test::text_reply;
using redis::detail::durable_confirmation;
using redis::detail::semaphore_reply;
using outcome = semaphore_reply::outcome;
using ms = std::chrono::milliseconds;

semaphore_reply answer(outcome what, boost::system::error_code ec = {})
{
    semaphore_reply r;
    r.what = what;
    r.error = ec;
    return r;
}

} // namespace

BOOST_AUTO_TEST_CASE(an_answer_that_stores_state_stands_only_when_confirmed)
{
    const redis::reply refused =
        text_reply(redis::reply_kind::error, "NOPERM this user has no permissions to run "
                                             "the 'wait' command");
    struct row
    {
        const char* name;
        semaphore_reply call;
        boost::system::error_code wait_ec;
        redis::reply wait;
        outcome expected;
        boost::system::error_code error;
        bool stored;
    };
    const row rows[] = {
        {"granted, 2 of 2 replicas",
         answer(outcome::granted),
         {},
         integer_reply(2),
         outcome::granted,
         {},
         false},
        {"granted, 3 of 2 replicas",
         answer(outcome::granted),
         {},
         integer_reply(3),
         outcome::granted,
         {},
         false},
        {"granted, 1 of 2: unknown",
         answer(outcome::granted),
         {},
         integer_reply(1),
         outcome::connection_lost,
         {},
         false},
        {"queued, 1 of 2: unknown",
         answer(outcome::queued),
         {},
         integer_reply(1),
         outcome::connection_lost,
         {},
         false},
        {"resized, 0 of 2: unknown",
         answer(outcome::resized),
         {},
         integer_reply(0),
         outcome::connection_lost,
         {},
         false},
        {"granted, WAIT lost with the link: unknown",
         answer(outcome::granted),
         redis::error::connection_lost,
         {},
         outcome::connection_lost,
         {},
         false},
        {"granted, WAIT refused by an ACL: failed, stored", answer(outcome::granted),
         redis::error::server_error, refused, outcome::failed, redis::error::no_permission, true},
        {"busy stores nothing: stands",
         answer(outcome::busy),
         {},
         integer_reply(0),
         outcome::busy,
         {},
         false},
        {"lost stores nothing: stands",
         answer(outcome::lost),
         {},
         integer_reply(0),
         outcome::lost,
         {},
         false},
        {"a failure stands",
         answer(outcome::failed, redis::error::server_error),
         {},
         integer_reply(0),
         outcome::failed,
         redis::error::server_error,
         false},
        {"connection_lost stands",
         answer(outcome::connection_lost),
         redis::error::connection_lost,
         {},
         outcome::connection_lost,
         {},
         false},
    };
    for (const row& r : rows)
    {
        for (const bool call_first : {true, false})
        {
            BOOST_TEST_CONTEXT(r.name << (call_first ? ", the call's reply first" : ", WAIT's reply first"))
            {
                durable_confirmation rule(2);
                std::optional<semaphore_reply> first =
                    call_first ? rule.on_call(r.call) : rule.on_wait(r.wait_ec, r.wait);
                BOOST_TEST(!first);
                const std::optional<semaphore_reply> final =
                    call_first ? rule.on_wait(r.wait_ec, r.wait) : rule.on_call(r.call);
                BOOST_TEST_REQUIRE(final.has_value());
                BOOST_TEST((final->what == r.expected));
                BOOST_TEST(final->error == r.error);
                BOOST_TEST(final->stored == r.stored);
            }
        }
    }
}

BOOST_AUTO_TEST_CASE(wait_takes_a_tenth_of_the_lease_and_at_most_half_the_health_interval)
{
    struct row
    {
        ms lease, health, expected;
    };
    const row rows[] = {
        {ms(10000), ms(0), ms(1000)},                                    // no health check
        {ms(10000), ms(5000), ms(1000)}, {ms(10000), ms(1000), ms(500)}, // the link must not look dead
        {ms(5), ms(0), ms(1)}, // at least 1 ms: 0 would wait for ever
        {ms(10000), ms(1), ms(1)},
    };
    for (const row& r : rows)
        BOOST_TEST(durable_confirmation::wait_timeout(r.lease, r.health).count() == r.expected.count());
    BOOST_TEST(
        (durable_confirmation::wait_command(2, ms(250)) == std::vector<std::string>{"WAIT", "2", "250"}));
}

BOOST_AUTO_TEST_SUITE_END()
