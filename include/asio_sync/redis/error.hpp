// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_REDIS_ERROR_HPP
#define ASIO_SYNC_REDIS_ERROR_HPP

/// @file
/// Error codes of the Redis components: the asio_sync::redis::error enumeration, its category
/// and its `error_code` conversion.

#include <boost/system/error_category.hpp>
#include <boost/system/error_code.hpp>

#include <string>
#include <type_traits>

namespace asio_sync::redis {

/// Errors reported by the operations of asio_sync::redis, in the category
/// `asio_sync::redis::error_category()`.
///
/// Cancellation and closing are not in this list: a cancelled command, and one still pending
/// when its connection is closed or destroyed, reports `boost::asio::error::operation_aborted`,
/// as Asio's own operations do. The values start at 1, so that no value means success, and
/// compare equal to an `error_code` of their category:
/// `ec == asio_sync::redis::error::connection_lost`.
enum class error
{
    /// The command was sent, and the connection dropped before its reply arrived (the server
    /// closed it, the network failed, or the reply could not be parsed). Whether the server ran
    /// the command is unknown: retry only what is safe to run twice.
    connection_lost = 1,

    /// The server answered the command with an error reply. The reply passed with this code has
    /// kind `reply_kind::error` and carries the server's message, such as `WRONGTYPE ...` or
    /// `ERR unknown command ...`. The fleet-wide semaphore reports the common ones with the more
    /// precise codes below, and this code for the rest.
    server_error,

    /// The server refused the connection's credentials (its `AUTH` failed, `WRONGPASS`), or
    /// demands credentials that were not given (`NOAUTH`). When a connection attempt fails its
    /// `AUTH`, every command queued at that moment fails with this code, unsent, and the
    /// connection tries again after its reconnect delay.
    auth_failed,

    /// The command cannot run on a pipelined connection, because the server would answer it
    /// with no reply or with more than one (`SUBSCRIBE` and its relatives, `MONITOR`,
    /// `CLIENT REPLY`). Nothing was sent.
    unsupported_command,

    /// A fleet-wide semaphore was opened with another capacity than the one its first user
    /// declared in Redis. Nothing was changed.
    capacity_mismatch,

    /// A key of the fleet-wide semaphore holds a value of another type (Redis' `WRONGTYPE`).
    /// Nothing was changed.
    wrong_type,

    /// The lease of a permit lapsed before it was renewed (Redis was unreachable for longer than
    /// the lease, or it no longer knows the permit): other holders may have been granted its
    /// permits.
    lease_lost,

    /// The server's access control refused a command of the fleet-wide semaphore (`NOPERM`): the
    /// connection's user lacks a permission, such as `FCALL` or `FUNCTION LOAD` (see the ACL
    /// section of docs/cluster/operating.md).
    no_permission,

    /// The server is a read-only replica (`READONLY`): the fleet-wide semaphore must talk to the
    /// primary.
    read_only,

    /// The server reached its `maxmemory` and refused a write (`OOM`).
    out_of_memory,

    /// A Redis Cluster node answered that another node owns the semaphore's slot (`MOVED` or
    /// `ASK`), on a connection made for one server: give the connection
    /// `connection_options::cluster_nodes`, and it follows redirections.
    cluster_redirect,

    /// The function library of the fleet-wide semaphore refused a malformed call
    /// (`ASIO_SYNC_ARGUMENT`), such as a number too large for it.
    invalid_argument,

    /// Redis lost the fleet-wide semaphore's state while the permit was held: its keys were
    /// evicted or deleted, or the server restarted without its data. The permit is lost as with
    /// `lease_lost`; the semaphore started afresh, and grants nothing until every lease of the
    /// lost state has lapsed. See "Lost state" in docs/cluster/how-it-works.md. Also the end of a resize that
    /// waited for the holders and that Redis lost (a failover to a replica without it).
    state_lost,

    /// The server may evict the fleet-wide semaphore's keys: it has a `maxmemory` and a
    /// `maxmemory-policy` other than `noeviction`. An evicted key loses permits, so the semaphore
    /// refuses to acquire there; set `maxmemory-policy noeviction` (or no `maxmemory`). Checked on
    /// each connect, where the server lets the connection read its configuration.
    eviction_policy,

    /// `async_fenced_set` refused a write: its fence is smaller than the largest fence that has
    /// written the resource, so its writer's permit ended before a newer holder wrote. Nothing was
    /// written.
    stale_fence,

    /// With Sentinel: every sentinel asked answered that it does not know the primary named
    /// `connection_options::master_name` (a misspelt name, or sentinels not yet configured). The
    /// commands queued meanwhile fail with it; the connection keeps asking.
    unknown_master,

