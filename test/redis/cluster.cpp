// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#define BOOST_TEST_MODULE redis_cluster

// The connection, the fleet-wide semaphore and fenced writes on a Redis Cluster of real processes
// (three primaries, created with `redis-cli --cluster create`). One connection, given one node,
// serves commands and semaphores whose slots are on every primary, following MOVED. A busy
// semaphore's slot is migrated live, key by key (the fleet meets ASK, TRYAGAIN, then MOVED), and a
// primary is killed so that its replica takes over. Through both, every acquire completes exactly
// once, fences are unique and an acquire started after another was granted gets a larger fence, no
// hold is lost and at no instant do more than `capacity` holders believe they hold a permit.
// With durable grants, a holder keeps its permit through a long ASK phase (each call's WAIT
// follows it to the node that runs it), and a release there serves the waiter. Used as a hostile
// user would: a seed that is a standalone server is never used, and nodes whose maps disagree
// (MOVED back and forth) fail a command after the redirection limit, the map asked at most once
// per reconnect_delay_min.
// A semaphore that lost a key while idle has it made again by its next call, and a migration then
// serves it.

#include <asio_sync/redis/fenced_set.hpp>
#include <asio_sync/redis/semaphore.hpp>

#include "support/io_threads.hpp"
#include "support/redis_client.hpp"
#include "support/redis_cluster.hpp"
#include "support/semaphore_fleet.hpp"
#include "support/semaphore_keys.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

BOOST_AUTO_TEST_SUITE(redis_cluster)

namespace {

namespace asio = boost::asio;
namespace redis = asio_sync::redis;
using asio_sync::test::name_on;
using asio_sync::test::redis_cluster;
using asio_sync::test::running_io;
using asio_sync::test::slot_of_semaphore;
using asio_sync::test::redis_server;
using asio_sync::test::wait;
using clock_type = std::chrono::steady_clock;
using namespace std::chrono_literals;




// A busy fleet of three connections (all nodes as seeds), 8 workers each, on the semaphore "jobs"
// (capacity 3); `fault` runs once it has made 50 holds, and the fleet then makes 50 more.
// Returns the number of holds lost; checks the rest.
template <class Fault>
std::size_t run_fleet(redis_cluster& cluster, unsigned durable_replicas, Fault fault)
{
    constexpr std::size_t capacity = 3;
    running_io run;
    redis::semaphore_options options;
    options.lease_duration = 4000ms; // longer than a failover
    options.durable_replicas = durable_replicas;
    std::vector<std::unique_ptr<redis::connection>> conns;
    std::vector<std::unique_ptr<redis::semaphore>> sems;
    for (std::size_t i = 0; i < 3; ++i)
    {
        conns.push_back(std::make_unique<redis::connection>(run.io, cluster.options()));
        sems.push_back(std::make_unique<redis::semaphore>(*conns.back(), "jobs", capacity, options));
    }
    asio_sync::test::fleet_record log;
    std::atomic<bool> stop{false};
    std::vector<std::future<void>> done;
    for (std::size_t i = 0; i < 24; ++i)
        done.push_back(
            asio::co_spawn(run.io, asio_sync::test::fleet_worker(*sems[i % 3], log, stop), asio::use_future));
    asio_sync::test::eventually([&] { return asio_sync::test::holds_of(log) >= 50; });
    const auto fault_at = clock_type::now();
    fault();
    BOOST_TEST_MESSAGE(
        "the fault took "
        << std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - fault_at).count()
        << " ms");
    const std::size_t before = asio_sync::test::holds_of(log);
    asio_sync::test::eventually([&] { return asio_sync::test::holds_of(log) >= before + 50; });
    stop = true;
    for (auto& f : done)
        wait(f);
    sems.clear();
    for (auto& c : conns)
        c->close();

    const std::size_t lost = asio_sync::test::check_fleet(log, fault_at);
    const std::size_t most = asio_sync::test::peak(log.holds);
    BOOST_TEST_MESSAGE(log.holds.size() << " holds, " << lost << " lost, at most " << most
                                        << " believed held at once (capacity " << capacity << ")");
    BOOST_TEST(most <= capacity);
    return lost;
}

