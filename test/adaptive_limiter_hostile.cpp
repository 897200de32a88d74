// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

// Attacks on asio_sync::adaptive_limiter and its limit algorithms from their documented promises
// (docs/adaptive.md, the public headers): extreme samples and options, permits returned from many
// threads while acquires, cancellations and timeouts run, the listener, multi-permit acquires.

#define BOOST_TEST_MODULE adaptive_limiter_hostile
#include <asio_sync/adaptive_limiter.hpp>
#include <asio_sync/aimd_limit.hpp>
#include <asio_sync/error.hpp>
#include <asio_sync/gradient2_limit.hpp>
#include <asio_sync/vegas_limit.hpp>
#include <asio_sync/windowed_limit.hpp>

#include <support/counting_allocator.hpp>
#include <support/io_steps.hpp>
#include <support/replaced_new.hpp>

#include <boost/asio/bind_allocator.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/system/error_code.hpp>
#include <boost/test/unit_test.hpp>

#if defined(BOOST_ASIO_HAS_CO_AWAIT)
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>
#endif

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <future>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

namespace {

const asio_sync::test::operator_new_hook counting_operator_new(&asio_sync::test::count_operator_new);

namespace asio = boost::asio;
using asio_sync::adaptive_limiter;
using asio_sync::aimd_limit;
using asio_sync::gradient2_limit;
using asio_sync::limit_reason;
using asio_sync::limit_sample;
using asio_sync::vegas_limit;
using asio_sync::windowed_limit;
using asio_sync::test::poll;
using boost::system::error_code;
using std::chrono::nanoseconds;
using permit = adaptive_limiter::permit;

constexpr double not_a_number = std::numeric_limits<double>::quiet_NaN();
constexpr double infinite = std::numeric_limits<double>::infinity();

// Samples no algorithm expects: zero, negative, the largest latencies (up to `largest` either
// side), huge and zero in-flight counts, drops; in an order that drives the limit both ways.
std::vector<limit_sample> extreme_samples(nanoseconds largest = nanoseconds::max())
{
    std::vector<limit_sample> out;
    const nanoseconds latencies[] = {nanoseconds(0),
                                     nanoseconds(-1),
                                     -largest,
                                     largest,
                                     nanoseconds(1),
                                     largest / 2,
                                     std::chrono::milliseconds(1)};
    const std::size_t in_flights[] = {0, 1, 1000, std::numeric_limits<std::size_t>::max()};
    for (int round = 0; round < 50; ++round)
        for (const auto latency : latencies)
            for (const auto in_flight : in_flights)
                for (const bool dropped : {false, true})
                    out.push_back({latency, in_flight, dropped});
    return out;
}

// Feeds `algorithm` every extreme sample and checks after each that the limit is in its bounds.
template <class Algorithm>
void check_bounds(Algorithm algorithm, std::size_t floor, std::size_t ceiling,
                  nanoseconds largest = nanoseconds::max())
{
    std::size_t outside = 0;
    for (const auto& s : extreme_samples(largest))
    {
        algorithm.on_sample(s);
        if (algorithm.limit() < floor || algorithm.limit() > ceiling)
            ++outside;
    }
    BOOST_TEST(outside == 0u);
}

// Runs `f` on a thread of its own and waits at most 10 s for it: a deadlock is a failed check,
// not a hung test (the thread is then left behind, and the process ends with the test run).
template <class F>
bool finishes(F f)
{
    auto task = std::make_shared<std::packaged_task<void()>>(std::move(f));
    auto done = task->get_future();
    std::thread([task] { (*task)(); }).detach();
    return done.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
}

// An algorithm whose limit the test sets, through a shared cell, before each sample.
struct settable_limit
{
    std::shared_ptr<std::atomic<std::size_t>> next;
    std::size_t current;
    std::size_t ceiling;

    std::size_t limit() const noexcept { return current; }
    std::size_t min_limit() const noexcept { return 1; }
    std::size_t max_limit() const noexcept { return ceiling; }
    void on_sample(const limit_sample&) noexcept { current = next->load(); }
};

struct change
{
    std::size_t old_limit;
    std::size_t new_limit;
    limit_reason reason;
};

// A clock the test moves by hand.
struct manual_clock
{
    using rep = std::int64_t;
    using period = std::nano;
    using duration = nanoseconds;
    using time_point = std::chrono::time_point<manual_clock>;
    static inline time_point current{};
    static time_point now() noexcept { return current; }
    static void at(std::chrono::milliseconds t) { current = time_point(t); }
};

// An algorithm that records what it learns and keeps its limit.
struct recording_limit
{
    std::shared_ptr<std::vector<limit_sample>> seen = std::make_shared<std::vector<limit_sample>>();
    std::size_t limit() const noexcept { return 5; }
    std::size_t min_limit() const noexcept { return 1; }
    std::size_t max_limit() const noexcept { return 10; }
    void on_sample(const limit_sample& s) noexcept { seen->push_back(s); }
};

// The options of windows of no length that close on their `samples`-th sample.
template <class Window>
typename Window::options windows_of(std::size_t samples)
{
    typename Window::options o;
    o.min_window = o.max_window = nanoseconds(0);
    o.window_size = samples;
    return o;
}

using ms = std::chrono::milliseconds;
using windowed_recorder = windowed_limit<recording_limit, manual_clock>;

} // namespace

BOOST_AUTO_TEST_SUITE(adaptive_limiter_hostile)

// --- Options validation: "a floor of 0, or min_limit above max_limit, is std::invalid_argument".

BOOST_AUTO_TEST_CASE(a_floor_of_zero_or_above_the_ceiling_is_refused_by_every_algorithm)
{
    vegas_limit::options v;
    v.min_limit = 0;
    BOOST_CHECK_THROW(vegas_limit{v}, std::invalid_argument);
    v.min_limit = 11;
    v.max_limit = 10;
    BOOST_CHECK_THROW(vegas_limit{v}, std::invalid_argument);
    gradient2_limit::options g;
    g.min_limit = 0;
    BOOST_CHECK_THROW(gradient2_limit{g}, std::invalid_argument);
    g.min_limit = 11;
    g.max_limit = 10;
    BOOST_CHECK_THROW(gradient2_limit{g}, std::invalid_argument);
    aimd_limit::options a;
    a.min_limit = 0;
    BOOST_CHECK_THROW(aimd_limit{a}, std::invalid_argument);
    a.min_limit = 11;
    a.max_limit = 10;
    BOOST_CHECK_THROW(aimd_limit{a}, std::invalid_argument);
    // A floor equal to the ceiling is a fixed limit, not an error.
    a.min_limit = a.max_limit = a.initial_limit = 10;
    BOOST_TEST(aimd_limit{a}.limit() == 10u);
}

