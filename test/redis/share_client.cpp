// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#define BOOST_TEST_MODULE redis_share_client

// The client side of a leased share without a server, a connection or a clock: the options'
// bounds, the first call, growth, the demand and when it is reported, shrink with debt and its
// confirmation, the lease rule and the share's loss (the lease ending, Redis making a new entry or
// holding less than the share), answers that come late or never, errors and retries, a published
// division, close and leave.

#include <asio_sync/redis/detail/share_client.hpp>

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cstddef>
#include <stdexcept>

BOOST_AUTO_TEST_SUITE(redis_share_client)

namespace {

namespace redis = asio_sync::redis;
using namespace redis::detail;
using namespace std::chrono_literals;
using time_point = share_client::time_point;

constexpr std::chrono::milliseconds lease = 4000ms;
constexpr std::chrono::milliseconds margin = 100ms;
constexpr std::chrono::milliseconds interval = 400ms; // a quarter: 100 ms

const time_point t0{std::chrono::hours(1)};

share_settings settings()
{
    return share_settings({lease, margin, interval}, 40ms, 24h);
}

share_reply granted(std::size_t held, std::size_t target, std::uint64_t fence = 7, std::size_t capacity = 32)
{
    return share_reply{held, target, lease, fence, capacity};
}

// A local semaphore with nothing in use but `in_use` permits, `missing` more asked for by queued
// acquires, and an open debt.
local_view local(std::size_t share, std::size_t in_use, std::size_t missing = 0, std::size_t debt = 0)
{
    return local_view{debt, missing, share + debt - in_use};
}

// The answer to `seq` at `now`, then the tick that follows it with the local semaphore `after` as
// the answer's resize left it: what both decided.
share_actions answer(share_client& c, time_point now, std::uint64_t seq, const share_reply& reply,
                     const local_view& after)
{
    share_actions a = c.on_reply(now, seq, reply);
    const share_actions b = c.tick(now, after);
    a.refresh = b.refresh;
    a.want = b.want;
    a.bound = b.bound;
    a.seq = b.seq;
    a.leave = b.leave;
    a.lost = a.lost || b.lost;
    a.changed = a.changed || b.changed;
    return a;
}

// A published division heard at `now`, then the tick.
share_actions notice(share_client& c, time_point now, const local_view& view)
{
    c.on_notice();
    return c.tick(now, view);
}

// close() at `now`, then the tick with the local semaphore `after` as the close left it.
share_actions close(share_client& c, time_point now, const local_view& after)
{
    share_actions a = c.close();
    const share_actions b = c.tick(now, after);
    a.refresh = b.refresh;
    a.want = b.want;
    a.bound = b.bound;
    a.seq = b.seq;
    a.leave = b.leave;
    return a;
}

// A client that asked at t0 and was granted `share` (held and target), nothing in use.
share_client granted_client(std::size_t share)
{
    share_client c(settings());
    const share_actions first = c.tick(t0, local(0, 0));
    BOOST_REQUIRE(first.refresh);
    answer(c, t0 + 5ms, first.seq, granted(share, share), local(share, 0));
    BOOST_REQUIRE_EQUAL(c.share(), share);
    return c;
}

} // namespace

BOOST_AUTO_TEST_CASE(options_out_of_range_are_refused)
{
    const auto make = [](redis::share_options o) { return share_settings(o, 40ms, 24h); };
    BOOST_CHECK_THROW(make({20ms, {}, {}}), std::invalid_argument);
    BOOST_CHECK_THROW(make({25h, {}, {}}), std::invalid_argument);
    BOOST_CHECK_THROW(make({lease, -1ms, {}}), std::invalid_argument);
    BOOST_CHECK_THROW(make({lease, lease / 2 + 1ms, {}}), std::invalid_argument);
    BOOST_CHECK_THROW(make({lease, {}, lease / 3 + 1ms}), std::invalid_argument);
    BOOST_CHECK_THROW(make({lease, {}, lease / 100 - 1ms}), std::invalid_argument);
    const share_settings defaults = make({lease, {}, {}});
    BOOST_TEST(defaults.refresh_interval() == lease / 10);
    BOOST_TEST(defaults.safety_margin() == lease / 50 + 5ms);
    BOOST_TEST(make({lease, margin, interval}).quarter() == 100ms);
}