    /// The primary refused a write (`NOREPLICAS`): fewer replicas than its
    /// `min-replicas-to-write` acknowledged its stream within `min-replicas-max-lag` seconds. It
    /// may be cut off from them, and from the sentinels, which may have promoted another server.
    /// Nothing was written: a permit whose release fails with it keeps its lease until the lease
    /// lapses. Acquires, resizes and renewals meet it too, and are sent again (see "A partitioned
    /// primary" in docs/cluster/guarantees.md).
    no_replicas,

    /// With Sentinel and without `semaphore_options::durable_replicas`, the primary does not
    /// refuse writes when it is cut off from its replicas: its `min-replicas-to-write` or its
    /// `min-replicas-max-lag` is 0. A primary in a minority partition would then go on renewing
    /// the leases of the processes on its side after the sentinels promoted another server, for
    /// as long as the partition lasts, so the semaphore refuses to acquire there; set both on
    /// every server of the set (see "A partitioned primary" in docs/cluster/guarantees.md for the values and
    /// the overlap they bound). Checked on each connect, where the server lets the connection read
    /// its configuration.
    replica_policy,

    /// In a Redis Cluster, the command met more `MOVED` or `ASK` redirections in a row than
    /// `connection_options::max_redirections` (nodes whose maps disagree send it back and forth).
    /// It did not run on the nodes that redirected it; the connection keeps serving the others.
    too_many_redirections,

    /// A node given in `connection_options::cluster_nodes` answered that its cluster support is
    /// disabled (a standalone server): it is never used. When no node of the cluster is left, every
    /// command fails with this code, unsent.
    cluster_disabled,
};

namespace detail {

class error_category_impl final : public boost::system::error_category
{
public:
    // A fixed 64-bit identifier makes equal categories compare equal across shared libraries.
    constexpr error_category_impl() noexcept : boost::system::error_category(0x7e3d52c0a9f4b861ULL) {}

    const char* name() const noexcept override { return "asio_sync.redis"; }

    std::string message(int value) const override { return message(value, nullptr, 0); }

    const char* message(int value, char*, std::size_t) const noexcept override
    {
        switch (static_cast<error>(value))
        {
        case error::connection_lost:
            return "the connection was lost after the command was sent; its outcome is unknown";
        case error::server_error:
            return "the server answered with an error";
        case error::auth_failed:
            return "the server refused the credentials";
        case error::unsupported_command:
            return "the command cannot run on a pipelined connection";
        case error::capacity_mismatch:
            return "the semaphore was declared with another capacity";
        case error::wrong_type:
            return "a key of the semaphore holds a value of another type";
        case error::lease_lost:
            return "the lease of the permit lapsed before it was renewed";
        case error::no_permission:
            return "the server's access control refused the command";
        case error::read_only:
            return "the server is a read-only replica";
        case error::out_of_memory:
            return "the server is out of memory";
        case error::cluster_redirect:
            return "another cluster node owns the key's slot";
        case error::invalid_argument:
            return "the semaphore's function library refused a malformed call";
        case error::state_lost:
            return "Redis lost the semaphore's state (a permit held, or a resize)";
        case error::eviction_policy:
            return "the server may evict the semaphore's keys (maxmemory-policy is not noeviction)";
        case error::stale_fence:
            return "a newer fence has written the resource; the write was refused";
        case error::unknown_master:
            return "no sentinel knows the primary by that name";
        case error::no_replicas:
            return "the primary refused the write: not enough replicas acknowledged it in time";
        case error::replica_policy:
            return "the primary does not refuse writes without its replicas (min-replicas-to-write "
                   "or min-replicas-max-lag is 0)";
        case error::too_many_redirections:
            return "the command met more cluster redirections than the limit";
        case error::cluster_disabled:
            return "a node given as a cluster node has cluster support disabled";
        }
        return "unknown asio_sync.redis error";
    }
};

} // namespace detail

/// Returns the category of `asio_sync::redis::error` values, named `"asio_sync.redis"`.
///
/// It is a single constant object with a fixed 64-bit identifier, so two copies of the category
/// (from different shared libraries) compare equal.
inline const boost::system::error_category& error_category() noexcept
{
    static constexpr detail::error_category_impl instance;
    return instance;
}

/// Makes an `error_code` from an `asio_sync::redis::error`; found by argument-dependent lookup,
/// which is how `boost::system::error_code ec = asio_sync::redis::error::server_error;` works.
///
/// @param e The error value.
/// @returns `{static_cast<int>(e), asio_sync::redis::error_category()}`.
inline boost::system::error_code make_error_code(error e) noexcept
{
    return {static_cast<int>(e), error_category()};
}

} // namespace asio_sync::redis

namespace boost::system {

/// Declares `asio_sync::redis::error` an error-code enumeration, so that its values convert to
/// `boost::system::error_code` and compare with it.
template <>
struct is_error_code_enum<asio_sync::redis::error> : std::true_type
{
};

} // namespace boost::system

#endif // ASIO_SYNC_REDIS_ERROR_HPP
