// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_REDIS_DETAIL_SLOT_MAP_REFRESH_HPP
#define ASIO_SYNC_REDIS_DETAIL_SLOT_MAP_REFRESH_HPP

// When a Redis Cluster connection may ask a node for the slot map (CLUSTER SLOTS) again, without
// I/O: at most once per interval (reconnect_delay_min), so that nodes whose maps disagree (MOVED
// back and forth) or a storm of redirections cannot make it ask in a loop. The cluster_router
// asks when it may, and otherwise has connection_impl.hpp arm a timer for when it may.

#include <algorithm>
#include <chrono>

namespace asio_sync::redis::detail {

class slot_map_refresh
{
public:
    using clock = std::chrono::steady_clock;

    // At least 1 ms apart, whatever the interval.
    explicit slot_map_refresh(clock::duration interval) noexcept
        : interval_(std::max<clock::duration>(interval, std::chrono::milliseconds(1)))
    {
    }

    // Whether the map may be asked at `now`: never asked yet, or last asked an interval ago.
    bool may_ask(clock::time_point now) const noexcept { return !asked_ || now - last_ >= interval_; }

    // When it may be asked next.
    clock::time_point due() const noexcept { return asked_ ? last_ + interval_ : clock::time_point::min(); }

    // The map was asked at `now`.
    void asked(clock::time_point now) noexcept
    {
        asked_ = true;
        last_ = now;
    }

private:
    clock::duration interval_;
    bool asked_ = false;
    clock::time_point last_{};
};

} // namespace asio_sync::redis::detail

#endif // ASIO_SYNC_REDIS_DETAIL_SLOT_MAP_REFRESH_HPP
