// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_REDIS_DETAIL_CONNECTION_IMPL_HPP
#define ASIO_SYNC_REDIS_DETAIL_CONNECTION_IMPL_HPP

#include <asio_sync/error.hpp>
#include <asio_sync/redis/connection_options.hpp>
#include <asio_sync/redis/detail/command.hpp>
#include <asio_sync/redis/detail/command_op.hpp>
#include <asio_sync/redis/detail/event_callback.hpp>
#include <asio_sync/redis/detail/reply_reader.hpp>
#include <asio_sync/redis/error.hpp>
#include <asio_sync/redis/reply.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/generic/stream_protocol.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <boost/core/no_exceptions_support.hpp>
#include <boost/system/error_code.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace asio_sync::redis::detail {

// The engine of a connection, shared by the connection object and by every handler of its own
// I/O, so that those may outlive the connection object. It runs two links to the server: the
// command link (pipelined commands, replies matched in order) and the subscriber link (pub/sub),
// each with its own socket, reconnecting on its own. All its state lives on one strand; the
// public functions may be called from any thread and post their work there.
class connection_impl : public std::enable_shared_from_this<connection_impl>
{
public:
    // Throws if the options name a unix socket path that is too long.
    connection_impl(const boost::asio::any_io_executor& ex, const connection_options& options)
        : strand_(ex), options_(options), command_link_(link_kind::command, strand_),
          subscriber_link_(link_kind::subscriber, strand_), random_(std::random_device()())
    {
        if (!options_.unix_socket.empty())
            unix_endpoint_.emplace(boost::asio::local::stream_protocol::endpoint(options_.unix_socket));
        if (!options_.user.empty() || !options_.password.empty())
        {
            auth_command_ = options_.user.empty() ? format({"AUTH", options_.password})
                                                  : format({"AUTH", options_.user, options_.password});
        }
        if (options_.database != 0)
            select_command_ = format({"SELECT", std::to_string(options_.database)});
    }

    connection_impl(const connection_impl&) = delete;
    connection_impl& operator=(const connection_impl&) = delete;

    // Destroys, without invoking them, the handlers of commands still held: only after the
    // execution context shut down without running close().
    ~connection_impl()
    {
        for (command_op_base* op : queued_)
            op->destroy();
        if (command_link_.current)
        {
            for (pending_reply& p : command_link_.current->pending)
            {
                if (p.op)
                    p.op->destroy();
            }
        }
    }

    // Opens the command link.
    void start()
    {
        run([](connection_impl& self) { self.connect(self.command_link_); });
    }

    // A fresh identifier for a command, a subscription or a connect listener.
    std::uint64_t new_id() noexcept { return next_id_.fetch_add(1, std::memory_order_relaxed); }

    // Queues a command; it is written once the command link is ready. Until the strand takes it,
    // the posted function owns it: it is destroyed if posting throws, or if the context shuts
    // down first.
    void execute(command_op_ptr op)
    {
        run([op = std::move(op)](connection_impl& self) mutable { self.enqueue(std::move(op)); });
    }

    // Cancels the command `id`, if it is still queued or awaits its reply.
    void cancel(std::uint64_t id, boost::asio::cancellation_type_t type)
    {
        run([id, type](connection_impl& self) { self.cancel_command(id, type); });
    }

    // Closes both links for good; every command still held completes with operation_aborted.
    void close()
    {
        run([](connection_impl& self) { self.shut(); });
    }

    void subscribe(std::uint64_t id, std::string channel, message_callback on_message,
                   event_callback on_subscribed)
    {
        run([id, channel = std::move(channel), on_message = std::move(on_message),
             on_subscribed = std::move(on_subscribed)](connection_impl& self) mutable {
            self.add_subscription(id, std::move(channel), std::move(on_message), std::move(on_subscribed));
        });
    }

    void unsubscribe(std::uint64_t id)
    {
        run([id](connection_impl& self) { self.remove_subscription(id); });
    }