// A slot in migration, held open in each of its states for a lease: every key still on the source,
// then every key moved to the target in one MIGRATE (the ASK state), then handed over. Each call
// names the semaphore's five keys, and during a migration Redis serves a call naming several keys
// only on a node that holds them all. Throughout, a holder of a semaphore that was idle when the
// migration began keeps its permit (renewed in each state), an acquire made while a permit is free
// completes in the state it was made in, and a busy fleet on another semaphore goes on being
// granted, none of its holds lost. (With keys that did not exist, the queue while nobody waits or
// the capacity key of a semaphore never resized, both nodes refused every call until the
// hand-over.)
void through_a_migration_held_open(unsigned durable_replicas)
{
    redis_cluster cluster(durable_replicas > 0 ? 2 : 0);
    constexpr std::size_t capacity = 3;
    running_io run;
    redis::semaphore_options options;
    options.lease_duration = 3000ms;
    options.durable_replicas = durable_replicas;
    redis::connection conn(run.io, cluster.options());
    redis::connection other(run.io, cluster.options());
    redis::semaphore idle(conn, "idle", 2, options);
    std::vector<std::unique_ptr<redis::semaphore>> sems;
    sems.push_back(std::make_unique<redis::semaphore>(conn, "jobs", capacity, options));
    sems.push_back(std::make_unique<redis::semaphore>(other, "jobs", capacity, options));

    const auto acquire_and_release = [&] {
        auto acquired = idle.async_acquire_permit(1, asio::use_future);
        redis::semaphore::permit p = wait(acquired);
        auto released = p.async_release(asio::use_future([](boost::system::error_code ec) { return ec; }));
        BOOST_TEST(!wait(released));
    };
    acquire_and_release(); // the semaphore exists, and nobody holds it

    asio_sync::test::fleet_record log;
    std::atomic<bool> stop{false};
    std::vector<std::future<void>> done;
    for (std::size_t i = 0; i < 8; ++i)
        done.push_back(
            asio::co_spawn(run.io, asio_sync::test::fleet_worker(*sems[i % 2], log, stop), asio::use_future));
    asio_sync::test::eventually([&] { return asio_sync::test::holds_of(log) >= 10; });

    struct moving
    {
        int slot;
        redis_server* from;
        redis_server* to;
    };
    std::vector<moving> slots;
    for (const char* name : {"idle", "jobs"})
    {
        const int slot = slot_of_semaphore(name);
        redis_server& from = cluster.owner(slot);
        slots.push_back(
            {slot, &from, &(&from == &cluster.server(0) ? cluster.server(1) : cluster.server(0))});
    }
    const auto fault_at = clock_type::now();
    std::optional<redis::semaphore::permit> held;
    auto lost = std::make_shared<std::atomic<bool>>(false);
    for (const char* state : {"every key on the source", "every key on the target", "handed over"})
    {
        BOOST_TEST_CONTEXT(state)
        {
            for (const moving& m : slots)
            {
                if (!held)
                    cluster.open_migration(m.slot, *m.from, *m.to);
                else if (m.from->command({"CLUSTER", "COUNTKEYSINSLOT", std::to_string(m.slot)}) != "0")
                    BOOST_TEST(cluster.move_keys(m.slot, *m.from, *m.to, 100) >= 5u);
                else
                    cluster.hand_over(m.slot, *m.to);
            }
            const std::size_t holds_before = asio_sync::test::holds_of(log);
            if (!held)
            {
                auto acquired = idle.async_acquire_permit(1, asio::use_future);
                held.emplace(wait(acquired));
                held->async_wait_lost([lost](boost::system::error_code ec) {
                    if (ec != asio::error::operation_aborted)
                        *lost = true;
                });
            }
            acquire_and_release();                               // a permit is free: served now
            std::this_thread::sleep_for(options.lease_duration); // the holder renews in this state
            BOOST_TEST(!*lost);
            asio_sync::test::eventually([&] { return asio_sync::test::holds_of(log) >= holds_before + 10; });
        }
    }
    auto released = held->async_release(asio::use_future([](boost::system::error_code ec) { return ec; }));
    BOOST_TEST(!wait(released));
    BOOST_TEST(slots[0].from->command({"INFO", "errorstats"}).find("errorstat_ASK") != std::string::npos);

    stop = true;
    for (auto& f : done)
        wait(f);
    sems.clear();
    conn.close();
    other.close();
    const std::size_t lost_holds = asio_sync::test::check_fleet(log, fault_at);
    BOOST_TEST(lost_holds == 0u);
    BOOST_TEST(asio_sync::test::peak(log.holds) <= capacity);
}