BOOST_AUTO_TEST_CASE(the_first_call_goes_at_once_and_a_grant_grows_the_share_to_held_and_target)
{
    share_client c(settings());
    const share_actions a = c.tick(t0, local(0, 0, 3));
    BOOST_TEST(a.refresh);
    BOOST_TEST(a.want == 3u);
    BOOST_TEST(a.bound == 0u);
    BOOST_TEST(!c.valid_until());
    // Held below target: the share is what Redis counts, not what it intends.
    const share_actions b = answer(c, t0 + 5ms, a.seq, granted(2, 3), local(2, 2, 1));
    BOOST_TEST(b.add == 2u);
    BOOST_TEST(b.reduce == 0u);
    BOOST_TEST(b.changed);
    BOOST_TEST(c.share() == 2u);
    BOOST_TEST(c.target() == 3u);
    BOOST_TEST(c.capacity() == 32u);
    BOOST_TEST(c.fence() == 7u);
    // The lease rule: from the send time, not the answer's.
    BOOST_REQUIRE(c.valid_until());
    BOOST_TEST((*c.valid_until() == t0 + lease - margin));
    BOOST_TEST(!b.refresh); // within a quarter of the last call
}

BOOST_AUTO_TEST_CASE(waiters_short_of_share_call_at_most_once_a_quarter_and_report_the_peak_demand)
{
    share_client c = granted_client(4);
    // Nothing missing: no call before the refresh is due.
    BOOST_TEST(!c.tick(t0 + 200ms, local(4, 4)).refresh);
    // The first demand after none was reported (the constructor's call) goes at once.
    share_client d = granted_client(4);
    const share_actions a = d.tick(t0 + 50ms, local(4, 4, 2));
    BOOST_TEST(a.refresh);
    BOOST_TEST(a.want == 6u);
    BOOST_TEST(a.bound == 4u);
    // One in flight at a time, and then none within a quarter of the last.
    BOOST_TEST(!d.tick(t0 + 100ms, local(4, 4, 5)).refresh);
    BOOST_TEST(!answer(d, t0 + 110ms, a.seq, granted(4, 4), local(4, 4, 5)).refresh);
    // A quarter after the last call, the demand grown past what was asked is asked for: the
    // largest sampled over the last two quarters, though it has fallen since.
    const share_actions b = d.tick(t0 + 150ms, local(4, 3, 1));
    BOOST_TEST(b.refresh);
    BOOST_TEST(b.want == 9u);
}

BOOST_AUTO_TEST_CASE(a_demand_that_falls_is_reported_by_the_next_refresh)
{
    share_client c = granted_client(8);
    const share_actions a = notice(c, t0 + 100ms, local(8, 8));
    BOOST_REQUIRE(a.refresh);
    BOOST_TEST(a.want == 8u);
    answer(c, t0 + 105ms, a.seq, granted(8, 8), local(8, 8));
    // The demand falls to 1 at once after; samples every quarter.
    for (int q = 2; q < 5; ++q)
        BOOST_TEST(!c.tick(t0 + q * 100ms, local(8, 1)).refresh);
    // The refresh an interval after the last call reports the fallen demand.
    const share_actions b = c.tick(t0 + 500ms, local(8, 1));
    BOOST_TEST(b.refresh);
    BOOST_TEST(b.want == 1u);
}

BOOST_AUTO_TEST_CASE(the_refresh_comes_every_interval_and_reports_a_falling_demand)
{
    share_client c = granted_client(8);
    BOOST_TEST(!c.tick(t0 + 399ms, local(8, 2)).refresh);
    const share_actions a = c.tick(t0 + 400ms, local(8, 2));
    BOOST_TEST(a.refresh);
    BOOST_TEST(a.want == 2u);
    BOOST_TEST(a.bound == 8u);
    // Redis lowers the target: the share drops at once, nothing in debt (6 are free).
    const share_actions b = answer(c, t0 + 405ms, a.seq, granted(8, 2), local(2, 2));
    BOOST_TEST(b.reduce == 6u);
    BOOST_TEST(c.share() == 2u);
    // Redis still counts 8: the lower bound is reported a quarter after the last call.
    BOOST_TEST(!c.tick(t0 + 450ms, local(2, 2)).refresh);
    const share_actions d = c.tick(t0 + 500ms, local(2, 2));
    BOOST_TEST(d.refresh);
    BOOST_TEST(d.bound == 2u);
}

