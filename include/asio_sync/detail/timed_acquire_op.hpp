// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_DETAIL_TIMED_ACQUIRE_OP_HPP
#define ASIO_SYNC_DETAIL_TIMED_ACQUIRE_OP_HPP

#include <asio_sync/detail/acquire_op.hpp>
#include <asio_sync/detail/deadline.hpp>
#include <asio_sync/detail/handler_tracking.hpp>
#include <asio_sync/detail/semaphore_service.hpp>
#include <asio_sync/detail/start_acquire.hpp>
#include <asio_sync/detail/submit.hpp>
#include <asio_sync/detail/waiter_list.hpp>

#include <boost/asio/basic_waitable_timer.hpp>
#include <boost/asio/wait_traits.hpp>
#include <boost/core/no_exceptions_support.hpp>
#include <boost/system/error_code.hpp>

#include <atomic>
#include <cstddef>
#include <type_traits>
#include <utility>

namespace asio_sync::detail {

// The wait handler of a timer that lives in its operation: owns a reference to the operation, even
// if it is destroyed without running (context shutdown), and lets the operation expire if the
// timer does. Op has `allocator_type`, `alloc_`, `owners_` (an atomic count), `expire()` and
// `release()`, which frees the operation with its last owner.
template <class Op>
class timer_expiry
{
public:
    using allocator_type = typename Op::allocator_type;

    explicit timer_expiry(Op* op) noexcept : op_(op), alloc_(op->alloc_)
    {
        op->owners_.fetch_add(1, std::memory_order_relaxed);
    }

    timer_expiry(timer_expiry&& other) noexcept : op_(std::exchange(other.op_, nullptr)), alloc_(other.alloc_)
    {
    }
    timer_expiry& operator=(timer_expiry&&) = delete;

    ~timer_expiry()
    {
        if (op_)
            op_->release();
    }

    allocator_type get_allocator() const noexcept { return alloc_; }

    void operator()(boost::system::error_code ec)
    {
        Op* op = std::exchange(op_, nullptr);
        if (!ec)
            op->expire();
        op->release();
    }

private:
    Op* op_;
    allocator_type alloc_;
};

// Which of an operation's initiator and queue side cancels its timer, so that the timer object is
// never used by two threads at once: whichever comes second, if the timer was started.
class timer_stage
{
public:
    // The initiator has started the timer: true if the queue side finished meanwhile, and the
    // initiator must cancel the timer.
    bool started() noexcept { return stage_.exchange(timing, std::memory_order_acq_rel) == finished; }

    // The queue side has finished: true if the timer was started, and it must cancel it.
    bool finish() noexcept { return stage_.exchange(finished, std::memory_order_acq_rel) == timing; }

private:
    enum stage : unsigned char
    {
        initiating,
        timing,
        finished,
    };

    std::atomic<stage> stage_{initiating};
};

// An acquire with a deadline, from any engine (see start_acquire.hpp) that belongs to a primitive
// registered with its context's service (`entry`). Its timer lives in the operation, which
// therefore has up to three owners: the queue side (completed or destroyed through func_, like any
// acquire), the initiator until it has started the timer, and the timer's wait handler. The
// memory goes with the last.
//
// The timer starts only once the waiter is queued, so an expiry always finds it queued or gone. The
// initiator and the queue side agree through a timer_stage on which of them cancels the timer. The
// expiry reaches the engine under its service's lock and only while the waiter is still queued: the
// primitive cannot finish its destructor meanwhile (see semaphore_service::locked), and a grant or
// cancellation that came first leaves the waiter alone (the engine checks again under its own
// lock).
template <class Handler, class IoExecutor, class Grant, class Engine>
class timed_acquire_op final : public acquire_op_base BOOST_ASIO_ALSO_INHERIT_TRACKED_HANDLER
{
public:
    using parts_type = acquire_parts<Handler, IoExecutor, Grant>;
    using allocator_type = typename parts_type::allocator_type;
    using timer_type =
        boost::asio::basic_waitable_timer<deadline_clock, boost::asio::wait_traits<deadline_clock>,
                                          IoExecutor>;

    timed_acquire_op(Handler&& handler, const IoExecutor& io_ex, const Grant& grant, Engine& engine,
                     service_entry& entry, deadline_type ends_at)
        : acquire_op_base(&do_func), parts_(std::move(handler), io_ex, grant), alloc_(parts_.get_allocator()),
          timer_(io_ex), deadline_(ends_at), engine_(&engine),
          service_(entry.service.load(std::memory_order_acquire))
    {
        to_permit = Grant::to_permit;
        track_creation(*this, io_ex);
    }

