// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#define BOOST_TEST_MODULE redis_semaphore_faults
#define BOOST_TEST_NO_MAIN // main below also runs the child role

// The fleet-wide semaphore through faults, on a real server: a holder and a waiter killed with
// SIGKILL, a holder stopped past its lease, connections killed by the server, links that stay
// open but forward nothing, and the server asleep. Where a process must die or stop it is a child: this
// binary run again in the holder role (a fork is unsafe once the tests have made threads). Nothing here waits
// for a time to pass: each test waits for the outcome it expects, and the wait limit only turns a hang into a
// failure. (A server restart is tested in semaphore.cpp.)

#include <asio_sync/redis/semaphore.hpp>

#include "support/child_process.hpp"
#include "support/io_threads.hpp"
#include "support/redis_client.hpp"
#include "support/redis_server.hpp"
#include "support/semaphore_keys.hpp"
#include "support/tcp_proxy.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <csignal>
#include <cstdint>
#include <future>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

BOOST_AUTO_TEST_SUITE(redis_semaphore_faults)

namespace {

namespace asio = boost::asio;
namespace redis = asio_sync::redis;
using asio_sync::test::child_process;
using asio_sync::test::eventually;
using asio_sync::test::queue_length;
using asio_sync::test::is_ready;
using asio_sync::test::options_for;
using asio_sync::test::pipe_link;
using asio_sync::test::redis_server;
using asio_sync::test::wait;
using namespace std::chrono_literals;
using permit = redis::semaphore::permit;
using script = redis::detail::semaphore_script;

constexpr const char* name = "jobs";

// Long enough that a live holder never loses its lease to the test's own stalls (sanitizers
// included), short enough that waiting for a dead holder's lease to lapse is quick.
constexpr std::chrono::milliseconds lease{1000};

// The server's sleep, and a lease that outlasts it with room for a renewal before and after.
constexpr std::chrono::seconds server_sleep{1};
constexpr std::chrono::milliseconds lease_past_sleep{3000};

// The invariant check of the library: "ok <used> <holders> <queued>"; an error (a broken
// invariant, e.g. more permits held than the capacity) throws.
std::string check(const redis_server& server)
{
    return server.command(script(name).check());
}

std::string outcome(boost::system::error_code ec)
{
    if (!ec)
        return "ok";
    if (ec == redis::error::lease_lost)
        return "lease_lost";
    return ec.message();
}

constexpr const char* holder_role = "--semaphore-holder";

// The child role: acquires 1 permit and reports to the test, one line each: "granted
// <fence>" (or "error <what>"), then "lost <outcome>" when its lease is lost, then "released
// <outcome>" of its release after the loss. It runs until killed, or until it has released.
int hold_in_child(std::uint16_t port, pipe_link& link)
{
    asio::io_context io;
    redis::connection conn(io, options_for(port));
    redis::semaphore sem(conn, name, 1, lease);
    permit held;
    sem.async_acquire_permit(1, [&](boost::system::error_code ec, permit p) {
        held = std::move(p);
        if (ec)
        {
            link.send("error " + ec.message());
            return io.stop();
        }
        link.send("granted " + std::to_string(held.fencing_token()));
        held.async_wait_lost([&](boost::system::error_code lost) {
            link.send("lost " + outcome(lost));
            held.async_release([&](boost::system::error_code released) {
                link.send("released " + outcome(released));
                io.stop();
            });
        });
    });
    io.run();
    return 0;
}

// Runs this binary in the holder role on `server`.
std::unique_ptr<child_process> spawn_holder(const redis_server& server)
{
    return std::make_unique<child_process>(
        std::vector<std::string>{holder_role, std::to_string(server.port()), std::to_string(::getpid())});
}

std::uint64_t granted_fence(pipe_link& link)
{
    const std::string line = link.receive();
    BOOST_REQUIRE_MESSAGE(line.rfind("granted ", 0) == 0, "the child reported '" << line << "'");
    return std::stoull(line.substr(8));
}

// The test's own side: an io_context run by one thread, and two connections.
struct clients
{
    explicit clients(std::uint16_t port)
        : work(asio::make_work_guard(io)), threads(io, 1), first(io, options_for(port)),
          second(io, options_for(port))
    {
    }

