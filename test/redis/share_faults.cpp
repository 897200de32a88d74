// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#define BOOST_TEST_MODULE redis_share_faults
#define BOOST_TEST_NO_MAIN // main below also runs the child role

// The leased share under the faults a fleet sees, with real processes: three children of this test,
// each with a share_semaphore of one name (capacity 4, a lease of 1 s, a refresh every 100 ms) and
// three coroutines that acquire a permit, hold it 20 ms and release it, in a loop. Each child logs
// every grant, release and loss it is told of to a file, one write(2) a line (so that a line
// written survives a kill -9), in CLOCK_MONOTONIC nanoseconds, which every process of the machine
// shares. After the run the test puts every hold on one timeline and counts the holders at each
// instant:
// - believed: a holder counts from its grant until it released or its process was told of a loss
//   (async_wait_lost ran), whichever came first; one granted while valid_for() read 0 knew at
//   once and never counts. The rule: every holder is told before Redis can give the capacity to
//   anyone else, so at no instant do more than the capacity believe.
// - claimed: a belief also ends when the validity the holder read from valid_for() ends (at its
//   grant, or at its release if still valid then). A stopped process cannot be told anything: its
//   holders believe until it runs again, but claim nothing beyond the share's lease.
// The children's outcomes are counted exactly: every acquire is granted, or aborted by the stop.
// No duration is compared with a threshold: the figures (the time a killed process' share takes to
// come back, the overlap after a restart without persistence) are reported, and their order with
// the lease checked. The last case runs in one process: a refresh delivered late by a stuck
// middlebox, and what Redis counts after it.

#include <asio_sync/redis/share_semaphore.hpp>

#include "support/child_process.hpp"
#include "support/delaying_proxy.hpp"
#include "support/io_threads.hpp"
#include "support/redis_client.hpp"
#include "support/redis_server.hpp"
#include "support/semaphore_timeline.hpp"
#include "support/tcp_proxy.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/test/unit_test.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

BOOST_AUTO_TEST_SUITE(redis_share_faults)

