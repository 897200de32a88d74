// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

// The floor of the contended scenarios: the same coroutines on the same threads, each doing what
// a suspended hand-off cannot do without, one trip through the executor, and nothing else. Where a
// scenario's task does an acquire and a release (bench/contended.cpp, bench/locks.cpp), waits for
// its turn (bench/notify.cpp) or arrives at a barrier (bench/barrier.cpp), the floor's task does
// `co_await post(executor, use_awaitable)`: the coroutine suspends, the executor queues it, a
// thread of the pool resumes it. A primitive whose every operation suspends costs at least this
// per operation; the difference is what the primitive adds to the hop.
//
// The tasks do not wait for each other, so both threads of a pool can post at once; in a scenario
// that hands one permit around, the hand-offs cannot overlap. The floor is the lower of the two.
//
// The time column is wall-clock time per operation, counted as in the scenario it stands beside:
// per task operation (tasks x rounds per batch), or, with `per_round`, per round in which every
// task posts once (a barrier's phase).

#include <benchmark/benchmark.h>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <atomic>
#include <cstddef>

#include "support/harness.hpp"

namespace {

namespace asio = boost::asio;
using asio_sync::bench::context_threads;
using asio_sync::bench::rounds;
using asio_sync::bench::run_coroutines;

asio::awaitable<void> post_task(std::atomic<std::size_t>& completed)
{
    auto ex = co_await asio::this_coro::executor;
    for (std::size_t i = 0; i < rounds; ++i)
        co_await asio::post(ex, asio::use_awaitable);
    completed.fetch_add(rounds, std::memory_order_relaxed);
}

// Arguments: tasks, threads. Counts `unit` operations per batch.
void run_floor(benchmark::State& state, benchmark::IterationCount unit)
{
    const auto tasks = static_cast<std::size_t>(state.range(0));
    const auto threads = static_cast<std::size_t>(state.range(1));
    asio::io_context ctx(static_cast<int>(threads));
    context_threads pool(ctx, threads);
    std::atomic<std::size_t> completed{0};
    while (state.KeepRunningBatch(unit))
    {
        completed.store(0, std::memory_order_relaxed);
        const std::size_t failures =
            run_coroutines(ctx, tasks, [&](std::size_t) { return post_task(completed); });
        // SkipWithError also makes the next KeepRunningBatch return false, ending the loop.
        if (failures != 0 || completed.load() != tasks * rounds)
            state.SkipWithError("a task failed or fell short of its rounds");
    }
}

void BM_co_await_post_floor(benchmark::State& state)
{
    run_floor(state, state.range(0) * static_cast<benchmark::IterationCount>(rounds));
}

void BM_co_await_post_floor_per_round(benchmark::State& state)
{
    run_floor(state, static_cast<benchmark::IterationCount>(rounds));
}

// The task and thread counts of every contended scenario: the semaphore's (8, 16 and 6 tasks; the
// mixed acquires, 3), the mutex (4), the shared mutex (4 readers + 2 writers) and the notify
// hand-off (2 sides).
BENCHMARK(BM_co_await_post_floor)
    ->ArgNames({"tasks", "threads"})
    ->Args({8, 2})
    ->Args({16, 2})
    ->Args({6, 1})
    ->Args({6, 2})
    ->Args({3, 2})
    ->Args({4, 2})
    ->Args({2, 2})
    ->UseRealTime();
// The barrier's phase: 4 parties, each posting once per round.
BENCHMARK(BM_co_await_post_floor_per_round)->ArgNames({"tasks", "threads"})->Args({4, 2})->UseRealTime();

} // namespace
