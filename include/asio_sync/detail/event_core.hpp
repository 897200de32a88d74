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

namespace asio_sync::detail {

// The engine (see start_acquire.hpp) of a broadcast wait: waiters queue while the event is clear,
// and setting it grants all of them, oldest first, and lets every later wait through at once until
// it is reset. The atomic and mutex types are parameters so that a test scheduler can run it one
// shared-memory step at a time.
//
// The flag is written under the mutex when it is set, and read under the mutex by enqueue: a wait
// either sees the flag set (and is granted) or is queued before set() drains the queue, so no
// waiter can miss a set. Reading the flag and resetting it need no lock.
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

    bool cancel(semaphore_waiter* const* ref, waiter_outcome why, waiter_list& done)
    {
        std::lock_guard<Mutex> lock(mutex_);
        semaphore_waiter* w = *ref;
        if (!w || !w->queued.load(std::memory_order_relaxed))
            return false;
        remove(*w, why, done);
        return true;
    }

    // Takes every queued waiter out with outcome `why`; the flag is left alone. Returns how many.
    std::size_t abort_all(waiter_outcome why, waiter_list& done)
    {
        std::lock_guard<Mutex> lock(mutex_);
        return remove_all(why, done);
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

    void remove(semaphore_waiter& w, waiter_outcome why, waiter_list& done) noexcept
    {
        queue_.erase(w);
        w.queued.store(false, std::memory_order_relaxed);
        if (w.cancel_ref)
            *w.cancel_ref = nullptr;
        w.outcome = why;
        done.push_back(w);
    }

    Atomic<bool> set_;
    Mutex mutex_;
    waiter_list queue_;
};

// The executor-independent state of an event (also of a latch), registered with its context's
// service from construction to destruction; destroying it aborts the waits still queued.
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
