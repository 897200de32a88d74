// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

// The fleet-wide semaphore, asio_sync::redis::semaphore, against a real redis-server on loopback
// (started by this program, from the tests' fixture, and stopped at exit). Its costs are round
// trips to Redis, so the reference is the cheapest round trip there is: a bare PING on the same
// connection, measured in the same run. bench/compare also builds this file against the headers
// of an earlier commit (bench_redis_baseline), to measure both engines side by side.
//
// - Uncontended: chains of acquire(1) + release on one connection, and chains of PINGs. Besides
//   the time, each reports what Redis itself counted in an untimed pass (INFO commandstats, reset
//   before it): the commands the client sent per operation (FCALL, FCALL_RO and PING; the
//   commands a function runs are counted apart, under their own names) and the microseconds Redis
//   spent executing them, a function's including the commands it runs. Redis runs functions on one
//   thread, so 1e6 / (server microseconds per pair) bounds the pairs per second of one Redis
//   server, across every semaphore on it.
// - Throughput: 1 and 4 processes (forked, each with its own connection) run acquire(1) + release
//   chains on one semaphore of 4 permits; the time per operation is the wall time of the whole
//   fleet divided by the operations of all processes.
// - Hand-off: two processes take turns on a semaphore of 1, each releasing as soon as it is
//   granted and queueing again at once; the time of one hand-off runs from the release in one
//   process to the grant heard in the other, both read on CLOCK_MONOTONIC (steady_clock), which
//   the processes share.
//
// Leases are long enough that no renewal runs during a measurement.

#include <asio_sync/redis/semaphore.hpp>

#include <benchmark/benchmark.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "support/harness.hpp"
#include "support/redis_bench.hpp"

namespace {

namespace asio = boost::asio;
namespace redis = asio_sync::redis;
using asio::awaitable;
using asio_sync::bench::check;
using asio_sync::bench::options_for;
using asio_sync::bench::server;
using asio_sync::test::redis_server;
using boost::system::error_code;
using namespace std::chrono_literals;

constexpr auto as_result = asio::as_tuple(asio::use_awaitable);
constexpr std::chrono::milliseconds lease = 60s;
// Operations per chain: a chain takes milliseconds, so starting it and waiting for it are noise.
constexpr std::size_t chain_length = 200;
// Operations of the untimed pass that counts commands.
constexpr std::size_t counted_operations = 200;

awaitable<void> acquire_release_chain(redis::semaphore& sem, std::size_t length)
{
    for (std::size_t i = 0; i < length; ++i)
    {
        auto [acquire_ec, permit] = co_await sem.async_acquire_permit(1, as_result);
        check(acquire_ec, "acquire");
        auto [release_ec] = co_await permit.async_release(as_result);
        check(release_ec, "release");
    }
}

awaitable<void> ping_chain(redis::connection& conn, std::size_t length)
{
    // A named argument list: g++ 12 cannot keep a braced list alive across co_await.
    const std::vector<std::string> ping{"PING"};
    for (std::size_t i = 0; i < length; ++i)
    {
        auto [ec, reply] = co_await conn.async_execute(ping, as_result);
        check(ec, "PING");
    }
}

// A connection and a semaphore on it, their io_context run by one thread of its own.
class link
{
public:
    link(std::string name, std::size_t capacity)
        : threads_(ctx_, 1), connection_(ctx_, options_for(server().port())),
          semaphore_(connection_, std::move(name), capacity, lease)
    {
        run(ping_chain(connection_, 1)); // connected before anything is timed
    }

    // The connection is closed first, so that its thread runs out of work and can be joined.
    ~link() { connection_.close(); }

    link(const link&) = delete;
    link& operator=(const link&) = delete;

    redis::connection& connection() { return connection_; }
    redis::semaphore& semaphore() { return semaphore_; }
    asio::io_context& context() { return ctx_; }

