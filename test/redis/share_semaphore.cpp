// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#define BOOST_TEST_MODULE redis_share_semaphore

// The leased share on a real server: acquires served in-process (no call per acquire), the
// division between processes and its limit, an acquire above the share or the capacity, try, a
// closed process' share going to another, the share lost before Redis gives it away, resizing, the
// listener, and bad input.

#include <asio_sync/redis/share_semaphore.hpp>

#include "support/redis_client.hpp"
#include "support/redis_server.hpp"
#include "support/tcp_proxy.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

BOOST_AUTO_TEST_SUITE(redis_share_semaphore)

namespace {

namespace asio = boost::asio;
namespace redis = asio_sync::redis;
using asio_sync::test::eventually;
using asio_sync::test::is_ready;
using asio_sync::test::options_for;
using asio_sync::test::redis_server;
using asio_sync::test::tcp_proxy;
using asio_sync::test::wait;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

// A short lease, so that a loss is quick; refreshes every 100 ms, calls at most every 25 ms.
const redis::share_options quick{1000ms, 20ms, 100ms};
// A lease longer than any test: no refresh comes on its own.
const redis::share_options still{60000ms, {}, 6000ms};

struct fixture
{
    fixture()
        : work(asio::make_work_guard(io)), thread([this] { io.run(); }),
          first(io, options_for(server.port())), second(io, options_for(server.port()))
    {
    }

    ~fixture()
    {
        first.close();
        second.close();
        work.reset();
        io.stop();
        thread.join();
    }

    // The calls of the library's functions the server has run.
    long calls()
    {
        const std::string info = server.command({"INFO", "commandstats"});
        const std::size_t at = info.find("cmdstat_fcall:calls=");
        return at == std::string::npos ? 0 : std::stol(info.substr(at + 20));
    }

    redis_server server;
    asio::io_context io;
    asio::executor_work_guard<asio::io_context::executor_type> work;
    std::thread thread;
    redis::connection first;
    redis::connection second;
};

std::future<void> acquire(redis::share_semaphore& s, std::size_t n)
{
    return s.async_acquire(n, asio::use_future);
}

// The error of an acquire, as a value: an exception handed across threads by a future is a false
// race to ThreadSanitizer (libstdc++'s exception_ptr is not instrumented).
std::future<boost::system::error_code> outcome_of(redis::share_semaphore& s, std::size_t n)
{
    auto promise = std::make_shared<std::promise<boost::system::error_code>>();
    auto f = promise->get_future();
    s.async_acquire(n, [promise](boost::system::error_code ec) { promise->set_value(ec); });
    return f;
}

} // namespace

BOOST_FIXTURE_TEST_CASE(acquires_within_the_share_never_call_redis, fixture)
{
    redis::share_semaphore s(first, "local", 4, still);
    auto f = acquire(s, 4);
    wait(f);
    BOOST_TEST(s.state().share == 4u);
    BOOST_TEST(!s.try_acquire());
    s.release(4);
    const long before = calls();
    for (int i = 0; i < 10000; ++i)
    {
        BOOST_REQUIRE(s.try_acquire(3));
        s.release(3);
        auto g = acquire(s, 2);
        wait(g);
        s.release(2);
    }
    BOOST_TEST(calls() == before);
}

BOOST_FIXTURE_TEST_CASE(an_acquire_above_the_capacity_fails_and_one_above_the_share_waits_for_it, fixture)
{
    redis::share_semaphore a(first, "above", 4, quick);
    redis::share_semaphore b(second, "above", 4, quick);
    // Before the first answer no capacity is known: an acquire of 5 would queue.
    eventually([&] { return a.valid_for() > clock_type::duration::zero(); });
    auto too_many = outcome_of(a, 5);
    BOOST_TEST(wait(too_many) == boost::system::error_code(asio_sync::error::too_many_permits));
    BOOST_TEST(!a.try_acquire(5));
    // b holds 3; a asks for 2: the division gives each 2, and a waits for b to give one back.
    auto held = acquire(b, 3);
    wait(held);
    auto waiting = acquire(a, 2);
    eventually([&] { return a.state().demand == 2u && b.state().share == 2u && a.state().target == 2u; });
    BOOST_TEST(!is_ready(waiting));
    b.release(3);
    wait(waiting);
    BOOST_TEST(a.state().share >= 2u);
    a.release(2);
}