BOOST_AUTO_TEST_CASE(windows_of_zero_samples_or_inverted_lengths_are_refused)
{
    using windowed = windowed_limit<aimd_limit>;
    windowed::options o;
    o.window_size = 0;
    BOOST_CHECK_THROW(windowed(aimd_limit(), o), std::invalid_argument);
    o = {};
    o.min_window = std::chrono::seconds(2);
    BOOST_CHECK_THROW(windowed(aimd_limit(), o), std::invalid_argument);
    o = {};
    o.min_window = nanoseconds(-1);
    BOOST_CHECK_THROW(windowed(aimd_limit(), o), std::invalid_argument);
    o = {};
    o.aggregate = asio_sync::window_aggregate::percentile;
    for (const double p : {0.0, -0.5, 1.5, not_a_number})
    {
        o.percentile = p;
        BOOST_CHECK_THROW(windowed(aimd_limit(), o), std::invalid_argument);
    }
    o.percentile = 0.5;
    o.percentile_capacity = 0;
    BOOST_CHECK_THROW(windowed(aimd_limit(), o), std::invalid_argument);
    // A window of no length is allowed: it closes on its window_size-th sample.
    o = {};
    o.min_window = o.max_window = nanoseconds(0);
    BOOST_CHECK_NO_THROW(windowed(aimd_limit(), o));
}

BOOST_AUTO_TEST_CASE(out_of_range_smoothing_ratios_and_tolerances_are_refused)
{
    for (const double s : {0.0, -1.0, 1.5, not_a_number, infinite})
    {
        vegas_limit::options v;
        v.smoothing = s;
        BOOST_CHECK_THROW(vegas_limit{v}, std::invalid_argument);
        gradient2_limit::options g;
        g.smoothing = s;
        BOOST_CHECK_THROW(gradient2_limit{g}, std::invalid_argument);
    }
    for (const double r : {0.49, 1.0, not_a_number})
    {
        aimd_limit::options a;
        a.backoff_ratio = r;
        BOOST_CHECK_THROW(aimd_limit{a}, std::invalid_argument);
    }
    aimd_limit::options a;
    a.timeout = nanoseconds(0);
    BOOST_CHECK_THROW(aimd_limit{a}, std::invalid_argument);
    gradient2_limit::options g;
    g.rtt_tolerance = 0.99;
    BOOST_CHECK_THROW(gradient2_limit{g}, std::invalid_argument);
    g = {};
    g.queue_fraction = -0.1;
    BOOST_CHECK_THROW(gradient2_limit{g}, std::invalid_argument);
    g = {};
    g.long_window = 0;
    BOOST_CHECK_THROW(gradient2_limit{g}, std::invalid_argument);
}

// --- "every algorithm has a floor and a ceiling ... and the limit never leaves them".

BOOST_AUTO_TEST_CASE(vegas_stays_within_its_bounds_whatever_the_samples)
{
    vegas_limit::options o;
    o.min_limit = 3;
    o.max_limit = 40;
    check_bounds(vegas_limit(o), 3, 40);
    o.smoothing = 0.1;
    o.probe_multiplier = 0.01;
    check_bounds(vegas_limit(o), 3, 40);
}

BOOST_AUTO_TEST_CASE(gradient2_stays_within_its_bounds_whatever_the_samples)
{
    gradient2_limit::options o;
    o.min_limit = 3;
    o.max_limit = 40;
    check_bounds(gradient2_limit(o), 3, 40);
    o.long_window = 1;
    o.smoothing = 1;
    o.queue_fraction = 1e300;
    check_bounds(gradient2_limit(o), 3, 40);
}

BOOST_AUTO_TEST_CASE(aimd_stays_within_its_bounds_whatever_the_samples)
{
    aimd_limit::options o;
    o.min_limit = 3;
    o.max_limit = 40;
    o.timeout = nanoseconds(1);
    check_bounds(aimd_limit(o), 3, 40);
}

BOOST_AUTO_TEST_CASE(a_window_stays_within_its_algorithms_bounds_whatever_the_samples)
{
    // Latencies whose sums in a window of 2 do not overflow (the overflow has tests of its own).
    const nanoseconds largest = nanoseconds::max() / 4;
    auto w = windows_of<windowed_limit<gradient2_limit>>(2);
    w.min_latency = nanoseconds(0); // the least allowed: every sample of at least 0 is counted
    gradient2_limit::options g;
    g.min_limit = 3;
    g.max_limit = 40;
    check_bounds(windowed_limit<gradient2_limit>(gradient2_limit(g), w), 3, 40, largest);
    vegas_limit::options v;
    v.min_limit = 3;
    v.max_limit = 40;
    auto wv = windows_of<windowed_limit<vegas_limit>>(2);
    wv.min_latency = nanoseconds(0);
    check_bounds(windowed_limit<vegas_limit>(vegas_limit(v), wv), 3, 40, largest);
    w.aggregate = asio_sync::window_aggregate::percentile;
    w.percentile = 1;
    w.percentile_capacity = 1;
    check_bounds(windowed_limit<gradient2_limit>(gradient2_limit(g), w), 3, 40, largest);
}

// Failed before its fix: a NaN queue_size is accepted (the constructor checks rtt_tolerance and
// queue_fraction against NaN, not queue_size), the limit becomes NaN, and limit() converts NaN to an integer
// (undefined behaviour; 9223372036854775808 on x86-64), far above max_limit.
BOOST_AUTO_TEST_CASE(gradient2_accepts_no_option_that_takes_the_limit_out_of_its_bounds)
{
    for (int which = 0; which < 3; ++which)
    {
        gradient2_limit::options o;
        o.min_limit = 3;
        o.max_limit = 40;
        (which == 0 ? o.rtt_tolerance : which == 1 ? o.queue_size : o.queue_fraction) = not_a_number;
        try
        {
            gradient2_limit g(o);
            for (int i = 0; i < 20; ++i)
                g.on_sample({std::chrono::milliseconds(1), 40, false});
            BOOST_TEST((g.limit() >= 3u && g.limit() <= 40u), "option " << which << ": limit " << g.limit());
        }
        catch (const std::invalid_argument&)
        {
        }
    }
}

// Failed before its fix: a NaN beta is accepted (the constructor checks the smoothing alone), the limit
// becomes NaN at the first sample with a small queue, and limit() converts NaN to an integer (undefined
// behaviour; 9223372036854775808 on x86-64), far above max_limit. A NaN alpha or probe_multiplier
// only stops growth or probing.
BOOST_AUTO_TEST_CASE(vegas_accepts_no_option_that_takes_the_limit_out_of_its_bounds)
{
    for (int which = 0; which < 3; ++which)
    {
        vegas_limit::options o;
        o.min_limit = 3;
        o.max_limit = 40;
        (which == 0 ? o.alpha : which == 1 ? o.beta : o.probe_multiplier) = not_a_number;
        try
        {
            vegas_limit v(o);
            for (int i = 0; i < 200; ++i)
                v.on_sample({std::chrono::milliseconds(1 + i % 5), 40, i % 7 == 0});
            BOOST_TEST((v.limit() >= 3u && v.limit() <= 40u), "option " << which << ": limit " << v.limit());
        }
        catch (const std::invalid_argument&)
        {
        }
    }
}

// --- Permits.

