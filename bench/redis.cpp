// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

// The fleet-wide semaphore, asio_sync::redis::semaphore, against a real redis-server on loopback
// (started by this program, from the tests' fixture, and stopped at exit). Its costs are round
// trips to Redis, so the reference is the cheapest round trip there is: a bare PING on the same
// connection, measured in the same run.
//
// - Uncontended: chains of acquire(1) + release on one connection, and chains of PINGs. Besides
//   the time, each reports the commands the client sends per operation, counted by Redis itself
//   in an untimed pass: with the slow log's threshold at 0 every command is logged, with the
//   address of the client that sent it, and the commands a script runs are logged under the
//   address "?:0", so they are told apart from the client's own. The log also gives the time Redis
//   spent executing each command (a script's with the commands it runs).
// - Throughput: 1 and 4 processes (forked before any thread exists here, each with its own
//   connection) run acquire(1) + release chains on one semaphore of 4 permits; the time per
//   operation is the wall time of the whole fleet divided by the operations of all processes.
// - Hand-off: waiters queued behind a held permit of a semaphore of 1, each releasing at once when
//   served; the time per operation is that of one hand-off, from a release to the next grant.
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
#include <boost/system/system_error.hpp>

#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

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
#include <vector>

#include "support/harness.hpp"
#include "test/support/redis_server.hpp"

namespace {

namespace asio = boost::asio;
namespace redis = asio_sync::redis;
using asio::awaitable;
using asio_sync::test::redis_server;
using boost::system::error_code;
using namespace std::chrono_literals;

constexpr auto as_result = asio::as_tuple(asio::use_awaitable);
constexpr std::chrono::milliseconds lease = 60s;
// Operations per chain: a chain takes milliseconds, so starting it and waiting for it are noise.
constexpr std::size_t chain_length = 200;
// Operations of the untimed pass that counts commands.
constexpr std::size_t counted_operations = 200;

// One server for the whole run, started by the first benchmark on the main thread (the fixture
// ties the server's life to the thread that started it) and stopped at exit.
redis_server& server()
{
    static redis_server instance;
    return instance;
}

redis::connection_options options_for(std::uint16_t port)
{
    redis::connection_options options;
    options.port = port;
    return options;
}

void check(error_code ec, const char* what)
{
    if (ec)
        throw boost::system::system_error(ec, what);
}

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

// What Redis did per operation for the client while `run_operations(count)` ran, from the slow log
// (see the top of this file): every entry but those of scripts ("?:0") and of this counter.
struct server_side_cost
{
    double commands = 0;  // commands the client sent
    double server_us = 0; // the time Redis took to execute them, scripts included
};

server_side_cost cost_per_operation(const std::function<void(std::size_t)>& run_operations, std::size_t count)
{
    redis_server::client counter(server());
    const std::string info = counter.command({"CLIENT", "INFO"});
    const std::size_t addr_start = info.find("addr=") + 5;
    const std::string own_address = info.substr(addr_start, info.find(' ', addr_start) - addr_start);
    counter.command({"CONFIG", "SET", "slowlog-max-len", "1000000"});
    counter.command({"CONFIG", "SET", "slowlog-log-slower-than", "0"});
    counter.command({"SLOWLOG", "RESET"});
    run_operations(count);
    const redis_server::reply log = counter.execute({"SLOWLOG", "GET", "-1"});
    counter.command({"CONFIG", "SET", "slowlog-log-slower-than", "10000"}); // the default
    server_side_cost total;
    for (const redis_server::reply& entry : log.elements)
    {
        // id, time, duration in microseconds, arguments, client address, client name
        const std::string& address = entry.elements.at(4).text;
        if (address == "?:0" || address == own_address)
            continue;
        total.commands += 1;
        total.server_us += static_cast<double>(entry.elements.at(2).integer);
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
        if (::write(fds_[1], data.data(), data.size()) != static_cast<ssize_t>(data.size()))
            throw std::runtime_error("pipe write failed");
    }

    void receive(std::size_t bytes) const
    {
        std::vector<char> data(bytes);
        for (std::size_t got = 0; got < bytes;)
        {
            const ssize_t n = ::read(fds_[0], data.data(), bytes - got);
            if (n <= 0)
                throw std::runtime_error("pipe read failed: a process ended early");
            got += static_cast<std::size_t>(n);
        }
    }

private:
    std::array<int, 2> fds_{};
};

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
    std::vector<pid_t> children;
    for (std::size_t i = 0; i < processes; ++i)
    {
        const pid_t child = ::fork();
        if (child == 0)
            run_fleet_member(port, fleet_operations / processes, to_parent, from_parent);
        if (child < 0)
        {
            state.SkipWithError("fork failed");
            break;
        }
        children.push_back(child);
    }
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
    for (const pid_t child : children)
    {
        int status = 0;
        ::waitpid(child, &status, 0);
        ok = ok && WIFEXITED(status) && WEXITSTATUS(status) == 0;
    }
    if (!ok)
        state.SkipWithError("a process of the fleet failed");
}
// One batch per repetition: each forked process runs one chain.
BENCHMARK(BM_redis_fleet_throughput)
    ->ArgName("processes")
    ->Arg(1)
    ->Arg(4)
    ->Iterations(fleet_operations)
    ->UseRealTime();

constexpr std::size_t handoff_waiters = 200;

// The queued waiters of one batch of the hand-off benchmark; each gives its permit straight back
// once served. `done` completes when all are served, or with the first failure.
struct handoff_batch
{
    std::atomic<std::size_t> served{0};
    std::atomic<bool> failed{false};
    std::promise<void> done;

    awaitable<void> wait_and_pass_on(redis::semaphore& sem)
    {
        co_await acquire_release_chain(sem, 1);
        if (served.fetch_add(1) + 1 == handoff_waiters)
            done.set_value();
    }

    void on_exit(std::exception_ptr e)
    {
        if (e && !failed.exchange(true))
            done.set_exception(e);
    }
};

void BM_redis_handoff(benchmark::State& state)
{
    link l("bench_handoff", 1);
    l.run(acquire_release_chain(l.semaphore(), 1));
    while (state.KeepRunningBatch(handoff_waiters))
    {
        state.PauseTiming();
        auto holder = l.semaphore().async_acquire_permit(1, asio::use_future).get();
        handoff_batch batch;
        for (std::size_t i = 0; i < handoff_waiters; ++i)
        {
            asio::co_spawn(l.context(), batch.wait_and_pass_on(l.semaphore()),
                           [&batch](std::exception_ptr e) { batch.on_exit(e); });
        }
        // The acquires go out in order on the connection, so once this PING is answered every
        // waiter is in the queue in Redis.
        l.run(ping_chain(l.connection(), 1));
        state.ResumeTiming();
        holder.async_release(asio::detached);
        batch.done.get_future().get();
    }
}
BENCHMARK(BM_redis_handoff)->UseRealTime();

} // namespace
