// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#define BOOST_TEST_MODULE redis_semaphore_process

// The fleet-wide semaphore across processes. A binary of its own: a child forked by a process that
// has threads must not start any under ThreadSanitizer, and the child's connection starts one (its
// resolver), so the fork comes before this process has any thread (a completion through a
// use_future handler, as in the semaphore's tests, starts the system executor's threads for good).

#include <asio_sync/redis/semaphore.hpp>

#include "support/redis_client.hpp"
#include "support/redis_server.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/test/unit_test.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <future>
#include <thread>
#include <utility>

BOOST_AUTO_TEST_SUITE(redis_semaphore_process)

namespace {

namespace asio = boost::asio;
namespace redis = asio_sync::redis;
using asio_sync::test::options_for;
using asio_sync::test::redis_server;
using permit = redis::semaphore::permit;
using script = redis::detail::semaphore_script;

constexpr std::chrono::seconds limit = asio_sync::test::redis_wait_limit;
constexpr std::chrono::milliseconds lease{500};

} // namespace

// The holder is another process, forked before this one has any thread, killed with SIGKILL
// while it holds every permit: its lease lapses and the permits return.
BOOST_AUTO_TEST_CASE(the_permits_of_a_killed_process_return)
{
    redis_server server;
    int ready[2];
    BOOST_REQUIRE(::pipe(ready) == 0);
    const pid_t child = ::fork();
    BOOST_REQUIRE(child >= 0);
    if (child == 0)
    {
        asio::io_context io;
        redis::connection conn(io, options_for(server.port()));
        redis::semaphore sem(conn, "jobs", 2, lease);
        permit held;
        sem.async_acquire_permit(2, [&](boost::system::error_code ec, permit p) {
            held = std::move(p);
            const char byte = ec ? 'e' : 'g';
            if (::write(ready[1], &byte, 1) != 1)
                ::_exit(1);
        });
        io.run(); // renews until killed
        ::_exit(0);
    }
    ::close(ready[1]);
    char byte = 0;
    BOOST_REQUIRE(::read(ready[0], &byte, 1) == 1);
    ::close(ready[0]);
    BOOST_TEST(byte == 'g');
    BOOST_TEST(server.execute(script("jobs").check()).to_text() == "ok\n2\n1\n0");
    ::kill(child, SIGKILL);
    int status = 0;
    BOOST_REQUIRE(::waitpid(child, &status, 0) == child);

    asio::io_context io;
    auto work = asio::make_work_guard(io);
    std::thread runner([&] { io.run(); });
    {
        redis::connection conn(io, options_for(server.port()));
        redis::semaphore sem(conn, "jobs", 2, lease);
        auto f = sem.async_acquire_permit(2, asio::use_future);
        BOOST_REQUIRE(f.wait_for(limit) == std::future_status::ready);
        permit p = f.get();
        BOOST_TEST(p.count() == 2u);
        p = permit();
        conn.close();
    }
    work.reset();
    io.stop();
    runner.join();
}

BOOST_AUTO_TEST_SUITE_END()