BOOST_AUTO_TEST_CASE(a_permit_reports_once_and_a_moved_from_permit_holds_nothing)
{
    asio::io_context io;
    auto next = std::make_shared<std::atomic<std::size_t>>(4);
    adaptive_limiter limiter(io, settable_limit{next, 4, 10});
    std::vector<change> changes;
    limiter.set_listener([&](std::size_t o, std::size_t n, limit_reason r) { changes.push_back({o, n, r}); });

    auto p = limiter.try_acquire(2);
    BOOST_TEST_REQUIRE(p.has_value());
    permit q = std::move(*p);
    BOOST_TEST(p->count() == 0u);
    BOOST_TEST(!*p);
    next->store(6);
    p->success(); // holds nothing: no sample
    p->dropped();
    BOOST_TEST(limiter.limit() == 4u);
    BOOST_TEST(limiter.available() == 2u);
    q.success();
    BOOST_TEST(limiter.limit() == 6u);
    BOOST_TEST(limiter.available() == 6u);
    next->store(2);
    q.dropped(); // already reported
    q.success();
    q.ignore();
    BOOST_TEST(limiter.limit() == 6u);
    BOOST_TEST(limiter.available() == 6u);
    BOOST_TEST_REQUIRE(changes.size() == 1u);
    BOOST_TEST(changes[0].old_limit == 4u);
    BOOST_TEST(changes[0].new_limit == 6u);
    BOOST_TEST((changes[0].reason == limit_reason::success));

    // Move-assigning over a held permit ignores it: no sample, the permits come back.
    auto a = limiter.try_acquire(1);
    auto b = limiter.try_acquire(2);
    BOOST_TEST_REQUIRE((a && b));
    *a = std::move(*b);
    BOOST_TEST(a->count() == 2u);
    BOOST_TEST(limiter.available() == 4u);
    *a = std::move(*a);
    BOOST_TEST(a->count() == 2u);
    a.reset();
    b.reset();
    BOOST_TEST(limiter.available() == 6u);
    BOOST_TEST(changes.size() == 1u);
}

BOOST_AUTO_TEST_CASE(the_listener_is_not_called_when_the_algorithm_keeps_the_limit)
{
    asio::io_context io;
    auto next = std::make_shared<std::atomic<std::size_t>>(4);
    adaptive_limiter limiter(io, settable_limit{next, 4, 10});
    std::size_t calls = 0;
    limiter.set_listener([&](std::size_t o, std::size_t n, limit_reason) {
        ++calls;
        BOOST_TEST(o != n);
    });
    for (int i = 0; i < 5; ++i)
    {
        auto p = limiter.try_acquire();
        BOOST_TEST_REQUIRE(p.has_value());
        i % 2 ? p->success() : p->dropped();
    }
    BOOST_TEST(calls == 0u);
}

BOOST_AUTO_TEST_CASE(the_listener_may_use_the_limiter_and_return_permits_itself)
{
    asio::io_context io;
    auto next = std::make_shared<std::atomic<std::size_t>>(4);
    adaptive_limiter limiter(io, settable_limit{next, 4, 10});
    std::vector<change> changes;
    int depth = 0;
    limiter.set_listener([&](std::size_t o, std::size_t n, limit_reason r) {
        changes.push_back({o, n, r});
        BOOST_TEST(limiter.limit() == n);
        if (depth++ == 0)
        {
            // A nested return that moves the limit again: a return from inside the listener.
            auto inner = limiter.try_acquire();
            BOOST_TEST_REQUIRE(inner.has_value());
            next->store(3);
            inner->dropped();
        }
    });
    const bool done = finishes([&] {
        auto p = limiter.try_acquire();
        next->store(8);
        p->success();
    });
    BOOST_TEST_REQUIRE(done, "a return from inside the listener deadlocked");
    BOOST_TEST_REQUIRE(changes.size() == 2u);
    BOOST_TEST((changes[0].old_limit == 4u && changes[0].new_limit == 8u));
    BOOST_TEST((changes[1].old_limit == 8u && changes[1].new_limit == 3u));
    BOOST_TEST((changes[1].reason == limit_reason::dropped));
    BOOST_TEST(limiter.limit() == 3u);
    BOOST_TEST(limiter.available() == 3u);
}

// --- Acquires.

BOOST_AUTO_TEST_CASE(no_acquire_completes_inside_its_initiating_call)
{
    asio::io_context io;
    auto next = std::make_shared<std::atomic<std::size_t>>(4);
    adaptive_limiter limiter(io, settable_limit{next, 4, 10});
    std::vector<error_code> results;
    std::vector<std::size_t> counts;
    auto handler = [&](error_code ec, permit p) {
        results.push_back(ec);
        counts.push_back(p.count());
    };
    limiter.async_acquire(1, handler);                     // granted at once
    limiter.async_acquire(0, handler);                     // empty
    limiter.async_acquire(11, handler);                    // above the ceiling
    limiter.async_acquire_for(1, nanoseconds(0), handler); // granted at once, though no time
    BOOST_TEST(results.empty());
    poll(io);
    BOOST_TEST_REQUIRE(results.size() == 4u);
    BOOST_TEST(!results[0]);
    BOOST_TEST(counts[0] == 1u);
    BOOST_TEST(!results[1]);
    BOOST_TEST(counts[1] == 0u);
    BOOST_TEST((results[2] == asio_sync::error::too_many_permits));
    BOOST_TEST(counts[2] == 0u);
    BOOST_TEST(!results[3]);
    BOOST_TEST(limiter.available() == 4u); // the handlers' permits were destroyed: all back
    BOOST_TEST(limiter.waiting() == 0u);
}

BOOST_AUTO_TEST_CASE(an_acquire_above_the_limit_queues_in_fifo_order_and_grows_with_the_limit)
{
    asio::io_context io;
    auto next = std::make_shared<std::atomic<std::size_t>>(2);
    adaptive_limiter limiter(io, settable_limit{next, 2, 10});
    auto held = limiter.try_acquire();
    BOOST_TEST_REQUIRE(held.has_value());
    std::optional<permit> big, small;
    error_code big_ec, small_ec;
    limiter.async_acquire(3, [&](error_code ec, permit p) {
        big_ec = ec;
        big.emplace(std::move(p));
    });
    limiter.async_acquire(1, [&](error_code ec, permit p) {
        small_ec = ec;
        small.emplace(std::move(p));
    });
    poll(io);
    BOOST_TEST((!big && !small)); // one permit is free, but the first in line wants 3
    BOOST_TEST(!limiter.try_acquire().has_value());
    BOOST_TEST(limiter.waiting() == 2u);
    next->store(3);
    held->success();
    poll(io);
    BOOST_TEST_REQUIRE(big.has_value());
    BOOST_TEST(big->count() == 3u);
    BOOST_TEST(!small.has_value());
    // The limit falls to 1 as the acquire of 3 gives back: the next in line gets the one permit left.
    next->store(1);
    big->dropped();
    poll(io);
    BOOST_TEST_REQUIRE(small.has_value());
    BOOST_TEST(small->count() == 1u);
    BOOST_TEST(limiter.limit() == 1u);
    BOOST_TEST(limiter.available() == 0u);
    small.reset();
    BOOST_TEST(limiter.available() == 1u);
}

