#ifndef ASIO_SYNC_DETAIL_SEMAPHORE_CORE_HPP
#define ASIO_SYNC_DETAIL_SEMAPHORE_CORE_HPP

#include <asio_sync/detail/waiter_list.hpp>

#include <atomic>
#include <cstddef>
#include <limits>
#include <mutex>
#include <stdexcept>

namespace asio_sync::detail {

// The semaphore algorithm, free of Asio. The atomic and mutex types are parameters so that a test
// scheduler can run it one shared-memory step at a time; production uses std::atomic / std::mutex.
//
// State: one atomic word `state_` = (permits << 2) | queued_flag | closed_flag, a mutex, and a FIFO
// list of waiters. Invariants:
//  - queued_flag is set exactly while the list is non-empty, and only changes under the mutex;
//  - while queued_flag is set the counter holds no permits (they go straight to waiters), so
//    try_acquire cannot jump the queue and no permit "floats" while someone waits;
//  - only the head of the list ever holds collected permits (it is the only one ever served).
// Because the flag lives in the same word as the permits, an acquirer's "drain the counter and
// mark the queue non-empty" is one atomic step: a lock-free release either lands before it (and is
// drained) or sees the flag (and takes the mutex). This is what makes the lock-free release safe,
// where a separate "has waiters" boolean is not.
//
// Functions that complete waiters move them to a caller-provided `waiter_list`; the caller finishes
// them after the mutex is released.
template <template <class> class Atomic = std::atomic, class Mutex = std::mutex>
class semaphore_core
{
public:
    static constexpr std::size_t max_permits = std::numeric_limits<std::size_t>::max() >> 2;

    enum class enqueue_result
    {
        granted, // all n permits taken, the waiter was not queued
        queued,
        closed,
    };

    explicit semaphore_core(std::size_t initial_permits) : state_(checked(initial_permits) << shift) {}

    semaphore_core(const semaphore_core&) = delete;
    semaphore_core& operator=(const semaphore_core&) = delete;

    std::size_t available() const noexcept { return state_.load(std::memory_order_relaxed) >> shift; }

    std::size_t waiting() const noexcept { return waiting_.load(std::memory_order_relaxed); }

    bool is_closed() const noexcept { return state_.load(std::memory_order_relaxed) & closed_flag; }

    // Lock-free. Fails when closed, when anyone is queued (n > 0), or when fewer than n are there.
    bool try_acquire(std::size_t n) noexcept
    {
        std::size_t s = state_.load(std::memory_order_relaxed);
        for (;;)
        {
            if ((s & closed_flag) || (n != 0 && (s & queued_flag)) || (s >> shift) < n)
                return false;
            if (n == 0)
                return true;
            if (state_.compare_exchange_weak(s, s - (n << shift), std::memory_order_acquire,
                                             std::memory_order_relaxed))
                return true;
        }
    }

