// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_DETAIL_ACQUIRE_OP_HPP
#define ASIO_SYNC_DETAIL_ACQUIRE_OP_HPP

#include <asio_sync/detail/completion.hpp>
#include <asio_sync/detail/handler_tracking.hpp>
#include <asio_sync/detail/handler_work.hpp>
#include <asio_sync/detail/submit.hpp>
#include <asio_sync/detail/waiter_list.hpp>
#include <asio_sync/error.hpp>
#include <asio_sync/wait_observer.hpp>

#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/error.hpp>
#include <boost/core/no_exceptions_support.hpp>
#include <boost/system/error_code.hpp>

#include <chrono>
#include <cstddef>
#include <memory>
#include <new>
#include <utility>

namespace asio_sync::detail {

inline boost::system::error_code to_error_code(waiter_outcome outcome) noexcept
{
    switch (outcome)
    {
    case waiter_outcome::pending:
    case waiter_outcome::granted:
        break;
    case waiter_outcome::aborted:
        return boost::asio::error::operation_aborted;
    case waiter_outcome::closed:
        return error::closed;
    case waiter_outcome::timed_out:
        return error::timed_out;
    case waiter_outcome::too_many:
        return error::too_many_permits;
    case waiter_outcome::no_memory:
        return boost::asio::error::no_memory;
    case waiter_outcome::no_upgrade_lock:
        return error::no_upgrade_lock;
    }
    return {};
}

// Type-erased face of a queued acquire. `func_` does what it is told, as Asio's own operations
// do: complete the operation (posting the handler) or destroy it without invoking the handler.
class acquire_op_base : public semaphore_waiter
{
public:
    enum class action
    {
        complete,
        destroy, // `ec` and `how` are not used
    };

    void complete(const boost::system::error_code& ec, relation how)
    {
        func_(this, action::complete, ec, how);
    }
    void destroy() { func_(this, action::destroy, boost::system::error_code(), relation::fork); }

protected:
    using func_type = void (*)(acquire_op_base*, action, const boost::system::error_code&, relation);

    explicit acquire_op_base(func_type func) noexcept : func_(func) {}
    ~acquire_op_base() = default;

private:
    func_type func_;
};

// What a queued acquire must carry to its completion: moved out of the operation object before
// that is freed, so the upcall never runs while the operation's memory is still owned.
template <class Handler, class IoExecutor, class Grant>
class acquire_parts
{
public:
    using slot_type = boost::asio::associated_cancellation_slot_t<Handler>;
    using allocator_type = handler_allocator_t<Handler>;

    acquire_parts(Handler&& handler, const IoExecutor& io_ex, const Grant& grant)
        : handler_(std::move(handler)), work_(handler_, io_ex),
          slot_(boost::asio::get_associated_cancellation_slot(handler_)), grant_(grant)
    {
    }

    slot_type& slot() noexcept { return slot_; }

    allocator_type get_allocator() const noexcept { return get_handler_allocator(handler_); }

    // For an operation whose grant needs what only the finished waiter knows (a remote permit's
    // id and fence): it fills them in before completing.
    Grant& grant() noexcept { return grant_; }

    // Submits the handler with what the grant of n permits makes of `ec`, through the handler's
    // executor.
    void complete(boost::system::error_code ec, relation how, std::size_t n)
    {
        const allocator_type alloc = get_allocator();
        submit_granted(grant_, ec, n, [&] {
            work_.complete(completion<Handler, grant_result_t<Grant>>(
                               std::move(handler_), grant_arguments(grant_, ec, n), std::move(slot_)),
                           alloc, how);
        });
    }

private:
    Handler handler_;
    handler_work<Handler, IoExecutor> work_;
    slot_type slot_;
    Grant grant_;
};

// Allocates an operation with the handler's associated allocator: the only allocation of a queued
// acquire.
template <class Op, class Allocator, class... Args>
Op* allocate_op(const Allocator& handler_alloc, Args&&... args)
{
    using op_allocator = typename std::allocator_traits<Allocator>::template rebind_alloc<Op>;
    op_allocator alloc(handler_alloc);
    Op* op = std::allocator_traits<op_allocator>::allocate(alloc, 1);
    BOOST_TRY
    {
        return ::new (static_cast<void*>(op)) Op(std::forward<Args>(args)...);
    }
    BOOST_CATCH(...)
    {
        std::allocator_traits<op_allocator>::deallocate(alloc, op, 1);
        BOOST_RETHROW
    }
    BOOST_CATCH_END
}

template <class Op, class Allocator>
void deallocate_op(Op* op, const Allocator& handler_alloc) noexcept
{
    using op_allocator = typename std::allocator_traits<Allocator>::template rebind_alloc<Op>;
    op_allocator alloc(handler_alloc);
    op->~Op();
    std::allocator_traits<op_allocator>::deallocate(alloc, op, 1);
}

template <class Handler, class IoExecutor, class Grant>
class acquire_op final : public acquire_op_base BOOST_ASIO_ALSO_INHERIT_TRACKED_HANDLER
{
public:
    using parts_type = acquire_parts<Handler, IoExecutor, Grant>;

