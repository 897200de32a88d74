// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#define BOOST_TEST_MODULE redis_fleet

// A fleet on one real server: 4 processes x 50 coroutines share a semaphore of 5 permits, each
// coroutine taking 1 or 2 permits for a few milliseconds. A checker proves from the server's own
// record that at no instant more than 5 permits were held, that grants followed the queue order,
// and that every coroutine was served exactly once; it is itself tested on bad histories.
//
// What is provable, and how. Every process has its own clock, but the server runs one command at
// a time: the order in which MONITOR shows the commands is one clock for the whole fleet, without
// skew (semaphore_history). On it the checker reads, per grant, the server's own events: the
// arrival (the waiter stored in the queue, or the grant itself if made at once), the grant (its
// field `#<id>` in meta written, with the fence) and the end of the hold (the field deleted). So:
// (a) Summing the permits of the holds over [grant, end) gives what the server counted as held
//     at every line; at most 5 everywhere is the fleet-wide limit itself, not an estimate. Each
//     coroutine also sends ECHO "fleet-start" once its acquire has completed and "fleet-end"
//     before it releases; both must fall strictly inside its hold, which proves that the
//     coroutine worked only while the server counted its permits (so its work, too, never
//     overlapped more than 5 permits), and that its release was not lost (the hold ended by the
//     release, after fleet-end, and the release reported success, not a lapsed lease).
// (b) Strict FIFO means a waiter is never served before one that arrived earlier: sorted by
//     arrival, the fences (INCR at each grant) must increase. A grant made at once on arrival
//     takes its fence at the arrival, and only when the queue is empty, so the rule covers it.
// (c) Each (process, coroutine) logs exactly one grant; the logged fences are distinct, each is
//     that of exactly one server grant with the same count, and the server made no other grant.
//
// A second fleet runs while another process grows and shrinks the capacity several times. The
// capacity in force is on the same record (each HSET of meta's field "capacity"), so the checker
// proves that no grant ever took the permits held above the capacity in force at that line (a
// shrink leaves its holders their permits: they may exceed it until they release, but nothing is
// granted meanwhile), that each resize that waited for the holders completed at a line where the
// permits held were within its capacity, and that every acquire completed exactly once: granted (on
// its own server grant, worked inside it, released) or refused with too_many_permits (it asked for
// more than the capacity then in force), nothing else.

#include <asio_sync/redis/semaphore.hpp>

#include "support/child_process.hpp"
#include "support/redis_client.hpp"
#include "support/redis_server.hpp"
#include "support/semaphore_history.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

BOOST_AUTO_TEST_SUITE(redis_fleet)

