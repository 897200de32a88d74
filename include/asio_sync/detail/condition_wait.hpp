// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_DETAIL_CONDITION_WAIT_HPP
#define ASIO_SYNC_DETAIL_CONDITION_WAIT_HPP

#include <asio_sync/detail/acquire_op.hpp>
#include <asio_sync/detail/completion.hpp>
#include <asio_sync/detail/event_core.hpp>
#include <asio_sync/detail/grant.hpp>
#include <asio_sync/detail/handler_work.hpp>
#include <asio_sync/detail/start_acquire.hpp>
#include <asio_sync/detail/submit.hpp>

#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/assert.hpp>
#include <boost/core/no_exceptions_support.hpp>
#include <boost/system/error_code.hpp>

#include <mutex>
#include <shared_mutex>
#include <type_traits>
#include <utility>

namespace asio_sync::detail {

// How a condition variable gives back and takes back the lock a waiter holds, with the mutex's own
// scoped acquire: a std::unique_lock in exclusive mode, a std::shared_lock in shared mode.
template <class Lock>
struct relock_traits;

template <class Mutex>
struct relock_traits<std::unique_lock<Mutex>>
{
    static void unlock(Mutex& mutex) { mutex.unlock(); }

    template <class Handler>
    static void relock(Mutex& mutex, Handler&& handler)
    {
        mutex.async_scoped_lock(std::forward<Handler>(handler));
    }
};

template <class Mutex>
struct relock_traits<std::shared_lock<Mutex>>
{
    static void unlock(Mutex& mutex) { mutex.unlock_shared(); }

    template <class Handler>
    static void relock(Mutex& mutex, Handler&& handler)
    {
        mutex.async_scoped_lock_shared(std::forward<Handler>(handler));
    }
};

// The handler of a waiter's relock. It receives the lock as a Lock that owns it, so a relock
// destroyed without running (context shutdown, a fault) unlocks; when it runs, it moves that lock
// into the caller's Lock object and only then invokes the caller's handler with the wait's outcome.
// It has the caller's executor and allocator but no cancellation slot: once notified or cancelled,
// a wait always relocks.
template <class Handler, class IoExecutor, class Lock>
class relock_handler
{
public:
    using executor_type = boost::asio::associated_executor_t<Handler, IoExecutor>;
    using allocator_type = handler_allocator_t<Handler>;
    using slot_type = boost::asio::associated_cancellation_slot_t<Handler>;

    relock_handler(Handler&& handler, const IoExecutor& io_ex, Lock* lock, boost::system::error_code outcome,
                   slot_type&& slot)
        : handler_(std::move(handler)), executor_(boost::asio::get_associated_executor(handler_, io_ex)),
          lock_(lock), outcome_(outcome), slot_(std::move(slot))
    {
    }

    executor_type get_executor() const noexcept { return executor_; }
    allocator_type get_allocator() const noexcept { return get_handler_allocator(handler_); }

    // A relock aborted by the mutex (its cancel() or destruction) leaves the caller without the
    // lock, and reports why unless the wait itself failed.
    void operator()(boost::system::error_code relock_error, Lock relocked)
    {
        if (slot_.is_connected())
            slot_.clear();
        if (relocked.owns_lock())
            *lock_ = std::move(relocked);
        std::move(handler_)(outcome_ ? outcome_ : relock_error);
    }

private:
    Handler handler_;
    executor_type executor_;
    Lock* lock_;
    boost::system::error_code outcome_;
    slot_type slot_;
};

// A queued wait on a condition variable. Its completion does not post the caller's handler: it
// starts the relock, whose completion does, so a woken waiter holds the lock when its handler runs.
template <class Handler, class IoExecutor, class Lock>
class condition_wait_op final : public acquire_op_base
{
public:
    using slot_type = boost::asio::associated_cancellation_slot_t<Handler>;
    using mutex_type = typename Lock::mutex_type;

    condition_wait_op(Handler&& handler, const IoExecutor& io_ex, Lock& lock, event_impl& impl)
        : acquire_op_base(&do_func), handler_(std::move(handler)), work_(handler_, io_ex), io_ex_(io_ex),
          slot_(boost::asio::get_associated_cancellation_slot(handler_)), lock_(&lock), mutex_(lock.mutex()),
          impl_(&impl)
    {
    }

    static condition_wait_op* create(Handler&& handler, const IoExecutor& io_ex, Lock& lock, event_impl& impl)
    {
        return allocate_op<condition_wait_op>(get_handler_allocator(handler), std::move(handler), io_ex, lock,
                                              impl);
    }

    slot_type& slot() noexcept { return slot_; }

