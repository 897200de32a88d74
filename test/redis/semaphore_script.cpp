// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#define BOOST_TEST_MODULE redis_semaphore_script

// The Redis function library of the fleet-wide semaphore, called on a real server: grants, the
// strict FIFO queue, fencing (also across a restart without persistence), replays and the lease
// time left they report, leases of holders and waiters, bounded reaping, lost state (each key
// deleted while permits are held), keys that a volatile policy never evicts, the watch of the
// earliest deadline, errors that change nothing, the five keys made together without expiry, the
// hash tag, FUNCTION FLUSH and a restart, and a long random run checked step by step against a
// model and against the library's own invariant check; keys made again after a deletion or a reset,
// WRONGTYPE cases that change nothing, a state left by version 3 taken over, and a renewal that
// reaps and serves the queue.

#include <asio_sync/redis/detail/semaphore_script.hpp>

#include "support/redis_library.hpp"
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
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

BOOST_AUTO_TEST_SUITE(semaphore_script)

namespace {

namespace library = asio_sync::redis::detail::semaphore_library;
using asio_sync::redis::detail::acquire_mode;
using asio_sync::redis::detail::semaphore_key;
using asio_sync::test::fence_names;
using asio_sync::test::library_with_a_set_clock;
using asio_sync::test::redis_server;
using asio_sync::test::set_server_clock;
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
// change the capacity before the first call). The helpers return replies as text, fences named and
// the lease time left dropped: "granted\nF1\n2", "queued\n1".
struct semaphore_fixture
{
    explicit semaphore_fixture(redis_server::options opts = {}) : server(std::move(opts)), client(server)
    {
        load();
    }

    void load() { BOOST_TEST_REQUIRE(run(script::load_command()) == library::name); }

    // The reply as text, unchanged.
    std::string run(const argv_type& argv) { return client.execute(argv).to_text(); }
    std::string command(const argv_type& argv) { return client.command(argv); }

    // The reply as text, its fence named and the lease time left dropped.
    std::string call(const argv_type& argv) { return named(client.execute(argv)); }

    std::string named(const redis_server::reply& r)
    {
        if (r.type != redis_server::reply::kind::array || r.elements.empty())
            return r.to_text();
        const std::string& word = r.elements[0].text;
        if (word == "granted" && r.elements.size() >= 3)
            return "granted\n" + fences.name(r.elements[1].to_text()) + "\n" + r.elements[2].to_text();
        if (word == "queued" && r.elements.size() >= 2)
            return "queued\n" + r.elements[1].to_text();
        return r.to_text();
    }

    // A published "granted <fence> <n> <id>", its fence named; "resized <capacity> <stamp> <calm>" as
    // "resized <capacity> settled" or "... pending" (calm == stamp or not); "settled <capacity>
    // <stamp>" as "settled <capacity>".
    std::string named_message(const std::string& message)
    {
        std::istringstream words(message);
        std::string word, first, second, third;
        words >> word >> first >> second;
        if (word == "granted")
        {
            std::getline(words >> std::ws, third);
            return word + " " + fences.name(first) + " " + second + " " + third;
        }
        if (word == "resized" && words >> third)
            return word + " " + first + (third == second ? " settled" : " pending");
        if (word == "settled")
            return word + " " + first;
        return message;
    }

    // The lease time left that a granted or queued reply reports, in ms.
    static long long left(const redis_server::reply& r) { return r.elements.back().integer; }

    std::string acquire(const std::string& id, std::size_t n, std::chrono::milliseconds lease = long_lease)
    {
        return call(jobs.acquire(id, n, capacity, lease, acquire_mode::wait));
    }
    std::string try_acquire(const std::string& id, std::size_t n)
    {
        return call(jobs.acquire(id, n, capacity, long_lease, acquire_mode::try_once));
    }
    std::string renew(const std::string& id, std::chrono::milliseconds lease = long_lease,
                      std::uint64_t fence = 0)
    {
        return call(jobs.renew(id, lease, fence));
    }
    std::string release(const std::string& id, std::uint64_t fence = 0)
    {
        return call(jobs.release(id, fence));
    }
    std::string status(const std::string& id) { return call(jobs.status(id)); }
    std::string check() { return run(jobs.check()); }

    // A resize from the stamp in force as the fixture last saw it: "resized\n<capacity>\nsettled" (or
    // "pending": calm below the stamp), or "conflict\n<capacity>\n<stamp>", the stamp written
    // "seen" when it is the one the fixture saw last.
    std::string resize(const std::string& id, std::uint64_t to) { return resize_from(id, to, stamp); }

    std::string resize_from(const std::string& id, std::uint64_t to, std::uint64_t base)
    {
        const redis_server::reply r = client.execute(jobs.resize(id, to, base));
        if (r.type != redis_server::reply::kind::array || r.elements.size() < 3)
            return r.to_text();
        const auto reply_stamp = static_cast<std::uint64_t>(r.elements[2].integer);
        if (r.elements[0].text == "conflict")
            return "conflict\n" + r.elements[1].to_text() + "\n" +
                   (reply_stamp == stamp ? "seen" : std::to_string(reply_stamp));
        BOOST_TEST(reply_stamp >= stamp);
        stamp = reply_stamp;
        return "resized\n" + r.elements[1].to_text() + "\n" +
               (r.elements.at(3).integer == r.elements[2].integer ? "settled" : "pending");
    }

    // The raw fence of a holder, from status.
    std::uint64_t fence_of(const std::string& id)
    {
        const redis_server::reply r = client.execute(jobs.status(id));
        BOOST_TEST_REQUIRE(r.elements.at(0).text == "granted");
        return static_cast<std::uint64_t>(r.elements.at(1).integer);
    }

    long long count(semaphore_key key, const char* command_name)
    {
        return std::stoll(command({command_name, jobs.key(key)}));
    }

    std::string field(const std::string& name)
    {
        return command({"HGET", jobs.key(semaphore_key::meta), name});
    }

