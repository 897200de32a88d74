// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_DETAIL_SEMAPHORE_SERVICE_HPP
#define ASIO_SYNC_DETAIL_SEMAPHORE_SERVICE_HPP

#include <asio_sync/detail/acquire_op.hpp>
#include <asio_sync/detail/handler_tracking.hpp>
#include <asio_sync/detail/semaphore_core.hpp>
#include <asio_sync/detail/waiter_list.hpp>
#include <asio_sync/wait_observer.hpp>

#include <boost/asio/execution_context.hpp>

#include <atomic>
#include <cstddef>
#include <mutex>

namespace asio_sync::detail {

class semaphore_service;

// What the service knows of a primitive that queues waiters: how to abort them at shutdown.
struct service_entry
{
    using abort_func = void (*)(service_entry&, waiter_list&);

    explicit service_entry(abort_func abort) noexcept : abort_waiters(abort) {}

    abort_func abort_waiters; // moves every queued waiter, aborted, to the list
    tracking_names names;     // what Asio's handler tracking calls the primitive and its wait
    std::atomic<wait_observer*> observer{nullptr}; // who is told of its waits (set_observer)
    // For a lock whose coroutine holders the holder registry records: the permits its holders
    // share (1 for a mutex); 0 for the other primitives.
    std::size_t lock_permits = 0;
    service_entry* prev = nullptr; // service list, guarded by the service's mutex
    service_entry* next = nullptr;
    // Null once the context has shut down, so a primitive may outlive its context.
    std::atomic<semaphore_service*> service{nullptr};
};

// The executor-independent state of a semaphore, registered with its context's service.
struct semaphore_impl : service_entry
{
    explicit semaphore_impl(std::size_t initial_permits) : service_entry(&abort), core(initial_permits) {}
    semaphore_impl(std::size_t initial_permits, std::size_t bound)
        : service_entry(&abort), core(initial_permits, bound)
    {
    }

    semaphore_core<> core;

private:
    static void abort(service_entry& self, waiter_list& doomed)
    {
        static_cast<semaphore_impl&>(self).core.abort_all(waiter_outcome::aborted, false, doomed);
    }
};

// Context shutdown destroys every queued wait (of semaphores, events and latches) without invoking
// its handler, as Asio does with its own pending operations.
class semaphore_service final : public boost::asio::execution_context::service
{
public:
    using key_type = semaphore_service;
    static inline boost::asio::execution_context::id id;

    explicit semaphore_service(boost::asio::execution_context& ctx) : service(ctx) {}

    void add(service_entry& impl)
    {
        std::lock_guard<std::mutex> lock(mutex_);
        impl.prev = nullptr;
        impl.next = first_;
        if (first_)
            first_->prev = &impl;
        first_ = &impl;
        impl.service.store(this, std::memory_order_release);
    }

    void remove(service_entry& impl)
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (impl.service.load(std::memory_order_relaxed) != this)
            return;
        (impl.prev ? impl.prev->next : first_) = impl.next;
        if (impl.next)
            impl.next->prev = impl.prev;
        impl.service.store(nullptr, std::memory_order_relaxed);
    }

    // Runs f() under the service's lock. A semaphore unregisters under the same lock, after it has
    // finished every waiter it aborted, so while f runs the semaphore of a waiter that is not
    // finished yet still exists: what a timer expiring at any moment needs.
    template <class Function>
    void locked(Function&& f)
    {
        std::lock_guard<std::mutex> lock(mutex_);
        f();
    }

private:
    void shutdown() override
    {
        waiter_list doomed;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            for (service_entry* impl = first_; impl; impl = impl->next)
            {
                impl->abort_waiters(*impl, doomed);
                impl->service.store(nullptr, std::memory_order_release);
            }
            first_ = nullptr;
        }
        // A handler's destructor may release a permit or destroy a semaphore: no lock is held here.
        destroy_all(doomed);
    }

    std::mutex mutex_;
    service_entry* first_ = nullptr;
};

} // namespace asio_sync::detail

#endif // ASIO_SYNC_DETAIL_SEMAPHORE_SERVICE_HPP
