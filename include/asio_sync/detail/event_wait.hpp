// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_DETAIL_EVENT_WAIT_HPP
#define ASIO_SYNC_DETAIL_EVENT_WAIT_HPP

#include <asio_sync/call_site.hpp>
#include <asio_sync/detail/acquire_awaitable.hpp>
#include <asio_sync/detail/acquire_op.hpp>
#include <asio_sync/detail/deadline.hpp>
#include <asio_sync/detail/event_core.hpp>
#include <asio_sync/detail/grant.hpp>
#include <asio_sync/detail/timed_acquire_op.hpp>

#include <boost/asio/async_result.hpp>
#include <boost/system/error_code.hpp>

#include <cstddef>
#include <type_traits>
#include <utility>

namespace asio_sync::detail {

// A wait on an event_impl is an acquire of one signal from its engine, which a set never runs
// out of: the shared acquire machinery does the rest, with a deadline or without
// (detail/deadline.hpp).
template <class Executor, class Deadline = no_deadline>
class initiate_event_wait
{
public:
    using executor_type = Executor;
    using grant_type = signal_grant;

    initiate_event_wait(const Executor& ex, event_impl& impl, Deadline expiry = Deadline()) noexcept
        : executor_(&ex), impl_(&impl), deadline_(expiry)
    {
    }

    const executor_type& get_executor() const noexcept { return *executor_; }

    event_core<>& core() const noexcept { return impl_->core; }

    service_entry& entry() const noexcept { return *impl_; }

    grant_type grant() const noexcept { return {}; }

    template <class Handler>
    void operator()(Handler&& handler, std::size_t n = 1) const
    {
        start_acquire_until(impl_->core, *impl_, std::decay_t<Handler>(std::forward<Handler>(handler)),
                            *executor_, n, grant_type(), deadline_);
    }

private:
    const Executor* executor_;
    event_impl* impl_;
    Deadline deadline_;
};

template <class Token, class Executor, class Deadline>
auto async_event_wait(const Executor& ex, event_impl& impl, Token&& token, Deadline expiry,
                      [[maybe_unused]] call_site where)
{
    using signature = void(boost::system::error_code);
    initiate_event_wait<Executor, Deadline> initiation(ex, impl, expiry);
#if defined(BOOST_ASIO_HAS_CO_AWAIT)
    if constexpr (!std::is_void_v<awaitable_executor_t<Token>>)
        return acquire_awaitable<signature, std::decay_t<Token>>(1, initiation, where);
    else
#endif
        return boost::asio::async_initiate<Token, signature>(initiation, token);
}

} // namespace asio_sync::detail

#endif // ASIO_SYNC_DETAIL_EVENT_WAIT_HPP