    // Whether the semaphore "jobs" still stores id.
    bool stored(const std::string& id)
    {
        return command({"ZSCORE", jobs.key(semaphore_key::deadlines), id}) != "(nil)" ||
               command({"ZSCORE", jobs.key(semaphore_key::queue), id}) != "(nil)" ||
               field("#" + id) != "(nil)";
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

    long long server_ms()
    {
        const redis_server::reply time = client.execute({"TIME"});
        return std::stoll(time.elements.at(0).text) * 1000 + std::stoll(time.elements.at(1).text) / 1000;
    }

    // Returns once the server's clock has moved past `lease` from now, so that every lease that
    // began before the call has expired by the server's reckoning.
    void outlive(std::chrono::milliseconds lease) { wait_until(server_ms() + lease.count()); }

    // Returns once the server's clock is past the quiet period that follows lost state.
    void outlive_quiet() { wait_until(std::stoll(field("quiet"))); }

    void wait_until(long long server_time_ms)
    {
        while (server_ms() <= server_time_ms)
            std::this_thread::sleep_for(10ms);
    }

    redis_server server;
    redis_server::client client;
    script jobs{"jobs"};
    std::size_t capacity = 3;
    std::uint64_t stamp = 0; // of the resize in force, as the fixture last saw it
    fence_names fences;
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
    const redis_server::reply libraries =
        client.execute({"FUNCTION", "LIST", "LIBRARYNAME", std::string(library::name)});
    BOOST_TEST_REQUIRE(libraries.elements.size() == 1u);
    BOOST_TEST(acquire("a", 1) == "granted\nF1\n1");
}

BOOST_FIXTURE_TEST_CASE(grants_queues_and_releases, semaphore_fixture)
{
    const redis_server::reply granted =
        client.execute(jobs.acquire("a", 2, capacity, long_lease, acquire_mode::wait));
    BOOST_TEST_REQUIRE(granted.elements.size() == 4u);
    BOOST_TEST(granted.elements[0].text == "granted");
    BOOST_TEST((granted.elements[1].type == redis_server::reply::kind::integer)); // the fence
    BOOST_TEST(granted.elements[1].integer > server_ms() * 1000 - 60'000'000);    // microseconds
    BOOST_TEST((granted.elements[2].type == redis_server::reply::kind::integer));
    BOOST_TEST(granted.elements[2].integer == 2);
    BOOST_TEST(granted.elements[3].integer == long_lease.count()); // the lease left: all of it
    BOOST_TEST(named(granted) == "granted\nF1\n2");

    const redis_server::reply queued =
        client.execute(jobs.acquire("b", 2, capacity, long_lease, acquire_mode::wait));
    BOOST_TEST(named(queued) == "queued\n1");
    BOOST_TEST(left(queued) == long_lease.count());
    BOOST_TEST(status("a") == "granted\nF1\n2");
    BOOST_TEST(status("b") == "queued\n1");
    BOOST_TEST(check() == "ok\n2\n1\n1");

    BOOST_TEST(release("a") == "released\n2");
    BOOST_TEST(status("a") == "lost");
    BOOST_TEST(status("b") == "granted\nF2\n2");
    BOOST_TEST(check() == "ok\n2\n1\n0");
    BOOST_TEST(release("b") == "released\n2");
    BOOST_TEST(check() == "ok\n0\n0\n0");
}

BOOST_FIXTURE_TEST_CASE(grants_to_waiters_are_published_and_the_callers_own_answered, semaphore_fixture)
{
    subscriber grants(server, jobs);
    BOOST_TEST(acquire("a", 3) == "granted\nF1\n3"); // answered, not published
    BOOST_TEST(acquire("b", 2) == "queued\n1");
    BOOST_TEST(acquire("c", 1) == "queued\n2");
    BOOST_TEST(release("a") == "released\n3");
    BOOST_TEST(named_message(grants.next()) == "granted F2 2 b");
    BOOST_TEST(named_message(grants.next()) == "granted F3 1 c");
    command({"PUBLISH", grants.channel, "end"});
    BOOST_TEST(grants.next() == "end"); // nothing was published for a
}

BOOST_FIXTURE_TEST_CASE(the_queue_is_strict_fifo_with_mixed_n, semaphore_fixture)
{
    capacity = 5;
    BOOST_TEST(acquire("a", 3) == "granted\nF1\n3");
    BOOST_TEST(acquire("b", 3) == "queued\n1");
    BOOST_TEST(acquire("c", 1) == "queued\n2"); // would fit, but b is ahead
    BOOST_TEST(try_acquire("d", 1) == "busy");  // would fit, but the queue is not empty
    BOOST_TEST(status("d") == "lost");          // a busy try stores nothing
    BOOST_TEST(check() == "ok\n3\n1\n2");

    BOOST_TEST(release("b") == "cancelled"); // the head gives up: c fits and is served
    BOOST_TEST(status("c") == "granted\nF2\n1");
    BOOST_TEST(try_acquire("e", 1) == "granted\nF3\n1"); // nobody queued, 3 + 1 + 1 <= 5
    BOOST_TEST(acquire("f", 2) == "queued\n1");
    BOOST_TEST(acquire("g", 1) == "queued\n2");
    BOOST_TEST(release("e") == "released\n1"); // 4 used: f (2) does not fit, so g waits too
    BOOST_TEST(status("f") == "queued\n1");
    BOOST_TEST(status("g") == "queued\n2");
    BOOST_TEST(release("c") == "released\n1"); // 3 used: f fits, and then g does not
    BOOST_TEST(status("f") == "granted\nF4\n2");
    BOOST_TEST(status("g") == "queued\n1");
    BOOST_TEST(check() == "ok\n5\n2\n1");
    BOOST_TEST(release("a") == "released\n3");
    BOOST_TEST(status("g") == "granted\nF5\n1");
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
    BOOST_TEST(status("e") == "granted\nF5\n3");
    BOOST_TEST(status("f") == "queued\n1"); // 1 + 3 used: full
    BOOST_TEST(check() == "ok\n4\n2\n1");
}

BOOST_FIXTURE_TEST_CASE(fencing_tokens_strictly_increase_even_after_the_state_is_gone, semaphore_fixture)
{
    BOOST_TEST(acquire("a", 2) == "granted\nF1\n2");
    BOOST_TEST(acquire("b", 2) == "queued\n1");
    BOOST_TEST(release("a") == "released\n2");
    BOOST_TEST(status("b") == "granted\nF2\n2");
    BOOST_TEST(release("b") == "released\n2");

    // Every key but the horizon gone (as an idle expiry of the library's version 3 left it); the next
    // grants continue after the old fences.
    for (const std::string& key : jobs.keys())
        if (key != jobs.key(semaphore_key::horizon))
            command({"DEL", key});
    BOOST_TEST(command({"DBSIZE"}) == "1");
    command({"SET", jobs.key(semaphore_key::horizon), "1"}); // long past: nothing can be live
    BOOST_TEST(acquire("c", 1) == "granted\nF3\n1");
}

BOOST_AUTO_TEST_CASE(fences_go_on_growing_across_a_restart_without_persistence)
{
    semaphore_fixture f; // neither AOF nor RDB
    BOOST_TEST(f.acquire("a", 1) == "granted\nF1\n1");
    BOOST_TEST(f.acquire("b", 1) == "granted\nF2\n1");
    f.server.stop();
    f.server.start();
    f.client = redis_server::client(f.server);
    BOOST_TEST(f.command({"DBSIZE"}) == "0"); // everything is gone, the library too
    f.load();
    BOOST_TEST(f.acquire("c", 1) == "granted\nF3\n1"); // above F2: the fences did not restart
    BOOST_TEST(f.acquire("d", 1) == "granted\nF4\n1");
}

BOOST_FIXTURE_TEST_CASE(every_call_replays_with_the_same_id, semaphore_fixture)
{
    BOOST_TEST(acquire("a", 2) == "granted\nF1\n2");
    BOOST_TEST(acquire("a", 2) == "granted\nF1\n2");
    BOOST_TEST(acquire("b", 2) == "queued\n1");
    const std::string seq = field("seq");
    BOOST_TEST(acquire("b", 2) == "queued\n1");
    BOOST_TEST(field("seq") == seq);                // no second arrival
    BOOST_TEST(try_acquire("b", 2) == "queued\n1"); // a known id keeps its state
    BOOST_TEST(try_acquire("c", 2) == "busy");
    BOOST_TEST(try_acquire("c", 2) == "busy");
    BOOST_TEST(renew("a") == "granted\nF1\n2");
    BOOST_TEST(renew("a") == "granted\nF1\n2");
    BOOST_TEST(renew("b") == "queued\n1");
    BOOST_TEST(renew("b") == "queued\n1");
    BOOST_TEST(status("a") == "granted\nF1\n2");
    BOOST_TEST(status("a") == "granted\nF1\n2");
    BOOST_TEST(check() == "ok\n2\n1\n1");

    BOOST_TEST(acquire("c", 1) == "queued\n2");
    BOOST_TEST(release("c") == "cancelled");
    BOOST_TEST(release("c") == "lost");
    BOOST_TEST(release("a") == "released\n2");
    BOOST_TEST(release("a") == "lost");
    BOOST_TEST(acquire("b", 2) == "granted\nF2\n2"); // served meanwhile: the same state as status
    BOOST_TEST(acquire("b", 2) == "granted\nF2\n2");
    BOOST_TEST(check() == "ok\n2\n1\n0");
}

// The rule that keeps a client's lease end no later than the server's: a replay is answered with
// the time its lease has left, not a fresh lease, so a client dating it from the replay's send
// time ends it no later than the server does.
BOOST_FIXTURE_TEST_CASE(a_replay_reports_the_lease_time_left_not_a_new_lease, semaphore_fixture)
{
    constexpr std::chrono::milliseconds lease = 2000ms;
    const redis_server::reply first =
        client.execute(jobs.acquire("a", 1, capacity, lease, acquire_mode::wait));
    BOOST_TEST(left(first) == lease.count());
    outlive(300ms);
    const redis_server::reply replay =
        client.execute(jobs.acquire("a", 1, capacity, lease, acquire_mode::wait));
    BOOST_TEST(named(replay) == named(first));
    BOOST_TEST(left(replay) <= lease.count() - 300);
    BOOST_TEST(left(replay) > 0);

    BOOST_TEST(starts_with(acquire("b", 3, lease), "queued"));
    outlive(300ms);
    const redis_server::reply waiting =
        client.execute(jobs.acquire("b", 3, capacity, lease, acquire_mode::wait));
    BOOST_TEST(left(waiting) <= lease.count() - 300);

    // A renewal moves the deadline: the whole lease again.
    BOOST_TEST(left(client.execute(jobs.renew("a", lease, 0))) == lease.count());
    BOOST_TEST(left(client.execute(jobs.renew("b", lease, 0))) == lease.count());
}

BOOST_FIXTURE_TEST_CASE(a_waiter_that_gives_up_leaves_no_trace, semaphore_fixture)
{
    BOOST_TEST(acquire("a", 3) == "granted\nF1\n3");
    const std::string keys_before = command({"DBSIZE"});
    BOOST_TEST(acquire("b", 1) == "queued\n1");
    BOOST_TEST(stored("b"));
    BOOST_TEST(release("b") == "cancelled");
    BOOST_TEST(!stored("b"));
    BOOST_TEST(command({"DBSIZE"}) == keys_before); // the emptied queue is gone
    BOOST_TEST(check() == "ok\n3\n1\n0");
}

BOOST_FIXTURE_TEST_CASE(renewing_an_unknown_or_expired_id_is_lost_and_creates_nothing, semaphore_fixture)
{
    BOOST_TEST(renew("nobody") == "lost");
    BOOST_TEST(release("nobody") == "lost");
    BOOST_TEST(command({"DBSIZE"}) == "0");

    BOOST_TEST(acquire("a", 1, short_lease) == "granted\nF1\n1");
    BOOST_TEST(acquire("b", 1, long_lease) == "granted\nF2\n1");
    const std::uint64_t a_fence = fence_of("a");
    outlive(short_lease);
    BOOST_TEST(renew("a", long_lease, a_fence) == "lost"); // lapsed, not lost with the state
    BOOST_TEST(!stored("a"));
    BOOST_TEST(renew("a") == "lost");
    BOOST_TEST(check() == "ok\n1\n1\n0");
}

BOOST_FIXTURE_TEST_CASE(an_expired_holder_frees_its_permits_on_the_next_call, semaphore_fixture)
{
    capacity = 2;
    subscriber grants(server, jobs);
    BOOST_TEST(acquire("a", 2, short_lease) == "granted\nF1\n2");
    BOOST_TEST(acquire("b", 1) == "queued\n1");
    outlive(short_lease);

    // Read-only calls see the expiry but change nothing.
    BOOST_TEST(status("a") == "lost");
    BOOST_TEST(status("b") == "queued\n1");
    BOOST_TEST(check() == "ok\n2\n1\n1");
    BOOST_TEST(count(semaphore_key::deadlines, "ZCARD") == 2 + 1); // and the placeholder

    // The next writing call, whoever makes it, removes a and serves b.
    BOOST_TEST(renew("b") == "granted\nF2\n1");
    BOOST_TEST(named_message(grants.next()) == "granted F2 1 b");
    BOOST_TEST(release("a") == "lost");
    BOOST_TEST(check() == "ok\n1\n1\n0");
}

BOOST_FIXTURE_TEST_CASE(an_expired_waiter_leaves_the_queue, semaphore_fixture)
{
    capacity = 1;
    BOOST_TEST(acquire("a", 1) == "granted\nF1\n1");
    BOOST_TEST(acquire("b", 1, short_lease) == "queued\n1");
    BOOST_TEST(acquire("c", 1) == "queued\n2");
    outlive(short_lease);
    BOOST_TEST(status("b") == "lost");
    BOOST_TEST(status("c") == "queued\n2"); // read-only: b is still stored

    BOOST_TEST(release("a") == "released\n1");
    BOOST_TEST(status("c") == "granted\nF2\n1"); // b was skipped
    BOOST_TEST(!stored("b"));
    BOOST_TEST(renew("b") == "lost");
    BOOST_TEST(check() == "ok\n1\n1\n0");
}

BOOST_FIXTURE_TEST_CASE(an_expired_waiter_is_not_renewed_even_before_it_is_reaped, semaphore_fixture)
{
    // More expired entries than one call reaps, the caller's own last by deadline.
    capacity = 1;
    BOOST_TEST(acquire("holder", 1) == "granted\nF1\n1");
    for (std::size_t i = 0; i < library::reap_limit; ++i)
        BOOST_TEST(starts_with(acquire("w" + std::to_string(i), 1, short_lease), "queued"));
    outlive(1ms); // so that the reaping, by deadline, takes the others first
    BOOST_TEST(acquire("last", 1, short_lease) == "queued\n" + std::to_string(library::reap_limit + 1));
    outlive(short_lease);
    BOOST_TEST(renew("last") == "lost");
    BOOST_TEST(!stored("last"));
    BOOST_TEST(check() == "ok\n1\n1\n0");
}

BOOST_FIXTURE_TEST_CASE(one_call_reaps_a_bounded_number_of_entries, semaphore_fixture)
{
    // 10 holders and 20 waiters expire together; each call removes at most reap_limit of them, in
    // deadline order (the holders were first).
    const std::size_t holders = 10;
    const std::size_t waiters = 20;
    capacity = holders;
    for (std::size_t i = 0; i < holders; ++i)
        BOOST_TEST(starts_with(acquire("h" + std::to_string(i), 1, short_lease), "granted"));
    outlive(1ms);
    for (std::size_t i = 0; i < waiters; ++i)
        BOOST_TEST(starts_with(acquire("w" + std::to_string(i), 1, short_lease), "queued"));
    outlive(short_lease);

    static_assert(holders < library::reap_limit && holders + waiters > library::reap_limit &&
                  holders + waiters <= 2 * library::reap_limit);
    BOOST_TEST(renew("nobody") == "lost");
    BOOST_TEST(field("holders") == "0");
    const auto left_over = static_cast<long long>(holders + waiters - library::reap_limit);
    BOOST_TEST(count(semaphore_key::deadlines, "ZCARD") == left_over + 1); // and the placeholder
    BOOST_TEST(count(semaphore_key::queue, "ZCARD") == left_over + 1);
    BOOST_TEST(renew("nobody") == "lost");
    BOOST_TEST(command({"DBSIZE"}) == "5"); // every key stays
    BOOST_TEST(check() == "ok\n0\n0\n0");
}

BOOST_FIXTURE_TEST_CASE(watch_tells_when_a_writing_call_may_serve_the_queue, semaphore_fixture)
{
    capacity = 1;
    BOOST_TEST(run(jobs.watch()) == "idle");
    BOOST_TEST(acquire("a", 1, 2000ms) == "granted\nF1\n1");
    BOOST_TEST(acquire("b", 1, 5000ms) == "queued\n1");
    const redis_server::reply wake = client.execute(jobs.watch());
    BOOST_TEST_REQUIRE(wake.elements.size() == 2u);
    BOOST_TEST(wake.elements[0].text == "wake");
    BOOST_TEST(wake.elements[1].integer <= 2000); // a's deadline comes first
    BOOST_TEST(wake.elements[1].integer > 0);
    BOOST_TEST(release("b") == "cancelled");
    BOOST_TEST(release("a") == "released\n1");
    BOOST_TEST(run(jobs.watch()) == "idle");
}

BOOST_FIXTURE_TEST_CASE(a_capacity_mismatch_is_refused_and_changes_nothing, semaphore_fixture)
{
    BOOST_TEST(acquire("a", 2) == "granted\nF1\n2");
    BOOST_TEST(acquire("b", 2) == "queued\n1");
    const std::vector<std::string> before = snapshot(jobs);
    for (const acquire_mode mode : {acquire_mode::wait, acquire_mode::try_once})
    {
        BOOST_TEST(run(jobs.acquire("c", 1, 4, long_lease, mode)) == "ASIO_SYNC_CAPACITY 3 0");
        BOOST_TEST(run(jobs.acquire("a", 2, 2, long_lease, mode)) ==
                   "ASIO_SYNC_CAPACITY 3 0"); // even a replay
    }
    BOOST_TEST(snapshot(jobs) == before);
    BOOST_TEST(check() == "ok\n2\n1\n1");
}

BOOST_FIXTURE_TEST_CASE(more_permits_than_the_capacity_are_refused, semaphore_fixture)
{
    BOOST_TEST(acquire("a", 4) == "ASIO_SYNC_TOO_MANY 4 > 3");
    BOOST_TEST(try_acquire("a", 4) == "ASIO_SYNC_TOO_MANY 4 > 3");
    BOOST_TEST(command({"DBSIZE"}) == "0"); // nothing declared

    BOOST_TEST(acquire("b", 1) == "granted\nF1\n1");
    const std::vector<std::string> before = snapshot(jobs);
    BOOST_TEST(acquire("c", 4) == "ASIO_SYNC_TOO_MANY 4 > 3");
    BOOST_TEST(snapshot(jobs) == before);
}

BOOST_FIXTURE_TEST_CASE(bad_arguments_are_refused_and_change_nothing, semaphore_fixture)
{
    BOOST_TEST(acquire("a", 2) == "granted\nF1\n2");
    BOOST_TEST(acquire("b", 2) == "queued\n1");
    const argv_type acquire_argv = jobs.acquire("c", 1, capacity, long_lease, acquire_mode::wait);
    const argv_type renew_argv = jobs.renew("a", long_lease, 1);
    const argv_type release_argv = jobs.release("a", 1);
    const argv_type resize_argv = jobs.resize("r", 4, 0);

    // Argument indexes, after the keys: acquire (channel, id, n, capacity, lease_ms, mode), renew
    // (channel, id, lease_ms, fence), release (channel, id, fence), resize (channel, id, capacity,
    // base).
    std::vector<argv_type> calls;
    for (const char* number :
         {"-1", "1.5", "abc", "1e3", " 1", "0x10", "9007199254740992", "12345678901234567", ""})
    {
        for (const std::size_t index : {2u, 3u, 4u})
            calls.push_back(with_argument(acquire_argv, index, number));
        calls.push_back(with_argument(renew_argv, 2, number));
        calls.push_back(with_argument(renew_argv, 3, number));
        calls.push_back(with_argument(release_argv, 2, number));
        calls.push_back(with_argument(resize_argv, 2, number));
        calls.push_back(with_argument(resize_argv, 3, number));
    }
    for (const std::size_t index : {2u, 3u, 4u}) // n, capacity and lease_ms are positive
        calls.push_back(with_argument(acquire_argv, index, "0"));
    calls.push_back(with_argument(resize_argv, 2, "0"));
    // A capacity above the library's limit, declared or resized to.
    const std::string too_large = std::to_string(library::max_capacity + 1);
    calls.push_back(with_argument(acquire_argv, 3, too_large));
    calls.push_back(with_argument(resize_argv, 2, too_large));
    calls.push_back(with_argument(resize_argv, 1, "")); // empty id
    calls.push_back(with_argument(renew_argv, 2, "0"));
    for (const char* mode : {"bogus", "WAIT", "try "})
        calls.push_back(with_argument(acquire_argv, 5, mode));
    calls.push_back(with_argument(acquire_argv, 1, "")); // empty id
    calls.push_back(with_argument(release_argv, 1, "")); // empty id
    calls.push_back(with_argument(jobs.status("a"), 0, ""));
    argv_type extra = release_argv;
    extra.push_back("x");
    calls.push_back(extra);
    argv_type missing = acquire_argv;
    missing.pop_back();
    calls.push_back(missing);
    argv_type check_with_argument = jobs.check();
    check_with_argument.push_back("x");
    calls.push_back(check_with_argument);
    argv_type one_key_less = release_argv;
    one_key_less.at(2) = std::to_string(script::key_count - 1);
    one_key_less.erase(one_key_less.begin() + 3);
    calls.push_back(one_key_less);

    const std::vector<std::string> before = snapshot(jobs);
    for (const argv_type& call_argv : calls)
    {
        const std::string reply = run(call_argv);
        BOOST_TEST(starts_with(reply, "ASIO_SYNC_ARGUMENT "), reply);
    }
    BOOST_TEST(snapshot(jobs) == before);
    BOOST_TEST(check() == "ok\n2\n1\n1");
}

BOOST_FIXTURE_TEST_CASE(a_key_of_another_type_is_wrongtype_and_changes_nothing, semaphore_fixture)
{
    // Every writing call and check fail, having changed nothing; the other read-only calls fail if
    // they read the key. The horizon is a string the library overwrites.
    for (const semaphore_key k : {semaphore_key::meta, semaphore_key::deadlines, semaphore_key::queue})
    {
        BOOST_TEST_CONTEXT("key " << static_cast<int>(k))
        {
            const script s("wrongtype" + std::to_string(static_cast<int>(k)));
            BOOST_TEST(starts_with(run(s.acquire("a", 2, 3, long_lease, acquire_mode::wait)), "granted"));
            BOOST_TEST(starts_with(run(s.acquire("b", 2, 3, long_lease, acquire_mode::wait)), "queued"));
            const std::string& key = s.key(k);
            command({"DEL", key});
            command({"RPUSH", key, "x"}); // a list is of another type for every key
            const std::vector<std::string> before = snapshot(s);
            for (const argv_type& c :
                 {s.acquire("c", 1, 3, long_lease, acquire_mode::wait), s.renew("a", long_lease, 0),
                  s.release("b", 0), s.release("a", 0), s.check()})
            {
                const std::string reply = run(c);
                BOOST_TEST(starts_with(reply, "WRONGTYPE "), c[1] << ": " << reply);
            }
            for (const argv_type& c : {s.status("a"), s.usage(), s.watch()})
                run(c);
            BOOST_TEST(snapshot(s) == before);
        }
    }
}

// ---- lost state

namespace {

// A holder a (1 of 2), a holder b (1), a waiter c (1), with leases of `lease`, on the semaphore
// "jobs" of capacity 2.
void hold_two_and_queue_one(semaphore_fixture& f, std::chrono::milliseconds lease)
{
    f.capacity = 2;
    BOOST_TEST(f.acquire("a", 1, lease) == "granted\nF1\n1");
    BOOST_TEST(f.acquire("b", 1, lease) == "granted\nF2\n1");
    BOOST_TEST(f.acquire("c", 1, lease) == "queued\n1");
}

} // namespace

// Each key deleted on its own while permits are held (as an eviction would): the next writing
// call recognises lost state, grants nothing until every lease of the lost state could have
// lapsed, and the old holders hear state_lost when they renew. The horizon alone is rewritten.
BOOST_AUTO_TEST_CASE(a_deleted_key_is_lost_state_never_granted_on)
{
    constexpr std::chrono::milliseconds lease = 1500ms;
    for (const semaphore_key k : {semaphore_key::meta, semaphore_key::deadlines, semaphore_key::queue})
    {
        BOOST_TEST_CONTEXT("key " << static_cast<int>(k))
        {
            semaphore_fixture f;
            hold_two_and_queue_one(f, lease);
            const std::uint64_t a_fence = f.fence_of("a");
            const std::uint64_t b_fence = f.fence_of("b");
            const long long deleted_at = f.server_ms();
            f.command({"DEL", f.jobs.key(k)});

            BOOST_TEST(f.try_acquire("d", 1) == "busy"); // finds it, starts afresh, grants nothing
            BOOST_TEST(f.acquire("e", 1) == "queued\n1");
            BOOST_TEST(f.check() == "ok\n0\n0\n1");
            BOOST_TEST(std::stoll(f.field("quiet")) >= deleted_at + lease.count());
            BOOST_TEST(f.renew("a", lease, a_fence) == "state_lost");
            BOOST_TEST(f.release("b", b_fence) == "state_lost");
            BOOST_TEST(f.renew("c") == "lost"); // a waiter just queues again

            // After the quiet period, the queue is served.
            f.outlive_quiet();
            BOOST_TEST(f.renew("e") == "granted\nF3\n1");
            BOOST_TEST(f.check() == "ok\n1\n1\n0");
        }
    }
}

BOOST_FIXTURE_TEST_CASE(a_deleted_horizon_is_written_again, semaphore_fixture)
{
    hold_two_and_queue_one(*this, 1000ms);
    command({"DEL", jobs.key(semaphore_key::horizon)});
    BOOST_TEST(renew("a", 1000ms) == "granted\nF1\n1"); // not lost state: meta keeps a copy
    outlive(1000ms);
    BOOST_TEST(acquire("x", 1, 1000ms) == "granted\nF3\n1"); // every lease lapsed: c and x served
    BOOST_TEST(command({"EXISTS", jobs.key(semaphore_key::horizon)}) == "1");
    BOOST_TEST(check() == "ok\n1\n1\n0");
}

// A key deleted from an idle semaphore (nobody holds or waits, so nothing is lost) is made again by
// the next writing call, as "Resetting a semaphore" promises: all five keys exist together again,
// each zset with its placeholder, so that a Cluster migration can serve the semaphore.
BOOST_AUTO_TEST_CASE(a_key_deleted_from_an_idle_semaphore_is_made_again_by_the_next_writing_call)
{
    for (const semaphore_key k :
         {semaphore_key::deadlines, semaphore_key::queue, semaphore_key::horizon, semaphore_key::capacity})
    {
        BOOST_TEST_CONTEXT("key " << static_cast<int>(k))
        {
            semaphore_fixture f;
            BOOST_TEST(f.acquire("a", 1) == "granted\nF1\n1");
            BOOST_TEST(f.release("a") == "released\n1");
            f.command({"DEL", f.jobs.key(k)});
            BOOST_TEST(f.acquire("b", 1) == "granted\nF2\n1");
            BOOST_TEST(f.release("b") == "released\n1");
            BOOST_TEST(f.acquire("c", 1) == "granted\nF3\n1");
            BOOST_TEST(f.command({"DBSIZE"}) == "5");
            BOOST_TEST(f.check() == "ok\n1\n1\n0");
        }
    }
}

// "Resetting a semaphore": meta, deadlines and queue deleted while a permit is held. A release or a
// resize finds the state lost but knows no lease to wait for: it leaves the state to the next acquire
// or renewal, which starts afresh and makes every deleted key again (all five exist together).
BOOST_AUTO_TEST_CASE(the_next_acquire_after_a_reset_makes_the_deleted_keys_again)
{
    for (const char* call : {"release", "resize"})
    {
        BOOST_TEST_CONTEXT(call)
        {
            semaphore_fixture f;
            BOOST_TEST(f.acquire("a", 1) == "granted\nF1\n1");
            const std::uint64_t a_fence = f.fence_of("a");
            f.command({"DEL", f.jobs.key(semaphore_key::meta), f.jobs.key(semaphore_key::deadlines),
                       f.jobs.key(semaphore_key::queue)});
            if (std::string_view(call) == "release")
                BOOST_TEST(f.release("a", a_fence) == "state_lost");
            else
            {
                BOOST_TEST(f.resize("r", 4) == "resized\n4\nsettled");
                f.capacity = 4;
            }
            BOOST_TEST(f.command({"DBSIZE"}) == "2");     // the horizon and the capacity key
            BOOST_TEST(f.acquire("b", 1) == "queued\n1"); // lost state: a quiet period
            BOOST_TEST(f.command({"DBSIZE"}) == "5");
            BOOST_TEST(f.check() == "ok\n0\n0\n1");
        }
    }
}

// A zset of another type on a name without meta fails a writing call with WRONGTYPE, having changed
// nothing (it is not lost state to be deleted and started afresh).
BOOST_AUTO_TEST_CASE(a_zset_of_another_type_on_a_new_name_is_wrongtype_and_changes_nothing)
{
    for (const semaphore_key k : {semaphore_key::deadlines, semaphore_key::queue})
    {
        BOOST_TEST_CONTEXT("key " << static_cast<int>(k))
        {
            semaphore_fixture f;
            f.command({"RPUSH", f.jobs.key(k), "x"});
            const std::vector<std::string> before = f.snapshot(f.jobs);
            for (const argv_type& c : {f.jobs.acquire("a", 1, 3, long_lease, acquire_mode::try_once),
                                       f.jobs.acquire("a", 1, 3, long_lease, acquire_mode::wait),
                                       f.jobs.renew("a", long_lease, 0)})
            {
                const std::string reply = f.run(c);
                BOOST_TEST(starts_with(reply, "WRONGTYPE "), c[1] << ": " << reply);
            }
            BOOST_TEST(f.snapshot(f.jobs) == before);
        }
    }
}

// An acquire that queues on a state with nobody in it (a quiet period after lost state) writes the
// queue and deadlines, neither of which it read: a deadlines of another type fails it with
// WRONGTYPE before the queue is written.
BOOST_FIXTURE_TEST_CASE(a_queued_acquire_writes_nothing_before_a_wrongtype_deadlines, semaphore_fixture)
{
    BOOST_TEST(acquire("a", 1) == "granted\nF1\n1");
    command({"DEL", jobs.key(semaphore_key::meta)});
    BOOST_TEST(renew("x") == "lost"); // finds the state lost: a quiet period, nobody in it
    BOOST_TEST(check() == "ok\n0\n0\n0");
    BOOST_TEST_REQUIRE(std::stoll(field("quiet")) > server_ms());
    command({"DEL", jobs.key(semaphore_key::deadlines)});
    command({"RPUSH", jobs.key(semaphore_key::deadlines), "x"});
    const std::vector<std::string> before = snapshot(jobs);
    const std::string reply = run(jobs.acquire("b", 1, capacity, long_lease, acquire_mode::wait));
    BOOST_TEST(starts_with(reply, "WRONGTYPE "), reply);
    BOOST_TEST(snapshot(jobs) == before);
    BOOST_TEST(command({"ZRANGE", jobs.key(semaphore_key::queue), "0", "-1"}) == "");
}

BOOST_FIXTURE_TEST_CASE(a_field_missing_from_meta_is_lost_state, semaphore_fixture)
{
    hold_two_and_queue_one(*this, 1000ms);
    command({"HDEL", jobs.key(semaphore_key::meta), "#c"}); // c queued without its field
    BOOST_TEST(release("a") == "released\n1");              // serving c finds it out
    BOOST_TEST(check() == "ok\n0\n0\n0");
    BOOST_TEST(try_acquire("d", 1) == "busy");
    BOOST_TEST(std::stoll(field("quiet")) > server_ms());
}

// Real eviction: a server with maxmemory and an evicting policy under pressure from other keys
// evicts the semaphore's keys (they carry expiries; volatile-ttl evicts the soonest to expire
// first). Whichever go, the next call finds lost state or a fresh one whose horizon says that
// leases may be live: nothing is granted until they have lapsed.
// The keys have no expiry, so a volatile-* policy never evicts them; a key evicted all the same (an
// allkeys-* policy) is lost state, as a deleted one is (above).
BOOST_AUTO_TEST_CASE(keys_without_expiry_are_never_evicted_by_a_volatile_policy)
{
    semaphore_fixture f;
    constexpr std::chrono::milliseconds lease = 1500ms;
    hold_two_and_queue_one(f, lease);
    const std::uint64_t a_fence = f.fence_of("a");
    f.command({"SET", "volatile", "x", "PX", "100000"});
    f.command({"CONFIG", "SET", "maxmemory-policy", "volatile-ttl"});
    f.command({"CONFIG", "SET", "maxmemory", "1"}); // every volatile key must go
    f.run({"SET", "pressure", std::string(1000, 'x')});
    BOOST_TEST(f.command({"EXISTS", "volatile"}) == "0");
    BOOST_TEST(f.command({"CONFIG", "SET", "maxmemory", "0"}) == "OK");
    BOOST_TEST(f.command({"EXISTS", f.jobs.key(semaphore_key::meta), f.jobs.key(semaphore_key::deadlines),
                          f.jobs.key(semaphore_key::queue), f.jobs.key(semaphore_key::horizon),
                          f.jobs.key(semaphore_key::capacity)}) == "5");
    BOOST_TEST(f.renew("a", lease, a_fence) == "granted\nF1\n1");
    BOOST_TEST(f.check() == "ok\n2\n2\n1");
}

BOOST_AUTO_TEST_CASE(every_key_and_the_channel_share_one_hash_slot_tagged_by_the_whole_name)
{
    redis_server::options opts;
    opts.extra_args = {"--cluster-enabled", "yes"}; // a call whose keys span slots fails there
    semaphore_fixture f(opts);
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
            BOOST_TEST(starts_with(f.run(s.acquire("a", 1, 1, long_lease, acquire_mode::wait)), "granted"));
            BOOST_TEST(f.call(s.acquire("b", 1, 1, long_lease, acquire_mode::wait)) == "queued\n1");
            BOOST_TEST(f.call(s.renew("b", long_lease, 0)) == "queued\n1");
            BOOST_TEST(f.run(s.release("a", 0)) == "released\n1");
            BOOST_TEST(starts_with(f.run(s.status("b")), "granted"));
            BOOST_TEST(f.run(s.check()) == "ok\n1\n1\n0");
            BOOST_TEST(starts_with(f.run(s.watch()), "wake"));
        }
    }
    std::sort(all_keys.begin(), all_keys.end());
    BOOST_TEST((std::adjacent_find(all_keys.begin(), all_keys.end()) == all_keys.end()));
    BOOST_CHECK_THROW(script(""), std::invalid_argument);
}

