// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_DETAIL_BARRIER_ARRIVAL_HPP
#define ASIO_SYNC_DETAIL_BARRIER_ARRIVAL_HPP

#include <asio_sync/detail/acquire_awaitable.hpp>
#include <asio_sync/detail/acquire_op.hpp>
#include <asio_sync/detail/barrier_core.hpp>
#include <asio_sync/detail/deadline.hpp>
#include <asio_sync/detail/grant.hpp>
#include <asio_sync/detail/start_acquire.hpp>
#include <asio_sync/detail/timed_acquire_op.hpp>
#include <asio_sync/detail/waiter_list.hpp>

#include <boost/asio/async_result.hpp>
#include <boost/core/no_exceptions_support.hpp>
#include <boost/system/error_code.hpp>
#include <boost/throw_exception.hpp>

#include <cstddef>
#include <exception>
#include <stdexcept>
#include <tuple>
#include <type_traits>
#include <utility>

namespace asio_sync::detail {

[[noreturn]] inline void throw_no_arrival_expected()
{
    boost::throw_exception(std::logic_error("asio_sync: barrier arrival while no participant is left"));
}

// The operation of an arrival: a plain acquire_op, or with a deadline, one that holds its timer
// and withdraws the arrival when it expires, as a cancellation does.
template <class Handler, class IoExecutor>
acquire_op<Handler, IoExecutor, phase_grant>* create_arrival(barrier_impl&, Handler&& handler,
                                                             const IoExecutor& io_ex, no_deadline)
{
    return acquire_op<Handler, IoExecutor, phase_grant>::create(std::move(handler), io_ex, phase_grant());
}

template <class Handler, class IoExecutor, class Deadline>
auto create_arrival(barrier_impl& impl, Handler&& handler, const IoExecutor& io_ex, Deadline expiry)
{
    return timed_acquire_op<Handler, IoExecutor, phase_grant, barrier_core<>>::create(
        std::move(handler), io_ex, phase_grant(), impl.core, impl, deadline_of(expiry));
}

// Starts an arrival that waits for its phase, until `expiry` if it is a deadline. It always
// allocates its operation (with the handler's allocator): whether it is the last arrival is
// decided under the barrier's lock, with the waiter in hand. The last arrival runs the completion
// function on this thread, then completes the waiters of its phase and itself, never inline. With
// `failure`, what the function throws goes there and the arrival completes all the same, for a
// coroutine to rethrow it: an exception thrown by an initiation that runs once the coroutine has
// suspended would not reach it.
template <class Handler, class IoExecutor, class Deadline>
void start_barrier_arrival(barrier_impl& impl, Handler handler, const IoExecutor& io_ex,
                           std::exception_ptr* failure, Deadline expiry)
{
    auto* op = create_arrival(impl, std::move(handler), io_ex, expiry);
    install_cancellation(impl.core, op);
    waiter_list released;
    const arrival arrived = impl.core.arrive_and_wait(*op, released);
    // A waiting arrival starts its timer, if any; the others go on without one. The operation
    // stays alive until it completes or is destroyed below.
    op->initiated(arrived == arrival::counted);
    if (arrived == arrival::counted)
        return;
    auto& slot = op->slot();
    if (slot.is_connected())
        slot.clear();
    if (arrived == arrival::refused)
    {
        op->destroy();
        throw_no_arrival_expected();
    }
    // The completion function runs before any waiter of the phase continues. If it throws, the
    // others are released all the same, and this initiating function throws: its own handler is
    // destroyed without being invoked.
    BOOST_TRY
    {
        impl.finish_phase(released);
    }
    BOOST_CATCH(...)
    {
        if (!failure)
        {
            op->destroy();
            BOOST_RETHROW
        }
        *failure = std::current_exception();
    }
    BOOST_CATCH_END
    op->complete(boost::system::error_code(), relation::continuation);
}

// An arrival that does not wait.
inline void barrier_arrive_and_drop(barrier_impl& impl)
{
    waiter_list released;
    const arrival arrived = impl.core.arrive_and_drop(released);
    if (arrived == arrival::refused)
        throw_no_arrival_expected();
    if (arrived == arrival::completed_phase)
        impl.finish_phase(released);
}

template <class Executor, class Deadline = no_deadline>
class initiate_barrier_arrival
{
public:
    using executor_type = Executor;

