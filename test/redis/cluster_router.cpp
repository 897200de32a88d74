// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#define BOOST_TEST_MODULE redis_cluster_router

// Where the commands of a connection go, without a server: the node of a slot, a keyless command
// or an unknown slot on a node whose link is up, the order of a slot's commands kept across
// nodes, standalone servers never used, MOVED / ASK / TRYAGAIN / CLUSTERDOWN, the map of CLUSTER
// SLOTS (malformed ranges skipped), when the map is asked again, and which queued commands move
// after a new map. Each decision is a row: the links' states and queues, the input, the action.

#include <asio_sync/redis/detail/cluster_router.hpp>

#include "support/redis_replies.hpp"

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cstddef>
#include <set>
#include <string>
#include <utility>
#include <vector>

BOOST_AUTO_TEST_SUITE(redis_cluster_router)

namespace {

namespace redis = asio_sync::redis;
using asio_sync::test::array_reply;
using asio_sync::test::integer_reply;
using asio_sync::test::text_reply;
using redis::detail::cluster_router;
using redis::detail::redirect;
using state = redis::detail::link_fsm::state;
using kind = cluster_router::route_action::kind;
using map_kind = cluster_router::map_action::kind;
using clock_type = redis::detail::slot_map_refresh::clock;
constexpr std::size_t none = cluster_router::none;

// The links and the queues, as a row states them.
struct view
{
    std::vector<state> links = {};                         // absent: idle
    std::set<std::pair<std::size_t, int>> busy_slots = {}; // (node, slot)
    std::set<int> delayed_slots = {};

    state link(std::size_t i) const { return i < links.size() ? links[i] : state::idle; }
    bool busy(std::size_t i, int slot) const { return busy_slots.count({i, slot}) != 0; }
    bool delayed(int slot) const { return delayed_slots.count(slot) != 0; }
};

redis::connection_options cluster_options(std::size_t seeds = 2)
{
    redis::connection_options o;
    for (std::size_t i = 0; i < seeds; ++i)
        o.cluster_nodes.push_back({"10.0.0." + std::to_string(i + 1), 7000});
    o.reconnect_delay_min = std::chrono::milliseconds(100);
    return o;
}

redis::reply string(std::string text)
{
    return text_reply(redis::reply_kind::string, std::move(text));
}

redis::reply range(std::int64_t first, std::int64_t last, std::string host, std::int64_t port)
{
    return array_reply({integer_reply(first), integer_reply(last),
                        array_reply({string(std::move(host)), integer_reply(port)})});
}

// The map of the rows: slots 0-8191 on the first seed, 8192-16383 on the second.
redis::reply halves()
{
    return array_reply({range(0, 8191, "10.0.0.1", 7000), range(8192, 16383, "10.0.0.2", 7000)});
}

redirect redirection(redirect::kind what, int slot = -1, std::string host = {}, std::uint16_t port = 0)
{
    redirect r;
    r.what = what;
    r.slot = slot;
    r.host = std::move(host);
    r.port = port;
    return r;
}

} // namespace