BOOST_AUTO_TEST_CASE(an_acquire_the_fallen_limit_no_longer_admits_times_out_and_frees_the_line)
{
    asio::io_context io;
    auto next = std::make_shared<std::atomic<std::size_t>>(4);
    adaptive_limiter limiter(io, settable_limit{next, 4, 10});
    auto held = limiter.try_acquire(4);
    BOOST_TEST_REQUIRE(held.has_value());
    error_code big_ec;
    bool big_done = false;
    std::optional<permit> small;
    limiter.async_acquire_for(4, std::chrono::milliseconds(20), [&](error_code ec, permit p) {
        big_done = true;
        big_ec = ec;
        BOOST_TEST(p.count() == 0u);
    });
    limiter.async_acquire(1, [&](error_code, permit p) { small.emplace(std::move(p)); });
    next->store(2);
    held->dropped(); // the limit falls to 2: the acquire of 4 can no longer be served
    poll(io);
    BOOST_TEST(!big_done);
    BOOST_TEST(!small.has_value());
    asio_sync::test::run(io); // bounded: the timer of 20 ms ends the wait
    BOOST_TEST(big_done);
    BOOST_TEST((big_ec == asio_sync::error::timed_out));
    BOOST_TEST_REQUIRE(small.has_value());
    BOOST_TEST(small->count() == 1u);
    small.reset();
    BOOST_TEST(limiter.available() == 2u);
    BOOST_TEST(limiter.limit() == 2u);
}

// "A wait decided at once allocates nothing of its own. A wait that has to queue allocates one
// operation object with the handler's associated allocator". The submission "as if by
// boost::asio::post" allocates too, through the same allocator (Asio's, not the wait's own).
BOOST_AUTO_TEST_CASE(a_queued_acquire_allocates_one_operation_with_its_handlers_allocator)
{
    asio::io_context io;
    auto next = std::make_shared<std::atomic<std::size_t>>(1);
    adaptive_limiter limiter(io, settable_limit{next, 1, 10});
    asio_sync::test::allocation_counts counts;
    asio_sync::test::counting_allocator<void> alloc(counts);
    std::optional<permit> first, second;
    limiter.async_acquire(
        asio::bind_allocator(alloc, [&](error_code, permit p) { first.emplace(std::move(p)); }));
    const std::size_t at_once = counts.allocations.load(); // the post's
    BOOST_TEST(at_once <= 1u);
    limiter.async_acquire(
        asio::bind_allocator(alloc, [&](error_code, permit p) { second.emplace(std::move(p)); }));
    BOOST_TEST(counts.allocations.load() == at_once + 1);
    poll(io);
    BOOST_TEST_REQUIRE(first.has_value());
    first->success();
    poll(io);
    BOOST_TEST_REQUIRE(second.has_value());
    BOOST_TEST(counts.allocations.load() == 2 * at_once + 1);
    BOOST_TEST(counts.deallocations.load() == counts.allocations.load());
}

BOOST_AUTO_TEST_CASE(a_deferred_acquire_starts_when_launched_and_a_future_one_completes)
{
    asio::io_context io;
    auto next = std::make_shared<std::atomic<std::size_t>>(1);
    adaptive_limiter limiter(io, settable_limit{next, 1, 10});
    auto op = limiter.async_acquire(asio::deferred);
    BOOST_TEST(limiter.available() == 1u); // nothing started
    std::optional<permit> got;
    std::move(op)([&](error_code, permit p) { got.emplace(std::move(p)); });
    BOOST_TEST(limiter.available() == 0u);
    poll(io);
    BOOST_TEST_REQUIRE(got.has_value());
    auto f = limiter.async_acquire(asio::use_future);
    got.reset();
    poll(io);
    BOOST_TEST_REQUIRE((f.wait_for(std::chrono::seconds(10)) == std::future_status::ready));
    permit p = f.get();
    BOOST_TEST(p.count() == 1u);
}

// "How many permits were held, this one's included, when it was granted".
BOOST_AUTO_TEST_CASE(a_sample_counts_the_permits_in_flight_at_its_grant)
{
    struct recorder
    {
        std::shared_ptr<std::vector<limit_sample>> seen;
        std::size_t limit() const noexcept { return 6; }
        std::size_t min_limit() const noexcept { return 1; }
        std::size_t max_limit() const noexcept { return 6; }
        void on_sample(const limit_sample& s) noexcept { seen->push_back(s); }
    };
    asio::io_context io;
    auto seen = std::make_shared<std::vector<limit_sample>>();
    adaptive_limiter limiter(io, recorder{seen});
    auto a = limiter.try_acquire(2);
    auto b = limiter.try_acquire(3);
    std::optional<permit> c;
    limiter.async_acquire(1, [&](error_code, permit p) { c.emplace(std::move(p)); });
    poll(io);
    BOOST_TEST_REQUIRE((a && b && c));
    c->success(std::chrono::milliseconds(7));
    b->dropped();
    a->success();
    BOOST_TEST_REQUIRE(seen->size() == 3u);
    BOOST_TEST((*seen)[0].in_flight == 6u);
    BOOST_TEST(((*seen)[0].latency == std::chrono::milliseconds(7)));
    BOOST_TEST(!(*seen)[0].dropped);
    BOOST_TEST((*seen)[1].in_flight == 5u);
    BOOST_TEST((*seen)[1].dropped);
    BOOST_TEST((*seen)[2].in_flight == 2u);
    BOOST_TEST(((*seen)[2].latency >= nanoseconds(0)));
}

BOOST_AUTO_TEST_CASE(queued_acquires_are_aborted_when_the_limiter_is_destroyed)
{
    asio::io_context io;
    auto limiter = std::make_unique<adaptive_limiter>(io, aimd_limit()); // limit 20, ceiling 200
    bool done = false;
    error_code ec;
    std::size_t count = 99;
    limiter->async_acquire(30, [&](error_code e, permit p) {
        done = true;
        ec = e;
        count = p.count();
    });
    poll(io);
    BOOST_TEST(!done);
    limiter.reset();
    BOOST_TEST(!done); // posted
    poll(io);
    BOOST_TEST(done);
    BOOST_TEST((ec == asio::error::operation_aborted));
    BOOST_TEST(count == 0u);
}

// --- Many threads: permits returned with every outcome while acquires, timeouts, cancellations
// and cancel() run. Afterwards every permit is back and each listener call's values are exact.

