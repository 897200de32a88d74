// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#define BOOST_TEST_MODULE redis_share_library

// The leased shares' Redis function library, called on a real server whose clock the test sets:
// the max-min fair division, held growing only from free capacity up to the target, bounds, leases
// that end and their reaping, fences (also after the state is lost), when 'divided' is published,
// resize, leave, status, a refresh delivered after a newer one, calls refused with nothing changed,
// and a long random run of processes that obey their grants checked step by step against a model.

#include <asio_sync/redis/detail/share_library.hpp>

#include "support/redis_library.hpp"
#include "support/redis_server.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <numeric>
#include <random>
#include <string>
#include <vector>

BOOST_AUTO_TEST_SUITE(share_library)

namespace {

namespace library = asio_sync::redis::detail::share_library;
using asio_sync::test::fence_names;
using asio_sync::test::library_with_a_set_clock;
using asio_sync::test::redis_server;
using asio_sync::test::set_server_clock;
using function = library::function;
using argv_type = std::vector<std::string>;

const std::string key = "asio_sync:{jobs}:share";
const std::string channel = "asio_sync:{jobs}:shares";

std::string name_of(function f)
{
    return std::string(library::function_names[static_cast<std::size_t>(f)]);
}

// The calls of the library on the limit "jobs".
argv_type refresh_call(const std::string& id, std::uint64_t want, std::uint64_t bound, std::uint64_t lease_ms,
                       std::uint64_t capacity, std::uint64_t call)
{
    return {"FCALL",
            name_of(function::refresh),
            "1",
            key,
            channel,
            id,
            std::to_string(want),
            std::to_string(bound),
            std::to_string(lease_ms),
            std::to_string(capacity),
            std::to_string(call)};
}
argv_type leave_call(const std::string& id)
{
    return {"FCALL", name_of(function::leave), "1", key, channel, id};
}
argv_type resize_call(std::uint64_t capacity)
{
    return {"FCALL", name_of(function::resize), "1", key, channel, std::to_string(capacity)};
}
argv_type status_call()
{
    return {"FCALL_RO", name_of(function::status), "1", key};
}

// A server with the library loaded (its clock set by the test, at `origin` ms, unless `set_clock`
// is false), a client, and a subscriber to the channel of the limit "jobs". The helpers return
// replies as text, words joined by spaces, fences named and instants in ms after the origin:
// "share 3 5 1000 F1 10", "status 10 3 0 | a 3 5 5 1000 F1".
struct share_fixture
{
    explicit share_fixture(bool set_clock = true) : client(server), subscriber(server)
    {
        BOOST_TEST_REQUIRE(subscriber.command({"SUBSCRIBE", channel}) == "subscribe\n" + channel + "\n1");
        load(set_clock ? library_with_a_set_clock(library::source) : std::string(library::source));
        if (set_clock)
            at(0);
    }

    void load(const std::string& source)
    {
        BOOST_TEST_REQUIRE(run({"FUNCTION", "LOAD", "REPLACE", source}) == library::name);
    }

    std::string run(const argv_type& argv) { return client.execute(argv).to_text(); }
    std::string command(const argv_type& argv) { return client.command(argv); }

    // Sets the server's clock `ms` after the origin (and `us` microseconds more).
    void at(std::uint64_t ms, std::uint64_t us = 0) { set_server_clock(client, (origin + ms) * 1000 + us); }

    std::string refresh(const std::string& id, std::uint64_t want, std::uint64_t bound,
                        std::uint64_t lease_ms = 1000)
    {
        return shown(client.execute(refresh_call(id, want, bound, lease_ms, capacity, ++numbers[id])));
    }
    std::string leave(const std::string& id) { return shown(client.execute(leave_call(id))); }
    std::string resize(std::uint64_t to) { return shown(client.execute(resize_call(to))); }
    std::string status() { return shown(client.execute(status_call())); }

    std::string shown(const redis_server::reply& r)
    {
        if (r.type != redis_server::reply::kind::array)
            return r.to_text();
        std::vector<std::string> words;
        for (const redis_server::reply& e : r.elements)
            words.push_back(e.to_text());
        if (words.size() == 6 && words[0] == "share")
            words[4] = fences.name(words[4]);
        if (words.size() >= 4 && (words.size() - 4) % 6 == 0 && words[0] == "status")
        {
            words[3] = instant(words[3]);
            for (std::size_t i = 4; i < words.size(); i += 6)
            {
                words[i] = "| " + words[i];
                words[i + 4] = instant(words[i + 4]);
                words[i + 5] = fences.name(words[i + 5]);
            }
        }
        std::string text;
        for (const std::string& w : words)
            text += (text.empty() ? "" : " ") + w;
        return text;
    }

    // A server time in ms as ms after the origin, when the clock is the test's.
    std::string instant(const std::string& ms) const
    {
        return std::stoull(ms) >= origin ? std::to_string(std::stoull(ms) - origin) : ms;
    }

    // The targets of the processes in the order of their ids, from status.
    std::string targets()
    {
        const redis_server::reply r = client.execute(status_call());
        std::string text;
        for (std::size_t i = 7; i < r.elements.size(); i += 6)
            text += (text.empty() ? "" : " ") + r.elements[i].to_text();
        return text;
    }

    // The messages published on the channel since the last count; each must be 'divided'.
    int published()
    {
        BOOST_TEST_REQUIRE(command({"PUBLISH", channel, "end"}) == "1");
        int count = 0;
        for (std::string message = next_message(); message != "end"; message = next_message())
        {
            BOOST_TEST(message == "divided");
            ++count;
        }
        return count;
    }

