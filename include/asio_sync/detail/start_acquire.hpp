// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_DETAIL_START_ACQUIRE_HPP
#define ASIO_SYNC_DETAIL_START_ACQUIRE_HPP

#include <asio_sync/detail/acquire_op.hpp>
#include <asio_sync/detail/completion.hpp>
#include <asio_sync/detail/submit.hpp>
#include <asio_sync/detail/waiter_list.hpp>
#include <asio_sync/error.hpp>
#include <asio_sync/wait_observer.hpp>

#include <boost/asio/cancellation_type.hpp>
#include <boost/core/no_exceptions_support.hpp>

#include <chrono>
#include <cstddef>
#include <utility>

// The start of an acquire, shared by every engine that decides acquires. An engine is
// semaphore_core or a type with the same members:
//  - `bool try_acquire(std::size_t n, bool to_permit)`: takes n permits if it can at once, without
//    blocking; for n == 0, succeeds unless the engine is closed;
//  - `std::size_t capacity()`: the most permits one acquire may ask for;
//  - `waiter_outcome enqueue(semaphore_waiter& w, std::size_t n)`, for 0 < n <= capacity: queues
//    the waiter (returns pending) or decides at once (granted, closed, too_many);
//  - `bool cancel(semaphore_waiter* const* ref, waiter_outcome why, waiter_list& done)`: if the
//    waiter that *ref names is still queued, takes it out with outcome `why` into `done`. The
//    engine nulls *ref, through the waiter's cancel_ref, whenever the waiter leaves its queue.
// An engine moves the waiters it finishes to a list, finished by complete_all once it holds no
// lock. An operation type Op<Handler, IoExecutor, Grant> derives from acquire_op_base and has
//  - `static Op* create(Handler&&, const IoExecutor&, const Grant&, args...)`;
//  - `slot()`: the handler's cancellation slot;
//  - `void initiated(bool queued)`: the initiator's last call on it.

namespace asio_sync::detail {

// The cancellation types an acquire honours: each leaves nothing behind.
inline constexpr boost::asio::cancellation_type_t acquire_cancellation_types =
    boost::asio::cancellation_type::terminal | boost::asio::cancellation_type::partial |
    boost::asio::cancellation_type::total;

// The per-operation cancellation handler, stored in the handler's cancellation slot. It names its
// waiter through a pointer that the engine nulls (under its lock) once the waiter has left the
// queue, so a cancellation arriving after a grant does nothing: O(1), no search of the queue. Types
// other than `Types` are ignored.
template <class Engine, boost::asio::cancellation_type_t Types = acquire_cancellation_types>
class acquire_cancellation
{
public:
    acquire_cancellation(Engine& engine, semaphore_waiter* waiter) noexcept
        : engine_(&engine), waiter_(waiter)
    {
    }

    semaphore_waiter** waiter_ref() noexcept { return &waiter_; }

