// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_DETAIL_EVENT_CORE_HPP
#define ASIO_SYNC_DETAIL_EVENT_CORE_HPP

#include <asio_sync/detail/acquire_op.hpp>
#include <asio_sync/detail/adaptive_mutex.hpp>
#include <asio_sync/detail/semaphore_service.hpp>
#include <asio_sync/detail/waiter_list.hpp>

#include <boost/asio/execution_context.hpp>
#include <boost/config.hpp>

#include <atomic>
#include <cstddef>
#include <mutex>
#include <utility>

namespace asio_sync::detail {

// The engine (see start_acquire.hpp) of a broadcast wait: waiters queue while the event is clear,
// and setting it grants all of them, oldest first, and lets every later wait through at once until
// it is reset. The atomic and mutex types are parameters so that a test scheduler can run it one
// shared-memory step at a time.
//
// The flag is written under the mutex when it is set, and read under the mutex by enqueue: a wait
// either sees the flag set (and is granted) or is queued before set() drains the queue, so no
// waiter can miss a set. Reading the flag and resetting it need no lock.
//
// A condition variable's predicate wait (`repeats`) is woken in rounds: a notification takes it out
// of the queue, it relocks the caller's mutex and evaluates its predicate, then queues again or
// ends. Between two rounds it is in no queue, yet a cancellation must still end it: the engine
// counts the waits between rounds that nothing has cancelled, and keeps as each one's count
// (`missing`) the number of cancel_all() calls (cancel() and the end of the condition variable)
// made before its notification. A per-operation cancellation marks the wait itself
// (`round_cancel`), which the engine still names through its cancel_ref until it ends; a
// cancel_all() marks every wait between rounds at once, by making their number stale. The wait
// learns it under the mutex, in end_round, before it queues again. A wait that a notify_one woke
// alone and that a per-operation cancellation ends between rounds has not used its notification:
// the cancellation passes it to the oldest queued wait, as it would if it had come before the
// notification.
//
// A timed condition wait's deadline reaches it through expire(): a plain wait still queued leaves
// with timed_out; a predicate wait ends after one more evaluation of its predicate, holding the
// lock. A queued one is taken out for that evaluation as a notify_all would take it (it has no
// notification to pass on); one between rounds, already notified, uses its notification for it.
// Either way its end_round ends it rather than queue it again.
template <template <class> class Atomic = std::atomic, class Mutex = adaptive_mutex>
class event_core
{
public:
    explicit event_core(bool initially_set) noexcept : set_(initially_set) {}

    event_core(const event_core&) = delete;
    event_core& operator=(const event_core&) = delete;

    // Acquire: what the setter did before set() happens-before what a waiter does after.
    bool is_set() const noexcept { return set_.load(std::memory_order_acquire); }

    // Lock-free: a wait on a set event passes, whatever it asks for.
    BOOST_FORCEINLINE bool try_acquire(std::size_t, bool) const noexcept { return is_set(); }

    // One wait asks for one signal.
    static constexpr std::size_t capacity() noexcept { return 1; }

    waiter_outcome enqueue(semaphore_waiter& w, std::size_t)
    {
        std::lock_guard<Mutex> lock(mutex_);
        if (set_.load(std::memory_order_acquire))
            return waiter_outcome::granted;
        queue_.push_back(w);
        w.queued.store(true, std::memory_order_relaxed);
        return waiter_outcome::pending;
    }

    // Sets the flag and grants every queued waiter, oldest first, into `done`. Returns how many.
    std::size_t set(waiter_list& done)
    {
        std::lock_guard<Mutex> lock(mutex_);
        set_.store(true, std::memory_order_release);
        return remove_all(waiter_outcome::granted, done);
    }

    void reset() noexcept { set_.store(false, std::memory_order_relaxed); }

    // Grants the oldest queued waiter, if any, into `done`; the flag is left alone. Returns whether
    // there was one.
    bool grant_first(waiter_list& done)
    {
        std::lock_guard<Mutex> lock(mutex_);
        semaphore_waiter* w = queue_.front();
        if (w)
            remove(*w, waiter_outcome::granted, done, true);
        return w != nullptr;
    }

    // Takes the waiter that *ref names out of the queue with outcome `why`, or marks a predicate
    // wait between rounds cancelled (it ends in end_round), passing on the notification it took
    // alone. Returns false if neither was left to do.
    bool cancel(semaphore_waiter* const* ref, waiter_outcome why, waiter_list& done)
    {
        std::lock_guard<Mutex> lock(mutex_);
        semaphore_waiter* w = *ref;
        if (!w)
            return false;
        if (w->queued.load(std::memory_order_relaxed))
        {
            remove(*w, why, done);
            return true;
        }
        if (!w->repeats || cancelled(*w))
            return false;
        w->round_cancel = why;
        --between_rounds_;
        if (semaphore_waiter* next = w->woken_alone ? queue_.front() : nullptr)
            remove(*next, waiter_outcome::granted, done, true);
        return true;
    }

    // The deadline of a timed wait (see above) has passed. The waiter may have ended: its
    // operation outlives it while a timer can reach it, and nothing reads its mark then.
    void expire(semaphore_waiter& w, waiter_list& done)
    {
        std::lock_guard<Mutex> lock(mutex_);
        const bool queued = w.queued.load(std::memory_order_relaxed);
        if (!w.repeats)
        {
            if (queued)
                remove(w, waiter_outcome::timed_out, done);
            return;
        }
        w.deadline_passed = true;
        if (queued)
            remove(w, waiter_outcome::granted, done);
    }