    std::string next_message()
    {
        const redis_server::reply message = subscriber.read();
        BOOST_TEST_REQUIRE(message.elements.size() == 3u);
        BOOST_TEST(message.elements[1].text == channel);
        return message.elements[2].text;
    }

    std::string stored() { return run({"HGETALL", key}); }

    redis_server server;
    redis_server::client client;
    redis_server::client subscriber;
    // A whole millisecond well after the server's own clock.
    std::uint64_t origin = std::stoull(client.execute({"TIME"}).elements.at(0).text) * 1000 + 1'000'000;
    std::uint64_t capacity = 10;                  // declared by each refresh
    std::map<std::string, std::uint64_t> numbers; // of each process's last refresh
    fence_names fences;
};

// The max-min fair division, written as the level it reaches rather than as the library's loop:
// the largest level L with sum(min(want, L)) <= capacity; each process gets min(want, L), and the
// permits left (fewer than the processes wanting more than L) go one each to the last of those in
// the order by want, then id (the wants are given in the order of the ids).
std::vector<std::uint64_t> fair_division(std::uint64_t capacity, const std::vector<std::uint64_t>& wants)
{
    const auto filled = [&](std::uint64_t level) {
        std::uint64_t sum = 0;
        for (std::uint64_t w : wants)
            sum += std::min(w, level);
        return sum;
    };
    std::uint64_t level = 0, top = wants.empty() ? 0 : *std::max_element(wants.begin(), wants.end());
    while (level < top && filled(level + 1) <= capacity)
        ++level;
    std::vector<std::uint64_t> targets;
    for (std::uint64_t w : wants)
        targets.push_back(std::min(w, level));
    std::vector<std::size_t> above;
    for (std::size_t i = 0; i < wants.size(); ++i)
        if (wants[i] > level)
            above.push_back(i);
    std::stable_sort(above.begin(), above.end(),
                     [&](std::size_t a, std::size_t b) { return wants[a] < wants[b]; });
    std::uint64_t left = capacity - filled(level);
    for (auto it = above.rbegin(); left > 0 && it != above.rend(); ++it, --left)
        ++targets[*it];
    return targets;
}

std::string joined(const std::vector<std::uint64_t>& values)
{
    std::string text;
    for (std::uint64_t v : values)
        text += (text.empty() ? "" : " ") + std::to_string(v);
    return text;
}

} // namespace

// ---- the division

BOOST_FIXTURE_TEST_CASE(the_division_is_max_min_fair, share_fixture)
{
    struct row
    {
        std::uint64_t capacity;
        std::vector<std::uint64_t> wants; // of the processes p01, p02, ... in that order
        std::string targets;
    };
    std::vector<std::uint64_t> one_to_twenty(20);
    std::iota(one_to_twenty.begin(), one_to_twenty.end(), 1);
    const row rows[] = {
        {10, {2, 3, 9}, "2 3 5"}, // the small wants filled, the rest to the largest
        {12, {2, 3, 4}, "2 3 4"}, // every want filled, 3 permits unused
        {10, {9, 9, 9}, "3 3 4"}, // split within one permit, the extra to the last id
        {11, {9, 9, 9}, "3 4 4"},
        {10, {4, 4, 4}, "3 3 4"}, // wants just above an equal part
        {7, {3, 3, 3}, "2 2 3"},
        {5, {3, 3}, "2 3"},         // a tie: ordered by id
        {10, {1, 100, 6}, "1 5 4"}, // ordered by want, not by id: the larger want gets the extra
        {10, {0, 0, 5}, "0 0 5"},   // zero wants
        {10, {0, 7, 7}, "0 5 5"},
        {10, {0, 0, 0}, "0 0 0"},
        {3, {5, 5, 5, 5, 5}, "0 0 1 1 1"}, // fewer permits than processes
        {10, {20}, "10"},                  // one process
        {10, {3}, "3"},
        {100, one_to_twenty, "1 2 3 4 5 5 5 5 5 5 6 6 6 6 6 6 6 6 6 6"}, // many processes
        {100, std::vector<std::uint64_t>(20, 10), "5 5 5 5 5 5 5 5 5 5 5 5 5 5 5 5 5 5 5 5"},
    };
    std::uint64_t row_clock = 0;
    for (const row& r : rows)
    {
        BOOST_TEST_CONTEXT("capacity " << r.capacity << ", wants " << joined(r.wants))
        {
            command({"DEL", key});
            at(++row_clock); // fences go on growing after the deletion
            capacity = r.capacity;
            for (std::size_t i = 0; i < r.wants.size(); ++i)
            {
                const std::string id = (i < 9 ? "p0" : "p") + std::to_string(i + 1);
                BOOST_TEST_REQUIRE(refresh(id, r.wants[i], 0, 60000).rfind("share ", 0) == 0u);
            }
            BOOST_TEST(targets() == r.targets);
            const std::vector<std::uint64_t> t = fair_division(r.capacity, r.wants); // the random run's model
            BOOST_TEST(joined(t) == r.targets);
            BOOST_TEST(
                std::accumulate(t.begin(), t.end(), std::uint64_t(0)) ==
                std::min(r.capacity, std::accumulate(r.wants.begin(), r.wants.end(), std::uint64_t(0))));
        }
    }
}

// ---- held, target and bound

