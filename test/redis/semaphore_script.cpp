// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#define BOOST_TEST_MODULE redis_semaphore_script

// The Redis function library of the fleet-wide semaphore, called on a real server: grants, the
// strict FIFO queue, fencing, replays, leases of holders and waiters, bounded reaping, errors that
// change nothing, key expiry, the hash tag, FUNCTION FLUSH and a restart, and a long random run
// checked step by step against a model and against the library's own invariant check.

#include <asio_sync/redis/detail/semaphore_script.hpp>

#include "support/redis_server.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

BOOST_AUTO_TEST_SUITE(semaphore_script)

namespace {

using asio_sync::redis::detail::acquire_mode;
using asio_sync::redis::detail::semaphore_key;
using asio_sync::test::redis_server;
using script = asio_sync::redis::detail::semaphore_script;
using argv_type = std::vector<std::string>;
using namespace std::chrono_literals;

constexpr std::chrono::milliseconds long_lease = std::chrono::hours(1);
constexpr std::chrono::milliseconds short_lease = 100ms;

bool starts_with(const std::string& text, std::string_view prefix)
{
    return text.compare(0, prefix.size(), prefix) == 0;
}

// A server with the library loaded, a client, and the semaphore "jobs" of capacity 3 (tests may
// change the capacity before the first call), with replies as text: "granted\n<fence>\n<n>".
struct semaphore_fixture
{
    explicit semaphore_fixture(redis_server::options opts = {}) : server(std::move(opts)), client(server)
    {
        load();
    }

    void load() { BOOST_TEST_REQUIRE(run(script::load_command()) == "asio_sync_v1"); }

    std::string run(const argv_type& argv) { return client.execute(argv).to_text(); }
    std::string command(const argv_type& argv) { return client.command(argv); }

    std::string acquire(const std::string& id, std::size_t n, std::chrono::milliseconds lease = long_lease)
    {
        return run(jobs.acquire(id, n, capacity, lease, acquire_mode::wait));
    }
    std::string try_acquire(const std::string& id, std::size_t n)
    {
        return run(jobs.acquire(id, n, capacity, long_lease, acquire_mode::try_once));
    }
    std::string renew(const std::string& id, std::chrono::milliseconds lease = long_lease)
    {
        return run(jobs.renew(id, lease));
    }
    std::string release(const std::string& id) { return run(jobs.release(id)); }
    std::string status(const std::string& id) { return run(jobs.status(id)); }
    std::string check() { return run(jobs.check()); }

    long long count(semaphore_key key, const char* command_name)
    {
        return std::stoll(command({command_name, jobs.key(key)}));
    }

    // Whether a table of the semaphore "jobs" still holds id.
    bool stored(const std::string& id)
    {
        for (const semaphore_key key :
             {semaphore_key::holders, semaphore_key::queue, semaphore_key::waiter_deadlines})
            if (command({"ZSCORE", jobs.key(key), id}) != "(nil)")
                return true;
        for (const semaphore_key key : {semaphore_key::holder_info, semaphore_key::waiter_requests})
            if (command({"HEXISTS", jobs.key(key), id}) != "0")
                return true;
        return false;
    }

    // Every key of a semaphore, its value and its expiry time, and the database's size: equal
    // snapshots mean that nothing changed.
    std::vector<std::string> snapshot(const script& s)
    {
        std::vector<std::string> state{command({"DBSIZE"})};
        for (const std::string& key : s.keys())
        {
            state.push_back(run({"TYPE", key}));
            state.push_back(run({"DUMP", key}));
            state.push_back(run({"PEXPIRETIME", key}));
        }
        return state;
    }

    // The key's PEXPIRETIME: -1 without an expiry, -2 when it does not exist.
    long long expiry_ms(semaphore_key key) { return std::stoll(command({"PEXPIRETIME", jobs.key(key)})); }

    long long server_ms()
    {
        const redis_server::reply time = client.execute({"TIME"});
        return std::stoll(time.elements.at(0).text) * 1000 + std::stoll(time.elements.at(1).text) / 1000;
    }

    // Returns once the server's clock has moved past `lease` from now, so that every lease that
    // began before the call has expired by the server's reckoning.
    void outlive(std::chrono::milliseconds lease)
    {
        const long long until = server_ms() + lease.count();
        while (server_ms() <= until)
            std::this_thread::sleep_for(10ms);
    }

    redis_server server;
    redis_server::client client;
    script jobs{"jobs"};
    std::size_t capacity = 3;
};

// A subscriber to a semaphore's channel.
struct subscriber
{
    subscriber(const redis_server& server, const script& s) : client(server), channel(s.channel())
    {
        BOOST_TEST_REQUIRE(client.command({"SUBSCRIBE", channel}) == "subscribe\n" + channel + "\n1");
    }

    // The payload of the next message (a read that times out throws).
    std::string next()
    {
        const redis_server::reply message = client.read();
        BOOST_TEST_REQUIRE(message.elements.size() == 3u);
        BOOST_TEST(message.elements[1].text == channel);
        return message.elements[2].text;
    }

    redis_server::client client;
    std::string channel;
};

argv_type with_argument(argv_type argv, std::size_t index, std::string value)
{
    argv.at(3 + script::key_count + index) = std::move(value);
    return argv;
}

} // namespace