    initiate_barrier_arrival(const Executor& ex, barrier_impl& impl, Deadline expiry,
                             std::exception_ptr* failure = nullptr) noexcept
        : executor_(&ex), impl_(&impl), deadline_(expiry), failure_(failure)
    {
    }

    const executor_type& get_executor() const noexcept { return *executor_; }

    template <class Handler>
    void operator()(Handler&& handler) const
    {
        start_barrier_arrival(*impl_, std::decay_t<Handler>(std::forward<Handler>(handler)), *executor_,
                              failure_, deadline_);
    }

private:
    const Executor* executor_;
    barrier_impl* impl_;
    Deadline deadline_;
    std::exception_ptr* failure_;
};

#if defined(BOOST_ASIO_HAS_CO_AWAIT)

template <class Token>
using phase_awaitable_value_t = decltype(awaitable_token<Token>::value(
    std::declval<std::tuple<boost::system::error_code, std::size_t>>()));

// `co_await barrier.async_arrive_and_wait(use_awaitable)` as the last arrival of its phase: the
// coroutine runs the completion function, releases the others and goes on without suspending,
// under the same budget as an immediate acquire (see acquire_awaitable). Otherwise the ordinary
// initiation runs, with the coroutine suspended first.
template <class Token, class Executor, class Deadline>
boost::asio::awaitable<phase_awaitable_value_t<Token>, typename awaitable_token<Token>::executor>
barrier_arrival_awaitable(const Executor& ex, barrier_impl& impl, Deadline expiry)
{
    if (immediate_acquires_in_a_row() >= immediate_acquire_budget)
    {
        immediate_acquires_in_a_row() = 0;
        co_await boost::asio::post(co_await boost::asio::this_coro::executor, boost::asio::deferred);
    }
    waiter_list released;
    std::size_t phase = 0;
    const arrival arrived = impl.core.try_arrive_last(phase, released);
    if (arrived == arrival::refused)
        throw_no_arrival_expected();
    if (arrived == arrival::completed_phase)
    {
        ++immediate_acquires_in_a_row();
        impl.finish_phase(released);
        co_return awaitable_token<Token>::value(
            std::tuple<boost::system::error_code, std::size_t>(boost::system::error_code(), phase));
    }
    // The arrival below suspends; if it turns out to be the last after all (others arrived in
    // the meantime), the completion function's exception comes back through `failure`.
    immediate_acquires_in_a_row() = 0;
    std::exception_ptr failure;
    auto deferred = awaitable_token<Token>::deferred();
    auto result = co_await boost::asio::async_initiate<decltype(deferred),
                                                       void(boost::system::error_code, std::size_t)>(
        initiate_barrier_arrival<Executor, Deadline>(ex, impl, expiry, &failure), deferred);
    if (failure)
        std::rethrow_exception(failure);
    co_return result;
}

#endif // defined(BOOST_ASIO_HAS_CO_AWAIT)

template <class Token, class Executor, class Deadline = no_deadline>
auto async_barrier_arrival(const Executor& ex, barrier_impl& impl, Token&& token,
                           Deadline expiry = Deadline())
{
#if defined(BOOST_ASIO_HAS_CO_AWAIT)
    if constexpr (!std::is_void_v<awaitable_executor_t<Token>>)
        return barrier_arrival_awaitable<std::decay_t<Token>>(ex, impl, expiry);
    else
#endif
        return boost::asio::async_initiate<Token, void(boost::system::error_code, std::size_t)>(
            initiate_barrier_arrival<Executor, Deadline>(ex, impl, expiry), token);
}

} // namespace asio_sync::detail

#endif // ASIO_SYNC_DETAIL_BARRIER_ARRIVAL_HPP
