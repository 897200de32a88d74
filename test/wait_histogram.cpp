// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#define BOOST_TEST_MODULE wait_histogram
#include <boost/test/unit_test.hpp>

#include <asio_sync/semaphore.hpp>
#include <asio_sync/wait_histogram.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/system/error_code.hpp>

#include <chrono>
#include <cstdint>
#include <numeric>
#include <stdexcept>
#include <thread>
#include <vector>

namespace asio = boost::asio;
using asio_sync::wait_histogram;
using asio_sync::wait_outcome;
using boost::system::error_code;
using namespace std::chrono_literals;

BOOST_AUTO_TEST_SUITE(wait_histogram_suite)

BOOST_AUTO_TEST_CASE(buckets_by_upper_bound_and_counts_by_outcome)
{
    wait_histogram h({1ms, 10ms});
    h.on_queued();
    h.on_finished(wait_outcome::granted, 0ms);
    h.on_finished(wait_outcome::granted, 1ms);         // at a bound: in its bucket
    h.on_finished(wait_outcome::timed_out, 1ms + 1ns); // just above: the next one
    h.on_finished(wait_outcome::cancelled, 10ms);
    h.on_finished(wait_outcome::failed, 1h); // above every bound
    const auto s = h.snapshot();
    BOOST_TEST(s.queued == 1u);
    BOOST_TEST(s.count == 5u);
    BOOST_TEST(s.granted == 2u);
    BOOST_TEST(s.cancelled == 1u);
    BOOST_TEST(s.timed_out == 1u);
    BOOST_TEST(s.failed == 1u);
    BOOST_TEST((s.sum == 0ms + 1ms + 1ms + 1ns + 10ms + 1h));
    BOOST_TEST((s.upper_bounds == std::vector<wait_histogram::duration>{1ms, 10ms}));
    BOOST_TEST((s.buckets == std::vector<std::uint64_t>{2, 2, 1}));
}

BOOST_AUTO_TEST_CASE(default_and_empty_bounds)
{
    const auto s = wait_histogram().snapshot();
    BOOST_TEST(s.upper_bounds.size() == 8u);
    BOOST_TEST((s.upper_bounds.front() == 1us));
    BOOST_TEST((s.upper_bounds.back() == 10s));
    BOOST_TEST(s.buckets.size() == 9u);
    BOOST_TEST(s.count == 0u);

    wait_histogram one_bucket(std::vector<wait_histogram::duration>{});
    one_bucket.on_finished(wait_outcome::granted, 5s);
    BOOST_TEST((one_bucket.snapshot().buckets == std::vector<std::uint64_t>{1}));
}

BOOST_AUTO_TEST_CASE(bounds_not_strictly_ascending_are_refused)
{
    BOOST_CHECK_THROW(wait_histogram({10ms, 1ms}), std::invalid_argument);
    BOOST_CHECK_THROW(wait_histogram({1ms, 1ms}), std::invalid_argument);
}

// Attached to a semaphore: two waits granted, one timed out, one acquire granted at once (not a
// wait); the buckets add up to the count.
BOOST_AUTO_TEST_CASE(observing_a_semaphore)
{
    asio::io_context io;
    asio_sync::semaphore sem(io, 1);
    wait_histogram h;
    sem.set_observer(&h);
    sem.async_acquire(1, [](error_code) {}); // at once
    sem.async_acquire(1, [](error_code) {});
    sem.async_acquire(1, [](error_code) {});
    sem.release(2);
    const auto before_call = std::chrono::steady_clock::now();
    sem.async_acquire_for(1, 1ms, [](error_code) {});
    const auto after_call = std::chrono::steady_clock::now();
    io.run();
    const auto s = h.snapshot();
    BOOST_TEST(s.queued == 3u);
    BOOST_TEST(s.count == 3u);
    BOOST_TEST(s.granted == 2u);
    BOOST_TEST(s.timed_out == 1u);
    BOOST_TEST(std::accumulate(s.buckets.begin(), s.buckets.end(), std::uint64_t(0)) == s.count);
    // The timed-out wait: its deadline is 1 ms after a moment within the call, and its wait is
    // counted from its queueing, also within the call.
    BOOST_TEST((s.sum >= 1ms - (after_call - before_call)));
}

// Reports from several threads at once are all counted.
BOOST_AUTO_TEST_CASE(reports_from_threads_are_all_counted)
{
    constexpr int per_thread = 20000;
    wait_histogram h({1us});
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&h, t] {
            for (int i = 0; i < per_thread; ++i)
            {
                h.on_queued();
                h.on_finished(t % 2 ? wait_outcome::granted : wait_outcome::cancelled, (i % 2) * 1ms);
            }
        });
    for (auto& t : threads)
        t.join();
    const auto s = h.snapshot();
    BOOST_TEST(s.queued == 4u * per_thread);
    BOOST_TEST(s.count == 4u * per_thread);
    BOOST_TEST(s.granted == 2u * per_thread);
    BOOST_TEST(s.cancelled == 2u * per_thread);
    BOOST_TEST((s.buckets == std::vector<std::uint64_t>{2u * per_thread, 2u * per_thread}));
    BOOST_TEST((s.sum == 2 * per_thread * 1ms));
}

BOOST_AUTO_TEST_SUITE_END()