    void operator()(boost::asio::cancellation_type_t type)
    {
        if (!(type & Types))
            return;
        waiter_list done;
        engine_->cancel(&waiter_, waiter_outcome::aborted, done);
        // The upcall clears the slot, which destroys *this: touch no member from here on.
        complete_all(done);
    }

private:
    Engine* engine_;
    semaphore_waiter* waiter_;
};

// Installs the cancellation handler of `op`, if its handler has a connected slot. Called before
// the waiter is visible to other threads, so no grant can race it. If that throws, the operation
// is destroyed without invoking its handler, and the exception propagates.
template <boost::asio::cancellation_type_t Types = acquire_cancellation_types, class Engine, class Op>
void install_cancellation(Engine& engine, Op* op)
{
    auto& slot = op->slot();
    if (!slot.is_connected())
        return;
    BOOST_TRY
    {
        op->cancel_ref = slot.template emplace<acquire_cancellation<Engine, Types>>(engine, op).waiter_ref();
    }
    BOOST_CATCH(...)
    {
        op->destroy();
        op->initiated(false);
        BOOST_RETHROW
    }
    BOOST_CATCH_END
}

// Tells an observer that a wait has been queued. What it throws is dropped (see wait_observer).
inline void report_queued(wait_observer& observer) noexcept
{
    BOOST_TRY
    {
        observer.on_queued();
    }
    BOOST_CATCH(...)
    {
    }
    BOOST_CATCH_END
}

// Queues a created operation `op` for n permits on `engine`, or decides it at once: the part of an
// acquire after its operation exists, shared with the waits whose initiation needs more than an
// acquire (a condition variable's). With an `observer`, a wait that queues is reported to it,
// queued now and finished when it leaves the queue (complete_each); one decided at once is not.
template <class Engine, class Op>
void queue_op(Engine& engine, Op* op, std::size_t n, wait_observer* observer = nullptr)
{
    install_cancellation(engine, op);
    auto& slot = op->slot();
    if (observer)
    {
        // Before the waiter is visible: once queued, another thread may finish it at once.
        op->observer = observer;
        op->queued_at = std::chrono::steady_clock::now();
    }
    const waiter_outcome decided = engine.enqueue(*op, n);
    if (decided == waiter_outcome::pending && observer)
        report_queued(*observer);
    if (decided != waiter_outcome::pending)
    {
        // Decided without queueing: nobody else knows of the operation yet. If its completion
        // cannot be submitted, the permits are back and the exception reaches the caller.
        if (slot.is_connected())
            slot.clear();
        BOOST_TRY
        {
            op->complete(to_error_code(decided), relation::continuation);
        }
        BOOST_CATCH(...)
        {
            op->initiated(false);
            BOOST_RETHROW
        }
        BOOST_CATCH_END
    }
    op->initiated(decided == waiter_outcome::pending);
}

// An acquire of n permits that the lock-free attempt could not grant: n is more than the engine
// holds, someone is queued, or the engine is closed. `op_args` go to Op::create after the handler,
// the I/O executor and the grant. A queued wait is reported to `observer`, if any.
template <template <class, class, class> class Op, class Engine, class Handler, class IoExecutor, class Grant,
          class... OpArgs>
void start_other_acquire(Engine& engine, wait_observer* observer, Handler handler, const IoExecutor& io_ex,
                         std::size_t n, const Grant& grant, OpArgs&&... op_args)
{
    using op_type = Op<Handler, IoExecutor, Grant>;

    if (n > engine.capacity())
        return post_completion(std::move(handler), io_ex, grant, error::too_many_permits, n);
    if (n == 0) // try_acquire(0) fails only once closed
        return post_completion(std::move(handler), io_ex, grant, error::closed, n);

    queue_op(engine, op_type::create(std::move(handler), io_ex, grant, std::forward<OpArgs>(op_args)...), n,
             observer);
}

// Starts an acquire of n permits from `engine` for `handler`, whose arguments `grant` makes, with
// an operation of type Op if it has to wait. The immediate grant stays small enough to inline;
// everything else is start_other_acquire. Declared inline, as a member defined in its class is:
// g++ then inlines it into the initiating function, which matters to an immediate acquire.
template <template <class, class, class> class Op, class Engine, class Handler, class IoExecutor, class Grant,
          class... OpArgs>
inline void start_acquire(Engine& engine, Handler handler, const IoExecutor& io_ex, std::size_t n,
                          const Grant& grant, OpArgs&&... op_args)
{
    if (engine.try_acquire(n, Grant::to_permit))
        return post_completion(std::move(handler), io_ex, grant, {}, n);
    start_other_acquire<Op>(engine, nullptr, std::move(handler), io_ex, n, grant,
                            std::forward<OpArgs>(op_args)...);
}

} // namespace asio_sync::detail

#endif // ASIO_SYNC_DETAIL_START_ACQUIRE_HPP
