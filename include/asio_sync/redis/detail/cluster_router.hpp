// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_REDIS_DETAIL_CLUSTER_ROUTER_HPP
#define ASIO_SYNC_REDIS_DETAIL_CLUSTER_ROUTER_HPP

// Where the commands of a connection go, without I/O: the nodes known (the one server, or the
// nodes of a Redis Cluster), the node of each slot as CLUSTER SLOTS and the MOVED answers said, the
// nodes found to be standalone servers, and when the map is asked again. Each decision is an
// action for connection_impl.hpp, which carries it out on the links (link_driver.hpp) and queues: send a
// command to a node (after ASKING), delay it, fail it; ask the map through a node, start the
// nodes' links, or wait until the map may be asked. What the router needs to know of the links
// and of the queues it reads from a view given to each decision:
//   link_fsm::state link(std::size_t node) const  the state of the node's command link;
//   bool busy(std::size_t node, int slot) const   a command of `slot` is queued there, or awaits
//                                                 its reply there;
//   bool delayed(int slot) const                  a command of `slot` waits to be sent again.

#include <asio_sync/redis/connection_options.hpp>
#include <asio_sync/redis/detail/link_fsm.hpp>
#include <asio_sync/redis/detail/request_pipeline.hpp>
#include <asio_sync/redis/detail/slot_map_refresh.hpp>
#include <asio_sync/redis/reply.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace asio_sync::redis::detail {

class cluster_router
{
public:
    static constexpr std::size_t slot_count = 16384;
    static constexpr std::size_t none = static_cast<std::size_t>(-1);

    // What to do with a command.
    struct route_action
    {
        enum class kind
        {
            send,  // queue it on `node` and start that node's link
            delay, // send it again later, with the others waiting, in order
            fail,  // complete it with error::cluster_disabled, unsent
        };
        kind what = kind::send;
        std::size_t node = 0;
    };

    // What to do after a redirection: the command (and the WAIT that confirms it) goes to `node`,
    // after ASKING if `asking`; or it is delayed. With `refresh`, the map is stale: want_map().
    struct redirect_action
    {
        bool delay = false;
        std::size_t node = 0;
        bool asking = false;
        bool refresh = false;
    };

    // What to do about the map.
    struct map_action
    {
        enum class kind
        {
            none,
            ask,         // write CLUSTER SLOTS on the link of `node`
            start_nodes, // start every node's link that is not started (and not standalone)
            wait,        // arm the map's timer until `at`, then call on_timer()
        };
        kind what = kind::none;
        std::size_t node = 0;
        slot_map_refresh::clock::time_point at{};
    };

    // What CLUSTER SLOTS answered.
    enum class map_answer
    {
        standalone, // the node is not a cluster node: drop_standalone()
        no_map,     // another answer (an error): the commands follow the nodes' redirections
        learnt,     // a new map: the commands queued elsewhere than stays() says are routed again
    };

    // The one server of the options; or, with cluster nodes, those seeds, and no slot known.
    explicit cluster_router(const connection_options& options) : refresh_(options.reconnect_delay_min)
    {
        if (options.cluster_nodes.empty())
            node_at(options.host, options.port);
        else
        {
            slots_.assign(slot_count, none);
            for (const connection_options::node_address& seed : options.cluster_nodes)
                node_at(seed.host, seed.port);
        }
    }

    bool cluster() const noexcept { return !slots_.empty(); }

    // ---- the nodes

    // The node of `host`:`port`, added if it is new (as the last one).
    std::size_t node_at(const std::string& host, std::uint16_t port)
    {
        for (std::size_t i = 0; i < nodes_.size(); ++i)
            if (nodes_[i].host == host && nodes_[i].port == port)
                return i;
        nodes_.push_back({host, port, false});
        return nodes_.size() - 1;
    }

    std::size_t node_count() const noexcept { return nodes_.size(); }
    const std::string& host(std::size_t node) const noexcept { return nodes_[node].host; }
    std::uint16_t port(std::size_t node) const noexcept { return nodes_[node].port; }
    bool standalone(std::size_t node) const noexcept { return nodes_[node].standalone; }

    // The node of `slot` in the map (none: unknown).
    std::size_t owner(int slot) const noexcept
    {
        return slots_.empty() || slot < 0 ? none : slots_[static_cast<std::size_t>(slot)];
    }

    // The node answered that its cluster support is disabled: it is never used again. Whether
    // every node known is now such a server (every command fails with cluster_disabled).
    bool drop_standalone(std::size_t node) noexcept
    {
        if (!std::exchange(nodes_[node].standalone, true))
            ++standalone_nodes_;
        return only_standalone();
    }

