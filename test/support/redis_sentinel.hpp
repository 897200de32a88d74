// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_TEST_SUPPORT_REDIS_SENTINEL_HPP
#define ASIO_SYNC_TEST_SUPPORT_REDIS_SENTINEL_HPP

// A Redis Sentinel set-up of real processes on loopback: a primary, replicas of it, and sentinels
// that watch it under one name and promote a replica when it fails (quorum 2, a primary is down
// after 500 ms without an answer). Started and stopped by the test; a failed start throws.
// `min_replicas_max_lag` above 0 makes every server refuse writes (NOREPLICAS) once no replica has
// acknowledged it for that many seconds (min-replicas-to-write 1): what a fleet semaphore without
// durable grants requires under Sentinel.

#include "redis_server.hpp"

#include <asio_sync/redis/connection_options.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace asio_sync::test {

// Whether sentinels watching the primary `name` (servers[0], with the replicas after it) can fail
// it over: every replica in sync, and every sentinel knowing the replicas and the other sentinels.
inline bool sentinels_ready(const std::vector<std::unique_ptr<redis_server>>& servers,
                            const std::vector<std::unique_ptr<redis_server>>& sentinels, const char* name)
{
    // The value after `field` in SENTINEL MASTER's flat list of fields and values.
    const auto count_of = [](const std::string& fields, const std::string& field) -> std::size_t {
        const std::size_t at = fields.find(field + "\n");
        return at == std::string::npos
                   ? 0
                   : static_cast<std::size_t>(std::stoul(fields.substr(at + field.size() + 1)));
    };
    for (std::size_t i = 1; i < servers.size(); ++i)
        if (servers[i]->command({"INFO", "replication"}).find("master_link_status:up") == std::string::npos)
            return false;
    for (const auto& s : sentinels)
    {
        const std::string known = s->command({"SENTINEL", "MASTER", name});
        if (count_of(known, "num-slaves") != servers.size() - 1 ||
            count_of(known, "num-other-sentinels") != sentinels.size() - 1)
            return false;
    }
    return true;
}

class redis_sentinel_set
{
public:
    static constexpr const char* name = "primary";

    // `replicas` replicas of the primary, and `sentinels` sentinels (at least 3 for a quorum of 2
    // that survives one of them).
    explicit redis_sentinel_set(std::size_t replicas = 2, std::size_t sentinels = 3,
                                unsigned min_replicas_max_lag = 0)
    {
        // Any of them may be the primary that feeds a replica: a full sync starts at once (Redis 7
        // waits 5 s by default for more replicas to share a diskless one).
        redis_server::options first;
        first.extra_args = {"--repl-diskless-sync-delay", "0"};
        if (min_replicas_max_lag != 0)
            first.extra_args.insert(first.extra_args.end(),
                                    {"--min-replicas-to-write", "1", "--min-replicas-max-lag",
                                     std::to_string(min_replicas_max_lag)});
        servers_.push_back(std::make_unique<redis_server>(first));
        const std::string primary_port = std::to_string(servers_[0]->port());
        for (std::size_t i = 0; i < replicas; ++i)
        {
            redis_server::options o = first;
            o.extra_args.insert(o.extra_args.end(), {"--replicaof", "127.0.0.1", primary_port});
            servers_.push_back(std::make_unique<redis_server>(o));
        }
        const std::string config = std::string("sentinel monitor ") + name + " 127.0.0.1 " + primary_port +
                                   " 2\nsentinel down-after-milliseconds " + name +
                                   " 500\nsentinel failover-timeout " + name +
                                   " 4000\nsentinel parallel-syncs " + name + " 2\n";
        for (std::size_t i = 0; i < sentinels; ++i)
        {
            redis_server::options o;
            o.sentinel_config = config;
            sentinels_.push_back(std::make_unique<redis_server>(o));
        }
        // Ready once every replica is in sync and every sentinel knows the replicas and the other
        // sentinels: only then can a failover happen.
        wait_for_set_up("the replicas to sync and the sentinels to meet",
                        [&] { return sentinels_ready(servers_, sentinels_, name); });
    }

    redis_sentinel_set(const redis_sentinel_set&) = delete;
    redis_sentinel_set& operator=(const redis_sentinel_set&) = delete;

    // Connection options that find the primary through the sentinels.
    redis::connection_options options() const
    {
        redis::connection_options o = failover_client_options();
        for (const auto& s : sentinels_)
            o.sentinels.push_back({"127.0.0.1", s->port()});
        o.master_name = name;
        return o;
    }

    // The servers: [0] the first primary, then the replicas.
    redis_server& server(std::size_t i) { return *servers_.at(i); }
    std::size_t servers() const noexcept { return servers_.size(); }
    redis_server& sentinel(std::size_t i) { return *sentinels_.at(i); }

    // The port of the primary the first sentinel that answers names.
    std::uint16_t primary_port() const
    {
        for (const auto& s : sentinels_)
        {
            if (!s->running())
                continue;
            const std::string addr = s->command({"SENTINEL", "GET-MASTER-ADDR-BY-NAME", name});
            const std::size_t newline = addr.find('\n');
            if (newline != std::string::npos)
                return static_cast<std::uint16_t>(std::stoi(addr.substr(newline + 1)));
        }
        throw std::runtime_error("redis_sentinel_set: no sentinel names a primary");
    }

    // Every server but `s`: the replicas, when `s` is the primary.
    std::vector<redis_server*> others_than(const redis_server& s)
    {
        std::vector<redis_server*> others;
        for (const auto& server : servers_)
            if (server.get() != &s)
                others.push_back(server.get());
        return others;
    }

    // The index of the server on `port`.
    std::size_t index_of(std::uint16_t port) const
    {
        for (std::size_t i = 0; i < servers_.size(); ++i)
            if (servers_[i]->port() == port)
                return i;
        throw std::runtime_error("redis_sentinel_set: no server on that port");
    }

    // Waits until every running sentinel names a primary other than the one on `old_port`, and
    // that server answers ROLE as a primary.
    void wait_for_failover_from(std::uint16_t old_port)
    {
        wait_for_set_up("a failover", [&] {
            for (const auto& s : sentinels_)
            {
                if (!s->running())
                    continue;
                const std::string addr = s->command({"SENTINEL", "GET-MASTER-ADDR-BY-NAME", name});
                if (addr.find('\n') == std::string::npos ||
                    std::stoi(addr.substr(addr.find('\n') + 1)) == static_cast<int>(old_port))
                    return false;
            }
            const redis_server& promoted = *servers_[index_of(primary_port())];
            return promoted.command({"ROLE"}).rfind("master", 0) == 0;
        });
    }

private:
    std::vector<std::unique_ptr<redis_server>> servers_;
    std::vector<std::unique_ptr<redis_server>> sentinels_;
};

} // namespace asio_sync::test

#endif // ASIO_SYNC_TEST_SUPPORT_REDIS_SENTINEL_HPP
