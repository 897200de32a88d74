// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

// A long queue drained: 1,000,000 callbacks wait on a semaphore with no free permit, then one
// release starts a chain in which every woken handler releases the permit it was given, handing
// it to the next waiter. The time column is the time per hand-off (one release that wakes a
// waiter, plus running the woken handler) on an io_context(1); queueing the waiters is outside
// the timed region. The counters give the heap allocations and bytes per waiter while queueing,
// counted by the malloc interposer of support/heap_counter.hpp, so they include every allocation
// a waiter costs, whoever makes it.
//
// The peers queue the same waiters the same way: the channel used as a semaphore (capacity 1,
// its slot taken, pending sends queued) and the strand-plus-deque semaphore.

#include <asio_sync/semaphore.hpp>

#include <benchmark/benchmark.h>

#include <boost/asio/io_context.hpp>
#include <boost/system/error_code.hpp>

#include <cstddef>

#include "support/channel_semaphore.hpp"
#include "support/harness.hpp"
#include "support/heap_counter.hpp"
#include "support/strand_semaphore.hpp"

namespace {

using asio_sync::bench::channel_semaphore;
using asio_sync::bench::global_heap;
using asio_sync::bench::is_idle_now;
using asio_sync::bench::strand_semaphore;

constexpr std::size_t queued_waiters = 1000000;

// A waiter: counts its wake-up and passes the permit on.
template <class Semaphore>
struct pass_on
{
    Semaphore* sem;
    std::size_t* woken;

    void operator()(boost::system::error_code ec) const
    {
        // A waiter woken with an error keeps the chain from going on, so the count check fails.
        if (ec)
            return;
        ++*woken;
        sem->release();
    }
};

template <class Semaphore>
void BM_drain(benchmark::State& state)
{
    boost::asio::io_context ctx(1);
    Semaphore sem(ctx, 0);
    std::size_t woken = 0;
    std::size_t allocations = 0;
    std::size_t bytes = 0;
    std::size_t queued = 0;
    while (state.KeepRunningBatch(static_cast<benchmark::IterationCount>(queued_waiters)))
    {
        state.PauseTiming();
        woken = 0;
        const auto before = global_heap.now();
        for (std::size_t i = 0; i < queued_waiters; ++i)
            sem.async_acquire(pass_on<Semaphore>{&sem, &woken});
        // Lets the strand semaphore file the acquires it has posted; wakes nobody.
        ctx.restart();
        ctx.poll();
        const auto after = global_heap.now();
        allocations += after.allocations - before.allocations;
        bytes += after.bytes - before.bytes;
        queued += queued_waiters;
        state.ResumeTiming();

        sem.release();
        ctx.restart();
        ctx.run();
        // The last waiter gives its permit back to nobody, so one permit is left free.
        if (woken != queued_waiters || !is_idle_now(sem, 1))
        {
            state.SkipWithError("a waiter was not woken or a permit went missing");
            break;
        }
        // Back to no free permit for the next batch.
        state.PauseTiming();
        sem.async_acquire([](boost::system::error_code) {});
        ctx.restart();
        ctx.run();
        state.ResumeTiming();
    }
    state.counters["allocs_per_waiter"] = static_cast<double>(allocations) / static_cast<double>(queued);
    state.counters["bytes_per_waiter"] = static_cast<double>(bytes) / static_cast<double>(queued);
}
BENCHMARK_TEMPLATE(BM_drain, asio_sync::semaphore)->Unit(benchmark::kNanosecond);
BENCHMARK_TEMPLATE(BM_drain, channel_semaphore)->Unit(benchmark::kNanosecond);
BENCHMARK_TEMPLATE(BM_drain, strand_semaphore)->Unit(benchmark::kNanosecond);

} // namespace