    // Registers a command that runs on every connect of the command link, after AUTH and SELECT
    // and before any queued command (for example FUNCTION LOAD REPLACE). Registered while the
    // link is up, it runs at once, and the commands queued after it wait for its reply. A
    // command registered twice runs once. If the server answers it with an error, the commands
    // queued at that moment fail with server_error and that reply, and the link reconnects after
    // its delay; unless `best_effort`: then its error reply is ignored, and whoever depends on it
    // finds out from their own commands.
    void add_setup_command(formatted_command command, bool best_effort = false)
    {
        run([bytes = std::string(command.bytes()), best_effort](connection_impl& self) mutable {
            self.add_setup(std::move(bytes), best_effort);
        });
    }

    // Registers a listener called each time the command link has been (re)established: after its
    // set-up commands succeeded and before the queued commands are written. Calls already
    // submitted may still run after remove_connect_listener.
    void add_connect_listener(std::uint64_t id, event_callback listener)
    {
        run([id, listener = std::move(listener)](connection_impl& self) mutable {
            if (!self.closed_)
                self.connect_listeners_.emplace(id, std::move(listener));
        });
    }

    void remove_connect_listener(std::uint64_t id)
    {
        run([id](connection_impl& self) { self.connect_listeners_.erase(id); });
    }

    // Registers a listener called once when the connection is closed, before the commands it
    // still holds complete, so that what waits on a command's outcome may settle first. Registered
    // after the close, it is called at once (on the strand).
    void add_close_listener(std::uint64_t id, event_callback listener)
    {
        run([id, listener = std::move(listener)](connection_impl& self) mutable {
            if (self.closed_)
                return listener();
            self.close_listeners_.emplace(id, std::move(listener));
        });
    }

    void remove_close_listener(std::uint64_t id)
    {
        run([id](connection_impl& self) { self.close_listeners_.erase(id); });
    }

private:
    using socket_type = boost::asio::generic::stream_protocol::socket;
    using endpoint_type = boost::asio::generic::stream_protocol::endpoint;

    enum class link_kind
    {
        command,
        subscriber,
    };

    enum class link_state
    {
        idle,       // no session: waiting for the reconnect delay, or never started
        connecting, // resolving and connecting
        setting_up, // set-up commands sent, their replies awaited; commands are held back
        ready,
    };

    // A reply the server owes on a link, in the order of the commands sent.
    struct pending_reply
    {
        enum class purpose
        {
            command, // a caller's command; `op` is null once it was cancelled (its reply is dropped)
            auth,
            setup,
            best_effort_setup, // its error reply is ignored
        };

        purpose what;
        command_op_base* op;
    };

    // One connection attempt of a link and, once connected, its socket and its streams. Replaced
    // as a whole on every reconnect, so a handler of an older session recognises that it is
    // stale, and nothing it holds (its buffers, its reader's state) leaks into the next one.
    struct session
    {
        explicit session(const boost::asio::any_io_executor& ex) : socket(ex), resolver(ex), timer(ex) {}

        socket_type socket;
        boost::asio::ip::tcp::resolver resolver;
        boost::asio::steady_timer timer; // the connect timeout
        reply_reader reader;
        std::vector<char> input = std::vector<char>(16 * 1024);
        std::string output;  // bytes waiting to be written
        std::string writing; // bytes of the write in progress
        bool write_in_progress = false;
        std::deque<pending_reply> pending;
        bool established = false; // its first set-up succeeded
        bool answered = false;    // a reply other than an error arrived
    };

    struct link
    {
        link(link_kind k, const boost::asio::any_io_executor& ex) : kind(k), retry_timer(ex) {}

        link_kind kind;
        link_state state = link_state::idle;
        bool started = false;
        std::shared_ptr<session> current;
        boost::asio::steady_timer retry_timer;
        unsigned failures = 0; // consecutive failed attempts: the exponent of the reconnect delay
        std::size_t setup_left = 0;
        boost::system::error_code setup_error; // the first set-up command that failed, and its reply
        reply setup_reply;
    };

    struct subscription
    {
        std::string channel;
        message_callback on_message;
        event_callback on_subscribed;
    };

    struct channel_state
    {
        std::vector<std::uint64_t> subscribers;
        unsigned awaiting = 0; // SUBSCRIBE confirmations still to come
        bool active = false;
    };

    template <class Function>
    void run(Function&& f)
    {
        boost::asio::post(strand_,
                          [self = shared_from_this(), f = std::forward<Function>(f)]() mutable { f(*self); });
    }