// b's part comes only from what a gives back: b gets what is free, and no more, until a reports a
// lower bound; the sum of held never exceeds the capacity.
BOOST_FIXTURE_TEST_CASE(held_grows_only_from_free_capacity_up_to_the_target, share_fixture)
{
    BOOST_TEST(refresh("a", 10, 0) == "share 10 10 1000 F1 10"); // alone: all it wants
    BOOST_TEST(published() == 0);
    BOOST_TEST(refresh("b", 10, 0) == "share 0 5 1000 F2 10"); // its target, but nothing is free
    BOOST_TEST(published() == 1);                              // a's target fell
    BOOST_TEST(status() == "status 10 10 0 | a 10 10 5 1000 F1 | b 0 10 5 1000 F2");
    BOOST_TEST(refresh("b", 10, 0) == "share 0 5 1000 F2 10");
    BOOST_TEST(refresh("a", 10, 10) == "share 10 5 1000 F1 10"); // not given back yet: kept
    BOOST_TEST(published() == 0);
    BOOST_TEST(refresh("a", 10, 7) == "share 7 5 1000 F1 10"); // 3 given back
    BOOST_TEST(published() == 1);                              // for b, below its target
    BOOST_TEST(refresh("c", 10, 0) == "share 3 4 1000 F3 10"); // targets 3 3 4: c takes what is free
    BOOST_TEST(published() == 1);
    BOOST_TEST(refresh("b", 10, 0) == "share 0 3 1000 F2 10"); // nothing left for b
    BOOST_TEST(status() == "status 10 10 0 | a 7 10 3 1000 F1 | b 0 10 3 1000 F2 | c 3 10 4 1000 F3");
    BOOST_TEST(refresh("a", 10, 3) == "share 3 3 1000 F1 10");
    BOOST_TEST(published() == 1);
    BOOST_TEST(refresh("b", 10, 0) == "share 3 3 1000 F2 10");
    BOOST_TEST(refresh("c", 10, 3) == "share 4 4 1000 F3 10");
    BOOST_TEST(published() == 0);
    BOOST_TEST(status() == "status 10 10 0 | a 3 10 3 1000 F1 | b 3 10 3 1000 F2 | c 4 10 4 1000 F3");
}

BOOST_FIXTURE_TEST_CASE(a_bound_lowers_held_and_never_raises_it, share_fixture)
{
    BOOST_TEST(refresh("a", 6, 0) == "share 6 6 1000 F1 10");
    BOOST_TEST(refresh("a", 2, 6) == "share 6 2 1000 F1 10"); // above its target until it reports less
    BOOST_TEST(refresh("a", 2, 9) == "share 6 2 1000 F1 10"); // a bound above held raises nothing
    BOOST_TEST(refresh("a", 2, 4) == "share 4 2 1000 F1 10");
    BOOST_TEST(refresh("a", 2, 2) == "share 2 2 1000 F1 10");
    BOOST_TEST(refresh("a", 0, 0) == "share 0 0 1000 F1 10"); // want and bound 0: the entry stays
    BOOST_TEST(status() == "status 10 0 0 | a 0 0 0 1000 F1");
    BOOST_TEST(refresh("a", 3, 0) == "share 3 3 1000 F1 10"); // the same fence
    BOOST_TEST(published() == 0);                             // alone: nobody to tell
}

// A process that reports a bound below what it may keep (it lost its share before its lease
// ended in Redis) gets back up to its target at once, from what it freed.
BOOST_FIXTURE_TEST_CASE(a_bound_below_the_target_is_granted_again_from_what_it_freed, share_fixture)
{
    BOOST_TEST(refresh("b", 8, 0) == "share 8 8 1000 F1 10");
    BOOST_TEST(refresh("a", 2, 0) == "share 2 2 1000 F2 10");
    BOOST_TEST(refresh("c", 8, 0) == "share 0 4 1000 F3 10"); // targets 2 4 4, nothing free
    BOOST_TEST(published() == 1);
    BOOST_TEST(refresh("a", 2, 0) == "share 2 2 1000 F2 10"); // freed and taken again: nothing for c
    BOOST_TEST(published() == 0);
    BOOST_TEST(refresh("b", 8, 6) == "share 6 4 1000 F1 10"); // 2 free for c
    BOOST_TEST(published() == 1);
    BOOST_TEST(refresh("c", 8, 0) == "share 2 4 1000 F3 10");
    BOOST_TEST(status() == "status 10 10 0 | a 2 2 2 1000 F2 | b 6 8 4 1000 F1 | c 2 8 4 1000 F3");
}

// ---- leases

// A lease ends at its expiry to the millisecond: status stops counting it at once, and the next
// writing call of anyone removes it, its held free again.
BOOST_FIXTURE_TEST_CASE(a_lease_that_ends_frees_the_held_at_the_next_writing_call, share_fixture)
{
    BOOST_TEST(refresh("a", 6, 0, 1000) == "share 6 6 1000 F1 10");
    BOOST_TEST(refresh("b", 6, 0, 5000) == "share 4 5 5000 F2 10");
    BOOST_TEST(published() == 1);
    at(999);
    BOOST_TEST(status() == "status 10 10 999 | a 6 6 5 1000 F1 | b 4 6 5 5000 F2");
    BOOST_TEST(refresh("b", 6, 4, 5000) == "share 4 5 5000 F2 10");
    at(1000);
    BOOST_TEST(status() == "status 10 4 1000 | b 4 6 5 5999 F2");   // no longer counted
    BOOST_TEST(command({"HEXISTS", key, "#a"}) == "1");             // but still stored
    BOOST_TEST(refresh("b", 6, 4, 5000) == "share 6 6 5000 F2 10"); // a reaped: alone, all it wants
    BOOST_TEST(command({"HEXISTS", key, "#a"}) == "0");
    BOOST_TEST(published() == 0);

    // Leave and resize reap too.
    BOOST_TEST(refresh("c", 2, 0, 100) == "share 2 2 100 F3 10");
    BOOST_TEST(refresh("d", 2, 0, 100) == "share 2 2 100 F4 10");
    at(1100);
    BOOST_TEST(leave("x") == "left 10");
    BOOST_TEST(status() == "status 10 6 1100 | b 6 6 6 6000 F2");
    BOOST_TEST(command({"HLEN", key}) == "3"); // capacity, seq and b
    BOOST_TEST(refresh("c", 2, 0, 100) == "share 2 2 100 F5 10");
    at(1200);
    BOOST_TEST(resize(10) == "resized 10");
    BOOST_TEST(command({"HLEN", key}) == "3");
}