namespace {

namespace asio = boost::asio;
namespace redis = asio_sync::redis;
using asio_sync::test::child_process;
using asio_sync::test::delaying_proxy;
using asio_sync::test::eventually;
using asio_sync::test::hold;
using asio_sync::test::is_ready;
using asio_sync::test::milliseconds;
using asio_sync::test::options_for;
using asio_sync::test::pipe_link;
using asio_sync::test::redis_server;
using asio_sync::test::running_io;
using asio_sync::test::tcp_proxy;
using asio_sync::test::wait;
using clock_type = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr std::size_t capacity = 4;
constexpr int processes = 3;
constexpr int holders = 3; // per process: 9 against 4
constexpr std::chrono::milliseconds lease = 1000ms;
constexpr std::chrono::milliseconds refresh = 100ms;
constexpr std::chrono::milliseconds hold_time = 20ms;
// Wider than the default (25 ms): the loss handler of a process runs before another process's grant
// as long as the scheduler is late by less than the margin, and this machine is shared.
constexpr std::chrono::milliseconds margin = 100ms;
const std::string name = "faults";

std::int64_t ns_of(clock_type::time_point t)
{
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

clock_type::time_point from_ns(std::int64_t ns)
{
    return clock_type::time_point(
        std::chrono::duration_cast<clock_type::duration>(std::chrono::nanoseconds(ns)));
}

// A dead link is found within a few hundred milliseconds.
redis::connection_options quick_links(std::uint16_t port)
{
    redis::connection_options options = options_for(port);
    options.health_check_interval = 200ms;
    options.connect_timeout = 1000ms;
    return options;
}

// ---- the child role

constexpr const char* holder_role = "--share-holder";

// Appends lines to a file, one write(2) each.
class event_log
{
public:
    explicit event_log(const std::string& path)
        : fd_(::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644))
    {
    }

    event_log(const event_log&) = delete;
    event_log& operator=(const event_log&) = delete;

    ~event_log() { ::close(fd_); }

    void write(std::string line)
    {
        line += '\n';
        if (::write(fd_, line.data(), line.size()) != static_cast<ssize_t>(line.size()))
            std::abort();
    }

private:
    int fd_;
};

struct outcomes
{
    int granted = 0, aborted = 0, timed_out = 0, other = 0;
    bool ready = false; // "ready" written
};

// Logs "g <holder> <n> <t> <valid_for> <fence>" at each grant and "r <holder> <n> <t> <valid_for>"
// after each release (valid_for read just before it).
asio::awaitable<void> hold_loop(redis::share_semaphore& sem, event_log& log, int holder, const bool& stopping,
                                outcomes& counted, pipe_link& link)
{
    constexpr auto as_result = asio::as_tuple(asio::use_awaitable);
    asio::steady_timer timer(co_await asio::this_coro::executor);
    int next = 0;
    while (!stopping) // set while this waits
    {
        const int n = next++;
        auto [ec, permit] =
            co_await sem.async_acquire_permit_for(1, asio_sync::test::redis_wait_limit, as_result);
        const clock_type::time_point granted = clock_type::now();
        if (ec)
        {
            if (ec == asio::error::operation_aborted)
                ++counted.aborted;
            else if (ec == asio_sync::error::timed_out)
                ++counted.timed_out;
            else
                ++counted.other;
            timer.expires_after(hold_time);
            co_await timer.async_wait(as_result);
            continue;
        }
        ++counted.granted;
        if (!std::exchange(counted.ready, true))
            link.send("ready");
        log.write("g " + std::to_string(holder) + " " + std::to_string(n) + " " +
                  std::to_string(ns_of(granted)) + " " +
                  std::to_string(std::chrono::nanoseconds(sem.valid_for()).count()) + " " +
                  std::to_string(sem.state().fence));
        timer.expires_after(hold_time);
        co_await timer.async_wait(as_result);
        const clock_type::duration valid = sem.valid_for();
        permit.release();
        log.write("r " + std::to_string(holder) + " " + std::to_string(n) + " " +
                  std::to_string(ns_of(clock_type::now())) + " " +
                  std::to_string(std::chrono::nanoseconds(valid).count()));
    }
}

// Logs "l <t>" each time the process is told its share was lost, then waits for a share again.
asio::awaitable<void> watch_losses(redis::share_semaphore& sem, event_log& log,
                                   asio::cancellation_signal& stop)
{
    constexpr auto as_result = asio::as_tuple(asio::use_awaitable);
    asio::steady_timer timer(co_await asio::this_coro::executor);
    for (;;)
    {
        auto [ec] = co_await sem.async_wait_lost(asio::bind_cancellation_slot(stop.slot(), as_result));
        if (ec)
            co_return;
        log.write("l " + std::to_string(ns_of(clock_type::now())));
        // The event stays set until a share is added again.
        while (sem.state().share == 0 || sem.valid_for() == clock_type::duration::zero())
        {
            timer.expires_after(5ms);
            auto [cancelled] =
                co_await timer.async_wait(asio::bind_cancellation_slot(stop.slot(), as_result));
            if (cancelled)
                co_return;
        }
    }
}

// Holds permits of `name` until the test writes a line, logging to `path` (and "s <t> <share>
// <fence>" at each change of the share); writes "ready" at its first grant and, at the end,
// "done <granted> <aborted> <timed_out> <other>".
int hold_in_child(std::uint16_t port, const std::string& path, pipe_link& link)
{
    event_log log(path);
    asio::io_context io;
    redis::connection conn(io, quick_links(port));
    redis::share_semaphore sem(conn, name, capacity, redis::share_options{lease, margin, refresh});
    sem.set_listener([&](const redis::share_state& s) {
        log.write("s " + std::to_string(ns_of(clock_type::now())) + " " + std::to_string(s.share) + " " +
                  std::to_string(s.fence));
    });
    bool stopping = false;
    outcomes counted;
    asio::cancellation_signal stop;
    int running = holders;
    for (int i = 0; i < holders; ++i)
        asio::co_spawn(io, hold_loop(sem, log, i, stopping, counted, link), [&](std::exception_ptr e) {
            if (e)
                ++counted.other;
            if (--running == 0)
            {
                sem.close();
                conn.close();
                link.send("done " + std::to_string(counted.granted) + " " + std::to_string(counted.aborted) +
                          " " + std::to_string(counted.timed_out) + " " + std::to_string(counted.other));
                io.stop();
            }
        });
    asio::co_spawn(io, watch_losses(sem, log, stop), asio::detached);
    asio::posix::stream_descriptor in(io, ::dup(STDIN_FILENO));
    asio::streambuf line;
    asio::async_read_until(in, line, '\n', [&](boost::system::error_code, std::size_t) {
        stopping = true;
        sem.cancel();
        stop.emit(asio::cancellation_type::all);
    });
    io.run();
    return 0;
}

// ---- the test's side

// A command as the client sends it (RESP).
std::string resp(const std::vector<std::string>& args)
{
    std::string out = "*" + std::to_string(args.size()) + "\r\n";
    for (const std::string& a : args)
        out += "$" + std::to_string(a.size()) + "\r\n" + a + "\r\n";
    return out;
}

// The id of the process whose share has `fence`, as the library's status lists it.
std::string id_of(const redis_server& server, std::uint64_t fence)
{
    const redis_server::reply status =
        server.execute({"FCALL_RO", "asio_sync_share_v1_status", "1", "asio_sync:{late}:share"});
    for (std::size_t i = 4; i + 5 < status.elements.size(); i += 6)
        if (static_cast<std::uint64_t>(status.elements[i + 5].integer) == fence)
            return status.elements[i].text;
    return {};
}

// What one child logged.
struct process_log
{
    struct held
    {
        clock_type::time_point granted;
        clock_type::duration valid_at_grant{};
        std::uint64_t fence = 0;
        std::optional<clock_type::time_point> released;
        clock_type::duration valid_at_release{};
    };
    std::map<std::pair<int, int>, held> holds; // by holder and number
    std::vector<clock_type::time_point> told;
    std::vector<std::pair<clock_type::time_point, std::size_t>> shares;
    std::vector<std::uint64_t> fences; // of the shares, in order
};

process_log read_log(const std::string& path)
{
    process_log out;
    std::ifstream in(path);
    for (std::string line; std::getline(in, line);)
    {
        std::istringstream words(line);
        char kind = 0;
        words >> kind;
        if (kind == 'g' || kind == 'r')
        {
            int holder = 0, n = 0;
            std::int64_t t = 0, valid = 0;
            words >> holder >> n >> t >> valid;
            process_log::held& h = out.holds[{holder, n}];
            if (kind == 'g')
            {
                h.granted = from_ns(t);
                h.valid_at_grant = std::chrono::nanoseconds(valid);
                words >> h.fence;
            }
            else
            {
                h.released = from_ns(t);
                h.valid_at_release = std::chrono::nanoseconds(valid);
            }
        }
        else if (kind == 'l')
        {
            std::int64_t t = 0;
            words >> t;
            out.told.push_back(from_ns(t));
        }
        else if (kind == 's')
        {
            std::int64_t t = 0;
            std::size_t share = 0;
            std::uint64_t fence = 0;
            words >> t >> share >> fence;
            out.shares.emplace_back(from_ns(t), share);
            if (fence != 0 && (out.fences.empty() || out.fences.back() != fence))
                out.fences.push_back(fence);
        }
    }
    return out;
}

// The fleet: `processes` children, the i-th connecting to ports[i], logging into `dir`.
class share_fleet
{
public:
    share_fleet(const redis_server& server, const std::vector<std::uint16_t>& ports)
    {
        for (std::size_t i = 0; i < ports.size(); ++i)
        {
            paths_.push_back((server.dir() / ("holder" + std::to_string(i) + ".log")).string());
            children_.push_back(std::make_unique<child_process>(std::vector<std::string>{
                holder_role, std::to_string(ports[i]), std::to_string(::getpid()), paths_.back()}));
        }
        for (auto& c : children_)
            BOOST_REQUIRE(c->link().receive() == "ready");
        ends_.assign(ports.size(), clock_type::time_point::max());
    }

