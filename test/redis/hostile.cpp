// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#define BOOST_TEST_MODULE redis_hostile
#define BOOST_TEST_NO_MAIN // main below also runs the child roles

// The fleet-wide semaphore used as a hostile user would, against real redis-server processes,
// judged by its promises only:
// - at no instant do more than `capacity` permits claim validity (valid_for() > 0, that is before
//   their expires_at()), and a permit's expires_at() is never later than the server's lease end;
// - every acquire completes exactly once, never inside its initiating call; fences are unique and
//   grow; nothing (permit, waiter, handler) is lost.
//
// Times are CLOCK_MONOTONIC (steady_clock), shared by every thread and process of the machine.
// Beliefs are logged as intervals and checked after the run; no duration is compared with a
// threshold. Whether a loss handler runs before the permit is granted elsewhere depends on the
// scheduler (docs/cluster/guarantees.md, "Clocks and stalls": a process that is late by more than
// the safety margin learns late), so only the intervals that valid_for() claims are checked; those that last
// until the loss handler ran are reported, for the record.
//
// A lease is checked against the server itself: a "guarded write" checks valid_for() as the docs
// advise, then runs a script on the server that reads the holder's deadline and the server's clock
// in one atomic step. If the server's deadline (placed on the local clock no later than the end of
// the round trip plus what the server says is left) is before the expires_at() read before the
// write, the permit claimed validity beyond the server's lease.

#include <asio_sync/redis/semaphore.hpp>

#include "support/child_process.hpp"
#include "support/delaying_proxy.hpp"
#include "support/redis_client.hpp"
#include "support/redis_server.hpp"
#include "support/semaphore_keys.hpp"
#include "support/tcp_proxy.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/asio/write.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <functional>
#include <future>
#include <iomanip>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

BOOST_AUTO_TEST_SUITE(redis_hostile)

namespace {

namespace asio = boost::asio;
namespace redis = asio_sync::redis;
using asio_sync::test::child_process;
using asio_sync::test::delaying_proxy;
using asio_sync::test::eventually;
using asio_sync::test::options_for;
using asio_sync::test::pipe_link;
using asio_sync::test::queue_length;
using asio_sync::test::redis_server;
using asio_sync::test::tcp_proxy;
using asio_sync::test::wait;
using clock_type = std::chrono::steady_clock;
using namespace std::chrono_literals;
using permit = redis::semaphore::permit;
using script = redis::detail::semaphore_script;
using key = redis::detail::semaphore_key;

std::int64_t ns_of(clock_type::time_point t)
{
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

clock_type::time_point from_ns(std::int64_t ns)
{
    return clock_type::time_point(
        std::chrono::duration_cast<clock_type::duration>(std::chrono::nanoseconds(ns)));
}

double ms(clock_type::duration d)
{
    return std::chrono::duration<double, std::milli>(d).count();
}

std::string outcome(boost::system::error_code ec)
{
    if (!ec)
        return "ok";
    if (ec == redis::error::lease_lost)
        return "lease_lost";
    if (ec == redis::error::state_lost)
        return "state_lost";
    if (ec == asio::error::operation_aborted)
        return "operation_aborted";
    if (ec == asio_sync::error::timed_out)
        return "timed_out";
    if (ec == asio_sync::error::closed)
        return "closed";
    return ec.category().name() + std::string(":") + ec.message();
}

// Set while this thread is inside an initiating function of the semaphore or the permit: a
// handler that finds it set ran inline.
thread_local bool initiating = false;

struct initiation
{
    initiation() { initiating = true; }
    ~initiation() { initiating = false; }
    initiation(const initiation&) = delete;
    initiation& operator=(const initiation&) = delete;
};

// ---- beliefs on one timeline

// One grant, from the moment its handler ran until its holder was told of a loss or released.
struct hold_record
{
    std::string who;
    std::size_t n = 1;
    std::uint64_t fence = 0;
    clock_type::time_point granted{};
    clock_type::time_point ended = clock_type::time_point::max(); // max: believed until the end of the run
    clock_type::time_point expires{}; // expires_at() when the belief ended (the latest it claimed)
    clock_type::time_point expires_at_grant{};
    std::string how;
};

class timeline
{
public:
    std::size_t grant(std::string who, std::size_t n, std::uint64_t fence, clock_type::time_point at,
                      clock_type::time_point expires)
    {
        const std::lock_guard<std::mutex> lock(mutex_);
        hold_record r;
        r.who = std::move(who);
        r.n = n;
        r.fence = fence;
        r.granted = at;
        r.expires = expires;
        r.expires_at_grant = expires;
        holds_.push_back(std::move(r));
        return holds_.size() - 1;
    }

    // The first end counts: a loss after the release (or the reverse) changes nothing.
    void end(std::size_t i, clock_type::time_point at, clock_type::time_point expires, std::string how)
    {
        const std::lock_guard<std::mutex> lock(mutex_);
        hold_record& r = holds_.at(i);
        if (r.ended != clock_type::time_point::max())
            return;
        r.ended = at;
        if (expires != clock_type::time_point::min())
            r.expires = std::max(r.expires, expires);
        r.how = std::move(how);
    }

    std::vector<hold_record> holds() const
    {
        const std::lock_guard<std::mutex> lock(mutex_);
        return holds_;
    }

private:
    mutable std::mutex mutex_;
    std::vector<hold_record> holds_;
};

struct overlap_report
{
    int believed = 0; // grants at which more than the capacity believed
    int valid = 0;    // grants at which more than the capacity were valid by valid_for()
    std::string text;
};

// More than `capacity` permits at one instant is only possible at a grant: for each grant, counts
// the permits whose interval contains it. Believed intervals end at the loss handler or the
// release; valid ones also at the expires_at() the permit claimed last.
overlap_report find_overlaps(const std::vector<hold_record>& holds, std::size_t capacity,
                             clock_type::time_point origin)
{
    overlap_report report;
    auto at = [&](clock_type::time_point t) {
        std::ostringstream s;
        if (t == clock_type::time_point::max())
            s << "end";
        else
            s << std::fixed << std::setprecision(3) << ms(t - origin);
        return s.str();
    };
    std::ostringstream text;
    for (const hold_record& h : holds)
    {
        std::size_t believed = 0;
        std::size_t valid = 0;
        std::vector<const hold_record*> with;
        for (const hold_record& k : holds)
        {
            if (k.granted <= h.granted && h.granted < k.ended)
            {
                believed += k.n;
                with.push_back(&k);
                if (h.granted < std::min(k.ended, k.expires))
                    valid += k.n;
            }
        }
        if (believed <= capacity)
            continue;
        ++report.believed;
        report.valid += valid > capacity;
        text << "\n  at the grant of " << h.who << " fence " << h.fence << " (" << at(h.granted)
             << " ms): " << believed << " permits believed, " << valid << " valid by valid_for():";
        for (const hold_record* k : with)
            text << "\n    " << k->who << " n=" << k->n << " fence " << k->fence << " granted "
                 << at(k->granted) << " expires_at at grant " << at(k->expires_at_grant)
                 << " last expires_at " << at(k->expires) << " belief ended " << at(k->ended) << " ("
                 << k->how << ")";
    }
    report.text = text.str();
    return report;
}

// ---- the guarded write: valid_for() checked, then the server's own view of the lease

// KEYS: meta, deadlines, the resource's largest fence. ARGV: the fence. Returns {state, left ms,
// stale}: state "live" (left = deadline - now, negative once expired), "gone" (no holder with
// this fence: released, reaped or lost), "nodeadline"; stale 1 when a larger fence wrote first.
constexpr const char* guarded_write_lua = R"(
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local fence = ARGV[1]
local max = redis.call('GET', KEYS[3]) or '0'
local stale = 0
if #fence < #max or (#fence == #max and fence < max) then
    stale = 1
else
    redis.call('SET', KEYS[3], fence)
end
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
    local f, v = all[i], all[i + 1]
    if string.sub(f, 1, 1) == '#' and string.match(v, ':(%d+)$') == fence then
        local d = redis.call('ZSCORE', KEYS[2], string.sub(f, 2))
        if not d then
            return {'nodeadline', 0, stale}
        end
        return {'live', tonumber(d) - now, stale}
    end
end
return {'gone', 0, stale}
)";

struct write_check
{
    int writes = 0;
    int beyond = 0; // valid_for() claimed validity beyond the server's lease
    int stale = 0;  // a larger fence had written first
    std::string text;
};

// Checks the permit and writes if it is valid; false if valid_for() said it is not.
bool guarded_write(redis_server::client& resource, const std::string& name, const permit& p,
                   const std::string& who, write_check& out, clock_type::time_point origin)
{
    const clock_type::duration valid = p.valid_for();
    const clock_type::time_point expires = p.expires_at();
    if (valid == clock_type::duration::zero())
        return false;
    const script s(name);
    const clock_type::time_point t1 = clock_type::now();
    const redis_server::reply r =
        resource.execute({"EVAL", guarded_write_lua, "3", s.key(key::meta), s.key(key::deadlines),
                          "hostile:{" + name + "}:fence", std::to_string(p.fencing_token())});
    const clock_type::time_point t2 = clock_type::now();
    ++out.writes;
    if (r.type != redis_server::reply::kind::array || r.elements.size() != 3)
    {
        out.text += "\n  " + who + ": the write failed: " + r.to_text();
        return true;
    }
    const std::string state = r.elements[0].text;
    const long long left = r.elements[1].integer;
    const bool stale = r.elements[2].integer != 0;
    // The server read its clock between t1 and t2, in whole milliseconds (floored).
    const clock_type::time_point latest_server_end =
        state == "live" ? t2 + std::chrono::milliseconds(left + 1) : t2;
    std::ostringstream line;
    line << std::fixed << std::setprecision(3) << who << " fence " << p.fencing_token() << " at "
         << ms(t1 - origin) << ".." << ms(t2 - origin) << " ms: server " << state << " left " << left
         << " ms; expires_at " << ms(expires - origin) << " valid_for " << ms(valid) << " ms";
    if (expires > latest_server_end)
    {
        ++out.beyond;
        out.text += "\n  beyond the server's lease by at least " +
                    std::to_string(ms(expires - latest_server_end)) + " ms: " + line.str();
    }
    if (stale)
    {
        ++out.stale;
        out.text += "\n  stale write: " + line.str();
    }
    return true;
}

// MONITOR on a connection of its own, on a thread of its own: every command the server runs, in
// its order.
class monitor
{
public:
    explicit monitor(const redis_server& server) : server_(server), client_(server)
    {
        id_ = client_.command({"CLIENT", "ID"});
        client_.execute({"MONITOR"});
        thread_ = std::thread([this] {
            while (!stop_.load())
            {
                try
                {
                    const redis_server::reply r = client_.read();
                    const std::lock_guard<std::mutex> lock(mutex_);
                    lines_.push_back(r.text);
                }
                catch (const std::exception&)
                {
                    return;
                }
            }
        });
    }

