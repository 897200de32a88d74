// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_TEST_SUPPORT_REDIS_SENTINEL_PARTITION_HPP
#define ASIO_SYNC_TEST_SUPPORT_REDIS_SENTINEL_PARTITION_HPP

// A Redis Sentinel set of real processes (a primary, two replicas, three sentinels, quorum 2) that
// a test can partition without root: every link between them runs through a TCP proxy
// (tcp_proxy.hpp), each process announces its proxy's address (replica-announce-ip/port, sentinel
// announce-ip/port), and each connects out from a loopback address of its side (bind-source-addr):
// the first sentinel from 127.0.0.2, the replicas and the two other sentinels from 127.0.0.3; the
// test's own connections come from 127.0.0.1. `partition()` isolates the first primary, the first
// sentinel and whatever the test connects through that sentinel from the replicas and the two other
// sentinels: the two sentinels promote a replica, and the first keeps naming the old primary and
// never announces the switch (a stale sentinel). The primary keeps answering on its side.
//
// Every server refuses writes once no replica has acknowledged it for `min_replicas_max_lag`
// seconds (min-replicas-to-write 1); the sentinels judge a primary down after `down_after`.

#include "redis_sentinel.hpp"
#include "redis_server.hpp"
#include "tcp_proxy.hpp"

#include <asio_sync/redis/connection_options.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace asio_sync::test {

class redis_sentinel_partition
{
public:
    static constexpr const char* name = "primary";
    static constexpr const char* stale_side = "127.0.0.2";    // the first sentinel's links
    static constexpr const char* majority_side = "127.0.0.3"; // the replicas' and other sentinels'

    redis_sentinel_partition(std::chrono::milliseconds down_after, unsigned min_replicas_max_lag)
    {
        redis_server::options server;
        server.extra_args = {"--repl-diskless-sync-delay", "0",
                             "--min-replicas-to-write",    "1",
                             "--min-replicas-max-lag",     std::to_string(min_replicas_max_lag)};
        for (int i = 0; i < 3; ++i)
        {
            redis_server::options o = server;
            if (i != 0)
                o.extra_args.insert(o.extra_args.end(), {"--bind-source-addr", majority_side});
            servers_.push_back(std::make_unique<redis_server>(o));
            server_proxies_.push_back(std::make_unique<tcp_proxy>(servers_.back()->port()));
            servers_.back()->command({"CONFIG", "SET", "replica-announce-ip", "127.0.0.1"});
            servers_.back()->command(
                {"CONFIG", "SET", "replica-announce-port", std::to_string(server_proxies_.back()->port())});
        }
        const std::string primary = std::to_string(server_proxies_[0]->port());
        for (std::size_t i = 1; i < servers_.size(); ++i)
            servers_[i]->command({"REPLICAOF", "127.0.0.1", primary});
        for (int i = 0; i < 3; ++i)
        {
            redis_server::options o;
            o.sentinel_config = "sentinel deny-scripts-reconfig yes\n";
            o.extra_args = {"--bind-source-addr", i == 0 ? stale_side : majority_side};
            sentinels_.push_back(std::make_unique<redis_server>(o));
            sentinel_proxies_.push_back(std::make_unique<tcp_proxy>(sentinels_.back()->port()));
            redis_server& s = *sentinels_.back();
            s.command({"SENTINEL", "CONFIG", "SET", "announce-ip", "127.0.0.1"});
            s.command({"SENTINEL", "CONFIG", "SET", "announce-port",
                       std::to_string(sentinel_proxies_.back()->port())});
            s.command({"SENTINEL", "MONITOR", name, "127.0.0.1", primary, "2"});
            s.command({"SENTINEL", "SET", name, "down-after-milliseconds", std::to_string(down_after.count()),
                       "failover-timeout", "4000", "parallel-syncs", "2"});
        }
        wait_for_set_up("the replicas to sync and the sentinels to meet",
                        [&] { return sentinels_ready(servers_, sentinels_, name); });
    }

    redis_sentinel_partition(const redis_sentinel_partition&) = delete;
    redis_sentinel_partition& operator=(const redis_sentinel_partition&) = delete;

    // Connection options that ask the first sentinel alone: stale once partitioned.
    redis::connection_options stale_options() const { return options_of(0, 1); }

    // Connection options that ask the two other sentinels.
    redis::connection_options majority_options() const { return options_of(1, 3); }

    redis_server& server(std::size_t i) { return *servers_.at(i); }
    redis_server& sentinel(std::size_t i) { return *sentinels_.at(i); }

    // Cuts the first primary and the first sentinel off from the replicas and the two other
    // sentinels, both ways; the test's connections (127.0.0.1) keep every link.
    void partition()
    {
        server_proxies_[0]->isolate(majority_side);
        sentinel_proxies_[0]->isolate(majority_side);
        for (std::size_t i = 1; i < 3; ++i)
        {
            server_proxies_[i]->isolate(stale_side);
            sentinel_proxies_[i]->isolate(stale_side);
        }
    }

    // Waits until the two other sentinels name a replica, and it answers ROLE as a primary.
    void wait_for_failover()
    {
        const std::string old = std::to_string(server_proxies_[0]->port());
        wait_for_set_up("a failover", [&] {
            std::string named;
            for (std::size_t i = 1; i < 3; ++i)
            {
                const std::string addr =
                    sentinels_[i]->command({"SENTINEL", "GET-MASTER-ADDR-BY-NAME", name});
                const std::size_t newline = addr.find('\n');
                if (newline == std::string::npos || addr.substr(newline + 1) == old)
                    return false;
                named = addr.substr(newline + 1);
            }
            for (std::size_t i = 1; i < 3; ++i)
                if (std::to_string(server_proxies_[i]->port()) == named)
                    return servers_[i]->command({"ROLE"}).rfind("master", 0) == 0;
            return false;
        });
    }

private:
    redis::connection_options options_of(std::size_t first, std::size_t end) const
    {
        redis::connection_options o = failover_client_options();
        for (std::size_t i = first; i < end; ++i)
            o.sentinels.push_back({"127.0.0.1", sentinels_[i]->port()});
        o.master_name = name;
        return o;
    }

    // Declared first, destroyed last: the proxies go before the processes behind them.
    std::vector<std::unique_ptr<redis_server>> servers_;
    std::vector<std::unique_ptr<redis_server>> sentinels_;
    std::vector<std::unique_ptr<tcp_proxy>> server_proxies_;
    std::vector<std::unique_ptr<tcp_proxy>> sentinel_proxies_;
};

} // namespace asio_sync::test

#endif // ASIO_SYNC_TEST_SUPPORT_REDIS_SENTINEL_PARTITION_HPP