    void run(awaitable<void> chain) { asio::co_spawn(ctx_, std::move(chain), asio::use_future).get(); }

private:
    asio::io_context ctx_;
    asio_sync::bench::context_threads threads_;
    redis::connection connection_;
    redis::semaphore semaphore_;
};

// What Redis did per operation for the client while `run_operations(count)` ran, from INFO
// commandstats (see the top of this file).
struct server_side_cost
{
    double commands = 0;  // commands the client sent
    double server_us = 0; // the time Redis took to execute them, functions included
};

server_side_cost cost_per_operation(const std::function<void(std::size_t)>& run_operations, std::size_t count)
{
    redis_server::client counter(server());
    counter.command({"CONFIG", "RESETSTAT"});
    run_operations(count);
    const std::string stats = counter.command({"INFO", "commandstats"});
    server_side_cost total;
    // Lines "cmdstat_<name>:calls=<n>,usec=<us>,usec_per_call=...".
    for (const char* name : {"fcall", "fcall_ro", "ping"})
    {
        const std::string prefix = std::string("cmdstat_") + name + ":calls=";
        const std::size_t at = stats.find(prefix);
        if (at == std::string::npos)
            continue;
        const std::size_t calls_at = at + prefix.size();
        const std::size_t usec_at = stats.find("usec=", calls_at) + 5;
        total.commands += std::stod(stats.substr(calls_at));
        total.server_us += std::stod(stats.substr(usec_at));
    }
    const auto n = static_cast<double>(count);
    return {total.commands / n, total.server_us / n};
}

void report_cost(benchmark::State& state, const server_side_cost& cost)
{
    state.counters["commands_per_op"] = cost.commands;
    state.counters["server_us_per_op"] = cost.server_us;
}

void BM_redis_ping(benchmark::State& state)
{
    link l("bench_ping", 1);
    while (state.KeepRunningBatch(chain_length))
        l.run(ping_chain(l.connection(), chain_length));
    report_cost(state,
                cost_per_operation([&](std::size_t count) { l.run(ping_chain(l.connection(), count)); },
                                   counted_operations));
}
BENCHMARK(BM_redis_ping)->UseRealTime();

void BM_redis_acquire_release(benchmark::State& state)
{
    link l("bench_uncontended", 4);
    l.run(acquire_release_chain(l.semaphore(), 1)); // the library and the capacity are in place
    while (state.KeepRunningBatch(chain_length))
        l.run(acquire_release_chain(l.semaphore(), chain_length));
    report_cost(state, cost_per_operation(
                           [&](std::size_t count) { l.run(acquire_release_chain(l.semaphore(), count)); },
                           counted_operations));
}
BENCHMARK(BM_redis_acquire_release)->UseRealTime();

// One end of a pipe each way between the benchmark and its forked processes.
class pipe_pair
{
public:
    pipe_pair()
    {
        if (::pipe(fds_.data()) != 0)
            throw std::runtime_error("pipe failed");
    }
    ~pipe_pair()
    {
        ::close(fds_[0]);
        ::close(fds_[1]);
    }
    pipe_pair(const pipe_pair&) = delete;
    pipe_pair& operator=(const pipe_pair&) = delete;

    void send(std::size_t bytes) const
    {
        const std::vector<char> data(bytes, 'x');
        send_bytes(data.data(), data.size());
    }

    void receive(std::size_t bytes) const
    {
        std::vector<char> data(bytes);
        receive_bytes(data.data(), bytes);
    }

    void send_bytes(const void* data, std::size_t bytes) const
    {
        const char* from = static_cast<const char*>(data);
        for (std::size_t sent = 0; sent < bytes;)
        {
            const ssize_t n = ::write(fds_[1], from + sent, bytes - sent);
            if (n <= 0)
                throw std::runtime_error("pipe write failed");
            sent += static_cast<std::size_t>(n);
        }
    }

