// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#define BOOST_TEST_MODULE redis_hostile_routing

// The routing of a cluster connection and the Sentinel replica policy, used as a hostile operator
// would, on real processes, each test stating the promise of docs/cluster/ it checks and counting
// the outcomes exactly: a cluster node that comes back from a restart as a standalone server runs
// nothing (a command redirected there fails with cluster_disabled), the redirection limit at 1 fails
// an acquire, an acquire queued before a Sentinel failover to a promoted replica without
// min-replicas-to-write is refused, a release refused with NOREPLICAS leaves the lease to lapse, and
// a standalone seed beside a real node is never used.

#include <asio_sync/redis/semaphore.hpp>

#include "support/io_threads.hpp"
#include "support/redis_client.hpp"
#include "support/redis_cluster.hpp"
#include "support/redis_sentinel.hpp"
#include "support/semaphore_keys.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cstdint>
#include <future>
#include <string>

BOOST_AUTO_TEST_SUITE(redis_hostile_routing)

namespace {

namespace asio = boost::asio;
namespace redis = asio_sync::redis;
using asio_sync::test::name_on;
using asio_sync::test::redis_cluster;
using asio_sync::test::redis_server;
using asio_sync::test::running_io;
using asio_sync::test::slot_of_semaphore;
using asio_sync::test::wait;
using namespace std::chrono_literals;

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

// docs/cluster/sentinel-and-cluster.md, "Redis Cluster": "a node that answers that its cluster
// support is disabled (a standalone server) is never used". A primary of the cluster that the
// connection already used restarts on its port with cluster support disabled (a configuration
// mistake, an operator's maintenance restart): the commands the connection then sends for its slots
// must not run there, nor the semaphore grant there. The connection learnt the map long before, so
// the reconnected link writes its queued commands as soon as it is set up, before any CLUSTER SLOTS
// on it.
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

// docs/cluster/sentinel-and-cluster.md, "Redis Cluster": a command "redirected to it (MOVED, ASK)
// fails with error::cluster_disabled, unsent". As above, but the other primaries keep naming the
// restarted node as the owner of its slots (their cluster-node-timeout raised: they do not mark it
// failed and answer CLUSTERDOWN instead): each command of its slots goes to another node, which
// redirects it there; it must fail at once, before and after the connection learnt that the node is
// standalone, not wait for a node that is never used.
BOOST_AUTO_TEST_CASE(a_command_redirected_to_a_node_restarted_as_a_standalone_server_fails)
{
    redis_cluster cluster;
    running_io run;
    redis_server& node = cluster.server(0);
    for (std::size_t i : {std::size_t(1), std::size_t(2)})
        BOOST_TEST_REQUIRE(cluster.server(i).command({"CONFIG", "SET", "cluster-node-timeout", "600000"}) ==
                           "OK");
    const std::string key =
        name_on(cluster, node, "key-", [](const std::string& k) { return redis::detail::key_slot(k); });
    redis::connection conn(run.io, cluster.options());
    auto warm = conn.async_execute({"SET", key, "cluster"}, asio::use_future);
    BOOST_TEST(wait(warm).text == "OK");

    node.kill();
    node.set_extra_args({});
    node.start();
    for (int i = 0; i < 2; ++i)
    {
        auto set = conn.async_execute(
            {"SET", key, "standalone"},
            asio::use_future([](boost::system::error_code ec, redis::reply) { return ec; }));
        const boost::system::error_code outcome = outcome_within(set, 5000ms, conn);
        BOOST_TEST_MESSAGE("SET " << i << ": " << outcome.message());
        BOOST_TEST(outcome == boost::system::error_code(redis::error::cluster_disabled));
    }
    BOOST_TEST(node.command({"DBSIZE"}) == "0");
    conn.close();
}

// docs/cluster/errors.md: too_many_redirections, "in a Redis Cluster, a call met more MOVED or
// ASK answers than connection_options::max_redirections (nodes whose maps disagree); it did not
// run". An acquire of a semaphore whose slot two nodes send back and forth, with the limit at 1,
// with and without durable grants (the WAIT goes with the call, and fails with it), bounded by a
// deadline: it fails with too_many_redirections, and nothing is written on either node.
BOOST_AUTO_TEST_CASE(an_acquire_sent_back_and_forth_fails_at_a_limit_of_one)
{
    redis_cluster cluster;
    running_io run;
    redis_server& a = cluster.server(0);
    redis_server& b = cluster.server(1);
    const std::string name = name_on(cluster, a, "pingpong-", slot_of_semaphore);
    const std::string s = std::to_string(slot_of_semaphore(name));
    BOOST_TEST_REQUIRE(a.command({"CLUSTER", "COUNTKEYSINSLOT", s}) == "0");
    BOOST_TEST(a.command({"CLUSTER", "SETSLOT", s, "NODE", redis_cluster::id_of(b)}) == "OK");
    for (const unsigned durable : {0u, 1u})
    {
        BOOST_TEST_CONTEXT("durable_replicas " << durable)
        {
            redis::connection_options options = cluster.options();
            options.max_redirections = 1;
            redis::connection conn(run.io, options);
            redis::semaphore_options sem_options;
            sem_options.lease_duration = 3000ms;
            sem_options.durable_replicas = durable;
            redis::semaphore sem(conn, name, 1, sem_options);
            auto acquired = sem.async_acquire_permit_for(
                1, 10s,
                asio::use_future([](boost::system::error_code ec, redis::semaphore::permit) { return ec; }));
            const boost::system::error_code outcome = wait(acquired);
            BOOST_TEST_MESSAGE("acquire: " << outcome.message());
            BOOST_TEST((outcome == redis::error::too_many_redirections));
            BOOST_TEST(a.command({"CLUSTER", "COUNTKEYSINSLOT", s}) == "0");
            BOOST_TEST(b.command({"CLUSTER", "COUNTKEYSINSLOT", s}) == "0");
            conn.close();
        }
    }
}

// docs/cluster/guarantees.md, "A partitioned primary": under Sentinel without durable grants, "a
// server where either value is 0 ... fails every acquire with error::replica_policy, until a
// reconnect finds it set", and the setting belongs on every server, "any of them may be promoted".
// Here it is on the primary only: the replicas have min-replicas-to-write 0. An acquire queued on
// the guarded primary before it fails over, and one made after, reach the unguarded replica
// promoted in its place: both must fail with replica_policy (a grant there is not bounded by the
// partition formula).
BOOST_AUTO_TEST_CASE(an_acquire_queued_before_a_failover_to_an_unguarded_replica_is_refused,
                     *boost::unit_test::label("long"))
{
    asio_sync::test::redis_sentinel_set set(2, 3, 1); // min-replicas-to-write 1, max lag 1 s
    const std::uint16_t old_port = set.primary_port();
    redis_server& primary = set.server(set.index_of(old_port));
    for (redis_server* replica : set.others_than(primary))
        BOOST_TEST(replica->command({"CONFIG", "SET", "min-replicas-to-write", "0"}) == "OK");
    running_io run;
    redis::semaphore_options options;
    options.lease_duration = 4000ms; // longer than the failover
    redis::connection holder_conn(run.io, set.options());
    redis::connection waiter_conn(run.io, set.options());
    redis::semaphore holder_sem(holder_conn, "jobs", 1, options);
    redis::semaphore waiter_sem(waiter_conn, "jobs", 1, options);
    auto first = holder_sem.async_acquire_permit(1, asio::use_future);
    redis::semaphore::permit held = wait(first); // the guarded primary passed the check
    auto queued = waiter_sem.async_acquire_permit_for(
        1, 20s, asio::use_future([](boost::system::error_code ec, redis::semaphore::permit) { return ec; }));
    asio_sync::test::eventually([&] { return asio_sync::test::queue_length(primary, "jobs") == "1"; });

    primary.kill();
    set.wait_for_failover_from(old_port);
    redis_server& promoted = set.server(set.index_of(set.primary_port()));
    BOOST_TEST_MESSAGE("promoted " << promoted.port());
    auto released = held.async_release(asio::use_future([](boost::system::error_code ec) { return ec; }));
    const boost::system::error_code release_outcome = wait(released);
    const boost::system::error_code queued_outcome = wait(queued);
    auto later = holder_sem.async_try_acquire_permit(
        1, asio::use_future([](boost::system::error_code ec, redis::semaphore::permit) { return ec; }));
    const boost::system::error_code later_outcome = wait(later);
    BOOST_TEST_MESSAGE("release: " << release_outcome.message()
                                   << "; the queued acquire: " << queued_outcome.message()
                                   << "; an acquire after the failover: " << later_outcome.message());
    BOOST_TEST((queued_outcome == redis::error::replica_policy));
    BOOST_TEST((later_outcome == redis::error::replica_policy));
    holder_conn.close();
    waiter_conn.close();
}

// docs/cluster/errors.md: no_replicas, "async_release: the primary refused it (NOREPLICAS) ...
// the permit's lease lapses on the server". A release refused so fails once with no_replicas; the
// permit is not renewed any more, and the server keeps counting it until its lease lapses: a try
// meanwhile finds no permit free, and an acquire is granted once the lease has lapsed.
BOOST_AUTO_TEST_CASE(a_release_refused_with_noreplicas_leaves_the_lease_to_lapse)
{
    redis_server server;
    running_io run;
    redis::connection conn(run.io, asio_sync::test::options_for(server.port()));
    redis::semaphore sem(conn, "jobs", 1, 2000ms);
    auto first = sem.async_acquire_permit(1, asio::use_future);
    redis::semaphore::permit held = wait(first);
    BOOST_TEST(server.command({"CONFIG", "SET", "min-replicas-to-write", "1"}) == "OK"); // no replica
    auto released = held.async_release(asio::use_future([](boost::system::error_code ec) { return ec; }));
    const boost::system::error_code release_outcome = wait(released);
    BOOST_TEST((release_outcome == redis::error::no_replicas), release_outcome.message());
    BOOST_TEST(held.count() == 0u);
    BOOST_TEST(server.command({"CONFIG", "SET", "min-replicas-to-write", "0"}) == "OK");
    auto tried = sem.async_try_acquire_permit(
        1, asio::use_future([](boost::system::error_code ec, redis::semaphore::permit) { return ec; }));
    const boost::system::error_code tried_outcome = wait(tried);
    BOOST_TEST((tried_outcome == asio::error::would_block), tried_outcome.message());
    auto next = sem.async_acquire_permit(1, asio::use_future);
    redis::semaphore::permit granted = wait(next);
    BOOST_TEST(granted.count() == 1u);
    auto done = granted.async_release(asio::use_future([](boost::system::error_code ec) { return ec; }));
    BOOST_TEST(!wait(done));
    conn.close();
}

// docs/cluster/sentinel-and-cluster.md, "Redis Cluster": a seed that is a standalone server "is
// never used ... Its commands go to another node given". Seed lists that mix a standalone server
// with one real node, in both orders: a command and a semaphore's acquire and release run on the
// cluster, nothing on the standalone server.
BOOST_AUTO_TEST_CASE(a_standalone_seed_beside_a_real_node_is_never_used)
{
    redis_cluster cluster;
    redis_server standalone;
    running_io run;
    for (const bool standalone_first : {true, false})
    {
        BOOST_TEST_CONTEXT("the standalone server " << (standalone_first ? "first" : "second"))
        {
            redis::connection_options options = asio_sync::test::failover_client_options();
            const redis::connection_options::node_address real{"127.0.0.1", cluster.server(1).port()};
            const redis::connection_options::node_address alone{"127.0.0.1", standalone.port()};
            options.cluster_nodes = standalone_first ? std::vector{alone, real} : std::vector{real, alone};
            redis::connection conn(run.io, options);
            redis::semaphore sem(conn, "mixed", 1, 4000ms);
            auto set = conn.async_execute({"SET", "mixed-key", "v"}, asio::use_future);
            BOOST_TEST(wait(set).text == "OK");
            auto acquired = sem.async_acquire_permit(1, asio::use_future);
            redis::semaphore::permit p = wait(acquired);
            BOOST_TEST(p.count() == 1u);
            auto released =
                p.async_release(asio::use_future([](boost::system::error_code ec) { return ec; }));
            BOOST_TEST(!wait(released));
            BOOST_TEST(standalone.command({"DBSIZE"}) == "0");
            conn.close();
        }
    }
}

BOOST_AUTO_TEST_SUITE_END()