    // Takes every queued waiter out with outcome `why`; the flag is left alone. Returns how many.
    // Unless it grants them (notify_all), the predicate waits between rounds are cancelled too,
    // and counted.
    std::size_t abort_all(waiter_outcome why, waiter_list& done)
    {
        std::lock_guard<Mutex> lock(mutex_);
        std::size_t count = remove_all(why, done);
        if (why != waiter_outcome::granted)
        {
            count += std::exchange(between_rounds_, 0);
            ++cancel_alls_;
        }
        return count;
    }

    // Whether a predicate wait between rounds has been cancelled since its notification.
    bool round_cancelled(const semaphore_waiter& w)
    {
        std::lock_guard<Mutex> lock(mutex_);
        return cancelled(w);
    }

    // Ends a predicate wait's time between rounds: it queues again if `again` (returns pending),
    // unless it was cancelled meanwhile (returns the outcome of the cancellation, and it ends) or
    // its deadline has passed (returns timed_out, and it ends); otherwise it ends (returns
    // granted). A wait that ends is no longer named by its cancel_ref.
    waiter_outcome end_round(semaphore_waiter& w, bool again)
    {
        std::lock_guard<Mutex> lock(mutex_);
        if (cancelled(w))
        {
            forget(w);
            return w.round_cancel == waiter_outcome::pending ? waiter_outcome::aborted : w.round_cancel;
        }
        --between_rounds_;
        if (!again || w.deadline_passed)
        {
            forget(w);
            return again ? waiter_outcome::timed_out : waiter_outcome::granted;
        }
        w.outcome = waiter_outcome::pending;
        queue_.push_back(w);
        w.queued.store(true, std::memory_order_relaxed);
        return waiter_outcome::pending;
    }

private:
    std::size_t remove_all(waiter_outcome why, waiter_list& done) noexcept
    {
        std::size_t count = 0;
        while (semaphore_waiter* w = queue_.front())
        {
            remove(*w, why, done);
            ++count;
        }
        return count;
    }

    // A predicate wait that a notification takes out stays named, between rounds; `alone` says
    // that the notification was a notify_one's.
    void remove(semaphore_waiter& w, waiter_outcome why, waiter_list& done, bool alone = false) noexcept
    {
        queue_.erase(w);
        w.queued.store(false, std::memory_order_relaxed);
        if (w.repeats && why == waiter_outcome::granted)
        {
            w.missing = cancel_alls_;
            w.woken_alone = alone;
            ++between_rounds_;
        }
        else
            forget(w);
        w.outcome = why;
        done.push_back(w);
    }

    static void forget(semaphore_waiter& w) noexcept
    {
        if (w.cancel_ref)
            *w.cancel_ref = nullptr;
    }

    // For a predicate wait out of the queue, under the mutex: whether it is not between rounds
    // (still starting: its outcome is not a notification's), or was cancelled since its
    // notification.
    bool cancelled(const semaphore_waiter& w) const noexcept
    {
        return w.outcome != waiter_outcome::granted || w.round_cancel != waiter_outcome::pending ||
               w.missing != cancel_alls_;
    }

    Atomic<bool> set_;
    Mutex mutex_;
    waiter_list queue_;
    std::size_t between_rounds_ = 0; // predicate waits between rounds, not cancelled
    std::size_t cancel_alls_ = 0;    // abort_all calls that cancelled
};

// The executor-independent state of an event (also of a latch and a condition variable),
// registered with its context's service from construction to destruction; destroying it aborts the
// waits still queued.
struct event_impl : service_entry
{
    event_impl(boost::asio::execution_context& ctx, bool initially_set)
        : service_entry(&abort), core(initially_set)
    {
        boost::asio::use_service<semaphore_service>(ctx).add(*this);
    }

    event_impl(const event_impl&) = delete;
    event_impl& operator=(const event_impl&) = delete;

    ~event_impl()
    {
        waiter_list done;
        core.abort_all(waiter_outcome::aborted, done);
        if (semaphore_service* owner = service.load(std::memory_order_acquire))
            owner->remove(*this);
        complete_all(done);
    }

    // Sets the event and completes the waits it lets through, the first as the caller's
    // continuation.
    void set()
    {
        waiter_list done;
        core.set(done);
        complete_all(done, relation::continuation);
    }

    // Grants the oldest queued wait, or every one, leaving the flag alone: a condition variable's
    // notify_one and notify_all, which never set the event.
    void notify_one()
    {
        waiter_list done;
        core.grant_first(done);
        complete_all(done, relation::continuation);
    }

    void notify_all()
    {
        waiter_list done;
        core.abort_all(waiter_outcome::granted, done);
        complete_all(done, relation::continuation);
    }

    std::size_t cancel()
    {
        waiter_list done;
        const std::size_t count = core.abort_all(waiter_outcome::aborted, done);
        complete_all(done);
        return count;
    }

    event_core<> core;

private:
    static void abort(service_entry& self, waiter_list& doomed)
    {
        static_cast<event_impl&>(self).core.abort_all(waiter_outcome::aborted, doomed);
    }
};

} // namespace asio_sync::detail

#endif // ASIO_SYNC_DETAIL_EVENT_CORE_HPP