namespace {

namespace asio = boost::asio;
namespace redis = asio_sync::redis;
using asio_sync::test::capacity_change;
using asio_sync::test::child_process;
using asio_sync::test::options_for;
using asio_sync::test::pipe_link;
using asio_sync::test::redis_server;
using asio_sync::test::remote_hold;
using asio_sync::test::semaphore_history;
using namespace std::chrono_literals;

constexpr int process_count = 4;
constexpr int coroutine_count = 50;
constexpr std::size_t capacity = 5;
constexpr std::chrono::milliseconds lease{1000};
constexpr const char* semaphore_name = "fleet";

// What one coroutine logged, with the MONITOR positions of its markers (0 if unseen).
struct local_hold
{
    int process = 0;
    int coroutine = 0;
    std::size_t n = 0;
    std::uint64_t fence = 0;
    bool released = false; // its release reported success
    std::size_t start = 0;
    std::size_t end = 0;
};

struct fleet_log
{
    std::vector<remote_hold> remote;
    std::vector<local_hold> local;
};

// The violations of (a), (b) and (c) above in `log`, each as a sentence; none if it is correct.
std::vector<std::string> check_fleet(const fleet_log& log, int processes, int coroutines, std::size_t limit)
{
    std::vector<std::string> violations;
    auto violation = [&](const std::string& what) { violations.push_back(what); };

    // (a) The server's count over time: +n at a grant, -n at the end of the hold.
    std::map<std::size_t, long long> changes;
    for (const remote_hold& h : log.remote)
    {
        if (h.grant == 0 || h.end == 0 || h.end <= h.grant)
            violation("hold " + h.id + " has no end after its grant");
        changes[h.grant] += static_cast<long long>(h.n);
        if (h.end != 0)
            changes[h.end] -= static_cast<long long>(h.n);
    }
    long long held = 0;
    for (const auto& [position, change] : changes)
    {
        held += change;
        if (held > static_cast<long long>(limit))
        {
            violation(std::to_string(held) + " permits held at line " + std::to_string(position));
            break;
        }
    }

    // (b) Sorted by arrival, the fences increase.
    std::vector<remote_hold> by_arrival = log.remote;
    std::sort(by_arrival.begin(), by_arrival.end(),
              [](const remote_hold& a, const remote_hold& b) { return a.arrival < b.arrival; });
    for (std::size_t i = 0; i < by_arrival.size(); ++i)
    {
        if (by_arrival[i].arrival == 0 || by_arrival[i].arrival > by_arrival[i].grant)
            violation("hold " + by_arrival[i].id + " was granted without an earlier arrival");
        if (i > 0 && by_arrival[i].fence <= by_arrival[i - 1].fence)
            violation("hold " + by_arrival[i].id + " arrived after " + by_arrival[i - 1].id +
                      " but was granted before it");
    }

    // (c) Every coroutine once, each on its own server grant, inside it.
    std::map<std::uint64_t, const remote_hold*> remote_by_fence;
    for (const remote_hold& h : log.remote)
        if (!remote_by_fence.emplace(h.fence, &h).second)
            violation("fence " + std::to_string(h.fence) + " granted twice");
    std::set<std::pair<int, int>> served;
    std::set<std::uint64_t> fences;
    for (const local_hold& l : log.local)
    {
        const std::string who = std::to_string(l.process) + "/" + std::to_string(l.coroutine);
        if (!served.emplace(l.process, l.coroutine).second)
            violation("coroutine " + who + " served twice");
        if (!fences.insert(l.fence).second)
            violation("fence " + std::to_string(l.fence) + " held by two coroutines");
        if (!l.released)
            violation("coroutine " + who + " lost its permit before its release");
        const auto remote = remote_by_fence.find(l.fence);
        if (remote == remote_by_fence.end())
        {
            violation("coroutine " + who + " holds fence " + std::to_string(l.fence) +
                      ", which the server never granted");
            continue;
        }
        const remote_hold& h = *remote->second;
        if (h.n != l.n)
            violation("coroutine " + who + " holds " + std::to_string(l.n) + " permits, granted " +
                      std::to_string(h.n));
        if (!(h.grant < l.start && l.start < l.end && l.end < h.end))
            violation("coroutine " + who + " worked outside its hold");
    }
    for (int p = 0; p < processes; ++p)
        for (int c = 0; c < coroutines; ++c)
            if (!served.count({p, c}))
                violation("coroutine " + std::to_string(p) + "/" + std::to_string(c) + " never served");
    if (log.remote.size() != log.local.size())
        violation(std::to_string(log.remote.size()) + " grants for " + std::to_string(log.local.size()) +
                  " coroutines");
    return violations;
}

std::string describe(const std::vector<std::string>& violations)
{
    std::string text;
    for (const std::string& v : violations)
        text += "\n  " + v;
    return text;
}

std::string marker(const char* what, int process, int coroutine)
{
    return std::string(what) + " " + std::to_string(process) + " " + std::to_string(coroutine);
}

// One coroutine of a worker: acquires, marks the start, holds for a few milliseconds, marks the
// end, releases. Returns its log line "<process> <coroutine> <n> <fence> <released>".
asio::awaitable<std::string> hold_once(redis::connection& conn, redis::semaphore& sem, int process,
                                       int coroutine)
{
    // Some take 2 permits, so that a head of n > 1 waits for room while 1-permit waiters queue
    // behind it.
    const std::size_t n = coroutine % 10 == 3 ? 2 : 1;
    std::minstd_rand random(static_cast<unsigned>(process * coroutine_count + coroutine + 1));
    const auto hold_time = std::chrono::microseconds(500 + random() % 3500);

    redis::semaphore::permit permit = co_await sem.async_acquire_permit(n, asio::use_awaitable);
    const std::uint64_t fence = permit.fencing_token();
    // Vectors, not braced lists: g++ 12 miscompiles an initializer_list inside a coroutine.
    const std::vector<std::string> start{"ECHO", marker("fleet-start", process, coroutine)};
    const std::vector<std::string> end{"ECHO", marker("fleet-end", process, coroutine)};
    co_await conn.async_execute(start, asio::use_awaitable);
    asio::steady_timer timer(co_await asio::this_coro::executor, hold_time);
    co_await timer.async_wait(asio::use_awaitable);
    co_await conn.async_execute(end, asio::use_awaitable);
    const auto released = co_await permit.async_release(asio::as_tuple(asio::use_awaitable));
    std::ostringstream line;
    line << process << ' ' << coroutine << ' ' << n << ' ' << fence << ' ' << (std::get<0>(released) ? 0 : 1);
    co_return line.str();
}

// A worker process: waits for "go", runs its coroutines, marks its end with ECHO "fleet-done", and
// writes the coroutines' log lines to the test.
int run_worker(std::uint16_t port, int process, pipe_link& link)
{
    if (link.receive() != "go")
        return 2;
    asio::io_context io;
    redis::connection conn(io, options_for(port));
    redis::semaphore sem(conn, semaphore_name, capacity, lease);
    std::vector<std::string> lines;
    bool failed = false;
    for (int c = 0; c < coroutine_count; ++c)
    {
        asio::co_spawn(io, hold_once(conn, sem, process, c), [&](std::exception_ptr e, std::string line) {
            failed = failed || e;
            lines.push_back(std::move(line));
            if (lines.size() == coroutine_count)
                conn.async_execute({"ECHO", marker("fleet-done", process, 0)},
                                   [&](boost::system::error_code, redis::reply) { io.stop(); });
        });
    }
    io.run();
    for (const std::string& line : lines)
        link.send(line);
    return failed ? 1 : 0;
}

// A correct log of 2 processes x 3 coroutines and 5 permits: all arrive, five are granted and
// hold together, the sixth is granted after the first release.
fleet_log correct_log()
{
    fleet_log log;
    for (std::size_t i = 0; i < 6; ++i)
    {
        const std::size_t grant = i < 5 ? 10 + i : 45;
        const std::size_t end = i < 5 ? 40 + i : 48;
        log.remote.push_back({"id" + std::to_string(i), 1, i + 1, 1 + i, grant, end});
        const int who = static_cast<int>(i);
        log.local.push_back({who / 3, who % 3, 1, i + 1, true, i < 5 ? 20 + i : 46, i < 5 ? 30 + i : 47});
    }
    return log;
}

// ---- the fleet under resizes

constexpr int resized_process_count = 3;
constexpr int resized_coroutine_count = 30;
constexpr std::size_t first_capacity = 5;
// Each shrink waits until more than its capacity is held, so that it waits for the holders.
constexpr std::size_t resizes[] = {8, 3, 6, 2, 7, 4};
constexpr const char* resized_name = "resized-fleet";
constexpr const char* stop_key = "resized-fleet-stop";

// One acquire of a worker, as it logged it: granted (and released), or refused with too_many_permits.
struct attempt
{
    int process = 0;
    int coroutine = 0; // -1: the worker's first acquire, before its coroutines start
    int round = 0;
    std::size_t n = 0;
    bool granted = false;
    bool refused = false; // too_many_permits
    std::uint64_t fence = 0;
    bool released = false;
    std::size_t start = 0; // the MONITOR positions of its markers (0 if unseen)
    std::size_t end = 0;
};

// A resize that waited for the holders: its capacity and the line of its completion marker.
struct resize_done
{
    std::size_t capacity = 0;
    std::size_t position = 0;
};

struct resized_log
{
    std::vector<remote_hold> remote;
    std::vector<capacity_change> capacities;
    std::vector<resize_done> resizes;
    std::vector<attempt> local;
};

// The violations of the rules above in `log`, each as a sentence; none if it is correct. `rounds`
// is the number of acquires each (process, coroutine) logged it made.
std::vector<std::string> check_resized_fleet(const resized_log& log,
                                             const std::map<std::pair<int, int>, int>& rounds)
{
    std::vector<std::string> violations;
    auto violation = [&](const std::string& what) { violations.push_back(what); };

    // The server's record in line order: at a line, the capacity first, then ends, then grants.
    struct event
    {
        std::size_t position;
        int order; // 0 capacity, 1 end, 2 grant
        long long value;
        const remote_hold* hold;
    };
    std::vector<event> events;
    for (const capacity_change& c : log.capacities)
        events.push_back({c.position, 0, static_cast<long long>(c.capacity), nullptr});
    for (const remote_hold& h : log.remote)
    {
        if (h.grant == 0 || h.end == 0 || h.end <= h.grant)
            violation("hold " + h.id + " has no end after its grant");
        events.push_back({h.grant, 2, static_cast<long long>(h.n), &h});
        if (h.end != 0)
            events.push_back({h.end, 1, -static_cast<long long>(h.n), &h});
    }
    std::sort(events.begin(), events.end(), [](const event& a, const event& b) {
        return std::tie(a.position, a.order) < std::tie(b.position, b.order);
    });
    long long held = 0;
    long long in_force = 0;
    auto done = log.resizes.begin();
    for (const event& e : events)
    {
        for (; done != log.resizes.end() && done->position < e.position; ++done)
            if (held > static_cast<long long>(done->capacity))
                violation("the resize to " + std::to_string(done->capacity) + " completed at line " +
                          std::to_string(done->position) + " with " + std::to_string(held) + " held");
        if (e.order == 0)
            in_force = e.value;
        else
            held += e.value;
        if (e.order == 2 && held > in_force)
            violation("the grant of " + e.hold->id + " at line " + std::to_string(e.position) + " took " +
                      std::to_string(held) + " held above the capacity " + std::to_string(in_force));
    }
    for (; done != log.resizes.end(); ++done)
        if (held > static_cast<long long>(done->capacity))
            violation("the resize to " + std::to_string(done->capacity) + " completed with " +
                      std::to_string(held) + " held");

    // Sorted by arrival, the fences increase.
    std::vector<remote_hold> by_arrival = log.remote;
    std::sort(by_arrival.begin(), by_arrival.end(),
              [](const remote_hold& a, const remote_hold& b) { return a.arrival < b.arrival; });
    for (std::size_t i = 1; i < by_arrival.size(); ++i)
        if (by_arrival[i].fence <= by_arrival[i - 1].fence)
            violation("hold " + by_arrival[i].id + " arrived after " + by_arrival[i - 1].id +
                      " but was granted before it");

    // Every acquire once, granted on its own server grant and worked inside it, or refused.
    std::map<std::uint64_t, const remote_hold*> remote_by_fence;
    for (const remote_hold& h : log.remote)
        if (!remote_by_fence.emplace(h.fence, &h).second)
            violation("fence " + std::to_string(h.fence) + " granted twice");
    std::set<std::tuple<int, int, int>> completed;
    std::size_t granted = 0;
    for (const attempt& a : log.local)
    {
        const std::string who =
            std::to_string(a.process) + "/" + std::to_string(a.coroutine) + "/" + std::to_string(a.round);
        if (!completed.emplace(a.process, a.coroutine, a.round).second)
            violation("acquire " + who + " completed twice");
        if (a.granted == a.refused)
            violation("acquire " + who + " neither granted nor refused for its size");
        if (!a.granted)
            continue;
        ++granted;
        if (!a.released)
            violation("acquire " + who + " lost its permit before its release");
        const auto remote = remote_by_fence.find(a.fence);
        if (remote == remote_by_fence.end())
        {
            violation("acquire " + who + " holds fence " + std::to_string(a.fence) + ", never granted");
            continue;
        }
        const remote_hold& h = *remote->second;
        if (h.n != a.n)
            violation("acquire " + who + " holds " + std::to_string(a.n) + " permits, granted " +
                      std::to_string(h.n));
        if (!(h.grant < a.start && a.start < a.end && a.end < h.end))
            violation("acquire " + who + " worked outside its hold");
    }
    for (const auto& [who, count] : rounds)
        for (int r = 0; r < count; ++r)
            if (!completed.count({who.first, who.second, r}))
                violation("acquire " + std::to_string(who.first) + "/" + std::to_string(who.second) + "/" +
                          std::to_string(r) + " never completed");
    if (log.remote.size() != granted)
        violation(std::to_string(log.remote.size()) + " grants for " + std::to_string(granted) +
                  " granted acquires");
    return violations;
}

// One coroutine of a worker of the resized fleet: rounds of acquire, hold, release, `rounds` of
// them, or (0) until the stop key is set (at least four), each logged as "<process> <coroutine>
// <round> <n> <outcome> <fence>", outcome 0 granted and released, 1 refused with
// too_many_permits, 2 anything else.
asio::awaitable<std::vector<std::string>> hold_rounds(redis::connection& conn, redis::semaphore& sem,
                                                      int process, int coroutine, int rounds = 0)
{
    std::vector<std::string> lines;
    std::minstd_rand random(static_cast<unsigned>(process * resized_coroutine_count + coroutine + 2));
    for (int round = 0; rounds == 0 || round < rounds; ++round)
    {
        if (rounds == 0 && round >= 4)
        {
            const std::vector<std::string> get{"GET", stop_key};
            const redis::reply stop = co_await conn.async_execute(get, asio::use_awaitable);
            if (stop.kind != redis::reply_kind::nil)
                break;
        }
        const int kind = (coroutine + 1 + round) % 11;
        const std::size_t n = kind == 7 ? 3 : kind % 4 == 3 ? 2 : 1;
        auto [ec, permit] = co_await sem.async_acquire_permit(n, asio::as_tuple(asio::use_awaitable));
        const std::string who =
            std::to_string(process) + " " + std::to_string(coroutine) + " " + std::to_string(round);
        int outcome = ec == asio_sync::error::too_many_permits ? 1 : 2;
        if (!ec)
        {
            const std::vector<std::string> start{"ECHO", "rf-start " + who};
            const std::vector<std::string> end{"ECHO", "rf-end " + who};
            co_await conn.async_execute(start, asio::use_awaitable);
            asio::steady_timer timer(co_await asio::this_coro::executor,
                                     std::chrono::microseconds(300 + random() % 2000));
            co_await timer.async_wait(asio::use_awaitable);
            co_await conn.async_execute(end, asio::use_awaitable);
            const auto released = co_await permit.async_release(asio::as_tuple(asio::use_awaitable));
            outcome = std::get<0>(released) ? 2 : 0;
        }
        lines.push_back(who + " " + std::to_string(n) + " " + std::to_string(outcome) + " " +
                        std::to_string(permit.fencing_token()));
    }
    co_return lines;
}

// A worker of the resized fleet: on "go" it opens the semaphore and acquires once (coroutine -1), so
// that it has been granted before any resize, says "ready" and waits for "start" (blocking its
// context: it holds nothing meanwhile), then runs its coroutines; then it writes their log lines and
// "end".
int run_resized_worker(std::uint16_t port, int process, pipe_link& link)
{
    if (link.receive() != "go")
        return 2;
    asio::io_context io;
    redis::connection conn(io, options_for(port));
    redis::semaphore sem(conn, resized_name, first_capacity, lease);
    std::vector<std::string> lines;
    bool failed = false;
    int running = resized_coroutine_count + 1;
    const auto collect = [&](std::exception_ptr e, std::vector<std::string> logged) {
        failed = failed || e;
        lines.insert(lines.end(), logged.begin(), logged.end());
        if (--running == 0)
            io.stop();
    };
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<std::vector<std::string>> {
            std::vector<std::string> first = co_await hold_rounds(conn, sem, process, -1, 1);
            if (!link.send("ready") || link.receive() != "start")
                throw std::runtime_error("no start");
            for (int c = 0; c < resized_coroutine_count; ++c)
                asio::co_spawn(io, hold_rounds(conn, sem, process, c), collect);
            co_return first;
        },
        collect);
    io.run();
    for (const std::string& line : lines)
        link.send(line);
    link.send("end");
    return failed ? 1 : 0;
}

