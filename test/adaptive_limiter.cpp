// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#define BOOST_TEST_MODULE adaptive_limiter
#include <asio_sync/adaptive_limiter.hpp>
#include <asio_sync/aimd_limit.hpp>
#include <asio_sync/error.hpp>
#include <asio_sync/vegas_limit.hpp>

#include <support/io_steps.hpp>
#include <support/io_threads.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/system/error_code.hpp>
#include <boost/test/unit_test.hpp>

#if defined(BOOST_ASIO_HAS_CO_AWAIT)
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>
#endif

#include <atomic>
#include <chrono>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

namespace {

namespace asio = boost::asio;
using asio_sync::adaptive_limiter;
using asio_sync::limit_reason;
using asio_sync::limit_sample;
using asio_sync::test::poll;
using asio_sync::test::run;
using boost::system::error_code;
using permit = adaptive_limiter::permit;

// A limit algorithm that records its samples and takes its next limits from a script.
struct scripted_limit
{
    struct state
    {
        std::vector<limit_sample> samples;
        std::deque<std::size_t> next;
    };

    std::shared_ptr<state> script;
    std::size_t current;
    std::size_t ceiling;

    std::size_t limit() const noexcept { return current; }
    std::size_t min_limit() const noexcept { return 1; }
    std::size_t max_limit() const noexcept { return ceiling; }
    void on_sample(const limit_sample& s)
    {
        script->samples.push_back(s);
        if (!script->next.empty())
        {
            current = script->next.front();
            script->next.pop_front();
        }
    }
};

struct change
{
    std::size_t old_limit;
    std::size_t new_limit;
    limit_reason reason;
};

// A limiter on an io_context whose algorithm is scripted, and the changes its listener saw.
struct scripted_limiter
{
    explicit scripted_limiter(std::size_t initial, std::size_t ceiling = 100)
        : algorithm{std::make_shared<scripted_limit::state>(), initial, ceiling}, script(algorithm.script),
          limiter(io, algorithm)
    {
        limiter.set_listener([this](std::size_t o, std::size_t n, limit_reason r) {
            changes.push_back({o, n, r});
        });
    }

    asio::io_context io;
    scripted_limit algorithm;
    std::shared_ptr<scripted_limit::state> script;
    adaptive_limiter limiter;
    std::vector<change> changes;
};

// An acquire's outcome, filled by its handler.
struct acquired
{
    bool done = false;
    error_code ec;
    std::optional<permit> held;
};

auto into(acquired& a)
{
    return [&a](error_code ec, permit p) {
        a.done = true;
        a.ec = ec;
        a.held.emplace(std::move(p));
    };
}

} // namespace

BOOST_AUTO_TEST_SUITE(adaptive_limiter_tests)

BOOST_AUTO_TEST_CASE(the_limit_starts_at_the_algorithms)
{
    scripted_limiter s(2);
    BOOST_TEST(s.limiter.limit() == 2u);
    BOOST_TEST(s.limiter.max_limit() == 100u);
    acquired a, b, c;
    s.limiter.async_acquire(into(a));
    s.limiter.async_acquire(into(b));
    s.limiter.async_acquire(into(c));
    poll(s.io);
    BOOST_TEST(((a.done && !a.ec) && (b.done && !b.ec)));
    BOOST_TEST(!c.done);
    BOOST_TEST(s.limiter.waiting() == 1u);
    a.held->ignore();
    poll(s.io);
    BOOST_TEST((c.done && !c.ec));
}

