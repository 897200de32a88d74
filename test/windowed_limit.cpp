// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#define BOOST_TEST_MODULE windowed_limit
#include <asio_sync/windowed_limit.hpp>

#include <asio_sync/adaptive_limiter.hpp>
#include <asio_sync/aimd_limit.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cstddef>
#include <memory>
#include <stdexcept>
#include <vector>

namespace {

using asio_sync::limit_sample;
using asio_sync::window_aggregate;
using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::nanoseconds;

double in_ms(nanoseconds d)
{
    return std::chrono::duration<double, std::milli>(d).count();
}

// The clock of the windows, moved by the script.
struct scripted_clock
{
    using duration = nanoseconds;
    using rep = duration::rep;
    using period = duration::period;
    using time_point = std::chrono::time_point<scripted_clock>;

    static time_point now() noexcept { return current; }

    static inline time_point current{};
};

// An algorithm that records the samples the windows give it.
struct recording_limit
{
    std::shared_ptr<std::vector<limit_sample>> seen = std::make_shared<std::vector<limit_sample>>();

    std::size_t limit() const noexcept { return 10; }
    std::size_t min_limit() const noexcept { return 1; }
    std::size_t max_limit() const noexcept { return 100; }
    void on_sample(const limit_sample& s) noexcept { seen->push_back(s); }
};

using windowed = asio_sync::windowed_limit<recording_limit, scripted_clock>;

// A window of 100 ms to 1 s, of at least 3 samples, that counts every latency.
template <class Windowed = windowed>
typename Windowed::options script()
{
    typename Windowed::options o;
    o.min_window = milliseconds(100);
    o.max_window = milliseconds(1000);
    o.window_size = 3;
    o.min_latency = nanoseconds(0);
    return o;
}

// Sets the clock to `at` (milliseconds from the start) and gives the window a sample.
template <class Windowed>
void sample_at(Windowed& w, long at, nanoseconds latency, std::size_t in_flight, bool dropped = false)
{
    scripted_clock::current = scripted_clock::time_point(milliseconds(at));
    w.on_sample({latency, in_flight, dropped});
}

} // namespace

BOOST_AUTO_TEST_SUITE(windowed_limit_tests)

BOOST_AUTO_TEST_CASE(defaults_are_named)
{
    const windowed::options o;
    BOOST_TEST(in_ms(o.min_window) == 50.0);
    BOOST_TEST(in_ms(o.max_window) == 1000.0);
    BOOST_TEST(o.window_size == 10u);
    BOOST_TEST((o.min_latency == microseconds(100)));
    BOOST_TEST((o.aggregate == window_aggregate::average));
    const windowed w{recording_limit()};
    BOOST_TEST(w.limit() == 10u);
    BOOST_TEST(w.min_limit() == 1u);
    BOOST_TEST(w.max_limit() == 100u);
}

BOOST_AUTO_TEST_CASE(a_window_is_its_mean_its_most_in_flight_and_any_drop)
{
    recording_limit inner;
    windowed w(inner, script());
    sample_at(w, 0, milliseconds(10), 4);
    sample_at(w, 50, milliseconds(20), 9, true);
    sample_at(w, 99, milliseconds(30), 2); // 3 samples, but the window is 99 ms old
    BOOST_TEST(inner.seen->empty());
    sample_at(w, 100, milliseconds(40), 5); // 100 ms: the window closes with this sample
    BOOST_TEST_REQUIRE(inner.seen->size() == 1u);
    BOOST_TEST(in_ms((*inner.seen)[0].latency) == 25.0);
    BOOST_TEST((*inner.seen)[0].in_flight == 9u);
    BOOST_TEST((*inner.seen)[0].dropped);

    // The next window opens with its first sample, and a window without a drop is a success.
    sample_at(w, 150, milliseconds(2), 1);
    sample_at(w, 200, milliseconds(4), 1);
    sample_at(w, 250, milliseconds(6), 3);
    BOOST_TEST_REQUIRE(inner.seen->size() == 2u);
    BOOST_TEST(in_ms((*inner.seen)[1].latency) == 4.0);
    BOOST_TEST((*inner.seen)[1].in_flight == 3u);
    BOOST_TEST(!(*inner.seen)[1].dropped);
}

BOOST_AUTO_TEST_CASE(a_window_waits_for_window_size_samples)
{
    recording_limit inner;
    windowed w(inner, script());
    sample_at(w, 0, milliseconds(10), 1);
    sample_at(w, 5000, milliseconds(10), 1); // long past max_window, but 2 samples of 3
    BOOST_TEST(inner.seen->empty());
    sample_at(w, 5001, milliseconds(40), 1);
    BOOST_TEST_REQUIRE(inner.seen->size() == 1u);
    BOOST_TEST(in_ms((*inner.seen)[0].latency) == 20.0);
}

