// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

// Contended lock costs, against the blocking locks of the standard library doing the same work.
//
// mutex: `tasks` coroutines on an io_context run by `threads` threads each do `rounds`
// lock/increment/unlock on a plain counter; the reference is `tasks` std::threads doing the same
// with std::mutex. rwlock: `readers` coroutines each do `rounds` shared lock/read/unlock and
// `writers` coroutines each do `rounds` exclusive lock/write/unlock on an io_context run by
// `threads` threads; the reference is readers + writers std::threads with std::shared_mutex.
// The coroutines are multiplexed on fewer threads than there are tasks, while every std::thread is
// its own task: that is the trade each side offers, and what a user would choose between.
//
// The asynchronous peers are the semaphores of bench/contended.cpp used as locks, as users build
// them today: the channel (capacity 1) and the strand-plus-deque semaphore as a mutex, and the
// strand-plus-deque semaphore as a readers-writer lock (as many permits as readers; a reader takes
// one, a writer all of them).
//
// The time column is wall-clock time per lock+unlock of either kind (KeepRunningBatch counts each
// one; real time because the work runs on other threads while the benchmark thread sleeps). After
// each batch the counters prove that every operation ran, under the lock, and the lock is free.

#include <asio_sync/mutex.hpp>
#include <asio_sync/shared_mutex.hpp>
#include <asio_sync/upgrade_mutex.hpp>

#include <benchmark/benchmark.h>

#include "support/channel_semaphore.hpp"
#include "support/harness.hpp"
#include "support/strand_semaphore.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <shared_mutex>
#include <utility>

namespace {

using asio_sync::bench::channel_semaphore;
using asio_sync::bench::context_threads;
using asio_sync::bench::is_idle_now;
using asio_sync::bench::rounds;
using asio_sync::bench::run_coroutines;
using asio_sync::bench::strand_semaphore;
using asio_sync::bench::thread_team;

// ---------------------------------------------------------------------------------------------
// mutex

boost::asio::awaitable<void> mutex_task(asio_sync::mutex& mtx, std::size_t& counter)
{
    for (std::size_t i = 0; i < rounds; ++i)
    {
        co_await mtx.async_lock(boost::asio::use_awaitable);
        ++counter;
        mtx.unlock();
    }
}

boost::asio::awaitable<void> scoped_mutex_task(asio_sync::mutex& mtx, std::size_t& counter)
{
    for (std::size_t i = 0; i < rounds; ++i)
    {
        std::unique_lock<asio_sync::mutex> lock = co_await mtx.async_scoped_lock(boost::asio::use_awaitable);
        ++counter;
    }
}

// The timed lock: every lock that queues starts its timer (a deadline far away: none expires),
// and the grant cancels it.
boost::asio::awaitable<void> timed_mutex_task(asio_sync::mutex& mtx, std::size_t& counter)
{
    for (std::size_t i = 0; i < rounds; ++i)
    {
        co_await mtx.async_lock_for(std::chrono::seconds(60), boost::asio::use_awaitable);
        ++counter;
        mtx.unlock();
    }
}

// A semaphore of one permit as a mutex.
template <class Semaphore>
boost::asio::awaitable<void> semaphore_mutex_task(Semaphore& sem, std::size_t& counter)
{
    for (std::size_t i = 0; i < rounds; ++i)
    {
        co_await sem.async_acquire(boost::asio::use_awaitable);
        ++counter;
        sem.release();
    }
}

// Whether the lock is free once every task has finished: ours, by locking it.
template <class Lockable>
bool is_unlocked(Lockable& mtx)
{
    const bool unlocked = mtx.try_lock();
    if (unlocked)
        mtx.unlock();
    return unlocked;
}

bool is_unlocked(channel_semaphore& sem)
{
    return is_idle_now(sem, 1);
}

// The last release may still be queued on the strand when the tasks have finished.
bool is_unlocked(strand_semaphore& sem)
{
    return sem.is_idle(1);
}

// Arguments: tasks, threads.
template <class Lock, class Task, class... LockArgs>
void run_mutex(benchmark::State& state, Task task, LockArgs... lock_args)
{
    const auto tasks = static_cast<std::size_t>(state.range(0));
    const auto threads = static_cast<std::size_t>(state.range(1));
    const std::size_t operations = tasks * rounds;

    // Declared in this order so the threads are joined before the mutex is destroyed, and the
    // mutex before its context.
    boost::asio::io_context ctx(static_cast<int>(threads));
    Lock mtx(ctx, lock_args...);
    context_threads pool(ctx, threads);

    std::size_t counter = 0;
    while (state.KeepRunningBatch(static_cast<benchmark::IterationCount>(operations)))
    {
        counter = 0;
        const std::size_t failures =
            run_coroutines(ctx, tasks, [&](std::size_t) { return task(mtx, counter); });
        // SkipWithError also makes the next KeepRunningBatch return false, ending the loop.
        if (failures != 0 || counter != operations || !is_unlocked(mtx))
            state.SkipWithError("a task failed, an increment was lost, or the mutex was left locked");
    }
}

void BM_mutex_async_lock(benchmark::State& state)
{
    run_mutex<asio_sync::mutex>(state, mutex_task);
}

void BM_mutex_async_lock_for(benchmark::State& state)
{
    run_mutex<asio_sync::mutex>(state, timed_mutex_task);
}

void BM_mutex_async_scoped_lock(benchmark::State& state)
{
    run_mutex<asio_sync::mutex>(state, scoped_mutex_task);
}

void BM_channel_mutex(benchmark::State& state)
{
    run_mutex<channel_semaphore>(state, semaphore_mutex_task<channel_semaphore>, std::size_t{1});
}

void BM_strand_semaphore_mutex(benchmark::State& state)
{
    run_mutex<strand_semaphore>(state, semaphore_mutex_task<strand_semaphore>, std::size_t{1});
}

// Arguments: threads (each one a task).
void BM_std_mutex(benchmark::State& state)
{
    const auto threads = static_cast<std::size_t>(state.range(0));
    const std::size_t operations = threads * rounds;

    std::mutex mtx;
    std::size_t counter = 0;
    thread_team team(threads, [&](std::size_t) {
        for (std::size_t i = 0; i < rounds; ++i)
        {
            mtx.lock();
            ++counter;
            mtx.unlock();
        }
    });
    while (state.KeepRunningBatch(static_cast<benchmark::IterationCount>(operations)))
    {
        counter = 0;
        team.run_batch();
        if (counter != operations)
            state.SkipWithError("an increment was lost");
    }
}

// ---------------------------------------------------------------------------------------------
// rwlock

// Two fields a writer changes one after the other: a reader that sees them differ saw a half-done
// write, which the lock must make impossible. Readers count such sightings instead of failing at
// once, so that the check costs a comparison.
struct guarded_pair
{
    std::uint64_t a = 0;
    std::uint64_t b = 0;
};

struct rw_counters
{
    std::atomic<std::size_t> reads{0};
    std::atomic<std::size_t> torn{0};
};

// The strand-plus-deque semaphore as a readers-writer lock: one permit per reader that may hold it
// at once; a writer takes them all.
class strand_rwlock
{
public:
    strand_rwlock(boost::asio::io_context& ctx, std::size_t max_readers)
        : sem_(ctx, max_readers), max_readers_(max_readers)
    {
    }