// The number after `field` (as in "cmdstat_cluster|slots:calls=" or "errorstat_MOVED:count=") in
// an INFO section of `s`; 0 if absent.
std::uint64_t info_count(const redis_server& s, const std::string& section, const std::string& field)
{
    const std::string info = s.command({"INFO", section});
    const std::size_t at = info.find(field);
    return at == std::string::npos ? 0 : std::stoull(info.substr(at + field.size()));
}

// The sum of that number over every node of `cluster`.
std::uint64_t cluster_count(redis_cluster& cluster, const std::string& section, const std::string& field)
{
    std::uint64_t total = 0;
    for (std::size_t i = 0; i < cluster.servers(); ++i)
        total += info_count(cluster.server(i), section, field);
    return total;
}

} // namespace

// Given one node only, a connection learns the map, and its commands, semaphores and fenced writes
// reach the primary of each slot; each semaphore's keys live on its own primary.
BOOST_AUTO_TEST_CASE(one_connection_serves_every_primary)
{
    redis_cluster cluster;
    running_io run;
    redis::connection_options options = cluster.options();
    options.cluster_nodes.resize(1);
    redis::connection conn(run.io, options);
    for (std::size_t p = 0; p < redis_cluster::primaries; ++p)
    {
        redis_server& primary = cluster.server(p);
        const std::string key = name_on(cluster, primary, "key-",
                                        [](const std::string& k) { return redis::detail::key_slot(k); });
        auto set = conn.async_execute({"SET", key, "v" + std::to_string(p)}, asio::use_future);
        BOOST_TEST(wait(set).text == "OK");
        BOOST_TEST(primary.command({"GET", key}) == "v" + std::to_string(p));

        const std::string name = name_on(cluster, primary, "jobs-", slot_of_semaphore);
        redis::semaphore sem(conn, name, 2, 4000ms);
        auto first = sem.async_acquire_permit(2, asio::use_future);
        redis::semaphore::permit held = wait(first);
        BOOST_TEST(held.count() == 2u);
        auto busy = sem.async_try_acquire_permit(
            1, asio::use_future([](boost::system::error_code ec, redis::semaphore::permit) { return ec; }));
        BOOST_TEST((wait(busy) == asio::error::would_block));
        BOOST_TEST(primary.command({"CLUSTER", "COUNTKEYSINSLOT", std::to_string(slot_of_semaphore(name))}) !=
                   "0");
        auto released = held.async_release(asio::use_future([](boost::system::error_code ec) { return ec; }));
        BOOST_TEST(!wait(released));

        // The fence library is loaded on the node of the key, whichever node the connection knew.
        const std::string resource = "{" + key + "}:resource";
        auto written =
            redis::async_fenced_set(conn, resource, "{" + key + "}:fence", 7, "x", asio::use_future);
        BOOST_TEST(wait(written) == 7u);
        BOOST_TEST(primary.command({"GET", resource}) == "x");
    }
    conn.close();
}

// The slot of a busy semaphore moves to another primary, key by key, while the fleet runs.
BOOST_AUTO_TEST_CASE(a_live_migration_of_a_busy_semaphore, *boost::unit_test::label("long"))
{
    redis_cluster cluster;
    const int slot = slot_of_semaphore("jobs");
    redis_server& from = cluster.owner(slot);
    redis_server& to = &from == &cluster.server(0) ? cluster.server(1) : cluster.server(0);
    const std::size_t lost = run_fleet(
        cluster, 0, [&] { cluster.migrate(slot, from, to, [] { std::this_thread::sleep_for(100ms); }); });
    BOOST_TEST(lost == 0u);
    // The fleet met the migration's every answer, and followed each.
    const std::string refusals = from.command({"INFO", "errorstats"});
    BOOST_TEST_MESSAGE(refusals);
    for (const char* answer : {"errorstat_ASK", "errorstat_TRYAGAIN", "errorstat_MOVED"})
        BOOST_TEST(refusals.find(answer) != std::string::npos, answer);
    BOOST_TEST(&cluster.owner(slot) == &to);
    BOOST_TEST(from.command({"CLUSTER", "COUNTKEYSINSLOT", std::to_string(slot)}) == "0");
    BOOST_TEST(to.command({"CLUSTER", "COUNTKEYSINSLOT", std::to_string(slot)}) != "0");
}

BOOST_AUTO_TEST_CASE(a_migration_held_open_serves_an_idle_and_a_busy_semaphore,
                     *boost::unit_test::label("long"))
{
    through_a_migration_held_open(0);
}

BOOST_AUTO_TEST_CASE(a_migration_held_open_serves_an_idle_and_a_busy_durable_semaphore,
                     *boost::unit_test::label("long"))
{
    through_a_migration_held_open(1);
}

