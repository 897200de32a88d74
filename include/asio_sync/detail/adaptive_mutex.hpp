// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_DETAIL_ADAPTIVE_MUTEX_HPP
#define ASIO_SYNC_DETAIL_ADAPTIVE_MUTEX_HPP

#include <boost/config.hpp>

#include <atomic>

#if !defined(__cpp_lib_atomic_wait)
#include <condition_variable>
#include <mutex>
#endif

// _mm_pause comes with SSE2 (xmmintrin.h in g++, emmintrin.h in clang); immintrin.h, which has
// every extension, takes longer to parse than the rest of the semaphore.
#if defined(__x86_64__) || defined(__i386__)
#include <emmintrin.h>
#endif

namespace asio_sync::detail {

// The semaphore's internal lock. Its critical sections are a few dozen instructions, far shorter
// than a sleep and a wake-up, so a thread that finds it taken spins for a bounded time first
// (std::mutex, which sleeps at once, made a contended hand-off much slower), then sleeps until
// the holder lets go. It must never spin for ever: a real-time thread that spins, even calling
// sched_yield, while a lower-priority holder is preempted on the same processor keeps that
// holder off the processor for good.
//
// The word is unlocked, locked, or locked with sleepers; unlock wakes a sleeper only in the last
// state, so an uncontended lock and unlock are one atomic operation each. A thread sleeps through
// std::atomic::wait where the standard library has it (C++20; a futex on Linux), through a mutex
// and a condition variable otherwise.
class adaptive_mutex
{
public:
    void lock() noexcept
    {
        int expected = unlocked;
        if (!state_.compare_exchange_strong(expected, locked, std::memory_order_acquire,
                                            std::memory_order_relaxed))
            lock_contended();
    }

    void unlock() noexcept
    {
        if (state_.exchange(unlocked, std::memory_order_release) == locked_with_sleepers)
            wake_one();
    }

private:
    enum : int
    {
        unlocked,
        locked,
        locked_with_sleepers,
    };

    static constexpr int spins_before_sleeping = 100;

    BOOST_NOINLINE void lock_contended() noexcept
    {
        for (int spin = 0; spin < spins_before_sleeping; ++spin)
        {
            pause();
            // Read before trying, so that waiters do not take the cache line away from the holder.
            int seen = state_.load(std::memory_order_relaxed);
            if (seen == unlocked && state_.compare_exchange_weak(seen, locked, std::memory_order_acquire,
                                                                 std::memory_order_relaxed))
                return;
        }
        // Whoever takes the lock this way may leave sleepers behind, so it unlocks with a wake-up
        // (which may find nobody).
        while (state_.exchange(locked_with_sleepers, std::memory_order_acquire) != unlocked)
            sleep_while_locked();
    }

    static void pause() noexcept
    {
#if defined(__x86_64__) || defined(__i386__)
        _mm_pause();
#endif
    }

#if defined(__cpp_lib_atomic_wait)
    void sleep_while_locked() noexcept
    {
        state_.wait(locked_with_sleepers, std::memory_order_relaxed);
    }

    void wake_one() noexcept
    {
        state_.notify_one();
    }
#else
    void sleep_while_locked() noexcept
    {
        std::unique_lock<std::mutex> lock(parking_);
        while (state_.load(std::memory_order_relaxed) == locked_with_sleepers)
            woken_.wait(lock);
    }

    void wake_one() noexcept
    {
        // A sleeper checks the word under parking_ before it waits: once we have held parking_,
        // every sleeper that saw locked_with_sleepers is waiting and gets the notification.
        {
            std::lock_guard<std::mutex> lock(parking_);
        }
        woken_.notify_one();
    }

    std::mutex parking_;
    std::condition_variable woken_;
#endif

    std::atomic<int> state_{unlocked};
};

} // namespace asio_sync::detail

#endif // ASIO_SYNC_DETAIL_ADAPTIVE_MUTEX_HPP
