// Contended costs: `tasks` coroutines on an io_context run by `threads` threads share `permits`
// permits, and each does `rounds` acquire+release pairs with nothing in between (zero hold time),
// so the figure is the synchronisation alone. The reference, run in the same binary with the same
// scenarios, is what Asio users reach for today: a concurrent_channel of capacity `permits` used as
// a semaphore (a send takes a slot, a receive frees one). Both sides use any_io_executor and
// use_awaitable, so only the primitive differs.
//
// The time column is wall-clock time per acquire+release pair (KeepRunningBatch counts each pair;
// real time because the work runs on the pool while the benchmark thread sleeps).

#include <asio_sync/semaphore.hpp>

#include <benchmark/benchmark.h>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/experimental/concurrent_channel.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/error_code.hpp>

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "support/harness.hpp"

namespace {

using channel = boost::asio::experimental::concurrent_channel<void(boost::system::error_code)>;

using asio_sync::bench::context_threads;
using asio_sync::bench::finish_gate;
using asio_sync::bench::rounds;

boost::asio::awaitable<void> semaphore_task(asio_sync::semaphore& sem, std::atomic<std::size_t>& completed)
{
    for (std::size_t i = 0; i < rounds; ++i)
    {
        co_await sem.async_acquire(boost::asio::use_awaitable);
        sem.release();
    }
    completed.fetch_add(rounds, std::memory_order_relaxed);
}

boost::asio::awaitable<void> channel_task(channel& ch, std::atomic<std::size_t>& completed)
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

bool is_idle(const asio_sync::semaphore& sem, std::size_t permits)
{
    return sem.available() == permits && sem.waiting() == 0;
}

bool is_idle(const channel& ch, std::size_t)
{
    return !ch.ready();
}

// Arguments: tasks, permits, threads.
template <class Primitive, class Task>
void run_scenario(benchmark::State& state, Task task)
{
    const auto tasks = static_cast<std::size_t>(state.range(0));
    const auto permits = static_cast<std::size_t>(state.range(1));
    const auto threads = static_cast<std::size_t>(state.range(2));
    const std::size_t pairs = tasks * rounds;

    // Declared in this order so the threads are joined before the primitive is destroyed, and the
    // primitive before its context.
    boost::asio::io_context ctx(static_cast<int>(threads));
    Primitive primitive(ctx, permits);
    context_threads pool(ctx, threads);

    finish_gate gate;
    std::atomic<std::size_t> completed{0};
    std::atomic<std::size_t> failures{0};
    while (state.KeepRunningBatch(static_cast<benchmark::IterationCount>(pairs)))
    {
        completed.store(0, std::memory_order_relaxed);
        gate.reset(tasks);
        // Spawned from inside the context, so that with one thread all tasks start in order
        // before the first one runs.
        boost::asio::post(ctx, [&] {
            for (std::size_t i = 0; i < tasks; ++i)
            {
                boost::asio::co_spawn(ctx, task(primitive, completed), [&](std::exception_ptr e) {
                    if (e)
                        failures.fetch_add(1, std::memory_order_relaxed);
                    gate.arrive();
                });
            }
        });
        gate.wait();
        // SkipWithError also makes the next KeepRunningBatch return false, ending the loop.
        if (failures.load() != 0 || completed.load() != pairs || !is_idle(primitive, permits))
            state.SkipWithError("a task failed, fell short of its rounds, or a permit went missing");
    }
}

void BM_semaphore(benchmark::State& state)
{
    run_scenario<asio_sync::semaphore>(state, semaphore_task);
}

void BM_channel(benchmark::State& state)
{
    run_scenario<channel>(state, channel_task);
}

void scenarios(benchmark::internal::Benchmark* b)
{
    b->ArgNames({"tasks", "permits", "threads"});
    b->Args({8, 2, 2});
    b->Args({16, 1, 2});
    b->Args({6, 10, 1});
    b->Args({6, 5, 2});
    b->UseRealTime();
}

BENCHMARK(BM_semaphore)->Apply(scenarios);
BENCHMARK(BM_channel)->Apply(scenarios);

} // namespace
