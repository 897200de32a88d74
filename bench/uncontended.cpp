// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

// Uncontended costs: one thread, one permit, nobody waits. Each operation of ours runs next to the
// reference it is built from, in the same binary and the same run, because only the ratio carries
// over from one machine (or one load) to another.
//
// The asynchronous benchmarks measure chains on a running io_context(1): every handler starts the
// next operation from inside run(), as a real program does, and the chain is long enough that
// restarting the context and starting the chain vanish in the per-handler figure. The time column
// of every benchmark here is the cost of one operation (KeepRunningBatch counts each link).
//
// The asynchronous acquires also run on the peers of bench/contended.cpp with the same chains: a
// concurrent_channel of capacity 1 used as a semaphore (support/channel_semaphore.hpp) and the
// strand-plus-deque semaphore.

#include <asio_sync/mutex.hpp>
#include <asio_sync/semaphore.hpp>
#include <asio_sync/upgrade_mutex.hpp>

#include <benchmark/benchmark.h>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/error_code.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <exception>
#include <semaphore>

#include "support/channel_semaphore.hpp"
#include "support/harness.hpp"
#include "support/strand_semaphore.hpp"

namespace {

using io_semaphore = asio_sync::basic_semaphore<boost::asio::io_context::executor_type>;
using asio_sync::bench::channel_semaphore;
using asio_sync::bench::is_idle_now;
using asio_sync::bench::strand_semaphore;

// Links per chain: long enough that ctx.restart(), ctx.run()'s entry and exit and the first post
// (from outside run(), so through the locked shared queue) cost under 0.1% of the batch.
constexpr benchmark::IterationCount chain_length = 10000;

void BM_atomic_pair(benchmark::State& state)
{
    std::atomic<std::size_t> permits{1};
    std::size_t failures = 0;
    for (auto _ : state)
    {
        // Same orders as the semaphore's CAS loop; the result is consumed, as try_acquire's is.
        const std::size_t before = permits.fetch_sub(1, std::memory_order_acquire);
        benchmark::DoNotOptimize(before);
        failures += before == 0;
        permits.fetch_add(1, std::memory_order_release);
        benchmark::ClobberMemory();
    }
    if (failures != 0 || permits.load() != 1)
        state.SkipWithError("atomic pair lost count");
}
BENCHMARK(BM_atomic_pair);

// The timed loop of a try pair on a semaphore of one permit: try_acquire, its result consumed,
// then release. Returns the number of failed tries.
template <class Semaphore>
std::size_t run_try_pairs(benchmark::State& state, Semaphore& sem)
{
    std::size_t failures = 0;
    for (auto _ : state)
    {
        const bool acquired = sem.try_acquire();
        benchmark::DoNotOptimize(acquired);
        failures += !acquired;
        sem.release();
        benchmark::ClobberMemory();
    }
    return failures;
}

template <class Semaphore>
void BM_try_acquire_release(benchmark::State& state)
{
    boost::asio::io_context ctx(1);
    Semaphore sem(ctx, 1);
    const std::size_t failures = run_try_pairs(state, sem);
    // A failed try followed by a release would leave 2 permits, so this catches either failure.
    if (failures != 0 || sem.available() != 1)
        state.SkipWithError("try_acquire failed with a permit available");
}
BENCHMARK_TEMPLATE(BM_try_acquire_release, asio_sync::semaphore);
BENCHMARK_TEMPLATE(BM_try_acquire_release, io_semaphore);

// The same pair on a bounded semaphore, whose plain acquire and release also keep the bound's
// account.
void BM_try_acquire_release_bounded(benchmark::State& state)
{
    boost::asio::io_context ctx(1);
    asio_sync::semaphore sem(ctx, 1, 1);
    std::size_t failures = 0;
    for (auto _ : state)
    {
        const bool acquired = sem.try_acquire();
        benchmark::DoNotOptimize(acquired);
        failures += !acquired;
        failures += !sem.try_release();
        benchmark::ClobberMemory();
    }
    if (failures != 0 || sem.available() != 1)
        state.SkipWithError("bounded try pair failed");
}
BENCHMARK(BM_try_acquire_release_bounded);

// The pair through a permit object, which gives its permit back when it goes.
void BM_try_acquire_permit(benchmark::State& state)
{
    boost::asio::io_context ctx(1);
    asio_sync::semaphore sem(ctx, 1);
    std::size_t failures = 0;
    for (auto _ : state)
    {
        auto permit = sem.try_acquire_permit();
        benchmark::DoNotOptimize(permit);
        failures += !permit;
    }
    if (failures != 0 || sem.available() != 1)
        state.SkipWithError("try_acquire_permit failed with a permit available");
}
BENCHMARK(BM_try_acquire_permit);

// The blocking library's pair, for scale: std::counting_semaphore's try_acquire and release.
void BM_std_counting_semaphore_try_pair(benchmark::State& state)
{
    std::counting_semaphore<> sem(1);
    const std::size_t failures = run_try_pairs(state, sem);
    // Exactly one permit left: one try succeeds, the next fails.
    if (failures != 0 || !sem.try_acquire() || sem.try_acquire())
        state.SkipWithError("try_acquire failed with a permit available");
}
BENCHMARK(BM_std_counting_semaphore_try_pair);

// One link of a chain of bare posts: the handler posts its successor until the chain is done.
struct post_link
{
    boost::asio::io_context* ctx;
    benchmark::IterationCount* remaining;
    benchmark::IterationCount* executed;