// The next window lasts twice the smallest latency of the last one, within [min, max].
BOOST_AUTO_TEST_CASE(the_window_length_follows_the_smallest_latency)
{
    recording_limit inner;
    windowed w(inner, script());
    for (long at : {0, 1, 100})
        sample_at(w, at, milliseconds(300), 1); // smallest 300 ms: the next window is 600 ms
    BOOST_TEST_REQUIRE(inner.seen->size() == 1u);
    for (long at : {200, 300, 799})
        sample_at(w, at, milliseconds(700), 1);
    BOOST_TEST(inner.seen->size() == 1u);
    sample_at(w, 800, milliseconds(700), 1); // 600 ms after it opened; smallest 700: at most 1 s next
    BOOST_TEST_REQUIRE(inner.seen->size() == 2u);
    for (long at : {900, 1000, 1899})
        sample_at(w, at, milliseconds(1), 1);
    BOOST_TEST(inner.seen->size() == 2u);
    sample_at(w, 1900, milliseconds(1), 1); // 1 s; smallest 1 ms: the floor of 100 ms next
    BOOST_TEST_REQUIRE(inner.seen->size() == 3u);
    for (long at : {2000, 2050, 2100})
        sample_at(w, at, milliseconds(1), 1);
    BOOST_TEST(inner.seen->size() == 4u);
}

BOOST_AUTO_TEST_CASE(samples_faster_than_min_latency_are_left_out)
{
    recording_limit inner;
    windowed::options o = script();
    o.min_latency = milliseconds(1);
    windowed w(inner, o);
    sample_at(w, 0, milliseconds(4), 1);
    sample_at(w, 50, microseconds(999), 50, true); // left out, drop and in-flight count included
    sample_at(w, 100, milliseconds(6), 2);
    BOOST_TEST(inner.seen->empty());
    sample_at(w, 150, milliseconds(8), 3);
    BOOST_TEST_REQUIRE(inner.seen->size() == 1u);
    BOOST_TEST(in_ms((*inner.seen)[0].latency) == 6.0);
    BOOST_TEST((*inner.seen)[0].in_flight == 3u);
    BOOST_TEST(!(*inner.seen)[0].dropped);
}

// The nearest rank: the smallest latency with at least `percentile` of the window at or below.
BOOST_AUTO_TEST_CASE(a_percentile_window_takes_the_nearest_rank)
{
    recording_limit inner;
    windowed::options o = script();
    o.aggregate = window_aggregate::percentile;
    o.percentile = 0.9;
    windowed w(inner, o);
    for (long ms : {7, 3, 9, 1, 5, 10, 2, 8, 4})
        sample_at(w, 0, milliseconds(ms), 1);
    sample_at(w, 100, milliseconds(6), 1);
    BOOST_TEST_REQUIRE(inner.seen->size() == 1u);
    BOOST_TEST(in_ms((*inner.seen)[0].latency) == 9.0);

    o.percentile = 0.5;
    o.percentile_capacity = 4;
    windowed median(inner, o);
    for (long ms : {40, 10, 30, 20})
        sample_at(median, 0, milliseconds(ms), 1);
    sample_at(median, 100, milliseconds(1000), 1); // the buffer is full: not in the median
    BOOST_TEST_REQUIRE(inner.seen->size() == 2u);
    BOOST_TEST(in_ms((*inner.seen)[1].latency) == 20.0);
}

BOOST_AUTO_TEST_CASE(a_drop_in_a_window_backs_the_algorithm_off_once)
{
    asio_sync::aimd_limit::options a;
    a.initial_limit = 20;
    a.min_limit = 1;
    using windowed_aimd = asio_sync::windowed_limit<asio_sync::aimd_limit, scripted_clock>;
    windowed_aimd w(asio_sync::aimd_limit(a), script<windowed_aimd>());
    sample_at(w, 0, milliseconds(1), 20, true);
    sample_at(w, 10, milliseconds(1), 20, true);
    sample_at(w, 100, milliseconds(1), 20);
    BOOST_TEST(w.limit() == 18u); // one window, one drop: 20 * 0.9
    BOOST_TEST(w.algorithm().limit() == 18u);
}

BOOST_AUTO_TEST_CASE(invalid_options_are_refused)
{
    windowed::options o = script();
    o.min_window = milliseconds(2000);
    BOOST_CHECK_THROW(windowed(recording_limit(), o), std::invalid_argument);
    o = script();
    o.min_window = milliseconds(-1);
    BOOST_CHECK_THROW(windowed(recording_limit(), o), std::invalid_argument);
    o = script();
    o.window_size = 0;
    BOOST_CHECK_THROW(windowed(recording_limit(), o), std::invalid_argument);
    o = script();
    o.aggregate = window_aggregate::percentile;
    o.percentile = 0;
    BOOST_CHECK_THROW(windowed(recording_limit(), o), std::invalid_argument);
    o.percentile = 1;
    o.percentile_capacity = 0;
    BOOST_CHECK_THROW(windowed(recording_limit(), o), std::invalid_argument);
}

// The limiter takes a windowed algorithm as it takes any other.
BOOST_AUTO_TEST_CASE(the_limiter_takes_a_windowed_algorithm)
{
    boost::asio::io_context io;
    recording_limit inner;
    asio_sync::basic_adaptive_limiter<boost::asio::io_context::executor_type> limiter(
        io.get_executor(), asio_sync::windowed_limit<recording_limit>(inner));
    BOOST_TEST(limiter.limit() == 10u);
    auto permit = limiter.try_acquire();
    BOOST_TEST_REQUIRE(permit.has_value());
    permit->success(milliseconds(1));
    BOOST_TEST(inner.seen->empty()); // one sample of the 10 of a window
}

BOOST_AUTO_TEST_SUITE_END()
