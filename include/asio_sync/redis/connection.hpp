// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_REDIS_CONNECTION_HPP
#define ASIO_SYNC_REDIS_CONNECTION_HPP

/// @file
/// A connection to a Redis server: asio_sync::redis::basic_connection and the
/// asio_sync::redis::connection alias.

#include <asio_sync/redis/connection_options.hpp>
#include <asio_sync/redis/detail/access.hpp>
#include <asio_sync/redis/detail/connection_impl.hpp>
#include <asio_sync/redis/error.hpp>
#include <asio_sync/redis/reply.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/execution_context.hpp>
#include <boost/system/error_code.hpp>

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>

namespace asio_sync::redis {

/// A connection to one Redis server, shared by everything in the process that talks to it.
///
/// It keeps two links to the server, each on its own socket, and keeps them up: when a link
/// drops, it reconnects after a delay that doubles with each failed attempt (see
/// `connection_options`), and repeats its set-up (`AUTH`, `SELECT`) on every connect. A health
/// check (`connection_options::health_check_interval`, on by default) writes a `PING` on each
/// link every interval and replaces a link whose `PING` goes unanswered for a whole interval,
/// even though its TCP connection stays open. Asio owns the sockets; hiredis is used only to
/// format commands and to parse replies.
///
/// - The **command link** carries `async_execute`. Commands are pipelined: all those waiting
///   are written in one batch, without waiting for earlier replies, and the replies are matched
///   to the commands in order. Commands issued while the link is down wait until it is back
///   (bound them with a timeout or a cancellation of your own).
/// - The **subscriber link** carries `subscribe`: it opens with the first subscription.
///   Messages published while it is down are lost; `on_subscribed` tells when to re-check.
///
/// With `connection_options::sentinels` the links find the primary through Redis Sentinel and
/// follow its failovers. With `connection_options::cluster_nodes` the connection speaks to a
/// Redis Cluster: one command link per primary it has commands for, each command sent to the
/// primary of its first key's slot, redirections (`MOVED`, `ASK`) followed and refusals during
/// a migration or a failover (`TRYAGAIN`, `CLUSTERDOWN`) sent again (see
/// docs/cluster/sentinel-and-cluster.md, "Redis Cluster"). The constructor throws `std::invalid_argument`
/// when both are given.
///
/// **Completion.** A handler is never invoked from inside `async_execute`, `close` or the
/// destructor. It runs through its associated executor (by default the connection's), as if by
/// `boost::asio::post`, and the operation keeps that executor's work outstanding until then.
/// The connection's own reads, writes and timers keep the execution context busy too: while a
/// connection exists, `io_context::run()` does not return on its own.
///
/// **Thread safety.** Every member function may be called concurrently from any thread: the
/// connection runs on an internal strand.
///
/// **Lifetime.** The connection must be destroyed before its execution context. Destroying it
/// closes it. Its internal handlers keep what they need alive, so it may be destroyed while
/// operations are pending.
///
/// **Not copyable, not movable:** objects built on the connection refer to it by address.
///
/// @tparam Executor The I/O executor: the default executor for completion handlers and
/// callbacks, and the executor the connection's internal strand and sockets run on. A standard
/// executor, such as `boost::asio::io_context::executor_type` or `boost::asio::any_io_executor`.
template <class Executor = boost::asio::any_io_executor>
class basic_connection
{
public:
    /// The type of the executor associated with the connection.
    using executor_type = Executor;

    /// Rebinds the connection to another executor type.
    ///
    /// @tparam OtherExecutor The executor type to rebind to.
    template <class OtherExecutor>
    struct rebind_executor
    {
        /// The connection type when rebound to the specified executor.
        using other = basic_connection<OtherExecutor>;
    };

    /// Identifies a subscription made with `subscribe`, for `unsubscribe`.
    enum class subscription_id : std::uint64_t
    {
    };

    /// Constructs a connection and starts connecting its command link.
    ///
    /// The constructor returns at once: connecting runs on the executor. Commands issued before
    /// the link is up wait for it.
    ///
    /// @param ex The I/O executor.
    /// @param options Where to connect, with which credentials, and how to retry.
    /// @throws boost::system::system_error if `options.unix_socket` is too long to be a unix
    /// socket path.
    /// @throws std::invalid_argument if `options` names both sentinels and cluster nodes.
    basic_connection(const executor_type& ex, const connection_options& options);

    /// Constructs a connection that uses the context's executor, and starts connecting.
    ///
    /// @tparam ExecutionContext An execution context, such as `boost::asio::io_context` or
    /// `boost::asio::thread_pool`, whose executor converts to `executor_type`.
    /// @param ctx The execution context; its `get_executor()` becomes the I/O executor.
    /// @param options Where to connect, with which credentials, and how to retry.
    /// @throws boost::system::system_error if `options.unix_socket` is too long to be a unix
    /// socket path.
    template <
        class ExecutionContext,
        std::enable_if_t<std::is_convertible_v<ExecutionContext&, boost::asio::execution_context&>, int> = 0>
    basic_connection(ExecutionContext& ctx, const connection_options& options)
        : basic_connection(executor_type(ctx.get_executor()), options)
    {
    }