BOOST_FIXTURE_TEST_CASE(loading_twice_is_idempotent, semaphore_fixture)
{
    load(); // the fixture loaded it once already
    const redis_server::reply libraries = client.execute({"FUNCTION", "LIST", "LIBRARYNAME", "asio_sync_v1"});
    BOOST_TEST_REQUIRE(libraries.elements.size() == 1u);
    BOOST_TEST(acquire("a", 1) == "granted\n1\n1");
}

BOOST_FIXTURE_TEST_CASE(grants_queues_and_releases, semaphore_fixture)
{
    const redis_server::reply granted =
        client.execute(jobs.acquire("a", 2, capacity, long_lease, acquire_mode::wait));
    BOOST_TEST_REQUIRE(granted.elements.size() == 3u);
    BOOST_TEST(granted.elements[0].text == "granted");
    BOOST_TEST((granted.elements[1].type == redis_server::reply::kind::integer)); // the fence
    BOOST_TEST(granted.elements[1].integer == 1);
    BOOST_TEST((granted.elements[2].type == redis_server::reply::kind::integer));
    BOOST_TEST(granted.elements[2].integer == 2);

    BOOST_TEST(acquire("b", 2) == "queued\n1"); // seq 2 is its arrival
    BOOST_TEST(status("a") == "granted\n1\n2");
    BOOST_TEST(status("b") == "queued\n1");
    BOOST_TEST(check() == "ok\n2\n1\n1");

    BOOST_TEST(release("a") == "released\n2");
    BOOST_TEST(status("a") == "lost");
    BOOST_TEST(status("b") == "granted\n3\n2");
    BOOST_TEST(check() == "ok\n2\n1\n0");
    BOOST_TEST(release("b") == "released\n2");
    BOOST_TEST(check() == "ok\n0\n0\n0");
}

BOOST_FIXTURE_TEST_CASE(grants_are_published, semaphore_fixture)
{
    subscriber grants(server, jobs);
    BOOST_TEST(acquire("a", 3) == "granted\n1\n3");
    BOOST_TEST(grants.next() == "a 1 3");
    BOOST_TEST(acquire("b", 2) == "queued\n1");
    BOOST_TEST(acquire("c", 1) == "queued\n2");
    BOOST_TEST(release("a") == "released\n3");
    BOOST_TEST(grants.next() == "b 4 2");
    BOOST_TEST(grants.next() == "c 5 1");
}

BOOST_FIXTURE_TEST_CASE(the_queue_is_strict_fifo_with_mixed_n, semaphore_fixture)
{
    capacity = 5;
    BOOST_TEST(acquire("a", 3) == "granted\n1\n3");
    BOOST_TEST(acquire("b", 3) == "queued\n1");
    BOOST_TEST(acquire("c", 1) == "queued\n2"); // would fit, but b is ahead
    BOOST_TEST(try_acquire("d", 1) == "busy");  // would fit, but the queue is not empty
    BOOST_TEST(status("d") == "lost");          // a busy try stores nothing
    BOOST_TEST(check() == "ok\n3\n1\n2");

    BOOST_TEST(release("b") == "cancelled"); // the head gives up: c fits and is served
    BOOST_TEST(status("c") == "granted\n4\n1");
    BOOST_TEST(try_acquire("e", 1) == "granted\n5\n1"); // nobody queued, 3 + 1 + 1 <= 5
    BOOST_TEST(acquire("f", 2) == "queued\n1");
    BOOST_TEST(acquire("g", 1) == "queued\n2");
    BOOST_TEST(release("e") == "released\n1"); // 4 used: f (2) does not fit, so g waits too
    BOOST_TEST(status("f") == "queued\n1");
    BOOST_TEST(status("g") == "queued\n2");
    BOOST_TEST(release("c") == "released\n1"); // 3 used: f fits, and then g does not
    BOOST_TEST(status("f") == "granted\n8\n2");
    BOOST_TEST(status("g") == "queued\n1");
    BOOST_TEST(check() == "ok\n5\n2\n1");
    BOOST_TEST(release("a") == "released\n3");
    BOOST_TEST(status("g") == "granted\n9\n1");
    BOOST_TEST(check() == "ok\n3\n2\n0");
}

BOOST_FIXTURE_TEST_CASE(the_head_collects_permits_released_one_by_one, semaphore_fixture)
{
    capacity = 4;
    for (const std::string id : {"a", "b", "c", "d"})
        BOOST_TEST(starts_with(acquire(id, 1), "granted"));
    BOOST_TEST(acquire("e", 3) == "queued\n1");
    BOOST_TEST(acquire("f", 1) == "queued\n2");
    BOOST_TEST(release("a") == "released\n1");
    BOOST_TEST(status("e") == "queued\n1");
    BOOST_TEST(release("b") == "released\n1");
    BOOST_TEST(status("e") == "queued\n1");
    BOOST_TEST(release("c") == "released\n1");
    BOOST_TEST(status("e") == "granted\n7\n3");
    BOOST_TEST(status("f") == "queued\n1"); // 1 + 3 used: full
    BOOST_TEST(check() == "ok\n4\n2\n1");
}