// The resizer: on "go", each resize in turn, marked with ECHO "resize-start <c>" and "resize-done
// <c>"; before a shrink it waits until more than the new capacity is held. Then it sets the stop key.
int run_resizer(std::uint16_t port, pipe_link& link)
{
    if (link.receive() != "go")
        return 2;
    asio::io_context io;
    redis::connection conn(io, options_for(port));
    redis::semaphore sem(conn, resized_name, first_capacity, lease);
    bool failed = false;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            std::size_t current = first_capacity;
            for (const std::size_t to : resizes)
            {
                while (to < current && (co_await sem.async_status(asio::use_awaitable)).held <= to)
                {
                    asio::steady_timer pause(co_await asio::this_coro::executor, 1ms);
                    co_await pause.async_wait(asio::use_awaitable);
                }
                const std::vector<std::string> start{"ECHO", "resize-start " + std::to_string(to)};
                const std::vector<std::string> done{"ECHO", "resize-done " + std::to_string(to)};
                co_await conn.async_execute(start, asio::use_awaitable);
                co_await sem.async_set_capacity(to, asio::use_awaitable);
                co_await conn.async_execute(done, asio::use_awaitable);
                current = to;
                asio::steady_timer pause(co_await asio::this_coro::executor, 20ms);
                co_await pause.async_wait(asio::use_awaitable);
            }
            const std::vector<std::string> stop{"SET", stop_key, "1"};
            co_await conn.async_execute(stop, asio::use_awaitable);
        },
        [&](std::exception_ptr e) {
            failed = e != nullptr;
            io.stop();
        });
    io.run();
    return failed ? 1 : 0;
}