// The caller's own entry that expired is removed by its own call, which makes it a new one: a new
// fence, held from what is free.
BOOST_FIXTURE_TEST_CASE(a_process_whose_lease_ended_gets_a_new_fence, share_fixture)
{
    BOOST_TEST(refresh("a", 6, 0, 1000) == "share 6 6 1000 F1 10");
    BOOST_TEST(refresh("b", 6, 0, 5000) == "share 4 5 5000 F2 10");
    at(1500);
    BOOST_TEST(refresh("a", 6, 6, 1000) == "share 5 5 1000 F3 10"); // made anew, from what is free
    BOOST_TEST(status() == "status 10 9 1500 | a 5 6 5 2500 F3 | b 4 6 5 5000 F2");
    BOOST_TEST(published() == 2); // b joining; then 1 free while b is below its target
}

// ---- fences

BOOST_FIXTURE_TEST_CASE(fences_grow_strictly_even_after_the_state_is_lost, share_fixture)
{
    BOOST_TEST(refresh("a", 1, 0) == "share 1 1 1000 F1 10");
    BOOST_TEST(refresh("b", 1, 0) == "share 1 1 1000 F2 10"); // the clock stood still: one above
    BOOST_TEST(refresh("a", 1, 1) == "share 1 1 1000 F1 10"); // kept across refreshes
    command({"DEL", key});
    at(0, 2); // a clock that moved by less than a millisecond
    BOOST_TEST(refresh("a", 1, 0) == "share 1 1 1000 F3 10");
    command({"FLUSHALL"});
    at(0, 3);
    BOOST_TEST(refresh("a", 1, 0) == "share 1 1 1000 F4 10");
}

BOOST_AUTO_TEST_CASE(fences_grow_strictly_with_the_server_clock_across_a_restart_without_persistence)
{
    share_fixture f(false); // neither AOF nor RDB; the server's own clock
    BOOST_TEST(f.refresh("a", 1, 0) == "share 1 1 1000 F1 10");
    f.command({"DEL", key});
    BOOST_TEST(f.refresh("a", 1, 0) == "share 1 1 1000 F2 10");
    f.command({"FLUSHALL"});
    BOOST_TEST(f.refresh("a", 1, 0) == "share 1 1 1000 F3 10");
    f.server.stop();
    f.server.start();
    f.client = redis_server::client(f.server);
    BOOST_TEST(f.command({"DBSIZE"}) == "0"); // everything is gone, the library too
    f.load(std::string(library::source));
    BOOST_TEST(f.refresh("a", 1, 0) == "share 1 1 1000 F4 10");
}

// ---- 'divided'

// Published when another process should call (its target changed, or capacity was freed while
// it is below its target), and only then.
BOOST_FIXTURE_TEST_CASE(divided_is_published_exactly_when_another_process_should_call, share_fixture)
{
    BOOST_TEST(refresh("a", 10, 0) == "share 10 10 1000 F1 10");
    BOOST_TEST(published() == 0); // alone
    BOOST_TEST(refresh("b", 10, 0) == "share 0 5 1000 F2 10");
    BOOST_TEST(published() == 1); // a's target changed
    BOOST_TEST(refresh("a", 8, 10) == "share 10 5 1000 F1 10");
    BOOST_TEST(published() == 0); // a wants less, the targets stay
    BOOST_TEST(refresh("b", 10, 0) == "share 0 5 1000 F2 10");
    BOOST_TEST(published() == 0); // a refresh that changes nothing
    BOOST_TEST(refresh("a", 3, 10) == "share 10 3 1000 F1 10");
    BOOST_TEST(published() == 1); // b's target rose to 7
    BOOST_TEST(refresh("a", 3, 6) == "share 6 3 1000 F1 10");
    BOOST_TEST(published() == 1); // 4 freed, b below its target
    BOOST_TEST(refresh("b", 7, 0) == "share 4 7 1000 F2 10");
    BOOST_TEST(published() == 0);
    BOOST_TEST(refresh("a", 3, 3) == "share 3 3 1000 F1 10");
    BOOST_TEST(published() == 1); // 3 freed, b below its target
    BOOST_TEST(refresh("b", 5, 4) == "share 5 5 1000 F2 10");
    BOOST_TEST(published() == 0); // b's target fell to its want, a's stays
    BOOST_TEST(refresh("b", 2, 2) == "share 2 2 1000 F2 10");
    BOOST_TEST(published() == 0); // freed, but a is at its target and its target stays
    BOOST_TEST(leave("b") == "left 10");
    BOOST_TEST(published() == 0); // the same
    BOOST_TEST(resize(10) == "resized 10");
    BOOST_TEST(published() == 1); // a resize, always
    BOOST_TEST(status() == "status 10 3 0 | a 3 3 3 1000 F1");
}