    ~monitor()
    {
        stop_.store(true);
        server_.execute({"CLIENT", "KILL", "ID", id_});
        thread_.join();
    }

    std::vector<std::string> lines() const
    {
        const std::lock_guard<std::mutex> lock(mutex_);
        return lines_;
    }

    // The ids of the acquire calls seen, in order, with repeats.
    std::vector<std::string> acquire_ids() const
    {
        namespace library = redis::detail::semaphore_library;
        const std::string function =
            "\"" +
            std::string(library::function_names[static_cast<std::size_t>(library::function::acquire)]) + "\"";
        // "<function>" "<key count>" <keys> channel id n ...
        const std::size_t id_index = 2 + library::key_count + 1;
        std::vector<std::string> ids;
        for (const std::string& line : lines())
        {
            const std::size_t at = line.find(function);
            if (at == std::string::npos)
                continue;
            std::vector<std::string> words;
            std::size_t i = at;
            while (words.size() <= id_index)
            {
                const std::size_t open = line.find('"', i);
                if (open == std::string::npos)
                    break;
                const std::size_t close = line.find('"', open + 1);
                words.push_back(line.substr(open + 1, close - open - 1));
                i = close + 1;
            }
            if (words.size() == id_index + 1)
                ids.push_back(words[id_index]);
        }
        return ids;
    }

private:
    const redis_server& server_;
    redis_server::client client_;
    std::string id_;
    std::thread thread_;
    std::atomic<bool> stop_{false};
    mutable std::mutex mutex_;
    std::vector<std::string> lines_;
};

std::string check(const redis_server& server, const std::string& name)
{
    return server.execute(script(name).check()).to_text();
}

// An io_context on a thread of its own, kept busy until the object goes.
struct io_thread
{
    io_thread() : work(asio::make_work_guard(io)), thread([this] { io.run(); }) {}
    ~io_thread()
    {
        work.reset();
        io.stop();
        thread.join();
    }
    asio::io_context io;
    asio::executor_work_guard<asio::io_context::executor_type> work;
    std::thread thread;
};

// One permit acquired and released: the links up, the library loaded, the eviction check passed;
// on a semaphore whose waiters' leases have lapsed, a writing call that reaps them.
void acquire_and_release(redis::semaphore& sem)
{
    auto acquired = sem.async_acquire_permit(1, asio::use_future);
    permit p = wait(acquired);
    auto released = p.async_release(asio::use_future);
    wait(released);
}

redis::connection_options fast_options(std::uint16_t port)
{
    redis::connection_options o = options_for(port);
    o.health_check_interval = 200ms;
    o.connect_timeout = 1000ms;
    return o;
}

// ---- a client of the fleet under faults: its own io_context, thread, connection and semaphore;
// it acquires, writes while valid_for() says so, and releases, in a loop, logging everything.

struct loop_client
{
    loop_client(std::string who_, std::uint16_t port, const std::string& name_, std::size_t capacity_,
                std::chrono::milliseconds lease, timeline& tl_, const redis_server& server,
                std::uint32_t seed, clock_type::time_point origin_)
        : who(std::move(who_)), name(name_), capacity(capacity_), tl(tl_), origin(origin_),
          conn(io, fast_options(port)), sem(conn, name_, capacity_, lease), server_(server),
          resource(std::make_unique<redis_server::client>(server)), random(seed)
    {
    }

    ~loop_client() { halt(); }

    // Stops the client's thread; its logs may be read afterwards.
    void halt()
    {
        conn.close();
        io.stop();
        if (thread.joinable())
            thread.join();
    }

    // The guarded write; a connection of the resource killed by the faults is opened again.
    bool write(const permit& p)
    {
        try
        {
            return guarded_write(*resource, name, p, who, writes, origin);
        }
        catch (const std::exception&)
        {
            ++outcomes["write failed: the resource's connection was killed"];
            resource = std::make_unique<redis_server::client>(server_);
            return true;
        }
    }

