// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_BENCH_SUPPORT_HARNESS_HPP
#define ASIO_SYNC_BENCH_SUPPORT_HARNESS_HPP

// What the benchmarks share: a persistent io_context thread pool, its std::thread counterpart for
// the blocking references, a way to run a batch of coroutines and wait for all of them, and the
// check that a semaphore (ours or a peer) is back to its permits with nobody waiting.

#include <asio_sync/semaphore.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace asio_sync::bench {

// Operations per task per batch, the same in every contended scenario (and on the Tokio side in
// tokio/): enough that spawning the tasks and waking the benchmark thread at the end are noise,
// few enough that a batch takes milliseconds and repetitions stay cheap.
constexpr std::size_t rounds = 10000;

// Runs the io_context on `count` threads until destroyed, so that starting threads stays out of
// the timed region; the work guard keeps them waiting between batches.
class context_threads
{
public:
    context_threads(boost::asio::io_context& ctx, std::size_t count) : work_(ctx.get_executor())
    {
        for (std::size_t i = 0; i < count; ++i)
            threads_.emplace_back([&ctx] { ctx.run(); });
    }

    context_threads(const context_threads&) = delete;
    context_threads& operator=(const context_threads&) = delete;

    ~context_threads()
    {
        work_.reset();
        for (std::thread& t : threads_)
            t.join();
    }

private:
    boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
    std::vector<std::thread> threads_;
};

// The std::thread counterpart of context_threads: `count` threads that live across batches and
// run `job(index)` once per batch, so that both sides keep thread creation out of the timed region.
class thread_team
{
public:
    thread_team(std::size_t count, std::function<void(std::size_t)> job) : job_(std::move(job))
    {
        for (std::size_t i = 0; i < count; ++i)
            threads_.emplace_back([this, i] { work(i); });
    }

    thread_team(const thread_team&) = delete;
    thread_team& operator=(const thread_team&) = delete;

    ~thread_team()
    {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            stopping_ = true;
        }
        start_.notify_all();
        for (std::thread& t : threads_)
            t.join();
    }

    // Starts one batch on every thread and returns once all of them have finished it.
    void run_batch()
    {
        std::unique_lock<std::mutex> lock(mutex_);
        running_ = threads_.size();
        ++generation_;
        start_.notify_all();
        done_.wait(lock, [this] { return running_ == 0; });
    }

private:
    void work(std::size_t index)
    {
        std::uint64_t seen = 0;
        for (;;)
        {
            {
                std::unique_lock<std::mutex> lock(mutex_);
                start_.wait(lock, [&] { return stopping_ || generation_ != seen; });
                if (stopping_)
                    return;
                seen = generation_;
            }
            job_(index);
            std::lock_guard<std::mutex> lock(mutex_);
            if (--running_ == 0)
                done_.notify_one();
        }
    }

    std::function<void(std::size_t)> job_;
    std::mutex mutex_;
    std::condition_variable start_;
    std::condition_variable done_;
    std::uint64_t generation_ = 0;
    std::size_t running_ = 0;
    bool stopping_ = false;
    std::vector<std::thread> threads_;
};

// Counts finished tasks and wakes the benchmark thread after the last. Notifying under the lock
// keeps the gate valid until the notifier is done with it, so it can be reused by the next batch.
class finish_gate
{
public:
    void reset(std::size_t expected)
    {
        std::lock_guard<std::mutex> lock(mutex_);
        remaining_ = expected;
    }

    void arrive()
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (--remaining_ == 0)
            done_.notify_one();
    }

    void wait()
    {
        std::unique_lock<std::mutex> lock(mutex_);
        done_.wait(lock, [this] { return remaining_ == 0; });
    }

private:
    std::mutex mutex_;
    std::condition_variable done_;
    std::size_t remaining_ = 0;
};

// Whether `permits` permits are free and nobody waits, asked when nothing is in flight (run() has
// returned, or every task has finished and nothing was posted since). The peers answer for
// themselves.
template <class Executor>
bool is_idle_now(const basic_semaphore<Executor>& sem, std::size_t permits)
{
    return sem.available() == permits && sem.waiting() == 0;
}

template <class Semaphore>
bool is_idle_now(const Semaphore& sem, std::size_t permits)
{
    return sem.is_idle_now(permits);
}

// Spawns `count` coroutines made by `make(index)` from inside the context (so that with one
// thread they all start in order before the first one runs) and waits until all have finished.
// Returns the number that ended with an exception.
template <class MakeTask>
std::size_t run_coroutines(boost::asio::io_context& ctx, std::size_t count, MakeTask make)
{
    finish_gate gate;
    std::atomic<std::size_t> failures{0};
    gate.reset(count);
    boost::asio::post(ctx, [&] {
        for (std::size_t i = 0; i < count; ++i)
        {
            boost::asio::co_spawn(ctx, make(i), [&](std::exception_ptr e) {
                if (e)
                    failures.fetch_add(1, std::memory_order_relaxed);
                gate.arrive();
            });
        }
    });
    gate.wait();
    return failures.load();
}

} // namespace asio_sync::bench

#endif // ASIO_SYNC_BENCH_SUPPORT_HARNESS_HPP