    acquire_op(Handler&& handler, const IoExecutor& io_ex, const Grant& grant)
        : acquire_op_base(&do_func), parts_(std::move(handler), io_ex, grant)
    {
        to_permit = Grant::to_permit;
        track_creation(*this, io_ex);
    }

    static acquire_op* create(Handler&& handler, const IoExecutor& io_ex, const Grant& grant)
    {
        return allocate_op<acquire_op>(get_handler_allocator(handler), std::move(handler), io_ex, grant);
    }

    typename parts_type::slot_type& slot() noexcept { return parts_.slot(); }

    // The queue side owns the operation alone: the initiator has nothing to let go of.
    void initiated(bool) noexcept {}

private:
    static void do_func(acquire_op_base* base, action what, const boost::system::error_code& ec, relation how)
    {
        auto* op = static_cast<acquire_op*>(base);
        // The handler tracking record keeps the operation's id: the operation may go first.
        BOOST_ASIO_HANDLER_COMPLETION((*op));
        const std::size_t n = op->granted();
        parts_type parts(std::move(op->parts_));
        deallocate_op(op, parts.get_allocator());
        if (what == action::complete)
        {
            BOOST_ASIO_HANDLER_INVOCATION_BEGIN((ec));
            parts.complete(ec, how, n);
            BOOST_ASIO_HANDLER_INVOCATION_END;
        }
    }

    parts_type parts_;
};

inline wait_outcome observed_outcome(waiter_outcome outcome) noexcept
{
    switch (outcome)
    {
    case waiter_outcome::granted:
        return wait_outcome::granted;
    case waiter_outcome::pending:
    case waiter_outcome::aborted:
        return wait_outcome::cancelled;
    case waiter_outcome::timed_out:
        return wait_outcome::timed_out;
    case waiter_outcome::closed:
    case waiter_outcome::too_many:
    case waiter_outcome::no_memory:
    case waiter_outcome::no_upgrade_lock:
        break;
    }
    return wait_outcome::failed;
}

// Tells an observed waiter's observer how it ended. What the observer throws is dropped: the
// waiter is finished all the same (see wait_observer).
inline void report_finished(const semaphore_waiter& w, wait_outcome outcome) noexcept
{
    BOOST_TRY
    {
        w.observer->on_finished(outcome, std::chrono::steady_clock::now() - w.queued_at);
    }
    BOOST_CATCH(...)
    {
    }
    BOOST_CATCH_END
}

inline void destroy_all(waiter_list& done) noexcept
{
    while (semaphore_waiter* w = done.pop_front())
    {
        if (w->observer)
            report_finished(*w, wait_outcome::cancelled);
        static_cast<acquire_op_base*>(w)->destroy();
    }
}

// The list of waiters this thread is finishing, if any. A completion that cannot be delivered
// gives its permits back, which may finish more waiters: they join this list instead of starting
// a nested loop, so a run of failures cannot exhaust the stack.
inline waiter_list*& finishing_on_this_thread() noexcept
{
    thread_local waiter_list* list = nullptr;
    return list;
}

// Finishes waiters that left the queue, oldest first. Called after the semaphore's mutex is
// released. `first` is the relation of the first completion; the others are forks, so that a
// release that serves several waiters lets idle threads take them. A completion that cannot be
// submitted (its allocator or executor throws) loses only its own handler, which is destroyed;
// what its grant held goes back to the semaphore and the other waiters are still finished. The
// caller, who did its own part, never sees that exception.
inline void complete_each(waiter_list& done, relation first) noexcept
{
    waiter_list*& finishing = finishing_on_this_thread();
    if (finishing)
    {
        finishing->splice_back(done);
        return;
    }
    finishing = &done;
    relation how = first;
    while (semaphore_waiter* w = done.pop_front())
    {
        if (w->observer)
            report_finished(*w, observed_outcome(w->outcome));
        BOOST_TRY
        {
            static_cast<acquire_op_base*>(w)->complete(to_error_code(w->outcome), how);
        }
        BOOST_CATCH(...)
        {
            // Already handled as described above; nobody is left to report it to.
        }
        BOOST_CATCH_END
        how = relation::fork;
    }
    finishing = nullptr;
}

// The common case, nobody completed, stays inline in the lock-free paths.
inline void complete_all(waiter_list& done, relation first = relation::fork) noexcept
{
    if (!done.empty())
        complete_each(done, first);
}

} // namespace asio_sync::detail

#endif // ASIO_SYNC_DETAIL_ACQUIRE_OP_HPP
