// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_REDIS_DETAIL_COMMAND_OP_HPP
#define ASIO_SYNC_REDIS_DETAIL_COMMAND_OP_HPP

#include <asio_sync/detail/acquire_op.hpp>
#include <asio_sync/detail/completion.hpp>
#include <asio_sync/detail/handler_work.hpp>
#include <asio_sync/detail/submit.hpp>
#include <asio_sync/redis/detail/command.hpp>
#include <asio_sync/redis/reply.hpp>

#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/system/error_code.hpp>

#include <cstdint>
#include <tuple>
#include <utility>

namespace asio_sync::redis::detail {

// Type-erased face of a command that waits for its reply. The connection owns it from the moment
// it is queued until it completes it or destroys it.
class command_op_base
{
public:
    enum class action
    {
        complete, // submit the handler with the error code and the reply
        destroy,  // destroy the handler without invoking it
    };

    // Frees the operation, then submits its handler through the handler's executor.
    void complete(boost::system::error_code ec, reply&& r) { func_(this, action::complete, ec, &r); }

    // Frees the operation and its handler without invoking it (context shutdown).
    void destroy() noexcept { func_(this, action::destroy, {}, nullptr); }

    std::uint64_t id() const noexcept { return id_; }

    formatted_command& command() noexcept { return command_; }

protected:
    using func_type = void (*)(command_op_base*, action, boost::system::error_code, reply*);

    command_op_base(func_type func, std::uint64_t id, formatted_command&& command) noexcept
        : func_(func), id_(id), command_(std::move(command))
    {
    }
    ~command_op_base() = default;

private:
    func_type func_;
    std::uint64_t id_;
    formatted_command command_;
};

// Owns a command until it is handed on: destroys it, without invoking its handler, if it is
// dropped.
class command_op_ptr
{
public:
    explicit command_op_ptr(command_op_base* op) noexcept : op_(op) {}
    command_op_ptr(command_op_ptr&& other) noexcept : op_(std::exchange(other.op_, nullptr)) {}
    command_op_ptr& operator=(command_op_ptr&&) = delete;
    ~command_op_ptr()
    {
        if (op_)
            op_->destroy();
    }

    command_op_base* get() const noexcept { return op_; }

    command_op_base* release() noexcept { return std::exchange(op_, nullptr); }

private:
    command_op_base* op_;
};

// A command with its handler, allocated with the handler's associated allocator. Everything the
// completion needs is moved out before the operation's memory is freed, and the upcall runs on
// the handler's executor afterwards.
template <class Handler, class IoExecutor>
class command_op final : public command_op_base
{
public:
    using slot_type = boost::asio::associated_cancellation_slot_t<Handler>;

    static command_op* create(Handler&& handler, const IoExecutor& io_ex, std::uint64_t id,
                              formatted_command&& command)
    {
        return asio_sync::detail::allocate_op<command_op>(asio_sync::detail::get_handler_allocator(handler),
                                                          std::move(handler), io_ex, id, std::move(command));
    }

    command_op(Handler&& handler, const IoExecutor& io_ex, std::uint64_t id, formatted_command&& command)
        : command_op_base(&do_func, id, std::move(command)), handler_(std::move(handler)),
          work_(handler_, io_ex), slot_(boost::asio::get_associated_cancellation_slot(handler_))
    {
    }

    slot_type& slot() noexcept { return slot_; }

private:
    static void do_func(command_op_base* base, action what, boost::system::error_code ec, reply* r)
    {
        auto* op = static_cast<command_op*>(base);
        Handler handler(std::move(op->handler_));
        asio_sync::detail::handler_work<Handler, IoExecutor> work(std::move(op->work_));
        slot_type slot(std::move(op->slot_));
        const auto alloc = asio_sync::detail::get_handler_allocator(handler);
        asio_sync::detail::deallocate_op(op, alloc);
        if (what == action::complete)
            work.complete(
                asio_sync::detail::completion<Handler, std::tuple<boost::system::error_code, reply>>(
                    std::move(handler), {ec, std::move(*r)}, std::move(slot)),
                alloc, asio_sync::detail::relation::fork);
    }

    Handler handler_;
    asio_sync::detail::handler_work<Handler, IoExecutor> work_;
    slot_type slot_;
};

} // namespace asio_sync::redis::detail

#endif // ASIO_SYNC_REDIS_DETAIL_COMMAND_OP_HPP