    child_process& child(std::size_t i) { return *children_[i]; }

    process_log log(std::size_t i) const { return read_log(paths_[i]); }

    // Kills the i-th child: its holders hold until it is dead.
    clock_type::time_point kill(std::size_t i)
    {
        children_[i]->kill();
        ends_[i] = clock_type::now();
        return ends_[i];
    }

    // The sum of the last shares the children but `except` logged.
    std::size_t shares_but(std::size_t except) const
    {
        std::size_t sum = 0;
        for (std::size_t i = 0; i < paths_.size(); ++i)
            if (i != except)
            {
                const process_log l = log(i);
                sum += l.shares.empty() ? 0 : l.shares.back().second;
            }
        return sum;
    }

    // The sum of the shares of the children but `except` after each change of one, in time order.
    std::vector<std::pair<clock_type::time_point, std::size_t>> share_sums_but(std::size_t except) const
    {
        std::multimap<clock_type::time_point, std::pair<std::size_t, std::size_t>> changes; // process, share
        for (std::size_t i = 0; i < paths_.size(); ++i)
            if (i != except)
                for (const auto& [t, share] : log(i).shares)
                    changes.emplace(t, std::make_pair(i, share));
        std::map<std::size_t, std::size_t> now;
        std::vector<std::pair<clock_type::time_point, std::size_t>> sums;
        for (const auto& [t, change] : changes)
        {
            now[change.first] = change.second;
            std::size_t sum = 0;
            for (const auto& [i, share] : now)
                sum += share;
            sums.emplace_back(t, sum);
        }
        return sums;
    }

    // Waits until the i-th child has been granted a permit with a valid share after `after`.
    void wait_for_grant(std::size_t i, clock_type::time_point after) const
    {
        eventually([&] {
            for (const auto& [key, h] : log(i).holds)
                if (h.granted > after && h.valid_at_grant > clock_type::duration::zero())
                    return true;
            return false;
        });
    }

