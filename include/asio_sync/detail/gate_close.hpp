// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_DETAIL_GATE_CLOSE_HPP
#define ASIO_SYNC_DETAIL_GATE_CLOSE_HPP

#include <asio_sync/detail/acquire_op.hpp>
#include <asio_sync/detail/event_core.hpp>
#include <asio_sync/detail/deadline.hpp>
#include <asio_sync/detail/gate_count.hpp>
#include <asio_sync/detail/grant.hpp>
#include <asio_sync/detail/timed_acquire_op.hpp>

#include <type_traits>
#include <utility>

namespace asio_sync::detail {

// A close of a gate: closes the count when the operation starts (a deferred close closes nothing
// until it is launched), drains the gate if no guard is alive, then waits for the drain, which is
// a wait on an event that only the drain sets, with a deadline or without (detail/deadline.hpp).
template <class Executor, class Deadline = no_deadline>
class initiate_gate_close
{
public:
    using executor_type = Executor;

    initiate_gate_close(const Executor& ex, gate_count<>& count, event_impl& drained,
                        Deadline expiry = Deadline()) noexcept
        : executor_(&ex), count_(&count), drained_(&drained), deadline_(expiry)
    {
    }

    const executor_type& get_executor() const noexcept { return *executor_; }

    template <class Handler>
    void operator()(Handler&& handler) const
    {
        if (count_->close())
            drained_->set();
        start_acquire_until(drained_->core, *drained_, std::decay_t<Handler>(std::forward<Handler>(handler)),
                            *executor_, 1, signal_grant(), deadline_);
    }

private:
    const Executor* executor_;
    gate_count<>* count_;
    event_impl* drained_;
    Deadline deadline_;
};

} // namespace asio_sync::detail

#endif // ASIO_SYNC_DETAIL_GATE_CLOSE_HPP