BOOST_FIXTURE_TEST_CASE(a_function_flush_and_reload_keeps_the_state, semaphore_fixture)
{
    BOOST_TEST(acquire("a", 2) == "granted\nF1\n2");
    BOOST_TEST(acquire("b", 2) == "queued\n1");
    command({"FUNCTION", "FLUSH"});
    BOOST_TEST(starts_with(release("a"), "ERR Function not found"));
    load();
    BOOST_TEST(status("a") == "granted\nF1\n2");
    BOOST_TEST(release("a") == "released\n2");
    BOOST_TEST(status("b") == "granted\nF2\n2");
    BOOST_TEST(check() == "ok\n2\n1\n0");
}

BOOST_AUTO_TEST_CASE(a_restart_with_aof_keeps_the_state_and_the_library)
{
    redis_server::options opts;
    opts.append_only = true;
    semaphore_fixture f(opts);
    BOOST_TEST(f.acquire("a", 2) == "granted\nF1\n2");
    BOOST_TEST(f.acquire("b", 2) == "queued\n1");
    f.server.kill(); // appendfsync always: every reply was preceded by its write
    f.server.start();
    f.client = redis_server::client(f.server);
    BOOST_TEST(f.status("a") == "granted\nF1\n2"); // the library survived too: not loaded again
    BOOST_TEST(f.status("b") == "queued\n1");
    BOOST_TEST(f.release("a") == "released\n2");
    BOOST_TEST(f.status("b") == "granted\nF2\n2");
    BOOST_TEST(f.check() == "ok\n2\n1\n0");
}