    void start()
    {
        asio::post(io, [this] { next(); });
        thread = std::thread([this] { io.run(); });
    }

    struct held
    {
        permit p;
        std::size_t record = 0;
        bool lost = false;
    };

    void next()
    {
        if (stopping.load())
        {
            finished.set_value();
            return;
        }
        const std::size_t op = calls.size();
        calls.push_back(0);
        const std::size_t n = 1 + random() % capacity;
        const auto timeout = std::chrono::milliseconds(200 + random() % 2800);
        initiation in;
        sem.async_acquire_permit_for(n, timeout, [this, op, n](boost::system::error_code ec, permit p) {
            inline_calls += initiating;
            if (++calls[op] > 1)
                return;
            ++outcomes["acquire " + outcome(ec)];
            if (ec)
            {
                pause_then_next();
                return;
            }
            auto h = std::make_shared<held>();
            h->p = std::move(p);
            if (h->p.count() != n)
                ++outcomes["acquire granted a wrong count"];
            h->record = tl.grant(who, n, h->p.fencing_token(), clock_type::now(), h->p.expires_at());
            initiation in2;
            h->p.async_wait_lost([this, h](boost::system::error_code lost) {
                inline_calls += initiating;
                ++outcomes["wait_lost " + outcome(lost)];
                if (lost == asio::error::operation_aborted)
                    return;
                h->lost = true;
                tl.end(h->record, clock_type::now(),
                       h->p.count() ? h->p.expires_at() : clock_type::time_point::min(),
                       "lost " + outcome(lost));
            });
            write_then_hold(h, 1 + random() % 4);
        });
    }

    void pause_then_next()
    {
        auto t = std::make_shared<asio::steady_timer>(io, std::chrono::milliseconds(random() % 50));
        t->async_wait([this, t](boost::system::error_code) { next(); });
    }

    void write_then_hold(std::shared_ptr<held> h, int left)
    {
        if (left == 0 || stopping.load() || !write(h->p))
            return release(h);
        auto t = std::make_shared<asio::steady_timer>(io, std::chrono::milliseconds(20 + random() % 300));
        t->async_wait([this, t, h, left](boost::system::error_code) { write_then_hold(h, left - 1); });
    }

    void release(std::shared_ptr<held> h)
    {
        tl.end(h->record, clock_type::now(), h->p.expires_at(), "released");
        const bool was_lost = h->lost;
        initiation in;
        h->p.async_release([this, h, was_lost](boost::system::error_code ec) {
            inline_calls += initiating;
            ++outcomes[std::string(was_lost ? "release after loss " : "release ") + outcome(ec)];
            pause_then_next();
        });
    }

    std::string who;
    std::string name;
    std::size_t capacity;
    timeline& tl;
    clock_type::time_point origin;
    asio::io_context io;
    redis::connection conn;
    redis::semaphore sem;
    const redis_server& server_;
    std::unique_ptr<redis_server::client> resource;
    std::minstd_rand random;
    std::thread thread;
    std::atomic<bool> stopping{false};
    std::promise<void> finished;
    // On the client's thread only; read after it finished.
    std::vector<int> calls; // completions of each acquire
    std::map<std::string, int> outcomes;
    int inline_calls = 0;
    write_check writes;
};

std::string describe(const std::map<std::string, int>& counts)
{
    std::ostringstream s;
    for (const auto& [what, count] : counts)
        s << "\n  " << what << ": " << count;
    return s.str();
}

// Checks a finished run: exactly-once completions, no inline handler, beliefs, writes, fences.
void check_run(std::vector<std::unique_ptr<loop_client>>& clients, const timeline& tl, std::size_t capacity,
               clock_type::time_point origin)
{
    std::map<std::string, int> total;
    int writes = 0;
    int beyond = 0;
    int stale = 0;
    std::string write_text;
    for (const auto& c : clients)
    {
        int never = 0;
        int twice = 0;
        for (int calls : c->calls)
        {
            never += calls == 0;
            twice += calls > 1;
        }
        BOOST_TEST_CONTEXT(c->who)
        {
            BOOST_TEST(never == 0, "acquires never completed: " << never);
            BOOST_TEST(twice == 0, "acquires completed more than once: " << twice);
            BOOST_TEST(c->inline_calls == 0,
                       "handlers run inside their initiating call: " << c->inline_calls);
        }
        for (const auto& [what, count] : c->outcomes)
            total[what] += count;
        writes += c->writes.writes;
        beyond += c->writes.beyond;
        stale += c->writes.stale;
        write_text += c->writes.text;
    }
    const std::vector<hold_record> holds = tl.holds();
    BOOST_TEST_MESSAGE("outcomes:" << describe(total) << "\n  grants: " << holds.size()
                                   << "\n  guarded writes: " << writes);
    const overlap_report overlaps = find_overlaps(holds, capacity, origin);
    BOOST_TEST(overlaps.valid == 0, "grants at which more than the capacity were valid by valid_for(): "
                                        << overlaps.valid << overlaps.text);
    BOOST_TEST_MESSAGE("grants at which more than the capacity believed until their loss handlers ran: "
                       << overlaps.believed);
    BOOST_TEST(beyond == 0,
               "writes whose permit claimed validity beyond the server's lease: " << beyond << write_text);
    // A write checked valid_for() and then ran: a lease may end in between, and a later holder's
    // write come first. Fencing exists for that; the count is reported, not judged.
    BOOST_TEST_MESSAGE("writes refused by a larger fence: " << stale);
    std::set<std::uint64_t> fences;
    for (const hold_record& h : holds)
        BOOST_TEST(fences.insert(h.fence).second, "fence " << h.fence << " granted twice");
    // Fences grow: a grant valid when its handler ran, after the end of another, has a larger fence
    // (a grant handled after its lease ended, its process late, proves nothing about the order).
    int backwards = 0;
    for (const hold_record& a : holds)
        for (const hold_record& b : holds)
            if (a.ended < b.granted && b.granted < b.expires_at_grant && a.fence > b.fence)
                ++backwards;
    BOOST_TEST(backwards == 0, "grants with a smaller fence than an earlier, ended one: " << backwards);
}

// ---- the child roles

constexpr const char* waiter_role = "--hostile-waiter";

// Acquires 1 permit of `name` and reports, one line each, in CLOCK_MONOTONIC nanoseconds:
// "granted <t> <fence> <expires_at> <valid_for>", then "lost <t> <outcome> <expires_at>", then
// "released <outcome>", then exits.
int wait_in_child(std::uint16_t port, const std::string& name, std::chrono::milliseconds lease,
                  pipe_link& link)
{
    asio::io_context io;
    redis::connection conn(io, options_for(port));
    redis::semaphore sem(conn, name, 1, lease);
    permit held;
    sem.async_acquire_permit(1, [&](boost::system::error_code ec, permit p) {
        const auto now = clock_type::now();
        held = std::move(p);
        if (ec)
        {
            link.send("error " + outcome(ec));
            return io.stop();
        }
        link.send("granted " + std::to_string(ns_of(now)) + " " + std::to_string(held.fencing_token()) + " " +
                  std::to_string(ns_of(held.expires_at())) + " " +
                  std::to_string(std::chrono::nanoseconds(held.valid_for()).count()));
        held.async_wait_lost([&](boost::system::error_code lost) {
            link.send("lost " + std::to_string(ns_of(clock_type::now())) + " " + outcome(lost) + " " +
                      std::to_string(ns_of(held.expires_at())));
            held.async_release([&](boost::system::error_code released) {
                link.send("released " + outcome(released));
                io.stop();
            });
        });
    });
    io.run();
    return 0;
}

std::vector<std::string> words(const std::string& line)
{
    std::istringstream in(line);
    std::vector<std::string> out;
    for (std::string w; in >> w;)
        out.push_back(w);
    return out;
}

} // namespace

