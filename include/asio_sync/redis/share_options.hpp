// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_REDIS_SHARE_OPTIONS_HPP
#define ASIO_SYNC_REDIS_SHARE_OPTIONS_HPP

#include <chrono>
#include <optional>

namespace asio_sync::redis {

/// The lease of a `basic_share_semaphore`'s share and how often the process checks back with
/// Redis.
struct share_options
{
    /// How long the share survives without a refresh. A process that stops refreshing (killed,
    /// paused, cut off) loses its share one lease after its last refresh, and Redis then divides
    /// that part of the capacity among the others. From `basic_share_semaphore::min_lease_duration`
    /// to `basic_share_semaphore::max_lease_duration`.
    std::chrono::milliseconds lease_duration{10000};

    /// How long before the end of its lease (as the last refresh proves it) this process declares
    /// its share lost when it could not refresh it. From zero to half the lease. Unset: a fiftieth
    /// of the lease plus 5 ms, as for `semaphore_options`.
    std::optional<std::chrono::milliseconds> safety_margin;

    /// How often the process refreshes its share (reporting its demand, and learning its new part
    /// of the capacity) when nothing else asks it to. A process also calls between refreshes, at
    /// most once per quarter of this interval: when its waiters need more than its share, when it
    /// gave back permits that Redis still counts, and when Redis publishes a new division. From a
    /// hundredth to a third of the lease. Unset: a tenth of the lease.
    std::optional<std::chrono::milliseconds> refresh_interval;
};

} // namespace asio_sync::redis

#endif // ASIO_SYNC_REDIS_SHARE_OPTIONS_HPP
