// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#define BOOST_TEST_MODULE redis_server

// The test fixture itself: a real server starts, keeps data across a restart with AOF on, and
// leaves no process and no directory behind.

#include "support/redis_server.hpp"

#include <boost/test/unit_test.hpp>

#include <signal.h>

#include <filesystem>

BOOST_AUTO_TEST_SUITE(redis_server)

namespace {

bool process_exists(pid_t pid)
{
    return ::kill(pid, 0) == 0;
}

} // namespace

BOOST_AUTO_TEST_CASE(starts_answers_and_cleans_up)
{
    pid_t pid;
    std::filesystem::path dir;
    {
        asio_sync::test::redis_server server;
        pid = server.pid();
        dir = server.dir();
        BOOST_TEST(server.command({"PING"}) == "PONG");
        BOOST_TEST(server.command({"DEBUG", "SLEEP", "0"}) == "OK"); // fault tests need DEBUG
        BOOST_TEST(process_exists(pid));
    }
    BOOST_TEST(!process_exists(pid));
    BOOST_TEST(!std::filesystem::exists(dir));
}

BOOST_AUTO_TEST_CASE(a_restart_with_aof_keeps_the_data)
{
    asio_sync::test::redis_server::options opts;
    opts.append_only = true;
    asio_sync::test::redis_server server(opts);
    const auto port = server.port();
    BOOST_TEST(server.command({"SET", "k", "v"}) == "OK");
    server.kill();
    BOOST_TEST(!server.running());
    BOOST_CHECK_THROW(server.command({"PING"}), std::runtime_error);
    server.start();
    BOOST_TEST(server.port() == port);
    BOOST_TEST(server.command({"GET", "k"}) == "v");
}

BOOST_AUTO_TEST_CASE(a_password_is_required_when_set)
{
    asio_sync::test::redis_server::options opts;
    opts.password = "secret";
    asio_sync::test::redis_server server(opts);
    BOOST_TEST(server.command({"PING"}) == "PONG"); // command() authenticates
}

BOOST_AUTO_TEST_SUITE_END()