// =====================================================================================================
// 1. The fleet under random faults: 3 clients through proxies and 1 direct, capacity 1, a lease of
// 1.5 s, a health check every 200 ms, faults for 10 s (the seed is printed, to replay a run). Faults: links
// cut, frozen, replies dropped then cut, links held then delivered late, CLIENT KILL of normal and pub/sub
// links, DEBUG SLEEP shorter and longer than the lease, FUNCTION FLUSH.
BOOST_AUTO_TEST_CASE(a_fleet_under_random_faults_never_has_more_than_capacity_valid_permits)
{
    constexpr std::size_t capacity = 1;
    constexpr std::chrono::milliseconds lease = 1500ms;
    const std::string name = "fleet";
    const auto seed = static_cast<std::uint32_t>(std::random_device()());
    BOOST_TEST_MESSAGE("seed " << seed);
    std::minstd_rand random(seed);

    redis_server server;
    const clock_type::time_point origin = clock_type::now();
    timeline tl;
    std::vector<std::unique_ptr<tcp_proxy>> proxies;
    std::vector<std::unique_ptr<loop_client>> clients;
    for (int i = 0; i < 3; ++i)
    {
        proxies.push_back(std::make_unique<tcp_proxy>(server.port()));
        clients.push_back(std::make_unique<loop_client>("proxied" + std::to_string(i), proxies.back()->port(),
                                                        name, capacity, lease, tl, server,
                                                        seed + static_cast<std::uint32_t>(i), origin));
    }
    clients.push_back(std::make_unique<loop_client>("direct", server.port(), name, capacity, lease, tl,
                                                    server, seed + 9, origin));
    for (auto& c : clients)
        c->start();

    std::map<std::string, int> faults;
    redis_server::client admin(server);
    const auto end = clock_type::now() + 10s;
    while (clock_type::now() < end)
    {
        std::this_thread::sleep_for(std::chrono::milliseconds(200 + random() % 500));
        tcp_proxy& proxy = *proxies[random() % proxies.size()];
        switch (random() % 9)
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
            std::this_thread::sleep_for(std::chrono::milliseconds(random() % 1200));
            proxy.cut();
            break;
        case 3:
            ++faults["hold, then deliver late"];
            proxy.hold();
            std::this_thread::sleep_for(std::chrono::milliseconds(random() % 2000));
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
            ++faults["DEBUG SLEEP 0.4"];
            admin.execute({"DEBUG", "SLEEP", "0.4"});
            break;
        case 7:
            if (random() % 3 == 0)
            {
                ++faults["DEBUG SLEEP 2 (past the lease)"];
                admin.execute({"DEBUG", "SLEEP", "2"});
            }
            break;
        case 8:
            ++faults["FUNCTION FLUSH"];
            admin.execute({"FUNCTION", "FLUSH"});
            break;
        }
    }
    BOOST_TEST_MESSAGE("faults:" << describe(faults));
    for (auto& c : clients)
        c->stopping.store(true);
    for (auto& c : clients)
    {
        auto f = c->finished.get_future();
        BOOST_REQUIRE_MESSAGE(f.wait_for(asio_sync::test::redis_wait_limit) == std::future_status::ready,
                              c->who << " did not finish its last cycle within the limit");
    }
    for (auto& c : clients)
        c->halt();
    check_run(clients, tl, capacity, origin);
    // Nothing lost: every permit given back or lapsed. A give-up's release is not awaited, so a
    // waiter of a halted client may be left to lapse; a writing call reaps it: one more acquire,
    // granted once whatever is left has lapsed, then released.
    clients.clear();
    {
        io_thread t;
        redis::connection conn(t.io, options_for(server.port()));
        redis::semaphore sem(conn, name, capacity, lease);
        acquire_and_release(sem);
        conn.close();
    }
    BOOST_TEST(check(server, name) == "ok\n0\n0\n0");
}

// =====================================================================================================
// 2. Many callbacks on a thread pool: 2 connections, 2 semaphore objects of one name, capacity 3,
// acquires of 1 to 3 permits with timeouts and cancellations from other threads; then close()
// races the acquires still coming.
BOOST_AUTO_TEST_CASE(many_acquires_on_a_thread_pool_with_cancellations_and_a_racing_close)
{
    constexpr std::size_t capacity = 3;
    constexpr std::chrono::milliseconds lease = 2000ms;
    const std::string name = "pool";
    redis_server server;
    const clock_type::time_point origin = clock_type::now();
    timeline tl;
    asio::thread_pool pool(4);
    redis::connection c1(pool.get_executor(), options_for(server.port()));
    redis::connection c2(pool.get_executor(), options_for(server.port()));
    redis::semaphore s1(c1, name, capacity, lease);
    redis::semaphore s2(c2, name, capacity, lease);

    constexpr int workers = 24;
    constexpr int rounds = 8;
    struct counters
    {
        std::mutex m;
        std::map<std::string, int> outcomes;
        int inline_calls = 0;
        int twice = 0;
        int success_after_close = 0;
    } count;
    std::atomic<int> started{0};
    std::atomic<int> completed{0};
    std::atomic<bool> closed{false};

    struct worker
    {
        int index = 0;
        int left = rounds;
        std::minstd_rand random;
    };
    std::function<void(std::shared_ptr<worker>)> run_one;
    std::atomic<int> workers_done{0};
    std::promise<void> all_done;
    run_one = [&](std::shared_ptr<worker> w) {
        if (w->left-- == 0)
        {
            if (++workers_done == workers)
                all_done.set_value();
            return;
        }
        redis::semaphore& sem = w->index % 2 ? s1 : s2;
        const std::size_t n = 1 + w->random() % capacity;
        auto calls = std::make_shared<std::atomic<int>>(0);
        const bool after_close = closed.load() && &sem == &s1;
        // Drawn here: the handler may run on another thread before the initiating call returns.
        const int kind = static_cast<int>(w->random() % 4);
        const auto wait_for = std::chrono::milliseconds(w->random() % 100);
        const auto hold_for = std::chrono::milliseconds(w->random() % 30);
        const auto cancel_after = std::chrono::milliseconds(w->random() % 60);
        ++started;
        auto handler = [&, w, n, calls, after_close, hold_for](boost::system::error_code ec, permit p) {
            const bool was_inline = initiating;
            const int k = ++*calls;
            ++completed;
            {
                const std::lock_guard<std::mutex> lock(count.m);
                count.inline_calls += was_inline;
                count.twice += k > 1;
                ++count.outcomes["acquire " + outcome(ec)];
                count.success_after_close += after_close && !ec;
            }
            if (ec || k > 1)
                return asio::post(pool, [&, w] { run_one(w); });
            const std::size_t rec = tl.grant("worker" + std::to_string(w->index), n, p.fencing_token(),
                                             clock_type::now(), p.expires_at());
            auto held = std::make_shared<permit>(std::move(p));
            auto t = std::make_shared<asio::steady_timer>(pool, hold_for);
            t->async_wait([&, w, held, rec, t](boost::system::error_code) {
                tl.end(rec, clock_type::now(), held->expires_at(), "released");
                initiation in;
                held->async_release([&, w, held](boost::system::error_code rec_ec) {
                    {
                        const std::lock_guard<std::mutex> lock(count.m);
                        count.inline_calls += initiating;
                        ++count.outcomes["release " + outcome(rec_ec)];
                    }
                    run_one(w);
                });
            });
        };
        {
            initiation in;
            if (kind == 0)
                sem.async_acquire_permit_for(n, wait_for, handler);
            else if (kind == 1)
                sem.async_try_acquire_permit(n, handler);
            else
                sem.async_acquire_permit(n, handler);
        }
        if (kind == 3)
        {
            // cancel() of the whole object, from another thread of the pool, at some point of the
            // acquire's life (it gives up every pending acquire of that object).
            auto t = std::make_shared<asio::steady_timer>(pool, cancel_after);
            t->async_wait([t, &sem](boost::system::error_code) { sem.cancel(); });
        }
    };
    for (int i = 0; i < workers; ++i)
    {
        auto w = std::make_shared<worker>();
        w->index = i;
        w->random.seed(static_cast<unsigned>(i + 1));
        asio::post(pool, [&, w] { run_one(w); });
    }
    // Close one semaphore object while acquires keep coming.
    std::this_thread::sleep_for(1500ms);
    s1.close();
    closed.store(true);
    auto f = all_done.get_future();
    BOOST_REQUIRE_MESSAGE(f.wait_for(60s) == std::future_status::ready, "the workers did not finish");
    eventually([&] { return started.load() == completed.load(); });

    BOOST_TEST_MESSAGE("outcomes:" << describe(count.outcomes) << "\n  grants: " << tl.holds().size());
    BOOST_TEST(count.inline_calls == 0);
    BOOST_TEST(count.twice == 0);
    BOOST_TEST(started.load() == completed.load());
    // An acquire of the closed object started after close() returned is never granted.
    BOOST_TEST(count.success_after_close == 0);
    const overlap_report overlaps = find_overlaps(tl.holds(), capacity, origin);
    BOOST_TEST(overlaps.valid == 0, overlaps.text);
    eventually([&] { return check(server, name) == "ok\n0\n0\n0"; });
    c1.close();
    c2.close();
    pool.join();
}

