#ifndef ASIO_SYNC_DETAIL_SPIN_MUTEX_HPP
#define ASIO_SYNC_DETAIL_SPIN_MUTEX_HPP

#include <atomic>
#include <thread>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace asio_sync::detail {

// The semaphore's internal lock. Its critical sections are a few dozen instructions (link or
// unlink a waiter, move a count), far shorter than putting a thread to sleep and waking it:
// with std::mutex, two threads handing permits back and forth spent most of their time in futex
// calls. So a waiter spins, briefly with a pause, then yielding its time slice, which keeps a
// holder that was preempted from being starved of the processor by its waiters.
class spin_mutex
{
public:
    void lock() noexcept
    {
        unsigned spins = 0;
        while (locked_.exchange(true, std::memory_order_acquire))
        {
            // Wait for it to look free before trying again, without writing to its cache line.
            while (locked_.load(std::memory_order_relaxed))
            {
                if (spins < pauses_before_yielding)
                {
                    ++spins;
                    pause();
                }
                else
                {
                    std::this_thread::yield();
                }
            }
        }
    }

    bool try_lock() noexcept
    {
        return !locked_.load(std::memory_order_relaxed) && !locked_.exchange(true, std::memory_order_acquire);
    }

    void unlock() noexcept { locked_.store(false, std::memory_order_release); }

private:
    static constexpr unsigned pauses_before_yielding = 64;

    static void pause() noexcept
    {
#if defined(__x86_64__) || defined(__i386__)
        _mm_pause();
#endif
    }

    std::atomic<bool> locked_{false};
};

} // namespace asio_sync::detail

#endif // ASIO_SYNC_DETAIL_SPIN_MUTEX_HPP