// ---- resize, leave, status

BOOST_FIXTURE_TEST_CASE(a_resize_moves_the_targets_and_held_follows_the_bounds, share_fixture)
{
    BOOST_TEST(refresh("a", 10, 0) == "share 10 10 1000 F1 10");
    BOOST_TEST(refresh("b", 10, 0) == "share 0 5 1000 F2 10");
    BOOST_TEST(refresh("a", 10, 5) == "share 5 5 1000 F1 10");
    BOOST_TEST(refresh("b", 10, 0) == "share 5 5 1000 F2 10");
    BOOST_TEST(published() == 2);

    BOOST_TEST(resize(4) == "resized 4");
    BOOST_TEST(published() == 1);
    BOOST_TEST(status() == "status 4 10 0 | a 5 10 2 1000 F1 | b 5 10 2 1000 F2"); // above it, for now
    BOOST_TEST(refresh("a", 10, 5) == "share 5 2 1000 F1 4");                      // held as reported
    BOOST_TEST(refresh("a", 10, 3) == "share 3 2 1000 F1 4");
    BOOST_TEST(published() == 0); // freed, but still above the capacity: nothing for anyone
    BOOST_TEST(refresh("b", 10, 2) == "share 2 2 1000 F2 4");
    BOOST_TEST(refresh("a", 10, 2) == "share 2 2 1000 F1 4");
    BOOST_TEST(published() == 0);
    BOOST_TEST(status() == "status 4 4 0 | a 2 10 2 1000 F1 | b 2 10 2 1000 F2");

    BOOST_TEST(resize(12) == "resized 12");
    BOOST_TEST(published() == 1);
    BOOST_TEST(status() == "status 12 4 0 | a 2 10 6 1000 F1 | b 2 10 6 1000 F2");
    BOOST_TEST(refresh("a", 10, 2) == "share 6 6 1000 F1 12");
    BOOST_TEST(refresh("b", 10, 2) == "share 6 6 1000 F2 12");
    BOOST_TEST(published() == 0);

    capacity = 7; // a declared capacity is ignored while one is in force
    BOOST_TEST(refresh("c", 0, 0) == "share 0 0 1000 F3 12");
    command({"DEL", key});
    BOOST_TEST(resize(3) == "resized 3"); // on no state: the capacity only
    BOOST_TEST(stored() == "capacity\n3");
    at(1);
    BOOST_TEST(refresh("c", 5, 0) == "share 3 3 1000 F4 3");
}

// Below a smaller capacity, what a process gives back frees nothing for the others until the held
// sum is below the capacity: only then is 'divided' published for them.
BOOST_FIXTURE_TEST_CASE(after_a_resize_down_capacity_is_free_once_the_held_sum_is_below_it, share_fixture)
{
    BOOST_TEST(refresh("a", 10, 0) == "share 10 10 1000 F1 10");
    BOOST_TEST(refresh("b", 10, 0) == "share 0 5 1000 F2 10");
    BOOST_TEST(resize(4) == "resized 4");
    BOOST_TEST(published() == 2);
    BOOST_TEST(refresh("a", 10, 8) == "share 8 2 1000 F1 4");
    BOOST_TEST(published() == 0); // b is below its target, but nothing is free
    BOOST_TEST(refresh("b", 10, 0) == "share 0 2 1000 F2 4");
    BOOST_TEST(refresh("a", 10, 3) == "share 3 2 1000 F1 4");
    BOOST_TEST(published() == 1); // 1 free
    BOOST_TEST(refresh("b", 10, 0) == "share 1 2 1000 F2 4");
    BOOST_TEST(refresh("a", 10, 2) == "share 2 2 1000 F1 4");
    BOOST_TEST(published() == 1);
    BOOST_TEST(refresh("b", 10, 1) == "share 2 2 1000 F2 4");
    BOOST_TEST(status() == "status 4 4 0 | a 2 10 2 1000 F1 | b 2 10 2 1000 F2");
}

BOOST_FIXTURE_TEST_CASE(leave_frees_what_the_process_held, share_fixture)
{
    BOOST_TEST(refresh("a", 6, 0) == "share 6 6 1000 F1 10");
    BOOST_TEST(refresh("b", 6, 0) == "share 4 5 1000 F2 10");
    BOOST_TEST(published() == 1);
    BOOST_TEST(leave("a") == "left 10");
    BOOST_TEST(published() == 1); // b's target rose, and capacity was freed
    BOOST_TEST(status() == "status 10 4 0 | b 4 6 6 1000 F2");
    BOOST_TEST(refresh("b", 6, 4) == "share 6 6 1000 F2 10");
    const std::string before = stored();
    BOOST_TEST(leave("x") == "left 10"); // unknown: nothing to do
    BOOST_TEST(stored() == before);
    BOOST_TEST(published() == 0);
    BOOST_TEST(refresh("a", 6, 0) == "share 4 5 1000 F3 10"); // back with a new fence
    command({"DEL", key});
    BOOST_TEST(leave("a") == "left 0"); // no state: none made
    BOOST_TEST(command({"EXISTS", key}) == "0");
    BOOST_TEST(published() == 1);
}