    // The node the subscriber link tries next: each attempt the next node (one that is not a
    // standalone server, if there is one).
    std::size_t next_subscriber_node() noexcept
    {
        std::size_t to = subscriber_attempts_++ % nodes_.size();
        for (std::size_t i = 0; nodes_[to].standalone && i < nodes_.size(); ++i)
            to = subscriber_attempts_++ % nodes_.size();
        return to;
    }

    // ---- the commands

    // Where a command of `slot` goes (to `to`, if it is not none: it follows a redirection).
    // In a cluster, the commands of one slot reach the server in the order they were sent,
    // whichever node they are redirected to (a release must not overtake the acquire it gives
    // up): a command waits (with those refused for now) while earlier ones of its slot wait to be
    // sent again, or are queued or await their reply on another node, whose redirections would
    // bring them to its node after it. A command redirected to a standalone server fails: the
    // node that serves its slot is not a cluster node.
    template <class View>
    route_action route(int slot, std::size_t to, const View& view) const
    {
        if (only_standalone() || (to != none && nodes_[to].standalone))
            return {route_action::kind::fail, 0};
        const std::size_t n = to != none ? to : node_for(slot, view);
        if (slot >= 0 && cluster() && (view.delayed(slot) || (to == none && busy_elsewhere(n, slot, view))))
            return {route_action::kind::delay, 0};
        return {route_action::kind::send, n};
    }

    // The node `from` answered that a command did not run there (request_pipeline bounds the MOVED
    // and ASK in a row). MOVED teaches the slot's owner, for good; ASK sends only this command,
    // after ASKING; TRYAGAIN and CLUSTERDOWN delay it. A redirection without a host names the
    // host of the node that answered.
    redirect_action on_redirect(std::size_t from, const redirect& r)
    {
        if (r.what == redirect::kind::retry)
            return {true, 0, false, false};
        const std::size_t to = node_at(r.host.empty() ? std::string(nodes_[from].host) : r.host, r.port);
        if (r.what == redirect::kind::ask)
            return {false, to, true, false};
        slots_[static_cast<std::size_t>(r.slot)] = to;
        return {false, to, false, true};
    }

    // Whether the commands of `node` may be written: in a cluster, once the map was first answered,
    // so that they go to the nodes of their slots.
    bool may_write() const noexcept { return slots_.empty() || map_known_; }

    // ---- the map

    // The connection starts: in a cluster, the map is wanted from the first link up.
    void start() noexcept { wanted_ = cluster(); }

    // The map may be stale: it is asked again from a node whose link is up (after the question in
    // flight, if there is one, and at most once per reconnect_delay_min). With none up, every node
    // not trying is started.
    template <class View>
    map_action want_map(slot_map_refresh::clock::time_point now, const View& view)
    {
        if (!cluster())
            return {};
        wanted_ = true;
        if (asking_ != none)
            return {};
        for (std::size_t i = 0; i < nodes_.size(); ++i)
            if (!nodes_[i].standalone && view.link(i) == link_fsm::state::ready)
                return ask_through(i, now);
        return {map_action::kind::start_nodes};
    }

    // The link of `node` is up: the map goes through it if it is wanted and not being asked.
    map_action on_link_up(std::size_t node, slot_map_refresh::clock::time_point now)
    {
        if (!wanted_ || asking_ != none)
            return {};
        return ask_through(node, now);
    }

    // The map's timer expired.
    template <class View>
    map_action on_timer(slot_map_refresh::clock::time_point now, const View& view)
    {
        timer_armed_ = false;
        return wanted_ ? want_map(now, view) : map_action{};
    }

    // The link of `node` dropped: a question on it is lost with it, and asked again.
    void on_link_down(std::size_t node) noexcept
    {
        if (asking_ != node)
            return;
        asking_ = none;
        wanted_ = true;
    }

    bool wanted() const noexcept { return wanted_; }

