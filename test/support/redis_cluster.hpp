// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_TEST_SUPPORT_REDIS_CLUSTER_HPP
#define ASIO_SYNC_TEST_SUPPORT_REDIS_CLUSTER_HPP

// A Redis Cluster of real processes on loopback: three primaries (slots 0-5460, 5461-10922,
// 10923-16383, as `redis-cli --cluster create` splits them) and as many replicas of each as asked,
// created with `redis-cli --cluster create`. A node that stops answering is failed over after
// 1 s (cluster-node-timeout). A slot can be moved between primaries live, step by step, as
// `redis-cli --cluster reshard` does. Started and stopped by the test; a failed start throws.

#include "redis_server.hpp"

#include <asio_sync/redis/connection_options.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace asio_sync::test {

class redis_cluster
{
public:
    static constexpr std::size_t primaries = 3;

    explicit redis_cluster(std::size_t replicas = 0)
    {
        redis_server::options o;
        o.extra_args = {"--cluster-enabled",
                        "yes",
                        "--cluster-config-file",
                        "nodes.conf",
                        "--cluster-node-timeout",
                        "1000",
                        "--repl-diskless-sync-delay",
                        "0",
                        "--cluster-replica-validity-factor",
                        "0"};
        const std::size_t count = (1 + replicas) * primaries;
        std::string command = "redis-cli --cluster create";
        for (std::size_t i = 0; i < count; ++i)
        {
            servers_.push_back(std::make_unique<redis_server>(o));
            command += " 127.0.0.1:" + std::to_string(servers_.back()->port());
        }
        command += " --cluster-replicas " + std::to_string(replicas);
        command += " --cluster-yes > " + (servers_[0]->dir() / "create.log").string() + " 2>&1";
        if (std::system(command.c_str()) != 0)
            throw std::runtime_error("redis_cluster: redis-cli --cluster create failed");
        // Ready once every node sees the cluster whole and, with replicas, each replica in sync.
        wait_for_set_up("the cluster to form", [&] {
            for (const auto& s : servers_)
            {
                if (s->command({"CLUSTER", "INFO"}).find("cluster_state:ok") == std::string::npos)
                    return false;
                if (s->command({"ROLE"}).rfind("slave", 0) == 0 &&
                    s->command({"INFO", "replication"}).find("master_link_status:up") == std::string::npos)
                    return false;
            }
            return true;
        });
    }

    redis_cluster(const redis_cluster&) = delete;
    redis_cluster& operator=(const redis_cluster&) = delete;

    // Connection options with every node as a seed.
    redis::connection_options options() const
    {
        redis::connection_options o = failover_client_options();
        for (const auto& s : servers_)
            o.cluster_nodes.push_back({"127.0.0.1", s->port()});
        return o;
    }

    redis_server& server(std::size_t i) { return *servers_.at(i); }
    std::size_t servers() const noexcept { return servers_.size(); }

    // The server that serves `slot` as a primary, as the first running node that answers says.
    redis_server& owner(int slot)
    {
        for (const auto& asked : servers_)
        {
            if (!asked->running())
                continue;
            // [[first, last, [host, port, id, ...], replicas...], ...]
            for (const redis_server::reply& range : asked->execute({"CLUSTER", "SLOTS"}).elements)
                if (range.elements.size() >= 3 && range.elements[0].integer <= slot &&
                    slot <= range.elements[1].integer && range.elements[2].elements.size() >= 2)
                    return by_port(static_cast<std::uint16_t>(range.elements[2].elements[1].integer));
        }
        throw std::runtime_error("redis_cluster: no node serves the slot");
    }

    redis_server& by_port(std::uint16_t port)
    {
        for (const auto& s : servers_)
            if (s->port() == port)
                return *s;
        throw std::runtime_error("redis_cluster: no server on that port");
    }

    static std::string id_of(const redis_server& s) { return trimmed(s.command({"CLUSTER", "MYID"})); }

    // Moves `slot` from `from` to `to` as `redis-cli --cluster reshard` does: IMPORTING on `to`,
    // MIGRATING on `from`, the keys moved one at a time with MIGRATE, then the slot given to `to`
    // everywhere. `between` runs between the steps (the test lets its fleet run there).
    void migrate(int slot, redis_server& from, redis_server& to, const std::function<void()>& between)
    {
        open_migration(slot, from, to);
        between();
        while (move_keys(slot, from, to, 1) != 0)
            between();
        hand_over(slot, to);
    }

    // The steps of a migration, for a test that holds one open: IMPORTING on `to`, MIGRATING on
    // `from`; then up to `count` keys moved in one MIGRATE (returns how many); then the slot given to
    // `to` on every primary (a replica refuses SETSLOT, and follows its primary).
    void open_migration(int slot, redis_server& from, redis_server& to)
    {
        const std::string s = std::to_string(slot);
        to.command({"CLUSTER", "SETSLOT", s, "IMPORTING", id_of(from)});
        from.command({"CLUSTER", "SETSLOT", s, "MIGRATING", id_of(to)});
    }

    std::size_t move_keys(int slot, redis_server& from, redis_server& to, std::size_t count)
    {
        std::istringstream listed(
            from.command({"CLUSTER", "GETKEYSINSLOT", std::to_string(slot), std::to_string(count)}));
        std::vector<std::string> command{"MIGRATE", "127.0.0.1", std::to_string(to.port()), "", "0", "5000",
                                         "REPLACE", "KEYS"};
        for (std::string key; std::getline(listed, key);)
            if (!key.empty())
                command.push_back(key);
        const std::size_t moved = command.size() - 8;
        if (moved != 0)
            from.command(command);
        return moved;
    }

    void hand_over(int slot, redis_server& to)
    {
        for (const auto& node : servers_)
            if (node->running() && node->command({"ROLE"}).rfind("master", 0) == 0)
                node->command({"CLUSTER", "SETSLOT", std::to_string(slot), "NODE", id_of(to)});
    }

    // Waits until every running node agrees that `slot` is served by a primary other than
    // `old_port`, and that primary answers ROLE as one.
    void wait_for_failover_of(int slot, std::uint16_t old_port)
    {
        wait_for_set_up("a failover", [&] {
            for (const auto& s : servers_)
                if (s->running() &&
                    s->command({"CLUSTER", "INFO"}).find("cluster_state:ok") == std::string::npos)
                    return false;
            const redis_server& promoted = owner(slot);
            return promoted.port() != old_port && promoted.command({"ROLE"}).rfind("master", 0) == 0;
        });
    }

private:
    static std::string trimmed(std::string s)
    {
        while (!s.empty() && (s.back() == '\n' || s.back() == '\r'))
            s.pop_back();
        return s;
    }

    std::vector<std::unique_ptr<redis_server>> servers_;
};

// The first of "<prefix>0", "<prefix>1", ... whose slot (`slot` of the name) `primary` serves.
template <class Slot>
std::string name_on(redis_cluster& cluster, const redis_server& primary, const std::string& prefix, Slot slot)
{
    for (int i = 0;; ++i)
    {
        const std::string name = prefix + std::to_string(i);
        if (&cluster.owner(slot(name)) == &primary)
            return name;
    }
}

} // namespace asio_sync::test

#endif // ASIO_SYNC_TEST_SUPPORT_REDIS_CLUSTER_HPP