// A correct log of one process x 2 coroutines: capacity 2, resized to 1 while 2 are held (the
// resize completes after a release), then a refused acquire of 2 and a grant of 1.
resized_log correct_resized_log()
{
    resized_log log;
    log.capacities = {{5, 2}, {20, 1}};
    log.remote = {{"a", 1, 1, 4, 5, 30}, {"b", 1, 2, 6, 7, 40}, {"c", 1, 3, 41, 42, 50}};
    log.resizes = {{1, 35}};
    log.local = {{0, 0, 0, 1, true, false, 1, true, 8, 25},
                 {0, 1, 0, 1, true, false, 2, true, 9, 36},
                 {0, 0, 1, 2, false, true, 0, false, 0, 0},
                 {0, 0, 2, 1, true, false, 3, true, 43, 45}};
    return log;
}

} // namespace

BOOST_AUTO_TEST_CASE(the_resize_checker_accepts_a_correct_log_and_finds_each_violation)
{
    const std::map<std::pair<int, int>, int> rounds{{{0, 0}, 3}, {{0, 1}, 1}};
    BOOST_TEST(check_resized_fleet(correct_resized_log(), rounds).empty(),
               describe(check_resized_fleet(correct_resized_log(), rounds)));

    resized_log beyond = correct_resized_log();
    beyond.remote[2].grant = 32; // granted while 2 were held, after the shrink to 1
    beyond.remote[2].arrival = 31;
    beyond.local[3].start = 33;
    beyond.local[3].end = 34;
    BOOST_TEST(describe(check_resized_fleet(beyond, rounds)) ==
               "\n  the grant of c at line 32 took 2 held above the capacity 1"
               "\n  the resize to 1 completed at line 35 with 2 held");

    resized_log early = correct_resized_log();
    early.resizes[0].position = 28; // completed while both were still held
    BOOST_TEST(describe(check_resized_fleet(early, rounds)) ==
               "\n  the resize to 1 completed at line 28 with 2 held");

    resized_log twice = correct_resized_log();
    twice.local[2].round = 0;
    BOOST_TEST(describe(check_resized_fleet(twice, rounds)) ==
               "\n  acquire 0/0/0 completed twice\n  acquire 0/0/1 never completed");

    resized_log neither = correct_resized_log();
    neither.local[2].refused = false;
    BOOST_TEST(describe(check_resized_fleet(neither, rounds)) ==
               "\n  acquire 0/0/1 neither granted nor refused for its size");
}