    // CLUSTER SLOTS answered `r` on the link of `from`: [[first, last, [host, port, ...], replicas...],
    // ...]. A range that is not of this shape is skipped; a host empty or "?" is that of `from`.
    map_answer on_slots(std::size_t from, const reply& r)
    {
        asking_ = none;
        if (is_cluster_disabled(r))
            return map_answer::standalone;
        map_known_ = true;
        if (r.kind != reply_kind::array)
            return map_answer::no_map;
        std::vector<std::size_t> slots(slot_count, none);
        for (const reply& range : r.elements)
        {
            if (range.kind != reply_kind::array || range.elements.size() < 3 ||
                range.elements[0].kind != reply_kind::integer ||
                range.elements[1].kind != reply_kind::integer ||
                range.elements[2].kind != reply_kind::array || range.elements[2].elements.size() < 2 ||
                range.elements[2].elements[0].kind != reply_kind::string ||
                range.elements[2].elements[1].kind != reply_kind::integer)
                continue;
            const std::int64_t first = range.elements[0].integer;
            const std::int64_t last = range.elements[1].integer;
            const std::int64_t port = range.elements[2].elements[1].integer;
            if (first < 0 || last >= static_cast<std::int64_t>(slot_count) || first > last || port <= 0 ||
                port > 65535)
                continue;
            const std::string& host = range.elements[2].elements[0].text;
            const std::size_t owner =
                node_at(host.empty() || host == "?" ? std::string(nodes_[from].host) : host,
                        static_cast<std::uint16_t>(port));
            std::fill(slots.begin() + first, slots.begin() + last + 1, owner);
        }
        slots_ = std::move(slots);
        return map_answer::learnt;
    }

    // Whether `node` serves a slot of the map.
    bool serves(std::size_t node) const noexcept
    {
        return std::find(slots_.begin(), slots_.end(), node) != slots_.end();
    }

    // After a map was learnt: whether a command of `slot` queued on `node` (whose link is in
    // `state`) stays there. It stays on the node of its slot; a keyless command, or one of a
    // slot nobody serves, stays on a node that serves a slot or that is not waiting to reconnect.
    bool stays(std::size_t node, int slot, link_fsm::state state) const noexcept
    {
        const bool useful = serves(node) || state != link_fsm::state::waiting;
        if (slot < 0)
            return useful;
        const std::size_t owner = slots_[static_cast<std::size_t>(slot)];
        return owner == node || (owner == none && useful);
    }

private:
    struct node_entry
    {
        std::string host;
        std::uint16_t port;
        bool standalone; // its cluster support is disabled: never used
    };

    // Whether every node known answered that its cluster support is disabled (asked for each
    // command routed: a count, not a scan).
    bool only_standalone() const noexcept { return !slots_.empty() && standalone_nodes_ == nodes_.size(); }

    // The node that serves `slot`; for a keyless command, or a slot not served (or served by a
    // standalone server: another node redirects it, or serves it after a failover), a node whose
    // link is up, else one that is trying, else the first; never a standalone server, if there is
    // another node.
    template <class View>
    std::size_t node_for(int slot, const View& view) const noexcept
    {
        if (slots_.empty())
            return 0;
        const std::size_t owner = this->owner(slot);
        if (owner != none && !nodes_[owner].standalone)
            return owner;
        for (std::size_t i = 0; i < nodes_.size(); ++i)
            if (!nodes_[i].standalone && view.link(i) == link_fsm::state::ready)
                return i;
        for (std::size_t i = 0; i < nodes_.size(); ++i)
            if (!nodes_[i].standalone && view.link(i) != link_fsm::state::idle)
                return i;
        for (std::size_t i = 0; i < nodes_.size(); ++i)
            if (!nodes_[i].standalone)
                return i;
        return 0;
    }

    template <class View>
    bool busy_elsewhere(std::size_t node, int slot, const View& view) const
    {
        for (std::size_t i = 0; i < nodes_.size(); ++i)
            if (i != node && view.busy(i, slot))
                return true;
        return false;
    }

    map_action ask_through(std::size_t node, slot_map_refresh::clock::time_point now)
    {
        if (!refresh_.may_ask(now))
        {
            if (std::exchange(timer_armed_, true))
                return {};
            return {map_action::kind::wait, 0, refresh_.due()};
        }
        refresh_.asked(now);
        wanted_ = false;
        asking_ = node;
        return {map_action::kind::ask, node};
    }

    std::vector<node_entry> nodes_;  // the one server; or the cluster nodes known
    std::vector<std::size_t> slots_; // in a cluster, the node of each slot (none: unknown)
    std::size_t standalone_nodes_ = 0;
    std::size_t subscriber_attempts_ = 0;
    std::size_t asking_ = none; // the node whose link awaits the map's reply
    bool wanted_ = false;       // the map must be asked (again)
    bool map_known_ = false;    // the map was answered once: commands may be written
    bool timer_armed_ = false;  // a wait for the map was returned, and has not expired
    slot_map_refresh refresh_;  // when it may be asked again
};

} // namespace asio_sync::redis::detail

#endif // ASIO_SYNC_REDIS_DETAIL_CLUSTER_ROUTER_HPP
