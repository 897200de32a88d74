// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_DETAIL_UPGRADE_LOCK_OP_HPP
#define ASIO_SYNC_DETAIL_UPGRADE_LOCK_OP_HPP

#include <asio_sync/call_site.hpp>
#include <asio_sync/detail/acquire_awaitable.hpp>
#include <asio_sync/detail/acquire_op.hpp>
#include <asio_sync/detail/deadline.hpp>
#include <asio_sync/detail/semaphore_service.hpp>
#include <asio_sync/detail/timed_acquire_op.hpp>
#include <asio_sync/detail/upgrade_core.hpp>
#include <asio_sync/detail/waiter_list.hpp>

#include <boost/asio/async_result.hpp>
#include <boost/asio/execution_context.hpp>
#include <boost/system/error_code.hpp>

#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

namespace asio_sync::detail {

// The executor-independent state of an upgrade mutex, registered with its context's service from
// construction to destruction; destroying it aborts the locks still queued.
struct upgrade_impl : service_entry
{
    explicit upgrade_impl(boost::asio::execution_context& ctx) : service_entry(&abort)
    {
        boost::asio::use_service<semaphore_service>(ctx).add(*this);
    }

    upgrade_impl(const upgrade_impl&) = delete;
    upgrade_impl& operator=(const upgrade_impl&) = delete;

    ~upgrade_impl()
    {
        waiter_list done;
        core.abort_all(waiter_outcome::aborted, done);
        if (semaphore_service* owner = service.load(std::memory_order_acquire))
            owner->remove(*this);
        complete_all(done);
    }

    // Gives `mode` back; the locks it lets through complete, the first as the caller's
    // continuation.
    void release(std::size_t mode)
    {
        waiter_list done;
        core.release(mode, done);
        complete_all(done, relation::continuation);
    }

    upgrade_core<> core;

private:
    static void abort(service_entry& self, waiter_list& doomed)
    {
        static_cast<upgrade_impl&>(self).core.abort_all(waiter_outcome::aborted, doomed);
    }
};

// The grant (see grant.hpp) of a plain lock of an upgrade mutex: the handler receives only the
// error code; a lock that cannot be delivered is given back.
struct mode_grant
{
    static constexpr bool to_permit = false;

    upgrade_impl* impl;

    std::tuple<boost::system::error_code> operator()(boost::system::error_code ec) const noexcept
    {
        return std::tuple<boost::system::error_code>(ec);
    }

    void undelivered(std::size_t mode) const noexcept { impl->release(mode); }
};

// A lock of one mode of an upgrade mutex, with a deadline or without: an acquire of `mode` from
// its engine, so the shared acquire machinery does the rest.
template <class Executor, class Grant, class Deadline>
class initiate_upgrade_lock
{
public:
    using executor_type = Executor;
    using grant_type = Grant;

    initiate_upgrade_lock(const Executor& ex, upgrade_impl& impl, const Grant& grant,
                          Deadline expiry) noexcept
        : executor_(&ex), impl_(&impl), grant_(grant), deadline_(expiry)
    {
    }

    const executor_type& get_executor() const noexcept { return *executor_; }

    upgrade_core<>& core() const noexcept { return impl_->core; }

    service_entry& entry() const noexcept { return *impl_; }

    const Grant& grant() const noexcept { return grant_; }

    template <class Handler>
    void operator()(Handler&& handler, std::size_t mode) const
    {
        start_acquire_until(impl_->core, *impl_, std::decay_t<Handler>(std::forward<Handler>(handler)),
                            *executor_, mode, grant_, deadline_);
    }

private:
    const Executor* executor_;
    upgrade_impl* impl_;
    Grant grant_;
    Deadline deadline_;
};

template <class Signature, class Token, class Executor, class Grant, class Deadline>
auto async_upgrade_lock(const Executor& ex, upgrade_impl& impl, std::size_t mode, const Grant& grant,
                        Token&& token, Deadline expiry, [[maybe_unused]] call_site where)
{
    initiate_upgrade_lock<Executor, Grant, Deadline> initiation(ex, impl, grant, expiry);
#if defined(BOOST_ASIO_HAS_CO_AWAIT)
    if constexpr (!std::is_void_v<awaitable_executor_t<Token>>)
        return acquire_awaitable<Signature, std::decay_t<Token>>(mode, initiation, where);
    else
#endif
        return boost::asio::async_initiate<Token, Signature>(initiation, token, mode);
}

} // namespace asio_sync::detail

#endif // ASIO_SYNC_DETAIL_UPGRADE_LOCK_OP_HPP