    // Stops the live children and checks their outcomes: every acquire granted, or aborted by the
    // stop; the grants as many as logged.
    void stop()
    {
        for (std::size_t i = 0; i < children_.size(); ++i)
        {
            if (ends_[i] != clock_type::time_point::max())
                continue;
            BOOST_REQUIRE(children_[i]->link().send("stop"));
        }
        for (std::size_t i = 0; i < children_.size(); ++i)
        {
            if (ends_[i] != clock_type::time_point::max())
                continue;
            std::istringstream done(children_[i]->link().receive());
            std::string word;
            int granted = -1, aborted = -1, timed_out = -1, other = -1;
            done >> word >> granted >> aborted >> timed_out >> other;
            BOOST_TEST(word == "done");
            BOOST_TEST(children_[i]->wait() == 0);
            ends_[i] = clock_type::now();
            BOOST_TEST_MESSAGE("process " << i << ": " << granted << " grants, " << aborted
                                          << " aborted by the stop");
            BOOST_TEST(granted == static_cast<int>(log(i).holds.size()));
            BOOST_TEST(aborted <= holders);
            BOOST_TEST(timed_out == 0);
            BOOST_TEST(other == 0);
        }
    }

    // Every hold on one timeline, as believed and as claimed (see the top of the file).
    std::pair<std::vector<hold>, std::vector<hold>> timelines() const
    {
        std::vector<hold> believed, claimed;
        for (std::size_t i = 0; i < paths_.size(); ++i)
        {
            const process_log l = log(i);
            for (const auto& [key, h] : l.holds)
            {
                if (h.valid_at_grant == clock_type::duration::zero())
                    continue;
                clock_type::time_point end = h.released.value_or(ends_[i]);
                const auto told = std::lower_bound(l.told.begin(), l.told.end(), h.granted);
                if (told != l.told.end())
                    end = std::min(end, *told);
                believed.push_back(hold{h.granted, end, h.fence, end != h.released});
                const clock_type::time_point valid_until =
                    h.released && h.valid_at_release > clock_type::duration::zero()
                        ? *h.released
                        : h.granted + h.valid_at_grant;
                claimed.push_back(hold{h.granted, std::min(end, valid_until), h.fence, false});
            }
        }
        return {believed, claimed};
    }

private:
    std::vector<std::string> paths_;
    std::vector<std::unique_ptr<child_process>> children_;
    std::vector<clock_type::time_point> ends_;
};

// Describes the stretches of `holds` above the capacity (how many, when, the longest, their total);
// returns the time from the first one's start to the last one's end.
clock_type::duration report_above(const std::vector<hold>& holds, const char* what,
                                  clock_type::time_point origin)
{
    const auto stretches = asio_sync::test::above(holds, capacity);
    if (stretches.empty())
        return {};
    clock_type::duration longest{}, total{};
    for (const auto& [from, to] : stretches)
    {
        longest = std::max(longest, to - from);
        total += to - from;
    }
    BOOST_TEST_MESSAGE(what << ": " << stretches.size() << " stretches above the capacity, from "
                            << milliseconds(stretches.front().first - origin) << " to "
                            << milliseconds(stretches.back().second - origin)
                            << " ms after the fault, the longest " << milliseconds(longest) << " ms, "
                            << milliseconds(total) << " ms in all");
    return stretches.back().second - stretches.front().first;
}

// Runs the fleet for a while, so that every process holds and waits.
void let_run()
{
    std::this_thread::sleep_for(300ms);
}

std::vector<std::uint16_t> ports_of(const redis_server& server, const tcp_proxy* first = nullptr)
{
    std::vector<std::uint16_t> ports(processes, server.port());
    if (first)
        ports[0] = first->port();
    return ports;
}

} // namespace

// =====================================================================================================
// kill -9 of a process holding a share: its share comes back to the others when its lease ends in
// Redis, never before; at no instant do more than the capacity hold.
BOOST_AUTO_TEST_CASE(a_killed_process_gives_its_share_back_when_its_lease_ends_and_never_before)
{
    redis_server server;
    share_fleet fleet(server, ports_of(server));
    let_run();
    const process_log before = fleet.log(0);
    BOOST_REQUIRE(!before.shares.empty());
    const clock_type::time_point dead = fleet.kill(0);
    eventually([&] { return fleet.shares_but(0) == capacity; });
    let_run();
    fleet.stop();

    // When the survivors' shares summed to the capacity again.
    const process_log last = fleet.log(0);
    const auto sums = fleet.share_sums_but(0);
    const auto back = std::find_if(sums.begin(), sums.end(), [&](const auto& sum) {
        return sum.first > dead && sum.second == capacity;
    });
    BOOST_REQUIRE((back != sums.end()));
    // The dead process' last claim on its share: the latest end of validity one of its holders read.
    clock_type::time_point claimed{};
    for (const auto& [key, h] : last.holds)
        claimed = std::max(claimed, h.granted + h.valid_at_grant);
    BOOST_TEST_MESSAGE("the killed process' share came back "
                       << milliseconds(back->first - dead) << " ms after its death (lease " << lease.count()
                       << " ms, refresh " << refresh.count() << " ms); its last claim ended "
                       << milliseconds(claimed - dead) << " ms after it");
    BOOST_TEST((back->first > claimed), "the share came back before the killed process' claim ended");
    const auto [believed, claims] = fleet.timelines();
    BOOST_TEST(asio_sync::test::peak(believed) <= capacity);
    report_above(believed, "believed", dead);
}