BOOST_AUTO_TEST_CASE(permits_returned_from_many_threads_all_come_back)
{
    asio::thread_pool pool(2);
    aimd_limit::options o;
    o.min_limit = 1;
    o.max_limit = 8;
    o.initial_limit = 4;
    o.backoff_ratio = 0.5;
    adaptive_limiter limiter(pool.get_executor(), aimd_limit(o));
    std::mutex changes_mutex;
    std::vector<change> changes;
    limiter.set_listener([&](std::size_t from, std::size_t to, limit_reason r) {
        std::lock_guard<std::mutex> lock(changes_mutex);
        changes.push_back({from, to, r});
    });

    std::atomic<std::size_t> granted{0}, timed_out{0}, aborted{0}, other{0}, held_now{0}, held_most{0};
    std::atomic<bool> stop{false};
    constexpr int threads = 4, rounds = 300;
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t)
        workers.emplace_back([&, t] {
            for (int i = 0; i < rounds; ++i)
            {
                const std::size_t n = 1 + static_cast<std::size_t>((i + t) % 3);
                auto promise = std::make_shared<std::promise<std::pair<error_code, std::optional<permit>>>>();
                auto f = promise->get_future();
                const auto timeout = i % 2 ? std::chrono::microseconds(100) : std::chrono::microseconds(5000);
                limiter.async_acquire_for(n, timeout, [promise](error_code e, permit got) {
                    promise->set_value({e, std::optional<permit>(std::move(got))});
                });
                if (f.wait_for(std::chrono::seconds(10)) != std::future_status::ready)
                {
                    ++other;
                    return;
                }
                auto [ec, held] = f.get();
                permit& p = *held;
                if (ec == asio_sync::error::timed_out)
                    ++timed_out;
                else if (ec == asio::error::operation_aborted)
                    ++aborted;
                else if (ec || p.count() != n)
                    ++other;
                else
                {
                    ++granted;
                    const std::size_t now = held_now += n;
                    std::size_t most = held_most.load();
                    while (now > most && !held_most.compare_exchange_weak(most, now))
                    {
                    }
                    held_now -= n;
                    switch ((i + t) % 4)
                    {
                    case 0:
                        p.success();
                        break;
                    case 1:
                        p.dropped();
                        break;
                    case 2:
                        p.ignore();
                        break;
                    default:
                    {
                        permit moved = std::move(p);
                        moved.success(std::chrono::hours(1000000)); // a latency far above any timeout
                    }
                    }
                }
            }
        });
    std::thread canceller([&] {
        while (!stop.load())
        {
            limiter.cancel();
            std::this_thread::sleep_for(std::chrono::microseconds(500)); // leaves room for timeouts
        }
    });
    for (auto& w : workers)
        w.join();
    stop = true;
    canceller.join();
    pool.join();

    BOOST_TEST(other.load() == 0u);
    BOOST_TEST(granted + timed_out + aborted == std::size_t(threads * rounds));
    BOOST_TEST(held_most.load() <= 8u);
    BOOST_TEST(limiter.waiting() == 0u);
    BOOST_TEST(limiter.available() == limiter.limit(),
               "available " << limiter.available() << " limit " << limiter.limit());
    BOOST_TEST((limiter.limit() >= 1u && limiter.limit() <= 8u));
    auto all = limiter.try_acquire(limiter.limit());
    BOOST_TEST(all.has_value());
    long long moved = 0;
    for (const auto& c : changes)
        moved += static_cast<long long>(c.new_limit) - static_cast<long long>(c.old_limit);
    BOOST_TEST(moved == static_cast<long long>(limiter.limit()) - 4); // each change's values exact
    for (const auto& c : changes)
    {
        BOOST_TEST(c.old_limit != c.new_limit);
        BOOST_TEST((c.new_limit >= 1u && c.new_limit <= 8u));
    }
    BOOST_TEST_MESSAGE("granted " << granted << " timed out " << timed_out << " aborted " << aborted
                                  << " changes " << changes.size());
}

// --- Windows: "A window opens with its first sample and closes with the first sample that arrives
// at least clamp(2 * smallest latency of the previous window, min_window, max_window) after it
// opened, once it holds window_size samples."

BOOST_AUTO_TEST_CASE(a_window_closes_at_its_length_once_it_holds_window_size_samples)
{
    windowed_recorder::options o;
    o.min_window = ms(10);
    o.max_window = ms(100);
    o.window_size = 3;
    recording_limit r;
    windowed_recorder w(r, o);
    manual_clock::at(ms(1000));
    w.on_sample({ms(30), 2, false});
    manual_clock::at(ms(1001));
    w.on_sample({ms(20), 7, true});
    manual_clock::at(ms(1002));
    w.on_sample({ms(40), 1, false}); // three samples, but 2 ms of a 10 ms window
    BOOST_TEST(r.seen->empty());
    manual_clock::at(ms(1010));
    w.on_sample({ms(30), 3, false}); // exactly the window's length after it opened
    BOOST_TEST_REQUIRE(r.seen->size() == 1u);
    BOOST_TEST(((*r.seen)[0].latency == ms(30))); // (30 + 20 + 40 + 30) / 4
    BOOST_TEST((*r.seen)[0].in_flight == 7u);
    BOOST_TEST((*r.seen)[0].dropped);

    // The next window lasts 2 * 20 ms: it opens with its first sample.
    manual_clock::at(ms(2000));
    w.on_sample({ms(50), 1, false});
    manual_clock::at(ms(2001));
    w.on_sample({ms(50), 1, false});
    manual_clock::at(ms(2039));
    w.on_sample({ms(50), 1, false});
    BOOST_TEST(r.seen->size() == 1u);
    manual_clock::at(ms(2040));
    w.on_sample({ms(50), 1, false});
    BOOST_TEST_REQUIRE(r.seen->size() == 2u);
    BOOST_TEST(!(*r.seen)[1].dropped);
    BOOST_TEST((*r.seen)[1].in_flight == 1u);

    // The next lasts 2 * 50 ms = max_window; however long, it needs window_size samples.
    manual_clock::at(ms(3000));
    w.on_sample({ms(60), 1, false});
    manual_clock::at(ms(9000));
    w.on_sample({ms(60), 1, false});
    BOOST_TEST(r.seen->size() == 2u);
    w.on_sample({ms(60), 1, false});
    BOOST_TEST(r.seen->size() == 3u);
}

BOOST_AUTO_TEST_CASE(samples_faster_than_min_latency_neither_open_nor_fill_a_window)
{
    windowed_recorder::options o;
    o.min_window = o.max_window = ms(10);
    o.window_size = 2;
    o.min_latency = std::chrono::microseconds(100);
    recording_limit r;
    windowed_recorder w(r, o);
    manual_clock::at(ms(0));
    w.on_sample({std::chrono::microseconds(99), 9, true}); // left out: opens nothing
    manual_clock::at(ms(5));
    w.on_sample({std::chrono::microseconds(100), 1, false}); // not faster: opens at 5 ms
    manual_clock::at(ms(14));
    w.on_sample({nanoseconds(-5), 9, true});
    w.on_sample({ms(1), 1, false});
    BOOST_TEST(r.seen->empty());
    manual_clock::at(ms(15));
    w.on_sample({ms(1), 1, false});
    BOOST_TEST_REQUIRE(r.seen->size() == 1u);
    BOOST_TEST((*r.seen)[0].in_flight == 1u);
    BOOST_TEST(!(*r.seen)[0].dropped);
    BOOST_TEST(((*r.seen)[0].latency == nanoseconds((100000 + 1000000 + 1000000) / 3)));
}