BOOST_FIXTURE_TEST_CASE(fencing_tokens_strictly_increase_even_after_the_semaphore_expired, semaphore_fixture)
{
    long long last = 0;
    const auto expect_newer = [&](const std::string& id) {
        const std::string state = status(id);
        BOOST_TEST_REQUIRE(starts_with(state, "granted\n"));
        const long long fence = std::stoll(state.substr(8));
        BOOST_TEST(fence > last);
        last = fence;
    };
    BOOST_TEST(acquire("a", 2) == "granted\n1\n2");
    expect_newer("a");
    BOOST_TEST(acquire("b", 2) == "queued\n1");
    BOOST_TEST(release("a") == "released\n2");
    expect_newer("b");
    BOOST_TEST(release("b") == "released\n2");
    BOOST_TEST(command({"PTTL", jobs.key(semaphore_key::seq)}) == "-1");

    // Every key but seq expires once idle; the next grants continue after the old fences.
    for (const std::string& key : jobs.keys())
        if (key != jobs.key(semaphore_key::seq))
            command({"PEXPIRE", key, "1"});
    while (command({"DBSIZE"}) != "1")
        std::this_thread::sleep_for(1ms);
    BOOST_TEST(command({"EXISTS", jobs.key(semaphore_key::seq)}) == "1");
    BOOST_TEST(acquire("c", 1) == "granted\n4\n1");
    expect_newer("c");
}

BOOST_FIXTURE_TEST_CASE(every_call_replays_with_the_same_id, semaphore_fixture)
{
    BOOST_TEST(acquire("a", 2) == "granted\n1\n2");
    BOOST_TEST(acquire("a", 2) == "granted\n1\n2");
    BOOST_TEST(acquire("b", 2) == "queued\n1");
    BOOST_TEST(acquire("b", 2) == "queued\n1");
    BOOST_TEST(command({"GET", jobs.key(semaphore_key::seq)}) == "2"); // no second arrival
    BOOST_TEST(try_acquire("b", 2) == "queued\n1");                    // a known id keeps its state
    BOOST_TEST(try_acquire("c", 2) == "busy");
    BOOST_TEST(try_acquire("c", 2) == "busy");
    BOOST_TEST(renew("a") == "granted\n1\n2");
    BOOST_TEST(renew("a") == "granted\n1\n2");
    BOOST_TEST(renew("b") == "queued\n1");
    BOOST_TEST(renew("b") == "queued\n1");
    BOOST_TEST(status("a") == "granted\n1\n2");
    BOOST_TEST(status("a") == "granted\n1\n2");
    BOOST_TEST(check() == "ok\n2\n1\n1");

    BOOST_TEST(acquire("c", 1) == "queued\n2");
    BOOST_TEST(release("c") == "cancelled");
    BOOST_TEST(release("c") == "lost");
    BOOST_TEST(release("a") == "released\n2");
    BOOST_TEST(release("a") == "lost");
    BOOST_TEST(acquire("b", 2) == "granted\n4\n2"); // served meanwhile: the same state as status
    BOOST_TEST(acquire("b", 2) == "granted\n4\n2");
    BOOST_TEST(check() == "ok\n2\n1\n0");
}

BOOST_FIXTURE_TEST_CASE(a_waiter_that_gives_up_leaves_no_trace, semaphore_fixture)
{
    BOOST_TEST(acquire("a", 3) == "granted\n1\n3");
    const std::string keys_before = command({"DBSIZE"});
    BOOST_TEST(acquire("b", 1) == "queued\n1");
    BOOST_TEST(stored("b"));
    BOOST_TEST(release("b") == "cancelled");
    BOOST_TEST(!stored("b"));
    BOOST_TEST(command({"DBSIZE"}) == keys_before); // the emptied waiter tables are gone
    BOOST_TEST(check() == "ok\n3\n1\n0");
}

BOOST_FIXTURE_TEST_CASE(renewing_an_unknown_or_expired_id_is_lost_and_creates_nothing, semaphore_fixture)
{
    BOOST_TEST(renew("nobody") == "lost");
    BOOST_TEST(command({"DBSIZE"}) == "0");

    BOOST_TEST(acquire("a", 1, short_lease) == "granted\n1\n1");
    BOOST_TEST(acquire("b", 1, long_lease) == "granted\n2\n1");
    outlive(short_lease);
    BOOST_TEST(renew("a") == "lost");
    BOOST_TEST(!stored("a"));
    BOOST_TEST(renew("a") == "lost");
    BOOST_TEST(check() == "ok\n1\n1\n0");
}

BOOST_FIXTURE_TEST_CASE(an_expired_holder_frees_its_permits_on_the_next_call, semaphore_fixture)
{
    capacity = 2;
    subscriber grants(server, jobs);
    BOOST_TEST(acquire("a", 2, short_lease) == "granted\n1\n2");
    BOOST_TEST(grants.next() == "a 1 2");
    BOOST_TEST(acquire("b", 1) == "queued\n1");
    outlive(short_lease);

    // Read-only calls see the expiry but change nothing.
    BOOST_TEST(status("a") == "lost");
    BOOST_TEST(status("b") == "queued\n1");
    BOOST_TEST(check() == "ok\n2\n1\n1");
    BOOST_TEST(count(semaphore_key::holders, "ZCARD") == 1);

    // The next writing call, whoever makes it, removes a and serves b.
    BOOST_TEST(renew("b") == "granted\n3\n1");
    BOOST_TEST(grants.next() == "b 3 1");
    BOOST_TEST(release("a") == "lost");
    BOOST_TEST(check() == "ok\n1\n1\n0");
}