    ~clients()
    {
        first.close();
        second.close();
        work.reset();
    }

    asio::io_context io;
    asio::executor_work_guard<asio::io_context::executor_type> work;
    asio_sync::test::io_threads threads;
    redis::connection first;
    redis::connection second;
};

// A server and the test's clients, for the tests without a child process.
struct server_and_clients
{
    redis_server server;
    clients local{server.port()};
};

permit hold(redis::semaphore& sem, std::size_t n)
{
    auto f = sem.async_acquire_permit(n, asio::use_future);
    return wait(f);
}

} // namespace

BOOST_AUTO_TEST_CASE(the_permit_of_a_killed_holder_and_the_place_of_a_killed_waiter_return)
{
    redis_server server;
    const auto holder = spawn_holder(server);
    const std::uint64_t killed_fence = granted_fence(holder->link());
    const auto waiter = spawn_holder(server);
    eventually([&] { return queue_length(server, name) == "1"; });

    clients local(server.port());
    redis::semaphore sem(local.first, name, 1, lease);
    auto served = sem.async_acquire_permit(1, asio::use_future);
    eventually([&] { return queue_length(server, name) == "2"; });
    BOOST_TEST(!is_ready(served)); // behind a live holder and a live waiter

    holder->kill();
    waiter->kill();
    const permit p = wait(served);
    BOOST_TEST(p.count() == 1u);
    BOOST_TEST(p.fencing_token() > killed_fence);
    BOOST_TEST(check(server) == "ok\n1\n1\n0");
}

BOOST_AUTO_TEST_CASE(a_holder_stopped_past_its_lease_loses_it_and_learns_it_after_it_resumes)
{
    redis_server server;
    const auto holder = spawn_holder(server);
    const std::uint64_t stopped_fence = granted_fence(holder->link());
    holder->signal(SIGSTOP);

    clients local(server.port());
    redis::semaphore sem(local.first, name, 1, lease);
    const permit p = hold(sem, 1); // the others go on once the stopped lease lapses
    BOOST_TEST(p.fencing_token() > stopped_fence);

    holder->signal(SIGCONT);
    BOOST_TEST(holder->link().receive() == "lost lease_lost");
    BOOST_TEST(holder->link().receive() == "released lease_lost");
    BOOST_TEST(holder->wait() == 0);
    BOOST_TEST(check(server) == "ok\n1\n1\n0"); // the resumed holder took nothing back
}

BOOST_FIXTURE_TEST_CASE(killed_connections_reconnect_without_granting_twice, server_and_clients)
{
    redis::semaphore holding(local.first, name, 2, lease);
    redis::semaphore waiting(local.second, name, 2, lease);
    permit h = hold(holding, 2);
    const std::uint64_t held_fence = h.fencing_token();

    // Killed right after the acquire was issued: its call may be unsent, sent, or run; the
    // replay after the reconnection queues it once.
    auto served = waiting.async_acquire_permit(1, asio::use_future);
    server.command({"CLIENT", "KILL", "TYPE", "normal"});
    eventually([&] { return queue_length(server, name) == "1"; });
    BOOST_TEST(check(server) == "ok\n2\n1\n1");

    // Killed while it waits, the subscriber links too: the grant below may be published while
    // the waiter's subscriber link is down.
    server.command({"CLIENT", "KILL", "TYPE", "normal"});
    server.command({"CLIENT", "KILL", "TYPE", "pubsub"});
    BOOST_TEST(check(server) == "ok\n2\n1\n1");
    BOOST_TEST(!is_ready(served));

    auto released = h.async_release(asio::use_future);
    wait(released); // throws if the lease was lost across the reconnections
    permit p = wait(served);
    BOOST_TEST(p.count() == 1u);
    BOOST_TEST(p.fencing_token() > held_fence);
    BOOST_TEST(check(server) == "ok\n1\n1\n0");
    p = permit();
    eventually([&] { return check(server) == "ok\n0\n0\n0"; });
}