// The five keys are made together by the first call that stores anything and never expire (so that
// a Redis Cluster can migrate them together; an empty zset keeps its placeholder).
BOOST_FIXTURE_TEST_CASE(the_five_keys_are_made_together_and_never_expire, semaphore_fixture)
{
    const auto persistent = [&] {
        std::size_t count = 0;
        for (const std::string& key : jobs.keys())
            count += command({"PTTL", key}) == "-1";
        return count;
    };
    capacity = 1;
    BOOST_TEST(acquire("a", 1, 1s) == "granted\nF1\n1");
    BOOST_TEST(persistent() == 5u);
    BOOST_TEST(count(semaphore_key::queue, "ZCARD") == 1); // the placeholder
    BOOST_TEST(acquire("b", 1, 1s) == "queued\n1");
    BOOST_TEST(release("a") == "released\n1");
    BOOST_TEST(release("b") == "released\n1");
    BOOST_TEST(count(semaphore_key::deadlines, "ZCARD") == 1);
    BOOST_TEST(count(semaphore_key::queue, "ZCARD") == 1);
    BOOST_TEST(persistent() == 5u);
    BOOST_TEST(command({"DBSIZE"}) == "5");
    BOOST_TEST(check() == "ok\n0\n0\n0");
}

// The state that the library's version 3 left: meta, deadlines and queue expiring a minute after
// the horizon, no placeholders, no capacity key while never resized (the expiry here is three seconds
// away instead of a minute, the same state sooner). The first call of this version takes it over:
// its keys stop expiring and all five exist, so that a holder granted by this version keeps its
// permit past the expiry that version 3 had set.
BOOST_FIXTURE_TEST_CASE(a_state_left_by_version_3_is_taken_over_without_expiries, semaphore_fixture)
{
    capacity = 2;
    BOOST_TEST(acquire("a", 1) == "granted\nF1\n1");
    BOOST_TEST(acquire("b", 1) == "granted\nF2\n1");
    BOOST_TEST(acquire("c", 1) == "queued\n1");
    command({"ZREM", jobs.key(semaphore_key::deadlines), ""});
    command({"ZREM", jobs.key(semaphore_key::queue), ""});
    command({"DEL", jobs.key(semaphore_key::capacity)});
    command({"HDEL", jobs.key(semaphore_key::meta), "version"});
    for (const semaphore_key k : {semaphore_key::meta, semaphore_key::deadlines, semaphore_key::queue})
        BOOST_TEST_REQUIRE(command({"PEXPIRE", jobs.key(k), "3000"}) == "1");
    const long long expiry = std::stoll(command({"PEXPIRETIME", jobs.key(semaphore_key::meta)}));

    BOOST_TEST(release("a") == "released\n1"); // c is served
    BOOST_TEST(status("c") == "granted\nF3\n1");
    const std::uint64_t c_fence = fence_of("c");
    BOOST_TEST(renew("c", long_lease, c_fence) == "granted\nF3\n1");
    BOOST_TEST(check() == "ok\n2\n2\n0");

    wait_until(expiry); // what version 3 set, long before c's lease ends
    BOOST_TEST(renew("c", long_lease, c_fence) == "granted\nF3\n1");
    BOOST_TEST(check() == "ok\n2\n2\n0");
}