BOOST_AUTO_TEST_CASE(a_shrink_with_holders_is_confirmed_as_they_give_back)
{
    share_client c = granted_client(8);
    const share_actions a = notice(c, t0 + 100ms, local(8, 8));
    BOOST_REQUIRE(a.refresh);
    const share_actions b = answer(c, t0 + 105ms, a.seq, granted(8, 4), local(4, 8, 0, 4));
    BOOST_TEST(b.reduce == 4u);
    // All 8 in use: a debt of 4; the bound stays 8, so nothing to confirm yet.
    BOOST_TEST(!c.tick(t0 + 300ms, local(4, 8, 0, 4)).refresh);
    // Three given back: the bound falls to 5.
    const share_actions d = c.tick(t0 + 310ms, local(4, 5, 0, 1));
    BOOST_TEST(d.refresh);
    BOOST_TEST(d.bound == 5u);
    answer(c, t0 + 315ms, d.seq, granted(5, 4), local(4, 5, 0, 1));
    BOOST_TEST(c.share() == 4u); // the share never follows held above the target
    // The last of the debt paid: confirmed.
    const share_actions e = c.tick(t0 + 420ms, local(4, 4));
    BOOST_TEST(e.refresh);
    BOOST_TEST(e.bound == 4u);
}

BOOST_AUTO_TEST_CASE(the_share_is_lost_when_its_lease_ends_without_an_answer)
{
    share_client c = granted_client(6);
    const time_point until = *c.valid_until();
    // The refresh goes, and is never answered: given up after an interval, sent again.
    const share_actions a = c.tick(t0 + 400ms, local(6, 6));
    BOOST_REQUIRE(a.refresh);
    BOOST_TEST(!c.tick(t0 + 799ms, local(6, 6)).refresh);
    const share_actions b = c.tick(t0 + 800ms, local(6, 6));
    BOOST_TEST(b.refresh);
    BOOST_TEST(b.seq != a.seq);
    BOOST_TEST((c.next_wake(until - 10ms) == until));
    const share_actions lost = c.tick(until, local(6, 6));
    BOOST_TEST(lost.lost);
    BOOST_TEST(lost.reduce == 6u);
    BOOST_TEST(c.share() == 0u);
    BOOST_TEST(!c.valid_until());
    // The first answer, late: ignored.
    const share_actions late = answer(c, until + 1ms, a.seq, granted(6, 6), local(0, 6, 0, 6));
    BOOST_TEST(late.add == 0u);
    BOOST_TEST(c.share() == 0u);
}

BOOST_AUTO_TEST_CASE(an_answer_whose_lease_is_already_over_grants_nothing)
{
    share_client c = granted_client(2);
    const share_actions a = c.tick(t0 + 400ms, local(2, 0, 1));
    BOOST_REQUIRE(a.refresh);
    // Answered after the lease it grants has ended, as this clock sees it.
    const share_actions b = answer(c, t0 + 400ms + lease, a.seq, granted(3, 3), local(0, 0, 1));
    BOOST_TEST(b.add == 0u);
    BOOST_TEST(b.lost); // the previous lease ended meanwhile
    BOOST_TEST(c.share() == 0u);
}

BOOST_AUTO_TEST_CASE(a_new_entry_in_redis_while_the_share_is_valid_is_a_loss)
{
    share_client c = granted_client(5);
    const share_actions a = notice(c, t0 + 100ms, local(5, 5));
    BOOST_REQUIRE(a.refresh);
    // Redis lost the state: a new fence, and nothing held for this process.
    const share_actions b = answer(c, t0 + 105ms, a.seq, granted(3, 5, 9), local(3, 5, 0, 2));
    BOOST_TEST(b.lost);
    BOOST_TEST(b.reduce == 5u);
    BOOST_TEST(b.add == 3u);
    BOOST_TEST(c.share() == 3u);
    BOOST_TEST(c.fence() == 9u);
}

