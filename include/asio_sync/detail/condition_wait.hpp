// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_DETAIL_CONDITION_WAIT_HPP
#define ASIO_SYNC_DETAIL_CONDITION_WAIT_HPP

#include <asio_sync/detail/acquire_awaitable.hpp>
#include <asio_sync/detail/acquire_op.hpp>
#include <asio_sync/detail/completion.hpp>
#include <asio_sync/detail/deadline.hpp>
#include <asio_sync/detail/event_core.hpp>
#include <asio_sync/detail/grant.hpp>
#include <asio_sync/detail/handler_work.hpp>
#include <asio_sync/detail/start_acquire.hpp>
#include <asio_sync/detail/submit.hpp>
#include <asio_sync/detail/timed_acquire_op.hpp>

#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/basic_waitable_timer.hpp>
#include <boost/asio/wait_traits.hpp>
#include <boost/assert.hpp>
#include <boost/core/no_exceptions_support.hpp>
#include <boost/system/error_code.hpp>

#include <atomic>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <type_traits>
#include <utility>

namespace asio_sync::detail {

// Whether async_wait(lock, f) takes f for a predicate: callable with no arguments, returning
// something convertible to bool, and not callable with an error code, as a completion handler is.
// A variadic lambda is both; it is a handler.
template <class T>
inline constexpr bool is_wait_predicate_v =
    std::is_invocable_r_v<bool, std::decay_t<T>&> &&
    !std::is_invocable_v<std::decay_t<T>&, const boost::system::error_code&>;

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

// The timer of a timed condition wait, in its operation Op, with what the expiry needs once the
// wait may have ended: the handler's allocator, and the condition variable's state, which may
// outlive the condition variable. The operation has up to three owners: its queue side (until the
// wait ends), its initiator (until it has started the timer) and the timer's wait handler; the
// memory goes with the last. As in timed_acquire_op, the initiator and the queue side agree through
// a timer_stage on which of them cancels the timer. The expiry reaches the wait under the engine's
// lock (event_core::expire), in any phase: queued, between rounds, or already ended, when it does
// nothing that anyone reads.
template <class Op, class IoExecutor, class Allocator>
class condition_timer
{
public:
    using allocator_type = Allocator;

    template <class Deadline>
    condition_timer(Op* op, const IoExecutor& io_ex, const Allocator& alloc,
                    const std::shared_ptr<event_impl>& impl, Deadline expiry)
        : op_(op), alloc_(alloc), timer_(io_ex), impl_(impl), deadline_(deadline_of(expiry))
    {
    }

    condition_timer(const condition_timer&) = delete;
    condition_timer& operator=(const condition_timer&) = delete;

    // The initiator's last step: starts the timer if the wait was queued, then lets go.
    void initiated(bool was_queued)
    {
        if (was_queued)
            start();
        release();
    }

    // The queue side's last step, once the wait has ended: stops the timer, then lets go (the
    // memory goes with the last owner, with the allocator kept here).
    void ended(Op*, const Allocator&) noexcept
    {
        if (stage_.finish())
            timer_.cancel();
        release();
    }

private:
    friend class timer_expiry<condition_timer>;

    void start()
    {
        BOOST_TRY
        {
            timer_.expires_at(deadline_);
            timer_.async_wait(timer_expiry<condition_timer>(this));
        }
        BOOST_CATCH(...)
        {
            // Without a timer there is no time limit: the wait leaves the queue (unless it was
            // notified meanwhile), relocks and reports it.
            waiter_list done;
            semaphore_waiter* self = op_;
            impl_->core.cancel(&self, waiter_outcome::no_memory, done);
            complete_all(done);
        }
        BOOST_CATCH_END
        if (stage_.started())
            timer_.cancel();
    }

    void expire()
    {
        waiter_list done;
        impl_->core.expire(*op_, done);
        complete_all(done);
    }

