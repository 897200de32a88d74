// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#define BOOST_TEST_MODULE redis_sentinel

// A connection that finds its primary through Redis Sentinel, on real processes (a primary, two
// replicas, three sentinels, all on loopback): it connects to the primary the sentinels name,
// skips a sentinel that is down, follows a failover after the primary is killed, and does not
// run on a server that is no longer the primary: a command refused with READONLY waits for the
// primary and runs there once, never failing with read_only.

#include <asio_sync/redis/connection.hpp>

#include "support/io_threads.hpp"
#include "support/redis_client.hpp"
#include "support/redis_printing.hpp"
#include "support/redis_sentinel.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <future>
#include <string>
#include <string_view>
#include <vector>

BOOST_AUTO_TEST_SUITE(redis_sentinel)

namespace {

namespace asio = boost::asio;
namespace redis = asio_sync::redis;
using asio_sync::test::eventually;
using asio_sync::test::is_ready;
using asio_sync::test::redis_sentinel_set;
using asio_sync::test::wait;

struct outcome
{
    boost::system::error_code ec;
    std::string text;
};

struct fixture
{
    fixture() : work(asio::make_work_guard(io)), threads(io, 1), link(io, set.options()) {}

    ~fixture()
    {
        link.close();
        work.reset();
    }

    std::future<outcome> send(std::initializer_list<std::string_view> args)
    {
        return link.async_execute(args, asio::use_future([](boost::system::error_code ec, redis::reply r) {
                                      return outcome{ec, r.text};
                                  }));
    }

    outcome run(std::initializer_list<std::string_view> args)
    {
        auto f = send(args);
        return wait(f);
    }

    redis_sentinel_set set;
    asio::io_context io;
    asio::executor_work_guard<asio::io_context::executor_type> work;
    asio_sync::test::io_threads threads;
    redis::connection link;
};

} // namespace

BOOST_FIXTURE_TEST_CASE(commands_go_to_the_primary_the_sentinels_name, fixture)
{
    const outcome set_key = run({"SET", "k", "v"});
    BOOST_TEST(!set_key.ec);
    BOOST_TEST(set.server(0).command({"GET", "k"}) == "v");
}

BOOST_FIXTURE_TEST_CASE(a_sentinel_that_is_down_is_skipped, fixture)
{
    set.sentinel(0).kill();
    set.sentinel(1).pause();
    redis::connection other(io, set.options());
    auto f = other.async_execute({"SET", "k", "w"}, asio::use_future);
    BOOST_TEST(wait(f).text == "OK");
    BOOST_TEST(set.server(0).command({"GET", "k"}) == "w");
    set.sentinel(1).resume();
    other.close();
}

// The primary is killed while commands flow. Each completes exactly once: before the kill, or
// with connection_lost (written to the dead link, it may have run), or on the new primary once
// the sentinels have promoted a replica. Commands issued after the failover run there.
BOOST_FIXTURE_TEST_CASE(the_connection_follows_a_failover, fixture, *boost::unit_test::label("long"))
{
    BOOST_TEST(!run({"SET", "before", "1"}).ec);
    const std::uint16_t old_port = set.primary_port();
    std::vector<std::future<outcome>> during;
    for (int i = 0; i < 20; ++i)
        during.push_back(send({"INCR", "during"}));
    set.server(0).kill();
    for (int i = 0; i < 20; ++i)
        during.push_back(send({"INCR", "during"}));
    set.wait_for_failover_from(old_port);
    std::size_t ran = 0, lost = 0;
    for (auto& f : during)
    {
        const outcome o = wait(f);
        if (!o.ec)
            ++ran;
        else
        {
            BOOST_TEST_MESSAGE("a command during the failover: " << o.ec.message());
            BOOST_TEST((o.ec == redis::error::connection_lost));
            ++lost;
        }
    }
    BOOST_TEST(ran + lost == during.size());
    const outcome after = run({"SET", "after", "2"});
    BOOST_TEST(!after.ec);
    BOOST_TEST(set.server(set.index_of(set.primary_port())).command({"GET", "after"}) == "2");
}

