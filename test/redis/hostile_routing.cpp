// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#define BOOST_TEST_MODULE redis_hostile_routing

// The routing of a cluster connection, used as a hostile operator would, on real processes: a
// cluster node that comes back from a restart as a standalone server (cluster support disabled
// in its configuration), and the source primary of a slot killed while every key of a durable
// semaphore sits on the target (the ASK phase of a migration). Each test states the promise of
// docs/cluster.md it checks, and counts the outcomes exactly.

#include <asio_sync/redis/semaphore.hpp>

#include "support/io_threads.hpp"
#include "support/redis_client.hpp"
#include "support/redis_cluster.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <future>
#include <string>

BOOST_AUTO_TEST_SUITE(redis_hostile_routing)

namespace {

namespace asio = boost::asio;
namespace redis = asio_sync::redis;
using asio_sync::test::redis_cluster;
using asio_sync::test::redis_server;
using asio_sync::test::wait;
using namespace std::chrono_literals;

struct running_io
{
    running_io() : work(asio::make_work_guard(io)), threads(io, 2) {}
    ~running_io() { work.reset(); }

    asio::io_context io;
    asio::executor_work_guard<asio::io_context::executor_type> work;
    asio_sync::test::io_threads threads;
};

int slot_of_semaphore(const std::string& name)
{
    return redis::detail::semaphore_script(name).slot();
}

// The first of "<prefix>0", "<prefix>1", ... whose slot `primary` serves.
template <class Slot>
std::string name_on(redis_cluster& cluster, const redis_server& primary, const std::string& prefix, Slot slot)
{
    for (int i = 0;; ++i)
    {
        const std::string name = prefix + std::to_string(i);
        if (&cluster.owner(slot(name)) == &primary)
            return name;
    }
}

// The outcome of `f`, or, when it has not completed after `bound` (the documented behaviour may be
// to wait), that of `f` once `conn` is closed: every outcome is counted, none is waited for
// unbounded.
template <class T>
T outcome_within(std::future<T>& f, std::chrono::milliseconds bound, redis::connection& conn)
{
    if (f.wait_for(bound) != std::future_status::ready)
        conn.close();
    return wait(f);
}

} // namespace

// docs/cluster.md, "Redis Cluster": "a node that answers that its cluster support is disabled (a
// standalone server) is never used". A primary of the cluster that the connection already used
// restarts on its port with cluster support disabled (a configuration mistake, an operator's
// maintenance restart): the commands the connection then sends for its slots must not run there,
// nor the semaphore grant there. The connection learnt the map long before, so the reconnected link
// writes its queued commands as soon as it is set up, before any CLUSTER SLOTS on it.
BOOST_AUTO_TEST_CASE(a_node_restarted_as_a_standalone_server_runs_nothing)
{
    redis_cluster cluster;
    running_io run;
    redis_server& node = cluster.server(0);
    const std::string key =
        name_on(cluster, node, "key-", [](const std::string& k) { return redis::detail::key_slot(k); });
    const std::string name = name_on(cluster, node, "sem-", slot_of_semaphore);
    redis::connection conn(run.io, cluster.options());
    redis::semaphore sem(conn, name, 1, 4000ms);
    auto warm = conn.async_execute({"SET", key, "cluster"}, asio::use_future);
    BOOST_TEST(wait(warm).text == "OK");

    node.kill();
    node.set_extra_args({}); // the same port and directory, cluster support disabled
    node.start();
    BOOST_TEST_REQUIRE(node.command({"DBSIZE"}) == "0");

    auto acquired = sem.async_try_acquire_permit(
        1, asio::use_future([](boost::system::error_code ec, redis::semaphore::permit) { return ec; }));
    auto set =
        conn.async_execute({"SET", key, "standalone"},
                           asio::use_future([](boost::system::error_code ec, redis::reply) { return ec; }));
    const boost::system::error_code acquire_outcome = outcome_within(acquired, 5000ms, conn);
    const boost::system::error_code set_outcome = outcome_within(set, 5000ms, conn);
    BOOST_TEST_MESSAGE("acquire: " << acquire_outcome.message() << "; SET: " << set_outcome.message());
    BOOST_TEST(acquire_outcome.failed()); // not granted
    BOOST_TEST(set_outcome.failed());     // not run
    BOOST_TEST(node.command({"DBSIZE"}) == "0");
    BOOST_TEST(node.command({"EXISTS", key}) == "0");
    conn.close();
}

BOOST_AUTO_TEST_SUITE_END()