    void release() noexcept
    {
        if (owners_.fetch_sub(1, std::memory_order_acq_rel) == 1)
            deallocate_op(op_, alloc_);
    }

    using timer_type =
        boost::asio::basic_waitable_timer<deadline_clock, boost::asio::wait_traits<deadline_clock>,
                                          IoExecutor>;

    Op* op_;
    allocator_type alloc_;
    timer_type timer_;
    std::shared_ptr<event_impl> impl_;
    deadline_type deadline_;
    std::atomic<unsigned char> owners_{2}; // the queue side and the initiator
    timer_stage stage_;
};

// What a wait without a time limit keeps instead of a condition_timer: nothing. Its operation is
// owned by its queue side alone, which frees it when the wait ends.
struct untimed
{
    template <class... Args>
    explicit untimed(Args&&...) noexcept
    {
    }

    void initiated(bool) noexcept {}

    template <class Op, class Allocator>
    static void ended(Op* op, const Allocator& alloc) noexcept
    {
        deallocate_op(op, alloc);
    }
};

// The timer part of a condition wait's operation Op, whose deadline is a deadline_type or
// no_deadline.
template <class Op, class IoExecutor, class Allocator, class Deadline>
using condition_timer_t = std::conditional_t<std::is_same_v<Deadline, no_deadline>, untimed,
                                             condition_timer<Op, IoExecutor, Allocator>>;

// A queued wait on a condition variable. Its completion does not post the caller's handler: it
// starts the relock, whose completion does, so a woken waiter holds the lock when its handler runs.
//
// With a deadline (Deadline is not no_deadline), it holds a condition_timer: a wait still queued
// when it expires leaves the queue with timed_out and relocks as a cancelled one does.
template <class Handler, class IoExecutor, class Lock, class Deadline = no_deadline>
class condition_wait_op final : public acquire_op_base
{
public:
    using slot_type = boost::asio::associated_cancellation_slot_t<Handler>;
    using mutex_type = typename Lock::mutex_type;
    using allocator_type = handler_allocator_t<Handler>;

    condition_wait_op(Handler&& handler, const IoExecutor& io_ex, Lock& lock,
                      const std::shared_ptr<event_impl>& impl, Deadline expiry)
        : acquire_op_base(&do_func), handler_(std::move(handler)), work_(handler_, io_ex), io_ex_(io_ex),
          slot_(boost::asio::get_associated_cancellation_slot(handler_)), lock_(&lock), mutex_(lock.mutex()),
          impl_(impl.get()), timer_(this, io_ex, get_handler_allocator(handler_), impl, expiry)
    {
    }

    static condition_wait_op* create(Handler&& handler, const IoExecutor& io_ex, Lock& lock,
                                     const std::shared_ptr<event_impl>& impl, Deadline expiry)
    {
        return allocate_op<condition_wait_op>(get_handler_allocator(handler), std::move(handler), io_ex, lock,
                                              impl, expiry);
    }

    slot_type& slot() noexcept { return slot_; }

    // Without a timer, the queue side owns the operation alone: the initiator has nothing to let
    // go of.
    void initiated(bool was_queued) { timer_.initiated(was_queued); }

private:
    using timer_part = condition_timer_t<condition_wait_op, IoExecutor, allocator_type, Deadline>;

    static void do_func(acquire_op_base* base, action what, const boost::system::error_code& ec, relation)
    {
        auto* op = static_cast<condition_wait_op*>(base);
        relock_handler<Handler, IoExecutor, Lock> relock(std::move(op->handler_), op->io_ex_, op->lock_, ec,
                                                         std::move(op->slot_));
        // The work stays tracked until the relock tracks its own.
        [[maybe_unused]] const handler_work<Handler, IoExecutor> work(std::move(op->work_));
        mutex_type& mutex = *op->mutex_;
        event_impl& impl = *op->impl_; // only used after a notification: the condition variable lives
        op->timer_.ended(op, relock.get_allocator());
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
    timer_part timer_;
};

// The handler of a predicate wait's relock: it carries the operation, which goes on when the
// relock completes. It has the operation's executor and allocator but no cancellation slot: the
// operation's own stays installed. A relock destroyed without running (context shutdown, a fault)
// destroys the operation without invoking its handler.
template <class Op>
class round_relock
{
public:
    using executor_type = typename Op::executor_type;
    using allocator_type = typename Op::allocator_type;