BOOST_AUTO_TEST_CASE(a_busy_fleet_never_exceeds_the_capacity_in_force_while_it_is_resized)
{
    redis_server server;
    redis_server::client monitor(server);
    BOOST_REQUIRE(monitor.command({"MONITOR"}) == "OK");

    std::vector<std::unique_ptr<child_process>> workers;
    for (int p = 0; p < resized_process_count; ++p)
        workers.push_back(std::make_unique<child_process>(
            [port = server.port(), p](pipe_link& link) { return run_resized_worker(port, p, link); }));
    child_process resizer([port = server.port()](pipe_link& link) { return run_resizer(port, link); });

    for (auto& w : workers)
        BOOST_REQUIRE(w->link().send("go"));
    for (auto& w : workers)
        BOOST_REQUIRE(w->link().receive() == "ready");
    for (auto& w : workers)
        BOOST_REQUIRE(w->link().send("start"));
    BOOST_REQUIRE(resizer.link().send("go"));
    BOOST_TEST(resizer.wait() == 0);
    std::vector<std::string> lines;
    for (auto& w : workers)
    {
        for (std::string line = w->link().receive(); line != "end"; line = w->link().receive())
            lines.push_back(line);
        BOOST_TEST(w->wait() == 0);
    }

    // Everyone is done: the record is complete up to a last marker. Read it.
    redis_server::client(server).command({"ECHO", "rf-record-end"});
    semaphore_history history(resized_name);
    std::map<std::tuple<int, int, int>, std::pair<std::size_t, std::size_t>> markers; // start, end
    resized_log log;
    std::size_t resizes_started = 0;
    for (bool ended = false; !ended;)
    {
        // A silent server fails the read after the client's timeout.
        const std::optional<asio_sync::test::monitor_line> line = history.add(monitor.read().text);
        if (!line || line->args.size() != 2 || line->args[0] != "ECHO")
            continue;
        std::istringstream words(line->args[1]);
        std::string what;
        words >> what;
        int p = 0;
        int c = 0;
        int r = 0;
        std::size_t to = 0;
        if (what == "rf-start" && words >> p >> c >> r)
            markers[{p, c, r}].first = history.position();
        else if (what == "rf-end" && words >> p >> c >> r)
            markers[{p, c, r}].second = history.position();
        else if (what == "resize-start")
            ++resizes_started;
        else if (what == "resize-done" && words >> to)
            log.resizes.push_back({to, history.position()});
        ended = what == "rf-record-end";
    }

    std::map<std::pair<int, int>, int> rounds;
    std::size_t refused = 0;
    for (const std::string& text : lines)
    {
        std::istringstream words(text);
        attempt a;
        int outcome = 0;
        BOOST_REQUIRE(words >> a.process >> a.coroutine >> a.round >> a.n >> outcome >> a.fence);
        a.granted = a.released = outcome == 0;
        a.refused = outcome == 1;
        refused += a.refused ? 1 : 0;
        std::tie(a.start, a.end) = markers[{a.process, a.coroutine, a.round}];
        rounds[{a.process, a.coroutine}] = std::max(rounds[{a.process, a.coroutine}], a.round + 1);
        log.local.push_back(a);
    }
    log.remote = history.holds();
    log.capacities = history.capacities();

    const std::vector<std::string> violations = check_resized_fleet(log, rounds);
    BOOST_TEST(violations.empty(), "violations:" << describe(violations));
    BOOST_TEST(resizes_started == std::size(resizes));
    BOOST_TEST(log.capacities.size() == 1 + std::size(resizes)); // the declaration, then each resize
    BOOST_TEST_MESSAGE("resized fleet: " << log.local.size() << " acquires, " << log.remote.size()
                                         << " granted, " << refused << " refused for their size");
}