    void receive_bytes(void* data, std::size_t bytes) const
    {
        char* into = static_cast<char*>(data);
        for (std::size_t got = 0; got < bytes;)
        {
            const ssize_t n = ::read(fds_[0], into + got, bytes - got);
            if (n <= 0)
                throw std::runtime_error("pipe read failed: a process ended early");
            got += static_cast<std::size_t>(n);
        }
    }

private:
    std::array<int, 2> fds_{};
};

// Forks `count` processes, the i-th running `member(i)`, which never returns; the ids of those
// started (fewer than `count` if a fork failed).
template <class Member>
std::vector<pid_t> fork_members(std::size_t count, Member member)
{
    std::vector<pid_t> children;
    for (std::size_t i = 0; i < count; ++i)
    {
        const pid_t child = ::fork();
        if (child == 0)
            member(i);
        if (child < 0)
            break;
        children.push_back(child);
    }
    return children;
}

// Waits for every process: true if each exited with status 0.
bool all_succeeded(const std::vector<pid_t>& children)
{
    bool ok = true;
    for (const pid_t child : children)
    {
        int status = 0;
        ::waitpid(child, &status, 0);
        ok = ok && WIFEXITED(status) && WEXITSTATUS(status) == 0;
    }
    return ok;
}

constexpr std::size_t fleet_capacity = 4;
constexpr std::size_t fleet_operations = 2000; // of all processes together, per batch

// A forked process of the fleet: takes a permit once to warm up, says it is ready, waits for the
// start, runs its chain and says it is done. Leaves with _exit: the server belongs to the parent.
[[noreturn]] void run_fleet_member(std::uint16_t port, std::size_t length, const pipe_pair& to_parent,
                                   const pipe_pair& from_parent)
{
    bool ok = false;
    asio::io_context ctx(1);
    redis::connection conn(ctx, options_for(port));
    redis::semaphore sem(conn, "bench_fleet", fleet_capacity, lease);
    asio::co_spawn(
        ctx,
        [&]() -> awaitable<void> {
            co_await acquire_release_chain(sem, 1);
            to_parent.send(1);
            from_parent.receive(1); // blocks this process's only thread until the start
            co_await acquire_release_chain(sem, length);
            to_parent.send(1);
        },
        [&](std::exception_ptr e) {
            ok = !e;
            ctx.stop();
        });
    ctx.run();
    ::_exit(ok ? 0 : 1);
}

void BM_redis_fleet_throughput(benchmark::State& state)
{
    const auto processes = static_cast<std::size_t>(state.range(0));
    const std::uint16_t port = server().port();
    const pipe_pair to_parent;
    const pipe_pair from_parent;
    const std::vector<pid_t> children = fork_members(processes, [&](std::size_t) {
        run_fleet_member(port, fleet_operations / processes, to_parent, from_parent);
    });
    bool ok = children.size() == processes;
    try
    {
        if (ok)
            to_parent.receive(processes);
        while (state.KeepRunningBatch(fleet_operations))
        {
            from_parent.send(processes);
            to_parent.receive(processes);
        }
    }
    catch (const std::exception& e)
    {
        state.SkipWithError(e.what());
    }
    if (!all_succeeded(children) || !ok)
        state.SkipWithError("a process of the fleet failed");
}
// One batch per repetition: each forked process runs one chain.
BENCHMARK(BM_redis_fleet_throughput)
    ->ArgName("processes")
    ->Arg(1)
    ->Arg(4)
    ->Iterations(fleet_operations)
    ->UseRealTime();

constexpr std::size_t handoff_turns = 500; // grants per process per batch

std::int64_t monotonic_ns()
{
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

// One process of the hand-off: waits for the start, then `turns` times acquires the permit (the
// time it is heard), gives it back (the time just before) and queues again; then sends its times
// to the parent: grant, release, grant, release, ... Leaves with _exit.
[[noreturn]] void run_handoff_member(std::uint16_t port, const pipe_pair& to_parent,
                                     const pipe_pair& from_parent)
{
    bool ok = false;
    std::vector<std::int64_t> times;
    times.reserve(2 * handoff_turns);
    asio::io_context ctx(1);
    redis::connection conn(ctx, options_for(port));
    redis::semaphore sem(conn, "bench_handoff", 1, lease);
    asio::co_spawn(
        ctx,
        [&]() -> awaitable<void> {
            co_await acquire_release_chain(sem, 1); // the library, the capacity and the links ready
            to_parent.send(1);
            from_parent.receive(1);
            for (std::size_t i = 0; i < handoff_turns; ++i)
            {
                auto [ec, permit] = co_await sem.async_acquire_permit(1, as_result);
                times.push_back(monotonic_ns());
                check(ec, "acquire");
                times.push_back(monotonic_ns());
                if (i + 1 == handoff_turns) // the last: released before the process stops
                {
                    auto [release_ec] = co_await permit.async_release(as_result);
                    check(release_ec, "release");
                }
                else
                    permit = redis::semaphore::permit(); // released without waiting; queue again at once
            }
            to_parent.send(1);
        },
        [&](std::exception_ptr e) {
            ok = !e;
            ctx.stop();
        });
    ctx.run();
    if (ok)
        to_parent.send_bytes(times.data(), times.size() * sizeof(std::int64_t));
    ::_exit(ok ? 0 : 1);
}

// The hand-off latencies of one batch: every grant that follows a release of the other process,
// from that release. Times of both processes, (time, process, is_grant), in time order.
double handoff_seconds(std::vector<std::tuple<std::int64_t, int, bool>> events, std::size_t& handoffs)
{
    std::sort(events.begin(), events.end());
    double total = 0;
    handoffs = 0;
    std::optional<std::pair<std::int64_t, int>> last_release;
    for (const auto& [time, process, is_grant] : events)
    {
        if (!is_grant)
            last_release = std::pair{time, process};
        else if (last_release && last_release->second != process)
        {
            total += static_cast<double>(time - last_release->first) * 1e-9;
            ++handoffs;
        }
    }
    return total;
}

void BM_redis_handoff(benchmark::State& state)
{
    const std::uint16_t port = server().port();
    const pipe_pair to_parent[2];
    const pipe_pair from_parent;
    for (auto _ : state)
    {
        const std::vector<pid_t> children =
            fork_members(2, [&](std::size_t i) { run_handoff_member(port, to_parent[i], from_parent); });
        bool ok = children.size() == 2;
        try
        {
            if (ok)
            {
                to_parent[0].receive(1);
                to_parent[1].receive(1);
                from_parent.send(2);
                std::vector<std::tuple<std::int64_t, int, bool>> events;
                for (int i = 0; i < 2; ++i)
                {
                    to_parent[i].receive(1);
                    std::vector<std::int64_t> times(2 * handoff_turns);
                    to_parent[i].receive_bytes(times.data(), times.size() * sizeof(std::int64_t));
                    for (std::size_t k = 0; k < times.size(); ++k)
                        events.emplace_back(times[k], i, k % 2 == 0);
                }
                std::size_t handoffs = 0;
                const double seconds = handoff_seconds(std::move(events), handoffs);
                state.SetIterationTime(handoffs ? seconds / static_cast<double>(handoffs) : 0);
                ok = handoffs > 0;
            }
        }
        catch (const std::exception& e)
        {
            state.SkipWithError(e.what());
        }
        if (!all_succeeded(children) || !ok)
        {
            state.SkipWithError("a process of the hand-off failed");
            break;
        }
    }
}
// Each iteration is one batch of two processes taking turns; its time is the mean hand-off.
BENCHMARK(BM_redis_handoff)->Iterations(1)->UseManualTime();

} // namespace