    explicit round_relock(Op* op) noexcept : op_(op) {}
    round_relock(round_relock&& other) noexcept : op_(std::exchange(other.op_, nullptr)) {}
    round_relock& operator=(round_relock&&) = delete;

    ~round_relock()
    {
        if (op_)
            op_->abandon();
    }

    executor_type get_executor() const noexcept { return op_->get_executor(); }
    allocator_type get_allocator() const noexcept { return op_->get_allocator(); }

    void operator()(boost::system::error_code ec, typename Op::lock_type relocked)
    {
        std::exchange(op_, nullptr)->resume(ec, std::move(relocked));
    }

private:
    Op* op_;
};

// A wait with a predicate: the loop `while (!pred()) wait(lock)` as one operation, allocated once
// and queued again after each round whose predicate is false. Each round ends with a relock, whose
// completion evaluates the predicate holding the lock. Between rounds the engine still names the
// operation to its cancellation handler and counts it for cancel() (see event_core), so a
// cancellation in any phase ends the wait. The operation shares the condition variable's state,
// which therefore outlives the condition variable as long as a round needs it.
//
// With a deadline, it holds a condition_timer: once it expires, the wait ends after one more
// evaluation of the predicate, holding the lock (see event_core::expire), with success if it is
// true and timed_out otherwise.
template <class Handler, class IoExecutor, class Lock, class Predicate, class Deadline = no_deadline>
class predicate_wait_op final : public acquire_op_base
{
public:
    using executor_type = boost::asio::associated_executor_t<Handler, IoExecutor>;
    using allocator_type = handler_allocator_t<Handler>;
    using slot_type = boost::asio::associated_cancellation_slot_t<Handler>;
    using lock_type = Lock;
    using mutex_type = typename Lock::mutex_type;

    predicate_wait_op(Handler&& handler, const IoExecutor& io_ex, Lock& lock, Predicate&& pred,
                      const std::shared_ptr<event_impl>& impl, Deadline expiry)
        : acquire_op_base(&do_func), handler_(std::move(handler)), work_(handler_, io_ex), io_ex_(io_ex),
          slot_(boost::asio::get_associated_cancellation_slot(handler_)), lock_(&lock), mutex_(lock.mutex()),
          pred_(std::move(pred)), impl_(impl),
          timer_(this, io_ex, get_handler_allocator(handler_), impl, expiry)
    {
        repeats = true;
    }

    static predicate_wait_op* create(Handler&& handler, const IoExecutor& io_ex, Lock& lock, Predicate&& pred,
                                     const std::shared_ptr<event_impl>& impl, Deadline expiry)
    {
        return allocate_op<predicate_wait_op>(get_handler_allocator(handler), std::move(handler), io_ex, lock,
                                              std::move(pred), impl, expiry);
    }

    slot_type& slot() noexcept { return slot_; }

    // Without a timer, the queue side owns the operation alone: the initiator has nothing to let
    // go of.
    void initiated(bool was_queued) { timer_.initiated(was_queued); }

    executor_type get_executor() const noexcept
    {
        return boost::asio::get_associated_executor(handler_, io_ex_);
    }
    allocator_type get_allocator() const noexcept { return get_handler_allocator(handler_); }

private:
    friend class round_relock<predicate_wait_op>;

    using timer_part = condition_timer_t<predicate_wait_op, IoExecutor, allocator_type, Deadline>;