// A waiter whose links stay open but forward nothing (a stuck proxy): its untimed acquire used to
// stay pending for ever while Redis itself was fine. The health check (on by default) finds the
// links dead, the connection replaces them, the acquire is replayed by id, and it is served.
BOOST_AUTO_TEST_CASE(an_acquire_behind_links_that_answer_nothing_is_served_once_they_are_replaced)
{
    redis_server server;
    asio_sync::test::tcp_proxy proxy(server.port());
    clients local(server.port());
    redis::connection through_proxy(local.io, options_for(proxy.port()));
    {
        redis::semaphore holding(local.first, name, 1, lease);
        redis::semaphore waiting(through_proxy, name, 1, lease);
        permit h = hold(holding, 1);
        auto served = waiting.async_acquire_permit(1, asio::use_future);
        eventually([&] { return queue_length(server, name) == "1"; });

        proxy.freeze();
        h = permit(); // released: the waiter is granted, and its links hear nothing of it
        const permit p = wait(served);
        BOOST_TEST(p.count() == 1u);
        BOOST_TEST(check(server) == "ok\n1\n1\n0");
    }
    through_proxy.close();
}

BOOST_FIXTURE_TEST_CASE(acquires_in_flight_across_a_server_sleep_are_each_granted_once, server_and_clients)
{
    redis::semaphore a(local.first, name, 2, lease_past_sleep);
    redis::semaphore b(local.second, name, 2, lease_past_sleep);
    permit h = hold(a, 1);

    // Shorter than the lease: no holder may lose its permit to the sleep.
    auto slept =
        local.first.async_execute({"DEBUG", "SLEEP", std::to_string(server_sleep.count())}, asio::use_future);
    std::vector<std::future<permit>> pending;
    for (int i = 0; i < 2; ++i)
    {
        pending.push_back(a.async_acquire_permit(1, asio::use_future)); // behind the sleep
        pending.push_back(b.async_acquire_permit(1, asio::use_future));
    }
    wait(slept);

    // One permit was free: exactly one is granted; then each release lets one more in.
    std::set<std::uint64_t> fences{h.fencing_token()};
    auto ready_count = [&] {
        std::size_t ready = 0;
        for (auto& f : pending)
            ready += f.valid() && is_ready(f);
        return ready;
    };
    eventually([&] { return ready_count() > 0; });
    BOOST_TEST(ready_count() == 1u);
    h = permit();
    for (std::size_t served = 0; served < 4; ++served)
    {
        eventually([&] { return ready_count() > 0; });
        BOOST_TEST(ready_count() <= 2u);
        for (auto& f : pending)
        {
            if (f.valid() && is_ready(f))
            {
                permit p = f.get();
                BOOST_TEST(p.count() == 1u);
                BOOST_TEST(fences.insert(p.fencing_token()).second);
                BOOST_TEST(check(server).rfind("ok\n", 0) == 0u);
                auto released = p.async_release(asio::use_future);
                wait(released);
                break;
            }
        }
    }
    eventually([&] { return check(server) == "ok\n0\n0\n0"; });
}

BOOST_AUTO_TEST_SUITE_END()

int main(int argc, char* argv[])
{
    if (argc == 4 && std::string_view(argv[1]) == redis_semaphore_faults::holder_role)
    {
        if (!asio_sync::test::die_with_parent(static_cast<pid_t>(std::stol(argv[3]))))
            return 127;
        asio_sync::test::pipe_link link(STDIN_FILENO, STDOUT_FILENO);
        return redis_semaphore_faults::hold_in_child(static_cast<std::uint16_t>(std::stoul(argv[2])), link);
    }
    return boost::unit_test::unit_test_main(&init_unit_test, argc, argv);
}