    /// Not copyable (nor movable).
    basic_connection(const basic_connection&) = delete;
    /// Not copy-assignable (nor move-assignable).
    basic_connection& operator=(const basic_connection&) = delete;

    /// Destroys the connection: `close()`. Pending commands complete with
    /// `boost::asio::error::operation_aborted`, submitted from the connection's strand, never
    /// from inside the destructor.
    ~basic_connection();

    /// Returns the executor associated with the connection: the default executor of completion
    /// handlers and callbacks.
    const executor_type& get_executor() const noexcept { return executor_; }

    /// Sends a command and waits for its reply.
    ///
    /// The arguments are formatted at the call, so they need not outlive it; each is sent as
    /// bytes (a binary-safe bulk string). The command is queued behind those issued earlier,
    /// written with the others that are waiting once the command link is up and set up, and
    /// completed with its own reply: replies are matched to commands in order. A command issued
    /// while the link is down waits until it is back.
    ///
    /// Commands the server answers with no reply or with several (`SUBSCRIBE` and its relatives,
    /// `MONITOR`, `CLIENT REPLY`) are refused: use `subscribe`. Commands that change the state of
    /// the link (`SELECT`, `AUTH`, `RESET`, `QUIT`, `HELLO`) are not refused but are undone by
    /// the next reconnect, or break it: set the database and credentials in the options instead.
    /// A blocking command (`BLPOP`) holds back the replies of every command behind it.
    ///
    /// @par Completion signature
    /// `void(boost::system::error_code, asio_sync::redis::reply)`.
    ///
    /// @par Per-operation cancellation
    /// Through the handler's associated cancellation slot. A command not yet written leaves the
    /// queue and is never sent, for `boost::asio::cancellation_type::terminal`, `partial` and
    /// `total`. A command already written may have run: `terminal` and `partial` complete it with
    /// `operation_aborted` at once and its reply is dropped when it arrives; `total` is ignored,
    /// since the command cannot be taken back. A cancellation that arrives after the reply does
    /// nothing.
    ///
    /// @par Executor
    /// The handler is never invoked from within this function, nor from within `close` or the
    /// destructor. It is submitted to its associated executor (default: `get_executor()`) as if
    /// by `boost::asio::post`, also when the command is refused at the call. Outstanding work is
    /// tracked on that executor (and on `get_executor()` when the handler has its own) from
    /// initiation until the handler is submitted.
    ///
    /// @par Errors
    /// - none: the reply holds the server's answer, of any kind but `reply_kind::error`.
    /// - `asio_sync::redis::error::server_error`: the server answered with an error; the reply
    ///   has kind `reply_kind::error` and the message. Also when a set-up command other than
    ///   `AUTH` (`SELECT`) failed while the command waited, with that command's reply; the
    ///   command was then not sent.
    /// - `asio_sync::redis::error::connection_lost`: the command was written and the link dropped
    ///   before its reply (also when the reply could not be parsed). It may have run.
    /// - `asio_sync::redis::error::auth_failed`: the server refused the credentials or demands
    ///   some (`WRONGPASS`, `NOAUTH`), in its answer to the command or to the `AUTH` of a
    ///   connection attempt made while the command waited (the command was then not sent). The
    ///   reply has kind `reply_kind::error` and the server's message.
    /// - `asio_sync::redis::error::unsupported_command`: refused at the call, see above.
    /// - `boost::asio::error::invalid_argument`: `args` is empty.
    /// - `boost::asio::error::operation_aborted`: cancelled, or the connection was closed or
    ///   destroyed while the command waited or was in flight.
    /// - `asio_sync::error::closed`: the command was issued after `close()`.
    /// .
    /// With the other errors the reply is a nil reply.
    ///
    /// @par Thread safety
    /// May be called concurrently, from any thread, with any member function of the same
    /// connection but the destructor. Commands issued from one thread are sent in the order of
    /// the calls.
    ///
    /// @par Object lifetimes
    /// The connection must exist for the whole call; afterwards it may be destroyed while the
    /// command waits, which then completes with `operation_aborted`. The command waits in one
    /// object allocated with the handler's associated allocator, freed before the handler is
    /// invoked.
    ///
    /// @tparam Args A range whose elements convert to `std::string_view`, such as
    /// `std::vector<std::string>` or `std::array<std::string_view, 3>`.
    /// @param args The command's name and arguments, such as `{"SET", key, value}`.
    /// @param token The completion token: a handler, `boost::asio::use_awaitable`,
    /// `boost::asio::use_future`, `boost::asio::deferred`, or any other.
    template <class Args, BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code, reply))
                              ExecuteToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_execute(const Args& args,
                       ExecuteToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type))
    {
        return boost::asio::async_initiate<ExecuteToken, void(boost::system::error_code, reply)>(
            initiate_async_execute(this), token, detail::formatted_command::format_for_pipeline(args));
    }

    /// Sends a command given as a braced list, such as `{"GET", key}`, and waits for its reply.
    ///
    /// Everything said of `async_execute(const Args&, ExecuteToken&&)` holds.
    ///
    /// @par Completion signature
    /// `void(boost::system::error_code, asio_sync::redis::reply)`.
    ///
    /// @par Per-operation cancellation
    /// As for the range overload: terminal, partial and total before the command is written,
    /// terminal and partial after.
    ///
    /// @par Executor
    /// The handler is never invoked from within this function; it is submitted to its associated
    /// executor (default: `get_executor()`) as if by `boost::asio::post`.
    ///
    /// @par Errors
    /// Those of the range overload.
    ///
    /// @par Thread safety
    /// May be called concurrently with any member function but the destructor.
    ///
    /// @par Object lifetimes
    /// As for the range overload.
    ///
    /// @param args The command's name and arguments.
    /// @param token The completion token.
    template <BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code, reply))
                  ExecuteToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_execute(std::initializer_list<std::string_view> args,
                       ExecuteToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type))
    {
        return boost::asio::async_initiate<ExecuteToken, void(boost::system::error_code, reply)>(
            initiate_async_execute(this), token, detail::formatted_command::format_for_pipeline(args));
    }

    /// Subscribes to a pub/sub channel, on the subscriber link.
    ///
    /// `on_message(std::string message)` runs for every message published on `channel` while the
    /// subscription is active. `on_subscribed()` runs each time the subscription becomes active:
    /// once the server has confirmed it (at once if the channel is already active for another
    /// subscription of this connection), and again after every reconnect of the subscriber link.
    /// Pub/sub delivers at most once: what is published while the link is down is lost, so treat
    /// messages as hints and re-check the state they are about in `on_subscribed`.
    ///
    /// Both callbacks are submitted, like completion handlers, to their associated executor
    /// (default: `get_executor()`), never invoked inside a member function of the connection.
    /// They are stored as given and may run many times, concurrently with themselves on a
    /// multi-threaded executor (bind them to a strand to serialise them). Several subscriptions
    /// may share a channel; the channel is subscribed once on the server.
    ///
    /// @tparam MessageHandler A callable `void(std::string)`.
    /// @tparam SubscribedHandler A callable `void()`.
    /// @param channel The channel's name.
    /// @param on_message Called with each message.
    /// @param on_subscribed Called each time the subscription becomes active.
    /// @returns The subscription's identifier, for `unsubscribe`.
    template <class MessageHandler, class SubscribedHandler>
    subscription_id subscribe(std::string channel, MessageHandler on_message, SubscribedHandler on_subscribed)
    {
        const std::uint64_t id = impl_->new_id();
        impl_->subscribe(id, std::move(channel),
                         detail::make_message_callback(std::move(on_message), executor_),
                         detail::make_event_callback(std::move(on_subscribed), executor_));
        return subscription_id(id);
    }

    /// Ends a subscription: its callbacks are released, and the channel is unsubscribed on the
    /// server once no subscription of this connection uses it.
    ///
    /// Calls of the subscription's callbacks already submitted to their executors still run.
    /// Ending a subscription that has already ended does nothing.
    ///
    /// @param id What `subscribe` returned.
    void unsubscribe(subscription_id id) { impl_->unsubscribe(static_cast<std::uint64_t>(id)); }

    /// Closes the connection for good: both links are closed and not reconnected, every pending
    /// command completes with `boost::asio::error::operation_aborted` (written or not), and the
    /// subscriptions end. Commands issued afterwards complete with `asio_sync::error::closed`.
    ///
    /// Returns at once; the closing runs on the connection's strand, and the handlers are
    /// submitted from there. Subscriptions made after `close()` never become active. Closing a
    /// closed connection does nothing.
    void close() { impl_->close(); }

private:
    friend struct detail::access;

    class initiate_async_execute;

    template <class Handler>
    void start_execute(Handler handler, detail::formatted_command command);

    executor_type executor_;
    std::shared_ptr<detail::connection_impl> impl_;
};

/// A connection with the default executor type, `boost::asio::any_io_executor`.
using connection = basic_connection<>;

} // namespace asio_sync::redis

#include <asio_sync/redis/impl/connection.hpp>

#endif // ASIO_SYNC_REDIS_CONNECTION_HPP
