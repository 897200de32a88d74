// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

// A simulation stepping with a barrier: heat spreading along a rod, computed by W workers on a
// thread pool, each owning a strip of the rod.
//
// Every step reads the current temperatures and writes the next ones, so no worker may start
// step k+1 before every worker has finished step k. Each worker computes its strip, then
// `co_await`s `async_arrive_and_wait`: the last one to arrive runs the barrier's completion
// function, which swaps the two buffers once per step while nobody computes, and then everyone
// continues, with the step number the barrier hands them. No pool thread blocks: a worker that
// waits is a suspended coroutine.
//
// The program checks the result against the same simulation run sequentially and exits non-zero
// if they differ.
//
//   simulation_steps [STEPS] [WORKERS]    (default: 200 steps, 4 workers)

#include <asio_sync/barrier.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <atomic>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <utility>
#include <vector>

namespace asio = boost::asio;

namespace {

constexpr std::size_t rod_length = 1024;

// One step of the explicit heat equation on [begin, end) of the rod; the ends stay fixed.
void step(const std::vector<double>& current, std::vector<double>& next, std::size_t begin, std::size_t end)
{
    for (std::size_t i = begin; i < end; ++i)
    {
        if (i == 0 || i + 1 == current.size())
            next[i] = current[i];
        else
            next[i] = current[i] + 0.25 * (current[i - 1] - 2 * current[i] + current[i + 1]);
    }
}

std::vector<double> initial_rod()
{
    std::vector<double> rod(rod_length, 0.0);
    rod.front() = 100.0; // a hot end
    rod[rod_length / 2] = 50.0;
    return rod;
}

} // namespace

int main(int argc, char** argv)
{
    const std::size_t steps = argc > 1 ? std::size_t(std::atoi(argv[1])) : 200;
    const std::size_t workers = argc > 2 ? std::size_t(std::atoi(argv[2])) : 4;

    std::vector<double> current = initial_rod();
    std::vector<double> next(rod_length);
    std::size_t steps_done = 0;
    std::atomic<int> misnumbered{0};

    asio::thread_pool pool(4);
    // Runs once per step, on the thread of the last worker to arrive, before anyone continues.
    asio_sync::barrier step_done(pool.get_executor(), workers, [&] {
        std::swap(current, next);
        ++steps_done;
    });

    auto worker = [&](std::size_t index) -> asio::awaitable<void> {
        const std::size_t begin = rod_length * index / workers;
        const std::size_t end = rod_length * (index + 1) / workers;
        for (std::size_t k = 0; k < steps; ++k)
        {
            step(current, next, begin, end);
            const std::size_t phase = co_await step_done.async_arrive_and_wait(asio::use_awaitable);
            misnumbered += phase != k;
        }
    };
    for (std::size_t i = 0; i < workers; ++i)
        asio::co_spawn(pool, worker(i), asio::detached);
    pool.join();

    std::vector<double> expected = initial_rod();
    std::vector<double> scratch(rod_length);
    for (std::size_t k = 0; k < steps; ++k)
    {
        step(expected, scratch, 0, rod_length);
        std::swap(expected, scratch);
    }
    const bool same = steps_done == steps && current == expected && misnumbered == 0;
    std::printf("%zu steps by %zu workers: temperature 8 cells from the hot end %.6f (sequential %.6f)\n",
                steps_done, workers, current[8], expected[8]);
    return same ? EXIT_SUCCESS : EXIT_FAILURE;
}
