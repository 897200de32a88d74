// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

// Tutorial 1: acquire and release with completion handlers (callbacks).
//
// A semaphore holds a number of permits. async_acquire(handler) asks for one; the handler runs
// once the permit is yours, and you give it back with release() when you are done. While no
// permit is free the request waits in a queue, without blocking any thread, and waiters are
// served in the order they asked (FIFO).
//
// Here six jobs share a semaphore of two permits, so at most two run at a time. Each job is a
// timer wait standing in for real asynchronous work (a request, a query, a file transfer).
// The program checks that never more than two jobs ran at once and that every job ran.

#include <asio_sync/semaphore.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>

namespace asio = boost::asio;
using boost::system::error_code;

constexpr int job_count = 6;
constexpr std::size_t permits = 2;

int running = 0;      // jobs holding a permit now
int most_running = 0; // the most that ever held one at the same time
int finished = 0;

void start_job(asio_sync::semaphore& sem, int id)
{
    // The handler is never invoked inside async_acquire, even when a permit is free at once: it
    // always runs later, from io_context::run(). So code after this call runs before the handler.
    sem.async_acquire([&sem, id](error_code ec) {
        if (ec) // asio_sync::error::closed or operation_aborted: we hold no permit
            return;
        most_running = std::max(most_running, ++running);
        std::printf("job %d starts (%d running)\n", id, running);

        // The work. The timer must stay alive until its handler runs, so the handler owns it.
        auto work = std::make_shared<asio::steady_timer>(sem.get_executor(), std::chrono::milliseconds(20));
        work->async_wait([&sem, id, work](error_code) {
            --running;
            ++finished;
            std::printf("job %d done\n", id);
            sem.release(); // hands the permit to the oldest waiting job, if any
        });
    });
}

int main()
{
    asio::io_context ctx;
    asio_sync::semaphore sem(ctx, permits);

    for (int id = 1; id <= job_count; ++id)
        start_job(sem, id);
    std::printf("%zu jobs are waiting for a permit\n", sem.waiting()); // 4: two got theirs at once

    ctx.run(); // returns when every job is done: a waiting acquire counts as pending work

    std::printf("%d jobs finished, at most %d at once, %zu permits free\n", finished, most_running,
                sem.available());
    return finished == job_count && most_running <= static_cast<int>(permits) && sem.available() == permits
               ? 0
               : 1;
}
