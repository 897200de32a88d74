// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#define BOOST_TEST_MODULE redis_semaphore_client

// The client state machine of the fleet-wide semaphore, without a server, a connection or a clock:
// a table of scenarios, each a list of steps (an event, at a time the test sets, and the exact
// actions it must produce, in order). Together they take every branch of semaphore_client: the
// check of the eviction policy, each reply to an acquire (granted, queued, busy, an error, a reply
// lost with the link and the replay, LOADING or BUSY and the retry, a missing library and its
// reload), grants published and their races with a give-up, renewals of waiters and holders
// (granted, queued, lost, state_lost), the watch of the queue, the clock (heartbeat, lease
// deadlines), releases and their replies, close and abort; the capacity learnt (from messages, reads
// of the usage and refused acquires, taken or not) and resizes (stored, pending, settled, replaced,
// replayed, refused). The lease rule is checked by the deadline each permit would declare its loss
// at.

#include <asio_sync/redis/detail/semaphore_client.hpp>

#include <boost/asio/error.hpp>
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

BOOST_AUTO_TEST_SUITE(redis_semaphore_client)

namespace {

namespace redis = asio_sync::redis;
using namespace redis::detail;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;
using boost::system::error_code;
using outcome = semaphore_reply::outcome;
using action_type = client_action::type;

constexpr std::chrono::milliseconds lease = 3000ms;
constexpr std::chrono::milliseconds margin = 100ms;

// The client's options: `capacity`, ids "<prefix>:<n>", the lease and margin above.
client_options options_of(std::size_t capacity, std::string prefix, bool adopt = false,
                          unsigned durable_replicas = 0)
{
    return {capacity,
            asio_sync::redis::detail::checked_semaphore_options({lease, margin, adopt, durable_replicas},
                                                                lease, lease),
            std::move(prefix)};
}

// A short name for each error an action can carry.
std::string name_of(error_code ec)
{
    static const std::pair<error_code, const char*> names[] = {
        {{}, "ok"},
        {boost::asio::error::operation_aborted, "aborted"},
        {boost::asio::error::would_block, "would_block"},
        {asio_sync::error::closed, "closed"},
        {asio_sync::error::timed_out, "timed_out"},
        {redis::error::server_error, "server_error"},
        {redis::error::no_permission, "no_permission"},
        {redis::error::eviction_policy, "eviction_policy"},
        {redis::error::replica_policy, "replica_policy"},
        {redis::error::no_replicas, "no_replicas"},
        {redis::error::lease_lost, "lease_lost"},
        {redis::error::state_lost, "state_lost"},
        {redis::error::capacity_mismatch, "capacity_mismatch"},
        {redis::error::invalid_argument, "invalid_argument"},
        {redis::error::read_only, "read_only"},
        {redis::error::connection_lost, "connection_lost"},
        {asio_sync::error::too_many_permits, "too_many_permits"},
    };
    for (const auto& [code, name] : names)
        if (ec == code)
            return name;
    return ec.message();
}

std::string describe(const client_action& a)
{
    const std::string serial = "#" + std::to_string(a.serial);
    switch (a.what)
    {
    case action_type::send_acquire: // the capacity written when it is not the fixture's
        return "acquire " + serial + " " + a.id + " n=" + std::to_string(a.n) +
               (a.mode == acquire_mode::wait ? " wait" : " try") +
               (a.capacity == 2 ? "" : " capacity=" + std::to_string(a.capacity));
    case action_type::send_renew:
        return "renew " + serial + " " + a.id + " fence=" + std::to_string(a.fence);
    case action_type::send_release:
        return "release " + a.id;
    case action_type::send_watch:
        return "watch";
    case action_type::send_check:
        return "check";
    case action_type::load_library:
        return "load " + serial;
    case action_type::retry_later:
        return "retry " + serial + " " + std::to_string(a.delay.count()) + "ms";
    case action_type::grant:
        return "grant " + serial + " " + a.id + " n=" + std::to_string(a.n) +
               " fence=" + std::to_string(a.fence);
    case action_type::fail:
        return "fail " + serial + " " + name_of(a.error);
    case action_type::lose:
        return "lose " + a.id + " " + name_of(a.error);
    case action_type::send_resize:
        return "resize " + serial + " " + a.id + " capacity=" + std::to_string(a.capacity) +
               " base=" + std::to_string(a.base);
    case action_type::send_usage:
        return "usage";
    case action_type::resize_done:
        return "resized " + serial + " " + name_of(a.error);
    }
    return "?";
}

semaphore_reply make(outcome what)
{
    semaphore_reply r;
    r.what = what;
    return r;
}

semaphore_reply granted(std::uint64_t fence, std::size_t n, std::chrono::milliseconds left)
{
    semaphore_reply r = make(outcome::granted);
    r.fence = fence;
    r.n = n;
    r.left = left;
    return r;
}

semaphore_reply queued(std::size_t position, std::chrono::milliseconds left)
{
    semaphore_reply r = make(outcome::queued);
    r.position = position;
    r.left = left;
    return r;
}

semaphore_reply failed(error_code ec)
{
    semaphore_reply r = make(outcome::failed);
    r.error = ec;
    return r;
}

semaphore_reply wake(std::chrono::milliseconds in)
{
    semaphore_reply r = make(outcome::wake);
    r.left = in;
    return r;
}

semaphore_reply resized(std::size_t capacity, std::uint64_t stamp, std::uint64_t calm)
{
    semaphore_reply r = make(outcome::resized);
    r.capacity = capacity;
    r.stamp = stamp;
    r.calm = calm;
    return r;
}

semaphore_reply conflict(std::size_t capacity, std::uint64_t stamp)
{
    semaphore_reply r = make(outcome::conflict);
    r.capacity = capacity;
    r.stamp = stamp;
    return r;
}

// NOREPLICAS, as decoded.
semaphore_reply no_replicas()
{
    semaphore_reply r = make(outcome::no_replicas);
    r.error = redis::error::no_replicas;
    return r;
}

// A read of the usage: the capacity in force, the permits held, its stamp and calm, the clock.
semaphore_reply usage(std::size_t capacity, std::size_t held, std::uint64_t stamp, std::uint64_t calm,
                      std::uint64_t clock)
{
    semaphore_reply r = make(outcome::usage);
    r.capacity = capacity;
    r.held = held;
    r.stamp = stamp;
    r.calm = calm;
    r.clock = clock;
    return r;
}

// An acquire refused for its capacity, with the capacity and stamp in force.
semaphore_reply mismatch(std::size_t capacity, std::uint64_t stamp)
{
    semaphore_reply r = failed(redis::error::capacity_mismatch);
    r.capacity = capacity;
    r.stamp = stamp;
    return r;
}

// A client of capacity 2, lease 3 s, margin 100 ms, ids "p:<n>", on a clock the test moves; it
// remembers each call sent (its id and send time) to answer it.
struct client_fixture
{
    explicit client_fixture(bool adopt = false) : client(options_of(2, "p", adopt)) {}

    semaphore_client client;
    clock_type::time_point start = clock_type::time_point(std::chrono::hours(1));
    clock_type::time_point now = start;
    std::map<std::uint64_t, client_action> acquires; // the last acquire sent, by serial
    std::map<std::string, client_action> renewals;   // the last renewal sent, by id
    std::map<std::uint64_t, client_action> resizes;  // the last resize sent, by serial
    std::map<std::string, std::shared_ptr<lease_view>> leases;