// =====================================================================================================
// SIGSTOP of a process past its lease: the others get its share once its lease ends in Redis; its
// holders claim nothing past the lease; when it runs again it is told of the loss, and gets a new
// share (a new fence).
BOOST_AUTO_TEST_CASE(a_process_stopped_past_its_lease_claims_nothing_after_it_and_gets_a_new_share,
                     *boost::unit_test::label("long"))
{
    redis_server server;
    share_fleet fleet(server, ports_of(server));
    let_run();
    const clock_type::time_point stopped = clock_type::now();
    fleet.child(0).signal(SIGSTOP);
    eventually([&] { return fleet.shares_but(0) == capacity; });
    let_run();
    const clock_type::time_point resumed = clock_type::now();
    fleet.child(0).signal(SIGCONT);
    fleet.wait_for_grant(0, resumed);
    let_run();
    fleet.stop();

    const process_log l = fleet.log(0);
    const auto told = std::lower_bound(l.told.begin(), l.told.end(), resumed);
    BOOST_REQUIRE((told != l.told.end()));
    BOOST_TEST_MESSAGE("the stopped process was told of the loss "
                       << milliseconds(*told - resumed) << " ms after it resumed ("
                       << milliseconds(resumed - stopped) << " ms stopped)");
    BOOST_TEST(l.fences.size() >= 2u); // a new share after the loss
    // No grant with a valid share in the stopped process between its resumption and the telling. A
    // release that runs before the process' timer finds the lease over hands its permit on to a
    // waiter, whose valid_for() reads 0: counted.
    const auto between = [&](bool valid) {
        return std::count_if(l.holds.begin(), l.holds.end(), [&](const auto& entry) {
            const process_log::held& h = entry.second;
            return h.granted > resumed && h.granted < *told &&
                   (h.valid_at_grant > clock_type::duration::zero()) == valid;
        });
    };
    BOOST_TEST(between(true) == 0);
    BOOST_TEST_MESSAGE("grants between the resumption and the telling, valid_for() 0: " << between(false));
    const auto [believed, claims] = fleet.timelines();
    BOOST_TEST(asio_sync::test::peak(claims) <= capacity);
    // The stopped holders believe until their process runs again: reported.
    report_above(believed, "believed", stopped);
}

// =====================================================================================================
// A partition: one process' link held in a proxy past the lease, then cut. Its share is lost (and
// its holders told) before the others get it; it gets a share again once the link is back.
BOOST_AUTO_TEST_CASE(a_partitioned_process_is_told_before_the_others_get_its_share,
                     *boost::unit_test::label("long"))
{
    redis_server server;
    tcp_proxy proxy(server.port());
    share_fleet fleet(server, ports_of(server, &proxy));
    let_run();
    const clock_type::time_point fault = clock_type::now();
    proxy.hold();
    eventually([&] { return fleet.shares_but(0) == capacity; });
    let_run();
    proxy.cut();
    proxy.release(); // what was held goes nowhere: its links are closed
    const clock_type::time_point healed = clock_type::now();
    fleet.wait_for_grant(0, healed);
    let_run();
    fleet.stop();

    const process_log l = fleet.log(0);
    BOOST_TEST((std::lower_bound(l.told.begin(), l.told.end(), fault) != l.told.end()));
    const auto [believed, claims] = fleet.timelines();
    BOOST_TEST(asio_sync::test::peak(believed) <= capacity);
    report_above(believed, "believed", fault);
    BOOST_TEST_MESSAGE("back " << milliseconds(healed - fault) << " ms after the partition");
}

// =====================================================================================================
// A partition healed late: what one process sent while its link was held past the lease reaches
// Redis afterwards, on its old links and its new one in any order. A stale refresh run late must not
// lower what Redis counts for the process below what it holds.
BOOST_AUTO_TEST_CASE(refreshes_delivered_late_never_give_a_share_twice, *boost::unit_test::label("long"))
{
    redis_server server;
    tcp_proxy proxy(server.port());
    share_fleet fleet(server, ports_of(server, &proxy));
    let_run();
    const clock_type::time_point fault = clock_type::now();
    proxy.hold();
    eventually([&] { return fleet.shares_but(0) == capacity; });
    let_run();
    proxy.release();
    const clock_type::time_point healed = clock_type::now();
    fleet.wait_for_grant(0, healed);
    std::this_thread::sleep_for(1500ms);
    fleet.stop();

    const auto [believed, claims] = fleet.timelines();
    BOOST_TEST(asio_sync::test::peak(believed) <= capacity);
    report_above(believed, "believed", fault);
}

