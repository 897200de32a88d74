// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_IMPL_MANUAL_RESET_EVENT_HPP
#define ASIO_SYNC_IMPL_MANUAL_RESET_EVENT_HPP

#include <asio_sync/detail/acquire_op.hpp>
#include <asio_sync/detail/event_core.hpp>
#include <asio_sync/detail/grant.hpp>
#include <asio_sync/detail/semaphore_service.hpp>
#include <asio_sync/detail/start_acquire.hpp>
#include <asio_sync/detail/waiter_list.hpp>

#include <boost/asio/execution/context.hpp>
#include <boost/asio/execution_context.hpp>
#include <boost/asio/query.hpp>

#include <atomic>
#include <cstddef>
#include <type_traits>
#include <utility>

namespace asio_sync {

// A wait is an acquire of one signal from the event's engine, which a set never runs out of.
template <class Executor>
class basic_manual_reset_event<Executor>::initiate_async_wait
{
public:
    using executor_type = Executor;
    using grant_type = detail::signal_grant;

    explicit initiate_async_wait(basic_manual_reset_event* self) noexcept : self_(self) {}

    const executor_type& get_executor() const noexcept { return self_->get_executor(); }

    detail::event_core<>& core() const noexcept { return self_->impl_.core; }

    grant_type grant() const noexcept { return {}; }

    template <class Handler>
    void operator()(Handler&& handler, std::size_t n = 1) const
    {
        detail::start_acquire<detail::acquire_op>(self_->impl_.core,
                                                  std::decay_t<Handler>(std::forward<Handler>(handler)),
                                                  self_->executor_, n, grant_type());
    }

private:
    basic_manual_reset_event* self_;
};

template <class Executor>
basic_manual_reset_event<Executor>::basic_manual_reset_event(const executor_type& ex, bool initially_set)
    : executor_(ex), impl_(initially_set)
{
    boost::asio::execution_context& ctx = boost::asio::query(executor_, boost::asio::execution::context);
    boost::asio::use_service<detail::semaphore_service>(ctx).add(impl_);
}

template <class Executor>
basic_manual_reset_event<Executor>::~basic_manual_reset_event()
{
    detail::waiter_list done;
    impl_.core.abort_all(detail::waiter_outcome::aborted, done);
    if (detail::semaphore_service* service = impl_.service.load(std::memory_order_acquire))
        service->remove(impl_);
    detail::complete_all(done);
}

template <class Executor>
void basic_manual_reset_event<Executor>::set()
{
    detail::waiter_list done;
    impl_.core.set(done);
    detail::complete_all(done, detail::relation::continuation);
}

template <class Executor>
std::size_t basic_manual_reset_event<Executor>::cancel()
{
    detail::waiter_list done;
    const std::size_t count = impl_.core.abort_all(detail::waiter_outcome::aborted, done);
    detail::complete_all(done);
    return count;
}

} // namespace asio_sync

#endif // ASIO_SYNC_IMPL_MANUAL_RESET_EVENT_HPP