BOOST_AUTO_TEST_CASE(a_command_goes_to_the_node_of_its_slot_in_order)
{
    struct row
    {
        const char* name;
        bool cluster;
        bool mapped; // the map `halves()` was learnt
        std::vector<std::size_t> standalone;
        view links;
        int slot;
        std::size_t to;
        kind what;
        std::size_t node;
    };
    const row rows[] = {
        {"one server: every command to it", false, false, {}, {}, 9000, none, kind::send, 0},
        {"the owner of the slot", true, true, {}, {}, 100, none, kind::send, 0},
        {"the owner of another slot", true, true, {}, {}, 9000, none, kind::send, 1},
        {"keyless: a node whose link is up",
         true,
         true,
         {},
         {{state::waiting, state::ready}},
         -1,
         none,
         kind::send,
         1},
        {"unknown slot: a node that is trying",
         true,
         false,
         {},
         {{state::idle, state::connecting}},
         9000,
         none,
         kind::send,
         1},
        {"unknown slot, nothing started: the first", true, false, {}, {}, 9000, none, kind::send, 0},
        {"a standalone owner: another node",
         true,
         true,
         {1},
         {{state::ready, state::ready}},
         9000,
         none,
         kind::send,
         0},
        {"redirected to a standalone server: fails", true, true, {1}, {}, 100, 1, kind::fail, 0},
        {"only standalone servers: fails", true, true, {0, 1}, {}, 100, none, kind::fail, 0},
        {"its slot awaits a reply on another node: waits",
         true,
         true,
         {},
         {{}, {{1, 100}}, {}},
         100,
         none,
         kind::delay,
         0},
        {"its slot queued on its own node: goes behind",
         true,
         true,
         {},
         {{}, {{0, 100}}, {}},
         100,
         none,
         kind::send,
         0},
        {"another slot busy elsewhere: goes", true, true, {}, {{}, {{1, 101}}, {}}, 100, none, kind::send, 0},
        {"redirected: goes where it is sent", true, true, {}, {{}, {{0, 100}}, {}}, 100, 1, kind::send, 1},
        {"its slot waits to be sent again: waits", true, true, {}, {{}, {}, {100}}, 100, 1, kind::delay, 0},
        {"keyless: never waits", true, true, {}, {{}, {{1, -1}}, {-1}}, -1, none, kind::send, 0},
    };
    for (const row& r : rows)
    {
        BOOST_TEST_CONTEXT(r.name)
        {
            redis::connection_options options = r.cluster ? cluster_options() : redis::connection_options();
            cluster_router router(options);
            if (r.mapped)
                BOOST_TEST((router.on_slots(0, halves()) == cluster_router::map_answer::learnt));
            for (const std::size_t n : r.standalone)
                router.drop_standalone(n);
            const cluster_router::route_action a = router.route(r.slot, r.to, r.links);
            BOOST_TEST((a.what == r.what));
            if (r.what == kind::send)
                BOOST_TEST(a.node == r.node);
        }
    }
}

BOOST_AUTO_TEST_CASE(a_redirection_names_the_next_step)
{
    struct row
    {
        const char* name;
        redirect redirection;
        bool delay;
        std::string host;
        bool asking;
        bool refresh;
        std::size_t owner_of_9000; // after it
    };
    const row rows[] = {
        {"MOVED: the new owner, for good", redirection(redirect::kind::moved, 9000, "10.0.0.3", 7000), false,
         "10.0.0.3", false, true, 2},
        {"MOVED to a known node", redirection(redirect::kind::moved, 9000, "10.0.0.1", 7000), false,
         "10.0.0.1", false, true, 0},
        {"MOVED without a host: the host that answered", redirection(redirect::kind::moved, 9000, "", 7001),
         false, "10.0.0.2", false, true, 2},
        {"ASK: this command only, after ASKING", redirection(redirect::kind::ask, 9000, "10.0.0.3", 7000),
         false, "10.0.0.3", true, false, 1},
        {"TRYAGAIN or CLUSTERDOWN: later", redirection(redirect::kind::retry), true, "", false, false, 1},
    };
    for (const row& r : rows)
    {
        BOOST_TEST_CONTEXT(r.name)
        {
            cluster_router router(cluster_options());
            router.on_slots(0, halves());
            const cluster_router::redirect_action a = router.on_redirect(1, r.redirection);
            BOOST_TEST(a.delay == r.delay);
            if (!r.delay)
            {
                BOOST_TEST(router.host(a.node) == r.host);
                BOOST_TEST(a.asking == r.asking);
            }
            BOOST_TEST(a.refresh == r.refresh);
            BOOST_TEST(router.owner(9000) == r.owner_of_9000);
        }
    }
}