// =====================================================================================================
// Lost replies: Redis runs one process' refreshes and the replies never reach it, past the lease.
// The process loses its share (its lease cannot be proven) while Redis keeps counting it; at no
// instant do more than the capacity believe; it gets its share back once its link is.
BOOST_AUTO_TEST_CASE(lost_replies_lose_the_share_and_never_give_it_twice, *boost::unit_test::label("long"))
{
    redis_server server;
    tcp_proxy proxy(server.port());
    share_fleet fleet(server, ports_of(server, &proxy));
    let_run();
    const clock_type::time_point fault = clock_type::now();
    proxy.drop_replies();
    eventually([&] {
        const process_log l = fleet.log(0);
        return std::lower_bound(l.told.begin(), l.told.end(), fault) != l.told.end();
    });
    let_run();
    proxy.cut();
    const clock_type::time_point healed = clock_type::now();
    fleet.wait_for_grant(0, healed);
    let_run();
    fleet.stop();

    const auto [believed, claims] = fleet.timelines();
    BOOST_TEST(asio_sync::test::peak(believed) <= capacity);
    report_above(believed, "believed", fault);
    std::size_t most = 0; // from the sum in force at the fault
    for (const auto& [t, sum] : fleet.share_sums_but(0))
        if (t <= fault)
            most = sum;
        else if (t < healed)
            most = std::max(most, sum);
    BOOST_TEST_MESSAGE("the others' shares while the replies were lost: at most " << most << " of "
                                                                                  << capacity);
}

// =====================================================================================================
// Restarts of Redis with appendonly and appendfsync always, stopped (SIGTERM) and crashed (SIGKILL):
// the shares and their leases survive them; at no instant do more than the capacity believe.
BOOST_AUTO_TEST_CASE(a_restart_with_appendfsync_always_never_gives_a_share_twice,
                     *boost::unit_test::label("long"))
{
    redis_server::options persistent;
    persistent.append_only = true;
    redis_server server(persistent);
    share_fleet fleet(server, ports_of(server));
    let_run();
    const clock_type::time_point fault = clock_type::now();
    for (const bool crash : {false, true})
    {
        const clock_type::time_point down = clock_type::now();
        if (crash)
            server.kill();
        else
            server.stop();
        server.start();
        const clock_type::time_point restarted = clock_type::now();
        BOOST_TEST_MESSAGE("Redis " << (crash ? "crashed" : "stopped") << ", down "
                                    << milliseconds(restarted - down) << " ms");
        for (std::size_t i = 0; i < processes; ++i)
            fleet.wait_for_grant(i, restarted);
        let_run();
    }
    fleet.stop();

    const auto [believed, claims] = fleet.timelines();
    BOOST_TEST(asio_sync::test::peak(believed) <= capacity);
    report_above(believed, "believed", fault);
}

// A restart of Redis without persistence: Redis forgets the shares, and hands the capacity out again
// while the processes still hold theirs. With `cut_off`, the first process reaches Redis only after
// its lease has ended. Measured: the overlap. Promised: each process is told of its loss when its
// next refresh finds a new share, or when its lease ends: the overlap ends with the last telling,
// at most one lease after the restart.
void restart_without_persistence(bool cut_off)
{
    redis_server server;
    tcp_proxy proxy(server.port());
    share_fleet fleet(server, ports_of(server, &proxy));
    let_run();
    const clock_type::time_point fault = clock_type::now();
    if (cut_off)
        proxy.hold();
    server.stop();
    server.start();
    const clock_type::time_point restarted = clock_type::now();
    for (std::size_t i = cut_off ? 1 : 0; i < processes; ++i)
        fleet.wait_for_grant(i, restarted);
    if (cut_off)
    {
        eventually([&] {
            const process_log l = fleet.log(0);
            return std::lower_bound(l.told.begin(), l.told.end(), fault) != l.told.end();
        });
        proxy.cut();
        proxy.release();
        fleet.wait_for_grant(0, clock_type::now());
    }
    let_run();
    fleet.stop();

    clock_type::time_point last_told{};
    for (std::size_t i = 0; i < processes; ++i)
    {
        const process_log l = fleet.log(i);
        const auto told = std::lower_bound(l.told.begin(), l.told.end(), fault);
        BOOST_REQUIRE((told != l.told.end()));
        last_told = std::max(last_told, *told);
    }
    const auto [believed, claims] = fleet.timelines();
    const clock_type::duration overlap = report_above(believed, "believed", fault);
    BOOST_TEST_MESSAGE("overlaps after a restart without persistence, first to last"
                       << (cut_off ? ", one process cut off: " : ": ") << milliseconds(overlap)
                       << " ms (lease " << lease.count() << " ms, safety margin " << margin.count()
                       << " ms); Redis down " << milliseconds(restarted - fault)
                       << " ms; the last process told " << milliseconds(last_told - fault)
                       << " ms after the fault");
    for (const auto& [from, to] : asio_sync::test::above(believed, capacity))
        BOOST_TEST((to <= last_told), "an overlap outlasted the tellings");
}

