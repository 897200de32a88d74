// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#define BOOST_TEST_MODULE redis_semaphore_lease

// The lease rule on a real server: a client never believes it holds a permit after the server has
// let it go. Each test cuts a holder off from Redis through a TCP proxy and lets another client
// queue for the permit directly; the holder must declare its permit lost strictly before the other
// is granted it, the two events ordered on CLOCK_MONOTONIC (steady_clock), which both clients
// share. No test measures a duration against a threshold: only the order of events and exact
// outcomes are checked.
//
// - A replayed acquire: its reply dropped, the link cut, the id sent again and granted; the lease
//   must end when the server's does, not a lease after the replay.
// - A holder cut off while it renews, twenty times: its loss comes before the next grant.
// - A release whose reply was dropped, sent again after the cut, finds its id gone: a success.

#include <asio_sync/redis/semaphore.hpp>

#include "support/io_threads.hpp"
#include "support/redis_client.hpp"
#include "support/redis_server.hpp"
#include "support/semaphore_timeline.hpp"
#include "support/tcp_proxy.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>

BOOST_AUTO_TEST_SUITE(redis_semaphore_lease)

namespace {

namespace asio = boost::asio;
namespace redis = asio_sync::redis;
using asio_sync::test::acquire_timed;
using asio_sync::test::eventually;
using asio_sync::test::milliseconds;
using asio_sync::test::options_for;
using asio_sync::test::redis_server;
using asio_sync::test::tcp_proxy;
using asio_sync::test::wait;
using asio_sync::test::watch_loss;
using clock_type = std::chrono::steady_clock;
using namespace std::chrono_literals;
using permit = redis::semaphore::permit;
using script = redis::detail::semaphore_script;

constexpr const char* name = "jobs";

// The test's clients: an io_context run by one thread, a connection through the proxy (the one cut
// off) and one straight to the server.
struct clients
{
    clients(const redis_server& server, const tcp_proxy& proxy)
        : work(asio::make_work_guard(io)), threads(io, 1), proxied(io, options_for(proxy.port())),
          direct(io, options_for(server.port()))
    {
    }

    ~clients()
    {
        proxied.close();
        direct.close();
        work.reset();
    }

    asio::io_context io;
    asio::executor_work_guard<asio::io_context::executor_type> work;
    asio_sync::test::io_threads threads;
    redis::connection proxied;
    redis::connection direct;
};

std::string check(const redis_server& server)
{
    return server.command(script(name).check());
}

} // namespace

// Capacity 1. The reply to the holder's acquire is dropped (it runs in Redis: the lease starts
// there); at 0.8 lease the link is cut, the acquire is replayed with the same id and granted, and
// the holder is then cut off for good. Redis lets its lease lapse one lease after the first send;
// the other client is granted then. Before the fix, the holder dated a whole lease from the replay
// and declared its loss about 0.8 lease after the other's grant.
BOOST_AUTO_TEST_CASE(a_replayed_acquire_ends_its_lease_when_the_server_does)
{
    constexpr std::chrono::milliseconds lease = 1500ms;
    redis_server server;
    tcp_proxy proxy(server.port());
    clients c(server, proxy);
    redis::semaphore holder_side(c.proxied, name, 1, lease);
    redis::semaphore other_side(c.direct, name, 1, lease);
    {
        // The links up, the library loaded, the server checked.
        auto warm = holder_side.async_acquire_permit(1, asio::use_future);
        permit p = wait(warm);
        auto released = p.async_release(asio::use_future);
        wait(released);
    }

    proxy.drop_replies();
    auto held = holder_side.async_acquire_permit(1, asio::use_future);
    eventually([&] { return check(server) == "ok\n1\n1\n0"; }); // granted in Redis, never answered
    std::this_thread::sleep_for(lease * 8 / 10);
    proxy.cut(); // the replay is answered: the holder has its permit now
    permit p = wait(held);
    BOOST_TEST(p.count() == 1u);
    proxy.hold(); // cut off for good: no renewal reaches Redis
    const auto lost = watch_loss(p);

    auto other_permit = std::make_shared<permit>();
    const auto other = acquire_timed(other_side, 1, other_permit);
    auto lost_when = lost->when.get_future();
    auto lost_why = lost->error.get_future();
    auto granted_when = other->when.get_future();
    const clock_type::time_point loss_time = wait(lost_when);
    const clock_type::time_point grant_time = wait(granted_when);
    BOOST_TEST(wait(lost_why) == boost::system::error_code(redis::error::lease_lost));
    BOOST_TEST((loss_time < grant_time), "the holder learnt its loss "
                                             << milliseconds(loss_time - grant_time)
                                             << " ms after the other was granted its permit");
    auto fence = other->fence.get_future();
    BOOST_TEST(wait(fence) > p.fencing_token());
    proxy.release();
}