BOOST_AUTO_TEST_CASE(each_outcome_counts_as_documented)
{
    scripted_limiter s(4);
    std::optional<permit> p1 = s.limiter.try_acquire();
    std::optional<permit> p2 = s.limiter.try_acquire(2);
    std::optional<permit> p3 = s.limiter.try_acquire();
    BOOST_TEST_REQUIRE((p1 && p2 && p3));
    BOOST_TEST(p2->count() == 2u);
    BOOST_TEST((p1->granted_at() <= std::chrono::steady_clock::now()));

    p1->success();
    BOOST_TEST_REQUIRE(s.script->samples.size() == 1u);
    BOOST_TEST(!s.script->samples[0].dropped);
    BOOST_TEST((s.script->samples[0].latency >= std::chrono::nanoseconds(0)));
    BOOST_TEST(s.script->samples[0].in_flight == 1u);
    BOOST_TEST(!*p1);

    p2->dropped();
    BOOST_TEST_REQUIRE(s.script->samples.size() == 2u);
    BOOST_TEST(s.script->samples[1].dropped);
    BOOST_TEST(s.script->samples[1].in_flight == 3u);

    p3->ignore();
    p3->success(); // holds nothing: no sample
    s.limiter.try_acquire()->success(std::chrono::milliseconds(7));
    BOOST_TEST_REQUIRE(s.script->samples.size() == 3u);
    BOOST_TEST((s.script->samples[2].latency == std::chrono::milliseconds(7)));
    {
        permit destroyed = std::move(*s.limiter.try_acquire());
    }
    BOOST_TEST(s.script->samples.size() == 3u);
    BOOST_TEST(s.limiter.available() == 4u);
    BOOST_TEST(s.changes.empty());
}

// A grant whose handler is destroyed without being invoked (its executor's context goes first)
// gives its permit back as ignored.
BOOST_AUTO_TEST_CASE(an_undelivered_grant_counts_as_ignored)
{
    scripted_limiter s(1);
    {
        asio::io_context elsewhere;
        s.limiter.async_acquire(asio::bind_executor(elsewhere, [](error_code, permit p) { p.success(); }));
        BOOST_TEST(s.limiter.available() == 0u);
    }
    BOOST_TEST(s.limiter.available() == 1u);
    BOOST_TEST(s.script->samples.empty());
}

BOOST_AUTO_TEST_CASE(a_higher_limit_serves_the_queue)
{
    scripted_limiter s(1);
    std::optional<permit> held = s.limiter.try_acquire();
    acquired waiter;
    s.limiter.async_acquire(into(waiter));
    poll(s.io);
    BOOST_TEST(!waiter.done);

    s.script->next = {3};
    held->success();
    poll(s.io);
    BOOST_TEST((waiter.done && !waiter.ec));
    BOOST_TEST(s.limiter.limit() == 3u);
    BOOST_TEST(s.limiter.available() == 2u);
    BOOST_TEST_REQUIRE(s.changes.size() == 1u);
    BOOST_TEST(s.changes[0].old_limit == 1u);
    BOOST_TEST(s.changes[0].new_limit == 3u);
    BOOST_TEST((s.changes[0].reason == limit_reason::success));
}

BOOST_AUTO_TEST_CASE(a_lower_limit_leaves_the_holders_alone)
{
    scripted_limiter s(3);
    std::optional<permit> a = s.limiter.try_acquire();
    std::optional<permit> b = s.limiter.try_acquire();
    std::optional<permit> c = s.limiter.try_acquire();
    s.script->next = {1};
    a->dropped();
    BOOST_TEST(s.limiter.limit() == 1u);
    BOOST_TEST((*b && *c));
    BOOST_TEST_REQUIRE(s.changes.size() == 1u);
    BOOST_TEST((s.changes[0].reason == limit_reason::dropped));
    BOOST_TEST(s.limiter.available() == 0u); // a's permit paid one of the two owed
    b->ignore();
    BOOST_TEST(s.limiter.available() == 0u); // b's paid the other
    c->ignore();
    BOOST_TEST(s.limiter.available() == 1u);
}

// More than the ceiling fails at once; more than the limit, within the ceiling, queues in FIFO
// order until the limit has grown and the permits have come back.
BOOST_AUTO_TEST_CASE(a_multi_permit_acquire_against_the_limit)
{
    scripted_limiter s(2, 5);
    acquired too_many;
    s.limiter.async_acquire(6, into(too_many));
    BOOST_TEST(s.limiter.waiting() == 0u);
    BOOST_TEST(!s.limiter.try_acquire(6));
    poll(s.io);
    BOOST_TEST(too_many.ec == error_code(asio_sync::error::too_many_permits));
    BOOST_TEST(too_many.held->count() == 0u);

    std::optional<permit> held = s.limiter.try_acquire();
    acquired four, one;
    s.limiter.async_acquire(4, into(four));
    s.limiter.async_acquire(1, into(one));
    poll(s.io);
    BOOST_TEST((!four.done && !one.done));

    s.script->next = {4};
    held->success();
    poll(s.io);
    BOOST_TEST((four.done && !four.ec));
    BOOST_TEST(four.held->count() == 4u);
    BOOST_TEST(!one.done); // behind the four, until they come back
    four.held->ignore();
    poll(s.io);
    BOOST_TEST((one.done && !one.ec));
}

