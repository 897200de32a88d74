// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

// Heap allocations and bytes per operation for each asynchronous operation of ours, on one
// thread. Every handler carries a counting allocator (bound with bind_allocator), so the counters
// separate what the operation takes from the handler's allocator, which is the operation itself
// and belongs to the user, from everything else the program allocates meanwhile (counted by the
// malloc interposer of support/heap_counter.hpp), which should be nothing.
//
// Each iteration starts one operation from outside run(), makes it wait where the name says so,
// lets it complete and runs its handler; the time column is reported but is not the point here.
// Outside run() Asio's per-thread recycling cache is not in play, so whatever does not come from
// the handler's allocator shows up as a malloc. The semaphore runs with both executor types: the
// handler's allocator reaches the completion through the executor's allocator property, which
// the type-erased any_io_executor may not carry. The `_in_run` variants start every operation
// from the previous one's handler instead, as a running program does, where that cache serves
// small blocks that Asio allocates with its default allocator.

#include <asio_sync/mutex.hpp>
#include <asio_sync/semaphore.hpp>
#include <asio_sync/shared_mutex.hpp>

#include <benchmark/benchmark.h>

#include <boost/asio/bind_allocator.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/system/error_code.hpp>

#include <chrono>
#include <cstddef>
#include <utility>

#include "support/harness.hpp"
#include "support/heap_counter.hpp"

namespace {

using asio_sync::bench::allocation_counts;
using asio_sync::bench::counting_allocator;
using asio_sync::bench::global_heap;
using asio_sync::bench::is_idle_now;

// Reports the allocations per iteration made through the handlers' allocator (`handler_heap`)
// and elsewhere (since `before`), after checking that every operation succeeded.
void report_allocations(benchmark::State& state, std::size_t succeeded, const allocation_counts& handler_heap,
                        allocation_counts::snapshot before)
{
    const auto after = global_heap.now();
    const auto through_handler = handler_heap.now();
    if (succeeded != static_cast<std::size_t>(state.iterations()))
        state.SkipWithError("an operation failed or its handler did not run");
    using benchmark::Counter;
    state.counters["handler_allocs"] =
        Counter(static_cast<double>(through_handler.allocations), Counter::kAvgIterations);
    state.counters["handler_bytes"] =
        Counter(static_cast<double>(through_handler.bytes), Counter::kAvgIterations);
    state.counters["other_allocs"] =
        Counter(static_cast<double>(after.allocations - before.allocations), Counter::kAvgIterations);
    state.counters["other_bytes"] =
        Counter(static_cast<double>(after.bytes - before.bytes), Counter::kAvgIterations);
}

// Runs `start(handler)` once per iteration, then the context until the handler has run, and
// reports the allocations per operation through the handler's allocator and outside it.
// `start` begins the operation with the handler it is given and does whatever lets it complete.
template <class Start>
void count_allocations(benchmark::State& state, boost::asio::io_context& ctx, Start start)
{
    allocation_counts handler_heap;
    std::size_t succeeded = 0;
    // Accepts a permit too (async_acquire_permit), which gives its permit back when it goes.
    auto handler = [&succeeded](boost::system::error_code ec, auto&&...) { succeeded += !ec; };
    const auto before = global_heap.now();
    for (auto _ : state)
    {
        start(boost::asio::bind_allocator(counting_allocator<void>(handler_heap), handler));
        ctx.restart();
        ctx.run();
    }
    report_allocations(state, succeeded, handler_heap, before);
}

// Operations per chain in the _in_run variants: the first one, started from outside run(),
// weighs 0.01% in the figures.
constexpr benchmark::IterationCount chain_length = 10000;

// A handler of a chain inside run(): counts its operation and starts the next one.
template <class Start>
struct chain_link
{
    Start* start;
    allocation_counts* handler_heap;
    benchmark::IterationCount* remaining;
    std::size_t* succeeded;