BOOST_AUTO_TEST_CASE(an_answer_holding_less_than_the_share_is_a_loss)
{
    share_client c = granted_client(5);
    const share_actions a = notice(c, t0 + 100ms, local(5, 5));
    BOOST_REQUIRE(a.refresh);
    // Redis went back to an earlier state (its last writes lost): the same entry, holding 3 of the
    // 5 this process uses. The others may take the 2.
    const share_actions b = answer(c, t0 + 105ms, a.seq, granted(3, 5), local(3, 5, 0, 2));
    BOOST_TEST(b.lost);
    BOOST_TEST(b.reduce == 5u);
    BOOST_TEST(b.add == 3u);
    BOOST_TEST(c.share() == 3u);
    // Held at least the share that was sent: as usual.
    const share_actions d = c.tick(t0 + 500ms, local(3, 3));
    BOOST_REQUIRE(d.refresh);
    BOOST_TEST(!answer(c, t0 + 505ms, d.seq, granted(3, 5), local(3, 3)).lost);
}

BOOST_AUTO_TEST_CASE(an_error_is_retried_a_quarter_after_the_call)
{
    share_client c(settings());
    const share_actions a = c.tick(t0, local(0, 0, 1));
    BOOST_TEST(!c.on_error(a.seq).refresh);
    BOOST_TEST(!c.on_error(a.seq).refresh); // twice: once counts
    const share_actions b = c.tick(t0 + 100ms, local(0, 0, 1));
    BOOST_TEST(b.refresh);
    BOOST_TEST(b.want == 1u);
}

BOOST_AUTO_TEST_CASE(a_published_division_is_answered_within_a_quarter)
{
    share_client c = granted_client(4);
    BOOST_TEST(!notice(c, t0 + 20ms, local(4, 1)).refresh);
    BOOST_TEST((c.next_wake(t0 + 20ms) == t0 + 120ms));
    const share_actions a = c.tick(t0 + 100ms, local(4, 1));
    BOOST_TEST(a.refresh);
    BOOST_TEST(a.want == 1u);
    // Heard once, called once.
    answer(c, t0 + 105ms, a.seq, granted(4, 4), local(4, 1));
    BOOST_TEST(!c.tick(t0 + 300ms, local(4, 1)).refresh);
}

BOOST_AUTO_TEST_CASE(close_drops_the_share_and_leaves_once_nothing_is_in_use)
{
    share_client c = granted_client(4);
    const share_actions a = close(c, t0 + 200ms, local(0, 3, 0, 3));
    BOOST_TEST(a.reduce == 4u);
    BOOST_TEST(a.refresh);
    BOOST_TEST(a.want == 0u);
    BOOST_TEST(a.bound == 3u);
    BOOST_TEST(!a.leave);
    BOOST_TEST(c.demand() == 0u);
    // Answered: the share stays 0 whatever Redis grants.
    const share_actions b = answer(c, t0 + 205ms, a.seq, granted(3, 0), local(0, 3, 0, 3));
    BOOST_TEST(b.add == 0u);
    BOOST_TEST(!b.leave);
    const share_actions d = c.tick(t0 + 300ms, local(0, 0));
    BOOST_TEST(d.leave);
    BOOST_TEST(c.left());
    BOOST_TEST(!c.tick(t0 + 2s, local(0, 0)).refresh);
    BOOST_TEST(!close(c, t0 + 2s, local(0, 0)).leave);
}

BOOST_AUTO_TEST_CASE(close_with_nothing_in_use_leaves_at_once)
{
    share_client c = granted_client(4);
    const share_actions a = close(c, t0 + 10ms, local(0, 0));
    BOOST_TEST(a.leave);
    BOOST_TEST(!a.refresh);
}

BOOST_AUTO_TEST_SUITE_END()