BOOST_FIXTURE_TEST_CASE(a_call_moves_the_horizon_only_when_a_deadline_could_pass_it, semaphore_fixture)
{
    constexpr long long lease_ms = 1000;
    BOOST_TEST(acquire("a", 1, 1s) == "granted\nF1\n1");
    const std::string horizon = command({"GET", jobs.key(semaphore_key::horizon)});

    // A deadline set now stays within the horizon: nothing moves.
    outlive(1ms);
    BOOST_TEST(renew("a", 1s) == "granted\nF1\n1");
    BOOST_TEST(command({"GET", jobs.key(semaphore_key::horizon)}) == horizon);

    // Once now + the lease passes the horizon, the next writing call moves it.
    outlive(std::chrono::milliseconds(lease_ms)); // every lease lapses too
    const long long before = server_ms();
    BOOST_TEST(acquire("x", 1, 1s) == "granted\nF2\n1");
    const long long moved = std::stoll(command({"GET", jobs.key(semaphore_key::horizon)}));
    BOOST_TEST(moved >= before + 2 * lease_ms);
    BOOST_TEST(field("horizon") == std::to_string(moved));
    BOOST_TEST(check() == "ok\n1\n1\n0");
}

BOOST_FIXTURE_TEST_CASE(check_reports_each_broken_invariant, semaphore_fixture)
{
    // Each corruption on a semaphore of its own, with a holder a (2 of 3) and a waiter b (2); a
    // key is named by its suffix.
    const std::string far = "99999999999999";
    const std::vector<std::pair<std::string, std::vector<argv_type>>> corruptions{
        {"used is not the sum of the holders", {{"HINCRBY", "meta", "used", "1"}}},
        {"deadlines and fields differ", {{"HDEL", "meta", "#a"}}},
        {"queue and waiters differ", {{"ZREM", "queue", "b"}}},
        {"a ticket without a waiter", {{"ZREM", "queue", "b"}, {"ZADD", "queue", "1", "a"}}},
        {"a fence repeated, not above the epoch or beyond seq", {{"HSET", "meta", "#a", "2:1"}}},
        {"an n out of range", {{"HSET", "meta", "#b", "5"}}},
        {"meta without lease", {{"HDEL", "meta", "lease"}}},
        {"the head fits but waits", {{"HSET", "meta", "capacity", "4"}}},
        {"a key expires", {{"PEXPIRE", "queue", "100000"}}},
        {"a key expires", {{"PEXPIRE", "horizon", "100000"}}},
        {"a zset without its placeholder", {{"ZREM", "queue", ""}}},
        {"a zset without its placeholder", {{"ZREM", "deadlines", ""}}},
        {"meta without its other keys", {{"DEL", "capacity"}}},
        {"meta without its other keys", {{"DEL", "horizon"}}},
        {"the horizon differs from its copy", {{"SET", "horizon", "1"}}},
        {"a deadline beyond the horizon", {{"ZADD", "deadlines", far, "a"}}},
        {"state without meta", {{"DEL", "meta"}}},
    };
    for (std::size_t i = 0; i < corruptions.size(); ++i)
    {
        const auto& [broken, commands] = corruptions[i];
        BOOST_TEST_CONTEXT(broken)
        {
            const script s("corrupt" + std::to_string(i));
            BOOST_TEST(starts_with(run(s.acquire("a", 2, 3, long_lease, acquire_mode::wait)), "granted"));
            BOOST_TEST(starts_with(run(s.acquire("b", 2, 3, long_lease, acquire_mode::wait)), "queued"));
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

// ---- the server's clock, set by the test

struct set_clock_fixture : semaphore_fixture
{
    set_clock_fixture()
    {
        BOOST_TEST_REQUIRE(run({"FUNCTION", "LOAD", "REPLACE", library_with_a_set_clock(library::source)}) ==
                           library::name);
    }

    void set_clock_us(std::uint64_t us) { set_server_clock(client, us); }

    // An instant in microseconds on a whole millisecond, well after the server's own clock.
    const std::uint64_t origin_us = static_cast<std::uint64_t>(server_ms() + 1'000'000) * 1000;
};

// A grant of the fast path (the general path does the same) takes max(seq + 1, the clock).
BOOST_FIXTURE_TEST_CASE(a_fence_from_the_fast_path_follows_the_server_clock, set_clock_fixture)
{
    set_clock_us(origin_us);
    const redis_server::reply a =
        client.execute(jobs.acquire("a", 1, capacity, long_lease, acquire_mode::wait));
    BOOST_TEST(a.to_text() == "granted\n" + std::to_string(origin_us + 1) + "\n1\n" + // above the epoch
                                  std::to_string(long_lease.count()));
    set_clock_us(origin_us + 1000);
    const redis_server::reply b =
        client.execute(jobs.acquire("b", 1, capacity, long_lease, acquire_mode::wait));
    BOOST_TEST(b.to_text() ==
               "granted\n" + std::to_string(origin_us + 1000) + "\n1\n" + std::to_string(long_lease.count()));
    // A clock that stands still: one above the last token.
    const redis_server::reply c =
        client.execute(jobs.acquire("c", 1, capacity, long_lease, acquire_mode::wait));
    BOOST_TEST(c.to_text() ==
               "granted\n" + std::to_string(origin_us + 1001) + "\n1\n" + std::to_string(long_lease.count()));
    BOOST_TEST(check() == "ok\n3\n3\n0");
}

// A deadline equal to the server's clock has passed, for every function: the read-only ones do not
// count the entry, the writing ones reap it (a holder and a waiter), renew it as lost, and grant on.
BOOST_FIXTURE_TEST_CASE(an_entry_whose_deadline_is_the_server_clock_has_expired_everywhere, set_clock_fixture)
{
    capacity = 2;
    const std::uint64_t lease_us = static_cast<std::uint64_t>(std::chrono::microseconds(long_lease).count());
    set_clock_us(origin_us);
    BOOST_TEST(acquire("a", 2) == "granted\nF1\n2");
    BOOST_TEST(acquire("b", 1) == "queued\n1");
    set_clock_us(origin_us + lease_us - 1000); // a millisecond before both deadlines
    BOOST_TEST(status("a") == "granted\nF1\n2");
    BOOST_TEST(run(jobs.usage()) ==
               "usage\n2\n2\n1\n0\n0\n" + std::to_string(origin_us + lease_us - 1000 - 1));
    BOOST_TEST(run(jobs.watch()) == "wake\n1");

    set_clock_us(origin_us + lease_us); // both deadlines, to the millisecond
    BOOST_TEST(status("a") == "lost");
    BOOST_TEST(status("b") == "lost");
    BOOST_TEST(run(jobs.usage()) == "usage\n2\n0\n0\n0\n0\n" + std::to_string(origin_us + lease_us - 1));
    BOOST_TEST(run(jobs.watch()) == "wake\n0");
    BOOST_TEST(renew("a", long_lease, 0) == "lost"); // reaps both, a's own first
    BOOST_TEST(check() == "ok\n0\n0\n0");
    BOOST_TEST(try_acquire("c", 2) == "granted\nF2\n2");
}

// A holder whose lease has passed renews: its entry is reaped and it hears lost, and the permits it
// freed serve the queue in the same call (as every other writing call that reaps does), not at
// the waiter's own renewal a third of a lease later.
BOOST_FIXTURE_TEST_CASE(a_renewal_that_reaps_its_own_expired_lease_serves_the_queue, set_clock_fixture)
{
    capacity = 1;
    set_clock_us(origin_us);
    BOOST_TEST(acquire("a", 1, 100ms) == "granted\nF1\n1");
    BOOST_TEST(acquire("b", 1) == "queued\n1");
    set_clock_us(origin_us + 200'000); // a's lease has passed
    BOOST_TEST(renew("a", long_lease) == "lost");
    BOOST_TEST(status("b") == "granted\nF2\n1");
    BOOST_TEST(check() == "ok\n1\n1\n0");
}

// ---- resizing

BOOST_FIXTURE_TEST_CASE(a_larger_capacity_serves_the_queue_in_order_at_once, semaphore_fixture)
{
    subscriber messages(server, jobs);
    BOOST_TEST(acquire("a", 3) == "granted\nF1\n3");
    BOOST_TEST(acquire("b", 2) == "queued\n1");
    BOOST_TEST(acquire("c", 3) == "queued\n2");
    BOOST_TEST(acquire("d", 1) == "queued\n3");

    // 3 + 2 fit in 6, then c (3) does not: d (1), which would, waits behind it.
    BOOST_TEST(resize("r1", 6) == "resized\n6\nsettled");
    BOOST_TEST(named_message(messages.next()) == "resized 6 settled");
    BOOST_TEST(named_message(messages.next()) == "granted F2 2 b");
    BOOST_TEST(status("c") == "queued\n1");
    BOOST_TEST(status("d") == "queued\n2");
    BOOST_TEST(check() == "ok\n5\n2\n2");
    capacity = 6;
    BOOST_TEST(try_acquire("e", 1) == "busy"); // no barging past c and d

    BOOST_TEST(resize("r2", 9) == "resized\n9\nsettled");
    BOOST_TEST(named_message(messages.next()) == "resized 9 settled");
    BOOST_TEST(named_message(messages.next()) == "granted F3 3 c");
    BOOST_TEST(named_message(messages.next()) == "granted F4 1 d");
    BOOST_TEST(check() == "ok\n9\n4\n0");
    BOOST_TEST(field("capacity") == "9");
    BOOST_TEST(field("calm") == field("stamp"));
}

BOOST_FIXTURE_TEST_CASE(a_smaller_capacity_takes_no_permit_and_grants_nothing_until_the_holders_fit,
                        semaphore_fixture)
{
    capacity = 4;
    subscriber messages(server, jobs);
    BOOST_TEST(acquire("a", 2) == "granted\nF1\n2");
    BOOST_TEST(acquire("b", 2) == "granted\nF2\n2");
    BOOST_TEST(acquire("c", 1) == "queued\n1");

    BOOST_TEST(resize("r", 2) == "resized\n2\npending");
    BOOST_TEST(named_message(messages.next()) == "resized 2 pending");
    BOOST_TEST(check() == "ok\n4\n2\n1"); // more held than the capacity, while the shrink is pending
    BOOST_TEST(field("calm") != field("stamp"));
    BOOST_TEST(status("a") == "granted\nF1\n2"); // nobody lost a permit
    BOOST_TEST(renew("b") == "granted\nF2\n2");
    capacity = 2;
    BOOST_TEST(try_acquire("d", 1) == "busy");

    BOOST_TEST(release("b") == "released\n2"); // 2 held: the shrink settles, and c does not fit
    BOOST_TEST(named_message(messages.next()) == "settled 2");
    BOOST_TEST(field("calm") == std::to_string(stamp));
    BOOST_TEST(status("c") == "queued\n1");
    BOOST_TEST(check() == "ok\n2\n1\n1");
    BOOST_TEST(release("a") == "released\n2");
    BOOST_TEST(named_message(messages.next()) == "granted F3 1 c");
    BOOST_TEST(check() == "ok\n1\n1\n0");

    // The old capacity is refused, with the capacity and stamp in force.
    BOOST_TEST(run(jobs.acquire("e", 1, 4, long_lease, acquire_mode::wait)) ==
               "ASIO_SYNC_CAPACITY 2 " + std::to_string(stamp));
    BOOST_TEST(acquire("e", 3) == "ASIO_SYNC_TOO_MANY 3 > 2");
}

BOOST_FIXTURE_TEST_CASE(an_expired_holder_settles_a_pending_shrink_at_the_next_call, semaphore_fixture)
{
    capacity = 2;
    subscriber messages(server, jobs);
    BOOST_TEST(acquire("a", 1, short_lease) == "granted\nF1\n1");
    BOOST_TEST(acquire("b", 1) == "granted\nF2\n1");
    BOOST_TEST(resize("r", 1) == "resized\n1\npending");
    BOOST_TEST(named_message(messages.next()) == "resized 1 pending");
    outlive(short_lease);
    BOOST_TEST(renew("b") == "granted\nF2\n1"); // reaps a
    BOOST_TEST(named_message(messages.next()) == "settled 1");
    BOOST_TEST(check() == "ok\n1\n1\n0");
}

BOOST_FIXTURE_TEST_CASE(waiters_asking_for_more_than_a_smaller_capacity_leave_the_queue, semaphore_fixture)
{
    capacity = 5;
    BOOST_TEST(acquire("a", 3) == "granted\nF1\n3");
    BOOST_TEST(acquire("b", 4) == "queued\n1");
    BOOST_TEST(acquire("c", 1) == "queued\n2");
    BOOST_TEST(acquire("d", 3) == "queued\n3");
    BOOST_TEST(acquire("e", 4) == "queued\n4");

    BOOST_TEST(resize("r", 3) == "resized\n3\nsettled"); // b and e leave; c (1) does not fit yet
    BOOST_TEST(!stored("b"));
    BOOST_TEST(!stored("e"));
    BOOST_TEST(status("c") == "queued\n1");
    BOOST_TEST(status("d") == "queued\n2");
    BOOST_TEST(check() == "ok\n3\n1\n2");

    // Their processes learn it from their renewal, and their acquire sent again is refused.
    capacity = 3;
    BOOST_TEST(renew("b") == "lost");
    BOOST_TEST(acquire("b2", 4) == "ASIO_SYNC_TOO_MANY 4 > 3");
    BOOST_TEST(release("a") == "released\n3");
    BOOST_TEST(status("c") == "granted\nF2\n1");
    BOOST_TEST(status("d") == "queued\n1");
}

// A resize is keyed by its id: sent again after its reply was lost, it answers the state it made
// while it is in force, and changes nothing. One sent from a stamp that is no longer in force (a
// resize ran since) changes nothing and says so, so that the client can tell.
BOOST_FIXTURE_TEST_CASE(a_resize_is_replayed_by_its_id_and_refused_from_a_stale_stamp, semaphore_fixture)
{
    subscriber messages(server, jobs);
    BOOST_TEST(acquire("a", 2) == "granted\nF1\n2");
    BOOST_TEST(resize("r1", 4) == "resized\n4\nsettled");
    BOOST_TEST(named_message(messages.next()) == "resized 4 settled");
    const std::uint64_t first = stamp;
    const std::vector<std::string> after_first = snapshot(jobs);
    BOOST_TEST(resize_from("r1", 4, 0) == "resized\n4\nsettled"); // the replay, from its first base
    BOOST_TEST(stamp == first);
    BOOST_TEST(snapshot(jobs) == after_first);

    BOOST_TEST(resize_from("r2", 5, 0) == "conflict\n4\nseen"); // r1 ran since r2's base
    BOOST_TEST(snapshot(jobs) == after_first);
    BOOST_TEST(resize("r2", 5) == "resized\n5\nsettled");
    BOOST_TEST(named_message(messages.next()) == "resized 5 settled");
    BOOST_TEST(stamp > first);

    // r1 sent again now: superseded, it cannot tell whether it ran; nothing changes.
    const std::vector<std::string> after_second = snapshot(jobs);
    BOOST_TEST(resize_from("r1", 4, 0) == "conflict\n5\nseen");
    BOOST_TEST(snapshot(jobs) == after_second);
    command({"PUBLISH", messages.channel, "end"});
    BOOST_TEST(messages.next() == "end"); // nothing was published for the replays and conflicts
}

BOOST_FIXTURE_TEST_CASE(a_resize_of_a_semaphore_without_state_is_kept_for_its_first_acquire,
                        semaphore_fixture)
{
    BOOST_TEST(resize("r", 4) == "resized\n4\nsettled");
    BOOST_TEST(command({"DBSIZE"}) == "5"); // the resize made the state
    BOOST_TEST(check() == "ok\n0\n0\n0");
    BOOST_TEST(run(jobs.acquire("a", 1, 3, long_lease, acquire_mode::wait)) ==
               "ASIO_SYNC_CAPACITY 4 " + std::to_string(stamp));
    capacity = 4;
    BOOST_TEST(acquire("a", 4) == "granted\nF1\n4");
    BOOST_TEST(field("stamp") == std::to_string(stamp));
    BOOST_TEST(check() == "ok\n4\n1\n0");
}

// A resized capacity outlives the state: a state of which only the horizon and the capacity key are
// left (as an idle expiry of the library's version 3 leaves it), and a state that Redis lost, come
// back with it, never with a capacity declared before (a process that missed the resize declares
// that one), and a shrink pending when the state was lost settles.
BOOST_AUTO_TEST_CASE(a_resize_outlives_expired_and_lost_state)
{
    {
        semaphore_fixture f;
        BOOST_TEST(f.acquire("a", 1) == "granted\nF1\n1");
        BOOST_TEST(f.resize("r", 2) == "resized\n2\nsettled");
        BOOST_TEST(f.release("a") == "released\n1");
        for (const semaphore_key key : {semaphore_key::meta, semaphore_key::deadlines, semaphore_key::queue})
            f.command({"DEL", f.jobs.key(key)});
        BOOST_TEST(f.command({"DBSIZE"}) == "2");
        f.command({"SET", f.jobs.key(semaphore_key::horizon), "1"}); // long past: idle, not lost
        BOOST_TEST(f.acquire("b", 1) == "ASIO_SYNC_CAPACITY 2 " + std::to_string(f.stamp));
        f.capacity = 2;
        BOOST_TEST(f.acquire("b", 1) == "granted\nF2\n1");
        BOOST_TEST(f.check() == "ok\n1\n1\n0");
    }
    for (const semaphore_key k : {semaphore_key::meta, semaphore_key::deadlines})
    {
        BOOST_TEST_CONTEXT("key " << static_cast<int>(k))
        {
            semaphore_fixture f;
            constexpr std::chrono::milliseconds lease = 1000ms;
            f.capacity = 3;
            subscriber messages(f.server, f.jobs);
            BOOST_TEST(f.acquire("a", 3, lease) == "granted\nF1\n3");
            BOOST_TEST(f.resize("r", 1) == "resized\n1\npending");
            BOOST_TEST(f.named_message(messages.next()) == "resized 1 pending");
            const std::uint64_t a_fence = f.fence_of("a");
            f.command({"DEL", f.jobs.key(k)});

            BOOST_TEST(f.acquire("b", 1) == "ASIO_SYNC_CAPACITY 1 " + std::to_string(f.stamp));
            f.capacity = 1;
            BOOST_TEST(f.acquire("b", 1) == "queued\n1"); // lost state: a quiet period
            BOOST_TEST(f.named_message(messages.next()) == "settled 1");
            BOOST_TEST(f.field("capacity") == "1");
            BOOST_TEST(f.field("stamp") == std::to_string(f.stamp));
            BOOST_TEST(f.renew("a", lease, a_fence) == "state_lost");
            BOOST_TEST(f.check() == "ok\n0\n0\n1");
            f.outlive_quiet();
            BOOST_TEST(f.renew("b") == "granted\nF2\n1");
            BOOST_TEST(f.check() == "ok\n1\n1\n0");
        }
    }
}

// A resize while meta is lost and leases may be live stores the capacity key only; the next acquire
// finds the lost state and starts afresh with it.
BOOST_FIXTURE_TEST_CASE(a_resize_while_the_state_is_lost_is_taken_by_the_fresh_state, semaphore_fixture)
{
    BOOST_TEST(acquire("a", 2) == "granted\nF1\n2");
    command({"DEL", jobs.key(semaphore_key::meta)});
    BOOST_TEST(resize("r", 5) == "resized\n5\nsettled");
    BOOST_TEST(command({"EXISTS", jobs.key(semaphore_key::meta)}) == "0");
    capacity = 5;
    BOOST_TEST(try_acquire("b", 1) == "busy"); // lost state found: a quiet period
    BOOST_TEST(field("capacity") == "5");
    BOOST_TEST(check() == "ok\n0\n0\n0");
}

BOOST_FIXTURE_TEST_CASE(usage_tells_the_capacity_its_stamp_and_a_clock_below_any_later_stamp,
                        semaphore_fixture)
{
    const auto usage = [&] {
        const redis_server::reply r = client.execute(jobs.usage());
        BOOST_TEST_REQUIRE(r.elements.size() == 7u);
        BOOST_TEST(r.elements[0].text == "usage");
        std::vector<std::uint64_t> values;
        for (std::size_t i = 1; i < r.elements.size(); ++i)
            values.push_back(static_cast<std::uint64_t>(r.elements[i].integer));
        return values; // capacity, held, queued, stamp, calm, clock
    };
    std::vector<std::uint64_t> u = usage();
    BOOST_TEST((u == std::vector<std::uint64_t>{0, 0, 0, 0, 0, u[5]}));
    BOOST_TEST(acquire("a", 3) == "granted\nF1\n3");
    BOOST_TEST(acquire("b", 1) == "queued\n1");
    u = usage();
    BOOST_TEST((u == std::vector<std::uint64_t>{3, 3, 1, 0, 0, u[5]}));
    BOOST_TEST(u[5] >= fence_of("a"));

    const std::uint64_t before = usage()[5];
    BOOST_TEST(resize("r", 2) == "resized\n2\npending");
    BOOST_TEST(stamp > before);
    u = usage();
    BOOST_TEST((u == std::vector<std::uint64_t>{2, 3, 1, stamp, 0, u[5]})); // pending: calm 0
    BOOST_TEST(u[5] >= stamp);
    const std::uint64_t clock = u[5];
    BOOST_TEST(resize("r2", 1) == "resized\n1\npending");
    BOOST_TEST(stamp > clock);

    // Without meta, the capacity key tells it.
    command({"DEL", jobs.key(semaphore_key::meta), jobs.key(semaphore_key::deadlines),
             jobs.key(semaphore_key::queue)});
    u = usage();
    BOOST_TEST((u == std::vector<std::uint64_t>{1, 0, 0, stamp, stamp, u[5]}));
}

BOOST_FIXTURE_TEST_CASE(a_capacity_key_of_another_type_is_wrongtype_and_changes_nothing, semaphore_fixture)
{
    command({"RPUSH", jobs.key(semaphore_key::capacity), "x"});
    const std::vector<std::string> before = snapshot(jobs);
    for (const argv_type& c :
         {jobs.resize("r", 2, 0), jobs.acquire("a", 1, 3, long_lease, acquire_mode::wait), jobs.usage(),
          jobs.check()})
    {
        const std::string reply = run(c);
        BOOST_TEST(starts_with(reply, "WRONGTYPE "), c[1] << ": " << reply);
    }
    BOOST_TEST(snapshot(jobs) == before);
}

BOOST_FIXTURE_TEST_CASE(check_reports_each_broken_invariant_of_a_resize, semaphore_fixture)
{
    // Each corruption on a semaphore of its own, a holder a (2) and a holder b (2) of a capacity of 4
    // resized to 2: a shrink pending. "{stamp}" stands for its stamp, "{early}" and "{later}" for
    // tokens above it.
    const std::vector<std::pair<std::string, std::vector<argv_type>>> corruptions{
        {"meta without its other keys", {{"DEL", "capacity"}}},
        {"the capacity key differs from meta", {{"SET", "capacity", "3 {stamp} r"}}},
        {"a stamp beyond seq, or calm beyond the stamp", {{"HSET", "meta", "calm", "{later}"}}},
        {"used exceeds the capacity", {{"HSET", "meta", "calm", "{stamp}"}}},
        {"a shrink settled but not recorded",
         {{"HSET", "meta", "capacity", "4"}, {"SET", "capacity", "4 {stamp} r"}}},
        {"a grant beyond the capacity in force",
         {{"HSET", "meta", "seq", "{later}", "#a", "2:{early}", "#b", "2:{later}"}}},
        {"a key expires", {{"PEXPIRE", "capacity", "100000"}}},
    };
    for (std::size_t i = 0; i < corruptions.size(); ++i)
    {
        const auto& [broken, commands] = corruptions[i];
        BOOST_TEST_CONTEXT(broken << " (" << i << ")")
        {
            const script s("corrupt" + std::to_string(i));
            BOOST_TEST(starts_with(run(s.acquire("a", 2, 4, long_lease, acquire_mode::wait)), "granted"));
            BOOST_TEST(starts_with(run(s.acquire("b", 2, 4, long_lease, acquire_mode::wait)), "granted"));
            const redis_server::reply resized = client.execute(s.resize("r", 2, 0));
            BOOST_TEST_REQUIRE(resized.elements.size() == 4u);
            const std::string s_stamp = resized.elements[2].to_text();
            const std::string early = std::to_string(std::stoull(s_stamp) + 1000);
            const std::string later = std::to_string(std::stoull(s_stamp) + 2000);
            BOOST_TEST(run(s.check()) == "ok\n4\n2\n0");
            for (argv_type corruption : commands)
            {
                for (const std::string& key : s.keys())
                    if (key.ends_with(":" + corruption[1]))
                        corruption[1] = key;
                for (std::string& arg : corruption)
                    for (const auto& [placeholder, value] :
                         {std::pair{"{stamp}", s_stamp}, {"{early}", early}, {"{later}", later}})
                        if (const std::size_t at = arg.find(placeholder); at != std::string::npos)
                            arg.replace(at, std::string_view(placeholder).size(), value);
                command(corruption);
            }
            BOOST_TEST(run(s.check()) == "ASIO_SYNC_INVARIANT " + broken);
        }
    }
}

namespace {

// The semaphore the library implements, in memory, for leases that never expire: the replies it
// expects (fences numbered 1, 2, ... in grant order), the messages it expects published (grants,
// resizes and settled shrinks), and the check it expects. A resize's reply and messages are
// written without their stamps, as the test's `plain` writes the server's.
class semaphore_model
{
public:
    explicit semaphore_model(std::size_t capacity) : capacity_(capacity) {}

    std::size_t capacity() const noexcept { return capacity_; }

    std::string acquire(const std::string& id, std::size_t n, acquire_mode mode)
    {
        if (n > capacity_)
            return "ASIO_SYNC_TOO_MANY " + std::to_string(n) + " > " + std::to_string(capacity_);
        if (const auto known = state(id))
            return *known;
        if (queue_.empty() && used_ + n <= capacity_)
            return grant(id, n, false);
        if (mode == acquire_mode::try_once)
            return "busy";
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

    // The capacity becomes `capacity`: waiters that ask for more leave the queue, the queue is
    // served, holders keep their permits.
    std::string resize(std::size_t capacity)
    {
        capacity_ = capacity;
        pending_ = used_ > capacity;
        rejected_ += std::erase_if(queue_, [&](const auto& waiter) { return waiter.second > capacity; });
        published_.push_back("resized " + std::to_string(capacity) + " " + shrink_state());
        serve();
        return resized();
    }

    // The answer to a replay of the resize in force.
    std::string resized() const { return "resized\n" + std::to_string(capacity_) + "\n" + shrink_state(); }

    std::string check() const
    {
        return "ok\n" + std::to_string(used_) + "\n" + std::to_string(holders_.size()) + "\n" +
               std::to_string(queue_.size());
    }

    std::vector<std::string> take_published() { return std::exchange(published_, {}); }

    // The waiters that resizes took out of the queue.
    std::size_t rejected() const noexcept { return rejected_; }

    std::vector<std::string> holders() const
    {
        std::vector<std::string> ids;
        for (const auto& holder : holders_)
            ids.push_back(holder.first);
        return ids;
    }

private:
    std::string shrink_state() const { return pending_ ? "pending" : "settled"; }

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

    std::string grant(const std::string& id, std::size_t n, bool published)
    {
        const std::uint64_t fence = ++grants_;
        holders_[id] = {n, fence};
        used_ += n;
        if (published)
            published_.push_back("granted " + std::to_string(fence) + " " + std::to_string(n) + " " + id);
        return "granted\n" + std::to_string(fence) + "\n" + std::to_string(n);
    }

    // Serves the head while it fits; then a pending shrink settles once the holders fit.
    void serve()
    {
        while (!queue_.empty() && used_ + queue_.front().second <= capacity_)
        {
            const auto [id, n] = queue_.front();
            queue_.pop_front();
            grant(id, n, true);
        }
        if (pending_ && used_ <= capacity_)
        {
            pending_ = false;
            published_.push_back("settled " + std::to_string(capacity_));
        }
    }

    std::size_t capacity_;
    std::size_t used_ = 0;
    std::uint64_t grants_ = 0;
    std::size_t rejected_ = 0;
    bool pending_ = false;                                                 // a shrink waits for the holders
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
    // The server's fence of each model fence, and back: one to one, in the same order.
    std::map<std::uint64_t, std::uint64_t> server_of_model;
    std::map<std::uint64_t, std::uint64_t> model_of_server;
    // Replaces the server's fence in `text` (a reply's second line, a granted message's second
    // word) by the model's, checking that the mapping stays one to one and order-preserving.
    const auto in_model_terms = [&](std::string text, const std::string& expected, bool message = false) {
        const char separator = message ? ' ' : '\n';
        const std::size_t at = text.find(separator) + 1;
        const std::size_t end = text.find(separator, at);
        const std::size_t expected_end = expected.find(separator, at);
        if (!starts_with(text, "granted") || !starts_with(expected, "granted") || end == std::string::npos ||
            expected_end == std::string::npos)
            return text;
        const std::uint64_t server_fence = std::stoull(text.substr(at, end - at));
        const std::uint64_t model_fence = std::stoull(expected.substr(at, expected_end - at));
        const auto [it, added] = model_of_server.emplace(server_fence, model_fence);
        if (added)
        {
            BOOST_TEST_REQUIRE(server_of_model.emplace(model_fence, server_fence).second);
            const auto next = std::next(it);
            BOOST_TEST_REQUIRE((it == model_of_server.begin() || std::prev(it)->second < model_fence));
            BOOST_TEST_REQUIRE((next == model_of_server.end() || next->second > model_fence));
        }
        return text.substr(0, at) + std::to_string(it->second) + text.substr(end);
    };
    // The id of the resize in force (its stamp is the fixture's).
    std::string resizer;
    const auto plain = [&](const argv_type& argv) {
        redis_server::reply r = client.execute(argv);
        if (r.type == redis_server::reply::kind::array && !r.elements.empty() &&
            r.elements[0].text == "resized")
        {
            BOOST_TEST_REQUIRE(r.elements.size() == 4u);
            BOOST_TEST_REQUIRE(static_cast<std::uint64_t>(r.elements[2].integer) >= stamp);
            stamp = static_cast<std::uint64_t>(r.elements[2].integer);
            return "resized\n" + r.elements[1].to_text() + "\n" +
                   (r.elements[3].integer == r.elements[2].integer ? "settled" : "pending");
        }
        if (r.type == redis_server::reply::kind::array && r.elements.size() == 4u) // drop the lease left
            r.elements.pop_back();
        if (r.type == redis_server::reply::kind::array && r.elements.size() == 3u &&
            r.elements[0].text == "queued")
            r.elements.pop_back();
        return r.to_text();
    };
    const auto message = [&](const std::string& published) {
        const std::string text = grants.next();
        return starts_with(text, "granted") ? in_model_terms(text, published, true) : named_message(text);
    };
    const std::uint32_t seed = 20260213;
    std::mt19937 random(seed);
    const auto below = [&](std::size_t bound) {
        return std::uniform_int_distribution<std::size_t>(0, bound - 1)(random);
    };
    std::vector<std::string> ids{"first"};
    const std::string first_expected = model.acquire("first", 1, acquire_mode::wait); // declares
    BOOST_TEST_REQUIRE(
        in_model_terms(plain(jobs.acquire("first", 1, capacity, long_lease, acquire_mode::wait)),
                       first_expected) == first_expected);
    const auto known_id = [&] { return ids[below(ids.size())]; };
    // How often each kind of reply and message came: the run must take the paths of a resize.
    std::map<std::string, int> outcomes;
    const auto kind_of = [](const std::string& text) {
        std::string kind = text.substr(0, text.find_first_of("\n "));
        if (kind == "resized")
            kind += text.ends_with("pending") ? " pending" : " settled";
        return kind;
    };

    for (int step = 0; step < 3000; ++step)
    {
        BOOST_TEST_CONTEXT("seed " << seed << ", step " << step)
        {
            std::string action, reply, expected;
            const std::size_t choice = below(100);
            if (choice < 44)
            {
                const std::string id = "id" + std::to_string(step);
                const std::size_t n = 1 + below(capacity);
                const acquire_mode mode = choice < 34 ? acquire_mode::wait : acquire_mode::try_once;
                action = "acquire " + id + " " + std::to_string(n);
                ids.push_back(id);
                reply = plain(jobs.acquire(id, n, capacity, long_lease, mode));
                expected = model.acquire(id, n, mode);
            }
            else if (choice < 69)
            {
                // Half of them by a holder, so that permits come back often enough for grants.
                const std::vector<std::string> holders = model.holders();
                const std::string id =
                    choice % 2 == 0 && !holders.empty() ? holders[below(holders.size())] : known_id();
                action = "release " + id;
                reply = plain(jobs.release(id, 0));
                expected = model.release(id);
            }
            else if (choice < 77)
            {
                const std::string id = known_id();
                action = "renew " + id;
                reply = plain(jobs.renew(id, long_lease, 0));
                expected = model.renew(id);
            }
            else if (choice < 84)
            {
                const std::string id = known_id();
                action = "replay " + id;
                reply = plain(jobs.acquire(id, 1, capacity, long_lease, acquire_mode::wait));
                expected = model.acquire(id, 1, acquire_mode::wait);
            }
            else if (choice < 87)
            {
                action = "too many";
                reply = plain(jobs.acquire("id" + std::to_string(step), capacity + 1, capacity, long_lease,
                                           acquire_mode::wait));
                expected = model.acquire("", capacity + 1, acquire_mode::wait);
            }
            else if (choice < 90)
            {
                action = "other capacity";
                reply = plain(jobs.acquire("id" + std::to_string(step), 1, capacity + 1, long_lease,
                                           acquire_mode::wait));
                expected = "ASIO_SYNC_CAPACITY " + std::to_string(capacity) + " " + std::to_string(stamp);
            }
            else if (choice < 93)
            {
                const std::size_t to = 2 + below(7);
                resizer = "resize" + std::to_string(step);
                action = "resize to " + std::to_string(to);
                reply = plain(jobs.resize(resizer, to, stamp));
                expected = model.resize(to);
                capacity = to;
            }
            else if (choice < 95 && !resizer.empty())
            {
                action = "replay " + resizer;
                reply = plain(jobs.resize(resizer, 1 + below(8), 1 + below(100)));
                expected = model.resized();
            }
            else if (choice < 97)
            {
                action = "resize from a stale stamp";
                reply = plain(jobs.resize("stale" + std::to_string(step), 1 + below(8), stamp + 1));
                expected = "conflict\n" + std::to_string(capacity) + "\n" + std::to_string(stamp);
            }
            else
            {
                const std::string id = known_id();
                action = "status " + id;
                reply = plain(jobs.status(id));
                expected = model.status(id);
            }
            BOOST_TEST_REQUIRE(in_model_terms(reply, expected) == expected, action);
            BOOST_TEST_REQUIRE(check() == model.check(), action);
            ++outcomes[kind_of(expected)];
            for (const std::string& published : model.take_published())
            {
                BOOST_TEST_REQUIRE(message(published) == published, action);
                ++outcomes["message " + kind_of(published)];
            }
        }
    }
    // Nothing more was published than the model expected.
    command({"PUBLISH", grants.channel, "end"});
    BOOST_TEST(grants.next() == "end");
    for (const auto& [kind, times] : outcomes)
        BOOST_TEST_MESSAGE(kind << ": " << times);
    BOOST_TEST_MESSAGE("waiters taken out of the queue by a resize: " << model.rejected());
    for (const char* kind :
         {"resized pending", "resized settled", "conflict", "message settled", "message granted",
          "ASIO_SYNC_CAPACITY", "ASIO_SYNC_TOO_MANY", "busy", "queued", "cancelled"})
        BOOST_TEST(outcomes[kind] > 0, kind);
    BOOST_TEST(model.rejected() > 0u);
}

BOOST_AUTO_TEST_SUITE_END()