BOOST_FIXTURE_TEST_CASE(an_expired_waiter_leaves_the_queue, semaphore_fixture)
{
    capacity = 1;
    BOOST_TEST(acquire("a", 1) == "granted\n1\n1");
    BOOST_TEST(acquire("b", 1, short_lease) == "queued\n1");
    BOOST_TEST(acquire("c", 1) == "queued\n2");
    outlive(short_lease);
    BOOST_TEST(status("b") == "lost");
    BOOST_TEST(status("c") == "queued\n2"); // read-only: b is still stored

    BOOST_TEST(release("a") == "released\n1");
    BOOST_TEST(status("c") == "granted\n4\n1"); // b was skipped
    BOOST_TEST(!stored("b"));
    BOOST_TEST(renew("b") == "lost");
    BOOST_TEST(check() == "ok\n1\n1\n0");
}

BOOST_FIXTURE_TEST_CASE(an_expired_waiter_is_not_renewed_even_before_it_is_reaped, semaphore_fixture)
{
    // More expired entries than one call reaps, the caller's own last by deadline.
    capacity = 1;
    BOOST_TEST(acquire("holder", 1) == "granted\n1\n1");
    for (std::size_t i = 0; i < asio_sync::redis::detail::semaphore_library::reap_limit; ++i)
        BOOST_TEST(starts_with(acquire("w" + std::to_string(i), 1, short_lease), "queued"));
    outlive(1ms); // so that the reaping, by deadline, takes the others first
    BOOST_TEST(acquire("last", 1, short_lease) == "queued\n" + std::to_string(asio_sync::redis::detail::semaphore_library::reap_limit + 1));
    outlive(short_lease);
    BOOST_TEST(renew("last") == "lost");
    BOOST_TEST(!stored("last"));
    BOOST_TEST(check() == "ok\n1\n1\n0");
}

BOOST_FIXTURE_TEST_CASE(one_call_reaps_a_bounded_number_of_entries, semaphore_fixture)
{
    // 10 holders and 20 waiters expire together; each call removes at most reap_limit of them,
    // holders first.
    const std::size_t holders = 10;
    const std::size_t waiters = 20;
    capacity = holders;
    for (std::size_t i = 0; i < holders; ++i)
        BOOST_TEST(starts_with(acquire("h" + std::to_string(i), 1, short_lease), "granted"));
    for (std::size_t i = 0; i < waiters; ++i)
        BOOST_TEST(starts_with(acquire("w" + std::to_string(i), 1, short_lease), "queued"));
    outlive(short_lease);

    static_assert(holders < asio_sync::redis::detail::semaphore_library::reap_limit && holders + waiters > asio_sync::redis::detail::semaphore_library::reap_limit &&
                  holders + waiters <= 2 * asio_sync::redis::detail::semaphore_library::reap_limit);
    BOOST_TEST(release("nobody") == "lost");
    BOOST_TEST(count(semaphore_key::holders, "ZCARD") == 0);
    BOOST_TEST(count(semaphore_key::waiter_deadlines, "ZCARD") ==
               static_cast<long long>(holders + waiters - asio_sync::redis::detail::semaphore_library::reap_limit));
    BOOST_TEST(count(semaphore_key::queue, "ZCARD") ==
               static_cast<long long>(holders + waiters - asio_sync::redis::detail::semaphore_library::reap_limit));
    BOOST_TEST(release("nobody") == "lost");
    BOOST_TEST(command({"DBSIZE"}) == "2"); // meta and seq
    BOOST_TEST(check() == "ok\n0\n0\n0");
}

BOOST_FIXTURE_TEST_CASE(a_capacity_mismatch_is_refused_and_changes_nothing, semaphore_fixture)
{
    BOOST_TEST(acquire("a", 2) == "granted\n1\n2");
    BOOST_TEST(acquire("b", 2) == "queued\n1");
    const std::vector<std::string> before = snapshot(jobs);
    for (const acquire_mode mode : {acquire_mode::wait, acquire_mode::try_once})
    {
        BOOST_TEST(run(jobs.acquire("c", 1, 4, long_lease, mode)) == "ASIO_SYNC_CAPACITY 3");
        BOOST_TEST(run(jobs.acquire("a", 2, 2, long_lease, mode)) == "ASIO_SYNC_CAPACITY 3"); // even a replay
    }
    BOOST_TEST(snapshot(jobs) == before);
    BOOST_TEST(check() == "ok\n2\n1\n1");
}

