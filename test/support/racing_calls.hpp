// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_TEST_SUPPORT_RACING_CALLS_HPP
#define ASIO_SYNC_TEST_SUPPORT_RACING_CALLS_HPP

#include <atomic>
#include <thread>

namespace asio_sync::test {

// Two calls racing, `rounds` times. Each round, `prepare()` runs on this thread; then `first()`
// runs on this thread while `second()` runs on a thread of its own, which spins until the round
// starts so that the two overlap as closely as the machine allows; then `check()` runs on this
// thread once both have returned. Nothing but the calls runs concurrently: `prepare` and `check`
// may use anything unsynchronised.
template <class Prepare, class First, class Second, class Check>
void race_calls(long rounds, Prepare prepare, First first, Second second, Check check)
{
    std::atomic<long> started{0};
    std::atomic<long> finished{0};
    std::atomic<long> waited{0};
    std::thread other([&] {
        for (long round = 1; round <= rounds; ++round)
        {
            while (started.load(std::memory_order_acquire) < round)
            {
            }
            second();
            finished.store(round, std::memory_order_release);
        }
    });
    for (long round = 1; round <= rounds; ++round)
    {
        prepare();
        started.store(round, std::memory_order_release);
        // The other thread needs a moment to see the round start: wait a little, a different
        // time each round, so that the calls meet at every offset.
        for (long spin = round % 64; spin > 0; --spin)
            waited.fetch_add(1, std::memory_order_relaxed);
        first();
        while (finished.load(std::memory_order_acquire) < round)
        {
        }
        check();
    }
    other.join();
}

} // namespace asio_sync::test

#endif // ASIO_SYNC_TEST_SUPPORT_RACING_CALLS_HPP
