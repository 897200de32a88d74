// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_IMPL_SEMAPHORE_HPP
#define ASIO_SYNC_IMPL_SEMAPHORE_HPP

#include <asio_sync/detail/access.hpp>
#include <asio_sync/detail/acquire_op.hpp>
#include <asio_sync/detail/semaphore_core.hpp>
#include <asio_sync/detail/semaphore_service.hpp>
#include <asio_sync/detail/submit.hpp>
#include <asio_sync/detail/timed_acquire_op.hpp>
#include <asio_sync/detail/waiter_list.hpp>

#include <boost/asio/execution/context.hpp>
#include <boost/asio/execution_context.hpp>
#include <boost/asio/query.hpp>
#include <boost/config.hpp>
#include <boost/system/error_code.hpp>
#include <boost/throw_exception.hpp>

#include <atomic>
#include <cstddef>
#include <optional>
#include <stdexcept>
#include <tuple>
#include <type_traits>
#include <utility>

namespace asio_sync {

template <class Executor>
template <class Grant, class Deadline>
class basic_semaphore<Executor>::initiate_async_acquire
{
public:
    using executor_type = Executor;
    using grant_type = Grant;

    initiate_async_acquire(basic_semaphore* self, const Grant& grant, Deadline expiry) noexcept
        : self_(self), grant_(grant), deadline_(expiry)
    {
    }

    const executor_type& get_executor() const noexcept { return self_->get_executor(); }

    detail::semaphore_core<>& core() const noexcept { return self_->impl_.core; }

    detail::service_entry& entry() const noexcept { return self_->impl_; }

    const Grant& grant() const noexcept { return grant_; }

    template <class Handler>
    void operator()(Handler&& handler, std::size_t n) const
    {
        detail::start_acquire_until(self_->impl_.core, self_->impl_,
                                    std::decay_t<Handler>(std::forward<Handler>(handler)), self_->executor_,
                                    n, grant_, deadline_);
    }

private:
    basic_semaphore* self_;
    Grant grant_;
    Deadline deadline_;
};

template <class Executor>
basic_semaphore<Executor>::basic_semaphore(const executor_type& ex, std::size_t initial_permits)
    : executor_(ex), impl_(initial_permits)
{
    impl_.names = {"semaphore", "async_acquire", this};
    boost::asio::execution_context& ctx = boost::asio::query(executor_, boost::asio::execution::context);
    boost::asio::use_service<detail::semaphore_service>(ctx).add(impl_);
}

template <class Executor>
basic_semaphore<Executor>::basic_semaphore(const executor_type& ex, std::size_t initial_permits,
                                           std::size_t bound)
    : executor_(ex), impl_(initial_permits, bound)
{
    impl_.names = {"semaphore", "async_acquire", this};
    boost::asio::execution_context& ctx = boost::asio::query(executor_, boost::asio::execution::context);
    boost::asio::use_service<detail::semaphore_service>(ctx).add(impl_);
}

template <class Executor>
basic_semaphore<Executor>::~basic_semaphore()
{
    detail::waiter_list done;
    impl_.core.abort_all(detail::waiter_outcome::aborted, false, done);
    if (detail::semaphore_service* service = impl_.service.load(std::memory_order_acquire))
        service->remove(impl_);
    detail::complete_all(done);
}

template <class Executor>
std::tuple<boost::system::error_code, typename basic_semaphore<Executor>::permit>
basic_semaphore<Executor>::permit_grant::operator()(boost::system::error_code ec) const
{
    return {ec, detail::access::construct<permit>(*semaphore, ec ? 0 : n)};
}

template <class Executor>
auto basic_semaphore<Executor>::try_acquire_permit(std::size_t n) -> std::optional<permit>
{
    if (!impl_.core.try_acquire(n, true))
        return std::nullopt;
    return detail::access::construct<permit>(*this, n);
}

template <class Executor>
BOOST_FORCEINLINE void basic_semaphore<Executor>::release(std::size_t n)
{
    detail::waiter_list done;
    if (!impl_.core.release(n, done))
        throw_release_overflow();
    detail::complete_all(done, detail::relation::continuation);
}

template <class Executor>
void basic_semaphore<Executor>::throw_release_overflow() const
{
    boost::throw_exception(std::overflow_error(impl_.core.bounded()
                                                   ? "asio_sync: release would exceed the semaphore's bound"
                                                   : "asio_sync: release would exceed max_permits"));
}

template <class Executor>
bool basic_semaphore<Executor>::try_release(std::size_t n) noexcept
{
    detail::waiter_list done;
    const bool released = impl_.core.release(n, done);
    detail::complete_all(done, detail::relation::continuation);
    return released;
}

template <class Executor>
void basic_semaphore<Executor>::give_back(std::size_t n)
{
    detail::waiter_list done;
    impl_.core.give_back(n, done);
    detail::complete_all(done, detail::relation::continuation);
}

template <class Executor>
void basic_semaphore<Executor>::add_permits(std::size_t n)
{
    detail::waiter_list done;
    if (!impl_.core.add(n, done))
        boost::throw_exception(std::overflow_error(impl_.core.bounded()
                                                       ? "asio_sync: add_permits would exceed max_bound"
                                                       : "asio_sync: add_permits would exceed max_permits"));
    detail::complete_all(done, detail::relation::continuation);
}

template <class Executor>
std::size_t basic_semaphore<Executor>::forget_permits(std::size_t n)
{
    return impl_.core.forget(n);
}

template <class Executor>
void basic_semaphore<Executor>::reduce_permits(std::size_t n)
{
    detail::waiter_list done;
    impl_.core.reduce(n, done);
    detail::complete_all(done);
}

template <class Executor>
std::size_t basic_semaphore<Executor>::cancel()
{
    detail::waiter_list done;
    const std::size_t count = impl_.core.abort_all(detail::waiter_outcome::aborted, false, done);
    detail::complete_all(done);
    return count;
}

template <class Executor>
void basic_semaphore<Executor>::close()
{
    detail::waiter_list done;
    impl_.core.abort_all(detail::waiter_outcome::closed, true, done);
    detail::complete_all(done);
}

} // namespace asio_sync

#endif // ASIO_SYNC_IMPL_SEMAPHORE_HPP
