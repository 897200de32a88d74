// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_REDIS_CONNECTION_OPTIONS_HPP
#define ASIO_SYNC_REDIS_CONNECTION_OPTIONS_HPP

/// @file
/// Where and how a Redis connection connects: asio_sync::redis::connection_options.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace asio_sync::redis {

/// Where a `basic_connection` connects, with which credentials, and how it retries.
///
/// Every member has a default, so a default-constructed value connects to `127.0.0.1:6379`,
/// database 0, without `AUTH`. With `sentinels`, the connection asks Redis Sentinel where the
/// primary is instead (see docs/cluster/sentinel-and-cluster.md, "Sentinel"); with `cluster_nodes`, it speaks
/// to a Redis Cluster (see docs/cluster/sentinel-and-cluster.md, "Redis Cluster").
struct connection_options
{
    /// The address of one sentinel.
    struct sentinel_address
    {
        /// Its host name or address.
        std::string host;
        /// Its TCP port.
        std::uint16_t port = 26379;
    };

    /// The address of one Redis Cluster node.
    struct node_address
    {
        /// Its host name or address.
        std::string host;
        /// Its TCP port.
        std::uint16_t port = 6379;
    };

    /// The server's host name or address, IPv4 or IPv6 (`"localhost"`, `"10.0.0.7"`, `"::1"`).
    /// A name is resolved on every connection attempt, and each address it resolves to is tried
    /// in turn. Unused when `unix_socket` is set.
    std::string host = "127.0.0.1";

    /// The server's TCP port. Unused when `unix_socket` is set.
    std::uint16_t port = 6379;

    /// The path of the server's unix domain socket (its `unixsocket` setting). When not empty,
    /// the connection uses it instead of `host` and `port`.
    std::string unix_socket;

    /// The user for `AUTH user password` (Redis ACLs). Empty: `AUTH password`, as the user
    /// `default`.
    std::string user;

    /// The password for `AUTH`. When both `user` and `password` are empty, no `AUTH` is sent.
    std::string password;

    /// The database the connection selects (`SELECT`) after every connect, when not 0.
    unsigned database = 0;

    /// The longest one connection attempt may take: resolving the host, connecting, and the
    /// replies to the set-up commands (`AUTH`, `SELECT`). An attempt that takes longer is
    /// abandoned, and the next one starts after the reconnect delay.
    std::chrono::milliseconds connect_timeout{10000};

    /// The delay before the first reconnection attempt after a failure or a dropped link. It
    /// doubles with each consecutive failure, up to `reconnect_delay_max`, and starts again from
    /// here once a connection has answered.
    std::chrono::milliseconds reconnect_delay_min{10};

    /// The longest delay between two connection attempts.
    std::chrono::milliseconds reconnect_delay_max{2000};

    /// How much of each delay is random, from 0 (none) to 1: a delay `d` becomes a uniform draw
    /// from `[d * (1 - reconnect_jitter), d]`, so that a fleet of clients does not reconnect in
    /// step after the server restarts.
    double reconnect_jitter = 0.5;

    /// The health check of each link: every interval a `PING` is written on it, and a whole
    /// interval after a `PING` with no reply at all on the link (the `PING`'s or any other) means
    /// that the link is dead, whether or not its TCP connection stays open (a stuck proxy or load
    /// balancer, a half-open connection): it is dropped and connected again, and the commands
    /// written on it complete with `connection_lost`. Zero turns the health check off.
    ///
    /// Replies come in order, so one command that takes longer than the interval to answer (a
    /// blocking `BLPOP`, a long script) silences the link meanwhile: raise the interval above the
    /// longest such wait, or turn the check off, on a connection that sends them. Several shorter
    /// ones in a row (the `WAIT`s of durable grants) do not, as each reply counts.
    std::chrono::milliseconds health_check_interval{2000};

