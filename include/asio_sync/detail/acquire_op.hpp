// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_DETAIL_ACQUIRE_OP_HPP
#define ASIO_SYNC_DETAIL_ACQUIRE_OP_HPP

#include <asio_sync/detail/waiter_list.hpp>
#include <asio_sync/error.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/associated_allocator.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/execution.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/prefer.hpp>
#include <boost/asio/recycling_allocator.hpp>
#include <boost/asio/require.hpp>
#include <boost/core/no_exceptions_support.hpp>
#include <boost/system/error_code.hpp>

#include <memory>
#include <optional>
#include <tuple>
#include <type_traits>
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
    }
    return {};
}

template <class Handler>
using handler_allocator_t =
    boost::asio::associated_allocator_t<Handler, boost::asio::recycling_allocator<void>>;

template <class Handler>
handler_allocator_t<Handler> get_handler_allocator(const Handler& handler) noexcept
{
    return boost::asio::get_associated_allocator(handler, boost::asio::recycling_allocator<void>());
}

// How a completion relates to the code that decided it. A continuation goes on the calling
// thread's own queue when that thread is running the handler's execution context (io_context,
// thread_pool): it runs after the current handler returns, without a lock or a wake-up. A fork
// is queued for any thread of the context, and may wake an idle one.
enum class relation
{
    fork,
    continuation,
};

template <class Executor, class Function>
void submit_to(Executor target, Function&& f)
{
#if defined(BOOST_ASIO_NO_DEPRECATED)
    target.execute(std::forward<Function>(f));
#else
    boost::asio::execution::execute(target, std::forward<Function>(f));
#endif
}

template <class Executor, class Function, class Allocator>
void submit(const Executor& ex, Function&& f, const Allocator& alloc, relation how);

// An any_io_executor that holds an io_context executor (the usual case) submits through that
// executor itself: it honours the allocator property, which any_io_executor drops (so Asio would
// allocate the queued function with std::allocator), and it spares a type-erased copy per
// property. Returns false, leaving `f` alone, for any other target.
template <class Function, class Allocator>
bool submit_to_io_context(const boost::asio::any_io_executor& ex, Function& f, const Allocator& alloc,
                          relation how)
{
#if !defined(BOOST_ASIO_NO_TYPEID)
    using untracked = boost::asio::io_context::executor_type;
    using tracked = std::decay_t<decltype(boost::asio::prefer(
        std::declval<const untracked&>(), boost::asio::execution::outstanding_work.tracked))>;
    if (const untracked* io = ex.target<untracked>())
    {
        detail::submit(*io, std::move(f), alloc, how);
        return true;
    }
    if (const tracked* io = ex.target<tracked>())
    {
        detail::submit(*io, std::move(f), alloc, how);
        return true;
    }
#endif
    return false;
}

// Submits `f` through `ex` without ever running it inside the call (blocking.never), with the
// handler's allocator, the way Asio's own operations complete.
template <class Executor, class Function, class Allocator>
void submit(const Executor& ex, Function&& f, const Allocator& alloc, relation how)
{
    static_assert(boost::asio::execution::is_executor<Executor>::value,
                  "asio_sync needs a standard (P0443-style) executor");
    if constexpr (std::is_same_v<Executor, boost::asio::any_io_executor>)
    {
        if (submit_to_io_context(ex, f, alloc, how))
            return;
    }
    namespace execution = boost::asio::execution;
    auto target =
        boost::asio::prefer(boost::asio::require(ex, execution::blocking.never), execution::allocator(alloc));
    if (how == relation::continuation)
        detail::submit_to(boost::asio::prefer(target, execution::relationship.continuation),
                          std::forward<Function>(f));
    else
        detail::submit_to(target, std::forward<Function>(f));
}

template <class Executor>
using tracked_executor_t = std::decay_t<decltype(boost::asio::prefer(
    std::declval<const Executor&>(), boost::asio::execution::outstanding_work.tracked))>;

// Outstanding work, from initiation until the handler has been handed to its executor: on the
// handler's associated executor, and on the I/O executor too when the handler has an executor of
// its own that is not the I/O executor. Decided as Asio's own handler_work does: by type where the
// types differ, by value where they are the same (an any_io_executor of another context is another
// context). A handler without an executor of its own, the common case, completes on the I/O
// executor: that is known at compile time, and tracked once.
template <class Handler, class IoExecutor>
class handler_work
{
    // The answer for a handler without an executor of its own.
    struct no_executor
    {
    };

    using handler_executor = boost::asio::associated_executor_t<Handler, IoExecutor>;
    static constexpr bool own_executor =
        !std::is_same_v<boost::asio::associated_executor_t<Handler, no_executor>, no_executor>;

    struct no_work
    {
    };

    using io_work = std::conditional_t<own_executor, std::optional<tracked_executor_t<IoExecutor>>, no_work>;

public:
    handler_work(const Handler& handler, const IoExecutor& io_ex)
        : io_work_(track_io(handler, io_ex)),
          handler_work_(track(boost::asio::get_associated_executor(handler, io_ex)))
    {
    }

    template <class Function, class Allocator>
    void complete(Function&& f, const Allocator& alloc, relation how)
    {
        submit(handler_work_, std::forward<Function>(f), alloc, how);
    }

private:
    template <class Executor>
    static auto track(const Executor& ex)
    {
        return boost::asio::prefer(ex, boost::asio::execution::outstanding_work.tracked);
    }

    static io_work track_io(const Handler& handler, const IoExecutor& io_ex)
    {
        if constexpr (!own_executor)
            return no_work{};
        else if constexpr (std::is_same_v<handler_executor, IoExecutor>)
            return boost::asio::get_associated_executor(handler, io_ex) == io_ex ? io_work()
                                                                                 : io_work(track(io_ex));
        else
            return track(io_ex);
    }

