// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_DETAIL_SUBMIT_HPP
#define ASIO_SYNC_DETAIL_SUBMIT_HPP

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/associated_allocator.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/execution/allocator.hpp>
#include <boost/asio/execution/blocking.hpp>
#include <boost/asio/execution/execute.hpp>
#include <boost/asio/execution/executor.hpp>
#include <boost/asio/execution/outstanding_work.hpp>
#include <boost/asio/execution/relationship.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/prefer.hpp>
#include <boost/asio/recycling_allocator.hpp>
#include <boost/asio/require.hpp>

#include <type_traits>
#include <utility>

namespace asio_sync::detail {

template <class Handler>
using handler_allocator_t =
    boost::asio::associated_allocator_t<Handler, boost::asio::recycling_allocator<void>>;

template <class Handler>
handler_allocator_t<Handler> get_handler_allocator(const Handler& handler) noexcept
{
    return boost::asio::get_associated_allocator(handler, boost::asio::recycling_allocator<void>());
}

// The answer for a handler without an executor of its own.
struct no_associated_executor
{
};

// Whether a handler has an associated executor of its own; without one it completes on the I/O
// executor, which is known at compile time.
template <class Handler>
inline constexpr bool has_own_executor_v =
    !std::is_same_v<boost::asio::associated_executor_t<Handler, no_associated_executor>,
                    no_associated_executor>;

// The executor a handler completes on: its own, or the I/O executor itself, without a copy.
template <class Handler, class IoExecutor>
decltype(auto) handler_executor(const Handler& handler, const IoExecutor& io_ex)
{
    if constexpr (has_own_executor_v<Handler>)
        return boost::asio::get_associated_executor(handler, io_ex);
    else
        return (io_ex);
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

} // namespace asio_sync::detail

#endif // ASIO_SYNC_DETAIL_SUBMIT_HPP