    /// The sentinels that watch the primary named `master_name`. When not empty, `host`, `port`
    /// and `unix_socket` are unused: every connection attempt of each link asks the sentinels in
    /// turn (`SENTINEL GET-MASTER-ADDR-BY-NAME`), from the one that answered last, connects to
    /// the address the first one that knows the primary gives, and checks with `ROLE` that the
    /// server is a primary. A server that is not (a failover in progress, a sentinel not yet
    /// told), an attempt where no sentinel answers, and a `READONLY` reply to a command (the
    /// primary was demoted while connected) all drop the link and start a new attempt after the
    /// reconnect delay; the commands that were not sent, and the one refused with `READONLY`,
    /// wait for the new primary. The whole attempt, sentinels included, is bounded by
    /// `connect_timeout`. The connection also stays subscribed to one sentinel's `+switch-master`
    /// (the next one after each failure): when it announces that the primary moved, the links
    /// that are not on the new primary start a new attempt at once, without waiting for the
    /// health check.
    std::vector<sentinel_address> sentinels;

    /// The name under which the sentinels know the primary (`sentinel monitor <name> ...`). An
    /// attempt in which every sentinel answers that it does not know it fails the commands queued
    /// meanwhile with `error::unknown_master`; the link keeps trying.
    std::string master_name;

    /// The user for `AUTH` to the sentinels (their `requirepass`, or an ACL user); empty: as the
    /// user `default`.
    std::string sentinel_user;

    /// The password for `AUTH` to the sentinels. When both `sentinel_user` and
    /// `sentinel_password` are empty, no `AUTH` is sent to them. An attempt in which every
    /// sentinel refuses them fails the commands queued meanwhile with `error::auth_failed`, as a
    /// server that refuses `user` and `password` does; the link keeps trying.
    std::string sentinel_password;

    /// Some nodes of a Redis Cluster (one is enough; more let the connection start while some
    /// are down). When not empty, `host`, `port`, `unix_socket` and `database` are unused, and
    /// `sentinels` must be empty (the connection's constructor throws `std::invalid_argument`
    /// otherwise). The connection learns which primary serves each hash slot (`CLUSTER SLOTS`)
    /// and keeps one command link to each primary it has commands for. A command goes to the
    /// primary of its first key's slot; one refused with `MOVED` goes where it says (and the map is
    /// learnt again), one refused with `ASK` goes there after `ASKING`, and one refused with
    /// `TRYAGAIN` or `CLUSTERDOWN` (a migration or a failover in progress; it did not run) is sent
    /// again after `reconnect_delay_min`. A `WAIT` sent right after a command for its slot (as
    /// durable grants do) follows it through `MOVED` and `ASK`, so that it counts the replicas of
    /// the node that ran it. A node that cannot be reached makes the connection learn the map again
    /// from the others at each attempt, so that it follows a failover; the map is asked at most
    /// once per `reconnect_delay_min`. No command is written before the map was first learnt, and a
    /// node that answers that its cluster support is disabled (a standalone server) is never used:
    /// when no other node is left, the commands fail with `error::cluster_disabled`. The subscriber
    /// link subscribes on one node (Redis Cluster carries every `PUBLISH` to every node), the next
    /// known one after each failure.
    std::vector<node_address> cluster_nodes;

    /// In a Redis Cluster, how many `MOVED` and `ASK` redirections one command may follow in a
    /// row; the next one fails it with `error::too_many_redirections` (nodes whose maps disagree
    /// would send it back and forth for ever). A command that waits to be sent again (`TRYAGAIN`,
    /// `CLUSTERDOWN`, or behind earlier commands of its slot) counts again from there: waiting
    /// bounds its pace, and its caller's deadline its length. At least 1: the connection's
    /// constructor throws `std::invalid_argument` for 0.
    std::size_t max_redirections = 16;
};

} // namespace asio_sync::redis

#endif // ASIO_SYNC_REDIS_CONNECTION_OPTIONS_HPP
