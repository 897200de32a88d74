// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

// A parallel fetch joined with a latch: N fetches run at once on a thread pool, each counts the
// latch down when its result is stored, and the joiner waits for the latch before it adds the
// results up.
//
// The fetches are simulated with timers of different lengths, so they finish out of order. The
// joiner does not block a thread: its async_wait completes once the last fetch has counted down,
// and what every fetch stored happens-before that completion.
//
// The program checks the total and exits non-zero if it is wrong.
//
//   parallel_fetch [FETCHES]    (default: 16)

#include <asio_sync/latch.hpp>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>

#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <memory>
#include <vector>

namespace asio = boost::asio;
using boost::system::error_code;

int main(int argc, char** argv)
{
    const std::size_t fetches = argc > 1 ? std::size_t(std::atoi(argv[1])) : 16;
    asio::thread_pool pool(4);
    asio_sync::latch done(pool.get_executor(), fetches);
    std::vector<long> results(fetches);
    for (std::size_t i = 0; i < fetches; ++i)
    {
        auto timer = std::make_shared<asio::steady_timer>(pool, std::chrono::milliseconds((i * 7) % 13));
        timer->async_wait([&, i, timer](error_code) {
            results[i] = long(i) * long(i); // the "response"
            done.count_down();
        });
    }
    std::promise<long> total;
    done.async_wait([&](error_code ec) {
        long sum = 0;
        for (long r : results)
            sum += r;
        total.set_value(ec ? -1 : sum);
    });
    const long sum = total.get_future().get();
    pool.join();
    long expected = 0;
    for (std::size_t i = 0; i < fetches; ++i)
        expected += long(i) * long(i);
    std::printf("%zu fetches joined: total %ld (expected %ld)\n", fetches, sum, expected);
    return sum == expected ? EXIT_SUCCESS : EXIT_FAILURE;
}