BOOST_AUTO_TEST_CASE(cluster_slots_answers_the_map)
{
    struct row
    {
        const char* name;
        redis::reply answer;
        cluster_router::map_answer expected;
        std::vector<std::pair<int, std::size_t>> owners; // slot, node
        std::size_t nodes;
        bool may_write;
    };
    const row rows[] = {
        {"two halves",
         halves(),
         cluster_router::map_answer::learnt,
         {{0, 0}, {8191, 0}, {8192, 1}, {16383, 1}},
         2,
         true},
        {"a new node, and a slot nobody serves",
         array_reply({range(0, 99, "10.0.0.9", 7000), range(200, 16383, "10.0.0.2", 7000)}),
         cluster_router::map_answer::learnt,
         {{0, 2}, {99, 2}, {100, none}, {199, none}, {200, 1}},
         3,
         true},
        {"an empty or unknown host: that of the node asked",
         array_reply({range(0, 10, "", 7000), range(11, 20, "?", 7000)}),
         cluster_router::map_answer::learnt,
         {{0, 1}, {20, 1}, {21, none}},
         2,
         true},
        {"malformed ranges skipped",
         array_reply({range(-1, 10, "10.0.0.1", 7000), range(10, 16384, "10.0.0.1", 7000),
                      range(20, 10, "10.0.0.1", 7000), range(0, 10, "10.0.0.1", 0),
                      range(0, 10, "10.0.0.1", 65536), integer_reply(1),
                      array_reply({integer_reply(0), integer_reply(10)}), range(30, 40, "10.0.0.1", 7000)}),
         cluster_router::map_answer::learnt,
         {{0, none}, {10, none}, {30, 0}, {40, 0}},
         2,
         true},
        {"an error: no map, the redirections lead",
         text_reply(redis::reply_kind::error, "NOPERM no CLUSTER"),
         cluster_router::map_answer::no_map,
         {{0, none}},
         2,
         true},
        {"a standalone server",
         text_reply(redis::reply_kind::error, "ERR This instance has cluster support disabled"),
         cluster_router::map_answer::standalone,
         {{0, none}},
         2,
         false},
    };
    for (const row& r : rows)
    {
        BOOST_TEST_CONTEXT(r.name)
        {
            cluster_router router(cluster_options());
            BOOST_TEST(!router.may_write());
            BOOST_TEST((router.on_slots(1, r.answer) == r.expected));
            for (const auto& [slot, node] : r.owners)
                BOOST_TEST_CONTEXT("slot " << slot)
                {
                    BOOST_TEST(router.owner(slot) == node);
                }
            BOOST_TEST(router.node_count() == r.nodes);
            BOOST_TEST(router.may_write() == r.may_write);
        }
    }
}

// A sequence of events, each with the map action it yields: the map is asked through a link
// that is up, once at a time, at most once per reconnect_delay_min (100 ms), and again when the
// link that carried the question drops.
BOOST_AUTO_TEST_CASE(the_map_is_asked_through_a_link_up_at_most_once_per_interval)
{
    enum class event
    {
        want,
        link_up,
        link_down,
        answer,
        timer,
    };
    struct step
    {
        event what;
        int at_ms;
        std::size_t node; // link_up, link_down, answer
        map_kind expected;
        std::size_t ask_node;
        int wait_until_ms;
    };
    struct row
    {
        const char* name;
        std::vector<state> links;
        std::vector<step> steps;
    };
    const row rows[] = {
        {"nothing up: the nodes start; the first up is asked",
         {state::idle, state::idle},
         {{event::want, 0, 0, map_kind::start_nodes, 0, 0},
          {event::link_up, 1, 1, map_kind::ask, 1, 0},
          {event::link_up, 2, 0, map_kind::none, 0, 0}}},
        {"a link up: asked through it; again after the interval",
         {state::waiting, state::ready},
         {{event::want, 0, 0, map_kind::ask, 1, 0},
          {event::want, 5, 0, map_kind::none, 0, 0}, // the question is in flight
          {event::answer, 6, 1, map_kind::none, 0, 0},
          {event::want, 7, 0, map_kind::wait, 0, 100},
          {event::want, 8, 0, map_kind::none, 0, 0}, // the timer is armed
          {event::timer, 100, 0, map_kind::ask, 1, 0}}},
        {"the link carrying the question drops: wanted again",
         {state::ready, state::ready},
         {{event::want, 0, 0, map_kind::ask, 0, 0},
          {event::link_down, 1, 0, map_kind::none, 0, 0},
          {event::link_up, 150, 1, map_kind::ask, 1, 0}}},
        {"another link drops: the question stands",
         {state::ready, state::ready},
         {{event::want, 0, 0, map_kind::ask, 0, 0},
          {event::link_down, 1, 1, map_kind::none, 0, 0},
          {event::link_up, 150, 1, map_kind::none, 0, 0}}},
        {"a timer with nothing wanted does nothing",
         {state::ready},
         {{event::want, 0, 0, map_kind::ask, 0, 0},
          {event::answer, 1, 0, map_kind::none, 0, 0},
          {event::timer, 200, 0, map_kind::none, 0, 0}}},
    };
    const clock_type::time_point start{std::chrono::hours(1)};
    const auto ms = [](int n) { return std::chrono::milliseconds(n); };
    for (const row& r : rows)
    {
        BOOST_TEST_CONTEXT(r.name)
        {
            cluster_router router(cluster_options());
            router.start();
            const view links{r.links, {}, {}};
            for (std::size_t i = 0; i < r.steps.size(); ++i)
            {
                const step& s = r.steps[i];
                const clock_type::time_point now = start + ms(s.at_ms);
                cluster_router::map_action a;
                switch (s.what)
                {
                case event::want:
                    a = router.want_map(now, links);
                    break;
                case event::link_up:
                    a = router.on_link_up(s.node, now);
                    break;
                case event::link_down:
                    router.on_link_down(s.node);
                    break;
                case event::answer:
                    router.on_slots(s.node, halves());
                    break;
                case event::timer:
                    a = router.on_timer(now, links);
                    break;
                }
                BOOST_TEST_CONTEXT("step " << i)
                {
                    BOOST_TEST((a.what == s.expected));
                    if (s.expected == map_kind::ask)
                        BOOST_TEST(a.node == s.ask_node);
                    if (s.expected == map_kind::wait)
                        BOOST_TEST((a.at == start + ms(s.wait_until_ms)));
                }
            }
        }
    }
}