    static timed_acquire_op* create(Handler&& handler, const IoExecutor& io_ex, const Grant& grant,
                                    Engine& engine, service_entry& entry, deadline_type ends_at)
    {
        return allocate_op<timed_acquire_op>(get_handler_allocator(handler), std::move(handler), io_ex, grant,
                                             engine, entry, ends_at);
    }

    typename parts_type::slot_type& slot() noexcept { return parts_.slot(); }

    // The initiator's last step: starts the timer if the waiter was queued, then lets go.
    void initiated(bool was_queued)
    {
        if (was_queued)
            start_timer();
        release();
    }

private:
    friend class timer_expiry<timed_acquire_op>;
    using expiry = timer_expiry<timed_acquire_op>;

    void start_timer()
    {
        BOOST_TRY
        {
            timer_.expires_at(deadline_);
            timer_.async_wait(expiry(this));
        }
        BOOST_CATCH(...)
        {
            // Without a timer there is no time limit: the acquire leaves the queue (unless it was
            // granted meanwhile) and reports it. The handler is posted, as always.
            waiter_list done;
            semaphore_waiter* self = this;
            engine_->cancel(&self, waiter_outcome::no_memory, done);
            complete_all(done);
        }
        BOOST_CATCH_END
        if (stage_.started())
            timer_.cancel();
    }

    void expire()
    {
        if (!service_)
            return; // the context had shut down before the acquire began
        waiter_list done;
        service_->locked([&] {
            if (!queued.load(std::memory_order_relaxed))
                return; // granted or cancelled: the primitive may be gone
            semaphore_waiter* self = this;
            engine_->cancel(&self, waiter_outcome::timed_out, done);
        });
        complete_all(done);
    }

    void release() noexcept
    {
        if (owners_.fetch_sub(1, std::memory_order_acq_rel) == 1)
            deallocate_op(this, alloc_);
    }

    static void do_func(acquire_op_base* base, action what, const boost::system::error_code& ec, relation how)
    {
        auto* op = static_cast<timed_acquire_op*>(base);
        BOOST_ASIO_HANDLER_COMPLETION((*op));
        const std::size_t n = op->granted();
        parts_type parts(std::move(op->parts_));
        if (op->stage_.finish())
            op->timer_.cancel();
        op->release();
        if (what == action::complete)
        {
            BOOST_ASIO_HANDLER_INVOCATION_BEGIN((ec));
            parts.complete(ec, how, n);
            BOOST_ASIO_HANDLER_INVOCATION_END;
        }
    }

    parts_type parts_;
    typename parts_type::allocator_type alloc_;
    timer_type timer_;
    deadline_type deadline_;
    Engine* engine_;
    semaphore_service* service_;
    std::atomic<unsigned char> owners_{2}; // the queue side and the initiator
    timer_stage stage_;
};

// The timed operation of one engine, in the shape start_acquire takes: Op<Handler, IoExecutor, Grant>.
template <class Engine>
struct timed_acquire
{
    template <class Handler, class IoExecutor, class Grant>
    using op = timed_acquire_op<Handler, IoExecutor, Grant, Engine>;
};

// Starts an acquire of n permits from `engine`, which belongs to the primitive registered as
// `entry`: without a time limit (no_deadline), until a deadline, or for a timeout that starts
// counting once the wait has to queue; a wait that queues is reported to the entry's observer, if
// any. The immediate grant is start_acquire's, inline: an acquire granted at once costs what it
// costs without a deadline or an observer, and reads no clock.
template <class Engine, class Handler, class IoExecutor, class Grant, class Deadline>
inline void start_acquire_until(Engine& engine, service_entry& entry, Handler handler,
                                const IoExecutor& io_ex, std::size_t n, const Grant& grant, Deadline expiry)
{
    if (engine.try_acquire(n, Grant::to_permit))
        return post_completion(std::move(handler), io_ex, grant, {}, n);
    const tracked_wait_scope tracked(entry.names);
    wait_observer* observer = entry.observer.load(std::memory_order_acquire);
    if constexpr (std::is_same_v<Deadline, no_deadline>)
        start_other_acquire<acquire_op>(engine, observer, std::move(handler), io_ex, n, grant);
    else
        start_other_acquire<timed_acquire<Engine>::template op>(engine, observer, std::move(handler), io_ex,
                                                                n, grant, engine, entry, deadline_of(expiry));
}

} // namespace asio_sync::detail

#endif // ASIO_SYNC_DETAIL_TIMED_ACQUIRE_OP_HPP