BOOST_AUTO_TEST_CASE(a_restart_without_persistence_overlaps_until_each_process_has_refreshed,
                     *boost::unit_test::label("long"))
{
    restart_without_persistence(false);
}

BOOST_AUTO_TEST_CASE(a_restart_without_persistence_overlaps_for_at_most_one_lease_with_a_process_cut_off,
                     *boost::unit_test::label("long"))
{
    restart_without_persistence(true);
}

// =====================================================================================================
// Random faults for 10 s, each process behind a proxy of its own (the seed is printed, to replay a
// run): links cut, frozen, replies dropped then cut, sends held then delivered, CLIENT KILL of normal
// and pub/sub links, DEBUG SLEEP shorter and longer than the lease, FUNCTION FLUSH. At no instant do
// more than the capacity believe; afterwards every process serves again.
BOOST_AUTO_TEST_CASE(a_fleet_under_random_faults_never_has_more_believers_than_the_capacity,
                     *boost::unit_test::label("long"))
{
    const auto seed = static_cast<std::uint32_t>(std::random_device()());
    BOOST_TEST_MESSAGE("seed " << seed);
    std::minstd_rand random(seed);
    redis_server server;
    std::vector<std::unique_ptr<tcp_proxy>> proxies;
    std::vector<std::uint16_t> ports;
    for (int i = 0; i < processes; ++i)
    {
        proxies.push_back(std::make_unique<tcp_proxy>(server.port()));
        ports.push_back(proxies.back()->port());
    }
    share_fleet fleet(server, ports);
    let_run();
    const clock_type::time_point fault = clock_type::now();
    std::map<std::string, int> faults;
    redis_server::client admin(server);
    const auto pause = [&](unsigned up_to_ms) {
        std::this_thread::sleep_for(std::chrono::milliseconds(random() % up_to_ms));
    };
    while (clock_type::now() < fault + 10s)
    {
        std::this_thread::sleep_for(200ms);
        pause(500);
        tcp_proxy& proxy = *proxies[random() % proxies.size()];
        switch (random() % 8)
        {
        case 0:
            ++faults["cut"];
            proxy.cut();
            break;
        case 1:
            ++faults["freeze"];
            proxy.freeze();
            break;
        case 2:
            ++faults["drop replies, then cut"];
            proxy.drop_replies();
            pause(1500);
            proxy.cut();
            break;
        case 3:
            ++faults["hold, then deliver"];
            proxy.hold();
            pause(1500);
            proxy.release();
            break;
        case 4:
            ++faults["CLIENT KILL TYPE normal"];
            admin.execute({"CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"});
            break;
        case 5:
            ++faults["CLIENT KILL TYPE pubsub"];
            admin.execute({"CLIENT", "KILL", "TYPE", "pubsub"});
            break;
        case 6:
            if (random() % 3 == 0)
            {
                ++faults["DEBUG SLEEP 1.5 (past the lease)"];
                admin.execute({"DEBUG", "SLEEP", "1.5"});
            }
            else
            {
                ++faults["DEBUG SLEEP 0.3"];
                admin.execute({"DEBUG", "SLEEP", "0.3"});
            }
            break;
        case 7:
            ++faults["FUNCTION FLUSH"];
            admin.execute({"FUNCTION", "FLUSH"});
            break;
        }
    }
    for (const auto& [what, count] : faults)
        BOOST_TEST_MESSAGE(what << ": " << count);
    const clock_type::time_point healed = clock_type::now();
    for (std::size_t i = 0; i < processes; ++i)
        fleet.wait_for_grant(i, healed);
    let_run();
    fleet.stop();

    const auto [believed, claims] = fleet.timelines();
    BOOST_TEST(asio_sync::test::peak(believed) <= capacity);
    report_above(believed, "believed", fault);
}

