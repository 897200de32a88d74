// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

// How the contended semaphore spreads its grants, next to its speed: `tasks` coroutines on an
// io_context run by two threads share `permits` permits with zero hold time, as in
// contended.cpp, and every grant is logged in the order the coroutines resume. The counters:
//  - busiest_thread_share: the fraction of grants that resumed on the busier of the two threads.
//    A release submits the first waiter it serves as a continuation, which keeps a strictly serial
//    chain of hand-offs (one permit) on one thread instead of bouncing it between cores; where
//    there is parallel work, both threads share it;
//  - worst_gap: the most grants other tasks received between two grants of one task, over the
//    whole run. With strict FIFO and nobody suspended elsewhere it is tasks - 1; the budget of
//    acquires that need not suspend (64 in a row on a thread) raises it a little, and the
//    operating system preempting a thread mid-task raises it a lot: a task whose thread is
//    preempted (or whose grant sits in the preempted releaser's queue as a continuation) waits
//    for that thread while the other tasks go on with the other thread.
// The time column is wall-clock time per acquire+release, as in contended.cpp.

#include <asio_sync/semaphore.hpp>

#include <benchmark/benchmark.h>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

#include "support/harness.hpp"

namespace {

using asio_sync::bench::context_threads;
using asio_sync::bench::rounds;
using asio_sync::bench::run_coroutines;

void BM_fairness(benchmark::State& state)
{
    const auto tasks = static_cast<std::size_t>(state.range(0));
    const auto permits = static_cast<std::size_t>(state.range(1));
    boost::asio::io_context ctx(2);
    asio_sync::semaphore sem(ctx, permits);
    context_threads threads(ctx, 2);

    // Who got each grant, in resumption order, and on which thread.
    std::vector<std::size_t> grantee(tasks * rounds);
    std::vector<std::thread::id> thread_of(tasks * rounds);
    std::atomic<std::size_t> next{0};
    std::size_t worst_gap = 0;
    double busiest_share = 0;
    std::size_t failures = 0;

    for (auto _ : state)
    {
        next.store(0);
        failures += run_coroutines(ctx, tasks, [&](std::size_t task) -> boost::asio::awaitable<void> {
            for (std::size_t i = 0; i < rounds; ++i)
            {
                co_await sem.async_acquire(boost::asio::use_awaitable);
                const std::size_t g = next.fetch_add(1, std::memory_order_relaxed);
                grantee[g] = task;
                thread_of[g] = std::this_thread::get_id();
                sem.release();
            }
        });
        state.PauseTiming();
        std::vector<std::size_t> last(tasks, grantee.size());
        for (std::size_t g = 0; g < grantee.size(); ++g)
        {
            std::size_t& previous = last[grantee[g]];
            if (previous != grantee.size())
                worst_gap = std::max(worst_gap, g - previous - 1);
            previous = g;
        }
        const auto on_first = std::count(thread_of.begin(), thread_of.end(), thread_of.front());
        const double share = static_cast<double>(on_first) / static_cast<double>(thread_of.size());
        busiest_share = std::max(busiest_share, std::max(share, 1 - share));
        state.ResumeTiming();
    }
    if (failures != 0 || next.load() != grantee.size() || sem.available() != permits || sem.waiting() != 0)
        state.SkipWithError("a task failed, or a grant or a permit went missing");
    const std::int64_t grants = state.iterations() * static_cast<std::int64_t>(grantee.size());
    state.SetItemsProcessed(grants);
    state.counters["worst_gap"] = static_cast<double>(worst_gap);
    state.counters["busiest_thread_share"] = busiest_share;
    state.counters["ns_per_op"] = benchmark::Counter(
        static_cast<double>(grants), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_fairness)
    ->Args({8, 2})
    ->Args({16, 1})
    ->Args({6, 5})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

} // namespace
