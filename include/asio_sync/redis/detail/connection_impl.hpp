// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_REDIS_DETAIL_CONNECTION_IMPL_HPP
#define ASIO_SYNC_REDIS_DETAIL_CONNECTION_IMPL_HPP

#include <asio_sync/error.hpp>
#include <asio_sync/redis/connection_options.hpp>
#include <asio_sync/redis/detail/cluster_router.hpp>
#include <asio_sync/redis/detail/command.hpp>
#include <asio_sync/redis/detail/command_op.hpp>
#include <asio_sync/redis/detail/event_callback.hpp>
#include <asio_sync/redis/detail/link_fsm.hpp>
#include <asio_sync/redis/detail/link_setup.hpp>
#include <asio_sync/redis/detail/reply_reader.hpp>
#include <asio_sync/redis/detail/request_pipeline.hpp>
#include <asio_sync/redis/detail/sentinel_resolver.hpp>
#include <asio_sync/redis/detail/subscription_table.hpp>
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
#include <boost/throw_exception.hpp>

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
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace asio_sync::redis::detail {

// The engine of a connection, shared by the connection object and by every handler of its own I/O,
// so that those may outlive the connection object. It runs two links to the server: the command
// link (pipelined commands, replies matched in order) and the subscriber link (pub/sub), each with
// its own socket, each living its own connect / set up / run / back off sequence (link_fsm). With
// Sentinel a third link, the watch link, stays subscribed to one sentinel's `+switch-master` and
// sends the other two to the new primary when it hears of a failover. With Redis Cluster, there is
// one command link per primary (a node), and the commands go to the node of their slot, as the
// map learnt with CLUSTER SLOTS and the nodes' redirections say. What travels on the links, and
// where, is decided without I/O: a command link's requests by its request_pipeline, the subscriber
// link's by the subscription_table, the node of each command by the cluster_router, the sentinel
// asked by the sentinel_resolver. This class owns the sockets, the timers and the strand, and moves
// bytes and events between them. All its state lives on the strand; the public functions may be
// called from any thread and post their work there.
class connection_impl : public std::enable_shared_from_this<connection_impl>
{
public:
    // Throws if the options name a unix socket path that is too long, or both sentinels and
    // cluster nodes, or allow no redirection.
    connection_impl(const boost::asio::any_io_executor& ex, const connection_options& options)
        : strand_(ex), options_(checked(options)), setup_(options_), router_(options_), resolver_(options_),
          slots_timer_(strand_),
          retry_timer_(strand_), subscriber_link_(link_kind::subscriber, strand_, options, random_seed()),
          watch_link_(link_kind::watch, strand_, options, random_seed())
    {
        add_nodes();
        // A unix socket reaches the one server only: not the nodes of a cluster, nor a primary
        // that the sentinels name (its path is checked all the same).
        if (!options_.unix_socket.empty() && !router_.cluster())
            unix_endpoint_.emplace(boost::asio::local::stream_protocol::endpoint(options_.unix_socket));
        if (!options_.sentinels.empty())
        {
            unix_endpoint_.reset();
            nodes_.front()->requests.requeue_read_only(true);
        }
    }

    connection_impl(const connection_impl&) = delete;
    connection_impl& operator=(const connection_impl&) = delete;

    // Opens the command link (in a cluster, that of the first node, which is asked for the map).
    void start()
    {
        run([](connection_impl& self) {
            self.router_.start();
            link& l = self.nodes_.front()->command;
            self.perform(l, l.fsm.start());
        });
    }

    // A fresh identifier for a command, a subscription or a connect listener.
    std::uint64_t new_id() noexcept { return next_id_.fetch_add(1, std::memory_order_relaxed); }

    // Queues a command; it is written once the command link is ready. Until the strand takes it,
    // the posted function owns it: it is destroyed if posting throws, or if the context shuts
    // down first.
    void execute(command_op_ptr op)
    {
        run([op = std::move(op)](connection_impl& self) mutable { self.route(std::move(op)); });
    }

    // Two commands routed in one step: nothing comes between them on their link.
    void execute(command_op_ptr first, command_op_ptr second)
    {
        run([first = std::move(first), second = std::move(second)](connection_impl& self) mutable {
            self.route(std::move(first));
            self.route(std::move(second));
        });
    }

    // Cancels the command `id`, if it is still queued or awaits its reply.
    void cancel(std::uint64_t id, boost::asio::cancellation_type_t type)
    {
        run([id, type](connection_impl& self) {
            for (const std::unique_ptr<node>& n : self.nodes_)
                n->requests.cancel(id, type);
            self.delayed_.cancel(id, type);
        });
    }

    // The options' health check interval (zero: none). Thread-safe: the options never change.
    std::chrono::milliseconds health_check_interval() const noexcept
    {
        return options_.health_check_interval;
    }

    // Whether the sentinels name the primary.
    bool uses_sentinels() const noexcept { return !options_.sentinels.empty(); }

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
            if (self.closed_)
                return;
            link& l = self.subscriber_link_;
            std::string command;
            switch (self.subscriptions_.add(id, std::move(channel), std::move(on_message),
                                            std::move(on_subscribed), l.fsm.started(), l.fsm.ready(),
                                            command))
            {
            case subscription_table::need::link:
                return self.perform(l, l.fsm.start());
            case subscription_table::need::write:
                return self.write(l, command);
            case subscription_table::need::nothing:
                return;
            }
        });
    }

    void unsubscribe(std::uint64_t id)
    {
        run([id](connection_impl& self) {
            link& l = self.subscriber_link_;
            const std::string command = self.subscriptions_.remove(id, l.fsm.ready());
            if (!command.empty())
                self.write(l, command);
        });
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
    using action = link_fsm::action;

    // One connection attempt of a link and, once connected, its socket and its streams. Replaced
    // as a whole on every reconnect, so a handler of an older session recognises that it is
    // stale, and nothing it holds (its buffers, its reader's state) leaks into the next one.
    struct session
    {
        explicit session(const boost::asio::any_io_executor& ex)
            : socket(ex), resolver(ex), connect_timer(ex), sentinel_timer(ex), health_timer(ex)
        {
        }

        socket_type socket;
        boost::asio::ip::tcp::resolver resolver;
        boost::asio::steady_timer connect_timer;
        boost::asio::steady_timer sentinel_timer; // bounds the question to one sentinel
        boost::asio::steady_timer health_timer;
        reply_reader reader;
        std::vector<char> input = std::vector<char>(16 * 1024);
        std::string output;  // bytes waiting to be written
        std::string writing; // bytes of the write in progress
        bool write_in_progress = false;
        bool established = false;          // set up once: the connect listeners have run
        sentinel_resolver::attempt primary; // with Sentinel: how the sentinels were asked
        std::size_t watched = 0;            // the watch link: the sentinel it listens to
    };

    struct node;

    struct link
    {
        link(link_kind k, const boost::asio::any_io_executor& ex, const connection_options& options,
             unsigned seed, node* n = nullptr)
            : kind(k), fsm(options, seed), retry_timer(ex), home(n)
        {
        }

        link_kind kind;
        link_fsm fsm;
        std::shared_ptr<session> current;
        boost::asio::steady_timer retry_timer;
        node* home; // a command link's node
    };

    // A server that the command links reach: the one server, or a cluster node.
    struct node
    {
        node(const boost::asio::any_io_executor& ex, const connection_options& options, unsigned seed,
             std::size_t i)
            : index(i), command(link_kind::command, ex, options, seed, this)
        {
        }

        std::size_t index;         // in the router
        request_pipeline requests; // the command link's
        link command;
    };

    // What the router reads of the links and the queues.
    struct router_view
    {
        const connection_impl& self;
        link_fsm::state link(std::size_t i) const noexcept { return self.nodes_[i]->command.fsm.current(); }
        bool busy(std::size_t i, int slot) const noexcept
        {
            return self.nodes_[i]->requests.awaits_slot(slot) || self.nodes_[i]->requests.holds_slot(slot);
        }
        bool delayed(int slot) const noexcept { return self.delayed_.holds_slot(slot); }
    };

    static unsigned random_seed() { return std::random_device()(); }

    static const connection_options& checked(const connection_options& options)
    {
        if (!options.sentinels.empty() && !options.cluster_nodes.empty())
            boost::throw_exception(std::invalid_argument(
                "asio_sync::redis: connection_options name both sentinels and cluster nodes"));
        if (options.max_redirections == 0)
            boost::throw_exception(
                std::invalid_argument("asio_sync::redis: connection_options::max_redirections is 0"));
        return options;
    }

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

    // A handler of the session `s` of `l`: acts only while `s` is the link's current session.
    template <class Function>
    auto on_session(link& l, const std::shared_ptr<session>& s, Function f)
    {
        return [self = shared_from_this(), &l, s, f = std::move(f)](auto&&... args) {
            if (l.current == s)
                f(*self, std::forward<decltype(args)>(args)...);
        };
    }

    // ---- the sequence of a link: carries out what its link_fsm asks for

    void perform(link& l, action a)
    {
        switch (a)
        {
        case action::none:
            return;
        case action::connect:
            return connect(l);
        case action::set_up:
            return set_up(l);
        case action::run:
            return run_link(l);
        case action::check_health:
            write(l, l.home ? l.home->requests.health_check() : std::string(request_pipeline::ping_bytes));
            return arm_health_check(l);
        case action::reconnect:
            teardown(l, error::connection_lost);
            if (l.home) // in a cluster, the node may have failed over: the map is learnt again
                want_slots();
            l.retry_timer.expires_after(l.fsm.delay());
            l.retry_timer.async_wait([self = shared_from_this(), &l](boost::system::error_code ec) {
                if (!ec)
                    self->perform(l, l.fsm.on_reconnect_timer());
            });
            return;
        case action::stop:
            l.retry_timer.cancel();
            if (l.current)
                teardown(l, boost::asio::error::operation_aborted);
            return;
        }
    }

    void connect(link& l)
    {
        auto s = std::make_shared<session>(strand_);
        l.current = s;
        s->connect_timer.expires_after(l.fsm.timeout());
        s->connect_timer.async_wait(
            on_session(l, s, [&l](connection_impl& self, boost::system::error_code ec) {
                if (!ec)
                    self.perform(l, l.fsm.on_failure());
            }));
        const auto connected =
            on_session(l, s, [&l](connection_impl& self, boost::system::error_code ec, auto&&...) {
                self.perform(l, l.fsm.on_connected(!ec));
            });
        if (unix_endpoint_)
            return s->socket.async_connect(*unix_endpoint_, connected);
        if (l.kind == link_kind::watch)
        {
            s->watched = resolver_.next_watched();
            const connection_options::sentinel_address& at = options_.sentinels[s->watched];
            return connect_to(l, s, at.host, at.port, connected);
        }
        if (!options_.sentinels.empty())
        {
            if (!watch_link_.fsm.started())
                perform(watch_link_, watch_link_.fsm.start());
            return sentinel_step(l, s, resolver_.begin(s->primary));
        }
        const std::size_t to = l.home ? l.home->index : router_.next_subscriber_node();
        connect_to(l, s, router_.host(to), router_.port(to), connected);
    }

    // Resolves host:port and connects the session's socket to one of its addresses; `connected`
    // hears how it went.
    template <class Handler>
    void connect_to(link& l, const std::shared_ptr<session>& s, const std::string& host, std::uint16_t port,
                    Handler connected)
    {
        s->resolver.async_resolve(
            host, std::to_string(port),
            on_session(l, s,
                       [s, connected](connection_impl&, boost::system::error_code resolved,
                                      const boost::asio::ip::tcp::resolver::results_type& results) {
                           if (resolved)
                               return connected(resolved);
                           std::vector<endpoint_type> endpoints;
                           for (const auto& entry : results)
                               endpoints.emplace_back(entry.endpoint());
                           boost::asio::async_connect(
                               s->socket, endpoints,
                               [connected](boost::system::error_code ec, const auto&) { connected(ec); });
                       }));
    }

    // With Sentinel: carries out a step of the attempt to find the primary (see
    // sentinel_resolver), on the session's socket, closed after each sentinel.
    void sentinel_step(link& l, const std::shared_ptr<session>& s, const sentinel_resolver::step& step)
    {
        using kind = sentinel_resolver::step::kind;
        sentinel_resolver::attempt& a = s->primary;
        if (step.what == kind::pending)
            return sentinel_reply(l, s);
        if (step.what == kind::fail)
        {
            if (l.home && step.error)
                l.home->requests.fail_queued(step.error, a.refusal);
            return perform(l, l.fsm.on_connected(false));
        }
        boost::system::error_code ignored;
        s->socket.close(ignored);
        s->reader = reply_reader();
        if (step.what == kind::connect)
            return connect_to(l, s, a.primary.host, a.primary.port,
                              on_session(l, s, [&l](connection_impl& self, boost::system::error_code ec) {
                                  self.perform(l, l.fsm.on_connected(!ec));
                              }));
        s->sentinel_timer.expires_after(resolver_.ask_timeout(l.fsm.timeout()));
        s->sentinel_timer.async_wait(
            on_session(l, s, [s, tried = a.tried](connection_impl&, boost::system::error_code ec) {
                if (ec || !sentinel_resolver::asking(s->primary, tried))
                    return;
                // The step in progress completes with operation_aborted and moves on.
                boost::system::error_code closed;
                s->resolver.cancel();
                s->socket.close(closed);
            }));
        const auto failed = [&l, s](connection_impl& self) {
            self.sentinel_step(l, s, self.resolver_.on_failure(s->primary));
        };
        const connection_options::sentinel_address& at = options_.sentinels[step.sentinel];
        connect_to(l, s, at.host, at.port,
                   on_session(l, s, [&l, s, failed](connection_impl& self, boost::system::error_code ec) {
                       if (ec)
                           return failed(self);
                       boost::asio::async_write(
                           s->socket, boost::asio::buffer(s->primary.query->request()),
                           self.on_session(l, s,
                                           [&l, s, failed](connection_impl& me, boost::system::error_code written,
                                                           std::size_t) {
                                               if (written)
                                                   return failed(me);
                                               me.read_sentinel(l, s);
                                           }));
                   }));
    }

    // Reads the replies of the sentinel being asked.
    void read_sentinel(link& l, const std::shared_ptr<session>& s)
    {
        s->socket.async_read_some(
            boost::asio::buffer(s->input),
            on_session(l, s, [&l, s](connection_impl& self, boost::system::error_code ec, std::size_t n) {
                if (ec || !s->reader.feed(s->input.data(), n))
                    return self.sentinel_step(l, s, self.resolver_.on_failure(s->primary));
                self.sentinel_reply(l, s);
            }));
    }

    // Carries out what the sentinel's next reply means, once it is read.
    void sentinel_reply(link& l, const std::shared_ptr<session>& s)
    {
        reply r;
        switch (s->reader.next(r))
        {
        case reply_reader::result::incomplete:
            return read_sentinel(l, s);
        case reply_reader::result::error:
            return sentinel_step(l, s, resolver_.on_failure(s->primary));
        case reply_reader::result::reply:
            return sentinel_step(l, s, resolver_.on_reply(s->primary, r));
        }
    }

    // The session is connected: reads start, and the set-up commands go out first.
    void set_up(link& l)
    {
        const std::shared_ptr<session> s = l.current;
        if (!unix_endpoint_)
        {
            boost::system::error_code ignored;
            s->socket.set_option(boost::asio::ip::tcp::no_delay(true), ignored);
            s->socket.set_option(boost::asio::socket_base::keep_alive(true), ignored);
        }
        read(l, s);
        request_pipeline& requests = requests_of(l);
        const std::string bytes = requests.start_session(setup_.commands(l.kind));
        if (!requests.setting_up())
            return perform(l, l.fsm.on_set_up(true));
        write(l, bytes);
    }

    // The link is up: the command link writes what waits (after its connect listeners, on a new
    // session), the subscriber link subscribes every channel; the health check starts.
    void run_link(link& l)
    {
        session& s = *l.current;
        s.primary.ran = true;
        s.connect_timer.cancel();
        if (l.home)
        {
            if (!std::exchange(s.established, true))
                for (const auto& listener : connect_listeners_)
                    listener.second();
            flush(*l.home);
            map(router_.on_link_up(l.home->index, slot_map_refresh::clock::now()));
        }
        else if (l.kind == link_kind::subscriber)
            write(l, subscriptions_.on_link_up());
        else
            write(l, format({"SUBSCRIBE", switch_master_channel}));
        arm_health_check(l);
    }

    void arm_health_check(link& l)
    {
        if (l.fsm.health_interval() == link_fsm::duration::zero())
            return;
        const std::shared_ptr<session> s = l.current;
        s->health_timer.expires_after(l.fsm.health_interval());
        s->health_timer.async_wait(
            on_session(l, s, [&l](connection_impl& self, boost::system::error_code ec) {
                if (!ec)
                    self.perform(l, l.fsm.on_health_timer());
            }));
    }

    // Closes the session of `l`; the commands awaiting its replies complete with `ec`.
    void teardown(link& l, boost::system::error_code ec)
    {
        const std::shared_ptr<session> s = std::move(l.current);
        if (!options_.sentinels.empty())
            resolver_.on_end(s->primary);
        boost::system::error_code ignored;
        s->socket.close(ignored);
        s->resolver.cancel();
        s->connect_timer.cancel();
        s->sentinel_timer.cancel();
        s->health_timer.cancel();
        requests_of(l).end_session(ec);
        if (l.kind == link_kind::subscriber)
            subscriptions_.on_link_down();
        if (l.home)
            router_.on_link_down(l.home->index);
    }

    void add_setup(std::string command, bool best_effort)
    {
        if (closed_ || !setup_.add(std::move(command), best_effort))
            return;
        for (const std::unique_ptr<node>& n : nodes_)
        {
            link& l = n->command;
            const link_fsm::state state = l.fsm.current();
            if (state != link_fsm::state::setting_up && state != link_fsm::state::ready)
                continue;
            l.fsm.on_setup_added();
            write(l, n->requests.add_setup(setup_.last()));
        }
    }

    request_pipeline& requests_of(link& l) noexcept
    {
        return l.home ? l.home->requests : l.kind == link_kind::subscriber ? subscriber_setup_ : watch_setup_;
    }

    // A sentinel announced that the primary moved to `to`: the links that are not there (set up
    // on the old primary, or still looking for one) start again from the sentinel that said so;
    // the commands written on them complete with connection_lost, the queued ones wait.
    void follow_switch(const primary_address& to, std::size_t sentinel)
    {
        resolver_.on_switch(sentinel);
        for (link* l : {&nodes_.front()->command, &subscriber_link_})
            if (l->current && sentinel_resolver::elsewhere(l->current->primary, to))
                perform(*l, l->fsm.on_failure());
    }

    // ---- routing the commands to the nodes: carries out what the router decides

    // Creates the nodes the router learnt of.
    void add_nodes()
    {
        while (nodes_.size() < router_.node_count())
        {
            nodes_.push_back(std::make_unique<node>(strand_, options_, random_seed(), nodes_.size()));
            nodes_.back()->requests.follow_redirects(router_.cluster(), options_.max_redirections);
        }
    }

    // Queues `op` on its node (or on `to`, after ASKING if `asking`), and starts the node's link.
    void route(command_op_ptr op, std::size_t to = cluster_router::none, bool asking = false)
    {
        const cluster_router::route_action a = router_.route(op.get()->command().slot(), to, router_view{*this});
        switch (a.what)
        {
        case cluster_router::route_action::kind::fail:
            return complete_command(op.release(), error::cluster_disabled, {});
        case cluster_router::route_action::kind::delay:
            return delay(std::move(op));
        case cluster_router::route_action::kind::send:
            break;
        }
        node& n = *nodes_[a.node];
        n.requests.add(std::move(op), asking);
        if (!closed_ && !n.command.fsm.started())
            perform(n.command, n.command.fsm.start());
        flush(n);
    }

    // Sends `op` again after reconnect_delay_min, with the others waiting, in order.
    void delay(command_op_ptr op)
    {
        op.get()->command().reset_redirections();
        delayed_.add(std::move(op));
        if (std::exchange(retry_armed_, true))
            return;
        retry_timer_.expires_after(std::max(options_.reconnect_delay_min, std::chrono::milliseconds(1)));
        retry_timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
            self->retry_armed_ = false;
            if (ec)
                return;
            for (command_op_base* delayed : self->delayed_.take_queued_unless([](int) { return false; }))
                self->route(command_op_ptr(delayed));
        });
    }

    // A node answered that `r.op` did not run there. The WAIT that confirms it (if any) goes
    // with it, right after it: on the node that runs it, it counts that node's replicas.
    void follow(const node& from, redirect r)
    {
        command_op_ptr op(r.op);
        command_op_ptr wait(r.wait);
        const cluster_router::redirect_action a = router_.on_redirect(from.index, r);
        add_nodes();
        if (a.delay)
        {
            delay(std::move(op));
            if (wait.get())
                delay(std::move(wait));
            return;
        }
        if (a.refresh)
            want_slots();
        route(std::move(op), a.node, a.asking);
        if (wait.get())
            route(std::move(wait), a.node);
    }

    void want_slots()
    {
        if (!closed_)
            map(router_.want_map(slot_map_refresh::clock::now(), router_view{*this}));
    }

    // Carries out what the router decided about the map.
    void map(const cluster_router::map_action& a)
    {
        switch (a.what)
        {
        case cluster_router::map_action::kind::none:
            return;
        case cluster_router::map_action::kind::ask:
            return write(nodes_[a.node]->command, nodes_[a.node]->requests.slots_query());
        case cluster_router::map_action::kind::start_nodes:
            for (const std::unique_ptr<node>& n : nodes_)
                if (!router_.standalone(n->index) && !n->command.fsm.started())
                    perform(n->command, n->command.fsm.start());
            return;
        case cluster_router::map_action::kind::wait:
            slots_timer_.expires_at(a.at);
            slots_timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
                if (!ec && !self->closed_)
                    self->map(self->router_.on_timer(slot_map_refresh::clock::now(), router_view{*self}));
            });
            return;
        }
    }

    // The node `n` answered its set-up's cluster check or CLUSTER SLOTS with `r`: its cluster
    // support is disabled. It is never used: its commands go to another node, or, with none left,
    // they all fail.
    void drop_standalone(node& n, const reply& r)
    {
        const bool none_left = router_.drop_standalone(n.index);
        perform(n.command, n.command.fsm.close());
        if (none_left)
        {
            for (const std::unique_ptr<node>& each : nodes_)
                each->requests.fail_queued(error::cluster_disabled, r);
            delayed_.fail_queued(error::cluster_disabled, r);
            return;
        }
        for (command_op_base* op : n.requests.take_queued_unless([](int) { return false; }))
            route(command_op_ptr(op));
        want_slots();
    }

    // CLUSTER SLOTS answered `r` on the link of `from`. With a new map, the commands queued for a
    // node that no longer serves their slot go to the one that does; a node that serves nothing
    // and cannot be reached is left alone.
    void learn_slots(node& from, const reply& r)
    {
        const cluster_router::map_answer answer = router_.on_slots(from.index, r);
        add_nodes();
        if (answer == cluster_router::map_answer::standalone)
            return drop_standalone(from, r);
        if (answer == cluster_router::map_answer::learnt)
        {
            for (std::size_t i = 0; i < nodes_.size(); ++i)
            {
                node& here = *nodes_[i];
                const link_fsm::state state = here.command.fsm.current();
                for (command_op_base* op :
                     here.requests.take_queued_unless([&](int slot) { return router_.stays(i, slot, state); }))
                    route(command_op_ptr(op));
                if (!router_.serves(i) && !here.requests.has_queued())
                    perform(here.command, here.command.fsm.park());
            }
        }
        for (const std::unique_ptr<node>& n : nodes_)
            flush(*n);
        if (router_.wanted())
            want_slots();
    }

    // ---- reading and writing

    void read(link& l, const std::shared_ptr<session>& s)
    {
        s->socket.async_read_some(
            boost::asio::buffer(s->input),
            on_session(l, s, [&l, s](connection_impl& self, boost::system::error_code ec, std::size_t n) {
                self.received(l, s, ec, n);
            }));
    }

    void received(link& l, const std::shared_ptr<session>& s, boost::system::error_code ec, std::size_t n)
    {
        if (ec || !s->reader.feed(s->input.data(), n))
            return perform(l, l.fsm.on_failure());
        for (;;)
        {
            reply r;
            const reply_reader::result result = s->reader.next(r);
            if (result == reply_reader::result::incomplete)
                break;
            if (result == reply_reader::result::error)
                return perform(l, l.fsm.on_failure());
            dispatch(l, std::move(r));
            if (l.current != s) // the reply ended the session
                return;
        }
        read(l, s);
    }

    void dispatch(link& l, reply&& r)
    {
        l.fsm.on_reply();
        if (r.kind != reply_kind::error)
            l.fsm.on_answer();
        if (l.kind == link_kind::subscriber && l.fsm.ready())
        {
            subscriptions_.on_push(r);
            return;
        }
        if (l.kind == link_kind::watch && l.fsm.ready())
        {
            if (const std::optional<primary_address> to = switched_primary(r, options_.master_name))
                follow_switch(*to, l.current->watched);
            return;
        }
        request_pipeline& requests = requests_of(l);
        switch (requests.on_reply(std::move(r)))
        {
        case reply_answer::command:
        case reply_answer::setup:
            return;
        case reply_answer::health:
            return;
        case reply_answer::checked: // a cluster node: the rest of the set-up may run there
            return write(l, requests.take_held_setup());
        case reply_answer::redirected:
            return follow(*l.home, requests.take_redirect());
        case reply_answer::slots:
            return learn_slots(*l.home, requests.take_slots());
        case reply_answer::set_up:
            // A failed set-up fails the commands queued meanwhile, with its reply; but with
            // Sentinel, a server that is not (or no longer) the primary only sends the link back
            // to the sentinels, and the commands wait; in a cluster, a node without cluster
            // support is never used again, and its commands go to another node.
            if (!options_.sentinels.empty() && requests.setup_error() == error::read_only)
                resolver_.on_not_primary();
            else if (l.home && requests.setup_error() == error::cluster_disabled)
                return drop_standalone(*l.home, reply(requests.setup_reply()));
            else if (l.home && requests.setup_error())
                requests.fail_queued(requests.setup_error(), requests.setup_reply());
            return perform(l, l.fsm.on_set_up(!requests.setup_error()));
        case reply_answer::not_primary: // READONLY: the server was demoted
            resolver_.on_not_primary();
            return perform(l, l.fsm.on_failure());
        case reply_answer::unexpected:
            return perform(l, l.fsm.on_failure());
        }
    }

    void write(link& l, std::string_view bytes)
    {
        if (!l.current || bytes.empty())
            return;
        l.current->output += bytes;
        write_out(l, l.current);
    }

    void write_out(link& l, const std::shared_ptr<session>& s)
    {
        if (s->write_in_progress || s->output.empty())
            return;
        s->writing.clear();
        std::swap(s->output, s->writing);
        s->write_in_progress = true;
        boost::asio::async_write(
            s->socket, boost::asio::buffer(s->writing),
            on_session(l, s, [&l, s](connection_impl& self, boost::system::error_code ec, std::size_t) {
                s->write_in_progress = false;
                if (ec)
                    return self.perform(l, l.fsm.on_failure());
                self.write_out(l, s);
            }));
    }

    // Writes every command queued for `n`, in one batch, once its link is ready (in a cluster, its
    // set-up proved it a cluster node) and, in a cluster, once the map was first answered, so
    // that they go to the nodes of their slots.
    void flush(node& n)
    {
        if (router_.may_write() && n.command.fsm.ready() && n.requests.has_queued())
            write(n.command, n.requests.take_commands());
    }

    void shut()
    {
        if (closed_)
            return;
        closed_ = true;
        for (const auto& listener : std::exchange(close_listeners_, {}))
            listener.second();
        for (const std::unique_ptr<node>& n : nodes_)
        {
            perform(n->command, n->command.fsm.close());
            n->requests.close();
        }
        for (link* l : {&subscriber_link_, &watch_link_})
            perform(*l, l->fsm.close());
        retry_timer_.cancel();
        slots_timer_.cancel();
        delayed_.close();
        subscriptions_.clear();
        connect_listeners_.clear();
    }

    boost::asio::strand<boost::asio::any_io_executor> strand_;
    connection_options options_;
    std::optional<endpoint_type> unix_endpoint_;
    link_setup setup_;                         // what each session runs first
    cluster_router router_;                    // where the commands go
    sentinel_resolver resolver_;               // with Sentinel, where the primary is
    std::vector<std::unique_ptr<node>> nodes_; // the router's nodes, in its order
    boost::asio::steady_timer slots_timer_;    // until the map may be asked again
    request_pipeline delayed_;              // commands to send again (TRYAGAIN, CLUSTERDOWN)
    boost::asio::steady_timer retry_timer_; // when they go
    bool retry_armed_ = false;
    link subscriber_link_;
    link watch_link_;
    request_pipeline subscriber_setup_; // the subscriber link's set-up (credentials)
    request_pipeline watch_setup_;      // the watch link's set-up (the sentinels' credentials)
    subscription_table subscriptions_;
    std::map<std::uint64_t, event_callback> connect_listeners_;
    std::map<std::uint64_t, event_callback> close_listeners_;
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