// =====================================================================================================
// 3. A stuck middlebox that comes back: the first send of an acquire is kept in a proxy, the health
// check replaces the link, the acquire is replayed on the new link and granted, and the permit is
// released. Then the proxy delivers the first send, which Redis runs as a new acquire of that id.
// Documented limit (docs/cluster/guarantees.md): nobody owns or renews what it
// creates, so it lapses within one lease, like the acquire of a process that died; the waiters are
// then served. The same holds for an acquire given up (cancelled, timed out).
BOOST_AUTO_TEST_CASE(an_acquire_delivered_late_by_a_dead_link_holds_a_permit_for_one_lease_at_most)
{
    constexpr std::chrono::milliseconds lease = 1000ms;
    const std::string name = "late";
    redis_server server;
    delaying_proxy proxy{server.port()};
    io_thread t;
    redis::connection proxied{t.io, fast_options(proxy.port())};
    redis::connection direct{t.io, options_for(server.port())};
    redis::semaphore via_proxy{proxied, name, 1, lease};
    redis::semaphore other{direct, name, 1, lease};
    acquire_and_release(via_proxy); // the links up, the library loaded, the eviction check passed
    const auto status = [&](const std::string& id) {
        return server.execute(script(name).status(id)).to_text();
    };
    // The id of the holder of `fence`.
    const auto holder_id = [&](std::uint64_t fence) {
        const redis_server::reply all = server.execute({"HGETALL", script(name).key(key::meta)});
        const std::string suffix = ":" + std::to_string(fence);
        for (std::size_t i = 0; i + 1 < all.elements.size(); i += 2)
        {
            const std::string& v = all.elements[i + 1].text;
            if (v.size() > suffix.size() && v.compare(v.size() - suffix.size(), suffix.size(), suffix) == 0)
                return all.elements[i].text.substr(1);
        }
        return std::string();
    };

    monitor mon(server);
    proxy.stall_existing();
    auto f = via_proxy.async_acquire_permit(1, asio::use_future);
    permit p = wait(f); // granted by the replay on the new link
    const std::string id = holder_id(p.fencing_token());
    BOOST_TEST_MESSAGE("the acquire's id: " << id << "; bytes kept by the proxy: " << proxy.kept_bytes());
    auto released = p.async_release(asio::use_future);
    wait(released);
    BOOST_TEST(status(id) == "lost");
    proxy.deliver_stalled();
    // The first send has run once the monitor has seen the id a second time.
    eventually([&] {
        const auto ids = mon.acquire_ids();
        return std::count(ids.begin(), ids.end(), id) >= 2;
    });
    BOOST_TEST_MESSAGE("after the late delivery, the id is " << status(id));
    // Whatever the late send created lapses unrenewed; the next waiter is served then.
    auto next = other.async_acquire_permit(1, asio::use_future);
    permit q = wait(next);
    BOOST_TEST(q.count() == 1u);
    BOOST_TEST(status(id) == "lost");
    BOOST_TEST(check(server, name) == "ok\n1\n1\n0");
    auto done = q.async_release(asio::use_future);
    wait(done);
    BOOST_TEST(check(server, name) == "ok\n0\n0\n0");
    proxied.close();
    direct.close();
}

