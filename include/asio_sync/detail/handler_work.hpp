// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_DETAIL_HANDLER_WORK_HPP
#define ASIO_SYNC_DETAIL_HANDLER_WORK_HPP

#include <asio_sync/detail/submit.hpp>

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/execution/outstanding_work.hpp>
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

} // namespace asio_sync::detail

#endif // ASIO_SYNC_DETAIL_HANDLER_WORK_HPP
