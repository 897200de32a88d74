// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

// Tutorial 3: using the semaphore from plain threads, with boost::asio::use_future.
//
// With use_future as the completion token, async_acquire returns a std::future<void>. A thread
// that is not running the io_context can wait on it with get(): get() returns once the permit is
// granted, or throws boost::system::system_error if the acquire failed (for instance because the
// semaphore was closed). release() is an ordinary call and may be made from any thread.
//
// The io_context still does the bookkeeping: it must be running somewhere (here on a background
// thread) for the futures to become ready. Never call get() on a thread that runs the
// io_context: that thread would wait for a completion only it could deliver.
//
// Four threads take turns at two permits, each a few times. The program checks that never more
// than two held a permit at once, and that an acquire on a closed semaphore fails.

#include <asio_sync/error.hpp>
#include <asio_sync/semaphore.hpp>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/system/system_error.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <future>
#include <thread>
#include <vector>

namespace asio = boost::asio;

constexpr std::size_t permits = 2;
constexpr int thread_count = 4;
constexpr int rounds = 5;

int main()
{
    asio::io_context ctx;
    asio_sync::semaphore sem(ctx, permits);

    // Keep run() going while no operation is pending, until the guard is reset.
    auto work = asio::make_work_guard(ctx);
    std::thread io_thread([&ctx] { ctx.run(); });

    std::atomic<int> holders{0};
    std::atomic<int> most_holders{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < thread_count; ++t)
    {
        threads.emplace_back([&] {
            for (int round = 0; round < rounds; ++round)
            {
                std::future<void> granted = sem.async_acquire(asio::use_future);
                granted.get(); // blocks this thread (not the io_context) until the permit is ours
                const int now = ++holders;
                for (int seen = most_holders; now > seen && !most_holders.compare_exchange_weak(seen, now);)
                {
                }
                std::this_thread::sleep_for(std::chrono::milliseconds(2)); // the work
                --holders;
                sem.release();
            }
        });
    }
    for (std::thread& t : threads)
        t.join();

    // After close(), acquires fail: get() throws the error code.
    sem.close();
    bool closed_reported = false;
    try
    {
        sem.async_acquire(asio::use_future).get();
    }
    catch (const boost::system::system_error& e)
    {
        closed_reported = e.code() == asio_sync::error::closed;
        std::printf("acquire after close: %s\n", e.code().message().c_str());
    }

    work.reset();
    io_thread.join();

    std::printf("%d threads x %d rounds, at most %d holders at once, %zu permits free\n", thread_count,
                rounds, most_holders.load(), sem.available());
    return most_holders <= static_cast<int>(permits) && sem.available() == permits && closed_reported ? 0 : 1;
}