// =====================================================================================================
// 4. A waiter process stopped (SIGSTOP) while queued: its grant is published while it is stopped,
// its holder lease lapses, another client is granted the permit, then the waiter resumes (SIGCONT).
// Promise (docs/cluster/guarantees.md, "Clocks and stalls" and the lease rule): a stalled process may
// act on a grant late, so a write checks valid_for() first; the resumed waiter either queues again under
// a new id, or completes with a permit whose lease (by the lease rule, no later than the server's)
// ended before the other client was granted: valid_for() reads 0 from the start and the loss is
// reported. Which of the two depends on which of its events the resumed process handles first.
BOOST_AUTO_TEST_CASE(a_waiter_stopped_past_its_lease_never_gets_a_permit_valid_while_another_holds)
{
    constexpr std::chrono::milliseconds lease = 1000ms;
    const std::string name = "stopped";
    redis_server server;
    io_thread t;
    redis::connection conn(t.io, options_for(server.port()));
    redis::semaphore sem(conn, name, 1, lease);
    auto held = sem.async_acquire_permit(1, asio::use_future);
    permit first = wait(held);

    child_process waiter(std::vector<std::string>{waiter_role, std::to_string(server.port()),
                                                  std::to_string(::getpid()), name,
                                                  std::to_string(lease.count())});
    eventually([&] { return queue_length(server, name) == "1"; });
    waiter.signal(SIGSTOP);
    first = permit(); // released: the stopped waiter is granted in Redis, and told by a message it cannot
                      // read yet
    eventually([&] { return check(server, name) == "ok\n1\n1\n0"; });

    // Another client queues; it is granted once the stopped waiter's lease lapses.
    auto next = sem.async_acquire_permit(1, asio::use_future);
    permit second = wait(next);
    const clock_type::time_point second_granted = clock_type::now();
    const clock_type::time_point second_expires = second.expires_at();
    waiter.signal(SIGCONT);
    // Either the resumed waiter reports a grant, or it queues again under a new id.
    std::vector<std::string> granted;
    eventually([&] {
        granted = words(waiter.link().receive(10ms));
        return !granted.empty() || queue_length(server, name) == "1";
    });
    if (granted.empty())
    {
        BOOST_TEST_MESSAGE("the resumed waiter queued again");
        waiter.kill();
        return;
    }
    if (granted[0] == "granted")
    {
        BOOST_REQUIRE(granted.size() == 5u);
        const clock_type::time_point w_granted = from_ns(std::stoll(granted[1]));
        const clock_type::time_point w_expires = from_ns(std::stoll(granted[3]));
        const std::int64_t w_valid_ns = std::stoll(granted[4]);
        const std::vector<std::string> lost = words(waiter.link().receive());
        BOOST_REQUIRE(lost.size() == 4u);
        const clock_type::time_point w_lost = from_ns(std::stoll(lost[1]));
        std::ostringstream log;
        log << std::fixed << std::setprecision(3)
            << "times from the second holder's grant: the resumed waiter was "
            << "granted fence " << granted[2] << " at +" << ms(w_granted - second_granted)
            << " ms with expires_at " << ms(w_expires - second_granted) << " ms and valid_for "
            << ms(std::chrono::nanoseconds(w_valid_ns)) << " ms, told " << lost[2] << " at +"
            << ms(w_lost - second_granted) << " ms; the second holder (fence " << second.fencing_token()
            << ") was still holding, expires_at +" << ms(second_expires - second_granted) << " ms";
        BOOST_TEST_MESSAGE(log.str());
        BOOST_TEST(w_valid_ns == 0, "the resumed waiter's permit claimed validity: " << log.str());
        BOOST_TEST((w_expires <= second_granted),
                   "the resumed waiter's lease outlived the other grant: " << log.str());
        BOOST_TEST(lost[2] == outcome(redis::error::lease_lost), log.str());
        BOOST_TEST(std::stoull(granted[2]) < second.fencing_token());
    }
    else
    {
        BOOST_TEST(false, "the resumed waiter reported: " << granted[0]);
    }
    waiter.kill();
    BOOST_TEST(check(server, name) == "ok\n1\n1\n0");
}

// =====================================================================================================
// 5. DEBUG SLEEP past the lease while a holder holds and a waiter waits: the holder claims no
// validity past the server's lease, learns lease_lost, and the waiter is granted with a larger fence.
// (That the loss handler runs before the other grant's handler is left to the scheduler: see the
// top of the file.)
BOOST_AUTO_TEST_CASE(a_server_asleep_past_the_lease_never_lets_two_claim_validity)
{
    constexpr std::chrono::milliseconds lease = 600ms;
    const std::string name = "asleep";
    redis_server server;
    io_thread t;
    redis::connection c1(t.io, fast_options(server.port()));
    redis::connection c2(t.io, fast_options(server.port()));
    redis::semaphore holder_side(c1, name, 1, lease);
    redis::semaphore waiter_side(c2, name, 1, lease);
    const clock_type::time_point origin = clock_type::now();
    timeline tl;
    auto held = holder_side.async_acquire_permit(1, asio::use_future);
    permit p = wait(held);
    const std::size_t rec = tl.grant("holder", 1, p.fencing_token(), clock_type::now(), p.expires_at());
    std::promise<boost::system::error_code> lost;
    p.async_wait_lost([&](boost::system::error_code ec) {
        tl.end(rec, clock_type::now(), p.expires_at(), "lost " + outcome(ec));
        lost.set_value(ec);
    });
    std::promise<void> granted;
    permit second;
    boost::system::error_code second_ec;
    waiter_side.async_acquire_permit(1, [&](boost::system::error_code ec, permit q) {
        second_ec = ec;
        second = std::move(q);
        tl.grant("waiter", 1, second.fencing_token(), clock_type::now(), second.expires_at());
        granted.set_value();
    });
    eventually([&] { return queue_length(server, name) == "1"; });
    server.execute({"DEBUG", "SLEEP", "1.5"});
    auto g = granted.get_future();
    BOOST_REQUIRE(g.wait_for(asio_sync::test::redis_wait_limit) == std::future_status::ready);
    BOOST_TEST(!second_ec);
    auto l = lost.get_future();
    BOOST_TEST(wait(l) == boost::system::error_code(redis::error::lease_lost));
    std::promise<void> dropped;
    asio::post(t.io, [&] {
        second = permit();
        dropped.set_value();
    });
    dropped.get_future().wait();
    const overlap_report r = find_overlaps(tl.holds(), 1, origin);
    BOOST_TEST(r.valid == 0, r.text);
    const auto holds = tl.holds();
    BOOST_TEST(holds[1].fence > holds[0].fence);
    auto released = p.async_release(asio::use_future);
    BOOST_CHECK_EXCEPTION(
        wait(released), boost::system::system_error,
        [](const boost::system::system_error& e) { return e.code() == redis::error::lease_lost; });
}

// =====================================================================================================
// 6. A restart without persistence while a permit is held (documented: nothing in Redis tells that
// leases were live). Measured: the overlap of the old and new holder; promised: fences grow, and the
// old holder hears state_lost or lease_lost at its next renewal.
BOOST_AUTO_TEST_CASE(a_restart_without_persistence_keeps_fences_growing)
{
    constexpr std::chrono::milliseconds lease = 1500ms;
    const std::string name = "restart";
    redis_server server;
    io_thread t;
    redis::connection c1(t.io, options_for(server.port()));
    redis::connection c2(t.io, options_for(server.port()));
    redis::semaphore old_side(c1, name, 1, lease);
    redis::semaphore new_side(c2, name, 1, lease);
    auto held = old_side.async_acquire_permit(1, asio::use_future);
    permit p = wait(held);
    std::promise<std::pair<clock_type::time_point, boost::system::error_code>> lost;
    p.async_wait_lost([&](boost::system::error_code ec) { lost.set_value({clock_type::now(), ec}); });
    server.stop();
    server.start();
    auto next = new_side.async_acquire_permit(1, asio::use_future);
    const permit q = wait(next);
    const clock_type::time_point granted = clock_type::now();
    auto l = lost.get_future();
    const auto [lost_at, why] = wait(l);
    BOOST_TEST(q.fencing_token() > p.fencing_token());
    BOOST_TEST((why == redis::error::state_lost || why == redis::error::lease_lost), outcome(why));
    BOOST_TEST_MESSAGE("documented overlap after a restart without persistence: the old holder was told "
                       << outcome(why) << " " << ms(lost_at - granted) << " ms after the new grant");
}