BOOST_AUTO_TEST_CASE(a_percentile_window_takes_the_nearest_rank_of_the_latencies_it_kept)
{
    auto o = windows_of<windowed_recorder>(10);
    o.min_latency = nanoseconds(0);
    o.aggregate = asio_sync::window_aggregate::percentile;
    o.percentile = 0.9;
    recording_limit r;
    windowed_recorder w(r, o);
    for (int i = 10; i >= 1; --i)
        w.on_sample({ms(i), 1, false});
    o.percentile_capacity = 4;
    o.percentile = 1;
    windowed_recorder small(r, o);
    for (int i = 1; i <= 10; ++i)
        small.on_sample({ms(i == 3 ? 100 : i), static_cast<std::size_t>(i), i == 9});
    BOOST_TEST_REQUIRE(r.seen->size() == 2u);
    BOOST_TEST(((*r.seen)[0].latency == ms(9)));
    BOOST_TEST(((*r.seen)[1].latency == ms(100))); // the largest of the first 4 kept
    BOOST_TEST((*r.seen)[1].in_flight == 10u);     // later samples still count here
    BOOST_TEST((*r.seen)[1].dropped);
}

// "the reason a limit listener receives is the outcome of the permit that closed it, even when an
// earlier drop in the window moved it".
BOOST_AUTO_TEST_CASE(a_windows_change_carries_the_reason_of_the_permit_that_closed_it)
{
    asio::io_context io;
    aimd_limit::options a;
    a.min_limit = 1;
    a.max_limit = 10;
    a.initial_limit = 10;
    a.backoff_ratio = 0.5;
    auto o = windows_of<windowed_limit<aimd_limit>>(2);
    o.min_latency = nanoseconds(0);
    adaptive_limiter limiter(io, windowed_limit<aimd_limit>(aimd_limit(a), o));
    std::vector<change> changes;
    limiter.set_listener([&](std::size_t f, std::size_t t, limit_reason why) {
        changes.push_back({f, t, why});
    });
    auto p = limiter.try_acquire(1);
    auto q = limiter.try_acquire(1);
    BOOST_TEST_REQUIRE((p && q));
    p->dropped();
    BOOST_TEST(changes.empty());
    q->success(ms(1));
    BOOST_TEST_REQUIRE(changes.size() == 1u);
    BOOST_TEST(changes[0].old_limit == 10u);
    BOOST_TEST(changes[0].new_limit == 5u);
    BOOST_TEST((changes[0].reason == limit_reason::success));
    BOOST_TEST(limiter.available() == 5u);
}

// --- The debt of a lowered limit: "a lower limit is a debt that returning permits pay".

BOOST_AUTO_TEST_CASE(a_debt_is_paid_by_returns_and_forgiven_by_a_rise)
{
    asio::io_context io;
    auto next = std::make_shared<std::atomic<std::size_t>>(4);
    adaptive_limiter limiter(io, settable_limit{next, 4, 10});
    std::vector<std::optional<permit>> held;
    for (int i = 0; i < 4; ++i)
        held.push_back(limiter.try_acquire());
    next->store(1);
    held[0]->dropped(); // limit 1, three held: a debt of 2
    BOOST_TEST(limiter.limit() == 1u);
    BOOST_TEST(limiter.available() == 0u);
    held[1]->ignore(); // pays 1
    BOOST_TEST(!limiter.try_acquire().has_value());
    held[2].reset();                                // pays the last
    BOOST_TEST(!limiter.try_acquire().has_value()); // one is still held: the limit is 1
    held[3]->ignore();
    BOOST_TEST(limiter.available() == 1u);
    BOOST_TEST(!limiter.try_acquire(2).has_value());

    // Down to 1 and back to 4 while everything is held: 4 in circulation afterwards, not 1 or 7.
    held.clear();
    next->store(4);
    auto one = limiter.try_acquire();
    one->success();
    BOOST_TEST(limiter.limit() == 4u);
    for (int i = 0; i < 4; ++i)
        held.push_back(limiter.try_acquire());
    next->store(1);
    held[0]->dropped();
    next->store(4);
    held[1]->success();
    BOOST_TEST(limiter.limit() == 4u);
    BOOST_TEST(limiter.available() == 2u);
    held.clear();
    BOOST_TEST(limiter.available() == 4u);
    BOOST_TEST(limiter.try_acquire(4).has_value());
}

BOOST_AUTO_TEST_CASE(an_acquire_of_the_ceiling_queues_and_one_more_fails)
{
    asio::io_context io;
    auto next = std::make_shared<std::atomic<std::size_t>>(2);
    adaptive_limiter limiter(io, settable_limit{next, 2, 10});
    std::vector<error_code> results;
    limiter.async_acquire(11, [&](error_code ec, permit) { results.push_back(ec); });
    limiter.async_acquire_for(10, ms(1), [&](error_code ec, permit) { results.push_back(ec); });
    BOOST_TEST(limiter.waiting() == 1u);
    asio_sync::test::run(io);
    BOOST_TEST_REQUIRE(results.size() == 2u);
    BOOST_TEST((results[0] == asio_sync::error::too_many_permits));
    BOOST_TEST((results[1] == asio_sync::error::timed_out));
    BOOST_TEST(limiter.available() == 2u);
}

// "n == 0 succeeds at once with an empty permit", also behind a queued acquire.
BOOST_AUTO_TEST_CASE(an_acquire_of_nothing_does_not_wait_behind_the_queue)
{
    asio::io_context io;
    auto next = std::make_shared<std::atomic<std::size_t>>(2);
    adaptive_limiter limiter(io, settable_limit{next, 2, 10});
    bool queued_done = false, empty_done = false;
    std::size_t empty_count = 99;
    limiter.async_acquire(3, [&](error_code, permit) { queued_done = true; });
    limiter.async_acquire(0, [&](error_code ec, permit p) {
        empty_done = !ec;
        empty_count = p.count();
    });
    poll(io);
    BOOST_TEST(!queued_done);
    BOOST_TEST(empty_done);
    BOOST_TEST(empty_count == 0u);
    BOOST_TEST(limiter.cancel() == 1u);
    poll(io);
    BOOST_TEST(queued_done);
}

// Per-operation cancellation of the acquire at the head of the line, while the limit moves, lets
// the next one in.
BOOST_AUTO_TEST_CASE(cancelling_the_head_of_the_line_serves_the_next)
{
    asio::io_context io;
    auto next = std::make_shared<std::atomic<std::size_t>>(3);
    adaptive_limiter limiter(io, settable_limit{next, 3, 10});
    auto held = limiter.try_acquire(2);
    asio::cancellation_signal signal;
    error_code big_ec;
    std::optional<permit> small;
    limiter.async_acquire(4, asio::bind_cancellation_slot(signal.slot(), [&](error_code ec, permit p) {
                              big_ec = ec;
                              BOOST_TEST(p.count() == 0u);
                          }));
    limiter.async_acquire(2, [&](error_code, permit p) { small.emplace(std::move(p)); });
    next->store(2);
    held->success(); // limit 2: the acquire of 2 could go, but the acquire of 4 is ahead
    poll(io);
    BOOST_TEST(!small.has_value());
    signal.emit(asio::cancellation_type::terminal);
    poll(io);
    BOOST_TEST((big_ec == asio::error::operation_aborted));
    BOOST_TEST_REQUIRE(small.has_value());
    BOOST_TEST(small->count() == 2u);
    BOOST_TEST(limiter.waiting() == 0u);
}

