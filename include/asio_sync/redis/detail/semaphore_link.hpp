// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_REDIS_DETAIL_SEMAPHORE_LINK_HPP
#define ASIO_SYNC_REDIS_DETAIL_SEMAPHORE_LINK_HPP

// What the semaphore's engine (semaphore_engine.hpp) needs of its connection, and nothing more:
// send a command, or a command and the WAIT that confirms it; register a set-up command; subscribe
// to its channel; hear of each (re)connection and of the close; read two of the options. The
// engine holds one, shared: a permit may outlive the connection object, and its release then goes
// nowhere. connection_semaphore_link is the connection's; a test drives the engine through a
// scripted one.

#include <asio_sync/redis/connection.hpp>
#include <asio_sync/redis/detail/access.hpp>
#include <asio_sync/redis/detail/command.hpp>
#include <asio_sync/redis/detail/event_callback.hpp>
#include <asio_sync/redis/reply.hpp>

#include <boost/system/error_code.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>

namespace asio_sync::redis::detail {

class semaphore_link
{
public:
    using reply_handler = std::function<void(boost::system::error_code, const reply&)>;

    virtual ~semaphore_link() = default;

    // Sends `command`; `handler` hears its reply, through the connection's executor. Once the
    // connection is gone, nothing is sent and `handler` is destroyed.
    virtual void execute(formatted_command command, reply_handler handler) = 0;

    // Sends `command` and `wait`, which confirms it, in one step: nothing comes between them on
    // their link, and `wait` follows `command` through redirections. If `command` may not be
    // sent, `wait` goes alone.
    virtual void execute_confirmed(formatted_command command, reply_handler handler, formatted_command wait,
                                   reply_handler wait_handler) = 0;

    // Registers a command that runs on every connect, whose error reply is ignored.
    virtual void add_setup_command(formatted_command command) = 0;

    // Subscribes to `channel` (the callbacks run through the connection's executor) and registers
    // listeners called on the connection's own sequence each time the command link is
    // (re)established and once when the connection is closed. Returns what to give to stop().
    virtual std::uint64_t start(std::string channel, message_callback on_message,
                                event_callback on_subscribed, event_callback on_connected,
                                event_callback on_closed) = 0;

    // Undoes start(`id`).
    virtual void stop(std::uint64_t id) = 0;

    virtual std::chrono::milliseconds health_check_interval() const = 0;
    virtual bool uses_sentinels() const = 0;
};

// The link of a basic_connection: its implementation, held weakly.
template <class Executor>
class connection_semaphore_link final : public semaphore_link
{
public:
    explicit connection_semaphore_link(basic_connection<Executor>& connection)
        : impl_(access::shared_impl(connection)), executor_(connection.get_executor()),
          health_check_interval_(access::impl(connection).health_check_interval()),
          uses_sentinels_(access::impl(connection).uses_sentinels())
    {
    }

    void execute(formatted_command command, reply_handler handler) override
    {
        if (const std::shared_ptr<connection_impl> impl = impl_.lock())
            start_command(impl, executor_, std::move(handler), std::move(command));
    }

    void execute_confirmed(formatted_command command, reply_handler handler, formatted_command wait,
                           reply_handler wait_handler) override
    {
        if (const std::shared_ptr<connection_impl> impl = impl_.lock())
            start_confirmed_command(impl, executor_, std::move(handler), std::move(command),
                                    std::move(wait_handler), std::move(wait));
    }

    void add_setup_command(formatted_command command) override
    {
        if (const std::shared_ptr<connection_impl> impl = impl_.lock())
            impl->add_setup_command(std::move(command), true);
    }

    std::uint64_t start(std::string channel, message_callback on_message, event_callback on_subscribed,
                        event_callback on_connected, event_callback on_closed) override
    {
        const std::shared_ptr<connection_impl> impl = impl_.lock();
        if (!impl)
            return 0;
        const std::uint64_t id = impl->new_id();
        impl->subscribe(id, std::move(channel), make_message_callback(std::move(on_message), executor_),
                        make_event_callback(std::move(on_subscribed), executor_));
        impl->add_connect_listener(id, std::move(on_connected));
        impl->add_close_listener(id, std::move(on_closed));
        return id;
    }

    void stop(std::uint64_t id) override
    {
        if (const std::shared_ptr<connection_impl> impl = impl_.lock())
        {
            impl->unsubscribe(id);
            impl->remove_connect_listener(id);
            impl->remove_close_listener(id);
        }
    }

    std::chrono::milliseconds health_check_interval() const override { return health_check_interval_; }
    bool uses_sentinels() const override { return uses_sentinels_; }

private:
    std::weak_ptr<connection_impl> impl_;
    Executor executor_;
    std::chrono::milliseconds health_check_interval_;
    bool uses_sentinels_;
};

} // namespace asio_sync::redis::detail

#endif // ASIO_SYNC_REDIS_DETAIL_SEMAPHORE_LINK_HPP
