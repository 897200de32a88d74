// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#define BOOST_TEST_MODULE gradient2_limit
#include <asio_sync/gradient2_limit.hpp>

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cmath>
#include <cstddef>
#include <stdexcept>

namespace {

using asio_sync::gradient2_limit;
using asio_sync::limit_sample;
using std::chrono::microseconds;
using std::chrono::milliseconds;

gradient2_limit::options script(std::size_t initial, std::size_t min_limit, std::size_t max_limit)
{
    gradient2_limit::options o;
    o.initial_limit = initial;
    o.min_limit = min_limit;
    o.max_limit = max_limit;
    return o;
}

limit_sample success(std::chrono::nanoseconds latency, std::size_t in_flight)
{
    return {latency, in_flight, false};
}

} // namespace

BOOST_AUTO_TEST_SUITE(gradient2_limit_tests)

BOOST_AUTO_TEST_CASE(defaults_are_concurrency_limits)
{
    const gradient2_limit limit;
    BOOST_TEST(limit.limit() == 20u);
    BOOST_TEST(limit.min_limit() == 20u);
    BOOST_TEST(limit.max_limit() == 200u);
}

// Smoothing 0.2 and a queue size of 4: while the gradient is 1, each sample adds 0.8.
BOOST_AUTO_TEST_CASE(the_gradient_moves_the_limit)
{
    gradient2_limit limit(script(20, 1, 200));
    limit.on_sample(success(milliseconds(10), 20)); // 20.8
    BOOST_TEST(limit.limit() == 20u);
    limit.on_sample(success(milliseconds(10), 20)); // 21.6
    limit.on_sample(success(milliseconds(10), 20)); // 22.4
    BOOST_TEST(limit.limit() == 22u);
    BOOST_TEST(limit.long_latency() == milliseconds(10));

    // The average of the first samples is 22.5 ms; gradient 1.5 * 22.5 / 60 = 0.5625:
    // 22.4 * 0.8 + (22.4 * 0.5625 + 4) * 0.2 = 21.24.
    limit.on_sample(success(milliseconds(60), 22));
    BOOST_TEST(limit.limit() == 21u);
    BOOST_TEST(limit.long_latency() == microseconds(22500));

    // Fewer than half the limit in flight: the average learns, the limit stays.
    limit.on_sample(success(milliseconds(10), 10));
    BOOST_TEST(limit.limit() == 21u);
    BOOST_TEST(limit.long_latency() == milliseconds(20));
}

// queue_fraction 0.1 adds a tenth of the limit to queue_size: the limit settles that fraction
// above the knee. Smoothing 1, so that each step is the new estimate.
BOOST_AUTO_TEST_CASE(the_growth_can_be_a_fraction_of_the_limit)
{
    gradient2_limit::options o = script(20, 1, 200);
    o.smoothing = 1;
    o.rtt_tolerance = 1;
    o.queue_size = 0.5;
    o.queue_fraction = 0.1;
    gradient2_limit limit(o);
    limit.on_sample(success(milliseconds(10), 20)); // 20 * 1 + 0.5 + 2 = 22.5
    BOOST_TEST(limit.limit() == 22u);
    limit.on_sample(success(milliseconds(10), 22)); // 22.5 + 0.5 + 2.25 = 25.25
    BOOST_TEST(limit.limit() == 25u);

    // The average of 10, 10 and 20 ms is 13.33 ms; gradient 2 / 3:
    // 25.25 * 2 / 3 + 0.5 + 2.525 = 19.86.
    limit.on_sample(success(milliseconds(20), 25));
    BOOST_TEST(limit.limit() == 19u);
}

BOOST_AUTO_TEST_CASE(a_dropped_sample_counts_by_its_latency)
{
    gradient2_limit limit(script(20, 1, 200));
    limit.on_sample({milliseconds(10), 20, true});
    limit.on_sample({milliseconds(10), 20, true});
    BOOST_TEST(limit.limit() == 21u);
}

// After the ten samples of the plain mean, the average moves by 2 / 601 of the difference; more
// than twice the latency, it is then scaled by 0.95.
BOOST_AUTO_TEST_CASE(the_average_follows_a_latency_that_came_back)
{
    gradient2_limit limit(script(20, 1, 200));
    for (int i = 0; i < 10; ++i)
        limit.on_sample(success(milliseconds(100), 0));
    BOOST_TEST(limit.long_latency() == milliseconds(100));
    limit.on_sample(success(milliseconds(10), 0));
    const double expected = (100.0 - 90.0 * 2 / 601) * 0.95;
    BOOST_TEST(std::abs(static_cast<double>(limit.long_latency().count()) / 1e6 - expected) < 1e-3);
}

BOOST_AUTO_TEST_CASE(the_limit_stays_between_floor_and_ceiling)
{
    gradient2_limit high(script(20, 1, 21));
    for (int i = 0; i < 10; ++i)
        high.on_sample(success(milliseconds(10), 21));
    BOOST_TEST(high.limit() == 21u);

    gradient2_limit low(script(20, 18, 200));
    for (int i = 0; i < 10; ++i)
        low.on_sample(success(milliseconds(1), 0));
    for (int i = 0; i < 50; ++i)
        low.on_sample(success(milliseconds(500), 20));
    BOOST_TEST(low.limit() == 18u);
}

BOOST_AUTO_TEST_CASE(invalid_options_throw)
{
    BOOST_CHECK_THROW(gradient2_limit(script(10, 0, 20)), std::invalid_argument);
    BOOST_CHECK_THROW(gradient2_limit(script(10, 21, 20)), std::invalid_argument);
    gradient2_limit::options o = script(10, 1, 20);
    o.rtt_tolerance = 0.9;
    BOOST_CHECK_THROW(gradient2_limit{o}, std::invalid_argument);
    o.rtt_tolerance = 1.5;
    o.smoothing = 0;
    BOOST_CHECK_THROW(gradient2_limit{o}, std::invalid_argument);
    o.smoothing = 0.2;
    o.long_window = 0;
    BOOST_CHECK_THROW(gradient2_limit{o}, std::invalid_argument);
    o.long_window = 600;
    o.queue_fraction = -0.1;
    BOOST_CHECK_THROW(gradient2_limit{o}, std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(a_long_script_never_leaves_the_bounds)
{
    gradient2_limit limit(script(10, 3, 40));
    for (int i = 0; i < 5000; ++i)
    {
        limit.on_sample({microseconds(1000 + (i * 7919) % 9000), limit.limit(), i % 13 == 0});
        BOOST_TEST_REQUIRE(limit.limit() >= 3u);
        BOOST_TEST_REQUIRE(limit.limit() <= 40u);
    }
}

BOOST_AUTO_TEST_SUITE_END()
