// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_DETAIL_BARRIER_CORE_HPP
#define ASIO_SYNC_DETAIL_BARRIER_CORE_HPP

#include <asio_sync/detail/acquire_op.hpp>
#include <asio_sync/detail/adaptive_mutex.hpp>
#include <asio_sync/detail/semaphore_service.hpp>
#include <asio_sync/detail/waiter_list.hpp>

#include <boost/asio/execution_context.hpp>

#include <cstddef>
#include <functional>
#include <mutex>
#include <utility>

namespace asio_sync::detail {

// What an arrival did.
enum class arrival
{
    counted,         // the phase still misses other arrivals
    completed_phase, // the last arrival of its phase: the caller runs the completion function
    refused,         // no arrival was expected (every participant dropped): nothing changed
    would_wait,      // try_arrive_last only: the arrival would not be the last; nothing changed
};

// The arrivals of a barrier, under one lock: how many participants each phase expects, how many
// the current phase still misses, and the waiters that arrived in it. The arrival that completes a
// phase takes every waiter out at once, so a waiter is either queued in the current phase or
// decided: a cancellation that finds it queued withdraws its arrival, one that comes later finds
// nothing. The mutex type is a parameter so that a test scheduler can run it one step at a time.
//
// A waiter keeps the phase it arrived in as its count (`missing`), which phase_grant hands to the
// handler.
template <class Mutex = adaptive_mutex>
class barrier_core
{
public:
    explicit barrier_core(std::size_t expected) noexcept : expected_(expected), missing_(expected) {}

    barrier_core(const barrier_core&) = delete;
    barrier_core& operator=(const barrier_core&) = delete;

    // Arrives with `w`, which waits for the phase to complete. If this arrival completes it, `w`
    // is granted without being queued and every queued waiter, oldest first, moves to `released`.
    arrival arrive_and_wait(semaphore_waiter& w, waiter_list& released)
    {
        std::lock_guard<Mutex> lock(mutex_);
        if (missing_ == 0)
            return arrival::refused;
        w.missing = phase_;
        w.collected = 0;
        if (--missing_ == 0)
        {
            w.outcome = waiter_outcome::granted;
            complete_phase(released);
            return arrival::completed_phase;
        }
        queue_.push_back(w);
        w.queued.store(true, std::memory_order_relaxed);
        return arrival::counted;
    }

    // Arrives without a waiter if this arrival completes the phase, whose number goes to `phase`;
    // otherwise changes nothing.
    arrival try_arrive_last(std::size_t& phase, waiter_list& released)
    {
        std::lock_guard<Mutex> lock(mutex_);
        if (missing_ == 0)
            return arrival::refused;
        if (missing_ != 1)
            return arrival::would_wait;
        phase = phase_;
        complete_phase(released);
        return arrival::completed_phase;
    }

    // Arrives without waiting, and lowers the count of every later phase by one.
    arrival arrive_and_drop(waiter_list& released)
    {
        std::lock_guard<Mutex> lock(mutex_);
        if (missing_ == 0)
            return arrival::refused;
        --expected_;
        if (--missing_ != 0)
            return arrival::counted;
        complete_phase(released);
        return arrival::completed_phase;
    }

    // If the waiter that *ref names is still queued, withdraws its arrival and moves it to `done`
    // with outcome `why`.
    bool cancel(semaphore_waiter* const* ref, waiter_outcome why, waiter_list& done)
    {
        std::lock_guard<Mutex> lock(mutex_);
        semaphore_waiter* w = *ref;
        if (!w || !w->queued.load(std::memory_order_relaxed))
            return false;
        withdraw(*w, why, done);
        return true;
    }

    // Withdraws every queued waiter with outcome `why`, oldest first. Returns how many.
    std::size_t abort_all(waiter_outcome why, waiter_list& done)
    {
        std::lock_guard<Mutex> lock(mutex_);
        std::size_t count = 0;
        for (; semaphore_waiter* w = queue_.front(); ++count)
            withdraw(*w, why, done);
        return count;
    }

    // The number of the current phase, counted from 0.
    std::size_t phase() const
    {
        std::lock_guard<Mutex> lock(mutex_);
        return phase_;
    }

    // The arrivals the current phase still misses.
    std::size_t missing() const
    {
        std::lock_guard<Mutex> lock(mutex_);
        return missing_;
    }

    // The arrivals each later phase expects.
    std::size_t expected() const
    {
        std::lock_guard<Mutex> lock(mutex_);
        return expected_;
    }

private:
    void complete_phase(waiter_list& released) noexcept
    {
        while (semaphore_waiter* w = queue_.front())
            take_out(*w, waiter_outcome::granted, released);
        ++phase_;
        missing_ = expected_;
    }

    void withdraw(semaphore_waiter& w, waiter_outcome why, waiter_list& done) noexcept
    {
        take_out(w, why, done);
        ++missing_;
    }

    void take_out(semaphore_waiter& w, waiter_outcome why, waiter_list& done) noexcept
    {
        queue_.erase(w);
        w.queued.store(false, std::memory_order_relaxed);
        if (w.cancel_ref)
            *w.cancel_ref = nullptr;
        w.outcome = why;
        done.push_back(w);
    }

    mutable Mutex mutex_;
    std::size_t expected_;
    std::size_t missing_;
    std::size_t phase_ = 0;
    waiter_list queue_;
};

// The executor-independent state of a barrier, registered with its context's service from
// construction to destruction; destroying it aborts the arrivals still waiting.
struct barrier_impl : service_entry
{
    barrier_impl(boost::asio::execution_context& ctx, std::size_t expected,
                 std::function<void()> on_completion)
        : service_entry(&abort), core(expected), completion_function(std::move(on_completion))
    {
        boost::asio::use_service<semaphore_service>(ctx).add(*this);
    }

    barrier_impl(const barrier_impl&) = delete;
    barrier_impl& operator=(const barrier_impl&) = delete;

    ~barrier_impl()
    {
        waiter_list done;
        core.abort_all(waiter_outcome::aborted, done);
        if (semaphore_service* owner = service.load(std::memory_order_acquire))
            owner->remove(*this);
        complete_all(done);
    }

    // Runs the completion function of the phase that an arrival completed, then completes the
    // waiters it released, oldest first, even if the function throws; the exception then
    // propagates.
    void finish_phase(waiter_list& released)
    {
        struct release_on_exit
        {
            waiter_list& released;
            ~release_on_exit() { complete_all(released); }
        } release{released};
        if (completion_function)
            completion_function();
    }

    std::size_t cancel()
    {
        waiter_list done;
        const std::size_t count = core.abort_all(waiter_outcome::aborted, done);
        complete_all(done);
        return count;
    }

    barrier_core<> core;
    std::function<void()> completion_function;

private:
    static void abort(service_entry& self, waiter_list& doomed)
    {
        static_cast<barrier_impl&>(self).core.abort_all(waiter_outcome::aborted, doomed);
    }
};

} // namespace asio_sync::detail

#endif // ASIO_SYNC_DETAIL_BARRIER_CORE_HPP
