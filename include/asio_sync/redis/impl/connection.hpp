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

#include <tuple>
#include <utility>

namespace asio_sync::redis {

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
    using op_type = detail::command_op<Handler, Executor>;

    if (const boost::system::error_code refused = command.rejection())
    {
        const auto alloc = asio_sync::detail::get_handler_allocator(handler);
        const auto ex = boost::asio::get_associated_executor(handler, executor_);
        asio_sync::detail::submit(
            ex,
            asio_sync::detail::completion<Handler, std::tuple<boost::system::error_code, reply>>(
                std::move(handler), {refused, reply()}),
            alloc, asio_sync::detail::relation::continuation);
        return;
    }

    const std::uint64_t id = impl_->new_id();
    op_type* op = op_type::create(std::move(handler), executor_, id, std::move(command));
    detail::command_op_ptr owned(op);
    auto slot = op->slot();
    if (slot.is_connected())
        slot.template emplace<detail::command_cancellation>(impl_, id);
    BOOST_TRY
    {
        impl_->execute(std::move(owned));
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

} // namespace asio_sync::redis

#endif // ASIO_SYNC_REDIS_IMPL_CONNECTION_HPP