// A holder renews through the proxy until the proxy holds everything it sends; another client
// waits directly, while a third calls the semaphore in a tight loop (a try that finds the queue
// busy), so that Redis reaps the holder's lease and serves the waiter the moment the lease lapses.
// Twenty rounds, each on a fresh semaphore: each time, the holder's loss comes strictly before the
// other's grant. Before the fix, the holder learnt its loss at a heartbeat tick once a whole lease
// had passed since its last renewal, which raced the other's grant.
BOOST_AUTO_TEST_CASE(a_holder_cut_off_learns_its_loss_before_anyone_is_granted_its_permit,
                     *boost::unit_test::label("long"))
{
    constexpr std::chrono::milliseconds lease = 1000ms;
    constexpr int rounds = 20;
    redis_server server;
    int before = 0;
    for (int round = 0; round < rounds; ++round)
    {
        BOOST_TEST_CONTEXT("round " << round)
        {
            tcp_proxy proxy(server.port());
            clients c(server, proxy);
            const std::string semaphore_name = "round" + std::to_string(round);
            redis::semaphore holder_side(c.proxied, semaphore_name, 1, lease);
            redis::semaphore other_side(c.direct, semaphore_name, 1, lease);
            auto held = holder_side.async_acquire_permit(1, asio::use_future);
            permit p = wait(held);
            // Let a renewal or two go through, then cut the holder off at some point of its cycle.
            std::this_thread::sleep_for(lease / 2 +
                                        std::chrono::milliseconds(round * 17 % (lease.count() / 2)));
            proxy.hold();
            const auto lost = watch_loss(p);
            auto other_permit = std::make_shared<permit>();
            const auto other = acquire_timed(other_side, 1, other_permit);
            auto lost_when = lost->when.get_future();
            auto granted_when = other->when.get_future();
            std::atomic<bool> granted{false};
            std::thread busy_caller([&] {
                redis_server::client caller(server);
                const script s(semaphore_name);
                while (!granted.load())
                    caller.execute(s.acquire("busy", 1, 1, lease, redis::detail::acquire_mode::try_once));
            });
            const clock_type::time_point loss_time = wait(lost_when);
            const clock_type::time_point grant_time = wait(granted_when);
            granted.store(true);
            busy_caller.join();
            before += loss_time < grant_time;
            BOOST_TEST((loss_time < grant_time), "the holder learnt its loss "
                                                     << milliseconds(loss_time - grant_time)
                                                     << " ms after the other was granted its permit");
            proxy.release();
        }
    }
    BOOST_TEST(before == rounds);
}

// The release runs in Redis, its reply is dropped, the link is cut; sent again, it finds its id
// gone. Before the fix that was reported as lease_lost, although the permit had been given back.
BOOST_AUTO_TEST_CASE(a_release_whose_reply_was_lost_succeeds)
{
    constexpr std::chrono::milliseconds lease = 60s;
    redis_server server;
    tcp_proxy proxy(server.port());
    clients c(server, proxy);
    redis::semaphore sem(c.proxied, name, 1, lease);
    auto held = sem.async_acquire_permit(1, asio::use_future);
    permit p = wait(held);
    BOOST_TEST(check(server) == "ok\n1\n1\n0");

    proxy.drop_replies();
    auto released = p.async_release(asio::use_future);
    eventually([&] { return check(server) == "ok\n0\n0\n0"; }); // released in Redis, never answered
    proxy.cut();
    BOOST_CHECK_NO_THROW(wait(released)); // a system_error would carry lease_lost
    BOOST_TEST(check(server) == "ok\n0\n0\n0");
}

BOOST_AUTO_TEST_SUITE_END()
