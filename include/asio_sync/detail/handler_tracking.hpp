// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_DETAIL_HANDLER_TRACKING_HPP
#define ASIO_SYNC_DETAIL_HANDLER_TRACKING_HPP

#include <boost/asio/detail/handler_tracking.hpp>
#include <boost/asio/execution/context.hpp>
#include <boost/asio/query.hpp>

namespace asio_sync::detail {

// Asio's handler tracking (BOOST_ASIO_ENABLE_HANDLER_TRACKING) for the waits of the family: a wait
// that queues is a tracked handler, created as `<primitive>@<address>.<operation>` with the
// handler that started it as its parent, and completed as Asio's own operations are, so that the
// completion it posts is its child in Asio's log and in handlerviz.pl. Without the macro every
// piece here is empty and costs nothing.
//
// The names come from the primitive, which gives them to its service entry when it is built (a
// mutex is a semaphore underneath, but is tracked as a mutex), and reach the operation through
// the thread that starts it: `tracked_wait_scope` names the wait being started, and the operation
// takes the name when it is created. An operation started outside such a scope is tracked as
// `asio_sync@<operation>.async_wait`.
struct tracking_names
{
    const char* object = "asio_sync";
    const char* operation = "async_wait";
    const void* address = nullptr; // the primitive's
};

#if defined(BOOST_ASIO_ENABLE_HANDLER_TRACKING)

inline const tracking_names*& current_tracked_wait() noexcept
{
    thread_local const tracking_names* current = nullptr;
    return current;
}

// Names the wait this thread starts until the scope ends.
class tracked_wait_scope
{
public:
    explicit tracked_wait_scope(const tracking_names& names) noexcept : previous_(current_tracked_wait())
    {
        current_tracked_wait() = &names;
    }

    tracked_wait_scope(const tracked_wait_scope&) = delete;
    tracked_wait_scope& operator=(const tracked_wait_scope&) = delete;

    ~tracked_wait_scope() { current_tracked_wait() = previous_; }

private:
    const tracking_names* previous_;
};

// Records the creation of `op`, a queued wait, under the name of the wait being started.
template <class Op, class IoExecutor>
void track_creation(Op& op, const IoExecutor& io_ex)
{
    static const tracking_names unnamed;
    const tracking_names* wait = current_tracked_wait();
    const tracking_names& names = wait ? *wait : unnamed;
    BOOST_ASIO_HANDLER_CREATION(
        (boost::asio::query(io_ex, boost::asio::execution::context), op, names.object,
         const_cast<void*>(names.address ? names.address : static_cast<const void*>(&op)), 0,
         names.operation));
}

#else

class tracked_wait_scope
{
public:
    explicit tracked_wait_scope(const tracking_names&) noexcept {}
    tracked_wait_scope(const tracked_wait_scope&) = delete;
    tracked_wait_scope& operator=(const tracked_wait_scope&) = delete;
};

template <class Op, class IoExecutor>
void track_creation(Op&, const IoExecutor&) noexcept
{
}

#endif

} // namespace asio_sync::detail

#endif // ASIO_SYNC_DETAIL_HANDLER_TRACKING_HPP