    io_work io_work_;
    tracked_executor_t<handler_executor> handler_work_;
};

// A grant turns an acquire's outcome into the handler's arguments at the moment it is decided
// (`operator()`), and says whether the permits stay in circulation (`to_permit`). What it produces
// may own the permits (a lock guard, a permit object), so that a handler destroyed without running
// still gives them back. When a granted completion cannot be delivered (its executor or allocator
// throws), `undelivered(n)` gives back the n permits that nothing else owns: it does nothing for
// grants whose arguments own them, as their destructors have already given them back.
template <class Grant>
using grant_result_t = std::invoke_result_t<const Grant&, boost::system::error_code>;

// What runs on the handler's executor: detaches our cancellation handler, then makes the upcall.
template <class Handler, class Args>
class completion
{
public:
    using slot_type = boost::asio::associated_cancellation_slot_t<Handler>;

    completion(Handler&& handler, Args&& args, slot_type slot = slot_type())
        : handler_(std::move(handler)), args_(std::move(args)), slot_(std::move(slot))
    {
    }

    void operator()()
    {
        if (slot_.is_connected())
            slot_.clear();
        std::apply(std::move(handler_), std::move(args_));
    }

private:
    Handler handler_;
    Args args_;
    slot_type slot_;
};

// Runs `submit_completion`, which submits the completion of a grant of n permits. If that throws,
// the completion's handler is gone, so the permits go back before the exception leaves. Forced
// inline, as post_completion is: left to itself g++ keeps the handler-catching frame out of line,
// and an immediate acquire costs 10% more (bench/uncontended.cpp).
template <class Grant, class Submit>
BOOST_FORCEINLINE void submit_granted(const Grant& grant, boost::system::error_code ec, std::size_t n,
                                      Submit&& submit_completion)
{
    BOOST_TRY
    {
        submit_completion();
    }
    BOOST_CATCH(...)
    {
        if (!ec)
            grant.undelivered(n);
        BOOST_RETHROW
    }
    BOOST_CATCH_END
}

// Completes `handler` without an operation object: for acquires decided at initiation, which
// continue the caller's chain. If the completion cannot be submitted, the exception reaches the
// initiating function's caller.
template <class Handler, class IoExecutor, class Grant>
BOOST_FORCEINLINE void post_completion(Handler handler, const IoExecutor& io_ex, const Grant& grant,
                                       boost::system::error_code ec, std::size_t n)
{
    const auto alloc = get_handler_allocator(handler);
    const auto ex = boost::asio::get_associated_executor(handler, io_ex);
    submit_granted(grant, ec, n, [&] {
        submit(ex, completion<Handler, grant_result_t<Grant>>(std::move(handler), grant(ec)), alloc,
               relation::continuation);
    });
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

    // Submits the handler with what the grant of n permits makes of `ec`, through the handler's
    // executor.
    void complete(boost::system::error_code ec, relation how, std::size_t n)
    {
        const allocator_type alloc = get_allocator();
        submit_granted(grant_, ec, n, [&] {
            work_.complete(
                completion<Handler, grant_result_t<Grant>>(std::move(handler_), grant_(ec), std::move(slot_)),
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
class acquire_op final : public acquire_op_base
{
public:
    using parts_type = acquire_parts<Handler, IoExecutor, Grant>;

    acquire_op(Handler&& handler, const IoExecutor& io_ex, const Grant& grant)
        : acquire_op_base(&do_func), parts_(std::move(handler), io_ex, grant)
    {
        to_permit = Grant::to_permit;
    }

    static acquire_op* create(Handler&& handler, const IoExecutor& io_ex, const Grant& grant)
    {
        return allocate_op<acquire_op>(get_handler_allocator(handler), std::move(handler), io_ex, grant);
    }

    typename parts_type::slot_type& slot() noexcept { return parts_.slot(); }

private:
    static void do_func(acquire_op_base* base, action what, const boost::system::error_code& ec, relation how)
    {
        auto* op = static_cast<acquire_op*>(base);
        const std::size_t n = op->granted();
        parts_type parts(std::move(op->parts_));
        deallocate_op(op, parts.get_allocator());
        if (what == action::complete)
            parts.complete(ec, how, n);
    }

    parts_type parts_;
};

inline void destroy_all(waiter_list& done) noexcept
{
    while (semaphore_waiter* w = done.pop_front())
        static_cast<acquire_op_base*>(w)->destroy();
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

// The per-operation cancellation handler, stored in the handler's cancellation slot. It names its
// waiter through a pointer that the semaphore nulls (under its lock) once the waiter has left the
// queue, so a cancellation arriving after a grant does nothing: O(1), no search of the queue.
template <class Core>
class acquire_cancellation
{
public:
    acquire_cancellation(Core& core, semaphore_waiter* waiter) noexcept : core_(&core), waiter_(waiter) {}

    semaphore_waiter** waiter_ref() noexcept { return &waiter_; }

    void operator()(boost::asio::cancellation_type_t type)
    {
        using boost::asio::cancellation_type;
        if (!(type & (cancellation_type::terminal | cancellation_type::partial | cancellation_type::total)))
            return;
        waiter_list done;
        core_->cancel(&waiter_, waiter_outcome::aborted, done);
        // The upcall clears the slot, which destroys *this: touch no member from here on.
        complete_all(done);
    }

private:
    Core* core_;
    semaphore_waiter* waiter_;
};

} // namespace asio_sync::detail

#endif // ASIO_SYNC_DETAIL_ACQUIRE_OP_HPP