    // The round ended: notified (between rounds now) or aborted (the wait ends). Either way the
    // operation relocks first.
    static void do_func(acquire_op_base* base, action what, const boost::system::error_code& ec, relation)
    {
        auto* op = static_cast<predicate_wait_op*>(base);
        if (what == action::destroy)
            return op->timer_.ended(op, op->get_allocator());
        op->round_error_ = ec;
        mutex_type& mutex = *op->mutex_;
        event_impl& impl = *op->impl_; // a notifier's: the condition variable lives
        BOOST_TRY
        {
            relock_traits<Lock>::relock(mutex, round_relock<predicate_wait_op>(op));
        }
        BOOST_CATCH(...)
        {
            // The relock destroyed the operation, and the handler is lost; the notification it
            // received goes to the next waiter.
            if (!ec)
                impl.notify_one();
            BOOST_RETHROW
        }
        BOOST_CATCH_END
    }

    // The relock completed: between rounds, the predicate decides (unless a cancellation came
    // meanwhile, or the mutex aborted the relock) whether the operation queues again or ends.
    void resume(boost::system::error_code relock_error, Lock relocked)
    {
        if (relocked.owns_lock())
            *lock_ = std::move(relocked);
        if (!round_error_)
        {
            bool again = false;
            if (!relock_error && !core().round_cancelled(*this))
            {
                BOOST_TRY
                {
                    again = !pred_();
                }
                BOOST_CATCH(...)
                {
                    if (slot_.is_connected())
                        slot_.clear();
                    abandon();
                    BOOST_RETHROW
                }
                BOOST_CATCH_END
            }
            Lock* lock = lock_;
            const waiter_outcome ended = core().end_round(*this, again);
            if (ended == waiter_outcome::pending)
            {
                // Queued again, before the unlock: another thread may complete it from here on.
                relock_traits<Lock>::unlock(*lock->release());
                return;
            }
            round_error_ = to_error_code(ended);
        }
        finish(round_error_ ? round_error_ : relock_error);
    }

    // The wait ends: the memory is freed, then the handler invoked, on its executor already.
    void finish(boost::system::error_code ec)
    {
        Handler handler(std::move(handler_));
        [[maybe_unused]] const handler_work<Handler, IoExecutor> work(std::move(work_));
        slot_type slot(std::move(slot_));
        timer_.ended(this, get_handler_allocator(handler));
        if (slot.is_connected())
            slot.clear();
        std::move(handler)(ec);
    }

    // The wait ends without its handler: its relock was destroyed without running, or the
    // predicate threw. Between rounds it leaves the engine's count first.
    void abandon() noexcept
    {
        if (!round_error_)
            core().end_round(*this, false);
        timer_.ended(this, get_allocator());
    }

    event_core<>& core() const noexcept { return impl_->core; }

    Handler handler_;
    handler_work<Handler, IoExecutor> work_;
    IoExecutor io_ex_;
    slot_type slot_;
    Lock* lock_;
    mutex_type* mutex_;
    Predicate pred_;
    std::shared_ptr<event_impl> impl_;
    boost::system::error_code round_error_; // how the last round ended
    timer_part timer_;
};

// The initiation of a condition variable's wait, until `expiry` if it is a deadline: the waiter
// is queued before the mutex is unlocked, so a notify by whoever takes the lock next finds it.
template <class Executor, class Deadline = no_deadline>
class initiate_condition_wait
{
public:
    using executor_type = Executor;

    initiate_condition_wait(const Executor& ex, const std::shared_ptr<event_impl>& impl,
                            Deadline expiry = Deadline()) noexcept
        : executor_(&ex), impl_(&impl), deadline_(expiry)
    {
    }

    const executor_type& get_executor() const noexcept { return *executor_; }

    template <class Handler, class Lock>
    void operator()(Handler&& handler, Lock* lock) const
    {
        BOOST_ASSERT_MSG(lock->owns_lock(),
                         "asio_sync::basic_condition_variable::async_wait without the lock");
        using op_type = condition_wait_op<std::decay_t<Handler>, Executor, Lock, Deadline>;
        start(op_type::create(std::decay_t<Handler>(std::forward<Handler>(handler)), *executor_, *lock,
                              *impl_, deadline_),
              lock);
    }

