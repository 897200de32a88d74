// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#define BOOST_TEST_MODULE aimd_limit
#include <asio_sync/aimd_limit.hpp>

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cstddef>
#include <stdexcept>

namespace {

using asio_sync::aimd_limit;
using asio_sync::limit_sample;
using std::chrono::milliseconds;

aimd_limit::options script(std::size_t initial, std::size_t min_limit, std::size_t max_limit)
{
    aimd_limit::options o;
    o.initial_limit = initial;
    o.min_limit = min_limit;
    o.max_limit = max_limit;
    o.timeout = milliseconds(100);
    return o;
}

} // namespace

BOOST_AUTO_TEST_SUITE(aimd_limit_tests)

BOOST_AUTO_TEST_CASE(defaults_are_concurrency_limits)
{
    const aimd_limit limit;
    BOOST_TEST(limit.limit() == 20u);
    BOOST_TEST(limit.min_limit() == 20u);
    BOOST_TEST(limit.max_limit() == 200u);
}

BOOST_AUTO_TEST_CASE(additive_increase_multiplicative_decrease)
{
    aimd_limit limit(script(10, 5, 100));
    limit.on_sample({milliseconds(1), 5, false}); // half the limit in flight: + 1
    BOOST_TEST(limit.limit() == 11u);
    limit.on_sample({milliseconds(1), 5, false}); // 5 of 11 fill less than half: stays
    BOOST_TEST(limit.limit() == 11u);
    limit.on_sample({milliseconds(1), 11, true}); // dropped: 11 * 0.9 = 9.9, rounded down
    BOOST_TEST(limit.limit() == 9u);
    limit.on_sample({milliseconds(200), 9, false}); // slower than the timeout: 8.1
    BOOST_TEST(limit.limit() == 8u);
    limit.on_sample({milliseconds(100), 8, false}); // at the timeout: a success
    BOOST_TEST(limit.limit() == 9u);
}

BOOST_AUTO_TEST_CASE(the_limit_stays_between_floor_and_ceiling)
{
    aimd_limit low(script(8, 5, 12));
    for (int i = 0; i < 10; ++i)
        low.on_sample({milliseconds(1), 8, true});
    BOOST_TEST(low.limit() == 5u);

    aimd_limit high(script(8, 5, 12));
    for (int i = 0; i < 10; ++i)
        high.on_sample({milliseconds(1), 12, false});
    BOOST_TEST(high.limit() == 12u);

    BOOST_TEST(aimd_limit(script(1, 5, 12)).limit() == 5u);
}

BOOST_AUTO_TEST_CASE(invalid_options_throw)
{
    BOOST_CHECK_THROW(aimd_limit(script(10, 0, 20)), std::invalid_argument);
    BOOST_CHECK_THROW(aimd_limit(script(10, 21, 20)), std::invalid_argument);
    aimd_limit::options o = script(10, 1, 20);
    o.backoff_ratio = 1;
    BOOST_CHECK_THROW(aimd_limit{o}, std::invalid_argument);
    o.backoff_ratio = 0.4;
    BOOST_CHECK_THROW(aimd_limit{o}, std::invalid_argument);
    o.backoff_ratio = 0.9;
    o.timeout = milliseconds(0);
    BOOST_CHECK_THROW(aimd_limit{o}, std::invalid_argument);
}

BOOST_AUTO_TEST_SUITE_END()
