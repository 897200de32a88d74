// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_DETAIL_SEMAPHORE_CORE_HPP
#define ASIO_SYNC_DETAIL_SEMAPHORE_CORE_HPP

#include <asio_sync/detail/adaptive_mutex.hpp>
#include <asio_sync/detail/waiter_list.hpp>

#include <boost/config.hpp>
#include <boost/throw_exception.hpp>

#include <atomic>
#include <cstddef>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <utility>

namespace asio_sync::detail {

// The semaphore algorithm, free of Asio. The atomic and mutex types are parameters so that a test
// scheduler can run it one shared-memory step at a time; production uses std::atomic and adaptive_mutex.
//
// State: one atomic word `state_` = (permits << 2) | divert_flag | closed_flag, a mutex, a FIFO
// list of waiters and a debt (permits owed after reduce_permits). Invariants:
//  - divert_flag is set exactly while the list is non-empty or the debt is non-zero, and only
//    changes under the mutex;
//  - while divert_flag is set the counter holds no permits: released permits are diverted to the
//    debt first, then to the waiters, so try_acquire cannot jump the queue and no permit "floats"
//    while someone waits;
//  - only the head of the list ever holds collected permits (it is the only one ever served).
// Because the flag lives in the same word as the permits, an acquirer's "drain the counter and
// mark the queue non-empty" is one atomic step: a lock-free release either lands before it (and is
// drained) or sees the flag (and takes the mutex). This is what makes the lock-free release safe,
// where a separate "has waiters" boolean is not.
//
// A bounded core also keeps the room = bound - circulation, where circulation counts the permits
// in the counter, those collected by queued waiters and those held by permit objects, minus the
// debt. Only plain acquires (+), permit::forget (+) and plain releases (-) change it: capacity
// changes move the bound and the circulation together. It lives in the same word, above the
// counter (state = room << room_shift | permits << 2 | flags), which limits a bounded core to
// max_bound: so a lock-free plain acquire takes its permits and leaves its room in one CAS, and a
// plain release that finds nothing diverted takes its room and puts its permits in the counter in
// one CAS. A release that finds the flag takes the mutex before its room, and the hand-off that
// completes plain acquires gives their room back under the same mutex, so that no release ever
// sees a hand-off half done (see release_bounded); permit::forget too raises the room under the
// mutex while the flag is set, so that the flag still guards the word. Updates that lower the room
// come no later than the permits move, updates that raise it no earlier, so it is never
// overstated.
//
// Functions that complete waiters move them to a caller-provided `waiter_list`; the caller finishes
// them after the mutex is released.
template <template <class> class Atomic = std::atomic, class Mutex = adaptive_mutex>
class semaphore_core
{
public:
    static constexpr std::size_t max_permits = std::numeric_limits<std::size_t>::max() >> 2;
    // The largest bound of a bounded core: its counter and its room share the bits above the
    // flags, half each.
    static constexpr std::size_t max_bound =
        (std::size_t(1) << (std::numeric_limits<std::size_t>::digits - 2) / 2) - 1;

    explicit semaphore_core(std::size_t initial_permits) : semaphore_core(initial_permits, max_permits, false)
    {
    }

    semaphore_core(std::size_t initial_permits, std::size_t bound)
        : semaphore_core(initial_permits, bound, true)
    {
    }

    semaphore_core(const semaphore_core&) = delete;
    semaphore_core& operator=(const semaphore_core&) = delete;

    std::size_t available() const noexcept { return permits(state_.load(std::memory_order_relaxed)); }

    std::size_t waiting() const noexcept { return waiting_.load(std::memory_order_relaxed); }

    bool is_closed() const noexcept { return state_.load(std::memory_order_relaxed) & closed_flag; }

    bool bounded() const noexcept { return bounded_; }

    // The bound; max_permits for an unbounded core.
    std::size_t capacity() const noexcept { return bound_.load(std::memory_order_relaxed); }

    // The open debt and the permits the queued acquires still miss, read together under the mutex:
    // what a leased share (redis/detail/share_engine.hpp) adds to the permits in use as its demand.
    std::pair<std::size_t, std::size_t> shortfall()
    {
        std::lock_guard<Mutex> lock(mutex_);
        std::size_t missing = 0;
        for (const semaphore_waiter* w = queue_.front(); w; w = w->next)
            missing += w->missing;
        return {debt_, missing};
    }