    // Runs one event and checks its actions, exactly and in order.
    void step(const std::function<void(client_actions&)>& event, const std::vector<std::string>& expected)
    {
        client_actions out;
        event(out);
        std::vector<std::string> actual;
        for (const client_action& a : out)
        {
            actual.push_back(describe(a));
            if (a.what == action_type::send_acquire)
                acquires[a.serial] = a;
            else if (a.what == action_type::send_renew)
                renewals[a.id] = a;
            else if (a.what == action_type::send_resize)
                resizes[a.serial] = a;
            else if (a.what == action_type::grant)
                leases[a.id] = a.lease;
        }
        BOOST_TEST(actual == expected, boost::test_tools::per_element());
    }

    void after(std::chrono::milliseconds d) { now += d; }

    // ---- events
    void acquire(std::uint64_t serial, std::size_t n, const std::vector<std::string>& expected,
                 acquire_mode mode = acquire_mode::wait)
    {
        step([&](client_actions& out) { client.start_acquire(serial, n, mode, now, out); }, expected);
    }

    void checked(server_check result, const std::vector<std::string>& expected)
    {
        step([&](client_actions& out) { client.on_check_reply(result, now, out); }, expected);
    }

    // Answers the last acquire sent for `serial`.
    void answer(std::uint64_t serial, const semaphore_reply& r, const std::vector<std::string>& expected)
    {
        const client_action& sent = acquires.at(serial);
        step(
            [&](client_actions& out) { client.on_acquire_reply(serial, sent.id, sent.sent_at, r, now, out); },
            expected);
    }

    // Answers the last renewal sent for `id`.
    void renewed(const std::string& id, const semaphore_reply& r, const std::vector<std::string>& expected)
    {
        const client_action& sent = renewals.at(id);
        step(
            [&](client_actions& out) {
                if (sent.serial != 0)
                    client.on_waiter_renewed(sent.serial, sent.id, sent.sent_at, r, now, out);
                else
                    client.on_holder_renewed(sent.id, sent.sent_at, r, out);
            },
            expected);
    }

    // The command link connected again.
    void reconnected(const std::vector<std::string>& expected)
    {
        step([&](client_actions& out) { client.on_connected(out); }, expected);
    }

    void tick(const std::vector<std::string>& expected)
    {
        step([&](client_actions& out) { client.on_tick(now, out); }, expected);
    }

    void message(const std::string& text, const std::vector<std::string>& expected)
    {
        step([&](client_actions& out) { client.on_message(text, now, out); }, expected);
    }

    void resize(std::uint64_t serial, std::size_t capacity, const std::vector<std::string>& expected,
                bool settle = true)
    {
        step([&](client_actions& out) { client.start_resize(serial, capacity, settle, out); }, expected);
    }

    // Answers the last resize sent for `serial`.
    void resize_answer(std::uint64_t serial, const semaphore_reply& r,
                       const std::vector<std::string>& expected)
    {
        const client_action& sent = resizes.at(serial);
        step([&](client_actions& out) { client.on_resize_reply(serial, sent.id, r, now, out); }, expected);
    }

    void read(const semaphore_reply& r, const std::vector<std::string>& expected)
    {
        step([&](client_actions& out) { client.on_usage_reply(r, now, out); }, expected);
    }

    // An acquire of n checked and sent: the first of the client (serial 1) checks the server.
    void sent(std::uint64_t serial, std::size_t n)
    {
        const std::string id = "p:" + std::to_string(serial);
        if (serial == 1)
        {
            acquire(1, n, {"check"});
            checked(server_check::passed, {"acquire #1 p:1 n=" + std::to_string(n) + " wait"});
        }
        else
            acquire(serial, n,
                    {"acquire #" + std::to_string(serial) + " " + id + " n=" + std::to_string(n) + " wait"});
    }

    // The acquire `serial` (id p:<serial>) sent and granted with fence `fence` at once.
    void held(std::uint64_t serial, std::uint64_t fence)
    {
        sent(serial, 1);
        const std::string id = "p:" + std::to_string(serial);
        answer(serial, granted(fence, 1, lease),
               {"grant #" + std::to_string(serial) + " " + id + " n=1 fence=" + std::to_string(fence)});
    }

