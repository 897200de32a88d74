// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_REDIS_DETAIL_LEASE_VIEW_HPP
#define ASIO_SYNC_REDIS_DETAIL_LEASE_VIEW_HPP

#include <atomic>
#include <chrono>

namespace asio_sync::redis::detail {

// What a permit shares with the client: when the client declares its lease lost (the end of the
// lease by the lease rule, minus the safety margin), and whether it has. Read by the permit from
// any thread, written by the client under the engine's lock.
struct lease_view
{
    using clock = std::chrono::steady_clock;

    explicit lease_view(clock::time_point deadline) noexcept : deadline_(deadline.time_since_epoch().count())
    {
    }

    clock::time_point deadline() const noexcept
    {
        return clock::time_point(clock::duration(deadline_.load(std::memory_order_relaxed)));
    }

    bool lost() const noexcept { return lost_.load(std::memory_order_acquire); }

    void extend(clock::time_point deadline) noexcept
    {
        deadline_.store(deadline.time_since_epoch().count(), std::memory_order_relaxed);
    }

    void lose() noexcept { lost_.store(true, std::memory_order_release); }

private:
    std::atomic<clock::rep> deadline_;
    std::atomic<bool> lost_{false};
};

} // namespace asio_sync::redis::detail

#endif // ASIO_SYNC_REDIS_DETAIL_LEASE_VIEW_HPP