// A key deleted by hand from an idle semaphore, then writing calls (which, as "Resetting a
// semaphore" promises, make every deleted key again): a migration of its slot then serves its calls
// on the source while every key is there, and on the target (after ASK) once they all moved. The
// capacity key is also the one that the library's version 3 left absent on a semaphore never
// resized.
BOOST_AUTO_TEST_CASE(a_migration_serves_a_semaphore_that_lost_a_key_while_idle,
                     *boost::unit_test::label("long"))
{
    redis_cluster cluster;
    for (const redis::detail::semaphore_key k :
         {redis::detail::semaphore_key::deadlines, redis::detail::semaphore_key::capacity})
    {
        BOOST_TEST_CONTEXT("key " << static_cast<int>(k))
        {
            const redis::detail::semaphore_script s("lost-key-" + std::to_string(static_cast<int>(k)));
            const auto acquire = [&](const std::string& id) {
                return s.acquire(id, 1, 3, 60000ms, redis::detail::acquire_mode::wait);
            };
            const int slot = s.slot();
            redis_server& from = cluster.owner(slot);
            redis_server& to = &from == &cluster.server(0) ? cluster.server(1) : cluster.server(0);
            for (redis_server* node : {&from, &to})
                BOOST_TEST_REQUIRE(node->command(redis::detail::semaphore_script::load_command()) ==
                                   "asio_sync_v4");
            BOOST_TEST(from.execute(acquire("a")).elements.at(0).text == "granted");
            BOOST_TEST(from.command(s.release("a", 0)) == "released\n1");
            from.command({"DEL", s.key(k)});
            BOOST_TEST(from.execute(acquire("b")).elements.at(0).text == "granted");
            BOOST_TEST(from.command(s.release("b", 0)) == "released\n1");

            cluster.open_migration(slot, from, to);
            const std::string on_source = from.execute(acquire("c")).to_text();
            BOOST_TEST(on_source.rfind("granted", 0) == 0u, "every key on the source: " << on_source);
            cluster.move_keys(slot, from, to, 100);
            BOOST_TEST(from.execute(acquire("d")).to_text().rfind("ASK ", 0) == 0u);
            redis_server::client asking(to);
            BOOST_TEST(asking.command({"ASKING"}) == "OK");
            const std::string on_target = asking.execute(acquire("d")).to_text();
            BOOST_TEST(on_target.rfind("granted", 0) == 0u, "every key on the target: " << on_target);
            cluster.hand_over(slot, to);
            BOOST_TEST(to.execute(acquire("e")).elements.at(0).text == "granted");
        }
    }
}

// The primary of a busy durable semaphore is killed; the cluster promotes one of its two replicas
// (the other then replicates it, so grants can still be confirmed), and the fleet follows it
// without losing an acknowledged grant.
BOOST_AUTO_TEST_CASE(a_primary_failover_inside_the_cluster, *boost::unit_test::label("long"))
{
    redis_cluster cluster(2);
    const int slot = slot_of_semaphore("jobs");
    redis_server& primary = cluster.owner(slot);
    const std::uint16_t old_port = primary.port();
    const std::size_t lost = run_fleet(cluster, 1, [&] {
        primary.kill();
        cluster.wait_for_failover_of(slot, old_port);
    });
    BOOST_TEST(lost == 0u);
}