BOOST_AUTO_TEST_CASE(the_checker_accepts_a_correct_log_and_finds_each_violation)
{
    BOOST_TEST(check_fleet(correct_log(), 2, 3, 5).empty());

    fleet_log six_overlapping = correct_log();
    six_overlapping.remote[5].grant = 35; // before any release
    six_overlapping.local[5].start = 36;
    six_overlapping.local[5].end = 37;
    BOOST_TEST(describe(check_fleet(six_overlapping, 2, 3, 5)) == "\n  6 permits held at line 35");

    fleet_log out_of_order = correct_log();
    std::swap(out_of_order.remote[1].fence, out_of_order.remote[2].fence);
    std::swap(out_of_order.local[1].fence, out_of_order.local[2].fence);
    BOOST_TEST(describe(check_fleet(out_of_order, 2, 3, 5)) ==
               "\n  hold id2 arrived after id1 but was granted before it");

    fleet_log missing = correct_log();
    missing.local.erase(missing.local.begin() + 4);
    BOOST_TEST(describe(check_fleet(missing, 2, 3, 5)) ==
               "\n  coroutine 1/1 never served\n  6 grants for 5 coroutines");

    fleet_log twice = correct_log();
    twice.local[4].coroutine = 0;
    BOOST_TEST(describe(check_fleet(twice, 2, 3, 5)) ==
               "\n  coroutine 1/0 served twice\n  coroutine 1/1 never served");

    fleet_log outside = correct_log();
    outside.local[0].end = 41; // after its release
    BOOST_TEST(describe(check_fleet(outside, 2, 3, 5)) == "\n  coroutine 0/0 worked outside its hold");

    fleet_log lost = correct_log();
    lost.local[2].released = false;
    BOOST_TEST(describe(check_fleet(lost, 2, 3, 5)) ==
               "\n  coroutine 0/2 lost its permit before its release");
}