    // Slow path of an acquire of 0 < n <= max_permits. Takes the mutex before draining the counter;
    // the waiter keeps what it drained and is queued, unless n permits are there after all.
    enqueue_result enqueue(semaphore_waiter& w, std::size_t n)
    {
        std::lock_guard<Mutex> lock(mutex_);
        std::size_t s = state_.load(std::memory_order_relaxed);
        if (s & closed_flag)
            return enqueue_result::closed;
        w.missing = n;
        w.collected = 0;
        if (!(s & queued_flag))
        {
            // Nobody queued: the counter may hold permits, and lock-free try_acquire and release
            // may still change it, so drain it with a CAS.
            for (;;)
            {
                const std::size_t permits = s >> shift;
                if (permits >= n)
                {
                    if (state_.compare_exchange_weak(s, s - (n << shift), std::memory_order_acquire,
                                                     std::memory_order_relaxed))
                        return enqueue_result::granted;
                    continue;
                }
                if (state_.compare_exchange_weak(s, queued_flag, std::memory_order_acquire,
                                                 std::memory_order_relaxed))
                {
                    w.missing = n - permits;
                    w.collected = permits;
                    break;
                }
            }
        }
        queue_.push_back(w);
        waiting_.store(waiting_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        return enqueue_result::queued;
    }

    // Adds n permits: to the counter while nobody waits (lock-free), else to the oldest waiters.
    // Throws std::overflow_error, changing nothing, if the counter would exceed max_permits.
    void release(std::size_t n, waiter_list& done)
    {
        if (n == 0)
            return;
        std::size_t s = state_.load(std::memory_order_relaxed);
        while (!(s & queued_flag))
        {
            check_room(s, n);
            if (state_.compare_exchange_weak(s, s + (n << shift), std::memory_order_release,
                                             std::memory_order_relaxed))
                return;
        }
        std::lock_guard<Mutex> lock(mutex_);
        s = state_.load(std::memory_order_relaxed);
        if (!(s & queued_flag))
        {
            // The queue emptied while we were taking the mutex.
            for (;;)
            {
                check_room(s, n);
                if (state_.compare_exchange_weak(s, s + (n << shift), std::memory_order_release,
                                                 std::memory_order_relaxed))
                    return;
            }
        }
        check_room(s, n); // the counter is empty here; the surplus is at most n
        hand_off(n, done);
    }

    // Per-operation cancellation. `*ref` names the waiter, or is null once it has left the queue
    // (granted or already cancelled), in which case nothing happens and false is returned.
    // Otherwise the waiter moves to `done` with outcome::aborted and what it collected is handed
    // to the waiters behind it.
    bool cancel(semaphore_waiter* const* ref, waiter_list& done)
    {
        std::lock_guard<Mutex> lock(mutex_);
        semaphore_waiter* w = *ref;
        if (!w)
            return false;
        const std::size_t collected = w->collected;
        remove(*w, waiter_outcome::aborted, done);
        hand_off(collected, done);
        return true;
    }

    // Aborts every queued waiter with `why`; their collected permits return to the counter.
    // With `close`, marks the semaphore closed in the same step. Returns how many were aborted.
    std::size_t abort_all(waiter_outcome why, bool close, waiter_list& done)
    {
        std::lock_guard<Mutex> lock(mutex_);
        std::size_t returned = 0;
        std::size_t count = 0;
        while (semaphore_waiter* w = queue_.front())
        {
            returned += w->collected;
            remove(*w, why, done);
            ++count;
        }
        std::size_t s = state_.load(std::memory_order_relaxed);
        if (count != 0)
        {
            // The counter was empty while the queue was not; nothing else writes it now.
            state_.store((returned << shift) | (s & closed_flag) | (close ? closed_flag : 0),
                         std::memory_order_release);
        }
        else if (close && !(s & closed_flag))
        {
            // Lock-free try_acquire and release may race with us here.
            while (!state_.compare_exchange_weak(s, s | closed_flag, std::memory_order_relaxed))
            {
            }
        }
        return count;
    }

private:
    static constexpr std::size_t closed_flag = 1;
    static constexpr std::size_t queued_flag = 2;
    static constexpr unsigned shift = 2;

    static std::size_t checked(std::size_t initial_permits)
    {
        if (initial_permits > max_permits)
            throw std::invalid_argument("asio_sync: initial permits exceed max_permits");
        return initial_permits;
    }

    static void check_room(std::size_t state, std::size_t n)
    {
        if (n > max_permits - (state >> shift))
            throw std::overflow_error("asio_sync: release would exceed max_permits");
    }

    // Called with the mutex held and the queued flag set (the queue may have just emptied).
    // Serves the oldest waiters first, stops at one that stays partly served, and once the queue
    // is empty clears the flag and puts the surplus in the counter.
    void hand_off(std::size_t n, waiter_list& done)
    {
        while (n != 0)
        {
            semaphore_waiter* head = queue_.front();
            if (!head)
                break;
            const std::size_t take = n < head->missing ? n : head->missing;
            head->missing -= take;
            head->collected += take;
            n -= take;
            if (head->missing != 0)
                return;
            remove(*head, waiter_outcome::granted, done);
        }
        if (queue_.empty())
        {
            // Still flagged as queued, so no lock-free path has touched the word: a plain store
            // clears the flag and publishes the surplus in one step.
            const std::size_t s = state_.load(std::memory_order_relaxed);
            state_.store((n << shift) | (s & closed_flag), std::memory_order_release);
        }
    }

    void remove(semaphore_waiter& w, waiter_outcome why, waiter_list& done) noexcept
    {
        queue_.erase(w);
        waiting_.store(waiting_.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
        if (w.cancel_ref)
            *w.cancel_ref = nullptr;
        w.outcome = why;
        if (why != waiter_outcome::granted)
            w.collected = 0; // the caller hands them on
        done.push_back(w);
    }

    // Lock-free paths hammer this word; keep it away from the mutex and the list.
    alignas(64) Atomic<std::size_t> state_;
    alignas(64) Mutex mutex_;
    waiter_list queue_;
    // A statistic for waiting(), written under the mutex; not part of the algorithm, so not a
    // step the test scheduler needs to interleave.
    std::atomic<std::size_t> waiting_{0};
};

} // namespace asio_sync::detail

#endif // ASIO_SYNC_DETAIL_SEMAPHORE_CORE_HPP