// A holder with durable grants keeps its permit while its semaphore's slot stays in the ASK state
// for several leases (every key migrated to the target, MIGRATING and IMPORTING still open): each
// renewal goes to the source, is sent on with ASK, and its WAIT follows it to the target, whose
// replicas confirm it. A release then serves the waiter there, before the slot is handed over.
// Before the fix, the WAIT stayed on the source and confirmed nothing: the holder lost its permit
// about 2 s in, and the waiter was served only after the hand-over.
BOOST_AUTO_TEST_CASE(durable_grants_through_a_long_ask_phase, *boost::unit_test::label("long"))
{
    redis_cluster cluster(2); // each primary has two replicas: WAIT 1 can confirm
    running_io run;
    const std::string name = "jobs";
    const int slot = slot_of_semaphore(name);
    redis_server& from = cluster.owner(slot);
    redis_server& to = &from == &cluster.server(0) ? cluster.server(1) : cluster.server(0);
    redis::semaphore_options options;
    options.lease_duration = 3000ms;
    options.durable_replicas = 1;
    redis::connection holder_conn(run.io, cluster.options());
    redis::connection waiter_conn(run.io, cluster.options());
    redis::semaphore holder_sem(holder_conn, name, 1, options);
    redis::semaphore waiter_sem(waiter_conn, name, 1, options);

    // Every key of the semaphore exists, all through the ASK phase: the capacity (a resize), the
    // holder's deadline, the queue (two waiters), meta and horizon.
    auto resized =
        holder_sem.async_set_capacity(1, asio::use_future([](boost::system::error_code ec) { return ec; }));
    BOOST_TEST(!wait(resized));
    auto first = holder_sem.async_acquire_permit(1, asio::use_future);
    redis::semaphore::permit held = wait(first);
    auto lost = held.async_wait_lost(asio::use_future([](boost::system::error_code ec) { return ec; }));
    auto served = waiter_sem.async_acquire_permit(1, asio::use_future);
    // A second waiter keeps the queue from emptying when the first is served.
    auto second = waiter_sem.async_acquire_permit(1, asio::use_future);
    asio_sync::test::eventually([&] {
        return from.command({"CLUSTER", "COUNTKEYSINSLOT", std::to_string(slot)}) ==
               std::to_string(redis::detail::semaphore_script::key_count);
    });

    // The ASK phase: every key moved in one MIGRATE, the slot left MIGRATING and IMPORTING.
    const std::string s = std::to_string(slot);
    cluster.open_migration(slot, from, to);
    BOOST_TEST(cluster.move_keys(slot, from, to, 10) == redis::detail::semaphore_script::key_count);
    BOOST_TEST(from.command({"CLUSTER", "COUNTKEYSINSLOT", s}) == "0");
    const std::uint64_t asks_before = info_count(from, "errorstats", "errorstat_ASK:count=");
    const std::uint64_t waits_before = info_count(to, "commandstats", "cmdstat_wait:calls=");

    // Four leases in the ASK phase: the holder keeps its permit, the waiter waits.
    if (lost.wait_for(4 * options.lease_duration) == std::future_status::ready)
        BOOST_FAIL("the holder lost its permit in the ASK phase: " << lost.get().message());
    BOOST_TEST(!asio_sync::test::is_ready(served));
    BOOST_TEST(!asio_sync::test::is_ready(second));
    BOOST_TEST(held.valid_for() > 0ms);
    // The renewals met ASK, and their WAITs followed them to the target.
    BOOST_TEST(info_count(from, "errorstats", "errorstat_ASK:count=") > asks_before);
    BOOST_TEST(info_count(to, "commandstats", "cmdstat_wait:calls=") > waits_before);

    // A release in the ASK phase serves the waiter, within a lease.
    auto released = held.async_release(asio::use_future([](boost::system::error_code ec) { return ec; }));
    BOOST_TEST(!wait(released));
    BOOST_TEST((wait(lost) == asio::error::operation_aborted)); // ended by the release, not lost
    if (served.wait_for(options.lease_duration) != std::future_status::ready)
        BOOST_FAIL("the waiter was not served in the ASK phase");
    redis::semaphore::permit next = served.get();
    BOOST_TEST(next.count() == 1u);
    BOOST_TEST(to.command({"CLUSTER", "COUNTKEYSINSLOT", s}) != "0");

    // The hand-over; the new holder goes on.
    cluster.hand_over(slot, to);
    BOOST_TEST(!asio_sync::test::is_ready(second));
    auto done = next.async_release(asio::use_future([](boost::system::error_code ec) { return ec; }));
    BOOST_TEST(!wait(done));
    redis::semaphore::permit last = wait(second);
    BOOST_TEST(last.count() == 1u);
    auto last_done = last.async_release(asio::use_future([](boost::system::error_code ec) { return ec; }));
    BOOST_TEST(!wait(last_done));
    holder_conn.close();
    waiter_conn.close();
}

// A connection may not be told to follow no redirection at all.
BOOST_AUTO_TEST_CASE(max_redirections_is_at_least_one)
{
    asio::io_context io;
    redis::connection_options options;
    options.cluster_nodes = {{"127.0.0.1", 1}};
    options.max_redirections = 0;
    BOOST_CHECK_THROW(redis::connection(io, options), std::invalid_argument);
    options.max_redirections = 1;
    redis::connection conn(io, options);
    conn.close();
}