    clock_type::time_point deadline_of(const std::string& id) const { return leases.at(id)->deadline(); }
};

struct scenario
{
    const char* name;
    std::function<void(client_fixture&)> steps;
};

const scenario scenarios[] = {
    // ---- the check of the eviction policy
    {"the first acquire checks the server; acquires wait for the check",
     [](client_fixture& f) {
         f.acquire(1, 1, {"check"});
         f.acquire(2, 2, {});
         f.checked(server_check::passed, {"acquire #1 p:1 n=1 wait", "acquire #2 p:2 n=2 wait"});
         f.acquire(3, 1, {"acquire #3 p:3 n=1 try"}, acquire_mode::try_once);
     }},
    {"a server that may evict fails the acquires that waited and every later one",
     [](client_fixture& f) {
         f.acquire(1, 1, {"check"});
         f.acquire(2, 1, {});
         f.checked(server_check::evicts, {"fail #1 eviction_policy", "fail #2 eviction_policy"});
         f.acquire(3, 1, {"fail #3 eviction_policy"});
         // A reconnect may reach another server: checked again, with nothing pending at the next
         // acquire.
         f.reconnected({});
         f.acquire(4, 1, {"check"});
         f.checked(server_check::passed, {"acquire #4 p:3 n=1 wait"});
     }},
    {"a server that would write without its replicas fails the acquires until a reconnect passes",
     [](client_fixture& f) {
         f.acquire(1, 1, {"check"});
         f.checked(server_check::unguarded, {"fail #1 replica_policy"});
         f.acquire(2, 1, {"fail #2 replica_policy"});
         f.reconnected({});
         f.acquire(3, 1, {"check"});
         f.checked(server_check::passed, {"acquire #3 p:2 n=1 wait"});
     }},
    {"a check whose reply was lost is sent again",
     [](client_fixture& f) {
         f.acquire(1, 1, {"check"});
         f.checked(server_check::unanswered, {"check"});
         f.checked(server_check::passed, {"acquire #1 p:1 n=1 wait"});
     }},
    {"a reconnect while the check is in flight keeps waiting for it",
     [](client_fixture& f) {
         f.acquire(1, 1, {"check"});
         f.reconnected({});
         f.acquire(2, 1, {});
         f.checked(server_check::passed, {"acquire #1 p:1 n=1 wait", "acquire #2 p:2 n=1 wait"});
     }},

    // ---- a reconnect: the server is checked again before anything is sent to it
    {"after a reconnect, an acquire whose reply was lost is sent again once the server passes its check",
     [](client_fixture& f) {
         f.sent(1, 1);
         f.reconnected({"check"});
         f.acquire(2, 1, {});
         f.answer(1, make(outcome::connection_lost), {});
         f.checked(server_check::passed, {"acquire #1 p:1 n=1 wait", "acquire #2 p:2 n=1 wait"});
     }},
    {"a reply from a server not checked yet is not taken: the same id asks again after the check",
     [](client_fixture& f) {
         f.sent(1, 1);
         f.reconnected({"check"});
         f.answer(1, granted(7, 1, lease), {}); // a replay queued while the link was down
         f.message("granted 7 1 p:1", {});
         f.checked(server_check::passed, {"acquire #1 p:1 n=1 wait"});
         f.answer(1, granted(7, 1, lease), {"grant #1 p:1 n=1 fence=7"});
     }},
    {"an acquire due again (a pause, a reload, a lapsed waiter) waits for the check after a reconnect",
     [](client_fixture& f) {
         f.sent(1, 1);
         f.sent(2, 1);
         f.sent(3, 1);
         f.answer(1, make(outcome::retry), {"retry #1 20ms"});
         f.answer(2, make(outcome::library_missing), {"load #2"});
         f.answer(3, queued(1, lease), {"watch"});
         f.reconnected({"check"});
         f.step([&](client_actions& out) { f.client.on_retry(1, f.now, out); }, {});
         f.step(
             [&](client_actions& out) { f.client.on_library_loaded(2, make(outcome::loaded), f.now, out); },
             {});
         f.checked(server_check::passed,
                   {"acquire #1 p:1 n=1 wait", "acquire #2 p:2 n=1 wait", "renew #3 p:3 fence=0"});
     }},
    {"after a reconnect, queued waiters and holders are renewed once the server passes its check",
     [](client_fixture& f) {
         f.held(1, 5);
         f.sent(2, 1);
         f.answer(2, queued(1, lease), {"watch"});
         f.after(lease / 3);
         f.tick({"renew #0 p:1 fence=5", "renew #2 p:2 fence=0"});
         f.reconnected({"check"});
         f.renewed("p:2", granted(8, 1, lease), {}); // queued while the link was down: not taken
         f.message("granted 8 1 p:2", {});
         const auto deadline = f.deadline_of("p:1");
         f.renewed("p:1", granted(5, 1, lease), {});
         BOOST_TEST((f.deadline_of("p:1") == deadline)); // not moved by a server not checked yet
         f.after(lease / 3);
         f.tick({}); // the heartbeat renews nothing on a server not checked
         f.step([&](client_actions& out) { f.client.on_subscribed(f.now, out); }, {"usage"});
         f.checked(server_check::passed, {"renew #0 p:1 fence=5", "renew #2 p:2 fence=0"});
         f.renewed("p:2", granted(8, 1, lease), {"grant #2 p:2 n=1 fence=8"});
     }},
    {"a reconnect to a server that writes without its replicas fails the acquires and loses the permits",
     [](client_fixture& f) {
         f.held(1, 5);
         f.sent(2, 1);
         f.answer(2, queued(1, lease), {"watch"});
         f.sent(3, 1);
         f.reconnected({"check"});
         f.acquire(4, 1, {});
         f.checked(server_check::unguarded,
                   {"fail #2 replica_policy", "release p:2", "fail #3 replica_policy", "release p:3",
                    "fail #4 replica_policy", "lose p:1 replica_policy"});
         BOOST_TEST(f.leases.at("p:1")->lost()); // told at once, not at its lease's end
         BOOST_TEST((f.client.lost("p:1") ==
                     std::optional(boost::system::error_code(redis::error::replica_policy))));
         f.after(lease / 3);
         f.tick({});
         f.acquire(5, 1, {"fail #5 replica_policy"});
     }},
    {"a reconnect to a server that may evict fails the acquires and loses the permits",
     [](client_fixture& f) {
         f.held(1, 5);
         f.sent(2, 1);
         f.reconnected({"check"});
         f.checked(server_check::evicts,
                   {"fail #2 eviction_policy", "release p:2", "lose p:1 eviction_policy"});
     }},
    {"a reconnect with only lost permits checks the server at the next acquire",
     [](client_fixture& f) {
         f.held(1, 5);
         f.reconnected({"check"});
         f.checked(server_check::unguarded, {"lose p:1 replica_policy"});
         f.reconnected({});
         f.acquire(2, 1, {"check"});
     }},

    // ---- replies to an acquire
    {"granted: the lease ends at send time + the time left, minus the margin",
     [](client_fixture& f) {
         f.sent(1, 2);
         const auto sent_at = f.now;
         f.after(40ms);
         f.answer(1, granted(7, 2, lease), {"grant #1 p:1 n=2 fence=7"});
         BOOST_TEST((f.deadline_of("p:1") == sent_at + lease - margin));
         BOOST_TEST(f.client.holding() == 1u);
         BOOST_TEST(f.client.waiting() == 0u);
     }},
    {"a replay after a lost reply keeps its id and dates its lease from the first send and the time left",
     [](client_fixture& f) {
         // The defect this rule fixes: the replay's reply said granted and the client dated a fresh
         // lease from the replay, outliving the server's deadline by the time before the replay.
         f.sent(1, 1);
         const auto first_sent = f.now;
         f.after(1200ms); // 0.4 lease
         f.answer(1, make(outcome::connection_lost), {"acquire #1 p:1 n=1 wait"});
         f.after(10ms);
         f.answer(1, granted(7, 1, 1800ms), {"grant #1 p:1 n=1 fence=7"});
         BOOST_TEST((f.deadline_of("p:1") == first_sent + lease - margin));
     }},
    {"a replay that finds less than half a lease left renews before it grants",
     [](client_fixture& f) {
         // The defect this rule fixes: such a grant could lapse before the next heartbeat renewed
         // it, and its holder was told of a loss a moment after its acquire completed.
         f.sent(1, 1);
         f.after(2400ms); // 0.8 lease
         f.answer(1, make(outcome::connection_lost), {"acquire #1 p:1 n=1 wait"});
         f.after(10ms);
         f.answer(1, granted(7, 1, 590ms), {"renew #1 p:1 fence=0"});
         const auto renewed_at = f.now;
         f.after(5ms);
         f.renewed("p:1", granted(7, 1, lease), {"grant #1 p:1 n=1 fence=7"});
         BOOST_TEST((f.deadline_of("p:1") == renewed_at + lease - margin));
     }},
    {"a replay that finds exactly half a lease left grants at once: only less than half renews first",
     [](client_fixture& f) {
         f.sent(1, 1);
         const auto first_sent = f.now;
         f.after(1490ms);
         f.answer(1, make(outcome::connection_lost), {"acquire #1 p:1 n=1 wait"});
         f.after(10ms);
         f.answer(1, granted(7, 1, lease / 2), {"grant #1 p:1 n=1 fence=7"});
         BOOST_TEST((f.deadline_of("p:1") == first_sent + lease - margin));
     }},
    {"a renewal that finds the waiter's grant lost queues it again under a new id",
     [](client_fixture& f) {
         f.sent(1, 1);
         f.after(2400ms);
         f.answer(1, make(outcome::connection_lost), {"acquire #1 p:1 n=1 wait"});
         f.answer(1, granted(7, 1, 500ms), {"renew #1 p:1 fence=0"});
         f.renewed("p:1", make(outcome::lost), {"acquire #1 p:2 n=1 wait"});
         f.answer(1, granted(9, 1, lease), {"grant #1 p:2 n=1 fence=9"});
     }},
    {"a replay's reply that says more is left than the first send proves extends the lease",
     [](client_fixture& f) {
         f.sent(1, 1);
         f.after(1000ms);
         f.answer(1, make(outcome::connection_lost), {"acquire #1 p:1 n=1 wait"});
         const auto replay_sent = f.now;
         f.answer(1, granted(7, 1, lease), {"grant #1 p:1 n=1 fence=7"}); // the first send never ran
         BOOST_TEST((f.deadline_of("p:1") == replay_sent + lease - margin));
     }},
    {"queued: watched once, renewed by the heartbeat",
     [](client_fixture& f) {
         f.sent(1, 2);
         f.sent(2, 1);
         f.answer(1, queued(1, lease), {"watch"});
         f.answer(2, queued(2, lease), {}); // one watch at a time
         f.step([&](client_actions&) { f.client.on_watch_reply(make(outcome::idle), f.now); }, {});
         f.after(lease / 3);
         f.tick({"renew #1 p:1 fence=0", "renew #2 p:2 fence=0"});
     }},
    {"busy: a try fails with would_block",
     [](client_fixture& f) {
         f.acquire(1, 1, {"check"});
         f.checked(server_check::passed, {"acquire #1 p:1 n=1 wait"});
         f.acquire(2, 1, {"acquire #2 p:2 n=1 try"}, acquire_mode::try_once);
         f.answer(2, make(outcome::busy), {"fail #2 would_block"});
     }},
    {"a declared capacity of 0 fails every acquire at once, until a resize replaces it",
     [](client_fixture& f) {
         semaphore_client none(options_of(0, "z"));
         client_actions out;
         none.start_acquire(1, 1, acquire_mode::wait, f.now, out);
         BOOST_TEST_REQUIRE(out.size() == 1u);
         BOOST_TEST(describe(out[0]) == "fail #1 too_many_permits");
         out.clear();
         none.on_message("resized 2 100 100", f.now, out);
         none.start_acquire(2, 1, acquire_mode::wait, f.now, out);
         BOOST_TEST_REQUIRE(out.size() == 1u);
         BOOST_TEST(describe(out[0]) == "check");
     }},
    {"an error reply fails the acquire with its code; a reply of another kind with server_error",
     [](client_fixture& f) {
         f.sent(1, 1);
         f.sent(2, 1);
         f.answer(1, failed(redis::error::capacity_mismatch), {"fail #1 capacity_mismatch"});
         f.answer(2, make(outcome::released), {"fail #2 server_error"});
     }},
    {"LOADING or BUSY: sent again after a pause",
     [](client_fixture& f) {
         f.sent(1, 1);
         f.answer(1, make(outcome::retry), {"retry #1 20ms"});
         f.step([&](client_actions& out) { f.client.on_retry(1, f.now, out); }, {"acquire #1 p:1 n=1 wait"});
         f.answer(1, queued(1, lease), {"watch"});
         f.step([&](client_actions& out) { f.client.on_retry(1, f.now, out); }, {}); // not retrying now
     }},
    {"NOREPLICAS: refused before it ran, sent again under the same id after a longer pause",
     [](client_fixture& f) {
         f.sent(1, 1);
         f.answer(1, make(outcome::no_replicas), {"retry #1 100ms"});
         f.step([&](client_actions& out) { f.client.on_retry(1, f.now, out); }, {"acquire #1 p:1 n=1 wait"});
         f.answer(1, make(outcome::no_replicas), {"retry #1 100ms"});
         f.step([&](client_actions& out) { f.client.on_retry(1, f.now, out); }, {"acquire #1 p:1 n=1 wait"});
         f.answer(1, granted(7, 1, lease), {"grant #1 p:1 n=1 fence=7"});
     }},
    {"a missing library is loaded again once, then the acquire sent again",
     [](client_fixture& f) {
         f.sent(1, 1);
         f.answer(1, make(outcome::library_missing), {"load #1"});
         f.step(
             [&](client_actions& out) { f.client.on_library_loaded(1, make(outcome::loaded), f.now, out); },
             {"acquire #1 p:1 n=1 wait"});
         f.answer(1, make(outcome::library_missing), {"fail #1 server_error"});
     }},
    {"a library that cannot be loaded fails the acquire with the reason",
     [](client_fixture& f) {
         f.sent(1, 1);
         f.answer(1, make(outcome::library_missing), {"load #1"});
         f.step(
             [&](client_actions& out) {
                 f.client.on_library_loaded(1, failed(redis::error::no_permission), f.now, out);
             },
             {"fail #1 no_permission"});
         f.sent(2, 1);
         f.answer(2, make(outcome::library_missing), {"load #2"});
         f.step(
             [&](client_actions& out) {
                 f.client.on_library_loaded(2, make(outcome::connection_lost), f.now, out);
             },
             {"acquire #2 p:2 n=1 wait"});
     }},
    {"events for an acquire that is elsewhere in its life change nothing",
     [](client_fixture& f) {
         f.sent(1, 1);
         f.answer(1, make(outcome::retry), {"retry #1 20ms"});
         f.answer(1, granted(7, 1, lease), {}); // a duplicate reply: it waits to be sent again
         f.step(
             [&](client_actions& out) { f.client.on_library_loaded(1, make(outcome::loaded), f.now, out); },
             {});
         f.step([&](client_actions& out) { f.client.on_retry(9, f.now, out); }, {});
         f.step(
             [&](client_actions& out) { f.client.on_library_loaded(9, make(outcome::loaded), f.now, out); },
             {});
         f.step(
             [&](client_actions& out) {
                 f.client.on_waiter_renewed(9, "p:9", f.now, queued(1, lease), f.now, out);
             },
             {});
         f.step(
             [&](client_actions& out) { f.client.on_holder_renewed("p:9", f.now, make(outcome::lost), out); },
             {});
     }},
    {"a library load answered by anything but success or a lost link fails the acquire",
     [](client_fixture& f) {
         f.sent(1, 1);
         f.answer(1, make(outcome::library_missing), {"load #1"});
         f.step([&](client_actions& out) { f.client.on_library_loaded(1, make(outcome::retry), f.now, out); },
                {"fail #1 server_error"});
     }},
    {"a reply for an acquire given up, or for an old id, changes nothing",
     [](client_fixture& f) {
         f.sent(1, 1);
         f.step([&](client_actions& out) { f.client.give_up(1, boost::asio::error::operation_aborted, out); },
                {"fail #1 aborted", "release p:1"});
         f.answer(1, granted(7, 1, lease), {}); // the release sent after hands it back
         f.step(
             [&](client_actions& out) {
                 f.client.on_acquire_reply(2, "p:9", f.now, granted(8, 1, lease), f.now, out);
             },
             {});
     }},

    // ---- give-ups
    {"an acquire given up before it was sent releases nothing",
     [](client_fixture& f) {
         f.acquire(1, 1, {"check"});
         f.step([&](client_actions& out) { f.client.give_up(1, asio_sync::error::timed_out, out); },
                {"fail #1 timed_out"});
         f.checked(server_check::passed, {});
         f.step([&](client_actions& out) { f.client.give_up(1, asio_sync::error::timed_out, out); }, {});
     }},
    {"a grant that raced a give-up: whichever came first decides, exactly once",
     [](client_fixture& f) {
         f.sent(1, 1);
         f.message("granted 7 1 p:1", {"grant #1 p:1 n=1 fence=7"});
         f.step([&](client_actions& out) { f.client.give_up(1, boost::asio::error::operation_aborted, out); },
                {});
         f.sent(2, 1);
         f.answer(2, queued(1, lease), {"watch"});
         f.step([&](client_actions& out) { f.client.give_up(2, boost::asio::error::operation_aborted, out); },
                {"fail #2 aborted", "release p:2"});
         f.message("granted 8 1 p:2", {});
     }},

    // ---- grants published
    {"a published grant completes the waiter of its id, with its waiter lease",
     [](client_fixture& f) {
         f.sent(1, 1);
         const auto sent_at = f.now;
         f.answer(1, queued(1, 2000ms), {"watch"}); // the server had queued it before; 2 s left
         f.after(500ms);
         f.message("granted 123456789012345678 1 p:1", {"grant #1 p:1 n=1 fence=123456789012345678"});
         BOOST_TEST((f.deadline_of("p:1") == sent_at + lease - margin));
     }},
    {"a grant published while the acquire's reply is awaited completes it",
     [](client_fixture& f) {
         f.sent(1, 1);
         f.message("granted 7 1 p:1", {"grant #1 p:1 n=1 fence=7"});
         f.answer(1, granted(7, 1, lease), {});
     }},
    {"with durable grants a published grant renews the waiter, whose confirmed renewal grants it",
     [](client_fixture& f) {
         f.client = semaphore_client(options_of(2, "p", false, 1));
         f.sent(1, 1);
         f.answer(1, queued(1, lease), {"watch"});
         f.message("granted 7 1 p:1", {"renew #1 p:1 fence=0"});
         f.renewed("p:1", granted(7, 1, lease), {"grant #1 p:1 n=1 fence=7"});
         f.message("granted 7 1 p:1", {}); // granted already
     }},
    {"with durable grants a grant published while the acquire is in flight renews once it is queued",
     [](client_fixture& f) {
         // The defect this rule fixes: the message was dropped, and the waiter, granted, waited for
         // the next heartbeat (a third of a lease) to learn it.
         f.client = semaphore_client(options_of(2, "p", false, 1));
         f.sent(1, 1);
         f.message("granted 7 1 p:1", {}); // in flight: its own reply will say
         f.answer(1, make(outcome::connection_lost), {"acquire #1 p:1 n=1 wait"});
         f.answer(1, queued(1, lease), {"renew #1 p:1 fence=0"}); // confirmed before the grant
         f.renewed("p:1", granted(7, 1, lease), {"grant #1 p:1 n=1 fence=7"});
     }},
    {"with durable grants a grant published while the acquire is in flight is its own reply's",
     [](client_fixture& f) {
         f.client = semaphore_client(options_of(2, "p", false, 1));
         f.sent(1, 1);
         f.message("granted 7 1 p:1", {});
         f.answer(1, granted(7, 1, lease), {"grant #1 p:1 n=1 fence=7"});
     }},
    {"messages for other ids or malformed are ignored",
     [](client_fixture& f) {
         f.sent(1, 1);
         f.message("granted 7 1 q:1", {});
         f.message("granted x7 1 p:1", {});
         f.message("granted 7 1", {});
         f.message("p:1 7 1", {}); // the form of the library's previous version
         f.message("granted -7 1 p:1", {});
         f.message("granted 7", {});
         f.message("resized 3 100", {});
         f.message("resized 3 100 100 x", {});
         f.message("settled x 100", {});
         f.message("", {});
         BOOST_TEST(f.client.capacity() == 2u);
     }},
    {"a grant published for a waiter that waits to be sent again is left to its reply",
     [](client_fixture& f) {
         f.sent(1, 1);
         f.answer(1, make(outcome::retry), {"retry #1 20ms"});
         f.message("granted 7 1 p:1", {});
         f.step([&](client_actions& out) { f.client.on_retry(1, f.now, out); }, {"acquire #1 p:1 n=1 wait"});
         f.answer(1, granted(7, 1, lease), {"grant #1 p:1 n=1 fence=7"});
     }},
    {"a subscription made active again renews every queued waiter",
     [](client_fixture& f) {
         f.sent(1, 1);
         f.sent(2, 1);
         f.answer(2, queued(1, lease), {"watch"});
         f.step([&](client_actions& out) { f.client.on_subscribed(f.now, out); },
                {"renew #2 p:2 fence=0", "usage"});
     }},

    // ---- renewals of a queued waiter
    {"a waiter's renewal: queued extends its lease, granted completes it",
     [](client_fixture& f) {
         f.sent(1, 1);
         f.answer(1, queued(1, lease), {"watch"});
         f.after(lease / 3);
         f.tick({"renew #1 p:1 fence=0"});
         f.renewed("p:1", queued(1, lease), {});
         f.after(lease / 3);
         f.tick({"renew #1 p:1 fence=0"});
         f.after(5ms);
         f.renewed("p:1", granted(9, 1, lease - 5ms), {"grant #1 p:1 n=1 fence=9"});
         BOOST_TEST((f.deadline_of("p:1") == f.now - 5ms + lease - 5ms - margin));
     }},
    {"a waiter's renewal answered after its grant changes nothing",
     [](client_fixture& f) {
         f.sent(1, 1);
         f.answer(1, queued(1, lease), {"watch"});
         f.after(lease / 3);
         f.tick({"renew #1 p:1 fence=0"});
         f.message("granted 7 1 p:1", {"grant #1 p:1 n=1 fence=7"});
         f.renewed("p:1", granted(7, 1, lease), {});
         f.step([&](client_actions&) { f.client.on_watch_reply(wake(250ms), f.now); }, {});
         f.after(251ms);
         f.tick({}); // nobody queued to wake
     }},
    {"a waiter whose lease lapsed is queued again under a new id",
     [](client_fixture& f) {
         f.sent(1, 1);
         f.answer(1, queued(1, lease), {"watch"});
         f.after(lease / 3);
         f.tick({"renew #1 p:1 fence=0"});
         f.renewed("p:1", make(outcome::lost), {"acquire #1 p:2 n=1 wait"});
         f.step(
             [&](client_actions& out) { // not queued under its new id yet
                 f.client.on_waiter_renewed(1, "p:2", f.now, queued(1, lease), f.now, out);
             },
             {});
         f.message("granted 7 1 p:1", {});  // the old id is not ours any more
         f.answer(1, queued(1, lease), {}); // watched already
         f.after(lease / 3);
         f.tick({"renew #1 p:2 fence=0"});
         f.renewed("p:2", make(outcome::state_lost), {"acquire #1 p:3 n=1 wait"});
     }},
    {"a waiter's renewal that failed waits for the next heartbeat; a missing library is loaded",
     [](client_fixture& f) {
         f.sent(1, 1);
         f.answer(1, queued(1, lease), {"watch"});
         f.after(lease / 3);
         f.tick({"renew #1 p:1 fence=0"});
         f.renewed("p:1", make(outcome::connection_lost), {});
         f.renewed("p:1", make(outcome::library_missing), {"load #0"});
         f.renewed("p:1", failed(redis::error::server_error), {});
     }},

    // ---- the watch of the queue
    {"the watch renews the queued waiters when the queue may be served",
     [](client_fixture& f) {
         f.sent(1, 1);
         f.answer(1, queued(1, lease), {"watch"});
         f.step([&](client_actions&) { f.client.on_watch_reply(wake(250ms), f.now); }, {});
         BOOST_TEST((f.client.next_wakeup() == f.now + 251ms));
         f.sent(2, 1);
         f.answer(2, queued(2, lease), {}); // a wake-up is set already
         f.after(251ms);
         f.tick({"renew #1 p:1 fence=0", "renew #2 p:2 fence=0"});
         f.renewed("p:1", queued(1, lease), {"watch"}); // watched again
     }},

    // ---- holders
    {"a holder is renewed each third of a lease and its lease extended by each granted renewal",
     [](client_fixture& f) {
         f.held(1, 7);
         f.after(lease / 3);
         f.tick({"renew #0 p:1 fence=7"});
         const auto renewed_at = f.now;
         f.after(3ms);
         f.renewed("p:1", granted(7, 1, lease), {});
         BOOST_TEST((f.deadline_of("p:1") == renewed_at + lease - margin));
         f.renewed("p:1", make(outcome::connection_lost), {});
         f.renewed("p:1", failed(redis::error::server_error), {});
         f.renewed("p:1", make(outcome::library_missing), {"load #0"});
         BOOST_TEST((f.deadline_of("p:1") == renewed_at + lease - margin));
     }},
    {"a holder that cannot renew is lost at its deadline, before Redis can grant its permits again",
     [](client_fixture& f) {
         f.held(1, 7);
         BOOST_TEST(!f.client.lost("p:1"));
         const auto deadline = f.deadline_of("p:1");
         BOOST_TEST((f.client.next_wakeup() == f.start + lease / 3));
         f.after(lease / 3);
         f.tick({"renew #0 p:1 fence=7"});
         f.after(lease / 3);
         f.tick({"renew #0 p:1 fence=7"}); // no reply ever came
         BOOST_TEST((f.client.next_wakeup() == deadline));
         f.now = deadline - 1ms;
         f.tick({});
         f.now = deadline;
         f.tick({"lose p:1 lease_lost"});
         BOOST_TEST(f.leases.at("p:1")->lost());
         BOOST_TEST((f.client.lost("p:1") == error_code(redis::error::lease_lost)));
         f.renewed("p:1", granted(7, 1, lease), {});              // too late: lost stays lost
         BOOST_TEST((f.client.next_wakeup() == f.start + lease)); // the heartbeat alone
         f.after(lease);
         f.tick({}); // a lost holder is not renewed
     }},
    {"a renewal refused with NOREPLICAS is not a renewal: the lease deadline decides",
     [](client_fixture& f) {
         // The primary is cut off from its replicas (and perhaps replaced): it refuses every
         // renewal, and the permit is declared lost one lease after the last renewal it accepted.
         f.held(1, 7);
         f.after(lease / 3);
         f.tick({"renew #0 p:1 fence=7"});
         const auto renewed_at = f.now;
         f.renewed("p:1", granted(7, 1, lease), {});
         f.after(lease / 3);
         f.tick({"renew #0 p:1 fence=7"});
         f.renewed("p:1", make(outcome::no_replicas), {});
         BOOST_TEST((f.deadline_of("p:1") == renewed_at + lease - margin));
         f.after(lease / 3);
         f.tick({"renew #0 p:1 fence=7"});
         f.renewed("p:1", make(outcome::no_replicas), {});
         f.now = renewed_at + lease - margin;
         f.tick({"lose p:1 lease_lost"});
     }},
    {"Redis says the lease is lost, or the state with it",
     [](client_fixture& f) {
         f.held(1, 7);
         f.held(2, 8);
         f.after(lease / 3);
         f.tick({"renew #0 p:1 fence=7", "renew #0 p:2 fence=8"});
         f.renewed("p:1", make(outcome::lost), {"lose p:1 lease_lost"});
         f.renewed("p:2", make(outcome::state_lost), {"lose p:2 state_lost"});
         BOOST_TEST((f.client.lost("p:2") == error_code(redis::error::state_lost)));
     }},

    // ---- close and abort
    {"close fails the pending acquires and every later one; holders stay",
     [](client_fixture& f) {
         f.held(1, 7);
         f.sent(2, 1);
         f.acquire(3, 1, {"acquire #3 p:3 n=1 wait"});
         f.step([&](client_actions& out) { f.client.close(out); },
                {"fail #2 closed", "release p:2", "fail #3 closed", "release p:3"});
         f.acquire(4, 1, {"fail #4 closed"});
         BOOST_TEST(f.client.holding() == 1u);
     }},
    {"abort without reaching Redis releases nothing",
     [](client_fixture& f) {
         f.sent(1, 1);
         f.step([&](client_actions& out) { f.client.abort_all(asio_sync::error::closed, false, out); },
                {"fail #1 closed"});
     }},

    // ---- the clock
    {"nothing to wake for once nothing is held or waited for",
     [](client_fixture& f) {
         BOOST_TEST(!f.client.next_wakeup());
         f.held(1, 7);
         release_call call;
         BOOST_TEST((f.client.release("p:1", call).what == release_step::type::send));
         f.after(lease / 3);
         f.tick({});
         BOOST_TEST(!f.client.next_wakeup());
         f.after(lease);
         f.tick({});
     }},

    // ---- the capacity learnt
    {"a resize published while subscribed is taken; a smaller one renews the queued waiters",
     [](client_fixture& f) {
         f.sent(1, 2);
         f.answer(1, queued(1, lease), {"watch"});
         f.message("resized 3 100 100", {});
         BOOST_TEST(f.client.capacity() == 3u);
         f.message("resized 1 200 50", {"renew #1 p:1 fence=0"}); // Redis took it out: it hears lost
         BOOST_TEST(f.client.capacity() == 1u);
         f.renewed("p:1", make(outcome::lost), {"acquire #1 p:2 n=2 wait capacity=1"});
         f.answer(1, failed(asio_sync::error::too_many_permits), {"fail #1 too_many_permits"});
         f.message("resized 3 150 150", {}); // older than the one in force
         f.message("settled 1 200", {});
         BOOST_TEST(f.client.capacity() == 1u);
     }},
    {"the first read of the usage does not take a capacity stored before it; one stored since, it does",
     [](client_fixture& f) {
         f.step([&](client_actions& out) { f.client.on_subscribed(f.now, out); }, {"usage"});
         f.read(usage(3, 0, 50, 50, 60), {}); // resized to 3 before this object read it
         BOOST_TEST(f.client.capacity() == 2u);
         f.sent(1, 1);
         f.answer(1, mismatch(3, 50), {"fail #1 capacity_mismatch"});
         f.read(usage(4, 0, 70, 70, 80), {}); // resized again since: the link was down
         BOOST_TEST(f.client.capacity() == 4u);
         f.acquire(2, 1, {"acquire #2 p:2 n=1 wait capacity=4"});
     }},
    {"an acquire refused for a resize made since the first read, whose message was missed, is sent again",
     [](client_fixture& f) {
         f.step([&](client_actions& out) { f.client.on_subscribed(f.now, out); }, {"usage"});
         f.read(usage(2, 0, 0, 0, 60), {});
         f.sent(1, 1);
         f.answer(1, mismatch(5, 70), {"acquire #1 p:1 n=1 wait capacity=5"}); // the same id
         f.answer(1, granted(7, 1, lease), {"grant #1 p:1 n=1 fence=7"});
         BOOST_TEST(f.client.capacity() == 5u);
         f.acquire(2, 1, {"acquire #2 p:2 n=1 wait capacity=5"});
         // Sent under stamp 70, refused with 65: Redis lost the resize of 70 (a failover, a restore).
         // 65 was stored while this object existed (it read the clock 60): in force again.
         f.answer(2, mismatch(6, 65), {"acquire #2 p:2 n=1 wait capacity=6"});
         BOOST_TEST(f.client.capacity() == 6u);
     }},
    {"a resize lost with Redis gives back the declared capacity, but not one stored before the object",
     [](client_fixture& f) {
         f.sent(1, 1);
         f.answer(1, granted(7, 1, lease), {"grant #1 p:1 n=1 fence=7"}); // it existed at 7
         f.message("resized 3 100 100", {});
         f.acquire(2, 1, {"acquire #2 p:2 n=1 wait capacity=3"});
         f.answer(2, mismatch(2, 0), {"acquire #2 p:2 n=1 wait"}); // never resized, again
         BOOST_TEST(f.client.capacity() == 2u);
         f.message("resized 3 200 200", {});
         f.acquire(3, 1, {"acquire #3 p:3 n=1 wait capacity=3"});
         f.answer(3, mismatch(5, 5), {"fail #3 capacity_mismatch"}); // stored before it existed
         BOOST_TEST(f.client.capacity() == 3u);
     }},
    {"after Redis went back, the next resize is sent from the stamp in force, not the lost one",
     [](client_fixture& f) {
         f.resize(1, 5, {"resize #1 p:1 capacity=5 base=0"});
         f.resize_answer(1, resized(5, 100, 100), {"resized #1 ok"});
         f.acquire(2, 1, {"check"});
         f.checked(server_check::passed, {"acquire #2 p:2 n=1 wait capacity=5"});
         f.answer(2, mismatch(2, 0), {"acquire #2 p:2 n=1 wait"}); // the resize of 100 was lost
         f.resize(3, 4, {"resize #3 p:3 capacity=4 base=0"});
         f.resize_answer(3, resized(4, 120, 120), {"resized #3 ok"});
         f.read(usage(2, 0, 50, 50, 150), {}); // read after 120 was stored, finding 50: lost again
         BOOST_TEST(f.client.capacity() == 2u);
         f.resize(4, 3, {"resize #4 p:4 capacity=3 base=50"});
     }},
    {"durable grants with WAIT refused (an ACL without it): the acquire fails and gives back what it stored",
     [](client_fixture& f) {
         f.sent(1, 1);
         semaphore_reply refused = failed(redis::error::no_permission);
         refused.stored = true;
         f.answer(1, refused, {"fail #1 no_permission", "release p:1"});
         f.sent(2, 1);
         f.answer(2, failed(redis::error::no_permission), {"fail #2 no_permission"}); // stored nothing
     }},
    {"a refusal older than a resize taken after the acquire was sent is old news, not a loss",
     [](client_fixture& f) {
         f.sent(1, 1);
         f.message("resized 3 100 100", {}); // overtook the reply of the acquire sent before it
         f.answer(1, mismatch(4, 50), {"acquire #1 p:1 n=1 wait capacity=3"});
         BOOST_TEST(f.client.capacity() == 3u);
     }},
    {"an acquire sent with a capacity this object has replaced since is sent again when refused",
     [](client_fixture& f) {
         f.sent(1, 1);
         f.message("resized 3 100 100", {});
         f.answer(1, mismatch(3, 100), {"acquire #1 p:1 n=1 wait capacity=3"});
         f.answer(1, mismatch(3, 100), {"fail #1 capacity_mismatch"}); // refused with it: no loop
     }},
    {"a grant tells when the object existed: a resize stored since is taken from a refusal",
     [](client_fixture& f) {
         f.held(1, 40);
         f.sent(2, 1);
         f.answer(2, mismatch(5, 30), {"fail #2 capacity_mismatch"}); // stored before it existed
         f.sent(3, 1);
         f.answer(3, mismatch(5, 70), {"acquire #3 p:3 n=1 wait capacity=5"});
     }},
    {"without a first read, a refused acquire fails: the process may have been started after the resize",
     [](client_fixture& f) {
         f.sent(1, 1);
         f.answer(1, mismatch(5, 70), {"fail #1 capacity_mismatch"});
         f.step(
             [&](client_actions& out) {
                 f.client.on_usage_reply(make(outcome::connection_lost), f.now, out);
             },
             {"usage"}); // the first read is sent again until answered
         f.read(usage(5, 0, 70, 70, 80), {});
         f.step(
             [&](client_actions& out) {
                 f.client.on_usage_reply(make(outcome::connection_lost), f.now, out);
             },
             {});
         BOOST_TEST(f.client.capacity() == 2u);
     }},

    // ---- resizes
    {"a resize is sent from the latest stamp seen, and a larger capacity completes when stored",
     [](client_fixture& f) {
         f.resize(1, 5, {"resize #1 p:1 capacity=5 base=0"});
         f.resize_answer(1, resized(5, 100, 100), {"resized #1 ok"});
         BOOST_TEST(f.client.capacity() == 5u);
         f.message("resized 6 200 200", {});
         f.resize(2, 4, {"resize #2 p:2 capacity=4 base=200"});
         f.resize_answer(2, resized(4, 300, 300), {"resized #2 ok"});
         BOOST_TEST(f.client.capacity() == 4u);
         BOOST_TEST(f.client.resizing() == 0u);
     }},
    {"a shrink waits for the holders: the settled message completes it",
     [](client_fixture& f) {
         f.resize(1, 1, {"resize #1 p:1 capacity=1 base=0"});
         f.resize_answer(1, resized(1, 100, 0), {}); // pending
         BOOST_TEST(f.client.capacity() == 1u);
         BOOST_TEST((f.client.next_wakeup() == f.now + lease / 3));
         f.after(lease / 3);
         f.tick({"usage"}); // the heartbeat reads the usage while it waits
         f.read(usage(1, 2, 100, 0, 120), {});
         f.message("settled 1 100", {"resized #1 ok"});
         f.after(lease / 3);
         f.tick({});
         BOOST_TEST(!f.client.next_wakeup());
     }},
    {"a shrink that Redis lost before the holders came down completes with state_lost",
     [](client_fixture& f) {
         f.resize(1, 1, {"resize #1 p:1 capacity=1 base=0"});
         f.resize_answer(1, resized(1, 100, 0), {}); // pending
         f.after(lease / 3);
         f.tick({"usage"});
         f.read(usage(2, 0, 0, 0, 90), {}); // made before the resize was stored: says nothing of it
         BOOST_TEST(f.client.capacity() == 1u);
         f.read(usage(2, 0, 0, 0, 150), {"resized #1 state_lost"}); // after it: a replica without it
         BOOST_TEST(f.client.resizing() == 0u);
         BOOST_TEST(f.client.capacity() == 2u); // the declared capacity is in force again
     }},
    {"a shrink completes from a read of the usage once the permits held fit, the message missed",
     [](client_fixture& f) {
         f.resize(1, 1, {"resize #1 p:1 capacity=1 base=0"});
         f.resize_answer(1, resized(1, 100, 0), {});
         f.after(lease / 3);
         f.tick({"usage"});
         f.read(usage(1, 1, 100, 0, 120), {"resized #1 ok"}); // a holder's lease lapsed: not reaped yet
     }},
    {"a shrink replaced by a larger capacity completes at once; by a smaller one, with that one",
     [](client_fixture& f) {
         f.resize(1, 2, {"resize #1 p:1 capacity=2 base=0"});
         f.resize_answer(1, resized(2, 100, 0), {});
         f.message("resized 5 200 200", {"resized #1 ok"});
         f.resize(2, 2, {"resize #2 p:2 capacity=2 base=200"});
         f.resize_answer(2, resized(2, 300, 200), {});
         f.message("resized 1 400 200", {}); // still more held than 1
         f.read(usage(1, 2, 400, 200, 420), {});
         f.message("settled 1 400", {"resized #2 ok"});
     }},
    {"at once, a shrink completes when stored",
     [](client_fixture& f) {
         f.resize(1, 1, {"resize #1 p:1 capacity=1 base=0"}, false);
         f.resize_answer(1, resized(1, 100, 0), {"resized #1 ok"});
     }},
    {"a resize refused for its base is sent again from the stamp in force, unless it may have run",
     [](client_fixture& f) {
         f.resize(1, 4, {"resize #1 p:1 capacity=4 base=0"});
         f.resize_answer(1, conflict(3, 100), {"resize #1 p:1 capacity=4 base=100"});
         f.resize_answer(1, make(outcome::connection_lost), {"resize #1 p:1 capacity=4 base=100"});
         f.resize_answer(1, resized(4, 150, 150), {"resized #1 ok"}); // it had run: the replay says so
         f.resize(2, 5, {"resize #2 p:2 capacity=5 base=150"});
         f.resize_answer(2, make(outcome::connection_lost), {"resize #2 p:2 capacity=5 base=150"});
         f.resize_answer(2, conflict(6, 200), {"resized #2 connection_lost"}); // it ran before, or not
         BOOST_TEST(f.client.capacity() == 6u); // stored since this object existed: taken
     }},
    {"a resize answered LOADING is sent again after a pause; a missing library is loaded once",
     [](client_fixture& f) {
         f.resize(1, 4, {"resize #1 p:1 capacity=4 base=0"});
         f.resize_answer(1, make(outcome::retry), {"retry #1 20ms"});
         f.step([&](client_actions& out) { f.client.on_retry(1, f.now, out); },
                {"resize #1 p:1 capacity=4 base=0"});
         f.resize_answer(1, make(outcome::library_missing), {"load #1"});
         f.step(
             [&](client_actions& out) { f.client.on_library_loaded(1, make(outcome::loaded), f.now, out); },
             {"resize #1 p:1 capacity=4 base=0"});
         f.resize_answer(1, make(outcome::library_missing), {"resized #1 server_error"});
         f.resize(2, 4, {"resize #2 p:2 capacity=4 base=0"});
         f.resize_answer(2, make(outcome::library_missing), {"load #2"});
         f.step(
             [&](client_actions& out) {
                 f.client.on_library_loaded(2, failed(redis::error::no_permission), f.now, out);
             },
             {"resized #2 no_permission"});
         f.resize(3, 4, {"resize #3 p:3 capacity=4 base=0"});
         f.resize_answer(3, failed(redis::error::read_only), {"resized #3 read_only"});
         f.resize(4, 4, {"resize #4 p:4 capacity=4 base=0"});
         f.resize_answer(4, make(outcome::queued), {"resized #4 server_error"});
     }},
    {"a capacity of 0 or above the limit fails at once; give-up, abort and close complete resizes",
     [](client_fixture& f) {
         f.resize(1, 0, {"resized #1 invalid_argument"});
         f.resize(2, static_cast<std::size_t>(semaphore_library::max_capacity + 1),
                  {"resized #2 invalid_argument"});
         f.resize(3, 4, {"resize #3 p:1 capacity=4 base=0"});
         f.step([&](client_actions& out) { f.client.give_up(3, boost::asio::error::operation_aborted, out); },
                {"resized #3 aborted"});
         f.resize_answer(3, resized(4, 100, 100), {});        // decided already
         f.resize(4, 1, {"resize #4 p:2 capacity=1 base=0"}); // the answer given up taught nothing
         f.resize_answer(4, resized(1, 200, 100), {});
         f.step([&](client_actions& out) { f.client.abort_all(asio_sync::error::closed, false, out); },
                {"resized #4 closed"});
         f.resize(5, 1, {"resize #5 p:3 capacity=1 base=200"});
         f.step([&](client_actions& out) { f.client.close(out); }, {"resized #5 closed"});
         f.resize(6, 1, {"resized #6 closed"});
     }},
};

} // namespace