    // A wait with a predicate, evaluated here first.
    template <class Handler, class Lock, class Predicate>
    void operator()(Handler&& handler, Lock* lock, Predicate&& pred) const
    {
        BOOST_ASSERT_MSG(lock->owns_lock(),
                         "asio_sync::basic_condition_variable::async_wait without the lock");
        const bool holds = pred();
        (*this)(std::forward<Handler>(handler), lock, std::forward<Predicate>(pred), holds);
    }

    // A wait with a predicate that the caller has evaluated (`holds`).
    template <class Handler, class Lock, class Predicate>
    void operator()(Handler&& handler, Lock* lock, Predicate&& pred, bool holds) const
    {
        using handler_type = std::decay_t<Handler>;
        using pred_type = std::decay_t<Predicate>;
        if (holds)
            return post_completion(handler_type(std::forward<Handler>(handler)), *executor_, signal_grant(),
                                   {}, 0);
        using op_type = predicate_wait_op<handler_type, Executor, Lock, pred_type, Deadline>;
        start(op_type::create(handler_type(std::forward<Handler>(handler)), *executor_, *lock,
                              pred_type(std::forward<Predicate>(pred)), *impl_, deadline_),
              lock);
    }

private:
    template <class Op, class Lock>
    void start(Op* op, Lock* lock) const
    {
        queue_op((*impl_)->core, op, 1);
        relock_traits<Lock>::unlock(*lock->release());
    }

    const Executor* executor_;
    const std::shared_ptr<event_impl>* impl_;
    Deadline deadline_;
};

#if defined(BOOST_ASIO_HAS_CO_AWAIT)

// `co_await cv.async_wait(lock, pred, use_awaitable)`: the predicate is evaluated first in the
// coroutine, before it suspends, so that what it throws comes out of the co_await (the lock still
// held); an initiation that runs once the coroutine has suspended could not report it. The
// wait then starts as usual.
template <class Token, class Executor, class Lock, class Predicate, class Deadline>
boost::asio::awaitable<awaitable_value_t<Token, signal_grant>, typename awaitable_token<Token>::executor>
predicate_wait_awaitable(Executor ex, const std::shared_ptr<event_impl>& impl, Lock& lock, Predicate pred,
                         Deadline expiry)
{
    BOOST_ASSERT_MSG(lock.owns_lock(), "asio_sync::basic_condition_variable::async_wait without the lock");
    const bool holds = pred();
    auto deferred = awaitable_token<Token>::deferred();
    co_return co_await boost::asio::async_initiate<decltype(deferred), void(boost::system::error_code)>(
        initiate_condition_wait<Executor, Deadline>(ex, impl, expiry), deferred, &lock, std::move(pred),
        holds);
}

#endif // defined(BOOST_ASIO_HAS_CO_AWAIT)

template <class Token, class Executor, class Lock, class Predicate, class Deadline = no_deadline>
auto async_predicate_wait(const Executor& ex, const std::shared_ptr<event_impl>& impl, Lock& lock,
                          Predicate&& pred, Token&& token, Deadline expiry = Deadline())
{
#if defined(BOOST_ASIO_HAS_CO_AWAIT)
    if constexpr (!std::is_void_v<awaitable_executor_t<Token>>)
        return predicate_wait_awaitable<std::decay_t<Token>>(
            ex, impl, lock, std::decay_t<Predicate>(std::forward<Predicate>(pred)), expiry);
    else
#endif
        return boost::asio::async_initiate<Token, void(boost::system::error_code)>(
            initiate_condition_wait<Executor, Deadline>(ex, impl, expiry), token, &lock,
            std::forward<Predicate>(pred));
}

} // namespace asio_sync::detail

#endif // ASIO_SYNC_DETAIL_CONDITION_WAIT_HPP