    void operator()(boost::system::error_code ec) const
    {
        *succeeded += !ec;
        // Ending the chain on an error makes the count check fail rather than hide it.
        if (ec || --*remaining == 0)
            return;
        (*start)(boost::asio::bind_allocator(counting_allocator<void>(*handler_heap), *this));
    }
};

// As count_allocations, but every operation after the first of a chain starts inside run().
template <class Start>
void count_allocations_in_run(benchmark::State& state, boost::asio::io_context& ctx, Start start)
{
    allocation_counts handler_heap;
    std::size_t succeeded = 0;
    const auto before = global_heap.now();
    while (state.KeepRunningBatch(chain_length))
    {
        benchmark::IterationCount remaining = chain_length;
        start(boost::asio::bind_allocator(counting_allocator<void>(handler_heap),
                                          chain_link<Start>{&start, &handler_heap, &remaining, &succeeded}));
        ctx.restart();
        ctx.run();
    }
    report_allocations(state, succeeded, handler_heap, before);
}

// count_allocations_in_run when `InRun`, count_allocations otherwise.
template <bool InRun, class Start>
void count_allocations_started(benchmark::State& state, boost::asio::io_context& ctx, Start start)
{
    if constexpr (InRun)
        count_allocations_in_run(state, ctx, std::move(start));
    else
        count_allocations(state, ctx, std::move(start));
}

using io_semaphore = asio_sync::basic_semaphore<boost::asio::io_context::executor_type>;

template <class Semaphore>
void BM_acquire_free_permit(benchmark::State& state)
{
    boost::asio::io_context ctx(1);
    Semaphore sem(ctx, 1);
    count_allocations(state, ctx, [&](auto handler) {
        sem.async_acquire(std::move(handler));
        // The handler has not run yet; the permit is already taken, so this only returns it.
        sem.release();
    });
    if (!is_idle_now(sem, 1))
        state.SkipWithError("a permit went missing");
}
BENCHMARK_TEMPLATE(BM_acquire_free_permit, asio_sync::semaphore);
BENCHMARK_TEMPLATE(BM_acquire_free_permit, io_semaphore);

// Starts an acquire on a semaphore with no free permit, then hands it the permit. The waiter keeps
// it, so the semaphore is back to no free permit once the handler has run.
template <class Semaphore>
auto acquire_that_waits(Semaphore& sem)
{
    return [&sem](auto handler) {
        sem.async_acquire(std::move(handler));
        sem.release();
    };
}

template <class Semaphore, bool InRun>
void BM_acquire_wait(benchmark::State& state)
{
    boost::asio::io_context ctx(1);
    Semaphore sem(ctx, 0);
    count_allocations_started<InRun>(state, ctx, acquire_that_waits(sem));
    if (!is_idle_now(sem, 0))
        state.SkipWithError("a permit went missing");
}
BENCHMARK_TEMPLATE2(BM_acquire_wait, asio_sync::semaphore, false)
    ->Name("BM_acquire_wait<asio_sync::semaphore>");
BENCHMARK_TEMPLATE2(BM_acquire_wait, io_semaphore, false)->Name("BM_acquire_wait<io_semaphore>");
BENCHMARK_TEMPLATE2(BM_acquire_wait, asio_sync::semaphore, true)
    ->Name("BM_acquire_wait_in_run<asio_sync::semaphore>");
BENCHMARK_TEMPLATE2(BM_acquire_wait, io_semaphore, true)->Name("BM_acquire_wait_in_run<io_semaphore>");

void BM_acquire_permit_wait(benchmark::State& state)
{
    boost::asio::io_context ctx(1);
    asio_sync::semaphore sem(ctx, 0);
    count_allocations(state, ctx, [&](auto handler) {
        sem.async_acquire_permit(1, std::move(handler));
        sem.release();
        ctx.restart();
        ctx.run();
        // The permit object gave the permit back after the upcall; take it out of play again.
        if (!sem.try_acquire())
            sem.close();
    });
    if (!is_idle_now(sem, 0))
        state.SkipWithError("a permit went missing");
}
BENCHMARK(BM_acquire_permit_wait);

void BM_acquire_for_wait(benchmark::State& state)
{
    boost::asio::io_context ctx(1);
    asio_sync::semaphore sem(ctx, 0);
    count_allocations(state, ctx, [&](auto handler) {
        // A timeout that never fires: the release satisfies the acquire first.
        sem.async_acquire_for(1, std::chrono::hours(1), std::move(handler));
        sem.release();
    });
    if (!is_idle_now(sem, 0))
        state.SkipWithError("a permit went missing");
}
BENCHMARK(BM_acquire_for_wait);

// Starts a lock on a held mutex, then hands it the lock, which the waiter keeps for the next
// operation to wait on.
auto lock_that_waits(asio_sync::mutex& mtx)
{
    return [&mtx](auto handler) {
        mtx.async_lock(std::move(handler));
        mtx.unlock();
    };
}

template <bool InRun>
void BM_mutex_lock_wait(benchmark::State& state)
{
    boost::asio::io_context ctx(1);
    asio_sync::mutex mtx(ctx);
    if (!mtx.try_lock())
        state.SkipWithError("a new mutex is locked");
    count_allocations_started<InRun>(state, ctx, lock_that_waits(mtx));
    mtx.unlock();
    if (!mtx.try_lock())
        state.SkipWithError("the mutex was left locked");
}
BENCHMARK_TEMPLATE(BM_mutex_lock_wait, false)->Name("BM_mutex_lock_wait");
BENCHMARK_TEMPLATE(BM_mutex_lock_wait, true)->Name("BM_mutex_lock_wait_in_run");

void BM_shared_mutex_lock_shared_wait(benchmark::State& state)
{
    boost::asio::io_context ctx(1);
    asio_sync::shared_mutex mtx(ctx);
    count_allocations(state, ctx, [&](auto handler) {
        if (!mtx.try_lock())
            return;
        mtx.async_lock_shared(std::move(handler));
        mtx.unlock(); // lets the reader in
        ctx.restart();
        ctx.run();
        mtx.unlock_shared();
    });
    if (!mtx.try_lock())
        state.SkipWithError("the lock was left held");
}
BENCHMARK(BM_shared_mutex_lock_shared_wait);

void BM_shared_mutex_lock_wait(benchmark::State& state)
{
    boost::asio::io_context ctx(1);
    asio_sync::shared_mutex mtx(ctx);
    count_allocations(state, ctx, [&](auto handler) {
        if (!mtx.try_lock_shared())
            return;
        mtx.async_lock(std::move(handler));
        mtx.unlock_shared(); // lets the writer in
        ctx.restart();
        ctx.run();
        mtx.unlock();
    });
    if (!mtx.try_lock())
        state.SkipWithError("the lock was left held");
}
BENCHMARK(BM_shared_mutex_lock_wait);

} // namespace