BOOST_AUTO_TEST_CASE(four_processes_share_five_permits_in_queue_order)
{
    redis_server server;
    redis_server::client monitor(server);
    BOOST_REQUIRE(monitor.command({"MONITOR"}) == "OK");

    // Forked before this process has any thread; each worker makes its own io_context.
    std::vector<std::unique_ptr<child_process>> workers;
    for (int p = 0; p < process_count; ++p)
        workers.push_back(std::make_unique<child_process>(
            [port = server.port(), p](pipe_link& link) { return run_worker(port, p, link); }));
    for (auto& w : workers)
        BOOST_REQUIRE(w->link().send("go"));

    semaphore_history history(semaphore_name);
    std::map<std::pair<int, int>, std::pair<std::size_t, std::size_t>> markers; // start, end
    for (int done = 0; done < process_count;)
    {
        // A silent server fails the read after the client's timeout.
        const std::optional<asio_sync::test::monitor_line> line = history.add(monitor.read().text);
        const std::size_t position = history.position();
        if (!line || line->args.size() != 2 || line->args[0] != "ECHO")
            continue;
        std::istringstream words(line->args[1]);
        std::string what;
        int p = 0;
        int c = 0;
        words >> what >> p >> c;
        if (what == "fleet-start")
            markers[{p, c}].first = position;
        else if (what == "fleet-end")
            markers[{p, c}].second = position;
        else if (what == "fleet-done")
            ++done;
    }

    fleet_log log;
    log.remote = history.holds();
    for (auto& w : workers)
    {
        for (int c = 0; c < coroutine_count; ++c)
        {
            std::istringstream words(w->link().receive());
            local_hold l;
            int released = 0;
            BOOST_REQUIRE(words >> l.process >> l.coroutine >> l.n >> l.fence >> released);
            l.released = released == 1;
            std::tie(l.start, l.end) = markers[{l.process, l.coroutine}];
            log.local.push_back(l);
        }
        BOOST_TEST(w->wait() == 0);
    }

    const std::vector<std::string> violations = check_fleet(log, process_count, coroutine_count, capacity);
    BOOST_TEST(violations.empty(), "violations:" << describe(violations));
    BOOST_TEST(log.remote.size() == std::size_t(process_count * coroutine_count));
}

BOOST_AUTO_TEST_SUITE_END()