    void operator()() const
    {
        ++*executed;
        if (--*remaining != 0)
            boost::asio::post(*ctx, *this);
    }
};

// The reference: one post from inside a running handler plus that handler's execution. A chain,
// rather than post() + run_one() per iteration, because run_one() adds its own entry, work
// accounting and a stop-and-restart once the work count drops to zero, none of which a
// completion pays inside a running context.
void BM_post_round_trip(benchmark::State& state)
{
    boost::asio::io_context ctx(1);
    benchmark::IterationCount executed = 0;
    while (state.KeepRunningBatch(chain_length))
    {
        benchmark::IterationCount remaining = chain_length;
        ctx.restart();
        boost::asio::post(ctx, post_link{&ctx, &remaining, &executed});
        ctx.run();
    }
    if (executed != state.iterations())
        state.SkipWithError("post chain broke off");
}
BENCHMARK(BM_post_round_trip);

// One link of an acquire chain: holds the only permit, gives it back, and starts the next acquire,
// which finds the permit free. Same shape as post_link, so the difference is the semaphore.
template <class Semaphore>
struct acquire_link
{
    Semaphore* sem;
    benchmark::IterationCount* remaining;
    benchmark::IterationCount* executed;

    void operator()(boost::system::error_code ec) const
    {
        // Ending the chain on an error makes the count check below fail rather than hide it.
        if (ec)
            return;
        ++*executed;
        sem->release();
        if (--*remaining != 0)
            sem->async_acquire(*this);
    }
};

template <class Semaphore>
void BM_async_acquire_release_callback(benchmark::State& state)
{
    boost::asio::io_context ctx(1);
    Semaphore sem(ctx, 1);
    benchmark::IterationCount executed = 0;
    while (state.KeepRunningBatch(chain_length))
    {
        benchmark::IterationCount remaining = chain_length;
        ctx.restart();
        sem.async_acquire(acquire_link<Semaphore>{&sem, &remaining, &executed});
        ctx.run();
    }
    if (executed != state.iterations() || !is_idle_now(sem, 1))
        state.SkipWithError("acquire chain broke off or lost a permit");
}
BENCHMARK_TEMPLATE(BM_async_acquire_release_callback, asio_sync::semaphore);
BENCHMARK_TEMPLATE(BM_async_acquire_release_callback, io_semaphore);
BENCHMARK_TEMPLATE(BM_async_acquire_release_callback, channel_semaphore);
BENCHMARK_TEMPLATE(BM_async_acquire_release_callback, strand_semaphore);

// The chain with a timed lock of a mutex, which finds it free: no timer starts, so it should cost
// what the plain acquire costs.
struct timed_lock_link
{
    asio_sync::mutex* mtx;
    benchmark::IterationCount* remaining;
    benchmark::IterationCount* executed;

