// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

// Suspended hand-offs on one thread, in a fixed order, so that their cost can be counted in
// instructions and comes out the same every run (bench/profile.py --instructions): the contended
// scenarios of bench/contended.cpp and bench/locks.cpp hand off only while their two threads
// really run at once, which on a busy machine they often do not.
//
// Two coroutines share one permit, and each holds it across a `co_await post` before releasing
// it, so the other one is always queued by then: every acquire but the first waits, and every
// release hands the permit to the other coroutine. An operation is one such round of one
// coroutine: an acquire that waits, a post, a release that hands off. Next to it, the same
// coroutines with the acquire replaced by a second `co_await post`: what the round costs with a
// bare trip through the executor in place of the hand-off. The time column is per round.

#include <asio_sync/semaphore.hpp>

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

constexpr std::size_t sides = 2;

asio::awaitable<void> handoff_task(asio_sync::semaphore& sem, std::atomic<std::size_t>& completed)
{
    auto ex = co_await asio::this_coro::executor;
    for (std::size_t i = 0; i < rounds; ++i)
    {
        co_await sem.async_acquire(asio::use_awaitable);
        co_await asio::post(ex, asio::use_awaitable);
        sem.release();
    }
    completed.fetch_add(rounds, std::memory_order_relaxed);
}

asio::awaitable<void> post_pair_task(std::atomic<std::size_t>& completed)
{
    auto ex = co_await asio::this_coro::executor;
    for (std::size_t i = 0; i < rounds; ++i)
    {
        co_await asio::post(ex, asio::use_awaitable);
        co_await asio::post(ex, asio::use_awaitable);
    }
    completed.fetch_add(rounds, std::memory_order_relaxed);
}

template <class MakeTask>
void run_rounds(benchmark::State& state, asio::io_context& ctx, MakeTask make)
{
    context_threads pool(ctx, 1);
    std::atomic<std::size_t> completed{0};
    while (state.KeepRunningBatch(static_cast<benchmark::IterationCount>(sides * rounds)))
    {
        completed.store(0, std::memory_order_relaxed);
        const std::size_t failures = run_coroutines(ctx, sides, [&](std::size_t) { return make(completed); });
        // SkipWithError also makes the next KeepRunningBatch return false, ending the loop.
        if (failures != 0 || completed.load() != sides * rounds)
            state.SkipWithError("a task failed or fell short of its rounds");
    }
}

void BM_semaphore_handoff(benchmark::State& state)
{
    asio::io_context ctx(1);
    asio_sync::semaphore sem(ctx, 1);
    run_rounds(state, ctx, [&](std::atomic<std::size_t>& completed) { return handoff_task(sem, completed); });
    if (!asio_sync::bench::is_idle_now(sem, 1))
        state.SkipWithError("a permit went missing");
}

void BM_post_pair(benchmark::State& state)
{
    asio::io_context ctx(1);
    run_rounds(state, ctx, [](std::atomic<std::size_t>& completed) { return post_pair_task(completed); });
}

BENCHMARK(BM_semaphore_handoff)->UseRealTime();
BENCHMARK(BM_post_pair)->UseRealTime();

} // namespace