BOOST_AUTO_TEST_CASE(one_server_never_asks_for_a_map)
{
    cluster_router router(redis::connection_options{});
    router.start();
    BOOST_TEST(!router.wanted());
    BOOST_TEST((router.want_map(clock_type::now(), view{}).what == map_kind::none));
    BOOST_TEST(router.may_write());
}

// After a new map (`halves()`, and a third node 10.0.0.3 serving nothing), which queued commands
// stay on their node.
BOOST_AUTO_TEST_CASE(after_a_new_map_a_command_stays_on_the_node_of_its_slot)
{
    struct row
    {
        const char* name;
        std::size_t node;
        int slot;
        state link;
        bool stays;
    };
    const row rows[] = {
        {"its slot's node", 0, 100, state::ready, true},
        {"another node's slot", 1, 100, state::ready, false},
        {"keyless, on a node serving slots", 0, -1, state::waiting, true},
        {"keyless, on a node serving nothing, up", 2, -1, state::ready, true},
        {"keyless, on a node serving nothing, waiting", 2, -1, state::waiting, false},
        {"a slot of another node, on a node serving nothing", 2, 100, state::ready, false},
    };
    for (const row& r : rows)
    {
        BOOST_TEST_CONTEXT(r.name)
        {
            cluster_router router(cluster_options(3));
            router.on_slots(0, halves());
            BOOST_TEST(router.stays(r.node, r.slot, r.link) == r.stays);
        }
    }
    cluster_router router(cluster_options(3));
    router.on_slots(0, array_reply({range(0, 8191, "10.0.0.1", 7000)}));
    BOOST_TEST(router.stays(2, 9000, state::ready));    // nobody serves it: a node up keeps it
    BOOST_TEST(!router.stays(2, 9000, state::waiting)); // not one that waits to reconnect
    BOOST_TEST(router.serves(0));
    BOOST_TEST(!router.serves(1));
}

BOOST_AUTO_TEST_CASE(standalone_servers_are_never_used)
{
    cluster_router router(cluster_options(3));
    BOOST_TEST(!router.drop_standalone(1));
    BOOST_TEST(!router.drop_standalone(1)); // counted once
    // The subscriber link goes round the nodes, skipping the standalone one.
    std::vector<std::size_t> tried;
    for (int i = 0; i < 4; ++i)
        tried.push_back(router.next_subscriber_node());
    BOOST_TEST(tried == (std::vector<std::size_t>{0, 2, 0, 2}), boost::test_tools::per_element());
    BOOST_TEST(!router.drop_standalone(0));
    BOOST_TEST(router.drop_standalone(2)); // the last one
    BOOST_TEST((router.route(100, none, view{}).what == kind::fail));
}

BOOST_AUTO_TEST_SUITE_END()
