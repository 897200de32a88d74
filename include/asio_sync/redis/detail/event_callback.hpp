// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_REDIS_DETAIL_EVENT_CALLBACK_HPP
#define ASIO_SYNC_REDIS_DETAIL_EVENT_CALLBACK_HPP

#include <asio_sync/detail/submit.hpp>

#include <boost/asio/associated_executor.hpp>

#include <functional>
#include <memory>
#include <string>
#include <utility>

namespace asio_sync::redis::detail {

// A callback that may run many times (a pub/sub message, a subscription that became active, a
// reconnection). Calling it submits the callable to its associated executor: it never runs
// inside the connection's own handlers.
using event_callback = std::function<void()>;
using message_callback = std::function<void(std::string)>;

template <class Callable, class... Args>
class event_invoker
{
public:
    event_invoker(Callable&& f, const boost::asio::any_io_executor& default_ex)
        : target_(boost::asio::get_associated_executor(f, default_ex)),
          callable_(std::make_shared<Callable>(std::move(f)))
    {
    }

    void operator()(Args... args) const
    {
        asio_sync::detail::submit(
            target_, [callable = callable_, args...]() mutable { (*callable)(std::move(args)...); },
            asio_sync::detail::get_handler_allocator(*callable_), asio_sync::detail::relation::fork);
    }

private:
    boost::asio::associated_executor_t<Callable, boost::asio::any_io_executor> target_;
    std::shared_ptr<Callable> callable_; // shared by the queued calls: the callable need not be copyable
};

template <class Callable, class Executor>
event_callback make_event_callback(Callable f, const Executor& default_ex)
{
    return event_invoker<Callable>(std::move(f), boost::asio::any_io_executor(default_ex));
}

template <class Callable, class Executor>
message_callback make_message_callback(Callable f, const Executor& default_ex)
{
    return event_invoker<Callable, std::string>(std::move(f), boost::asio::any_io_executor(default_ex));
}

} // namespace asio_sync::redis::detail

#endif // ASIO_SYNC_REDIS_DETAIL_EVENT_CALLBACK_HPP