    // Lock-free. Fails when closed, when the semaphore is diverting permits (someone is queued or
    // there is a debt) and n > 0, or when fewer than n are there.
    BOOST_FORCEINLINE bool try_acquire(std::size_t n, bool to_permit = false) noexcept
    {
        std::size_t s = state_.load(std::memory_order_relaxed);
        for (;;)
        {
            if ((s & closed_flag) || (n != 0 && (s & divert_flag)) || permits(s) < n)
                return false;
            if (n == 0)
                return true;
            if (state_.compare_exchange_weak(s, s - (n << shift) + (to_permit ? 0 : room_units(n)),
                                             std::memory_order_acquire, std::memory_order_relaxed))
                return true;
        }
    }

    // Slow path of an acquire of 0 < n <= max_permits. Takes the mutex before draining the counter;
    // the waiter keeps what it drained and is queued, unless n permits are there after all.
    // Returns `pending` if the waiter was queued, else the outcome decided at once: `granted` (all
    // n permits taken), `closed`, or `too_many` (n exceeds a bounded core's capacity). The waiter's
    // own `outcome` is left alone: only a waiter that leaves the queue gets one.
    waiter_outcome enqueue(semaphore_waiter& w, std::size_t n)
    {
        std::lock_guard<Mutex> lock(mutex_);
        std::size_t s = state_.load(std::memory_order_relaxed);
        if (s & closed_flag)
            return waiter_outcome::closed;
        if (n > bound_.load(std::memory_order_relaxed)) // checked again under the mutex: reduce races
            return waiter_outcome::too_many;
        w.missing = n;
        w.collected = 0;
        if (!(s & divert_flag))
        {
            // Nothing diverted: the counter may hold permits, and lock-free try_acquire and
            // release may still change it, so drain it with a CAS.
            for (;;)
            {
                const std::size_t drained = permits(s);
                if (drained >= n)
                {
                    if (!state_.compare_exchange_weak(s, s - (n << shift) + (w.to_permit ? 0 : room_units(n)),
                                                      std::memory_order_acquire, std::memory_order_relaxed))
                        continue;
                    return waiter_outcome::granted;
                }
                // What it drains stays in circulation: the room does not move.
                if (state_.compare_exchange_weak(s, (s & room_mask_) | divert_flag, std::memory_order_acquire,
                                                 std::memory_order_relaxed))
                {
                    w.missing = n - drained;
                    w.collected = drained;
                    break;
                }
            }
        }
        queue_.push_back(w);
        w.queued.store(true, std::memory_order_relaxed);
        waiting_.store(waiting_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        return waiter_outcome::pending;
    }

    // A plain release: puts n permits into circulation. Returns false, changing nothing, if that
    // would pass the bound or the counter would pass max_permits. Forced inline, with the locked
    // parts out of line: the lock-free case is the hot path of most programs.
    BOOST_FORCEINLINE bool release(std::size_t n, waiter_list& done)
    {
        if (bounded_)
            return release_bounded(n, done);
        return deposit(n, done, false);
    }

    // Permits a permit object held return to the semaphore: never fails. They stay in
    // circulation. Only an unbounded counter can be full; the excess is then dropped.
    void give_back(std::size_t n, waiter_list& done) { deposit(n, done, true); }

    // permit::forget: the permits leave circulation for good. Lock-free while nothing is diverted;
    // otherwise under the mutex, since nothing else writes the word then (see publish).
    void forget_permit(std::size_t n) noexcept
    {
        if (!bounded_)
            return;
        std::size_t s = state_.load(std::memory_order_relaxed);
        while (!(s & divert_flag))
        {
            if (state_.compare_exchange_weak(s, s + (n << room_shift), std::memory_order_acq_rel,
                                             std::memory_order_relaxed))
                return;
        }
        std::lock_guard<Mutex> lock(mutex_);
        leave_circulation(n);
    }

    // The room a bounded core keeps for plain releases (0 for an unbounded one).
    std::size_t room() const noexcept { return room_of(state_.load(std::memory_order_relaxed)); }

    // add_permits: new permits enter circulation and, on a bounded core, the bound rises with
    // them. Returns false, changing nothing, if the bound would pass max_bound or, unbounded, the
    // counter max_permits.
    bool add(std::size_t n, waiter_list& done)
    {
        if (!bounded_)
            return deposit(n, done, false);
        std::lock_guard<Mutex> lock(mutex_);
        const std::size_t bound = bound_.load(std::memory_order_relaxed);
        if (n > max_bound - bound)
            return false;
        bound_.store(bound + n, std::memory_order_relaxed);
        deposit_locked(n, done, false);
        return true;
    }

    // forget_permits: takes up to n permits out of the counter for good, and lowers the bound by
    // as many. Nothing is in the counter while anyone waits or while there is a debt.
    std::size_t forget(std::size_t n)
    {
        std::lock_guard<Mutex> lock(mutex_); // orders the bound with add and reduce
        std::size_t s = state_.load(std::memory_order_relaxed);
        std::size_t taken;
        do
        {
            taken = permits(s) < n ? permits(s) : n;
            if (taken == 0)
                return 0;
        } while (!state_.compare_exchange_weak(s, s - (taken << shift), std::memory_order_acquire,
                                               std::memory_order_relaxed));
        if (bounded_)
            bound_.store(bound_.load(std::memory_order_relaxed) - taken, std::memory_order_relaxed);
        return taken;
    }

    // reduce_permits: lowers the capacity by exactly n without waiting. What the counter cannot
    // give now becomes a debt that the next permits to flow back pay before anyone is served.
    // Queued waiters that ask for more than a bounded core's new capacity fail (too_many).
    // Throws std::invalid_argument if n exceeds the capacity, std::overflow_error if the debt would
    // pass max_permits; nothing changes then.
    void reduce(std::size_t n, waiter_list& done)
    {
        if (n == 0)
            return;
        std::lock_guard<Mutex> lock(mutex_);
        const std::size_t bound = bound_.load(std::memory_order_relaxed);
        if (n > bound)
            boost::throw_exception(std::invalid_argument("asio_sync: reduce_permits exceeds the capacity"));
        std::size_t s = state_.load(std::memory_order_relaxed);
        std::size_t taken;
        for (;;)
        {
            taken = permits(s) < n ? permits(s) : n;
            if (n - taken > max_permits - debt_)
                boost::throw_exception(
                    std::overflow_error("asio_sync: reduce_permits would owe more than max_permits"));
            // Short of n, the counter is emptied and the flag set in the same step.
            const std::size_t next =
                taken == n ? s - (n << shift) : (s & (room_mask_ | closed_flag)) | divert_flag;
            if (state_.compare_exchange_weak(s, next, std::memory_order_acquire, std::memory_order_relaxed))
                break;
        }
        debt_ += n - taken;
        if (bounded_)
        {
            bound_.store(bound - n, std::memory_order_relaxed);
            abort_oversized(done);
        }
    }

    // Pays the debt with what the queued waiters have collected, oldest first: each gives back up
    // to the debt and waits for as many more. For a leased share (redis/detail/share_engine.hpp),
    // whose capacity lowered must not stay held by acquires that cannot complete under it, while no
    // holder uses those permits. Unbounded cores only. Returns the permits taken.
    std::size_t pay_debt_with_collected() noexcept
    {
        std::lock_guard<Mutex> lock(mutex_);
        std::size_t taken = 0;
        for (semaphore_waiter* w = queue_.front(); w && debt_ != 0; w = w->next)
        {
            const std::size_t take = w->collected < debt_ ? w->collected : debt_;
            w->collected -= take;
            w->missing += take;
            debt_ -= take;
            taken += take;
        }
        return taken;
    }

    // Per-operation cancellation and timeouts. `*ref` names the waiter, or is null once it has
    // left the queue. If the waiter is not queued (granted or cancelled already) nothing happens
    // and false is returned. Otherwise the waiter moves to `done` with outcome `why` and what it
    // collected is handed to the waiters behind it.
    bool cancel(semaphore_waiter* const* ref, waiter_outcome why, waiter_list& done)
    {
        std::lock_guard<Mutex> lock(mutex_);
        semaphore_waiter* w = *ref;
        if (!w || !w->queued.load(std::memory_order_relaxed))
            return false;
        const std::size_t collected = w->collected;
        remove(*w, why, done);
        hand_off(collected, done);
        return true;
    }

    // Aborts every queued waiter with `why`; their collected permits pay the debt, then return to
    // the counter. With `close`, marks the semaphore closed in the same step. Returns how many
    // were aborted.
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
            returned = pay_debt(returned);
            publish(s, returned, (close ? closed_flag : 0) | (debt_ != 0 ? divert_flag : 0));
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
    friend struct access;

    static constexpr std::size_t closed_flag = 1;
    static constexpr std::size_t divert_flag = 2;
    static constexpr unsigned shift = 2;
    // A bounded core's room, above its counter.
    static constexpr unsigned room_shift = shift + (std::numeric_limits<std::size_t>::digits - 2) / 2;

    semaphore_core(std::size_t initial_permits, std::size_t bound, bool bounded)
        : state_((checked(initial_permits, bound, bounded) << shift) |
                 (bounded ? (bound - initial_permits) << room_shift : 0)),
          bound_(bound), bounded_(bounded), counter_mask_(bounded ? max_bound : max_permits),
          room_mask_(bounded ? ~std::size_t(0) << room_shift : 0)
    {
    }

    static std::size_t checked(std::size_t initial_permits, std::size_t bound, bool bounded)
    {
        if (bounded && bound > max_bound)
            boost::throw_exception(std::invalid_argument("asio_sync: the bound exceeds max_bound"));
        if (initial_permits > bound)
            boost::throw_exception(
                std::invalid_argument(bound == max_permits ? "asio_sync: initial permits exceed max_permits"
                                                           : "asio_sync: initial permits exceed the bound"));
        return initial_permits;
    }

    // After the bound dropped: waiters that could never be served leave, and what they collected
    // is handed on like a cancelled waiter's.
    void abort_oversized(waiter_list& done)
    {
        const std::size_t bound = bound_.load(std::memory_order_relaxed);
        std::size_t returned = 0;
        bool removed = false;
        for (semaphore_waiter* w = queue_.front(); w;)
        {
            semaphore_waiter* next = w->next;
            if (w->missing + w->collected > bound)
            {
                returned += w->collected;
                remove(*w, waiter_outcome::too_many, done);
                removed = true;
            }
            w = next;
        }
        if (removed)
            hand_off(returned, done);
    }

    std::size_t permits(std::size_t state) const noexcept { return (state >> shift) & counter_mask_; }

    std::size_t room_of(std::size_t state) const noexcept { return bounded_ ? state >> room_shift : 0; }

    // n permits' worth of room in the word (n <= max_bound), none in an unbounded core.
    std::size_t room_units(std::size_t n) const noexcept { return bounded_ ? n << room_shift : 0; }

    // Room + circulation == bound <= max_bound: the room cannot carry out of its bits.
    void leave_circulation(std::size_t n) noexcept
    {
        state_.fetch_add(n << room_shift, std::memory_order_acq_rel);
    }

    // Lock-free while nothing is diverted: the room and the counter move in one CAS, so no release
    // ever sees one without the other. Otherwise decided under the mutex, the room taken before the
    // hand-off: the room that a hand-off's plain acquires leave comes back under the mutex, once
    // they are out of the queue, so a release that took its room and then waited for the mutex
    // could leave a second release short of room although the first one's permits were leaving
    // circulation again. (Two set() calls of an auto_reset_event with two waits queued then
    // completed only one.) Under the mutex the room still needs a CAS: lock-free acquires,
    // releases and permit::forget change the word if nothing is diverted.
    BOOST_NOINLINE bool release_bounded(std::size_t n, waiter_list& done)
    {
        if (n == 0)
            return true;
        if (release_to_counter(n))
            return true;
        std::lock_guard<Mutex> lock(mutex_);
        return release_bounded_locked(n, done);
    }

    // The lock-free plain release of a bounded core: false if something is diverted, or if the
    // room is short (the caller then finds out which under the mutex).
    bool release_to_counter(std::size_t n) noexcept
    {
        std::size_t s = state_.load(std::memory_order_relaxed);
        // Room >= n: circulation + n <= bound, so neither the counter nor the room overflows.
        while (!(s & divert_flag) && room_of(s) >= n)
        {
            if (state_.compare_exchange_weak(s, s + (n << shift) - (n << room_shift),
                                             std::memory_order_release, std::memory_order_relaxed))
                return true;
        }
        return false;
    }

    // Under the mutex: takes the room, if there is enough, then hands the permits off; or, if the
    // flag is clear (the queue emptied while we were taking the mutex), puts them in the counter
    // in the same CAS.
    bool release_bounded_locked(std::size_t n, waiter_list& done)
    {
        std::size_t s = state_.load(std::memory_order_relaxed);
        for (;;)
        {
            if (!(s & divert_flag))
            {
                if (room_of(s) < n)
                    return false;
                if (state_.compare_exchange_weak(s, s + (n << shift) - (n << room_shift),
                                                 std::memory_order_release, std::memory_order_relaxed))
                    return true;
                continue;
            }
            if (room_of(s) < n)
                return false;
            if (state_.compare_exchange_weak(s, s - (n << room_shift), std::memory_order_acq_rel,
                                             std::memory_order_relaxed))
                break;
        }
        hand_off(n, done);
        return true;
    }

    // Adds n permits: to the counter while nothing is diverted (lock-free), else to the debt and
    // the oldest waiters. If the counter would pass max_permits, returns false and changes
    // nothing, or with `clamp` adds what fits.
    BOOST_FORCEINLINE bool deposit(std::size_t n, waiter_list& done, bool clamp)
    {
        if (n == 0)
            return true;
        std::size_t s = state_.load(std::memory_order_relaxed);
        while (!(s & divert_flag))
        {
            const std::size_t fit = fitting(s, n, clamp);
            if (fit != n && !clamp)
                return false;
            if (state_.compare_exchange_weak(s, s + (fit << shift), std::memory_order_release,
                                             std::memory_order_relaxed))
                return true;
        }
        return deposit_diverted(n, done, clamp);
    }

    BOOST_NOINLINE bool deposit_diverted(std::size_t n, waiter_list& done, bool clamp)
    {
        std::lock_guard<Mutex> lock(mutex_);
        return deposit_locked(n, done, clamp);
    }

    bool deposit_locked(std::size_t n, waiter_list& done, bool clamp)
    {
        const std::size_t s = state_.load(std::memory_order_relaxed);
        if (!(s & divert_flag))
        {
            // Nothing diverted any more (the queue emptied while we were taking the mutex). The
            // flag only changes under the mutex, which we hold, so deposit stays lock-free.
            return deposit(n, done, clamp);
        }
        // The counter is empty: the surplus after the debt and the waiters is at most n.
        const std::size_t fit = fitting(s, n, clamp);
        if (fit != n && !clamp)
            return false;
        hand_off(fit, done);
        return true;
    }

    // How many of n permits fit into the counter of `state`.
    std::size_t fitting(std::size_t state, std::size_t n, bool clamp) const noexcept
    {
        const std::size_t space = counter_mask_ - permits(state);
        return n <= space ? n : (clamp ? space : 0);
    }

    // Called with the mutex held and divert_flag set: puts n permits in the counter and sets the
    // word's flags to `flags`, keeping the room and the closed flag. Nothing else writes the word
    // while the flag is set (lock-free acquires and releases see it and fail or take the mutex,
    // and so does permit::forget), so a plain store does it in one step.
    void publish(std::size_t s, std::size_t n, std::size_t flags) noexcept
    {
        state_.store((s & (room_mask_ | closed_flag)) | (n << shift) | flags, std::memory_order_release);
    }

    std::size_t pay_debt(std::size_t n) noexcept
    {
        const std::size_t paid = n < debt_ ? n : debt_;
        debt_ -= paid;
        return n - paid;
    }

    // Called with the mutex held and divert_flag set (the queue may have just emptied, the debt
    // just been paid). Pays the debt, then serves the oldest waiters first, stops at one that stays
    // partly served, and once nothing is diverted any more clears the flag and puts the surplus in
    // the counter.
    void hand_off(std::size_t n, waiter_list& done)
    {
        n = pay_debt(n);
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
        if (queue_.empty() && debt_ == 0)
        {
            // Still flagged, so no lock-free path has touched the word: one step clears the flag
            // and publishes the surplus.
            publish(state_.load(std::memory_order_relaxed), n, 0);
        }
    }

    void remove(semaphore_waiter& w, waiter_outcome why, waiter_list& done) noexcept
    {
        queue_.erase(w);
        w.queued.store(false, std::memory_order_relaxed);
        waiting_.store(waiting_.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
        if (w.cancel_ref)
            *w.cancel_ref = nullptr;
        w.outcome = why;
        if (why != waiter_outcome::granted)
            w.collected = 0; // the caller hands them on
        else if (bounded_ && !w.to_permit)
            leave_circulation(w.collected);
        done.push_back(w);
    }

    // Lock-free paths hammer this word; keep it away from the mutex and the list. The bound and
    // the constants next to it are read-mostly.
    alignas(64) Atomic<std::size_t> state_;
    std::atomic<std::size_t> bound_; // written under the mutex
    const bool bounded_;
    const std::size_t counter_mask_; // the counter's bits, after the shift
    const std::size_t room_mask_;    // the room's bits in the word: none in an unbounded core
    alignas(64) Mutex mutex_;
    waiter_list queue_;
    std::size_t debt_ = 0; // guarded by the mutex
    // A statistic for waiting(), written under the mutex; not part of the algorithm, so not a
    // step the test scheduler needs to interleave.
    std::atomic<std::size_t> waiting_{0};
};

} // namespace asio_sync::detail

#endif // ASIO_SYNC_DETAIL_SEMAPHORE_CORE_HPP