    static std::string format(std::initializer_list<std::string_view> args)
    {
        return std::string(formatted_command::format(args).bytes());
    }

    static void complete(command_op_base* op, boost::system::error_code ec, reply r) noexcept
    {
        BOOST_TRY
        {
            op->complete(ec, std::move(r));
        }
        BOOST_CATCH(...)
        {
            // The handler could not be submitted (its executor or allocator threw) and is gone;
            // nobody is left to tell.
        }
        BOOST_CATCH_END
    }

    // What a reply means for the command it answers: an error reply is a server error, or an
    // authentication failure when it says that credentials are missing or wrong.
    static boost::system::error_code error_of(const reply& r) noexcept
    {
        if (r.kind != reply_kind::error)
            return {};
        const std::string_view text = r.text;
        if (text.substr(0, 7) == "NOAUTH " || text.substr(0, 10) == "WRONGPASS ")
            return error::auth_failed;
        return error::server_error;
    }

    // ---- connecting

    void connect(link& l)
    {
        l.started = true;
        auto s = std::make_shared<session>(strand_);
        l.current = s;
        l.state = link_state::connecting;
        s->timer.expires_after(options_.connect_timeout);
        s->timer.async_wait([self = shared_from_this(), s, &l](boost::system::error_code ec) {
            if (!ec && l.current == s && !s->established)
                self->drop(l, s);
        });
        if (unix_endpoint_)
        {
            s->socket.async_connect(*unix_endpoint_,
                                    [self = shared_from_this(), s, &l](boost::system::error_code ec) {
                                        self->connected(l, s, ec);
                                    });
            return;
        }
        s->resolver.async_resolve(
            options_.host, std::to_string(options_.port),
            [self = shared_from_this(), s, &l](boost::system::error_code ec,
                                               const boost::asio::ip::tcp::resolver::results_type& results) {
                if (l.current != s)
                    return;
                if (ec)
                    return self->drop(l, s);
                std::vector<endpoint_type> endpoints;
                for (const auto& entry : results)
                    endpoints.emplace_back(entry.endpoint());
                boost::asio::async_connect(
                    s->socket, endpoints, [self, s, &l](boost::system::error_code ec2, const endpoint_type&) {
                        self->connected(l, s, ec2);
                    });
            });
    }

    void connected(link& l, const std::shared_ptr<session>& s, boost::system::error_code ec)
    {
        if (l.current != s)
            return;
        if (ec)
            return drop(l, s);
        if (!unix_endpoint_)
        {
            boost::system::error_code ignored;
            s->socket.set_option(boost::asio::ip::tcp::no_delay(true), ignored);
            s->socket.set_option(boost::asio::socket_base::keep_alive(true), ignored);
        }
        read(l, s);
        if (!auth_command_.empty())
            send_setup(l, auth_command_, pending_reply::purpose::auth);
        if (l.kind == link_kind::command)
        {
            if (!select_command_.empty())
                send_setup(l, select_command_, pending_reply::purpose::setup);
            for (const setup_command& command : setup_commands_)
                send_setup(l, command.bytes, command.purpose);
        }
        if (l.setup_left == 0)
            return setup_done(l);
        write(l, s);
    }

    // Queues a set-up command: the commands of callers wait until its reply has arrived.
    void send_setup(link& l, const std::string& command, pending_reply::purpose what)
    {
        l.current->pending.push_back({what, nullptr});
        l.current->output += command;
        ++l.setup_left;
        l.state = link_state::setting_up;
    }

    void setup_done(link& l)
    {
        const std::shared_ptr<session> s = l.current;
        if (l.setup_error)
        {
            if (l.kind == link_kind::command)
                fail_queued(l.setup_error, l.setup_reply);
            return drop(l, s);
        }
        l.state = link_state::ready;
        if (s->answered)
            l.failures = 0;
        const bool reconnected = !s->established;
        s->established = true;
        s->timer.cancel();
        if (l.kind == link_kind::subscriber)
            return subscribe_all();
        if (reconnected)
        {
            for (const auto& listener : connect_listeners_)
                listener.second();
        }
        flush();
    }

