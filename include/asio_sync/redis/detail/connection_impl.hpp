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
#include <asio_sync/redis/detail/link_driver.hpp>
#include <asio_sync/redis/detail/request_pipeline.hpp>
#include <asio_sync/redis/detail/subscription_table.hpp>
#include <asio_sync/redis/error.hpp>
#include <asio_sync/redis/reply.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/system/error_code.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace asio_sync::redis::detail {

// The engine of a connection, shared by the connection object and by every handler of its own I/O,
// so that those may outlive the connection object. Its links (link_driver) reach the server: one
// command link per node (pipelined commands, replies matched in order: the one server, or each
// primary of a Redis Cluster), and the subscriber link (pub/sub). What travels on them, and where,
// is decided without I/O, and this class carries it out: a command link's requests by its
// request_pipeline, the subscriber link's by the subscription_table, the node of each command by
// the cluster_router (the slot map learnt with CLUSTER SLOTS and the nodes' redirections). All
// its state lives on the strand; the public functions may be called from any thread and post
// their work there.
class connection_impl final : public link_driver
{
public:
    // Throws if the options name a unix socket path that is too long, or both sentinels and
    // cluster nodes, or allow no redirection.
    connection_impl(const boost::asio::any_io_executor& ex, const connection_options& options)
        : link_driver(ex, options), router_(options_), slots_timer_(strand_), retry_timer_(strand_)
    {
        add_nodes();
        if (!options_.sentinels.empty())
            nodes_.front()->requests.requeue_read_only(true);
    }

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
    // A server that the command links reach: the one server, or a cluster node.
    struct node
    {
        node(const boost::asio::any_io_executor& ex, const connection_options& options, unsigned seed,
             std::size_t i)
            : index(i), command(link_kind::command, ex, options, seed, i)
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

    std::shared_ptr<connection_impl> shared_self() noexcept
    {
        return std::static_pointer_cast<connection_impl>(shared_from_this());
    }

    template <class Function>
    void run(Function&& f)
    {
        boost::asio::post(strand_,
                          [self = shared_self(), f = std::forward<Function>(f)]() mutable { f(*self); });
    }

    // ---- what the links ask of their owner

    request_pipeline& command_requests(link& l) noexcept override { return nodes_[l.node]->requests; }

    server_address address_of(link& l) override
    {
        const std::size_t to = l.kind == link_kind::command ? l.node : router_.next_subscriber_node();
        return {router_.host(to), router_.port(to)};
    }

    // The command link writes what waits (after its connect listeners, on a new session), the
    // subscriber link subscribes every channel.
    void link_up(link& l) override
    {
        if (l.kind == link_kind::subscriber)
            return write(l, subscriptions_.on_link_up());
        if (!std::exchange(l.current->established, true))
            for (const auto& listener : connect_listeners_)
                listener.second();
        flush(*nodes_[l.node]);
        map(router_.on_link_up(l.node, slot_map_refresh::clock::now()));
    }

    void link_down(link& l) override
    {
        if (l.kind == link_kind::subscriber)
            subscriptions_.on_link_down();
        else
            router_.on_link_down(l.node);
    }

    // In a cluster, the node may have failed over: the map is learnt again.
    void reconnecting(link&) override { want_slots(); }

    link& primary_link() noexcept override { return nodes_.front()->command; }

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
        const cluster_router::route_action a =
            router_.route(op.get()->command().slot(), to, router_view{*this});
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
        retry_timer_.async_wait([self = shared_self()](boost::system::error_code ec) {
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
            slots_timer_.async_wait([self = shared_self()](boost::system::error_code ec) {
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
                for (command_op_base* op : here.requests.take_queued_unless(
                         [&](int slot) { return router_.stays(i, slot, state); }))
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

    // ---- the replies

    void on_reply(link& l, reply&& r) override
    {
        if (l.kind == link_kind::subscriber && l.fsm.ready())
        {
            subscriptions_.on_push(r);
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
            return follow(*nodes_[l.node], requests.take_redirect());
        case reply_answer::slots:
            return learn_slots(*nodes_[l.node], requests.take_slots());
        case reply_answer::set_up:
            // A failed set-up fails the commands queued meanwhile, with its reply; but with
            // Sentinel, a server that is not (or no longer) the primary only sends the link back
            // to the sentinels, and the commands wait; in a cluster, a node without cluster
            // support is never used again, and its commands go to another node.
            if (!options_.sentinels.empty() && requests.setup_error() == error::read_only)
                not_the_primary();
            else if (l.kind == link_kind::command && requests.setup_error() == error::cluster_disabled)
                return drop_standalone(*nodes_[l.node], reply(requests.setup_reply()));
            else if (l.kind == link_kind::command && requests.setup_error())
                requests.fail_queued(requests.setup_error(), requests.setup_reply());
            return perform(l, l.fsm.on_set_up(!requests.setup_error()));
        case reply_answer::not_primary: // READONLY: the server was demoted
            not_the_primary();
            return perform(l, l.fsm.on_failure());
        case reply_answer::unexpected:
            return perform(l, l.fsm.on_failure());
        }
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

    cluster_router router_;                    // where the commands go
    std::vector<std::unique_ptr<node>> nodes_; // the router's nodes, in its order
    boost::asio::steady_timer slots_timer_;    // until the map may be asked again
    request_pipeline delayed_;                 // commands to send again (TRYAGAIN, CLUSTERDOWN)
    boost::asio::steady_timer retry_timer_;    // when they go
    bool retry_armed_ = false;
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
