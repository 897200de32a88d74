// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_REDIS_DETAIL_COMPOSED_CALL_HPP
#define ASIO_SYNC_REDIS_DETAIL_COMPOSED_CALL_HPP

#include <asio_sync/detail/completion.hpp>
#include <asio_sync/detail/handler_work.hpp>
#include <asio_sync/detail/submit.hpp>
#include <asio_sync/redis/reply.hpp>

#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associator.hpp>
#include <boost/asio/cancellation_state.hpp>
#include <boost/system/error_code.hpp>

#include <tuple>
#include <type_traits>
#include <utility>

namespace asio_sync::redis::detail {

// A composed operation made of the connection's commands, in place of boost::asio::async_compose:
// the body is called with the operation (`self`) to start, then with each command's completion, and
// either hands `self` to the next command or calls `self.complete(...)`. Each command completes the
// operation on the I/O executor, with the final handler's allocator. The commands get a child of
// the handler's cancellation slot, which passes every type on and remembers it: a cancellation
// emitted between two commands finds none to cancel, so a body checks `self.cancelled()` before it
// starts another. complete() submits the handler to its associated executor, as the commands do,
// with the work tracked from initiation until then. So the next command is never started from the
// handler's executor: from the system executor of use_future, its initiation could still be
// returning when another thread has completed it and the caller has destroyed the connection. And
// nothing counts as work on the I/O executor once the handler is submitted: async_compose (Boost
// 1.81) keeps that work until the operation is destroyed, after the handler has returned, which
// races whoever the handler lets destroy the context. A body must hold nothing that touches the I/O
// executor's context when destroyed, for the same reason.
template <class Handler, class IoExecutor, class Body, class Signature>
class composed_call;

template <class Handler, class IoExecutor, class Body, class... Args>
class composed_call<Handler, IoExecutor, Body, void(Args...)>
{
public:
    using executor_type = IoExecutor;
    using cancellation_slot_type = boost::asio::cancellation_slot;

    composed_call(Handler&& handler, const IoExecutor& io_ex, Body&& body)
        : handler_(std::move(handler)), work_(handler_, io_ex), io_ex_(io_ex), body_(std::move(body)),
          state_(boost::asio::get_associated_cancellation_slot(handler_),
                 boost::asio::enable_total_cancellation())
    {
    }

    executor_type get_executor() const noexcept { return io_ex_; }

    cancellation_slot_type get_cancellation_slot() const noexcept { return state_.slot(); }

    // Whether a cancellation was emitted since the start.
    bool cancelled() const noexcept { return state_.cancelled() != boost::asio::cancellation_type::none; }

    const Handler& handler() const noexcept { return handler_; }

    void start() { body_(*this); }

    void operator()(boost::system::error_code ec, reply r) { body_(*this, ec, std::move(r)); }

    void complete(Args... args)
    {
        const auto alloc = asio_sync::detail::get_handler_allocator(handler_);
        asio_sync::detail::handler_work<Handler, IoExecutor> work(std::move(work_));
        // The handler's slot holds the child's state until the handler's executor detaches it.
        auto slot = boost::asio::get_associated_cancellation_slot(handler_);
        work.complete(asio_sync::detail::completion<Handler, std::tuple<Args...>>(
                          std::move(handler_), std::tuple<Args...>(std::move(args)...), std::move(slot)),
                      alloc, asio_sync::detail::relation::fork);
    }

private:
    Handler handler_;
    asio_sync::detail::handler_work<Handler, IoExecutor> work_;
    IoExecutor io_ex_;
    Body body_;
    boost::asio::cancellation_state state_;
};

// Starts `body` as a composed operation on `io_ex` that completes `handler` with `Signature`.
template <class Signature, class Handler, class IoExecutor, class Body>
void start_composed_call(Handler&& handler, const IoExecutor& io_ex, Body body)
{
    composed_call<std::decay_t<Handler>, IoExecutor, Body, Signature>(std::forward<Handler>(handler), io_ex,
                                                                      std::move(body))
        .start();
}

} // namespace asio_sync::redis::detail

namespace boost::asio {

// The allocator is the handler's; the executor and the cancellation slot are the nested ones.
template <template <class, class> class Associator, class Handler, class IoExecutor, class Body,
          class Signature, class DefaultCandidate>
struct associator<Associator, asio_sync::redis::detail::composed_call<Handler, IoExecutor, Body, Signature>,
                  DefaultCandidate> : Associator<Handler, DefaultCandidate>
{
    static typename Associator<Handler, DefaultCandidate>::type
    get(const asio_sync::redis::detail::composed_call<Handler, IoExecutor, Body, Signature>& h) noexcept
    {
        return Associator<Handler, DefaultCandidate>::get(h.handler());
    }

    static auto get(const asio_sync::redis::detail::composed_call<Handler, IoExecutor, Body, Signature>& h,
                    const DefaultCandidate& c) noexcept
        -> decltype(Associator<Handler, DefaultCandidate>::get(h.handler(), c))
    {
        return Associator<Handler, DefaultCandidate>::get(h.handler(), c);
    }
};

} // namespace boost::asio

#endif // ASIO_SYNC_REDIS_DETAIL_COMPOSED_CALL_HPP