    void add_setup(std::string command, bool best_effort)
    {
        if (closed_ || std::any_of(setup_commands_.begin(), setup_commands_.end(),
                                   [&](const setup_command& c) { return c.bytes == command; }))
            return;
        setup_commands_.push_back({std::move(command), best_effort ? pending_reply::purpose::best_effort_setup
                                                                   : pending_reply::purpose::setup});
        link& l = command_link_;
        if (l.state == link_state::setting_up || l.state == link_state::ready)
        {
            send_setup(l, setup_commands_.back().bytes, setup_commands_.back().purpose);
            write(l, l.current);
        }
    }

    // Closes the session of `l` and completes the commands awaiting its replies with `ec`.
    void teardown(link& l, boost::system::error_code ec)
    {
        const std::shared_ptr<session> s = std::move(l.current);
        l.state = link_state::idle;
        l.setup_left = 0;
        l.setup_error = {};
        l.setup_reply = {};
        boost::system::error_code ignored;
        s->socket.close(ignored);
        s->resolver.cancel();
        s->timer.cancel();
        std::deque<pending_reply> pending = std::move(s->pending);
        for (pending_reply& p : pending)
        {
            if (p.op)
                complete(p.op, ec, {});
        }
    }

    // Gives up the session `s` of `l` (an error, a timeout, a failed set-up), then reconnects
    // after the delay.
    void drop(link& l, const std::shared_ptr<session>& s)
    {
        if (l.current != s)
            return;
        teardown(l, error::connection_lost);
        if (l.kind == link_kind::subscriber)
            deactivate_channels();
        if (closed_)
            return;
        const auto delay = reconnect_delay(l.failures);
        if (l.failures < 32)
            ++l.failures;
        l.retry_timer.expires_after(delay);
        l.retry_timer.async_wait([self = shared_from_this(), &l](boost::system::error_code ec) {
            if (!ec && !self->closed_)
                self->connect(l);
        });
    }

    std::chrono::steady_clock::duration reconnect_delay(unsigned failures)
    {
        std::chrono::duration<double, std::milli> delay = options_.reconnect_delay_min;
        for (unsigned i = 0; i < failures && delay < options_.reconnect_delay_max; ++i)
            delay *= 2;
        delay = std::min<std::chrono::duration<double, std::milli>>(delay, options_.reconnect_delay_max);
        const double jitter = std::clamp(options_.reconnect_jitter, 0.0, 1.0);
        delay *= std::uniform_real_distribution<double>(1.0 - jitter, 1.0)(random_);
        return std::chrono::duration_cast<std::chrono::steady_clock::duration>(delay);
    }

    // ---- reading and writing

    void read(link& l, const std::shared_ptr<session>& s)
    {
        s->socket.async_read_some(
            boost::asio::buffer(s->input),
            [self = shared_from_this(), s, &l](boost::system::error_code ec, std::size_t n) {
                self->received(l, s, ec, n);
            });
    }

    void received(link& l, const std::shared_ptr<session>& s, boost::system::error_code ec, std::size_t n)
    {
        if (l.current != s)
            return;
        if (ec || !s->reader.feed(s->input.data(), n))
            return drop(l, s);
        for (;;)
        {
            reply r;
            const reply_reader::result result = s->reader.next(r);
            if (result == reply_reader::result::incomplete)
                break;
            if (result == reply_reader::result::error)
                return drop(l, s);
            dispatch(l, s, std::move(r));
            if (l.current != s) // the reply ended the session
                return;
        }
        read(l, s);
    }

    void dispatch(link& l, const std::shared_ptr<session>& s, reply&& r)
    {
        if (r.kind != reply_kind::error)
        {
            s->answered = true;
            if (l.state == link_state::ready)
                l.failures = 0;
        }
        if (s->pending.empty())
        {
            // Only the subscriber link receives what it did not ask for; on the command link the
            // stream can no longer be trusted.
            if (l.kind == link_kind::subscriber && l.state == link_state::ready)
                return published(std::move(r));
            return drop(l, s);
        }
        const pending_reply p = s->pending.front();
        s->pending.pop_front();
        if (p.what == pending_reply::purpose::command)
        {
            if (p.op)
            {
                const boost::system::error_code ec = error_of(r);
                complete(p.op, ec, std::move(r));
            }
            return;
        }
        if (r.kind == reply_kind::error && !l.setup_error &&
            p.what != pending_reply::purpose::best_effort_setup)
        {
            l.setup_error = p.what == pending_reply::purpose::auth ? error::auth_failed : error_of(r);
            l.setup_reply = std::move(r);
        }
        if (--l.setup_left == 0)
            setup_done(l);
    }