// =====================================================================================================
// 7. Lost replies at every call: acquire, status, cancellation (the give-up's release), release and
// renewals. Exact outcomes.
BOOST_AUTO_TEST_CASE(lost_replies_at_every_call_lose_nothing_and_grant_nothing_twice)
{
    constexpr std::chrono::milliseconds lease = 6000ms;
    const std::string name = "replies";
    redis_server server;
    tcp_proxy proxy(server.port());
    io_thread t;
    redis::connection proxied(t.io, options_for(proxy.port()));
    redis::connection direct(t.io, options_for(server.port()));
    redis::semaphore sem(proxied, name, 1, lease);
    redis::semaphore other(direct, name, 1, lease);
    redis_server::client resource(server);
    write_check writes;
    const clock_type::time_point origin = clock_type::now();

    // The links up, the library loaded, the eviction check passed: the replies of that setup
    // are not the subject.
    acquire_and_release(sem);

    // After a cut, the proxied link connects again and runs its set-up (FUNCTION LOAD) before any
    // call: a read through it that answers proves it set up, so that the replies dropped next are
    // those of the call under test, not the set-up's (which would hold every call back until the
    // health check replaced the link). A read written to the cut link before the client saw the
    // cut completes with connection_lost: it is read again.
    const auto settled = [&] {
        for (;;)
        {
            std::promise<boost::system::error_code> read;
            sem.async_status(
                [&](boost::system::error_code ec, redis::semaphore_status) { read.set_value(ec); });
            auto f = read.get_future();
            const boost::system::error_code ec = wait(f);
            if (ec == redis::error::connection_lost)
                continue;
            BOOST_REQUIRE_MESSAGE(!ec, "the read failed: " << outcome(ec));
            return;
        }
    };

    BOOST_TEST_CHECKPOINT("acquire");
    // acquire: granted once, by its replay
    proxy.drop_replies();
    auto a = sem.async_acquire_permit(1, asio::use_future);
    eventually([&] { return check(server, name) == "ok\n1\n1\n0"; });
    proxy.cut();
    permit p = wait(a);
    BOOST_TEST(check(server, name) == "ok\n1\n1\n0");

    BOOST_TEST_CHECKPOINT("renewals");
    settled();
    // renewals: replies dropped for a third of a lease (a heartbeat), then the links cut; the
    // permit never claims more than the server's lease
    monitor mon(server);
    proxy.drop_replies();
    for (int i = 0; i < 8; ++i)
    {
        std::this_thread::sleep_for(lease / 24);
        std::promise<bool> wrote;
        asio::post(t.io,
                   [&] { wrote.set_value(guarded_write(resource, name, p, "holder", writes, origin)); });
        wrote.get_future().get();
    }
    proxy.cut();
    for (int i = 0; i < 4; ++i)
    {
        std::this_thread::sleep_for(lease / 8);
        std::promise<bool> wrote;
        asio::post(t.io,
                   [&] { wrote.set_value(guarded_write(resource, name, p, "holder", writes, origin)); });
        wrote.get_future().get();
    }
    BOOST_TEST(writes.beyond == 0, writes.text);
    BOOST_TEST(writes.stale == 0, writes.text);
    BOOST_TEST_MESSAGE("writes while renewals' replies were lost: " << writes.writes);

    BOOST_TEST_CHECKPOINT("status");
    settled();
    // status: its reply lost, it completes once with connection_lost
    proxy.drop_replies();
    std::atomic<int> status_calls{0};
    std::promise<boost::system::error_code> status_ec;
    const auto usage_calls = [&] {
        const auto lines = mon.lines();
        return std::count_if(lines.begin(), lines.end(), [](const std::string& l) {
            return l.find(redis::detail::semaphore_library::function_names[static_cast<std::size_t>(
                       redis::detail::semaphore_library::function::usage)]) != std::string::npos;
        });
    };
    const auto usage_before = usage_calls();
    sem.async_status([&](boost::system::error_code ec, redis::semaphore_status) {
        if (++status_calls == 1)
            status_ec.set_value(ec);
    });
    eventually([&] { return usage_calls() > usage_before; }); // it ran in Redis, its reply dropped
    proxy.cut();
    auto se = status_ec.get_future();
    BOOST_TEST(outcome(wait(se)) == outcome(redis::error::connection_lost));
    BOOST_TEST(status_calls.load() == 1);

    BOOST_TEST_CHECKPOINT("cancellation");
    settled();
    // cancellation: a waiter queued, replies dropped, cancelled (its release's reply dropped), cut
    auto waiter_signal = std::make_shared<asio::cancellation_signal>();
    auto w =
        other.async_acquire_permit(1, asio::bind_cancellation_slot(waiter_signal->slot(), asio::use_future));
    eventually([&] { return queue_length(server, name) == "1"; });
    // the waiter is on the direct link: make a proxied one wait instead
    asio::cancellation_signal cancel;
    auto w2 = sem.async_acquire_permit(1, asio::bind_cancellation_slot(cancel.slot(), asio::use_future));
    eventually([&] { return queue_length(server, name) == "2"; });
    proxy.drop_replies();
    asio::post(t.io, [&] { cancel.emit(asio::cancellation_type::terminal); });
    BOOST_CHECK_EXCEPTION(wait(w2), boost::system::system_error, [](const boost::system::system_error& e) {
        return e.code() == asio::error::operation_aborted;
    });
    eventually([&] { return queue_length(server, name) == "1"; });
    proxy.cut();

    BOOST_TEST_CHECKPOINT("release");
    settled();
    // release: its reply lost; a success; the direct waiter is served next
    proxy.drop_replies();
    auto r = p.async_release(asio::use_future);
    eventually([&] { return queue_length(server, name) == "0"; });
    proxy.cut();
    BOOST_CHECK_NO_THROW(wait(r));
    permit q = wait(w);
    BOOST_TEST(q.count() == 1u);
    BOOST_TEST(check(server, name) == "ok\n1\n1\n0");
    q = permit();
    eventually([&] { return check(server, name) == "ok\n0\n0\n0"; });
    proxied.close();
    direct.close();
}

// =====================================================================================================
// 8. Teardown at every phase: the semaphore, then the connection, then the io_context, destroyed
// with an acquire issued, queued in Redis, or granted; with and without running the context in
// between. Every handler runs at most once (exactly once when the context runs), nothing crashes, and
// no remote waiter stays behind when the context ran.
BOOST_AUTO_TEST_CASE(teardown_at_every_phase_completes_each_handler_once_and_leaves_no_waiter)
{
    constexpr std::chrono::milliseconds long_lease = 120s;
    redis_server server;
    int phase_index = 0;
    for (const char* phase : {"issued", "queued", "granted"})
    {
        for (const bool run_between : {true, false})
        {
            BOOST_TEST_CONTEXT(phase << (run_between ? ", context run" : ", context not run"))
            {
                const std::string name = "teardown" + std::to_string(phase_index++);
                auto calls = std::make_shared<std::atomic<int>>(0);
                auto last = std::make_shared<boost::system::error_code>();
                permit blocker_permit;
                {
                    auto io = std::make_unique<asio::io_context>();
                    auto conn = std::make_unique<redis::connection>(*io, options_for(server.port()));
                    auto sem = std::make_unique<redis::semaphore>(*conn, name, 1, long_lease);
                    std::unique_ptr<redis::connection> other_conn;
                    std::unique_ptr<redis::semaphore> blocker;
                    if (std::string_view(phase) == "queued")
                    {
                        other_conn = std::make_unique<redis::connection>(*io, options_for(server.port()));
                        blocker = std::make_unique<redis::semaphore>(*other_conn, name, 1, long_lease);
                        bool got = false;
                        blocker->async_acquire_permit(1, [&](boost::system::error_code ec, permit q) {
                            BOOST_TEST(!ec);
                            blocker_permit = std::move(q);
                            got = true;
                        });
                        while (!got)
                            io->run_one_for(100ms);
                    }
                    auto kept = std::make_shared<permit>();
                    sem->async_acquire_permit(1, [calls, last, kept](boost::system::error_code ec, permit q) {
                        ++*calls;
                        *last = ec;
                        *kept = std::move(q);
                    });
                    if (std::string_view(phase) == "queued")
                        while (queue_length(server, name) != "1")
                            io->run_for(10ms);
                    if (std::string_view(phase) == "granted")
                        while (calls->load() == 0)
                            io->run_for(10ms); // holding: the permit outlives its semaphore
                    sem.reset();
                    if (run_between)
                    {
                        const auto deadline = clock_type::now() + 10s;
                        while (calls->load() == 0 && clock_type::now() < deadline)
                            io->run_for(10ms);
                        BOOST_TEST(calls->load() == 1);
                        *kept = permit(); // released
                        // its remote waiter or permit is given back
                        const auto until = clock_type::now() + 10s;
                        while (check(server, name) !=
                                   "ok\n" + std::string(blocker ? "1\n1" : "0\n0") + "\n0" &&
                               clock_type::now() < until)
                            io->run_for(10ms);
                        BOOST_TEST(check(server, name) ==
                                   "ok\n" + std::string(blocker ? "1\n1" : "0\n0") + "\n0");
                    }
                    *kept = permit();
                    blocker_permit = permit();
                    blocker.reset();
                    if (run_between)
                        io->run_for(50ms);
                    other_conn.reset();
                    conn.reset();
                    io.reset();
                }
                BOOST_TEST(calls->load() <= 1);
                BOOST_TEST_MESSAGE(phase << (run_between ? " (run)" : " (not run)") << ": handler calls "
                                         << calls->load() << ", " << outcome(*last));
            }
        }
    }
}