BOOST_FIXTURE_TEST_CASE(equal_demands_split_the_capacity_and_the_holders_never_exceed_it, fixture)
{
    constexpr std::size_t capacity = 4;
    redis::share_semaphore a(first, "split", capacity, quick);
    redis::share_semaphore b(second, "split", capacity, quick);
    std::atomic<int> holding{0};
    std::atomic<int> most{0};
    std::atomic<bool> stop{false};
    std::atomic<int> stalled{0};
    std::vector<std::thread> workers;
    // No Boost.Test check on the workers' threads: its log is not thread-safe.
    for (redis::share_semaphore* s : {&a, &b})
        for (int i = 0; i < 4; ++i)
            workers.emplace_back([&, s] {
                while (!stop.load())
                {
                    auto f = s->async_acquire(1, asio::use_future);
                    if (f.wait_for(asio_sync::test::redis_wait_limit) != std::future_status::ready)
                    {
                        stalled.fetch_add(1);
                        return;
                    }
                    f.get();
                    const int now = holding.fetch_add(1) + 1;
                    int seen = most.load();
                    while (now > seen && !most.compare_exchange_weak(seen, now))
                    {
                    }
                    std::this_thread::sleep_for(200us);
                    holding.fetch_sub(1);
                    s->release(1);
                }
            });
    eventually([&] { return a.state().share == 2u && b.state().share == 2u; });
    stop = true;
    for (std::thread& t : workers)
        t.join();
    BOOST_TEST(stalled.load() == 0);
    BOOST_TEST(most.load() <= int(capacity));
    BOOST_TEST(a.state().target == 2u);
}

BOOST_FIXTURE_TEST_CASE(a_closed_process_gives_its_share_to_another, fixture)
{
    auto a = std::make_unique<redis::share_semaphore>(first, "close", 3, quick);
    redis::share_semaphore b(second, "close", 3, quick);
    auto held = acquire(*a, 3);
    wait(held);
    auto waiting = acquire(b, 3);
    a->close();
    BOOST_TEST(a->state().share == 0u);
    auto refused = outcome_of(*a, 1);
    BOOST_TEST(wait(refused) == boost::system::error_code(asio_sync::error::closed));
    BOOST_TEST(!is_ready(waiting));
    a->release(3);
    wait(waiting);
    BOOST_TEST(b.state().share == 3u);
    b.release(3);
}

BOOST_FIXTURE_TEST_CASE(a_share_cut_off_is_lost_before_redis_gives_it_away, fixture)
{
    tcp_proxy proxy(server.port());
    redis::connection cut_off(io, options_for(proxy.port()));
    redis::share_semaphore a(cut_off, "lapse", 2, quick);
    redis::share_semaphore b(second, "lapse", 2, quick);
    auto held = acquire(a, 2);
    wait(held);
    BOOST_TEST(a.valid_for() > clock_type::duration::zero());
    std::promise<clock_type::time_point> lost;
    a.async_wait_lost([&](boost::system::error_code) { lost.set_value(clock_type::now()); });
    auto waiting = b.async_acquire(2, asio::use_future);
    proxy.hold();
    wait(waiting);
    const clock_type::time_point granted = clock_type::now();
    auto lost_at = lost.get_future();
    BOOST_TEST((wait(lost_at) < granted));
    BOOST_TEST(a.state().share == 0u);
    BOOST_TEST((a.valid_for() == clock_type::duration::zero()));
    b.release(2);
    a.release(2);
    proxy.release();
    cut_off.close();
}