BOOST_FIXTURE_TEST_CASE(status_reads_the_live_entries_and_their_sums, share_fixture)
{
    BOOST_TEST(status() == "status 0 0 0"); // no state
    BOOST_TEST(refresh("b", 3, 0, 2000) == "share 3 3 2000 F1 10");
    BOOST_TEST(refresh("a", 4, 0, 500) == "share 4 4 500 F2 10");
    at(100);
    BOOST_TEST(status() == "status 10 7 100 | a 4 4 4 500 F2 | b 3 3 3 2000 F1"); // in the order of ids
    at(500);
    BOOST_TEST(status() == "status 10 3 500 | b 3 3 3 2000 F1");
    // Read only: FCALL_RO, and a writing function refused there.
    argv_type ro = refresh_call("c", 1, 0, 1000, 10, 1);
    ro[0] = "FCALL_RO";
    BOOST_TEST(run(ro).rfind("ERR", 0) == 0u);
    BOOST_TEST(command({"HEXISTS", key, "#a"}) == "1");
}

// A refresh delivered late, after a newer one of the same process ran (sent on a link that died):
// its bound may be below what the process took since. It changes nothing, and is answered with the
// entry as it is; so is the last one run, sent again.
BOOST_FIXTURE_TEST_CASE(a_refresh_older_than_the_last_one_run_changes_nothing, share_fixture)
{
    const auto call = [&](const std::string& id, std::uint64_t want, std::uint64_t bound,
                          std::uint64_t number) {
        return shown(client.execute(refresh_call(id, want, bound, 1000, capacity, number)));
    };
    BOOST_TEST(call("a", 0, 0, 1) == "share 0 0 1000 F1 10");
    BOOST_TEST(call("b", 10, 0, 1) == "share 10 10 1000 F2 10");
    BOOST_TEST(call("a", 4, 0, 3) == "share 0 4 1000 F1 10"); // its call 2 is kept by a dead link
    BOOST_TEST(call("b", 10, 6, 2) == "share 6 6 1000 F2 10");
    BOOST_TEST(call("a", 4, 0, 4) == "share 4 4 1000 F1 10"); // a uses 4
    BOOST_TEST(published() == 2);
    at(100);
    const std::string before = stored();
    // Run, a's call 2 would set its held and its target to 0, and b's target to 10.
    BOOST_TEST(call("a", 0, 0, 2) == "share 4 4 1000 F1 10");
    BOOST_TEST(call("a", 4, 4, 4) == "share 4 4 1000 F1 10");
    BOOST_TEST(stored() == before); // not even a lease renewed
    BOOST_TEST(published() == 0);
    BOOST_TEST(call("a", 4, 4, 5) == "share 4 4 1000 F1 10");
    BOOST_TEST(status() == "status 10 10 100 | a 4 4 4 1100 F1 | b 6 10 6 1000 F2");
}

// ---- refused calls

BOOST_FIXTURE_TEST_CASE(malformed_calls_are_refused_and_change_nothing, share_fixture)
{
    BOOST_TEST(refresh("a", 6, 0, 1000) == "share 6 6 1000 F1 10");
    BOOST_TEST(refresh("b", 6, 0, 5000) == "share 4 5 5000 F2 10");
    at(2000); // a's lease has ended: a call that changed anything would remove it
    BOOST_TEST(published() == 1);
    const std::string before = stored();
    BOOST_TEST_REQUIRE(before.find("#a") != std::string::npos);

    const argv_type good = refresh_call("c", 1, 0, 1000, 10, 1);
    const auto with = [&](std::size_t index, std::string value) { // ARGV[index] of the call
        argv_type argv = good;
        argv.at(3 + index) = std::move(value);
        return argv;
    };
    const std::string refresh_name = name_of(function::refresh), leave_name = name_of(function::leave),
                      resize_name = name_of(function::resize), status_name = name_of(function::status);
    const argv_type calls[] = {
        // refresh: the keys and arguments counted, an empty id, want, bound, lease_ms, capacity, call
        {"FCALL", refresh_name, "0", channel, "c", "1", "0", "1000", "10", "1"},
        {"FCALL", refresh_name, "2", key, key, channel, "c", "1", "0", "1000", "10", "1"},
        {"FCALL", refresh_name, "1", key, channel, "c", "1", "0", "1000", "10"},
        {"FCALL", refresh_name, "1", key, channel, "c", "1", "0", "1000", "10", "1", "1"},
        with(2, ""),
        with(3, "x"),
        with(3, "-1"),
        with(3, "1.5"),
        with(3, ""),
        with(3, "1e3"),
        with(3, " 1"),
        with(3, "12345678901234567"), // 17 digits
        with(3, "9007199254740992"),  // 2^53
        with(4, "x"),
        with(4, "-1"),
        with(5, "0"),
        with(5, "x"),
        with(6, "0"),
        with(6, "x"),
        with(6, "4503599627370497"), // 2^52 + 1
        with(7, "0"),
        with(7, "x"),
        // leave: the keys and arguments counted, an empty id
        {"FCALL", leave_name, "1", key, channel},
        {"FCALL", leave_name, "1", key, channel, "a", "b"},
        {"FCALL", leave_name, "0", channel, "a"},
        {"FCALL", leave_name, "1", key, channel, ""},
        // resize: the keys and arguments counted, capacity
        {"FCALL", resize_name, "1", key, channel},
        {"FCALL", resize_name, "1", key, channel, "5", "5"},
        {"FCALL", resize_name, "0", channel, "5"},
        {"FCALL", resize_name, "1", key, channel, "0"},
        {"FCALL", resize_name, "1", key, channel, "-3"},
        {"FCALL", resize_name, "1", key, channel, "x"},
        {"FCALL", resize_name, "1", key, channel, "4503599627370497"},
        // status: an argument, no key
        {"FCALL_RO", status_name, "1", key, "x"},
        {"FCALL_RO", status_name, "0"},
    };
    for (const argv_type& argv : calls)
    {
        std::string shown_call;
        for (const std::string& word : argv)
            shown_call += "'" + word + "' ";
        BOOST_TEST_CONTEXT(shown_call)
        {
            BOOST_TEST(run(argv).rfind("ASIO_SYNC_ARGUMENT ", 0) == 0u);
            BOOST_TEST(stored() == before);
        }
    }
    BOOST_TEST(published() == 0);

    // The largest values are taken.
    command({"DEL", key});
    capacity = 4503599627370496;
    BOOST_TEST(refresh("c", 9007199254740991, 0) ==
               "share 4503599627370496 4503599627370496 1000 F3 4503599627370496");
    BOOST_TEST(resize(4503599627370496) == "resized 4503599627370496");
}