BOOST_AUTO_TEST_CASE(timed_out_and_cancelled_acquires_are_not_samples)
{
    scripted_limiter s(1);
    std::optional<permit> held = s.limiter.try_acquire();
    acquired timed, cancelled;
    s.limiter.async_acquire_for(1, std::chrono::milliseconds(1), into(timed));
    asio::cancellation_signal signal;
    s.limiter.async_acquire(asio::bind_cancellation_slot(signal.slot(), into(cancelled)));
    signal.emit(asio::cancellation_type::terminal);
    run(s.io);
    BOOST_TEST(timed.ec == error_code(asio_sync::error::timed_out));
    BOOST_TEST(cancelled.ec == error_code(asio::error::operation_aborted));
    BOOST_TEST(s.script->samples.empty());
    BOOST_TEST(s.limiter.waiting() == 0u);
}

BOOST_AUTO_TEST_CASE(every_completion_token)
{
    scripted_limiter s(2);
    std::future<permit> future = s.limiter.async_acquire(asio::use_future);
    poll(s.io);
    permit from_future = future.get();
    BOOST_TEST(from_future.count() == 1u);
#if defined(BOOST_ASIO_HAS_CO_AWAIT)
    bool done = false;
    asio::co_spawn(
        s.io,
        [&]() -> asio::awaitable<void> {
            permit p = co_await s.limiter.async_acquire(asio::use_awaitable);
            BOOST_TEST(p.count() == 1u);
            p.success();
            auto [ec, none] = co_await s.limiter.async_acquire(101, asio::as_tuple(asio::use_awaitable));
            BOOST_TEST(ec == error_code(asio_sync::error::too_many_permits));
            BOOST_TEST(none.count() == 0u);
            done = true;
        },
        asio::detached);
    run(s.io);
    BOOST_TEST(done);
    BOOST_TEST(s.script->samples.size() == 1u);
#endif
}

// Permits return with their outcomes on several threads at once while others acquire: the
// algorithm's state and the semaphore's capacity change only under the limiter's lock (TSan
// checks it), and at the end every permit is back and the capacity is the algorithm's limit.
BOOST_AUTO_TEST_CASE(outcomes_on_many_threads)
{
    asio::io_context io;
    asio_sync::aimd_limit::options o;
    o.initial_limit = 8;
    o.min_limit = 2;
    o.max_limit = 64;
    adaptive_limiter limiter(io, asio_sync::aimd_limit(o));
    std::atomic<long> moved{0};
    limiter.set_listener([&](std::size_t old_limit, std::size_t new_limit, limit_reason) {
        moved += static_cast<long>(new_limit) - static_cast<long>(old_limit);
    });

    constexpr int tasks = 4000;
    std::atomic<int> finished{0};
    std::atomic<int> failed{0}; // Boost.Test's checks are not for other threads
    for (int i = 0; i < tasks; ++i)
    {
        limiter.async_acquire([&, i](error_code ec, permit p) {
            if (ec)
                ++failed;
            asio::post(io, [&, i, p = std::move(p)]() mutable {
                if (i % 7 == 0)
                    p.dropped();
                else if (i % 11 == 0)
                    p.ignore();
                else
                    p.success();
                ++finished;
            });
        });
    }
    {
        asio_sync::test::io_threads threads(io, 4);
        threads.join();
    }
    BOOST_TEST(failed.load() == 0);
    BOOST_TEST(finished.load() == tasks);
    BOOST_TEST(limiter.waiting() == 0u);
    BOOST_TEST(limiter.available() == limiter.limit());
    BOOST_TEST(static_cast<long>(limiter.limit()) == 8 + moved.load());
}

BOOST_AUTO_TEST_SUITE_END()