    void write(link& l, const std::shared_ptr<session>& s)
    {
        if (s->write_in_progress || s->output.empty())
            return;
        s->writing.clear();
        std::swap(s->output, s->writing);
        s->write_in_progress = true;
        boost::asio::async_write(
            s->socket, boost::asio::buffer(s->writing),
            [self = shared_from_this(), s, &l](boost::system::error_code ec, std::size_t) {
                if (l.current != s)
                    return;
                s->write_in_progress = false;
                if (ec)
                    return self->drop(l, s);
                self->write(l, s);
            });
    }

    // ---- commands

    void enqueue(command_op_ptr op)
    {
        if (closed_)
            return complete(op.release(), asio_sync::error::closed, {});
        queued_.push_back(op.get());
        op.release();
        flush();
    }

    // Writes every queued command, in one batch, once the command link is ready.
    void flush()
    {
        link& l = command_link_;
        if (l.state != link_state::ready || queued_.empty())
            return;
        session& s = *l.current;
        for (command_op_base* op : queued_)
        {
            s.pending.push_back({pending_reply::purpose::command, op});
            s.output += op->command().bytes();
            op->command().release();
        }
        queued_.clear();
        write(l, l.current);
    }

    void fail_queued(boost::system::error_code ec, const reply& r)
    {
        std::deque<command_op_base*> failed = std::move(queued_);
        queued_.clear();
        for (command_op_base* op : failed)
            complete(op, ec, r);
    }

    void cancel_command(std::uint64_t id, boost::asio::cancellation_type_t type)
    {
        using boost::asio::cancellation_type;
        const auto queued = std::find_if(queued_.begin(), queued_.end(),
                                         [id](const command_op_base* op) { return op->id() == id; });
        if (queued != queued_.end())
        {
            if (!(type &
                  (cancellation_type::terminal | cancellation_type::partial | cancellation_type::total)))
                return;
            command_op_base* op = *queued;
            queued_.erase(queued);
            return complete(op, boost::asio::error::operation_aborted, {});
        }
        // A command already written may have run: it can be given up (its reply will be dropped),
        // not undone, so total cancellation does not apply.
        if (!command_link_.current || !(type & (cancellation_type::terminal | cancellation_type::partial)))
            return;
        for (pending_reply& p : command_link_.current->pending)
        {
            if (p.op && p.op->id() == id)
            {
                command_op_base* op = std::exchange(p.op, nullptr);
                return complete(op, boost::asio::error::operation_aborted, {});
            }
        }
    }

    void shut()
    {
        if (closed_)
            return;
        closed_ = true;
        for (const auto& listener : std::exchange(close_listeners_, {}))
            listener.second();
        for (link* l : {&command_link_, &subscriber_link_})
        {
            l->retry_timer.cancel();
            if (l->current)
                teardown(*l, boost::asio::error::operation_aborted);
        }
        fail_queued(boost::asio::error::operation_aborted, {});
        subscriptions_.clear();
        channels_.clear();
        connect_listeners_.clear();
    }

    // ---- subscriptions

    void add_subscription(std::uint64_t id, std::string name, message_callback on_message,
                          event_callback on_subscribed)
    {
        if (closed_)
            return;
        channel_state& channel = channels_[name];
        const bool first = channel.subscribers.empty();
        channel.subscribers.push_back(id);
        subscriptions_.emplace(id, subscription{name, std::move(on_message), std::move(on_subscribed)});
        if (channel.active)
            return subscriptions_.find(id)->second.on_subscribed();
        link& l = subscriber_link_;
        if (!l.started)
            return connect(l);
        // Also after an UNSUBSCRIBE still in flight: it would undo an earlier SUBSCRIBE.
        if (first && l.state == link_state::ready)
            send_subscriber({"SUBSCRIBE", name}, channel);
    }