BOOST_FIXTURE_TEST_CASE(a_key_of_another_type_fails_with_wrongtype_and_changes_nothing, share_fixture)
{
    for (const argv_type& make : {argv_type{"SET", key, "x"}, argv_type{"RPUSH", key, "x", "y"}})
    {
        command({"DEL", key});
        command(make);
        const std::string before = run({"DUMP", key});
        for (const argv_type& argv :
             {refresh_call("a", 1, 0, 1000, 10, 1), leave_call("a"), resize_call(5), status_call()})
        {
            BOOST_TEST_CONTEXT(make[0] << ", " << argv[1])
            {
                BOOST_TEST(run(argv).rfind("WRONGTYPE", 0) == 0u);
                BOOST_TEST(run({"DUMP", key}) == before);
            }
        }
    }
    BOOST_TEST(published() == 0);
}

// ---- a random run

namespace {

// What the library stores, as a model: the capacity and each live process's entry.
struct model
{
    struct entry
    {
        std::uint64_t held = 0, want = 0, target = 0, expiry = 0;
        std::string fence;
    };

    std::uint64_t capacity = 0;
    std::map<std::string, entry> entries;
    int fences = 0; // handed out

    std::int64_t free() const
    {
        std::int64_t sum = 0;
        for (const auto& [id, e] : entries)
            sum += static_cast<std::int64_t>(e.held);
        return static_cast<std::int64_t>(capacity) - sum;
    }

    void reap(std::uint64_t now)
    {
        std::erase_if(entries, [&](const auto& item) { return item.second.expiry <= now; });
    }

    // Stores the division; whether another process than `caller` should call: its target changed,
    // or capacity that was not free before (`free_before`) is free now while it is below its target.
    bool divide(const std::string& caller, std::int64_t free_before)
    {
        std::vector<std::uint64_t> wants;
        for (const auto& [id, e] : entries)
            wants.push_back(e.want);
        const std::vector<std::uint64_t> targets = fair_division(capacity, wants);
        const bool freed = free() > std::max<std::int64_t>(free_before, 0);
        bool wake = false;
        std::size_t i = 0;
        for (auto& [id, e] : entries)
        {
            if (id != caller && (targets[i] != e.target || (freed && e.held < targets[i])))
                wake = true;
            e.target = targets[i++];
        }
        return wake;
    }

    // The reply to refresh and whether it publishes.
    std::pair<std::string, bool> refresh(const std::string& id, std::uint64_t want, std::uint64_t bound,
                                         std::uint64_t lease, std::uint64_t declared, std::uint64_t now)
    {
        if (capacity == 0)
            capacity = declared;
        const std::int64_t free_before = free();
        reap(now);
        auto [it, added] = entries.try_emplace(id);
        entry& e = it->second;
        if (added)
            e.fence = "F" + std::to_string(++fences);
        e.held = std::min(e.held, bound);
        e.want = want;
        e.expiry = now + lease;
        std::vector<std::uint64_t> wants;
        std::size_t index = 0;
        for (const auto& [other, o] : entries)
        {
            if (other == id)
                index = wants.size();
            wants.push_back(o.want);
        }
        const std::uint64_t target = fair_division(capacity, wants)[index];
        if (target > e.held && free() > 0)
            e.held += std::min<std::uint64_t>(target - e.held, static_cast<std::uint64_t>(free()));
        const bool wake = divide(id, free_before);
        return {"share " + std::to_string(e.held) + " " + std::to_string(e.target) + " " +
                    std::to_string(lease) + " " + e.fence + " " + std::to_string(capacity),
                wake};
    }

    bool leave(const std::string& id, std::uint64_t now)
    {
        const std::int64_t free_before = free();
        reap(now);
        entries.erase(id);
        return capacity != 0 && divide({}, free_before);
    }

    void resize(std::uint64_t to, std::uint64_t now)
    {
        const std::int64_t free_before = free();
        reap(now);
        capacity = to;
        divide({}, free_before);
    }

    // status, as share_fixture shows it, at `now` ms after the origin.
    std::string status(std::uint64_t now) const
    {
        std::uint64_t sum = 0;
        std::string rows;
        for (const auto& [id, e] : entries)
            if (e.expiry > now)
            {
                sum += e.held;
                rows += " | " + id + " " + std::to_string(e.held) + " " + std::to_string(e.want) + " " +
                        std::to_string(e.target) + " " + std::to_string(e.expiry) + " " + e.fence;
            }
        return "status " + std::to_string(capacity) + " " + std::to_string(sum) + " " + std::to_string(now) +
               rows;
    }
};

// A process that obeys its grants: it uses at most its share (min(held, target) of its last
// answer), or what it used before while it gives back; its bound is its share plus that debt; when
// its lease has ended, or an answer carries another fence (its entry was lost), it has stopped
// using anything.
struct obeying_process
{
    std::uint64_t share = 0, in_use = 0, lease_end = 0;
    std::string fence; // empty before its first answer
};

} // namespace

