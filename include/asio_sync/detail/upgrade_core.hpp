// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_DETAIL_UPGRADE_CORE_HPP
#define ASIO_SYNC_DETAIL_UPGRADE_CORE_HPP

#include <asio_sync/detail/adaptive_mutex.hpp>
#include <asio_sync/detail/waiter_list.hpp>

#include <boost/config.hpp>

#include <atomic>
#include <cstddef>
#include <mutex>

namespace asio_sync::detail {

// The modes of an upgrade mutex, passed as the `n` of an acquire (see start_acquire.hpp).
enum lock_mode : std::size_t
{
    shared_mode = 1,
    upgrade_mode = 2, // shared, and at most one holder: the only one who may become exclusive
    exclusive_mode = 3,
    upgrading_mode = 4, // the upgrade holder becoming exclusive once the readers have left
};

// The engine (see start_acquire.hpp) of an upgrade mutex: readers, at most one upgrade holder
// alongside them, or one writer. The atomic and mutex types are parameters so that a test
// scheduler can run it one shared-memory step at a time.
//
// State: one atomic word `state_` = (readers << 3) | divert_flag | upgrade_flag | writer_flag, a
// mutex, a FIFO list of waiters, and the one upgrade in progress, if any, apart from the list.
//  - divert_flag is set exactly while a waiter is queued or an upgrade is pending, and changes only
//    under the mutex; while it is set, only code holding the mutex writes the word, so lock-free
//    paths (which all expect it clear) cannot take or give back a lock behind the queue's back;
//  - waiters are granted in FIFO order, each once everything it must exclude is gone, and none
//    is granted past an earlier one that still waits: a writer blocks the readers behind it, so
//    writers do not starve;
//  - the upgrade in progress goes before every queued waiter, and nothing is granted from the
//    list while it is pending: it waits only for the readers that hold the lock now.
// Why two upgrades cannot deadlock (tokio-rs/tokio#7282): only the upgrade holder may upgrade, and
// there is at most one; it waits only for readers, and a reader never waits for anything while it
// holds its share. A writer queued before the upgrade cannot block it either: the upgrade does not
// queue behind it.
//
// Functions that complete waiters move them to a caller-provided `waiter_list`; the caller finishes
// them after the mutex is released.
template <template <class> class Atomic = std::atomic, class Mutex = adaptive_mutex>
class upgrade_core
{
public:
    upgrade_core() = default;
    upgrade_core(const upgrade_core&) = delete;
    upgrade_core& operator=(const upgrade_core&) = delete;

    // Whether a holder of mode `held` that asks for `requested` waits for itself (the holder
    // registry's check): the writer excludes everything; a reader, the writer and the upgrade; the
    // upgrade holder, another upgrade lock and the writer (it upgrades instead).
    static bool excludes(std::size_t held, std::size_t requested) noexcept
    {
        switch (held)
        {
        case shared_mode:
            return requested == exclusive_mode || requested == upgrading_mode;
        case upgrade_mode:
            return requested == upgrade_mode || requested == exclusive_mode;
        default:
            return true;
        }
    }

    // The largest mode; start_acquire refuses more.
    static constexpr std::size_t capacity() noexcept { return upgrading_mode; }

    std::size_t readers() const noexcept { return state_.load(std::memory_order_relaxed) >> shift; }
    bool upgrade_held() const noexcept { return state_.load(std::memory_order_relaxed) & upgrade_flag; }
    bool writer_held() const noexcept { return state_.load(std::memory_order_relaxed) & writer_flag; }
    std::size_t waiting() const noexcept { return waiting_.load(std::memory_order_relaxed); }

    // Lock-free: takes `mode` if nothing it excludes is held and nothing waits. An upgrade
    // (upgrading_mode) needs the upgrade lock and no reader; it may go ahead of queued waiters,
    // so it is tried under the mutex when anyone waits.
    BOOST_FORCEINLINE bool try_acquire(std::size_t mode, bool = false) noexcept
    {
        std::size_t s = state_.load(std::memory_order_relaxed);
        for (;;)
        {
            if (s & divert_flag)
                return mode == upgrading_mode && try_upgrade_locked();
            if (!compatible(mode, s))
                return false;
            if (state_.compare_exchange_weak(s, taken(mode, s), std::memory_order_acquire,
                                             std::memory_order_relaxed))
                return true;
        }
    }