    void remove_subscription(std::uint64_t id)
    {
        const auto found = subscriptions_.find(id);
        if (found == subscriptions_.end())
            return;
        const std::string name = std::move(found->second.channel);
        subscriptions_.erase(found);
        const auto channel = channels_.find(name);
        auto& ids = channel->second.subscribers;
        ids.erase(std::find(ids.begin(), ids.end(), id));
        if (!ids.empty())
            return;
        channel->second.active = false;
        if (subscriber_link_.state == link_state::ready)
        {
            subscriber_link_.current->output += format({"UNSUBSCRIBE", name});
            write(subscriber_link_, subscriber_link_.current);
        }
        if (channel->second.awaiting == 0)
            channels_.erase(channel);
    }

    void send_subscriber(std::initializer_list<std::string_view> command, channel_state& channel)
    {
        ++channel.awaiting;
        subscriber_link_.current->output += format(command);
        write(subscriber_link_, subscriber_link_.current);
    }

    // Subscribes to every channel at once, on a new subscriber session.
    void subscribe_all()
    {
        if (channels_.empty())
            return;
        std::vector<std::string_view> command{"SUBSCRIBE"};
        for (auto& [name, channel] : channels_)
        {
            command.push_back(name);
            ++channel.awaiting;
        }
        subscriber_link_.current->output += formatted_command::format(command).bytes();
        write(subscriber_link_, subscriber_link_.current);
    }

    void deactivate_channels()
    {
        for (auto it = channels_.begin(); it != channels_.end();)
        {
            it->second.active = false;
            it->second.awaiting = 0;
            it = it->second.subscribers.empty() ? channels_.erase(it) : std::next(it);
        }
    }

    // A push on the subscriber link: ["subscribe", channel, count], ["message", channel, payload],
    // ["unsubscribe", channel, count].
    void published(reply&& r)
    {
        if (r.kind != reply_kind::array || r.elements.size() != 3)
            return;
        const std::string& kind = r.elements[0].text;
        const auto channel = channels_.find(r.elements[1].text);
        if (channel == channels_.end())
            return;
        channel_state& state = channel->second;
        if (kind == "message")
        {
            for (std::uint64_t id : state.subscribers)
                subscriptions_.find(id)->second.on_message(r.elements[2].text);
        }
        else if (kind == "subscribe" && state.awaiting > 0 && --state.awaiting == 0)
        {
            if (state.subscribers.empty())
                channels_.erase(channel);
            else if (!state.active)
            {
                state.active = true;
                for (std::uint64_t id : state.subscribers)
                    subscriptions_.find(id)->second.on_subscribed();
            }
        }
    }

    boost::asio::strand<boost::asio::any_io_executor> strand_;
    connection_options options_;
    std::optional<endpoint_type> unix_endpoint_;
    std::string auth_command_;   // empty: no AUTH
    std::string select_command_; // empty: database 0
    link command_link_;
    link subscriber_link_;
    std::deque<command_op_base*> queued_; // commands not yet written, oldest first
    struct setup_command
    {
        std::string bytes;
        pending_reply::purpose purpose;
    };

    std::vector<setup_command> setup_commands_;
    std::map<std::uint64_t, event_callback> connect_listeners_;
    std::map<std::uint64_t, event_callback> close_listeners_;
    std::map<std::string, channel_state> channels_;
    std::map<std::uint64_t, subscription> subscriptions_;
    std::minstd_rand random_; // the jitter of reconnect delays
    std::atomic<std::uint64_t> next_id_{1};
    bool closed_ = false;
};

// The per-operation cancellation handler of a command, in the handler's cancellation slot. It
// names the command by identifier, not by address: by the time the strand handles it, the
// command may have completed and its memory may hold another.
class command_cancellation
{
public:
    command_cancellation(std::weak_ptr<connection_impl> impl, std::uint64_t id) noexcept
        : impl_(std::move(impl)), id_(id)
    {
    }

    void operator()(boost::asio::cancellation_type_t type)
    {
        if (const std::shared_ptr<connection_impl> impl = impl_.lock())
            impl->cancel(id_, type);
    }

private:
    std::weak_ptr<connection_impl> impl_;
    std::uint64_t id_;
};

} // namespace asio_sync::redis::detail

#endif // ASIO_SYNC_REDIS_DETAIL_CONNECTION_IMPL_HPP
