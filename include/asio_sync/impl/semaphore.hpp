// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_IMPL_SEMAPHORE_HPP
#define ASIO_SYNC_IMPL_SEMAPHORE_HPP

#include <boost/asio/execution/context.hpp>
#include <boost/asio/query.hpp>
#include <boost/core/no_exceptions_support.hpp>
#include <boost/throw_exception.hpp>

#include <chrono>
#include <stdexcept>
#include <utility>

namespace asio_sync {

template <class Executor>
template <class Grant, class Timeout>
class basic_semaphore<Executor>::initiate_async_acquire
{
public:
    using executor_type = Executor;
    using grant_type = Grant;

    initiate_async_acquire(basic_semaphore* self, const Grant& grant, Timeout timeout) noexcept
        : self_(self), grant_(grant), timeout_(timeout)
    {
    }

    const executor_type& get_executor() const noexcept { return self_->get_executor(); }

    detail::semaphore_core<>& core() const noexcept { return self_->impl_.core; }

    const Grant& grant() const noexcept { return grant_; }

    template <class Handler>
    void operator()(Handler&& handler, std::size_t n) const
    {
        self_->start_acquire(std::decay_t<Handler>(std::forward<Handler>(handler)), n, grant_, timeout_);
    }

private:
    basic_semaphore* self_;
    Grant grant_;
    Timeout timeout_;
};

template <class Executor>
basic_semaphore<Executor>::basic_semaphore(const executor_type& ex, std::size_t initial_permits)
    : executor_(ex), impl_(initial_permits)
{
    boost::asio::execution_context& ctx = boost::asio::query(executor_, boost::asio::execution::context);
    boost::asio::use_service<detail::semaphore_service>(ctx).add(impl_);
}

template <class Executor>
basic_semaphore<Executor>::basic_semaphore(const executor_type& ex, std::size_t initial_permits,
                                           std::size_t bound)
    : executor_(ex), impl_(initial_permits, bound)
{
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
template <class Handler, class Grant, class Timeout>
void basic_semaphore<Executor>::start_other_acquire(Handler handler, std::size_t n, const Grant& grant,
                                                    Timeout timeout)
{
    constexpr bool timed = std::is_same_v<Timeout, timeout_type>;
    using op_type = std::conditional_t<timed, detail::timed_acquire_op<Handler, Executor, Grant>,
                                       detail::acquire_op<Handler, Executor, Grant>>;
    using cancellation_type = detail::acquire_cancellation<detail::semaphore_core<>>;

    // try_acquire(n) has failed: n is more than the counter holds, someone is queued, or closed.
    if (n > impl_.core.capacity())
        return detail::post_completion(std::move(handler), executor_, grant, error::too_many_permits, n);
    if (n == 0) // try_acquire(0) fails only once closed
        return detail::post_completion(std::move(handler), executor_, grant, error::closed, n);

    op_type* op;
    if constexpr (timed)
        op = op_type::create(std::move(handler), executor_, grant, impl_);
    else
        op = op_type::create(std::move(handler), executor_, grant);
    // A timed operation stays alive until initiated() (its initiator's reference).
    const auto initiated = [&](bool queued) {
        if constexpr (timed)
            op->initiated(queued, timeout);
    };
    auto& slot = op->slot();
    if (slot.is_connected())
    {
        // Installed before the waiter is visible to other threads, so no grant can race it.
        BOOST_TRY
        {
            op->cancel_ref = slot.template emplace<cancellation_type>(impl_.core, op).waiter_ref();
        }
        BOOST_CATCH(...)
        {
            op->destroy();
            initiated(false);
            BOOST_RETHROW
        }
        BOOST_CATCH_END
    }
    const detail::waiter_outcome decided = impl_.core.enqueue(*op, n);
    if (decided != detail::waiter_outcome::pending)
    {
        // Decided without queueing: nobody else knows of the operation yet. If its completion
        // cannot be submitted, the permits are back and the exception reaches the caller.
        if (slot.is_connected())
            slot.clear();
        BOOST_TRY
        {
            op->complete(detail::to_error_code(decided), detail::relation::continuation);
        }
        BOOST_CATCH(...)
        {
            initiated(false);
            BOOST_RETHROW
        }
        BOOST_CATCH_END
    }
    initiated(decided == detail::waiter_outcome::pending);
}

template <class Executor>
template <class Rep, class Period>
typename basic_semaphore<Executor>::timeout_type
basic_semaphore<Executor>::to_timeout(const std::chrono::duration<Rep, Period>& timeout)
{
    // Saturates instead of overflowing; the timer saturates again when it adds the current time.
    if (timeout <= timeout.zero())
        return timeout_type::zero();
    if (std::chrono::duration<double>(timeout) >= std::chrono::duration<double>(timeout_type::max()))
        return timeout_type::max();
    return std::chrono::ceil<timeout_type>(timeout);
}

template <class Executor>
std::tuple<boost::system::error_code, typename basic_semaphore<Executor>::permit>
basic_semaphore<Executor>::permit_grant::operator()(boost::system::error_code ec) const
{
    return {ec, permit(*semaphore, ec ? 0 : n)};
}

template <class Executor>
auto basic_semaphore<Executor>::try_acquire_permit(std::size_t n) -> std::optional<permit>
{
    if (!impl_.core.try_acquire(n, true))
        return std::nullopt;
    return permit(*this, n);
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
        boost::throw_exception(std::overflow_error("asio_sync: add_permits would exceed max_permits"));
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