    template <class Token>
    auto async_lock_shared(Token&& token)
    {
        return sem_.async_acquire(1, std::forward<Token>(token));
    }

    void unlock_shared() { sem_.release(1); }

    template <class Token>
    auto async_lock(Token&& token)
    {
        return sem_.async_acquire(max_readers_, std::forward<Token>(token));
    }

    void unlock() { sem_.release(max_readers_); }

    // The last release may still be queued on the strand when the tasks have finished.
    bool is_unlocked() { return sem_.is_idle(max_readers_); }

private:
    strand_semaphore sem_;
    std::size_t max_readers_;
};

bool is_unlocked(strand_rwlock& lock)
{
    return lock.is_unlocked();
}

template <class SharedMutex>
boost::asio::awaitable<void> shared_reader_task(SharedMutex& mtx, const guarded_pair& data,
                                                rw_counters& counters)
{
    std::size_t torn = 0;
    for (std::size_t i = 0; i < rounds; ++i)
    {
        co_await mtx.async_lock_shared(boost::asio::use_awaitable);
        torn += data.a != data.b;
        mtx.unlock_shared();
    }
    counters.torn.fetch_add(torn, std::memory_order_relaxed);
    counters.reads.fetch_add(rounds, std::memory_order_relaxed);
}

template <class SharedMutex>
boost::asio::awaitable<void> shared_writer_task(SharedMutex& mtx, guarded_pair& data)
{
    for (std::size_t i = 0; i < rounds; ++i)
    {
        co_await mtx.async_lock(boost::asio::use_awaitable);
        ++data.a;
        ++data.b;
        mtx.unlock();
    }
}

// The writer of an upgrade mutex that reads first: the upgrade lock (readers stay in), then the
// upgrade once they have left, then the write of what it read.
boost::asio::awaitable<void> upgrader_task(asio_sync::upgrade_mutex& mtx, guarded_pair& data)
{
    for (std::size_t i = 0; i < rounds; ++i)
    {
        co_await mtx.async_lock_upgrade(boost::asio::use_awaitable);
        const auto seen = data.a;
        co_await mtx.async_upgrade(boost::asio::use_awaitable);
        data.a = seen + 1;
        ++data.b;
        mtx.unlock();
    }
}

// Whether a batch did its work: every read ran and saw whole writes, every write landed.
bool rw_batch_ok(const rw_counters& counters, const guarded_pair& data, std::size_t readers,
                 std::size_t writers)
{
    return counters.reads.load() == readers * rounds && counters.torn.load() == 0 &&
           data.a == writers * rounds && data.b == data.a;
}

// Arguments: readers, writers, threads. `Writer` is the writers' task.
template <class SharedMutex, auto Writer = &shared_writer_task<SharedMutex>, class... LockArgs>
void run_rwlock(benchmark::State& state, LockArgs... lock_args)
{
    const auto readers = static_cast<std::size_t>(state.range(0));
    const auto writers = static_cast<std::size_t>(state.range(1));
    const auto threads = static_cast<std::size_t>(state.range(2));
    const std::size_t operations = (readers + writers) * rounds;

    boost::asio::io_context ctx(static_cast<int>(threads));
    SharedMutex mtx(ctx, lock_args...);
    context_threads pool(ctx, threads);

    guarded_pair data;
    rw_counters counters;
    while (state.KeepRunningBatch(static_cast<benchmark::IterationCount>(operations)))
    {
        data = guarded_pair();
        counters.reads = 0;
        counters.torn = 0;
        // Readers first, so that the writers arrive to find the lock shared.
        const std::size_t failures =
            run_coroutines(ctx, readers + writers, [&](std::size_t i) -> boost::asio::awaitable<void> {
                if (i < readers)
                    return shared_reader_task(mtx, data, counters);
                return Writer(mtx, data);
            });
        if (failures != 0 || !rw_batch_ok(counters, data, readers, writers) || !is_unlocked(mtx))
            state.SkipWithError("a task failed, an operation was lost, a reader saw a half-done write, "
                                "or the lock was left held");
    }
}

void BM_shared_mutex(benchmark::State& state)
{
    run_rwlock<asio_sync::shared_mutex>(state);
}

// The upgrade mutex as a plain reader-writer lock, then with writers that read under the upgrade
// lock and upgrade.
void BM_upgrade_mutex(benchmark::State& state)
{
    run_rwlock<asio_sync::upgrade_mutex>(state);
}

void BM_upgrade_mutex_upgraders(benchmark::State& state)
{
    run_rwlock<asio_sync::upgrade_mutex, &upgrader_task>(state);
}

// As many permits as readers, so that all of them can hold the lock at once, as with ours.
void BM_strand_semaphore_rwlock(benchmark::State& state)
{
    run_rwlock<strand_rwlock>(state, static_cast<std::size_t>(state.range(0)));
}

// Arguments: readers, writers (each one a std::thread).
void BM_std_shared_mutex(benchmark::State& state)
{
    const auto readers = static_cast<std::size_t>(state.range(0));
    const auto writers = static_cast<std::size_t>(state.range(1));
    const std::size_t operations = (readers + writers) * rounds;

    std::shared_mutex mtx;
    guarded_pair data;
    rw_counters counters;
    thread_team team(readers + writers, [&](std::size_t index) {
        if (index < readers)
        {
            std::size_t torn = 0;
            for (std::size_t i = 0; i < rounds; ++i)
            {
                mtx.lock_shared();
                torn += data.a != data.b;
                mtx.unlock_shared();
            }
            counters.torn.fetch_add(torn, std::memory_order_relaxed);
            counters.reads.fetch_add(rounds, std::memory_order_relaxed);
        }
        else
        {
            for (std::size_t i = 0; i < rounds; ++i)
            {
                mtx.lock();
                ++data.a;
                ++data.b;
                mtx.unlock();
            }
        }
    });
    while (state.KeepRunningBatch(static_cast<benchmark::IterationCount>(operations)))
    {
        data = guarded_pair();
        counters.reads = 0;
        counters.torn = 0;
        team.run_batch();
        if (!rw_batch_ok(counters, data, readers, writers))
            state.SkipWithError("an operation was lost or a reader saw a half-done write");
    }
}

BENCHMARK(BM_mutex_async_lock)->ArgNames({"tasks", "threads"})->Args({4, 2})->UseRealTime();
BENCHMARK(BM_mutex_async_lock_for)->ArgNames({"tasks", "threads"})->Args({4, 2})->UseRealTime();
BENCHMARK(BM_mutex_async_scoped_lock)->ArgNames({"tasks", "threads"})->Args({4, 2})->UseRealTime();
BENCHMARK(BM_channel_mutex)->ArgNames({"tasks", "threads"})->Args({4, 2})->UseRealTime();
BENCHMARK(BM_strand_semaphore_mutex)->ArgNames({"tasks", "threads"})->Args({4, 2})->UseRealTime();
BENCHMARK(BM_std_mutex)->ArgNames({"threads"})->Args({4})->UseRealTime();
BENCHMARK(BM_shared_mutex)->ArgNames({"readers", "writers", "threads"})->Args({4, 2, 2})->UseRealTime();
BENCHMARK(BM_upgrade_mutex)->ArgNames({"readers", "writers", "threads"})->Args({4, 2, 2})->UseRealTime();
BENCHMARK(BM_upgrade_mutex_upgraders)
    ->ArgNames({"readers", "upgraders", "threads"})
    ->Args({4, 2, 2})
    ->UseRealTime();
BENCHMARK(BM_strand_semaphore_rwlock)
    ->ArgNames({"readers", "writers", "threads"})
    ->Args({4, 2, 2})
    ->UseRealTime();
BENCHMARK(BM_std_shared_mutex)->ArgNames({"readers", "writers"})->Args({4, 2})->UseRealTime();

} // namespace
