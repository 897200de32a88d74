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

// What async_execute does with a formatted command, on the implementation `impl` with the I/O
// executor `ex`: also the way of the semaphore's engine, which holds the implementation rather
// than the connection object.
template <class Executor, class Handler>
void start_command(const std::shared_ptr<connection_impl>& impl, const Executor& ex, Handler handler,
                   formatted_command command)
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
        impl->execute(std::move(owned));
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
