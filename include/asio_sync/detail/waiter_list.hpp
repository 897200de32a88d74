// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_DETAIL_WAITER_LIST_HPP
#define ASIO_SYNC_DETAIL_WAITER_LIST_HPP

#include <atomic>
#include <chrono>
#include <cstddef>

namespace asio_sync {
class wait_observer;
} // namespace asio_sync

namespace asio_sync::detail {

// How an acquire ended: set when its waiter leaves the queue, and returned by the core's enqueue
// for an acquire decided without queueing.
enum class waiter_outcome : unsigned char
{
    pending, // not decided yet: queued
    granted,
    aborted,
    closed,
    timed_out,
    too_many,        // asks for more than a bounded semaphore's capacity, lowered while it waited
    no_memory,       // a timed acquire could not start its timer
    no_upgrade_lock, // an upgrade without the upgrade lock (upgrade_core)
};

// A queued acquire. It is a base of the operation object that holds the completion handler, so
// queueing allocates nothing beyond that object.
struct semaphore_waiter
{
    semaphore_waiter* prev = nullptr;
    semaphore_waiter* next = nullptr;
    std::size_t missing = 0;   // permits still to collect
    std::size_t collected = 0; // permits collected while queued (only the head collects)
    // Where a per-operation cancellation handler keeps its pointer to this waiter; nulled under
    // the semaphore's mutex when the waiter leaves the queue, so a late cancellation finds nothing.
    semaphore_waiter** cancel_ref = nullptr;
    waiter_outcome outcome = waiter_outcome::pending; // set when the waiter leaves the queue
    // Written under the semaphore's mutex. Atomic so that a timer may look at it under another
    // lock (see timed_acquire_op).
    std::atomic<bool> queued{false};
    // The permits go to a permit object, which will return them: on a bounded semaphore they stay
    // in circulation. A plain acquire takes its permits out of circulation.
    bool to_permit = false;
    // A condition variable's predicate wait: a notification takes it out of the queue, but it may
    // queue again, and until it ends its engine still names it to a cancellation (see event_core).
    bool repeats = false;
    // A predicate wait between rounds: whether a notify_one woke it alone (its notification then
    // passes on if it is cancelled before it ends), and how a per-operation cancellation ended it
    // (pending: none did). Kept apart from `outcome`, which the notifier reads after the unlock.
    bool woken_alone = false;
    waiter_outcome round_cancel = waiter_outcome::pending;
    // A timed predicate wait whose deadline has passed: it ends after its next evaluation.
    bool deadline_passed = false;
    // Who reports the wait, and since when it waits (see wait_observer); null unless observed.
    wait_observer* observer = nullptr;
    std::chrono::steady_clock::time_point queued_at{};

    // What a granted waiter receives: the permits it asked for.
    std::size_t granted() const noexcept { return missing + collected; }
};

// Intrusive doubly-linked FIFO of waiters: O(1) push, pop and erase, no allocation.
class waiter_list
{
public:
    waiter_list() = default;
    waiter_list(const waiter_list&) = delete;
    waiter_list& operator=(const waiter_list&) = delete;

    bool empty() const noexcept { return head_ == nullptr; }
    semaphore_waiter* front() const noexcept { return head_; }

    void push_back(semaphore_waiter& w) noexcept
    {
        w.next = nullptr;
        w.prev = tail_;
        if (tail_)
            tail_->next = &w;
        else
            head_ = &w;
        tail_ = &w;
    }

    void erase(semaphore_waiter& w) noexcept
    {
        (w.prev ? w.prev->next : head_) = w.next;
        (w.next ? w.next->prev : tail_) = w.prev;
        w.prev = w.next = nullptr;
    }

    // Moves every waiter of `other` to the back of this list.
    void splice_back(waiter_list& other) noexcept
    {
        if (!other.head_)
            return;
        other.head_->prev = tail_;
        (tail_ ? tail_->next : head_) = other.head_;
        tail_ = other.tail_;
        other.head_ = other.tail_ = nullptr;
    }

    semaphore_waiter* pop_front() noexcept
    {
        semaphore_waiter* w = head_;
        if (w)
            erase(*w);
        return w;
    }

private:
    semaphore_waiter* head_ = nullptr;
    semaphore_waiter* tail_ = nullptr;
};

} // namespace asio_sync::detail

#endif // ASIO_SYNC_DETAIL_WAITER_LIST_HPP
