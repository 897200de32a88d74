// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

// Contended costs: `tasks` coroutines on an io_context run by `threads` threads share `permits`
// permits, and each does `rounds` acquire+release pairs with nothing in between (zero hold time),
// so the figure is the synchronisation alone. The references, run in the same binary with the
// same scenarios, are what Asio users reach for today: a concurrent_channel of capacity `permits`
// used as a semaphore (a send takes a slot, a receive frees one) and a strand-plus-deque semaphore
// (support/strand_semaphore.hpp). All three use any_io_executor and use_awaitable, so only the
// primitive differs. The blocking reference is std::counting_semaphore with one std::thread per
// task doing the same pairs.
//
// The time column is wall-clock time per acquire+release pair (KeepRunningBatch counts each pair;
// real time because the work runs on the pool while the benchmark thread sleeps).

#include <asio_sync/semaphore.hpp>

#include <benchmark/benchmark.h>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/experimental/concurrent_channel.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/error_code.hpp>

#include <atomic>
#include <cstddef>
#include <semaphore>
#include <vector>

#include "support/harness.hpp"
#include "support/strand_semaphore.hpp"

namespace {

using channel = boost::asio::experimental::concurrent_channel<void(boost::system::error_code)>;

using asio_sync::bench::context_threads;
using asio_sync::bench::rounds;
using asio_sync::bench::run_coroutines;
using asio_sync::bench::strand_semaphore;
using asio_sync::bench::thread_team;

// Each pair takes and gives back `n` permits.
template <class Semaphore>
boost::asio::awaitable<void> semaphore_task(Semaphore& sem, std::size_t n,
                                            std::atomic<std::size_t>& completed)
{
    for (std::size_t i = 0; i < rounds; ++i)
    {
        co_await sem.async_acquire(n, boost::asio::use_awaitable);
        sem.release(n);
    }
    completed.fetch_add(rounds, std::memory_order_relaxed);
}

// A channel slot is one permit, so a channel task always takes one.
boost::asio::awaitable<void> channel_task(channel& ch, std::size_t, std::atomic<std::size_t>& completed)
{
    std::size_t received = 0;
    for (std::size_t i = 0; i < rounds; ++i)
    {
        co_await ch.async_send(boost::system::error_code(), boost::asio::use_awaitable);
        // Every holder has one message in the buffer, so this cannot fail unless the channel
        // misbehaves; counting it keeps a failure from passing for a fast run.
        received += ch.try_receive([](boost::system::error_code) {});
    }
    completed.fetch_add(received, std::memory_order_relaxed);
}

bool is_idle(asio_sync::semaphore& sem, std::size_t permits)
{
    return asio_sync::bench::is_idle_now(sem, permits);
}

bool is_idle(channel& ch, std::size_t)
{
    return !ch.ready();
}

// The last releases may still be queued on the strand when the tasks have finished.
bool is_idle(strand_semaphore& sem, std::size_t permits)
{
    return sem.is_idle(permits);
}

// Runs batches of tasks on one primitive of `permits` permits; task i takes `takes[i]` permits per
// pair. Every task does `rounds` pairs.
template <class Primitive, class Task>
void run_scenario(benchmark::State& state, Task task, std::size_t permits, std::size_t threads,
                  const std::vector<std::size_t>& takes)
{
    const std::size_t pairs = takes.size() * rounds;

    // Declared in this order so the threads are joined before the primitive is destroyed, and the
    // primitive before its context.
    boost::asio::io_context ctx(static_cast<int>(threads));
    Primitive primitive(ctx, permits);
    context_threads pool(ctx, threads);

    std::atomic<std::size_t> completed{0};
    while (state.KeepRunningBatch(static_cast<benchmark::IterationCount>(pairs)))
    {
        completed.store(0, std::memory_order_relaxed);
        const std::size_t failures = run_coroutines(
            ctx, takes.size(), [&](std::size_t i) { return task(primitive, takes[i], completed); });
        // SkipWithError also makes the next KeepRunningBatch return false, ending the loop.
        if (failures != 0 || completed.load() != pairs || !is_idle(primitive, permits))
            state.SkipWithError("a task failed, fell short of its rounds, or a permit went missing");
    }
}

// Arguments: tasks, permits, threads; every task takes one permit per pair.
template <class Primitive, class Task>
void run_uniform_scenario(benchmark::State& state, Task task)
{
    const auto tasks = static_cast<std::size_t>(state.range(0));
    const auto permits = static_cast<std::size_t>(state.range(1));
    const auto threads = static_cast<std::size_t>(state.range(2));
    run_scenario<Primitive>(state, task, permits, threads, std::vector<std::size_t>(tasks, 1));
}

void BM_semaphore(benchmark::State& state)
{
    run_uniform_scenario<asio_sync::semaphore>(state, semaphore_task<asio_sync::semaphore>);
}

void BM_channel(benchmark::State& state)
{
    run_uniform_scenario<channel>(state, channel_task);
}

void BM_strand_semaphore(benchmark::State& state)
{
    run_uniform_scenario<strand_semaphore>(state, semaphore_task<strand_semaphore>);
}

// Arguments: tasks, permits (each task its own std::thread).
void BM_std_counting_semaphore(benchmark::State& state)
{
    const auto tasks = static_cast<std::size_t>(state.range(0));
    const auto permits = static_cast<std::ptrdiff_t>(state.range(1));
    const std::size_t pairs = tasks * rounds;

    std::counting_semaphore<> sem(permits);
    std::atomic<std::size_t> completed{0};
    thread_team team(tasks, [&](std::size_t) {
        for (std::size_t i = 0; i < rounds; ++i)
        {
            sem.acquire();
            sem.release();
        }
        completed.fetch_add(rounds, std::memory_order_relaxed);
    });
    while (state.KeepRunningBatch(static_cast<benchmark::IterationCount>(pairs)))
    {
        completed.store(0, std::memory_order_relaxed);
        team.run_batch();
        // Taking every permit without blocking proves that all of them came back.
        std::ptrdiff_t back = 0;
        while (back < permits && sem.try_acquire())
            ++back;
        sem.release(back);
        if (completed.load() != pairs || back != permits)
            state.SkipWithError("a thread fell short of its rounds or a permit went missing");
    }
}

void scenarios(benchmark::internal::Benchmark* b)
{
    b->ArgNames({"tasks", "permits", "threads"});
    b->Args({8, 2, 2});
    b->Args({16, 1, 2});
    b->Args({6, 10, 1});
    b->Args({6, 10, 2});
    b->Args({6, 5, 1});
    b->Args({6, 5, 2});
    b->UseRealTime();
}

// The same task and permit counts; the thread count is the task count.
void thread_scenarios(benchmark::internal::Benchmark* b)
{
    b->ArgNames({"tasks", "permits"});
    b->Args({8, 2});
    b->Args({16, 1});
    b->Args({6, 10});
    b->Args({6, 5});
    b->UseRealTime();
}

BENCHMARK(BM_semaphore)->Apply(scenarios);
BENCHMARK(BM_channel)->Apply(scenarios);
BENCHMARK(BM_strand_semaphore)->Apply(scenarios);
BENCHMARK(BM_std_counting_semaphore)->Apply(thread_scenarios);

// Mixed batch acquires: three tasks take 4, 10 and 8 of 10 permits per pair on two threads, so
// a large request must wait for several releases and small ones must not overtake it for ever.
// A channel and std::counting_semaphore cannot take several permits at once, so only the
// strand semaphore is compared here.
const std::vector<std::size_t> mixed_takes{4, 10, 8};
constexpr std::size_t mixed_permits = 10;
constexpr std::size_t mixed_threads = 2;

void BM_semaphore_mixed(benchmark::State& state)
{
    run_scenario<asio_sync::semaphore>(state, semaphore_task<asio_sync::semaphore>, mixed_permits,
                                       mixed_threads, mixed_takes);
}

void BM_strand_semaphore_mixed(benchmark::State& state)
{
    run_scenario<strand_semaphore>(state, semaphore_task<strand_semaphore>, mixed_permits, mixed_threads,
                                   mixed_takes);
}

BENCHMARK(BM_semaphore_mixed)->UseRealTime();
BENCHMARK(BM_strand_semaphore_mixed)->UseRealTime();

} // namespace
