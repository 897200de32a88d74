// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_DETAIL_BARRIER_ARRIVAL_HPP
#define ASIO_SYNC_DETAIL_BARRIER_ARRIVAL_HPP

#include <asio_sync/detail/acquire_op.hpp>
#include <asio_sync/detail/barrier_core.hpp>
#include <asio_sync/detail/grant.hpp>
#include <asio_sync/detail/start_acquire.hpp>
#include <asio_sync/detail/waiter_list.hpp>

#include <boost/core/no_exceptions_support.hpp>
#include <boost/throw_exception.hpp>

#include <stdexcept>
#include <type_traits>
#include <utility>

namespace asio_sync::detail {

[[noreturn]] inline void throw_no_arrival_expected()
{
    boost::throw_exception(std::logic_error("asio_sync: barrier arrival while no participant is left"));
}

// Starts an arrival that waits for its phase. It always allocates its operation (with the
// handler's allocator): whether it is the last arrival is decided under the barrier's lock, with
// the waiter in hand. The last arrival runs the completion function on this thread, then
// completes the waiters of its phase and itself, never inline.
template <class Handler, class IoExecutor>
void start_barrier_arrival(barrier_impl& impl, Handler handler, const IoExecutor& io_ex)
{
    using op_type = acquire_op<Handler, IoExecutor, phase_grant>;

    op_type* op = op_type::create(std::move(handler), io_ex, phase_grant());
    install_cancellation(impl.core, op);
    waiter_list released;
    const arrival arrived = impl.core.arrive_and_wait(*op, released);
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
        op->destroy();
        BOOST_RETHROW
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

template <class Executor>
class initiate_barrier_arrival
{
public:
    using executor_type = Executor;

    initiate_barrier_arrival(const Executor& ex, barrier_impl& impl) noexcept : executor_(&ex), impl_(&impl)
    {
    }

    const executor_type& get_executor() const noexcept { return *executor_; }

    template <class Handler>
    void operator()(Handler&& handler) const
    {
        start_barrier_arrival(*impl_, std::decay_t<Handler>(std::forward<Handler>(handler)), *executor_);
    }

private:
    const Executor* executor_;
    barrier_impl* impl_;
};

} // namespace asio_sync::detail

#endif // ASIO_SYNC_DETAIL_BARRIER_ARRIVAL_HPP