BOOST_FIXTURE_TEST_CASE(a_random_run_keeps_the_invariants_and_matches_the_model, share_fixture)
{
    std::mt19937 random(20261206);
    const auto draw = [&](std::uint64_t low, std::uint64_t high) {
        return std::uniform_int_distribution<std::uint64_t>(low, high)(random);
    };
    const std::vector<std::string> ids{"p1", "p2", "p3", "p4", "p5", "p6"};
    std::map<std::string, obeying_process> processes;
    model m;
    std::uint64_t now = 0, previous_sum = 0;
    std::map<std::string, std::uint64_t> previous_held;
    // How often each case occurred: the run must reach them all.
    int woken = 0, quiet = 0, above_capacity = 0, expired = 0, lost = 0, left = 0, resized = 0;
    for (int step = 0; step < 3000; ++step)
    {
        BOOST_TEST_CONTEXT("step " << step)
        {
            const std::uint64_t action = draw(0, 99);
            bool wrote = true, wake = false;
            if (action < 55)
            {
                const std::string& id = ids[draw(0, ids.size() - 1)];
                obeying_process& p = processes[id];
                if (!p.fence.empty() && now >= p.lease_end)
                {
                    p = obeying_process{};
                    ++expired;
                }
                p.in_use -= draw(0, p.in_use);
                if (p.share > p.in_use)
                    p.in_use += draw(0, p.share - p.in_use);
                const std::uint64_t want = p.in_use + draw(0, 8);
                const std::uint64_t bound = std::max(p.share, p.in_use);
                const std::uint64_t lease = std::vector<std::uint64_t>{300, 1000, 3000}[draw(0, 2)];
                const auto [expected, publishes] = m.refresh(id, want, bound, lease, capacity, now);
                BOOST_TEST_REQUIRE(refresh(id, want, bound, lease) == expected);
                wake = publishes;
                const model::entry& e = m.entries.at(id);
                if (!p.fence.empty() && e.fence != p.fence)
                {
                    p.in_use = 0;
                    ++lost;
                }
                p.share = std::min(e.held, e.target);
                p.fence = e.fence;
                p.lease_end = now + lease;
            }
            else if (action < 83)
            {
                now += draw(0, 500);
                at(now);
                wrote = false;
            }
            else if (action < 85)
            {
                // The state lost, and the clock moved on (fences follow it).
                command({"DEL", key});
                m.entries.clear();
                m.capacity = 0;
                now += draw(1, 500);
                at(now);
                wrote = false;
            }
            else if (action < 90)
            {
                const std::uint64_t to = draw(1, 20);
                m.resize(to, now);
                BOOST_TEST_REQUIRE(resize(to) == "resized " + std::to_string(to));
                wake = true;
                ++resized;
            }
            else if (action < 95)
            {
                const std::string& id = ids[draw(0, ids.size() - 1)];
                obeying_process& p = processes[id];
                if (p.in_use == 0 || now >= p.lease_end) // a process leaves once it uses nothing
                {
                    wake = m.leave(id, now);
                    BOOST_TEST_REQUIRE(leave(id) == "left " + std::to_string(m.capacity));
                    p = obeying_process{};
                    ++left;
                }
                else
                    wrote = false;
            }
            else
                wrote = false;

            BOOST_TEST_REQUIRE(status() == m.status(now));
            BOOST_TEST_REQUIRE(published() == (wake ? 1 : 0));

            // The invariants, from what the server answers.
            const redis_server::reply s = client.execute(status_call());
            const std::uint64_t capacity_now = static_cast<std::uint64_t>(s.elements.at(1).integer);
            const std::uint64_t sum = static_cast<std::uint64_t>(s.elements.at(2).integer);
            BOOST_TEST_REQUIRE(
                (sum <= capacity_now || sum <= previous_sum)); // above only after a resize down
            std::vector<std::uint64_t> wants, targets;
            std::map<std::string, std::uint64_t> held;
            for (std::size_t i = 4; i + 5 < s.elements.size(); i += 6)
            {
                const std::string id = s.elements[i].text;
                const auto h = static_cast<std::uint64_t>(s.elements[i + 1].integer);
                const auto target = static_cast<std::uint64_t>(s.elements[i + 3].integer);
                wants.push_back(static_cast<std::uint64_t>(s.elements[i + 2].integer));
                targets.push_back(target);
                held[id] = h;
                const auto before = previous_held.find(id);
                BOOST_TEST_REQUIRE((before == previous_held.end() || h <= before->second || h <= target));
                const obeying_process& p = processes[id];
                BOOST_TEST_REQUIRE(p.in_use <= h); // what it uses is counted
            }
            if (wrote)
                BOOST_TEST_REQUIRE(joined(targets) == joined(fair_division(capacity_now, wants)));
            previous_sum = sum;
            previous_held = std::move(held);
            if (wrote)
                ++(wake ? woken : quiet);
            above_capacity += sum > capacity_now;
        }
    }
    BOOST_TEST_MESSAGE("woken " << woken << ", quiet " << quiet << ", above the capacity " << above_capacity
                                << ", expired " << expired << ", lost " << lost << ", left " << left
                                << ", resized " << resized);
    BOOST_TEST(std::min({woken, quiet, above_capacity, expired, lost, left, resized}) > 0);
}

BOOST_AUTO_TEST_SUITE_END()