    void operator()(boost::system::error_code ec) const
    {
        if (ec)
            return;
        ++*executed;
        mtx->unlock();
        if (--*remaining != 0)
            mtx->async_lock_for(std::chrono::seconds(60), *this);
    }
};

void BM_mutex_async_lock_for_unlock_callback(benchmark::State& state)
{
    boost::asio::io_context ctx(1);
    asio_sync::mutex mtx(ctx);
    benchmark::IterationCount executed = 0;
    while (state.KeepRunningBatch(chain_length))
    {
        benchmark::IterationCount remaining = chain_length;
        ctx.restart();
        mtx.async_lock_for(std::chrono::seconds(60), timed_lock_link{&mtx, &remaining, &executed});
        ctx.run();
    }
    if (executed != state.iterations() || !mtx.try_lock())
        state.SkipWithError("timed lock chain broke off or left the mutex locked");
}
BENCHMARK(BM_mutex_async_lock_for_unlock_callback);

template <class Semaphore>
boost::asio::awaitable<void> acquire_loop(Semaphore& sem, benchmark::IterationCount count,
                                          benchmark::IterationCount& executed)
{
    for (benchmark::IterationCount i = 0; i < count; ++i)
    {
        co_await sem.async_acquire(boost::asio::use_awaitable);
        sem.release();
        ++executed;
    }
}

boost::asio::awaitable<void> post_loop(boost::asio::io_context& ctx, benchmark::IterationCount count,
                                       benchmark::IterationCount& executed)
{
    for (benchmark::IterationCount i = 0; i < count; ++i)
    {
        co_await boost::asio::post(ctx, boost::asio::use_awaitable);
        ++executed;
    }
}

// Runs one coroutine per batch, so the frame allocation and co_spawn's own posts are spread over
// chain_length loop turns. An exception from the loop counts as a failure instead of vanishing.
// Returns the number of handlers the context ran.
template <class Loop>
std::size_t run_coroutine_batches(benchmark::State& state, boost::asio::io_context& ctx, Loop make_loop,
                                  benchmark::IterationCount& executed)
{
    std::size_t failures = 0;
    std::size_t handlers = 0;
    while (state.KeepRunningBatch(chain_length))
    {
        ctx.restart();
        boost::asio::co_spawn(ctx, make_loop(),
                              [&failures](std::exception_ptr e) { failures += e != nullptr; });
        handlers += ctx.run();
    }
    if (failures != 0 || executed != state.iterations())
        state.SkipWithError("coroutine loop broke off");
    return handlers;
}

template <class Semaphore>
void BM_async_acquire_release_coroutine(benchmark::State& state)
{
    boost::asio::io_context ctx(1);
    Semaphore sem(ctx, 1);
    benchmark::IterationCount executed = 0;
    run_coroutine_batches(
        state, ctx, [&] { return acquire_loop(sem, chain_length, executed); }, executed);
    if (!is_idle_now(sem, 1))
        state.SkipWithError("coroutine loop lost a permit");
}
BENCHMARK_TEMPLATE(BM_async_acquire_release_coroutine, asio_sync::semaphore);
BENCHMARK_TEMPLATE(BM_async_acquire_release_coroutine, channel_semaphore);
BENCHMARK_TEMPLATE(BM_async_acquire_release_coroutine, strand_semaphore);

// An upgrade with nobody else in: the upgrade lock, the upgrade and the unlock, each granted at
// once, from a coroutine. The time column is per round of the three.
boost::asio::awaitable<void> upgrade_loop(asio_sync::upgrade_mutex& mtx, benchmark::IterationCount count,
                                          benchmark::IterationCount& executed)
{
    for (benchmark::IterationCount i = 0; i < count; ++i)
    {
        co_await mtx.async_lock_upgrade(boost::asio::use_awaitable);
        co_await mtx.async_upgrade(boost::asio::use_awaitable);
        mtx.unlock();
        ++executed;
    }
}

void BM_upgrade_mutex_lock_upgrade_upgrade_unlock(benchmark::State& state)
{
    boost::asio::io_context ctx(1);
    asio_sync::upgrade_mutex mtx(ctx);
    benchmark::IterationCount executed = 0;
    run_coroutine_batches(
        state, ctx, [&] { return upgrade_loop(mtx, chain_length, executed); }, executed);
    if (!mtx.try_lock())
        state.SkipWithError("the upgrade loop left the mutex locked");
}
BENCHMARK(BM_upgrade_mutex_lock_upgrade_upgrade_unlock);

void BM_co_await_post(benchmark::State& state)
{
    boost::asio::io_context ctx(1);
    benchmark::IterationCount executed = 0;
    run_coroutine_batches(
        state, ctx, [&] { return post_loop(ctx, chain_length, executed); }, executed);
}
BENCHMARK(BM_co_await_post);

// The coroutine budget when the acquires are not in a row: every turn takes the free permit, gives
// it back, then suspends on something else (a post, the cheapest suspension there is, so the
// budget's share of the time is the largest it can be). The budget counts the immediate acquires
// of a thread whatever happened in between (no public Asio interface tells an awaitable that its
// coroutine has suspended since), so every 64th acquire yields first: a post of its own. Next to
// it, the same loop with the thread's count cleared after every suspension, which is what a
// detector of suspensions would give (the difference is all the budget costs here), and the loop
// taking the permit with try_acquire (no budget, no awaitable frame). The counter handlers_per_op
// is io_context::run()'s count of handlers per turn: about 1 + 1/64 against 1.
enum class take_with
{
    async_acquire,
    async_acquire_budget_cleared_on_suspension,
    try_acquire,
};

template <take_with How>
boost::asio::awaitable<void> acquire_then_post_loop(boost::asio::io_context& ctx, asio_sync::semaphore& sem,
                                                    benchmark::IterationCount count,
                                                    benchmark::IterationCount& executed)
{
    for (benchmark::IterationCount i = 0; i < count; ++i)
    {
        if constexpr (How == take_with::try_acquire)
        {
            if (!sem.try_acquire())
                co_return; // breaks the chain, which the batch runner reports
        }
        else
        {
            co_await sem.async_acquire(boost::asio::use_awaitable);
        }
        sem.release();
        co_await boost::asio::post(ctx, boost::asio::use_awaitable);
        if constexpr (How == take_with::async_acquire_budget_cleared_on_suspension)
            asio_sync::detail::immediate_acquires_in_a_row() = 0;
        ++executed;
    }
}

template <take_with How>
void BM_acquire_release_then_co_await_post(benchmark::State& state)
{
    boost::asio::io_context ctx(1);
    asio_sync::semaphore sem(ctx, 1);
    benchmark::IterationCount executed = 0;
    const std::size_t handlers = run_coroutine_batches(
        state, ctx, [&] { return acquire_then_post_loop<How>(ctx, sem, chain_length, executed); }, executed);
    state.counters["handlers_per_op"] =
        benchmark::Counter(static_cast<double>(handlers), benchmark::Counter::kAvgIterations);
    if (!is_idle_now(sem, 1))
        state.SkipWithError("coroutine loop lost a permit");
}
BENCHMARK_TEMPLATE(BM_acquire_release_then_co_await_post, take_with::async_acquire);
BENCHMARK_TEMPLATE(BM_acquire_release_then_co_await_post,
                   take_with::async_acquire_budget_cleared_on_suspension);
BENCHMARK_TEMPLATE(BM_acquire_release_then_co_await_post, take_with::try_acquire);

} // namespace
