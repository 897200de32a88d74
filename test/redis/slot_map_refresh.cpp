// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#define BOOST_TEST_MODULE redis_slot_map_refresh

// When a cluster connection may ask for the slot map again, on a fake clock: at once the first
// time, then at most once per interval, however often a redirection or a lost link wants it.

#include <asio_sync/redis/detail/slot_map_refresh.hpp>

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <vector>

BOOST_AUTO_TEST_SUITE(redis_slot_map_refresh)

namespace {

using asio_sync::redis::detail::slot_map_refresh;
using ms = std::chrono::milliseconds;

} // namespace

// Table rows: the interval, and the instants (ms on a fake clock) at which the map is wanted; it
// is asked when it may be, and otherwise not before `due()`. The rows give the instants at which
// it was asked.
BOOST_AUTO_TEST_CASE(the_map_is_asked_at_most_once_per_interval)
{
    struct row
    {
        ms interval;
        std::vector<int> wanted;
        std::vector<int> asked;
    };
    const row rows[] = {
        {ms(10), {0}, {0}},
        {ms(10), {5}, {5}},                                   // the first time, at once
        {ms(10), {0, 1, 2, 9}, {0}},                          // a storm of MOVED answers
        {ms(10), {0, 9, 10, 11, 19, 20}, {0, 10, 20}},        // exactly an interval apart
        {ms(100), {0, 50, 99, 150, 199, 250}, {0, 150, 250}}, // each from the last one asked
        {ms(0), {0, 0, 1, 1, 2}, {0, 1, 2}},                  // at least 1 ms apart
    };
    for (const row& r : rows)
    {
        BOOST_TEST_CONTEXT("interval " << r.interval.count() << " ms")
        {
            const slot_map_refresh::clock::time_point start{std::chrono::hours(1)};
            slot_map_refresh refresh(r.interval);
            std::vector<int> asked;
            for (const int at : r.wanted)
            {
                const slot_map_refresh::clock::time_point now = start + ms(at);
                if (!refresh.may_ask(now))
                {
                    BOOST_TEST((refresh.due() > now));
                    continue;
                }
                refresh.asked(now);
                asked.push_back(at);
                BOOST_TEST((refresh.due() == now + std::max(r.interval, ms(1))));
            }
            BOOST_TEST(asked == r.asked);
        }
    }
}

BOOST_AUTO_TEST_CASE(never_asked_it_is_due_at_once)
{
    const slot_map_refresh refresh(ms(50));
    BOOST_TEST(refresh.may_ask(slot_map_refresh::clock::time_point{}));
    BOOST_TEST((refresh.due() == slot_map_refresh::clock::time_point::min()));
}

BOOST_AUTO_TEST_SUITE_END()