BOOST_FIXTURE_TEST_CASE(more_permits_than_the_capacity_are_refused, semaphore_fixture)
{
    BOOST_TEST(acquire("a", 4) == "ASIO_SYNC_TOO_MANY 4 > 3");
    BOOST_TEST(try_acquire("a", 4) == "ASIO_SYNC_TOO_MANY 4 > 3");
    BOOST_TEST(command({"DBSIZE"}) == "0"); // nothing declared

    BOOST_TEST(acquire("b", 1) == "granted\n1\n1");
    const std::vector<std::string> before = snapshot(jobs);
    BOOST_TEST(acquire("c", 4) == "ASIO_SYNC_TOO_MANY 4 > 3");
    BOOST_TEST(snapshot(jobs) == before);
}

BOOST_FIXTURE_TEST_CASE(bad_arguments_are_refused_and_change_nothing, semaphore_fixture)
{
    BOOST_TEST(acquire("a", 2) == "granted\n1\n2");
    BOOST_TEST(acquire("b", 2) == "queued\n1");
    const argv_type acquire_argv = jobs.acquire("c", 1, capacity, long_lease, acquire_mode::wait);
    const argv_type renew_argv = jobs.renew("a", long_lease);

    // Argument indexes, after the keys: acquire (channel, id, n, capacity, lease_ms, mode), renew
    // (channel, id, lease_ms).
    std::vector<argv_type> calls;
    for (const char* number : {"0", "-1", "1.5", "abc", "1e3", " 1", "0x10", "1000000000000000", ""})
    {
        for (const std::size_t index : {2u, 3u, 4u})
            calls.push_back(with_argument(acquire_argv, index, number));
        calls.push_back(with_argument(renew_argv, 2, number));
    }
    for (const char* mode : {"bogus", "WAIT", "try "})
        calls.push_back(with_argument(acquire_argv, 5, mode));
    calls.push_back(with_argument(acquire_argv, 1, ""));      // empty id
    calls.push_back(with_argument(jobs.release("a"), 1, "")); // empty id
    calls.push_back(with_argument(jobs.status("a"), 0, ""));  // empty id
    argv_type extra = jobs.release("a");
    extra.push_back("x");
    calls.push_back(extra);
    argv_type missing = acquire_argv;
    missing.pop_back();
    calls.push_back(missing);
    argv_type check_with_argument = jobs.check();
    check_with_argument.push_back("x");
    calls.push_back(check_with_argument);
    argv_type one_key_less = jobs.release("a");
    one_key_less.at(2) = std::to_string(script::key_count - 1);
    one_key_less.erase(one_key_less.begin() + 3);
    calls.push_back(one_key_less);

    const std::vector<std::string> before = snapshot(jobs);
    for (const argv_type& call : calls)
    {
        const std::string reply = run(call);
        BOOST_TEST(starts_with(reply, "ASIO_SYNC_ARGUMENT "), reply);
    }
    BOOST_TEST(snapshot(jobs) == before);
    BOOST_TEST(check() == "ok\n2\n1\n1");
}

BOOST_FIXTURE_TEST_CASE(a_key_of_another_type_is_wrongtype_and_changes_nothing, semaphore_fixture)
{
    for (std::size_t k = 0; k < script::key_count; ++k)
    {
        BOOST_TEST_CONTEXT("key " << k)
        {
            const script s("wrongtype" + std::to_string(k));
            BOOST_TEST(run(s.acquire("a", 2, 3, long_lease, acquire_mode::wait)) == "granted\n1\n2");
            BOOST_TEST(run(s.acquire("b", 2, 3, long_lease, acquire_mode::wait)) == "queued\n1");
            const std::string& key = s.keys()[k];
            command({"DEL", key});
            // seq is a string: a list is of another type for every key.
            command({"RPUSH", key, "x"});
            const std::vector<std::string> before = snapshot(s);
            for (const argv_type& call : {s.acquire("c", 1, 3, long_lease, acquire_mode::wait),
                                          s.renew("a", long_lease), s.release("a"), s.status("a"), s.check()})
            {
                const std::string reply = run(call);
                BOOST_TEST(starts_with(reply, "WRONGTYPE "), call[1] << ": " << reply);
            }
            BOOST_TEST(snapshot(s) == before);
        }
    }
}

namespace {

redis_server::options append_only()
{
    redis_server::options opts;
    opts.append_only = true;
    return opts;
}

// A one-node cluster that serves every slot: a call whose keys do not share one slot fails with
// CROSSSLOT there.
redis_server::options cluster_node()
{
    redis_server::options opts;
    opts.extra_args = {"--cluster-enabled", "yes"};
    return opts;
}

} // namespace

