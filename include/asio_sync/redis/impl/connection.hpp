// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_REDIS_IMPL_CONNECTION_HPP
#define ASIO_SYNC_REDIS_IMPL_CONNECTION_HPP

#include <asio_sync/detail/completion.hpp>
#include <asio_sync/detail/submit.hpp>
#include <asio_sync/redis/detail/command_op.hpp>

#include <boost/asio/associated_executor.hpp>
#include <boost/core/no_exceptions_support.hpp>

#include <memory>
#include <tuple>
#include <utility>

namespace asio_sync::redis {

namespace detail {

// The operation of a formatted command, on the implementation `impl` with the I/O executor `ex`,
// and `start` called with it; or, for a command that may not be sent, the handler completed with
// why, and `start` not called.
template <class Executor, class Handler, class Start>
void make_command(const std::shared_ptr<connection_impl>& impl, const Executor& ex, Handler handler,
                  formatted_command command, Start start)
{
    using op_type = command_op<Handler, Executor>;

    if (const boost::system::error_code refused = command.rejection())
    {
        const auto alloc = asio_sync::detail::get_handler_allocator(handler);
        const auto handler_ex = boost::asio::get_associated_executor(handler, ex);
        asio_sync::detail::submit(
            handler_ex,
            asio_sync::detail::completion<Handler, std::tuple<boost::system::error_code, reply>>(
                std::move(handler), {refused, reply()}),
            alloc, asio_sync::detail::relation::continuation);
        return;
    }

    const std::uint64_t id = impl->new_id();
    op_type* op = op_type::create(std::move(handler), ex, id, std::move(command));
    command_op_ptr owned(op);
    auto slot = op->slot();
    if (slot.is_connected())
        slot.template emplace<command_cancellation>(impl, id);
    BOOST_TRY
    {
        start(std::move(owned));
    }
    BOOST_CATCH(...)
    {
        // The operation is gone: so must be the cancellation handler that names it.
        if (slot.is_connected())
            slot.clear();
        BOOST_RETHROW
    }
    BOOST_CATCH_END
}

// What async_execute does with a formatted command: also the way of the semaphore's engine, which
// holds the implementation rather than the connection object.
template <class Executor, class Handler>
void start_command(const std::shared_ptr<connection_impl>& impl, const Executor& ex, Handler handler,
                   formatted_command command)
{
    make_command(impl, ex, std::move(handler), std::move(command),
                 [&impl](command_op_ptr op) { impl->execute(std::move(op)); });
}

// A command and the WAIT that confirms it, queued in one step, so that no other command comes
// between them on their link; the WAIT names the command, so that it follows it through
// redirections and no other. If the command may not be sent, the WAIT goes alone.
template <class Executor, class Handler, class WaitHandler>
void start_confirmed_command(const std::shared_ptr<connection_impl>& impl, const Executor& ex,
                             Handler handler, formatted_command command, WaitHandler wait_handler,
                             formatted_command wait)
{
    const bool refused = static_cast<bool>(command.rejection());
    make_command(impl, ex, std::move(handler), std::move(command), [&](command_op_ptr op) {
        wait.confirm(op.get()->id());
        make_command(impl, ex, std::move(wait_handler), std::move(wait), [&](command_op_ptr confirming) {
            impl->execute(std::move(op), std::move(confirming));
        });
    });
    if (refused)
        start_command(impl, ex, std::move(wait_handler), std::move(wait));
}

} // namespace detail

template <class Executor>
class basic_connection<Executor>::initiate_async_execute
{
public:
    using executor_type = Executor;

    explicit initiate_async_execute(basic_connection* self) noexcept : self_(self) {}

    const executor_type& get_executor() const noexcept { return self_->get_executor(); }

    template <class Handler>
    void operator()(Handler&& handler, detail::formatted_command command) const
    {
        self_->start_execute(std::decay_t<Handler>(std::forward<Handler>(handler)), std::move(command));
    }

private:
    basic_connection* self_;
};

template <class Executor>
basic_connection<Executor>::basic_connection(const executor_type& ex, const connection_options& options)
    : executor_(ex),
      impl_(std::make_shared<detail::connection_impl>(boost::asio::any_io_executor(ex), options))
{
    impl_->start();
}

template <class Executor>
basic_connection<Executor>::~basic_connection()
{
    impl_->close();
}

template <class Executor>
template <class Handler>
void basic_connection<Executor>::start_execute(Handler handler, detail::formatted_command command)
{
    detail::start_command(impl_, executor_, std::move(handler), std::move(command));
}

} // namespace asio_sync::redis

#endif // ASIO_SYNC_REDIS_IMPL_CONNECTION_HPP