BOOST_AUTO_TEST_CASE(every_scenario_produces_exactly_its_actions)
{
    for (const scenario& s : scenarios)
    {
        BOOST_TEST_CONTEXT(s.name)
        {
            client_fixture f;
            s.steps(f);
        }
    }
}

// With adopt_capacity, the capacity in force is taken whatever it is: from the first read of the
// usage, and from a refused acquire (even a capacity declared by another process).
BOOST_AUTO_TEST_CASE(an_object_that_adopts_takes_the_capacity_in_force)
{
    client_fixture f(true);
    f.step([&](client_actions& out) { f.client.on_subscribed(f.now, out); }, {"usage"});
    f.read(usage(3, 0, 50, 50, 60), {});
    BOOST_TEST(f.client.capacity() == 3u);
    f.acquire(1, 1, {"check"});
    f.checked(server_check::passed, {"acquire #1 p:1 n=1 wait capacity=3"});
    f.answer(1, mismatch(7, 0), {"acquire #1 p:1 n=1 wait capacity=7"}); // declared anew since
    f.answer(1, granted(9, 1, lease), {"grant #1 p:1 n=1 fence=9"});
    BOOST_TEST(f.client.capacity() == 7u);
}

// ---- releases, decided without state but the holder's

BOOST_AUTO_TEST_CASE(a_release_sends_for_a_live_holder_and_reports_a_lost_one_at_once)
{
    client_fixture f;
    f.held(1, 7);
    f.held(2, 8);
    release_call call;
    release_step step = f.client.release("p:1", call);
    BOOST_TEST((step.what == release_step::type::send));
    BOOST_TEST(call.id == "p:1");
    BOOST_TEST(call.fence == 7u);
    BOOST_TEST(!call.replayed);

    f.after(lease / 3);
    f.tick({"renew #0 p:2 fence=8"});
    f.renewed("p:2", make(outcome::lost), {"lose p:2 lease_lost"});
    release_call lost_call;
    step = f.client.release("p:2", lost_call);
    BOOST_TEST((step.what == release_step::type::done));
    BOOST_TEST(step.error == error_code(redis::error::lease_lost));
    BOOST_TEST(f.client.holding() == 0u);

    // Released already (or never held): nothing to do.
    step = f.client.release("p:2", lost_call);
    BOOST_TEST((step.what == release_step::type::done));
    BOOST_TEST(!step.error);
    BOOST_TEST((f.client.lost("p:2") == error_code(boost::asio::error::operation_aborted)));
}