// A seed that is a standalone redis-server (cluster support disabled): the command fails with
// cluster_disabled, and nothing runs there, not even the semaphore's acquire. Before the fix it was
// used as a standalone server, and the semaphore granted there.
BOOST_AUTO_TEST_CASE(a_seed_without_cluster_support_is_never_used)
{
    redis_server standalone;
    running_io run;
    redis::connection_options options = asio_sync::test::failover_client_options();
    options.cluster_nodes = {{"127.0.0.1", standalone.port()}};
    redis::connection conn(run.io, options);
    auto set = conn.async_execute(
        {"SET", "k", "v"}, asio::use_future([](boost::system::error_code ec, redis::reply) { return ec; }));
    BOOST_TEST((wait(set) == redis::error::cluster_disabled));
    redis::semaphore sem(conn, "jobs", 1, 4000ms);
    auto acquired = sem.async_try_acquire_permit(
        1, asio::use_future([](boost::system::error_code ec, redis::semaphore::permit) { return ec; }));
    BOOST_TEST((wait(acquired) == redis::error::cluster_disabled));
    auto later = conn.async_execute(
        {"GET", "k"}, asio::use_future([](boost::system::error_code ec, redis::reply) { return ec; }));
    BOOST_TEST((wait(later) == redis::error::cluster_disabled));
    BOOST_TEST(standalone.command({"DBSIZE"}) == "0");
    BOOST_TEST(info_count(standalone, "commandstats", "cmdstat_set:calls=") == 0u);
    BOOST_TEST(info_count(standalone, "commandstats", "cmdstat_fcall:calls=") == 0u);
    conn.close();
}

// Two nodes whose maps disagree on a slot (CLUSTER SETSLOT ... NODE told to one of them only)
// send a command back and forth with MOVED: it fails with too_many_redirections after exactly
// max_redirections + 1 answers, and the map is asked at most once per reconnect_delay_min. Before
// the fix the command went back and forth until its caller gave up, asking the map at each MOVED.
BOOST_AUTO_TEST_CASE(a_moved_ping_pong_is_bounded)
{
    redis_cluster cluster;
    running_io run;
    redis_server& a = cluster.server(0);
    redis_server& b = cluster.server(1);
    const std::string key =
        name_on(cluster, a, "pingpong-", [](const std::string& k) { return redis::detail::key_slot(k); });
    const std::string s = std::to_string(redis::detail::key_slot(key));
    BOOST_TEST_REQUIRE(a.command({"CLUSTER", "COUNTKEYSINSLOT", s}) == "0");
    BOOST_TEST(a.command({"CLUSTER", "SETSLOT", s, "NODE", redis_cluster::id_of(b)}) == "OK");

    redis::connection_options options = cluster.options();
    options.reconnect_delay_min = 200ms;
    redis::connection conn(run.io, options);
    auto warm = conn.async_execute({"SET", "warm-up", "1"}, asio::use_future);
    BOOST_TEST(wait(warm).text == "OK");

    const auto start = clock_type::now();
    const std::uint64_t queries_before =
        cluster_count(cluster, "commandstats", "cmdstat_cluster|slots:calls=");
    const std::uint64_t moved_before = cluster_count(cluster, "errorstats", "errorstat_MOVED:count=");
    auto set = conn.async_execute(
        {"SET", key, "v"}, asio::use_future([](boost::system::error_code ec, redis::reply) { return ec; }));
    const auto outcome = wait(set);
    const std::uint64_t moved = cluster_count(cluster, "errorstats", "errorstat_MOVED:count=") - moved_before;
    const std::uint64_t queries =
        cluster_count(cluster, "commandstats", "cmdstat_cluster|slots:calls=") - queries_before;
    const auto elapsed = clock_type::now() - start;
    BOOST_TEST((outcome == redis::error::too_many_redirections));
    BOOST_TEST(moved == options.max_redirections + 1);
    BOOST_TEST_MESSAGE(queries << " CLUSTER SLOTS in "
                               << std::chrono::duration_cast<std::chrono::milliseconds>(elapsed).count()
                               << " ms");
    BOOST_TEST(queries <= 1 + static_cast<std::uint64_t>(elapsed / options.reconnect_delay_min));
    BOOST_TEST(a.command({"CLUSTER", "COUNTKEYSINSLOT", s}) == "0"); // it ran nowhere
    BOOST_TEST(b.command({"CLUSTER", "COUNTKEYSINSLOT", s}) == "0");
    // The connection serves the other slots.
    auto other = conn.async_execute({"SET", "warm-up", "2"}, asio::use_future);
    BOOST_TEST(wait(other).text == "OK");
    conn.close();
}

BOOST_AUTO_TEST_SUITE_END()