    // Slow path of an acquire of `mode`: queues the waiter (pending) or decides at once (granted;
    // `no_upgrade_lock` for an upgrade without the upgrade lock, or a second upgrade at once).
    waiter_outcome enqueue(semaphore_waiter& w, std::size_t mode)
    {
        std::lock_guard<Mutex> lock(mutex_);
        w.missing = 0;
        w.collected = mode; // what a grant hands over, and what an undelivered one gives back
        std::size_t s = state_.load(std::memory_order_relaxed);
        if (mode == upgrading_mode && (!(s & upgrade_flag) || upgrading_))
            return waiter_outcome::no_upgrade_lock;
        // Behind the queue, unless this is the upgrade, which goes before it.
        if (mode == upgrading_mode || !(s & divert_flag))
        {
            // Lock-free paths may still change the word until the flag is set: decide again on
            // every value the word takes, and set the flag in the same step as the decision.
            for (;;)
            {
                if (compatible(mode, s))
                {
                    if (state_.compare_exchange_weak(s, taken(mode, s), std::memory_order_acquire,
                                                     std::memory_order_relaxed))
                        return waiter_outcome::granted;
                }
                else if ((s & divert_flag) ||
                         state_.compare_exchange_weak(s, s | divert_flag, std::memory_order_acq_rel,
                                                      std::memory_order_relaxed))
                {
                    break;
                }
            }
        }
        if (mode == upgrading_mode)
            upgrading_ = &w;
        else
            queue_.push_back(w);
        w.queued.store(true, std::memory_order_relaxed);
        waiting_.store(waiting_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        return waiter_outcome::pending;
    }

    // Gives back `mode` (the upgrade mode of an upgrade holder, the exclusive mode of a writer or
    // of a completed upgrade) and grants the waiters it lets through.
    BOOST_FORCEINLINE void release(std::size_t mode, waiter_list& done)
    {
        change(done, [mode](std::size_t s) { return given_back(mode, s); });
    }

    // Exclusive to shared, or to upgrade: atomically, no writer in between.
    void downgrade(std::size_t to, waiter_list& done)
    {
        change(done, [to](std::size_t s) { return taken(to, given_back(exclusive_mode, s)); });
    }

    // The upgrade holder becomes a plain reader, atomically.
    void downgrade_upgrade(waiter_list& done)
    {
        change(done, [](std::size_t s) { return taken(shared_mode, given_back(upgrade_mode, s)); });
    }

    // Per-operation cancellation and timeouts: if the waiter that *ref names is still queued (or
    // is the pending upgrade), it leaves with outcome `why`, and whoever it was holding up moves.
    bool cancel(semaphore_waiter* const* ref, waiter_outcome why, waiter_list& done)
    {
        std::lock_guard<Mutex> lock(mutex_);
        semaphore_waiter* w = *ref;
        if (!w || !w->queued.load(std::memory_order_relaxed))
            return false;
        remove(*w, why, done);
        serve(done);
        return true;
    }

    // Aborts every queued waiter and the pending upgrade (whose caller keeps the upgrade lock).
    std::size_t abort_all(waiter_outcome why, waiter_list& done)
    {
        std::lock_guard<Mutex> lock(mutex_);
        std::size_t count = 0;
        if (upgrading_)
        {
            remove(*upgrading_, why, done);
            ++count;
        }
        while (semaphore_waiter* w = queue_.front())
        {
            remove(*w, why, done);
            ++count;
        }
        if (count != 0)
            settle(state_.load(std::memory_order_relaxed));
        return count;
    }

private:
    static constexpr std::size_t writer_flag = 1;
    static constexpr std::size_t upgrade_flag = 2;
    static constexpr std::size_t divert_flag = 4;
    static constexpr unsigned shift = 3;
    static constexpr std::size_t one_reader = std::size_t(1) << shift;

    // Whether `mode` may be taken in state `s`, leaving aside who waits.
    static bool compatible(std::size_t mode, std::size_t s) noexcept
    {
        switch (mode)
        {
        case shared_mode:
            return !(s & writer_flag);
        case upgrade_mode:
            return !(s & (writer_flag | upgrade_flag));
        case exclusive_mode:
            return (s & ~divert_flag) == 0;
        default: // upgrading_mode: the caller holds the upgrade lock
            return (s & upgrade_flag) && (s >> shift) == 0;
        }
    }

    static std::size_t taken(std::size_t mode, std::size_t s) noexcept
    {
        switch (mode)
        {
        case shared_mode:
            return s + one_reader;
        case upgrade_mode:
            return s | upgrade_flag;
        case exclusive_mode:
            return s | writer_flag;
        default:
            return (s & ~upgrade_flag) | writer_flag;
        }
    }

    static std::size_t given_back(std::size_t mode, std::size_t s) noexcept
    {
        switch (mode)
        {
        case shared_mode:
            return s - one_reader;
        case upgrade_mode:
            return s & ~upgrade_flag;
        default: // a writer, whether it came by exclusive_mode or by upgrading_mode
            return s & ~writer_flag;
        }
    }

    // Under the mutex: takes `mode` if it is compatible, whatever lock-free paths do meanwhile.
    bool take_if_compatible(std::size_t mode, std::size_t& s)
    {
        while (compatible(mode, s))
        {
            if (state_.compare_exchange_weak(s, taken(mode, s), std::memory_order_acquire,
                                             std::memory_order_relaxed))
                return true;
        }
        return false;
    }

    BOOST_NOINLINE bool try_upgrade_locked() noexcept
    {
        std::lock_guard<Mutex> lock(mutex_);
        std::size_t s = state_.load(std::memory_order_relaxed);
        return !upgrading_ && take_if_compatible(upgrading_mode, s);
    }

    // Applies `next` to the state: lock-free while nothing is diverted, else under the mutex,
    // serving the waiters the change lets through.
    template <class Next>
    BOOST_FORCEINLINE void change(waiter_list& done, Next next)
    {
        std::size_t s = state_.load(std::memory_order_relaxed);
        while (!(s & divert_flag))
        {
            if (state_.compare_exchange_weak(s, next(s), std::memory_order_release,
                                             std::memory_order_relaxed))
                return;
        }
        change_diverted(done, next);
    }

    template <class Next>
    BOOST_NOINLINE void change_diverted(waiter_list& done, Next next)
    {
        std::lock_guard<Mutex> lock(mutex_);
        std::size_t s = state_.load(std::memory_order_relaxed);
        if (!(s & divert_flag))
        {
            // Nothing diverted any more; the flag only changes under the mutex, which we hold.
            while (!state_.compare_exchange_weak(s, next(s), std::memory_order_release,
                                                 std::memory_order_relaxed))
            {
            }
            return;
        }
        state_.store(next(s), std::memory_order_release);
        serve(done);
    }

    // Under the mutex, with the divert flag set: grants the pending upgrade if the readers have
    // left, else nothing; without one, the oldest waiters while each is compatible. Clears the flag
    // once nobody is left.
    void serve(waiter_list& done)
    {
        std::size_t s = state_.load(std::memory_order_relaxed);
        if (upgrading_)
        {
            if (!compatible(upgrading_mode, s))
                return;
            s = taken(upgrading_mode, s);
            remove(*upgrading_, waiter_outcome::granted, done);
        }
        while (semaphore_waiter* head = queue_.front())
        {
            if (!compatible(head->collected, s))
                break;
            s = taken(head->collected, s);
            remove(*head, waiter_outcome::granted, done);
        }
        state_.store(s, std::memory_order_release);
        settle(s);
    }

    // Under the mutex: clears the divert flag once nobody waits. Still flagged, so no lock-free
    // path has touched the word: a plain store.
    void settle(std::size_t s)
    {
        if (queue_.empty() && !upgrading_)
            state_.store(s & ~divert_flag, std::memory_order_release);
    }

    void remove(semaphore_waiter& w, waiter_outcome why, waiter_list& done) noexcept
    {
        if (&w == upgrading_)
            upgrading_ = nullptr;
        else
            queue_.erase(w);
        w.queued.store(false, std::memory_order_relaxed);
        waiting_.store(waiting_.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
        if (w.cancel_ref)
            *w.cancel_ref = nullptr;
        w.outcome = why;
        done.push_back(w);
    }

    alignas(64) Atomic<std::size_t> state_{0};
    alignas(64) Mutex mutex_;
    waiter_list queue_;
    semaphore_waiter* upgrading_ = nullptr; // guarded by the mutex
    // A statistic for waiting(), written under the mutex.
    std::atomic<std::size_t> waiting_{0};
};

} // namespace asio_sync::detail

#endif // ASIO_SYNC_DETAIL_UPGRADE_CORE_HPP