// Failed before its fix: "the window's latency (... the mean)": two latencies of nanoseconds::max() (a
// latency the caller measured, which success(latency) accepts whatever its value) have a mean of -1 ns: the
// window's sum overflows (signed overflow: undefined behaviour, which UBSan reports).
BOOST_AUTO_TEST_CASE(a_windows_mean_of_huge_latencies_lies_between_them)
{
    auto o = windows_of<windowed_recorder>(2);
    recording_limit r;
    windowed_recorder w(r, o);
    w.on_sample({nanoseconds::max(), 1, false});
    w.on_sample({nanoseconds::max(), 1, false});
    BOOST_TEST_REQUIRE(r.seen->size() == 1u);
    BOOST_TEST((*r.seen)[0].latency.count() == nanoseconds::max().count());
}

// Failed before its fix: "A window lasts clamp(2 * smallest latency of the last window, min_window,
// max_window)": after a window whose smallest latency is above half of nanoseconds::max(), 2 * smallest
// overflows (undefined behaviour) and the next window lasts min_window instead of max_window.
BOOST_AUTO_TEST_CASE(the_window_after_huge_latencies_lasts_max_window)
{
    windowed_recorder::options o;
    o.min_window = ms(0);
    o.max_window = ms(1000);
    o.window_size = 1;
    recording_limit r;
    windowed_recorder w(r, o);
    manual_clock::at(ms(0));
    w.on_sample({nanoseconds::max() / 2 + nanoseconds(1), 1, false}); // a window of 0 ms closes at once
    BOOST_TEST_REQUIRE(r.seen->size() == 1u);
    manual_clock::at(ms(100));
    w.on_sample({ms(1), 1, false}); // opens a window of 1 s
    manual_clock::at(ms(200));
    w.on_sample({ms(1), 1, false});
    BOOST_TEST(r.seen->size() == 1u, "the window closed after 100 ms of its 1000");
}

// The listener, called on many threads at once, uses the limiter (reads the limit, takes and
// returns permits with outcomes of its own) while other threads return permits: no deadlock,
// every permit comes back, and the changes add up to the limit's move.
BOOST_AUTO_TEST_CASE(a_listener_that_returns_permits_on_many_threads_at_once)
{
    asio::io_context io;
    aimd_limit::options o;
    o.min_limit = 1;
    o.max_limit = 16;
    o.initial_limit = 8;
    o.backoff_ratio = 0.5;
    adaptive_limiter limiter(io, aimd_limit(o));
    std::mutex changes_mutex;
    std::vector<change> changes;
    std::atomic<std::size_t> nested{0};
    limiter.set_listener([&](std::size_t from, std::size_t to, limit_reason r) {
        {
            std::lock_guard<std::mutex> lock(changes_mutex);
            changes.push_back({from, to, r});
        }
        static thread_local int depth = 0;
        if (depth > 0 || limiter.limit() == 0)
            return;
        ++depth;
        if (auto p = limiter.try_acquire())
        {
            ++nested;
            r == limit_reason::success ? p->dropped() : p->success();
        }
        --depth;
    });
    constexpr int threads = 4, rounds = 2000;
    const bool done = finishes([&] {
        std::vector<std::thread> workers;
        for (int t = 0; t < threads; ++t)
            workers.emplace_back([&, t] {
                for (int i = 0; i < rounds; ++i)
                    if (auto p = limiter.try_acquire(1 + static_cast<std::size_t>(i % 2)))
                        (i + t) % 3 == 0 ? p->dropped() : p->success();
            });
        for (auto& w : workers)
            w.join();
    });
    BOOST_TEST_REQUIRE(done, "a return from inside the listener deadlocked");
    BOOST_TEST(limiter.available() == limiter.limit());
    long long moved = 0;
    for (const auto& c : changes)
    {
        moved += static_cast<long long>(c.new_limit) - static_cast<long long>(c.old_limit);
        BOOST_TEST(c.old_limit != c.new_limit);
    }
    BOOST_TEST(moved == static_cast<long long>(limiter.limit()) - 8);
    BOOST_TEST_MESSAGE("changes " << changes.size() << " nested returns " << nested.load());
}

// "It is submitted to its associated executor (by default the object's get_executor())".
BOOST_AUTO_TEST_CASE(a_handler_runs_on_its_associated_executor)
{
    asio::io_context io, other;
    auto next = std::make_shared<std::atomic<std::size_t>>(1);
    adaptive_limiter limiter(io, settable_limit{next, 1, 10});
    int first = 0, second = 0;
    limiter.async_acquire(asio::bind_executor(other, [&](error_code ec, permit) { first = ec ? -1 : 1; }));
    auto held = limiter.try_acquire(); // nothing: the handler's permit is not yet delivered
    BOOST_TEST(!held.has_value());
    limiter.async_acquire(asio::bind_executor(other, [&](error_code ec, permit) { second = ec ? -1 : 1; }));
    poll(io);
    BOOST_TEST((first == 0 && second == 0));
    poll(other); // the first handler's permit, destroyed with it, serves the second
    poll(io);
    poll(other);
    BOOST_TEST(first == 1);
    BOOST_TEST(second == 1);
    BOOST_TEST(limiter.available() == 1u);
}

// "The clock of the latency starts when the acquire is granted", not when it was started.
BOOST_AUTO_TEST_CASE(a_queued_acquires_clock_starts_at_its_grant)
{
    asio::io_context io;
    auto next = std::make_shared<std::atomic<std::size_t>>(1);
    adaptive_limiter limiter(io, settable_limit{next, 1, 10});
    auto held = limiter.try_acquire();
    std::optional<permit> got;
    limiter.async_acquire([&](error_code, permit p) { got.emplace(std::move(p)); });
    poll(io);
    const auto before_release = std::chrono::steady_clock::now();
    held->ignore();
    poll(io);
    BOOST_TEST_REQUIRE(got.has_value());
    BOOST_TEST((got->granted_at() >= before_release));
}

BOOST_AUTO_TEST_CASE(an_empty_listener_is_no_listener)
{
    asio::io_context io;
    auto next = std::make_shared<std::atomic<std::size_t>>(1);
    adaptive_limiter limiter(io, settable_limit{next, 1, 10});
    int calls = 0;
    limiter.set_listener([&](std::size_t, std::size_t, limit_reason) { ++calls; });
    limiter.set_listener({});
    next->store(5);
    limiter.try_acquire()->success();
    BOOST_TEST(calls == 0);
    BOOST_TEST(limiter.limit() == 5u);
}

