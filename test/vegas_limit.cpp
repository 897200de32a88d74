// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#define BOOST_TEST_MODULE vegas_limit
#include <asio_sync/vegas_limit.hpp>

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cstddef>
#include <stdexcept>

namespace {

using asio_sync::limit_sample;
using asio_sync::vegas_limit;
using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::nanoseconds;

// No probe of the latency without load within a test, unless it asks for one.
vegas_limit::options script(std::size_t initial, std::size_t min_limit, std::size_t max_limit)
{
    vegas_limit::options o;
    o.initial_limit = initial;
    o.min_limit = min_limit;
    o.max_limit = max_limit;
    o.probe_multiplier = 1e9;
    return o;
}

limit_sample success(nanoseconds latency, std::size_t in_flight)
{
    return {latency, in_flight, false};
}

} // namespace

BOOST_AUTO_TEST_SUITE(vegas_limit_tests)

BOOST_AUTO_TEST_CASE(defaults_are_concurrency_limits)
{
    const vegas_limit limit;
    BOOST_TEST(limit.limit() == 20u);
    BOOST_TEST(limit.min_limit() == 1u);
    BOOST_TEST(limit.max_limit() == 1000u);
}

// Each step of the script: the queue estimate limit * (1 - 10 ms / latency) against log10_root,
// alpha = 3 and beta = 6 times it (log10_root = 1 below 100).
BOOST_AUTO_TEST_CASE(the_queue_estimate_moves_the_limit)
{
    vegas_limit limit(script(10, 1, 100));
    limit.on_sample(success(milliseconds(10), 10)); // the first sample only measures
    BOOST_TEST(limit.limit() == 10u);
    BOOST_TEST(limit.no_load_latency() == milliseconds(10));

    limit.on_sample(success(milliseconds(10), 10)); // queue 0: + beta
    BOOST_TEST(limit.limit() == 16u);
    limit.on_sample(success(milliseconds(50), 16)); // queue ceil(12.8) = 13 > 6: - 1
    BOOST_TEST(limit.limit() == 15u);
    limit.on_sample(success(microseconds(14286), 15)); // queue ceil(4.5) = 5, in [3, 6]: stays
    BOOST_TEST(limit.limit() == 15u);
    limit.on_sample(success(microseconds(11111), 15)); // queue ceil(1.5) = 2, in (1, 3): + 1
    BOOST_TEST(limit.limit() == 16u);
    limit.on_sample({milliseconds(10), 16, true}); // dropped: - 1, whatever the latency
    BOOST_TEST(limit.limit() == 15u);
    limit.on_sample(success(milliseconds(10), 7)); // 7 in flight fill less than half: stays
    BOOST_TEST(limit.limit() == 15u);
    limit.on_sample(success(milliseconds(5), 15)); // a lower latency only measures
    BOOST_TEST(limit.limit() == 15u);
    BOOST_TEST(limit.no_load_latency() == milliseconds(5));
}

BOOST_AUTO_TEST_CASE(smoothing_weighs_the_new_estimate)
{
    vegas_limit::options o = script(10, 1, 100);
    o.smoothing = 0.5;
    vegas_limit limit(o);
    limit.on_sample(success(milliseconds(10), 10));
    limit.on_sample(success(milliseconds(10), 10)); // 10 + 0.5 * 6
    BOOST_TEST(limit.limit() == 13u);
}

BOOST_AUTO_TEST_CASE(the_limit_stays_between_floor_and_ceiling)
{
    vegas_limit high(script(18, 1, 20));
    high.on_sample(success(milliseconds(10), 18));
    high.on_sample(success(milliseconds(10), 18));
    BOOST_TEST(high.limit() == 20u);

    vegas_limit low(script(5, 5, 20));
    low.on_sample(success(milliseconds(10), 5));
    for (int i = 0; i < 10; ++i)
        low.on_sample({milliseconds(100), 5, true});
    BOOST_TEST(low.limit() == 5u);

    vegas_limit clamped(script(50, 1, 20));
    BOOST_TEST(clamped.limit() == 20u);
}

BOOST_AUTO_TEST_CASE(the_latency_without_load_is_measured_again)
{
    vegas_limit::options o = script(10, 1, 100);
    o.probe_multiplier = 1; // a probe within 5 to 10 samples
    vegas_limit limit(o);
    limit.on_sample(success(milliseconds(10), 0));
    BOOST_TEST(limit.no_load_latency() == milliseconds(10));
    for (int i = 0; i < 10; ++i)
        limit.on_sample(success(milliseconds(30), 0));
    BOOST_TEST(limit.no_load_latency() == milliseconds(30));
}

BOOST_AUTO_TEST_CASE(invalid_options_throw)
{
    BOOST_CHECK_THROW(vegas_limit(script(10, 0, 20)), std::invalid_argument);
    BOOST_CHECK_THROW(vegas_limit(script(10, 21, 20)), std::invalid_argument);
    vegas_limit::options o = script(10, 1, 20);
    o.smoothing = 0;
    BOOST_CHECK_THROW(vegas_limit{o}, std::invalid_argument);
    o.smoothing = 1.5;
    BOOST_CHECK_THROW(vegas_limit{o}, std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(a_long_script_never_leaves_the_bounds)
{
    vegas_limit::options o = script(10, 3, 40);
    o.probe_multiplier = 2;
    vegas_limit limit(o);
    for (int i = 0; i < 5000; ++i)
    {
        const bool dropped = i % 17 == 0;
        limit.on_sample({microseconds(1000 + (i * 7919) % 9000), limit.limit(), dropped});
        BOOST_TEST_REQUIRE(limit.limit() >= 3u);
        BOOST_TEST_REQUIRE(limit.limit() <= 40u);
    }
}

BOOST_AUTO_TEST_SUITE_END()
