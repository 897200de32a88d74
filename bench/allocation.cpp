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
// the type-erased any_io_executor may not carry.

#include <asio_sync/mutex.hpp>
#include <asio_sync/semaphore.hpp>
#include <asio_sync/shared_mutex.hpp>

#include <benchmark/benchmark.h>

#include <boost/asio/bind_allocator.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/system/error_code.hpp>

#include <chrono>
#include <cstddef>

#include "support/harness.hpp"
#include "support/heap_counter.hpp"

namespace {

using asio_sync::bench::allocation_counts;
using asio_sync::bench::counting_allocator;
using asio_sync::bench::global_heap;
using asio_sync::bench::is_idle_now;

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

template <class Semaphore>
void BM_acquire_wait(benchmark::State& state)
{
    boost::asio::io_context ctx(1);
    Semaphore sem(ctx, 0);
    count_allocations(state, ctx, [&](auto handler) {
        sem.async_acquire(std::move(handler));
        sem.release(); // hands the permit to the waiter
    });
    // Every waiter kept the permit it was handed, so the semaphore ends with none.
    if (!is_idle_now(sem, 0))
        state.SkipWithError("a permit went missing");
}
BENCHMARK_TEMPLATE(BM_acquire_wait, asio_sync::semaphore);
BENCHMARK_TEMPLATE(BM_acquire_wait, io_semaphore);

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

void BM_mutex_lock_wait(benchmark::State& state)
{
    boost::asio::io_context ctx(1);
    asio_sync::mutex mtx(ctx);
    if (!mtx.try_lock())
        state.SkipWithError("a new mutex is locked");
    count_allocations(state, ctx, [&](auto handler) {
        mtx.async_lock(std::move(handler));
        // Hands the lock to the waiter, which now holds it for the next iteration to wait on.
        mtx.unlock();
    });
    mtx.unlock();
    if (!mtx.try_lock())
        state.SkipWithError("the mutex was left locked");
}
BENCHMARK(BM_mutex_lock_wait);

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
