// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_REDIS_SEMAPHORE_OPTIONS_HPP
#define ASIO_SYNC_REDIS_SEMAPHORE_OPTIONS_HPP

/// @file
/// The leases and the capacity rule of a fleet-wide semaphore: asio_sync::redis::semaphore_options.

#include <chrono>
#include <optional>

namespace asio_sync::redis {

/// The leases of a `basic_semaphore`: how long a permit (or a queued waiter) survives without a
/// renewal, and how early this process gives up a lease it could not renew; and whether it takes
/// the capacity stored in Redis instead of the one it declares.
struct semaphore_options
{
    /// The lease of each permit and queued waiter, renewed every third of it. A process that
    /// stops renewing loses its permits one lease after its last renewal. From
    /// `basic_semaphore::min_lease_duration` to `basic_semaphore::max_lease_duration`.
    std::chrono::milliseconds lease_duration{10000};

    /// How long before the end of its lease (as the last renewal proves it) this process
    /// declares a permit lost when it could not renew it: room for the server's clock running
    /// faster than this one's, and for the loss to be acted on before another process can be
    /// granted the permits. From zero to half the lease. Unset: `default_safety_margin(lease)`.
    std::optional<std::chrono::milliseconds> safety_margin;

    /// Whether the semaphore adopts the capacity in force in Redis, whatever it is. By default
    /// (false) the capacity given to the constructor must be the one in force: an acquire fails with
    /// `error::capacity_mismatch` when Redis holds another, declared by the first acquire of another
    /// process or stored by a resize made before this semaphore object first read the capacity
    /// (see `basic_semaphore::async_set_capacity`). With true, the first acquire refused for its
    /// capacity is sent again with the one in force, which `basic_semaphore::capacity()` then
    /// reports; the constructor's capacity is only declared when Redis holds none. For processes
    /// that should follow whatever the fleet was resized to, such as ones started from a
    /// configuration that predates a resize.
    bool adopt_capacity = false;

    /// Durable grants, for a primary with replicas (Sentinel): when not zero, an acquire completes,
    /// a renewal extends a lease, and a resize is acknowledged only once `WAIT` has confirmed that
    /// at least this many replicas have the write, so that a failover cannot lose an acknowledged
    /// grant or shorten a lease this process relies on. A `WAIT` that confirms fewer (it waits a
    /// tenth of the lease, at most half the connection's health check interval) makes a grant, a
    /// place in the queue or a stored resize count as a lost reply: the call is sent again under
    /// the same id and confirmed again, so an acquire or a resize waits while too few replicas
    /// answer (bounded by its own timeout or cancellation). Errors, and answers that store nothing
    /// (a try that finds no room, a lease already lost), count at once. Sentinel promotes the
    /// replica with the largest replication offset it knows of among those of the best
    /// `replica-priority`: 1 suffices while the replicas keep in step; the number of replicas
    /// survives any choice. Zero (the default): grants are acknowledged by the primary alone (see
    /// "Failover" in docs/cluster/guarantees.md).
    unsigned durable_replicas = 0;

    /// The default safety margin: a fiftieth of the lease plus 5 ms (205 ms for a lease of 10 s).
    static constexpr std::chrono::milliseconds default_safety_margin(std::chrono::milliseconds lease) noexcept
    {
        return lease / 50 + std::chrono::milliseconds(5);
    }
};

} // namespace asio_sync::redis

#endif // ASIO_SYNC_REDIS_SEMAPHORE_OPTIONS_HPP
