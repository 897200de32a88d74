// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

// A worker pool on boost::asio::thread_pool whose concurrency is bounded by a semaphore.
//
// The pool has more threads than the jobs may use at once: the jobs touch a resource that can
// only take K users at a time (a licence, a GPU, a database with K connections), while the other
// threads stay free for the rest of the program. Each job is submitted as an async_acquire whose
// completion handler runs the job on a pool thread and then releases the permit. No thread blocks
// waiting for a permit: queued jobs are just handlers in the semaphore's FIFO queue, and a thread
// only picks a job up once the job holds a permit.
//
// While the jobs run, a "heartbeat" on the same pool ticks every millisecond: it is never stuck
// behind the queued jobs, because they do not occupy threads while they wait.
//
// The program checks that never more than K jobs ran at once, that every job ran and that the
// heartbeat kept ticking, and exits non-zero if not.
//
//   worker_pool [JOBS [K]]    (defaults: 40 jobs, K = 2, on 4 threads)

#include <asio_sync/semaphore.hpp>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <thread>

namespace asio = boost::asio;
using boost::system::error_code;
using namespace std::chrono_literals;

namespace {

constexpr std::size_t pool_threads = 4;

struct pool_stats
{
    std::atomic<int> running{0};
    std::atomic<int> most_running{0};
    std::atomic<int> done{0};
    std::atomic<std::uint64_t> checksum{0};

    void enter()
    {
        const int now = ++running;
        for (int seen = most_running; now > seen && !most_running.compare_exchange_weak(seen, now);)
        {
        }
    }
};

// The job itself: blocking work, as jobs on a thread pool often are.
std::uint64_t run_job(int id)
{
    std::this_thread::sleep_for(5ms);
    return static_cast<std::uint64_t>(id) * static_cast<std::uint64_t>(id);
}

// Queues a job: it runs on a pool thread once it holds one of the K permits.
void submit(asio_sync::semaphore& limit, pool_stats& stats, int id)
{
    limit.async_acquire([&limit, &stats, id](error_code ec) {
        if (ec) // the semaphore was closed or destroyed: the job never ran, and holds nothing
            return;
        stats.enter();
        stats.checksum += run_job(id);
        --stats.running; // before the release: the next job's count must not overlap ours
        ++stats.done;
        limit.release();
    });
}

} // namespace

int main(int argc, char** argv)
{
    const int jobs = argc > 1 ? std::clamp(std::atoi(argv[1]), 1, 100000) : 40;
    const auto k = static_cast<std::size_t>(argc > 2 ? std::clamp(std::atoi(argv[2]), 1, 1000) : 2);

    asio::thread_pool pool(pool_threads);
    // The semaphore's executor is the pool's: completion handlers, hence jobs, run on pool threads.
    asio_sync::semaphore limit(pool.get_executor(), k);
    pool_stats stats;

    for (int id = 1; id <= jobs; ++id)
        submit(limit, stats, id);

    // The heartbeat: ticks until the last job is done.
    std::atomic<int> ticks{0};
    asio::steady_timer heartbeat(pool.get_executor());
    std::function<void(error_code)> tick = [&](error_code) {
        ++ticks;
        if (stats.done.load() == jobs)
            return;
        heartbeat.expires_after(1ms);
        heartbeat.async_wait(tick);
    };
    asio::post(pool, [&] { tick({}); });

    pool.join(); // returns once no work is left: every job has run and the heartbeat has stopped

    std::uint64_t expected = 0;
    for (int id = 1; id <= jobs; ++id)
        expected += static_cast<std::uint64_t>(id) * static_cast<std::uint64_t>(id);
    // Jobs take about jobs / K * 5 ms; the heartbeat should tick about once per millisecond.
    const bool ok = stats.done == jobs && stats.checksum == expected &&
                    stats.most_running <= static_cast<int>(k) && limit.available() == k &&
                    ticks > jobs / static_cast<int>(k);
    std::printf("%d jobs on %zu threads, at most %zu at once: %d done, at most %d ran at once, "
                "heartbeat ticked %d times\n%s\n",
                jobs, pool_threads, k, stats.done.load(), stats.most_running.load(), ticks.load(),
                ok ? "OK" : "FAILED");
    return ok ? 0 : 1;
}
