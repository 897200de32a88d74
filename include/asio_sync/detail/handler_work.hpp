// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_DETAIL_HANDLER_WORK_HPP
#define ASIO_SYNC_DETAIL_HANDLER_WORK_HPP

#include <asio_sync/detail/submit.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/execution/outstanding_work.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/prefer.hpp>

#include <optional>
#include <type_traits>
#include <utility>

namespace asio_sync::detail {

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
    using handler_executor_type = boost::asio::associated_executor_t<Handler, IoExecutor>;
    static constexpr bool own_executor = has_own_executor_v<Handler>;

    struct no_work
    {
    };

    using io_work = std::conditional_t<own_executor, std::optional<tracked_executor_t<IoExecutor>>, no_work>;

public:
    handler_work(const Handler& handler, const IoExecutor& io_ex)
        : handler_work(handler_executor(handler, io_ex), io_ex)
    {
    }

    // Submits `f` through an untracked copy of the handler's executor: every copy of a tracked
    // executor (the properties submit applies make three) counts work again and uncounts it when
    // destroyed, on a counter all threads of the context share; this guard keeps the work counted
    // until the submission has queued `f`, which counts as work in its turn.
    template <class Function, class Allocator>
    void complete(Function&& f, const Allocator& alloc, relation how)
    {
#if !defined(BOOST_ASIO_NO_TYPEID)
        if constexpr (std::is_same_v<handler_executor_type, boost::asio::any_io_executor>)
        {
            if (const auto* io = handler_work_.template target<tracked_executor_t<io_context_executor>>())
                return submit(untracked(*io), std::forward<Function>(f), alloc, how);
        }
#endif
        submit(untracked(handler_work_), std::forward<Function>(f), alloc, how);
    }

private:
    using io_context_executor = boost::asio::io_context::executor_type;

    // The handler's executor is looked up once, for both.
    handler_work(const handler_executor_type& ex, const IoExecutor& io_ex)
        : io_work_(track_io(ex, io_ex)), handler_work_(track(ex))
    {
    }

    template <class Executor>
    static auto track(const Executor& ex)
    {
        return boost::asio::prefer(ex, boost::asio::execution::outstanding_work.tracked);
    }

    // An any_io_executor that holds an io_context executor (the usual case) gets the tracked
    // io_context executor, made directly rather than through the type erasure: complete() finds
    // it by type and submits through it without type erasure either.
    static boost::asio::any_io_executor track(const boost::asio::any_io_executor& ex)
    {
#if !defined(BOOST_ASIO_NO_TYPEID)
        if (const auto* io = ex.target<io_context_executor>())
            return boost::asio::any_io_executor(track(*io));
#endif
        return boost::asio::prefer(ex, boost::asio::execution::outstanding_work.tracked);
    }

    template <class Executor>
    static auto untracked(const Executor& ex)
    {
        return boost::asio::prefer(ex, boost::asio::execution::outstanding_work.untracked);
    }

    static io_work track_io(const handler_executor_type& ex, const IoExecutor& io_ex)
    {
        if constexpr (!own_executor)
            return no_work{};
        else if constexpr (std::is_same_v<handler_executor_type, IoExecutor>)
            return ex == io_ex ? io_work() : io_work(track(io_ex));
        else
            return track(io_ex);
    }

    io_work io_work_;
    tracked_executor_t<handler_executor_type> handler_work_;
};

} // namespace asio_sync::detail

#endif // ASIO_SYNC_DETAIL_HANDLER_WORK_HPP
