// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#define BOOST_TEST_MODULE redis_checked_semaphore_options

// A semaphore's options checked once, without a server: the lease within its range, the safety
// margin's default and its range, and the other options passed on whole (the number of durable
// replicas stays a number).

#include <asio_sync/redis/detail/checked_semaphore_options.hpp>

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <optional>
#include <stdexcept>

BOOST_AUTO_TEST_SUITE(redis_checked_semaphore_options)

namespace {

namespace redis = asio_sync::redis;
using redis::detail::checked_semaphore_options;
using ms = std::chrono::milliseconds;

constexpr ms min_lease{10};
constexpr ms max_lease{100000};

} // namespace

BOOST_AUTO_TEST_CASE(the_lease_and_the_margin_are_checked_once)
{
    struct row
    {
        const char* name;
        ms lease;
        std::optional<ms> margin;
        bool valid;
        ms resolved_margin;
    };
    const row rows[] = {
        {"the default margin: a fiftieth plus 5 ms", ms(10000), std::nullopt, true, ms(205)},
        {"the shortest lease: its default margin is half of it", min_lease, std::nullopt, true, ms(5)},
        {"the longest lease", max_lease, std::nullopt, true, ms(2005)},
        {"a lease too short", min_lease - ms(1), std::nullopt, false, ms(0)},
        {"a lease too long", max_lease + ms(1), std::nullopt, false, ms(0)},
        {"a margin of zero", ms(1000), ms(0), true, ms(0)},
        {"a margin of half the lease", ms(1000), ms(500), true, ms(500)},
        {"a margin above half the lease", ms(1000), ms(501), false, ms(0)},
        {"a negative margin", ms(1000), ms(-1), false, ms(0)},
    };
    for (const row& r : rows)
    {
        BOOST_TEST_CONTEXT(r.name)
        {
            const redis::semaphore_options options{r.lease, r.margin, false, 0};
            if (!r.valid)
            {
                BOOST_CHECK_THROW(checked_semaphore_options(options, min_lease, max_lease),
                                  std::invalid_argument);
                continue;
            }
            const checked_semaphore_options checked(options, min_lease, max_lease);
            BOOST_TEST(checked.lease().count() == r.lease.count());
            BOOST_TEST(checked.safety_margin().count() == r.resolved_margin.count());
        }
    }
}

BOOST_AUTO_TEST_CASE(the_other_options_pass_whole)
{
    const checked_semaphore_options plain(redis::semaphore_options{}, min_lease, max_lease);
    BOOST_TEST(!plain.adopt_capacity());
    BOOST_TEST(!plain.durable());
    BOOST_TEST(plain.durable_replicas() == 0u);
    const checked_semaphore_options durable(redis::semaphore_options{ms(10000), std::nullopt, true, 3},
                                            min_lease, max_lease);
    BOOST_TEST(durable.adopt_capacity());
    BOOST_TEST(durable.durable());
    BOOST_TEST(durable.durable_replicas() == 3u);
}

BOOST_AUTO_TEST_SUITE_END()