BOOST_AUTO_TEST_CASE(a_release_reply_decides_each_outcome)
{
    struct row
    {
        const char* name;
        semaphore_reply reply;
        bool replayed;
        release_step::type expected;
        error_code error;
    };
    const row rows[] = {
        {"released", make(outcome::released), false, release_step::type::done, {}},
        {"a waiter cancelled", make(outcome::cancelled), false, release_step::type::done, {}},
        {"its lease had lapsed", make(outcome::lost), false, release_step::type::done,
         redis::error::lease_lost},
        {"its state was lost", make(outcome::state_lost), false, release_step::type::done,
         redis::error::state_lost},
        // The defect this fixes: a release whose reply was lost, sent again, found its id gone and
        // reported lease_lost although the first one had given the permit back.
        {"a replay finds it gone", make(outcome::lost), true, release_step::type::done, {}},
        {"a replay finds its state gone", make(outcome::state_lost), true, release_step::type::done, {}},
        {"an error", failed(redis::error::read_only), false, release_step::type::done,
         redis::error::read_only},
        {"refused with NOREPLICAS: its lease lapses", no_replicas(), false, release_step::type::done,
         redis::error::no_replicas},
        {"another kind of reply", make(outcome::queued), false, release_step::type::done,
         redis::error::server_error},
        {"the reply was lost", make(outcome::connection_lost), false, release_step::type::send, {}},
        {"the library is missing",
         make(outcome::library_missing),
         false,
         release_step::type::reload_send,
         {}},
    };
    for (const row& r : rows)
    {
        BOOST_TEST_CONTEXT(r.name)
        {
            release_call call{"p:1", 7, r.replayed, false};
            const release_step step = semaphore_client::on_release_reply(call, r.reply);
            BOOST_TEST((step.what == r.expected));
            BOOST_TEST(step.error == r.error);
            if (r.reply.what == outcome::connection_lost)
                BOOST_TEST(call.replayed);
        }
    }
    release_call reloaded{"p:1", 7, false, true};
    const release_step again = semaphore_client::on_release_reply(reloaded, make(outcome::library_missing));
    BOOST_TEST((again.what == release_step::type::done));
    BOOST_TEST(again.error == error_code(redis::error::server_error));
}

BOOST_AUTO_TEST_CASE(the_permits_lease_view_is_shared_and_moves_forward)
{
    lease_view view(clock_type::time_point(10s));
    BOOST_TEST(!view.lost());
    BOOST_TEST((view.deadline() == clock_type::time_point(10s)));
    view.extend(clock_type::time_point(12s));
    BOOST_TEST((view.deadline() == clock_type::time_point(12s)));
    view.lose();
    BOOST_TEST(view.lost());
}

BOOST_AUTO_TEST_SUITE_END()