BOOST_FIXTURE_TEST_CASE(a_larger_capacity_grows_the_share_and_the_listener_hears_it, fixture)
{
    std::atomic<std::size_t> heard{0}; // before the object, which waits for a running listener call
    redis::share_semaphore s(first, "resize", 2, quick);
    s.set_listener([&](const redis::share_state& state) { heard = state.share; });
    auto two = acquire(s, 2);
    wait(two);
    auto resized = s.async_set_capacity(5, asio::use_future);
    wait(resized);
    auto more = acquire(s, 3);
    wait(more);
    BOOST_TEST(s.capacity() == 5u);
    BOOST_TEST(s.state().share == 5u);
    // The listener runs after the resize it hears of, which may have completed the acquire already.
    eventually([&] { return heard.load() == 5u; });
    s.release(5);
}

// "the destructor removes it": a listener call already running on the connection's thread when
// another thread destroys the object ends before the destructor returns, so that what it captured
// may die with the object. The listener holds its call open until the destroying thread has had
// time to reach the destructor; the two ends are ordered on one counter.
BOOST_FIXTURE_TEST_CASE(the_destructor_waits_for_a_listener_call_running_on_another_thread, fixture)
{
    std::atomic<int> order{0};
    std::atomic<int> listener_ended{0};
    std::atomic<bool> closing{false};
    std::atomic<bool> held_once{false};
    std::promise<void> entered;
    std::promise<void> go_on;
    auto s = std::make_unique<redis::share_semaphore>(first, "listener-running", 2, quick);
    auto f = acquire(*s, 1);
    wait(f);
    s->release(1);
    s->set_listener([&, go = go_on.get_future().share()](const redis::share_state&) {
        if (!closing.load() || held_once.exchange(true))
            return;
        entered.set_value();
        if (go.wait_for(10s) != std::future_status::ready)
            BOOST_ERROR("the test never let the listener end");
        listener_ended = ++order;
    });
    closing = true;
    s->close(); // always a change: a listener call is posted to the connection's thread
    auto in_listener = entered.get_future();
    wait(in_listener);
    int destroyed = 0;
    std::thread destroyer([&] {
        s.reset();
        destroyed = ++order;
    });
    std::this_thread::sleep_for(50ms); // not a bound: a slow destroyer only makes the check weaker
    go_on.set_value();
    destroyer.join();
    // Failed before its fix: the destructor returned at once, before the listener's call ended.
    BOOST_TEST(listener_ended.load() == 1);
    BOOST_TEST(destroyed == 2);
}

// The destructor called from inside the listener (the one call running) does not wait for that
// call: it returns, and the call ends after it without touching the object.
BOOST_FIXTURE_TEST_CASE(the_listener_may_destroy_the_object, fixture)
{
    std::promise<void> destroyed;
    auto s = std::make_unique<redis::share_semaphore>(first, "listener-destroys", 2, quick);
    auto f = acquire(*s, 1);
    wait(f);
    s->release(1);
    s->set_listener([&](const redis::share_state&) {
        if (!s)
            return;
        s.reset();
        destroyed.set_value();
    });
    s->close(); // always a change: the listener is called on the connection's thread
    auto done = destroyed.get_future();
    wait(done); // failed (timed out) if the destructor waited for the call it runs in
}

BOOST_FIXTURE_TEST_CASE(bad_input_is_refused, fixture)
{
    BOOST_CHECK_THROW(redis::share_semaphore(first, "", 1), std::invalid_argument);
    BOOST_CHECK_THROW(redis::share_semaphore(first, "x", 0), std::invalid_argument);
    BOOST_CHECK_THROW(redis::share_semaphore(first, "x", 1, redis::share_options{10ms, {}, {}}),
                      std::invalid_argument);
    redis::share_semaphore s(first, "x", 1, quick);
    BOOST_CHECK_THROW(s.async_set_capacity(0, asio::use_future), std::invalid_argument);
}

BOOST_AUTO_TEST_SUITE_END()