// The primary is demoted under a live link (by hand here, as a failover does): the next write is
// refused with READONLY. It is not reported: the link goes back to the sentinels, finds the
// server is not a primary (ROLE), and retries until it is one again; then the write runs, once.
BOOST_FIXTURE_TEST_CASE(a_write_refused_as_read_only_waits_for_the_primary, fixture)
{
    BOOST_TEST(!run({"SET", "k", "0"}).ec);
    asio_sync::test::redis_server& primary = set.server(0);
    // A replica of nothing that answers: it keeps its data, and refuses writes.
    primary.command({"REPLICAOF", "127.0.0.1", "1"});
    auto write = send({"INCR", "k"});
    eventually([&] {
        return primary.command({"INFO", "errorstats"}).find("errorstat_READONLY") != std::string::npos;
    });
    BOOST_TEST(!is_ready(write));
    primary.command({"REPLICAOF", "NO", "ONE"});
    const outcome o = wait(write);
    BOOST_TEST(!o.ec);
    BOOST_TEST(primary.command({"GET", "k"}) == "1");
}

// A server that the sentinels still name but that is not a primary (a failover in progress) is
// not used, not even for a read: the link checks ROLE before any command, and tries again.
BOOST_FIXTURE_TEST_CASE(a_link_is_not_set_up_on_a_server_that_is_not_a_primary, fixture)
{
    asio_sync::test::redis_server& primary = set.server(0);
    primary.command({"SET", "k", "1"});
    const auto role_calls = [&] {
        const std::string stats = primary.command({"INFO", "commandstats"});
        const std::size_t at = stats.find("cmdstat_role:calls=");
        return at == std::string::npos ? 0L : std::stol(stats.substr(at + 19));
    };
    BOOST_TEST(run({"PING"}).text == "PONG"); // the link is up (it connects from its construction)
    const long before = role_calls();
    // Demoted as the sentinels demote a server: REPLICAOF, then its clients are disconnected.
    primary.command({"REPLICAOF", "127.0.0.1", "1"});
    primary.command({"CLIENT", "KILL", "TYPE", "normal"});
    eventually([&] { return role_calls() >= before + 1; }); // the link came back, and was refused
    auto read = send({"GET", "k"});                         // so it waits in the queue
    eventually([&] { return role_calls() >= before + 2; }); // tried again, refused again
    BOOST_TEST(!is_ready(read));
    primary.command({"REPLICAOF", "NO", "ONE"});
    const outcome o = wait(read);
    BOOST_TEST(!o.ec);
    BOOST_TEST(o.text == "1");
}

// A primary that hangs with its connections open (SIGSTOP) looks alive to a link without a health
// check. The connection listens to a sentinel's +switch-master, so the promotion moves it all the
// same: the command written to the hung primary completes (with connection_lost, or its reply if
// it was not yet written), and the next one runs on the new primary.
BOOST_AUTO_TEST_CASE(a_hung_primary_is_left_when_a_sentinel_announces_the_switch,
                     *boost::unit_test::label("long"))
{
    redis_sentinel_set set;
    asio::io_context io;
    auto work = asio::make_work_guard(io);
    asio_sync::test::io_threads threads(io, 1);
    redis::connection_options o = set.options();
    o.health_check_interval = std::chrono::milliseconds(0);
    redis::connection link(io, o);
    const auto send = [&](std::initializer_list<std::string_view> args) {
        return link.async_execute(args, asio::use_future([](boost::system::error_code ec, redis::reply r) {
                                      return outcome{ec, r.text};
                                  }));
    };
    auto first = send({"SET", "k", "1"});
    BOOST_TEST(!wait(first).ec);
    // The watch link is subscribed (a sentinel has a client in pub/sub).
    eventually([&] {
        for (std::size_t i = 0; i < 3; ++i)
            if (set.sentinel(i).command({"CLIENT", "LIST"}).find(" sub=1 ") != std::string::npos)
                return true;
        return false;
    });
    const std::uint16_t old_port = set.primary_port();
    asio_sync::test::redis_server& primary = set.server(set.index_of(old_port));
    primary.pause();
    auto stuck = send({"GET", "k"});
    set.wait_for_failover_from(old_port);
    const outcome hung = wait(stuck);
    BOOST_TEST((hung.ec == redis::error::connection_lost || (!hung.ec && hung.text == "1")));
    auto after = send({"SET", "k", "2"});
    BOOST_TEST(!wait(after).ec);
    BOOST_TEST(set.server(set.index_of(set.primary_port())).command({"GET", "k"}) == "2");
    primary.resume();
    link.close();
    work.reset();
}

BOOST_AUTO_TEST_SUITE_END()