// =====================================================================================================
// In one process: a refresh sent while its process was idle, kept by a stuck middlebox and delivered
// after the process took a share on a new link. The late refresh carries a demand and a bound of 0:
// run, it would lower what Redis counts for the process below the permit it holds, and give that
// permit to the other process too.
BOOST_AUTO_TEST_CASE(a_refresh_delivered_late_never_lowers_what_redis_counts_below_what_is_held)
{
    redis_server server;
    delaying_proxy proxy(server.port());
    running_io run(1);
    redis::connection proxied(run.io, quick_links(proxy.port()));
    redis::connection direct(run.io, quick_links(server.port()));
    const redis::share_options options{lease, margin, refresh};
    redis::share_semaphore a(proxied, "late", 2, options);
    redis::share_semaphore b(direct, "late", 2, options);
    // B holds the whole capacity; A is idle, with a share of 0.
    auto first = b.async_acquire_permit(1, asio::use_future);
    auto second = b.async_acquire_permit(1, asio::use_future);
    auto b1 = wait(first);
    auto b2 = wait(second);
    eventually([&] { return a.valid_for() > clock_type::duration::zero(); });

    // A's link stalls: its refreshes (demand 0, bound 0) stay in the proxy until the health check
    // replaces the link and a refresh on the new one is answered.
    const clock_type::time_point stalled = clock_type::now();
    proxy.stall_existing();
    eventually([&] { return clock_type::now() + a.valid_for() > stalled + lease - margin; });
    BOOST_TEST_MESSAGE("bytes kept by the proxy: " << proxy.kept_bytes());

    // A takes a permit: B gives one back to its new part, and asks for it again.
    auto taken = a.async_acquire_permit(1, asio::use_future);
    eventually([&] { return b.state().target == 1; });
    b2.release();
    auto a1 = wait(taken);
    auto again = b.async_acquire_permit(1, asio::use_future);

    // The late refreshes run, then (before any other client's command: Redis runs what one
    // client sent in one go) a copy of the state, and the command that names their link.
    proxy.deliver_stalled(resp({"COPY", "asio_sync:{late}:share", "late:after", "REPLACE"}) +
                          resp({"CLIENT", "SETNAME", "late"}));
    eventually([&] { return server.command({"CLIENT", "LIST"}).find(" name=late ") != std::string::npos; });
    const redis_server::reply after =
        server.execute({"HGET", "late:after", "#" + id_of(server, a.state().fence)});
    BOOST_TEST_MESSAGE("A's entry after the late refreshes: " << after.to_text());
    std::istringstream entry(after.text);
    std::size_t held_by_a = 0;
    entry >> held_by_a;
    BOOST_TEST(held_by_a == 1u, "Redis counted " << held_by_a << " for the process holding 1");
    // Two more refreshes of each process.
    const clock_type::time_point delivered = clock_type::now();
    eventually([&] { return clock_type::now() + a.valid_for() > delivered + lease - margin + 2 * refresh; });
    eventually([&] { return clock_type::now() + b.valid_for() > delivered + lease - margin + 2 * refresh; });
    BOOST_TEST(!is_ready(again), "the other process was given the permit held");
    a1.release();
    wait(again);
    b1.release();
}

// =====================================================================================================
// In one process: Redis goes back to an earlier state, as after a restart that lost its last writes
// (appendfsync everysec) or a failover to a replica that lacked them: the same entry, holding less
// than the share its process has since taken. Another process takes what seems free; the first must
// be told of its loss at its next call, not go on serving its holders from a share Redis undercounts
// for as long as they hold.
BOOST_AUTO_TEST_CASE(a_redis_gone_back_to_an_earlier_state_tells_the_process_it_undercounts)
{
    redis_server server;
    running_io run(1);
    redis::connection first(run.io, quick_links(server.port()));
    redis::connection second(run.io, quick_links(server.port()));
    const std::string key = "asio_sync:{back}:share";
    // a refreshes every 400 ms, b every 100 ms: b calls first after the fault.
    constexpr std::chrono::milliseconds slower = 400ms;
    redis::share_semaphore a(first, "back", 2, redis::share_options{3000ms, margin, slower});
    redis::share_semaphore b(second, "back", 2, redis::share_options{3000ms, margin, refresh});
    auto taken = a.async_acquire_permit(1, asio::use_future);
    auto a1 = wait(taken);
    eventually([&] { return b.valid_for() > clock_type::duration::zero(); });
    // Just after a refresh of a: the state Redis will go back to, a holding 1.
    const clock_type::time_point until = clock_type::now() + a.valid_for();
    eventually([&] { return clock_type::now() + a.valid_for() > until + slower / 2; });
    const redis_server::reply earlier = server.execute({"DUMP", key});
    auto more = a.async_acquire_permit(1, asio::use_future);
    auto a2 = wait(more);
    BOOST_TEST(a.state().share == 2u);
    auto lost = a.async_wait_lost(asio::use_future);
    BOOST_TEST(server.command({"RESTORE", key, "0", earlier.text, "REPLACE"}) == "OK");

    auto given = b.async_acquire_permit(1, asio::use_future);
    auto b1 = wait(given); // what seemed free: a holds 2 of 2
    // At a's next call, Redis answers that it holds 1 for a.
    eventually([&] { return a.state().target == 1u; });
    eventually([&] { return is_ready(lost); });
    b1.release();
    a2.release();
    a1.release();
}

BOOST_AUTO_TEST_SUITE_END()

int main(int argc, char* argv[])
{
    if (argc == 5 && std::string_view(argv[1]) == redis_share_faults::holder_role)
    {
        if (!asio_sync::test::die_with_parent(static_cast<pid_t>(std::stol(argv[3]))))
            return 127;
        asio_sync::test::pipe_link link(STDIN_FILENO, STDOUT_FILENO);
        return redis_share_faults::hold_in_child(static_cast<std::uint16_t>(std::stoul(argv[2])), argv[4],
                                                 link);
    }
    return boost::unit_test::unit_test_main(&init_unit_test, argc, argv);
}