BOOST_AUTO_TEST_CASE(every_key_and_the_channel_share_one_hash_slot_tagged_by_the_whole_name)
{
    semaphore_fixture f(cluster_node());
    f.command({"CLUSTER", "ADDSLOTSRANGE", "0", "16383"});
    while (f.command({"CLUSTER", "INFO"}).find("cluster_state:ok") == std::string::npos)
        std::this_thread::sleep_for(10ms);
    const auto slot = [&](const std::string& key) { return f.command({"CLUSTER", "KEYSLOT", key}); };

    // A name and the hash tag its keys must carry: braces are escaped so that the tag is the
    // whole name, and '%' too so that two names never share keys.
    const std::vector<std::pair<std::string, std::string>> names{{"jobs", "jobs"}, {"a}b", "a%7Db"},
                                                                 {"}{", "%7D%7B"}, {"{x}", "%7Bx%7D"},
                                                                 {"%7D", "%257D"}, {"}", "%7D"}};
    std::vector<std::string> all_keys;
    for (const auto& [name, tag] : names)
    {
        BOOST_TEST_CONTEXT("name " << name)
        {
            const script s(name);
            for (const std::string& key : s.keys())
            {
                BOOST_TEST(key.find("{" + tag + "}") != std::string::npos);
                BOOST_TEST(slot(key) == slot(tag));
                all_keys.push_back(key);
            }
            BOOST_TEST(slot(s.channel()) == slot(tag));
            BOOST_TEST(f.run(s.acquire("a", 1, 1, long_lease, acquire_mode::wait)) == "granted\n1\n1");
            BOOST_TEST(f.run(s.acquire("b", 1, 1, long_lease, acquire_mode::wait)) == "queued\n1");
            BOOST_TEST(f.run(s.renew("b", long_lease)) == "queued\n1");
            BOOST_TEST(f.run(s.release("a")) == "released\n1");
            BOOST_TEST(f.run(s.status("b")) == "granted\n3\n1");
            BOOST_TEST(f.run(s.check()) == "ok\n1\n1\n0");
        }
    }
    std::sort(all_keys.begin(), all_keys.end());
    BOOST_TEST((std::adjacent_find(all_keys.begin(), all_keys.end()) == all_keys.end()));
    BOOST_CHECK_THROW(script(""), std::invalid_argument);
}

BOOST_FIXTURE_TEST_CASE(a_function_flush_and_reload_keeps_the_state, semaphore_fixture)
{
    BOOST_TEST(acquire("a", 2) == "granted\n1\n2");
    BOOST_TEST(acquire("b", 2) == "queued\n1");
    command({"FUNCTION", "FLUSH"});
    BOOST_TEST(starts_with(release("a"), "ERR Function not found"));
    load();
    BOOST_TEST(status("a") == "granted\n1\n2");
    BOOST_TEST(release("a") == "released\n2");
    BOOST_TEST(status("b") == "granted\n3\n2");
    BOOST_TEST(check() == "ok\n2\n1\n0");
}

BOOST_AUTO_TEST_CASE(a_restart_with_aof_keeps_the_state_and_the_library)
{
    semaphore_fixture f(append_only());
    BOOST_TEST(f.acquire("a", 2) == "granted\n1\n2");
    BOOST_TEST(f.acquire("b", 2) == "queued\n1");
    f.server.kill(); // appendfsync always: every reply was preceded by its write
    f.server.start();
    f.client = redis_server::client(f.server);
    BOOST_TEST(f.status("a") == "granted\n1\n2"); // the library survived too: not loaded again
    BOOST_TEST(f.status("b") == "queued\n1");
    BOOST_TEST(f.release("a") == "released\n2");
    BOOST_TEST(f.status("b") == "granted\n3\n2");
    BOOST_TEST(f.check() == "ok\n2\n1\n0");
}