    // The queue side owns the operation alone: the initiator has nothing to let go of.
    void initiated(bool) noexcept {}

private:
    static void do_func(acquire_op_base* base, action what, const boost::system::error_code& ec, relation)
    {
        auto* op = static_cast<condition_wait_op*>(base);
        relock_handler<Handler, IoExecutor, Lock> relock(std::move(op->handler_), op->io_ex_, op->lock_, ec,
                                                         std::move(op->slot_));
        // The work stays tracked until the relock tracks its own.
        const handler_work<Handler, IoExecutor> work(std::move(op->work_));
        mutex_type& mutex = *op->mutex_;
        event_impl& impl = *op->impl_;
        deallocate_op(op, relock.get_allocator());
        if (what == action::destroy)
            return;
        BOOST_TRY
        {
            relock_traits<Lock>::relock(mutex, std::move(relock));
        }
        BOOST_CATCH(...)
        {
            // The handler is lost; the notification it received goes to the next waiter.
            if (!ec)
                impl.notify_one();
            BOOST_RETHROW
        }
        BOOST_CATCH_END
    }

    Handler handler_;
    handler_work<Handler, IoExecutor> work_;
    IoExecutor io_ex_;
    slot_type slot_;
    Lock* lock_;
    mutex_type* mutex_;
    event_impl* impl_;
};

template <class Executor>
class initiate_condition_wait;

// The handler of one round of a wait with a predicate: it ends the wait once the predicate holds
// (evaluated holding the lock) or the round failed, and otherwise waits again. It has the caller's
// executor, allocator and cancellation slot, so every round is the caller's own operation.
template <class Handler, class IoExecutor, class Lock, class Predicate>
class predicate_wait_handler
{
public:
    using executor_type = boost::asio::associated_executor_t<Handler, IoExecutor>;
    using allocator_type = handler_allocator_t<Handler>;
    using cancellation_slot_type = boost::asio::associated_cancellation_slot_t<Handler>;

    predicate_wait_handler(Handler&& handler, const IoExecutor& io_ex, event_impl& impl, Lock* lock,
                           Predicate&& pred)
        : handler_(std::move(handler)), io_ex_(io_ex), impl_(&impl), lock_(lock), pred_(std::move(pred))
    {
    }

    executor_type get_executor() const noexcept
    {
        return boost::asio::get_associated_executor(handler_, io_ex_);
    }
    allocator_type get_allocator() const noexcept { return get_handler_allocator(handler_); }
    cancellation_slot_type get_cancellation_slot() const noexcept
    {
        return boost::asio::get_associated_cancellation_slot(handler_);
    }

    void operator()(boost::system::error_code ec)
    {
        if (ec || pred_())
            return std::move(handler_)(ec);
        const IoExecutor io_ex = io_ex_;
        initiate_condition_wait<IoExecutor>(io_ex, *impl_)(std::move(*this), lock_);
    }

private:
    Handler handler_;
    IoExecutor io_ex_;
    event_impl* impl_;
    Lock* lock_;
    Predicate pred_;
};

// The initiation of a condition variable's wait: the waiter is queued before the mutex is
// unlocked, so a notify by whoever takes the lock next finds it.
template <class Executor>
class initiate_condition_wait
{
public:
    using executor_type = Executor;

    initiate_condition_wait(const Executor& ex, event_impl& impl) noexcept : executor_(&ex), impl_(&impl) {}

    const executor_type& get_executor() const noexcept { return *executor_; }

    template <class Handler, class Lock>
    void operator()(Handler&& handler, Lock* lock) const
    {
        BOOST_ASSERT_MSG(lock->owns_lock(),
                         "asio_sync::basic_condition_variable::async_wait without the lock");
        using op_type = condition_wait_op<std::decay_t<Handler>, Executor, Lock>;
        queue_op(
            impl_->core,
            op_type::create(std::decay_t<Handler>(std::forward<Handler>(handler)), *executor_, *lock, *impl_),
            1);
        relock_traits<Lock>::unlock(*lock->release());
    }

    template <class Handler, class Lock, class Predicate>
    void operator()(Handler&& handler, Lock* lock, Predicate&& pred) const
    {
        BOOST_ASSERT_MSG(lock->owns_lock(),
                         "asio_sync::basic_condition_variable::async_wait without the lock");
        using handler_type = std::decay_t<Handler>;
        using pred_type = std::decay_t<Predicate>;
        if (pred())
            return post_completion(handler_type(std::forward<Handler>(handler)), *executor_, signal_grant(),
                                   {}, 0);
        (*this)(predicate_wait_handler<handler_type, Executor, Lock, pred_type>(
                    handler_type(std::forward<Handler>(handler)), *executor_, *impl_, lock,
                    pred_type(std::forward<Predicate>(pred))),
                lock);
    }

private:
    const Executor* executor_;
    event_impl* impl_;
};

} // namespace asio_sync::detail

#endif // ASIO_SYNC_DETAIL_CONDITION_WAIT_HPP
