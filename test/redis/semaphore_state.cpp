// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#define BOOST_TEST_MODULE redis_semaphore_state

// The fleet-wide semaphore when Redis loses its state, on a real server: each of its keys deleted
// while a permit is held and a waiter queued, and a restart with neither AOF nor RDB (the keys
// have no expiry, so a volatile-* policy never evicts them: semaphore_script.cpp shows it). The holder must hear
// that its permit is lost (state_lost) strictly before anyone is granted the permit again, the two
// events ordered on CLOCK_MONOTONIC (steady_clock); fencing tokens must keep growing. A server that
// may evict refuses new acquires with eviction_policy.

#include <asio_sync/redis/semaphore.hpp>

#include "support/io_threads.hpp"
#include "support/redis_client.hpp"
#include "support/redis_server.hpp"
#include "support/semaphore_keys.hpp"
#include "support/semaphore_timeline.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <vector>

BOOST_AUTO_TEST_SUITE(redis_semaphore_state)

namespace {

namespace asio = boost::asio;
namespace redis = asio_sync::redis;
using asio_sync::test::acquire_timed;
using asio_sync::test::eventually;
using asio_sync::test::queue_length;
using asio_sync::test::milliseconds;
using asio_sync::test::options_for;
using asio_sync::test::redis_server;
using asio_sync::test::wait;
using asio_sync::test::watch_loss;
using clock_type = std::chrono::steady_clock;
using namespace std::chrono_literals;
using permit = redis::semaphore::permit;
using script = redis::detail::semaphore_script;

constexpr const char* name = "jobs";
constexpr std::chrono::milliseconds lease = 1000ms;

// Three clients of one server, each on a connection of its own: the holder, a waiter queued
// behind it, and a latecomer that acquires once the state is gone. One io_context, one thread.
struct fleet
{
    explicit fleet(const redis_server& server)
        : work(asio::make_work_guard(io)), threads(io, 1), holder_link(io, options_for(server.port())),
          waiter_link(io, options_for(server.port())), late_link(io, options_for(server.port()))
    {
    }

    ~fleet()
    {
        holder_link.close();
        waiter_link.close();
        late_link.close();
        work.reset();
    }

    asio::io_context io;
    asio::executor_work_guard<asio::io_context::executor_type> work;
    asio_sync::test::io_threads threads;
    redis::connection holder_link;
    redis::connection waiter_link;
    redis::connection late_link;
};

// Runs the scenario of the file: a holder of both permits of a semaphore of 2 and a waiter for
// one, `lose_state` run on the server, then a latecomer for one. The holder must learn of its loss
// with state_lost before the waiter or the latecomer is granted, and their fences must be above
// the holder's.
template <class LoseState>
void lose_state_while_held(LoseState lose_state)
{
    redis_server server;
    fleet f(server);
    redis::semaphore holder_side(f.holder_link, name, 2, lease);
    redis::semaphore waiter_side(f.waiter_link, name, 2, lease);
    redis::semaphore late_side(f.late_link, name, 2, lease);

    auto held = holder_side.async_acquire_permit(2, asio::use_future);
    permit p = wait(held);
    const auto lost = watch_loss(p);
    auto waiter_permit = std::make_shared<permit>();
    const auto waiter = acquire_timed(waiter_side, 1, waiter_permit);
    eventually([&] { return queue_length(server, name) == "1"; });

    lose_state(server);
    auto late_permit = std::make_shared<permit>();
    const auto late = acquire_timed(late_side, 1, late_permit);

    auto lost_when = lost->when.get_future();
    auto lost_what = lost->error.get_future();
    const clock_type::time_point loss_time = wait(lost_when);
    BOOST_TEST(wait(lost_what) == boost::system::error_code(redis::error::state_lost));
    for (const auto& [who, e] : {std::pair{"the waiter", waiter}, std::pair{"the latecomer", late}})
    {
        BOOST_TEST_CONTEXT(who)
        {
            auto when = e->when.get_future();
            auto what = e->error.get_future();
            auto fence = e->fence.get_future();
            const clock_type::time_point grant_time = wait(when);
            BOOST_TEST(!wait(what));
            BOOST_TEST((loss_time < grant_time), "granted " << milliseconds(loss_time - grant_time)
                                                            << " ms before the holder learnt its loss");
            BOOST_TEST(wait(fence) > p.fencing_token());
        }
    }
}

} // namespace

BOOST_AUTO_TEST_CASE(meta_deleted_while_held_is_lost_state_and_the_holder_hears_it_first)
{
    lose_state_while_held([](const redis_server& server) {
        server.command({"DEL", script(name).key(redis::detail::semaphore_key::meta)});
    });
}

BOOST_AUTO_TEST_CASE(deadlines_deleted_while_held_is_lost_state_and_the_holder_hears_it_first)
{
    lose_state_while_held([](const redis_server& server) {
        server.command({"DEL", script(name).key(redis::detail::semaphore_key::deadlines)});
    });
}

BOOST_AUTO_TEST_CASE(the_queue_deleted_while_held_is_lost_state_and_the_holder_hears_it_first)
{
    lose_state_while_held([](const redis_server& server) {
        server.command({"DEL", script(name).key(redis::detail::semaphore_key::queue)});
    });
}

// Neither AOF nor RDB: a restart forgets every grant, and the library too. The holder hears that
// its state was lost at its next renewal; the next grant's fence is still above its own. (Nothing
// in Redis can tell that leases were live: the restart is not kept from granting at once, see
// "Lost state" in docs/cluster/how-it-works.md.)
BOOST_AUTO_TEST_CASE(fences_keep_growing_across_a_restart_without_persistence)
{
    redis_server server; // neither AOF nor RDB
    fleet f(server);
    redis::semaphore holder_side(f.holder_link, name, 1, lease);
    redis::semaphore late_side(f.late_link, name, 1, lease);
    auto held = holder_side.async_acquire_permit(1, asio::use_future);
    permit p = wait(held);
    const auto lost = watch_loss(p);

    server.stop();
    server.start();
    auto lost_what = lost->error.get_future();
    BOOST_TEST(wait(lost_what) == boost::system::error_code(redis::error::state_lost));
    auto granted = late_side.async_acquire_permit(1, asio::use_future);
    const permit next = wait(granted);
    BOOST_TEST(next.fencing_token() > p.fencing_token());
}

BOOST_AUTO_TEST_CASE(a_server_that_may_evict_refuses_acquires)
{
    redis_server server;
    server.command({"CONFIG", "SET", "maxmemory", "100mb"});
    server.command({"CONFIG", "SET", "maxmemory-policy", "allkeys-lru"});
    fleet f(server);
    redis::semaphore sem(f.holder_link, name, 1, lease);
    auto refused = sem.async_acquire_permit(1, asio::use_future);
    BOOST_CHECK_EXCEPTION(
        wait(refused), boost::system::system_error,
        [](const boost::system::system_error& e) { return e.code() == redis::error::eviction_policy; });

    // Fixed by the operator: the next connect checks again.
    server.command({"CONFIG", "SET", "maxmemory-policy", "noeviction"});
    server.command({"CLIENT", "KILL", "TYPE", "normal"});
    eventually([&] {
        auto f2 = sem.async_try_acquire_permit(1, asio::use_future);
        try
        {
            return wait(f2).count() == 1u;
        }
        catch (const boost::system::system_error& e)
        {
            BOOST_REQUIRE(e.code() == redis::error::eviction_policy);
            return false;
        }
    });
}

BOOST_AUTO_TEST_SUITE_END()
