// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_DETAIL_GATE_STOP_HPP
#define ASIO_SYNC_DETAIL_GATE_STOP_HPP

#include <asio_sync/detail/adaptive_mutex.hpp>
#include <asio_sync/detail/gate_count.hpp>

#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/cancellation_type.hpp>

#include <atomic>
#include <memory>
#include <mutex>
#include <utility>

namespace asio_sync::detail {

// The cancellation signal of a stoppable guard, on its own in the heap: the slot a task binds
// refers to the signal by address, so it stays put while the guard moves, and it outlives the guard
// while a stop request emits on it. The atomic type is a parameter so that a test scheduler can
// run it one shared-memory step at a time.
template <template <class> class Atomic = std::atomic>
struct basic_gate_stop_entry
{
    boost::asio::cancellation_signal signal;
    // The gate's list of live stoppable guards, under the list's lock.
    basic_gate_stop_entry* prev = nullptr;
    basic_gate_stop_entry* next = nullptr;
    // The stop request's own chain of the entries it emits on, written under the lock and read
    // by the request alone.
    basic_gate_stop_entry* next_to_stop = nullptr;
    // The guard, and the stop request from its snapshot until it has emitted on this entry: the
    // last one to let go deletes the entry.
    Atomic<int> owners{1};
};

using gate_stop_entry = basic_gate_stop_entry<>;

// Drops one owner of `entry`, deleting it if that was the last one.
template <template <class> class Atomic>
void let_go(basic_gate_stop_entry<Atomic>* entry) noexcept
{
    if (entry->owners.fetch_sub(1, std::memory_order_acq_rel) == 1)
        delete entry;
}

// The stoppable guards of a gate and its one stop request. Entering, leaving and the snapshot of a
// stop request are short sections under a lock; the emission runs after it, on the requesting
// thread, so that no cancellation handler runs under the lock.
//
// A stoppable entry counts itself in the gate under the lock, so an entry and a stop request
// cannot miss each other: the request closes the count before it locks, hence an entry that locks
// after the request's snapshot finds the count closed and fails, and one that locked before is in
// the snapshot. A guard released while the request emits unlinks its entry and lets go of it; the
// request still holds it, emits on it and deletes it after: the signal is never touched once
// deleted, and the guard either left before the snapshot or is signalled, not both. The atomic
// and mutex types are parameters so that a test scheduler can run it one step at a time.
template <template <class> class Atomic = std::atomic, class Mutex = adaptive_mutex>
class gate_stop_list
{
public:
    using entry_type = basic_gate_stop_entry<Atomic>;

    gate_stop_list() noexcept = default;

    gate_stop_list(const gate_stop_list&) = delete;
    gate_stop_list& operator=(const gate_stop_list&) = delete;

    // Counts one more guard in `count`, with a new entry, unless the gate is closed: then returns
    // null. Throws std::bad_alloc, counting nothing, if the entry cannot be allocated.
    entry_type* enter(gate_count<Atomic>& count)
    {
        if (count.is_closed())
            return nullptr;
        auto entry = std::make_unique<entry_type>();
        std::lock_guard<Mutex> lock(mutex_);
        if (!count.try_enter())
            return nullptr;
        entry->next = head_;
        if (head_)
            head_->prev = entry.get();
        head_ = entry.get();
        return entry.release();
    }

    // Unlinks the entry of a guard being released and lets go of it. The caller then leaves the
    // count, after which the gate may be gone.
    void leave(entry_type* entry) noexcept
    {
        {
            std::lock_guard<Mutex> lock(mutex_);
            (entry->prev ? entry->prev->next : head_) = entry->next;
            if (entry->next)
                entry->next->prev = entry->prev;
        }
        let_go(entry);
    }

    // The first call emits `type` on the signal of every stoppable guard alive, after the lock;
    // later calls do nothing. The caller has closed the count before: no entry joins afterwards.
    // Touches nothing of the gate once the snapshot is taken.
    void request_stop(boost::asio::cancellation_type type) noexcept
    {
        entry_type* to_stop = nullptr;
        {
            std::lock_guard<Mutex> lock(mutex_);
            if (stop_requested_.load(std::memory_order_relaxed))
                return;
            stop_requested_.store(true, std::memory_order_relaxed);
            for (entry_type* e = head_; e; e = e->next)
            {
                e->owners.fetch_add(1, std::memory_order_relaxed);
                e->next_to_stop = to_stop;
                to_stop = e;
            }
        }
        while (to_stop)
        {
            entry_type* e = std::exchange(to_stop, to_stop->next_to_stop);
            e->signal.emit(type);
            let_go(e);
        }
    }

    bool stop_requested() const noexcept { return stop_requested_.load(std::memory_order_relaxed); }

private:
    Mutex mutex_;
    entry_type* head_ = nullptr;         // the live stoppable guards, newest first
    Atomic<bool> stop_requested_{false}; // written under the lock, read anywhere
};

// What basic_gate::request_stop does, in one function that the gate and its interleaving checker
// (test/gate_count.cpp) both call: closes `count`, calling `drained()` if no guard was in (the
// caller completes the closes), then emits `type` on the stoppable guards. Closing first is what
// refuses an entry from inside the emission, such as a cancellation handler's `try_enter`.
template <template <class> class Atomic, class Mutex, class Drained>
void request_gate_stop(gate_count<Atomic>& count, gate_stop_list<Atomic, Mutex>& stops,
                       boost::asio::cancellation_type type, Drained drained) noexcept
{
    if (count.close())
        drained();
    stops.request_stop(type);
}

} // namespace asio_sync::detail

#endif // ASIO_SYNC_DETAIL_GATE_STOP_HPP