#if defined(BOOST_ASIO_HAS_CO_AWAIT)
BOOST_AUTO_TEST_CASE(an_awaited_acquire_queues_and_completes)
{
    asio::io_context io;
    auto next = std::make_shared<std::atomic<std::size_t>>(1);
    adaptive_limiter limiter(io, settable_limit{next, 1, 10});
    auto held = limiter.try_acquire();
    std::size_t count = 0;
    bool failed = false;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            auto p = co_await limiter.async_acquire(2, asio::use_awaitable); // above the limit of 1
            count = p.count();
            p.success();
        },
        [&](std::exception_ptr e) { failed = e != nullptr; });
    poll(io);
    BOOST_TEST(count == 0u);
    next->store(2);
    held->success();
    poll(io);
    BOOST_TEST(!failed);
    BOOST_TEST(count == 2u);
    BOOST_TEST(limiter.available() == 2u);
}
#endif

// "Acquires never run the algorithm"; "a timed-out or cancelled acquire held nothing and is not a
// sample".
BOOST_AUTO_TEST_CASE(acquires_timeouts_and_cancellations_are_not_samples)
{
    asio::io_context io;
    recording_limit r;
    adaptive_limiter limiter(io, r); // a limit of 5
    auto all = limiter.try_acquire(5);
    BOOST_TEST_REQUIRE(all.has_value());
    std::vector<error_code> results;
    auto record = [&](error_code ec, permit p) {
        results.push_back(ec);
        BOOST_TEST(p.count() == 0u);
    };
    limiter.async_acquire_for(1, ms(1), record);
    limiter.async_acquire_until(2, std::chrono::steady_clock::now(), record);
    limiter.async_acquire(3, record);
    limiter.async_acquire(11, record);
    poll(io);
    BOOST_TEST(limiter.cancel() == 2u);
    asio_sync::test::run(io);
    BOOST_TEST(results.size() == 4u);
    BOOST_TEST(r.seen->empty());
    all->ignore();
    BOOST_TEST(r.seen->empty());
    BOOST_TEST(limiter.available() == 5u);
}

// Failed before its fix: the overflow of a window's sum, end to end: two permits that report the largest
// latency (an overloaded backend, timed on a clock of the caller's) make a window whose mean reads as -1 ns,
// which Gradient2 takes for a latency of 1 ns, far below its baseline: the limit that should shrink ("when
// latency climbs above it, the limit shrinks in proportion") stays.
BOOST_AUTO_TEST_CASE(huge_latencies_through_a_window_do_not_read_as_no_latency)
{
    asio::io_context io;
    gradient2_limit::options g;
    g.min_limit = 1;
    g.max_limit = 100;
    g.initial_limit = 4;
    g.smoothing = 1;
    g.queue_size = 0;
    auto w = windows_of<windowed_limit<gradient2_limit>>(2);
    adaptive_limiter limiter(io, windowed_limit<gradient2_limit>(gradient2_limit(g), w));
    auto window = [&](nanoseconds latency) {
        auto a = limiter.try_acquire(2);
        auto b = limiter.try_acquire(2); // four in flight: the limit is used
        BOOST_TEST_REQUIRE((a && b));
        a->success(latency);
        b->success(latency);
    };
    window(ms(1));
    BOOST_TEST(limiter.limit() == 4u);
    window(nanoseconds::max());
    BOOST_TEST(limiter.limit() < 4u,
               "limit " << limiter.limit() << " after a window of the largest latencies");
}

// No allocation per return or per sample: the return path (the algorithm behind a percentile
// window, the limit's move, the listener) and queued acquires with their own allocator call no
// global operator new.
BOOST_AUTO_TEST_CASE(returns_samples_and_queued_waits_call_no_global_operator_new)
{
    asio::io_context io;
    aimd_limit::options a;
    a.min_limit = 1;
    a.max_limit = 4;
    a.initial_limit = 2;
    auto w = windows_of<windowed_limit<aimd_limit>>(2);
    w.aggregate = asio_sync::window_aggregate::percentile;
    w.min_latency = nanoseconds(0);
    adaptive_limiter limiter(io, windowed_limit<aimd_limit>(aimd_limit(a), w));
    std::size_t changes = 0;
    limiter.set_listener([&](std::size_t, std::size_t, limit_reason) { ++changes; });
    asio_sync::test::allocation_counts counts;
    asio_sync::test::counting_allocator<void> alloc(counts);
    std::optional<permit> waiter;
    auto round = [&](int i) {
        auto p = limiter.try_acquire(limiter.limit());
        BOOST_TEST_REQUIRE(p.has_value());
        limiter.async_acquire(
            asio::bind_allocator(alloc, [&](error_code, permit got) { waiter.emplace(std::move(got)); }));
        i % 3 == 0 ? p->dropped() : p->success(ms(1));
        poll(io);
        BOOST_TEST_REQUIRE(waiter.has_value());
        waiter->success(ms(2));
        waiter.reset();
    };
    for (int i = 0; i < 10; ++i) // warm-up: Asio's per-thread caches
        round(i);
    [[maybe_unused]] const std::size_t before = asio_sync::test::global_news.load();
    for (int i = 0; i < 100; ++i)
        round(i);
#ifndef ASIO_SYNC_TEST_SANITIZED
    BOOST_TEST(asio_sync::test::global_news.load() - before == 0u);
    ::operator delete(::operator new(1)); // counted: the check above could fail
    BOOST_TEST(asio_sync::test::global_news.load() - before == 1u);
#endif
    BOOST_TEST(changes > 0u);
    BOOST_TEST(counts.allocations.load() == counts.deallocations.load());
}

// "A cancellation after the grant does nothing"; a timed acquire queued when the limiter is
// destroyed is aborted, not timed out.
BOOST_AUTO_TEST_CASE(a_cancellation_after_the_grant_does_nothing_and_destruction_aborts_timed_acquires)
{
    asio::io_context io;
    auto limiter = std::make_unique<adaptive_limiter>(
        io, settable_limit{std::make_shared<std::atomic<std::size_t>>(1), 1, 10});
    asio::cancellation_signal signal;
    std::optional<permit> got;
    error_code granted_ec, timed_ec;
    bool timed_done = false;
    limiter->async_acquire(asio::bind_cancellation_slot(signal.slot(), [&](error_code ec, permit p) {
        granted_ec = ec;
        got.emplace(std::move(p));
    }));
    signal.emit(asio::cancellation_type::terminal); // granted at once: too late
    poll(io);
    BOOST_TEST(!granted_ec);
    BOOST_TEST_REQUIRE(got.has_value());
    BOOST_TEST(got->count() == 1u);
    got.reset();
    // An acquire of 2 where the limit is 1 queues (holding nothing) until the limiter goes.
    limiter->async_acquire_for(2, std::chrono::hours(1), [&](error_code ec, permit p) {
        timed_done = true;
        timed_ec = ec;
        BOOST_TEST(p.count() == 0u);
    });
    poll(io);
    BOOST_TEST(!timed_done);
    limiter.reset();
    BOOST_TEST(!timed_done);
    poll(io);
    BOOST_TEST(timed_done);
    BOOST_TEST((timed_ec == asio::error::operation_aborted));
}

BOOST_AUTO_TEST_SUITE_END()