BOOST_FIXTURE_TEST_CASE(keys_expire_well_beyond_the_longest_lease_and_seq_never, semaphore_fixture)
{
    const auto shortest_ttl = [&] {
        long long shortest = -1;
        for (const std::string& key : jobs.keys())
        {
            const long long ttl = std::stoll(command({"PTTL", key}));
            if (key == jobs.key(semaphore_key::seq))
                BOOST_TEST(ttl == -1);
            else if (ttl != -2)
                shortest = shortest == -1 ? ttl : std::min(shortest, ttl);
        }
        return shortest;
    };
    BOOST_TEST(acquire("a", 1, 1s) == "granted\n1\n1");
    BOOST_TEST(shortest_ttl() > 2 * 1000);
    BOOST_TEST(renew("a", 100s) == "granted\n1\n1");
    BOOST_TEST(shortest_ttl() > 2 * 100'000);
    BOOST_TEST(acquire("b", 1, 1s) == "granted\n2\n1"); // a shorter lease does not shorten them
    BOOST_TEST(acquire("c", 1, 1s) == "granted\n3\n1");
    BOOST_TEST(acquire("d", 1, 1s) == "queued\n1");
    BOOST_TEST(shortest_ttl() > 2 * 100'000);
    BOOST_TEST(check() == "ok\n3\n3\n1");
}

BOOST_FIXTURE_TEST_CASE(keys_a_later_call_creates_expire_with_meta, semaphore_fixture)
{
    capacity = 1;
    BOOST_TEST(acquire("a", 1) == "granted\n1\n1");
    BOOST_TEST(release("a") == "released\n1");
    BOOST_TEST(expiry_ms(semaphore_key::holders) == -2); // emptied, so deleted
    outlive(1ms);
    BOOST_TEST(acquire("b", 1) == "granted\n2\n1"); // creates holders and hinfo again
    BOOST_TEST(acquire("c", 1) == "queued\n1");     // creates queue, wdl and wreq
    const long long meta = expiry_ms(semaphore_key::meta);
    BOOST_TEST(meta > 0);
    for (const semaphore_key key : {semaphore_key::holders, semaphore_key::holder_info, semaphore_key::queue,
                                    semaphore_key::waiter_deadlines, semaphore_key::waiter_requests})
        BOOST_TEST(expiry_ms(key) == meta);
    BOOST_TEST(check() == "ok\n1\n1\n1");
}

BOOST_FIXTURE_TEST_CASE(a_call_pushes_the_expiries_back_only_once_they_come_within_a_lease_and_a_minute,
                        semaphore_fixture)
{
    constexpr long long lease_ms = 1000;
    constexpr long long margin_ms = 60'000; // the minute of the library
    BOOST_TEST(acquire("a", 1, 1s) == "granted\n1\n1");
    BOOST_TEST(acquire("b", 2, 1s) == "granted\n2\n2");
    BOOST_TEST(acquire("c", 1, 1s) == "queued\n1"); // every key but seq exists, with meta's expiry
    const long long first = expiry_ms(semaphore_key::meta);

    // Far from expiring: a call leaves the expiries as they are.
    outlive(1ms);
    BOOST_TEST(renew("a", 1s) == "granted\n1\n1");
    BOOST_TEST(expiry_ms(semaphore_key::meta) == first);

    // Within a lease and a minute of expiring: the next writing call pushes every key back.
    for (const std::string& key : jobs.keys())
        if (key != jobs.key(semaphore_key::seq))
            command({"PEXPIRE", key, std::to_string(lease_ms + margin_ms - 1000)});
    const long long before = server_ms();
    BOOST_TEST(renew("a", 1s) == "granted\n1\n1");
    for (const std::string& key : jobs.keys())
        if (key != jobs.key(semaphore_key::seq))
            BOOST_TEST(std::stoll(command({"PEXPIRETIME", key})) >= before + 2 * lease_ms + margin_ms, key);
    BOOST_TEST(check() == "ok\n3\n2\n1");
}

BOOST_FIXTURE_TEST_CASE(check_reports_each_broken_invariant, semaphore_fixture)
{
    // Each corruption on a semaphore of its own, with a holder a (2 of 3) and a waiter b (2); a
    // key is named by its suffix.
    const std::string far_deadline = "99999999999999";
    const std::vector<std::pair<std::string, std::vector<argv_type>>> corruptions{
        {"used is not the sum of the holders", {{"HINCRBY", "meta", "used", "1"}}},
        {"holders and hinfo differ", {{"HDEL", "hinfo", "a"}}},
        {"queue, wdl and wreq differ", {{"HDEL", "wreq", "b"}}},
        {"a waiter is also a holder",
         {{"ZADD", "holders", far_deadline, "b"},
          {"HSET", "hinfo", "b", "1:2"},
          {"HINCRBY", "meta", "used", "1"}}},
        {"a fence repeated or beyond seq", {{"HSET", "hinfo", "a", "2:7"}}},
        {"the head fits but waits",
         {{"ZREM", "holders", "a"}, {"HDEL", "hinfo", "a"}, {"HSET", "meta", "used", "0"}}},
        {"a key without expiry", {{"PERSIST", "queue"}}},
        {"seq expires", {{"PEXPIRE", "seq", "100000"}}},
        {"used exceeds the capacity",
         {{"ZADD", "holders", far_deadline, "c"},
          {"HSET", "hinfo", "c", "2:2"},
          {"HSET", "meta", "used", "4"}}},
    };
    for (std::size_t i = 0; i < corruptions.size(); ++i)
    {
        const auto& [broken, commands] = corruptions[i];
        BOOST_TEST_CONTEXT(broken)
        {
            const script s("corrupt" + std::to_string(i));
            BOOST_TEST(run(s.acquire("a", 2, 3, long_lease, acquire_mode::wait)) == "granted\n1\n2");
            BOOST_TEST(run(s.acquire("b", 2, 3, long_lease, acquire_mode::wait)) == "queued\n1");
            BOOST_TEST(run(s.check()) == "ok\n2\n1\n1");
            for (argv_type corruption : commands)
            {
                const std::string suffix = ":" + corruption[1];
                for (const std::string& key : s.keys())
                    if (key.size() > suffix.size() &&
                        key.compare(key.size() - suffix.size(), suffix.size(), suffix) == 0)
                        corruption[1] = key;
                command(corruption);
            }
            BOOST_TEST(run(s.check()) == "ASIO_SYNC_INVARIANT " + broken);
        }
    }
}

namespace {

// The semaphore the library implements, in memory, for leases that never expire: the replies it
// expects, the grants it expects published, and the check it expects.
class semaphore_model
{
public:
    explicit semaphore_model(std::size_t capacity) : capacity_(capacity) {}

    std::string acquire(const std::string& id, std::size_t n, acquire_mode mode)
    {
        if (n > capacity_)
            return "ASIO_SYNC_TOO_MANY " + std::to_string(n) + " > " + std::to_string(capacity_);
        if (const auto known = state(id))
            return *known;
        if (queue_.empty() && used_ + n <= capacity_)
            return grant(id, n);
        if (mode == acquire_mode::try_once)
            return "busy";
        ++seq_; // the arrival
        queue_.emplace_back(id, n);
        return "queued\n" + std::to_string(queue_.size());
    }

    std::string renew(const std::string& id) const { return state(id).value_or("lost"); }
    std::string status(const std::string& id) const { return state(id).value_or("lost"); }

    std::string release(const std::string& id)
    {
        if (const auto holder = holders_.find(id); holder != holders_.end())
        {
            const std::size_t n = holder->second.first;
            used_ -= n;
            holders_.erase(holder);
            serve();
            return "released\n" + std::to_string(n);
        }
        for (auto waiter = queue_.begin(); waiter != queue_.end(); ++waiter)
            if (waiter->first == id)
            {
                queue_.erase(waiter);
                serve();
                return "cancelled";
            }
        return "lost";
    }

    std::string check() const
    {
        return "ok\n" + std::to_string(used_) + "\n" + std::to_string(holders_.size()) + "\n" +
               std::to_string(queue_.size());
    }

    std::vector<std::string> take_published() { return std::exchange(published_, {}); }

private:
    std::optional<std::string> state(const std::string& id) const
    {
        if (const auto holder = holders_.find(id); holder != holders_.end())
            return "granted\n" + std::to_string(holder->second.second) + "\n" +
                   std::to_string(holder->second.first);
        for (std::size_t i = 0; i < queue_.size(); ++i)
            if (queue_[i].first == id)
                return "queued\n" + std::to_string(i + 1);
        return std::nullopt;
    }

    std::string grant(const std::string& id, std::size_t n)
    {
        const std::uint64_t fence = ++seq_;
        holders_[id] = {n, fence};
        used_ += n;
        published_.push_back(id + " " + std::to_string(fence) + " " + std::to_string(n));
        return "granted\n" + std::to_string(fence) + "\n" + std::to_string(n);
    }

    void serve()
    {
        while (!queue_.empty() && used_ + queue_.front().second <= capacity_)
        {
            const auto [id, n] = queue_.front();
            queue_.pop_front();
            grant(id, n);
        }
    }

    std::size_t capacity_;
    std::size_t used_ = 0;
    std::uint64_t seq_ = 0;
    std::map<std::string, std::pair<std::size_t, std::uint64_t>> holders_; // id -> n, fence
    std::deque<std::pair<std::string, std::size_t>> queue_;                // id, n
    std::vector<std::string> published_;
};

} // namespace

BOOST_FIXTURE_TEST_CASE(a_random_run_matches_the_model_at_every_step, semaphore_fixture)
{
    capacity = 6;
    semaphore_model model(capacity);
    subscriber grants(server, jobs);
    const std::uint32_t seed = 20260213;
    std::mt19937 random(seed);
    const auto below = [&](std::size_t bound) {
        return std::uniform_int_distribution<std::size_t>(0, bound - 1)(random);
    };
    std::vector<std::string> ids{"first"};
    BOOST_TEST_REQUIRE(acquire("first", 1) == model.acquire("first", 1, acquire_mode::wait)); // declares
    BOOST_TEST_REQUIRE(grants.next() == model.take_published().at(0));
    const auto known_id = [&] { return ids[below(ids.size())]; };

    for (int step = 0; step < 3000; ++step)
    {
        BOOST_TEST_CONTEXT("seed " << seed << ", step " << step)
        {
            std::string action, reply, expected;
            const std::size_t choice = below(100);
            if (choice < 45)
            {
                const std::string id = "id" + std::to_string(step);
                const std::size_t n = 1 + below(capacity);
                const acquire_mode mode = choice < 35 ? acquire_mode::wait : acquire_mode::try_once;
                action = "acquire " + id + " " + std::to_string(n);
                ids.push_back(id);
                reply = run(jobs.acquire(id, n, capacity, long_lease, mode));
                expected = model.acquire(id, n, mode);
            }
            else if (choice < 70)
            {
                const std::string id = known_id();
                action = "release " + id;
                reply = release(id);
                expected = model.release(id);
            }
            else if (choice < 80)
            {
                const std::string id = known_id();
                action = "renew " + id;
                reply = renew(id);
                expected = model.renew(id);
            }
            else if (choice < 88)
            {
                const std::string id = known_id();
                action = "replay " + id;
                reply = acquire(id, 1);
                expected = model.acquire(id, 1, acquire_mode::wait);
            }
            else if (choice < 92)
            {
                action = "too many";
                reply = acquire("id" + std::to_string(step), capacity + 1);
                expected = model.acquire("", capacity + 1, acquire_mode::wait);
            }
            else if (choice < 96)
            {
                action = "other capacity";
                reply = run(jobs.acquire("id" + std::to_string(step), 1, capacity - 1, long_lease,
                                         acquire_mode::wait));
                expected = "ASIO_SYNC_CAPACITY " + std::to_string(capacity);
            }
            else
            {
                const std::string id = known_id();
                action = "status " + id;
                reply = status(id);
                expected = model.status(id);
            }
            BOOST_TEST_REQUIRE(reply == expected, action);
            BOOST_TEST_REQUIRE(check() == model.check(), action);
            for (const std::string& published : model.take_published())
                BOOST_TEST_REQUIRE(grants.next() == published, action);
        }
    }
    // Nothing more was published than the model expected.
    command({"PUBLISH", grants.channel, "end"});
    BOOST_TEST(grants.next() == "end");
}

BOOST_AUTO_TEST_SUITE_END()