// =====================================================================================================
// 9. Bad input: clear errors, nothing sent, state unchanged, no inline completion.
BOOST_AUTO_TEST_CASE(bad_input_gets_clear_errors_and_changes_nothing)
{
    redis_server server;
    io_thread t;
    redis::connection conn(t.io, options_for(server.port()));
    const auto lease = 1000ms;
    BOOST_CHECK_THROW([&] { redis::semaphore s(conn, "", 1, lease); }(), std::invalid_argument);
    BOOST_CHECK_THROW([&] { redis::semaphore s(conn, "x", 1, 0ms); }(), std::invalid_argument);
    BOOST_CHECK_THROW([&] { redis::semaphore s(conn, "x", 1, 9ms); }(), std::invalid_argument);
    BOOST_CHECK_THROW([&] { redis::semaphore s(conn, "x", 1, std::chrono::milliseconds::max()); }(),
                      std::invalid_argument);
    BOOST_CHECK_THROW([&] { redis::semaphore s(conn, "x", 1, redis::semaphore::max_lease_duration + 1ms); }(),
                      std::invalid_argument);
    BOOST_CHECK_THROW(
        [&] {
            redis::semaphore s(conn, "x", 1, redis::semaphore_options{lease, -1ms});
        }(),
        std::invalid_argument);
    BOOST_CHECK_THROW(
        [&] {
            redis::semaphore s(conn, "x", 1, redis::semaphore_options{lease, 501ms});
        }(),
        std::invalid_argument);

    struct outcome_of
    {
        boost::system::error_code ec;
        std::size_t count = 0;
        bool inline_call = false;
    };
    auto run = [&](redis::semaphore& sem, std::size_t n, int kind) {
        auto pr = std::make_shared<std::promise<outcome_of>>();
        auto f = pr->get_future();
        auto handler = [pr](boost::system::error_code ec, permit p) {
            pr->set_value({ec, p.count(), initiating});
        };
        {
            initiation in;
            if (kind == 0)
                sem.async_acquire_permit(n, handler);
            else if (kind == 1)
                sem.async_try_acquire_permit(n, handler);
            else
                sem.async_acquire_permit_for(n, 1s, handler);
        }
        return wait(f);
    };
    const std::string big = "big";
    redis::semaphore sem(conn, big, 2, lease);
    for (int kind = 0; kind < 3; ++kind)
    {
        BOOST_TEST_CONTEXT("kind " << kind)
        {
            outcome_of zero = run(sem, 0, kind);
            BOOST_TEST(!zero.ec);
            BOOST_TEST(zero.count == 0u);
            BOOST_TEST(!zero.inline_call);
            outcome_of three = run(sem, 3, kind);
            BOOST_TEST(three.ec == boost::system::error_code(asio_sync::error::too_many_permits));
            BOOST_TEST(!three.inline_call);
            outcome_of huge = run(sem, std::numeric_limits<std::size_t>::max(), kind);
            BOOST_TEST(huge.ec == boost::system::error_code(asio_sync::error::too_many_permits));
        }
    }
    BOOST_TEST(server.command({"EXISTS", script(big).key(key::meta)}) == "0"); // nothing stored

    // capacity 0: every acquire of n > 0 is too many
    redis::semaphore none(conn, "none", 0, lease);
    BOOST_TEST(outcome(run(none, 1, 0).ec) == outcome(asio_sync::error::too_many_permits));
    BOOST_TEST(!run(none, 0, 0).ec);

    // a capacity the library cannot represent: invalid_argument, and nothing stored
    redis::semaphore vast(conn, "vast", std::numeric_limits<std::size_t>::max(), lease);
    const outcome_of v = run(vast, 1, 0);
    BOOST_TEST(outcome(v.ec) == outcome(redis::error::invalid_argument));
    BOOST_TEST(!v.inline_call);
    BOOST_TEST(server.command({"EXISTS", script("vast").key(key::meta)}) == "0");

    // names of any bytes
    for (const std::string& odd : {std::string("{"), std::string("}"), std::string("%7B"),
                                   std::string("a b\n"), std::string("nul\0byte", 8), std::string(600, 'x')})
    {
        redis::semaphore s(conn, odd, 1, lease);
        const outcome_of got = run(s, 1, 0);
        BOOST_TEST(!got.ec, outcome(got.ec));
        BOOST_TEST(got.count == 1u);
    }
    // each permit was released by its handler
    eventually([&] { return check(server, "{") == "ok\n0\n0\n0"; });

    // after close(): closed, never inline
    redis::semaphore closing(conn, "closing", 1, lease);
    closing.close();
    closing.close();
    const outcome_of c = run(closing, 1, 0);
    BOOST_TEST(outcome(c.ec) == outcome(asio_sync::error::closed));
    BOOST_TEST(!c.inline_call);
    const outcome_of c0 = run(closing, 0, 0);
    BOOST_TEST(outcome(c0.ec) == outcome(asio_sync::error::closed),
               "n == 0 after close(): " << outcome(c0.ec));

    // an empty permit's release and wait: operation_aborted / success, never inline
    permit empty;
    std::promise<std::pair<boost::system::error_code, bool>> rel;
    {
        initiation in;
        empty.async_release([&](boost::system::error_code ec) { rel.set_value({ec, initiating}); });
    }
    auto rf = rel.get_future();
    const auto [rec, rinline] = wait(rf);
    BOOST_TEST(!rec);
    BOOST_TEST(!rinline);
    conn.close();
}

BOOST_AUTO_TEST_SUITE_END()

int main(int argc, char* argv[])
{
    if (argc == 6 && std::string_view(argv[1]) == redis_hostile::waiter_role)
    {
        if (!asio_sync::test::die_with_parent(static_cast<pid_t>(std::stol(argv[3]))))
            return 127;
        asio_sync::test::pipe_link link(STDIN_FILENO, STDOUT_FILENO);
        return redis_hostile::wait_in_child(static_cast<std::uint16_t>(std::stoul(argv[2])), argv[4],
                                            std::chrono::milliseconds(std::stol(argv[5])), link);
    }
    return boost::unit_test::unit_test_main(&init_unit_test, argc, argv);
}
