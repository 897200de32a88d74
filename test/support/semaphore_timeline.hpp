// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_TEST_SUPPORT_SEMAPHORE_TIMELINE_HPP
#define ASIO_SYNC_TEST_SUPPORT_SEMAPHORE_TIMELINE_HPP

// The events of fleet-wide semaphores on one timeline: CLOCK_MONOTONIC (steady_clock), which every
// client and process of one machine shares. A test orders a permit's loss and another client's
// grant by the times their handlers ran; it never compares a duration with a threshold.

#include <asio_sync/redis/semaphore.hpp>

#include <boost/system/error_code.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <future>
#include <memory>
#include <utility>
#include <vector>

namespace asio_sync::test {

// When an operation of a fleet-wide semaphore completed, how, and with which fence (0 but for a
// grant). Set from its handler.
struct semaphore_event
{
    std::promise<std::chrono::steady_clock::time_point> when;
    std::promise<boost::system::error_code> error;
    std::promise<std::uint64_t> fence;
};

// The loss of `p`, as its async_wait_lost reports it.
inline std::shared_ptr<semaphore_event> watch_loss(redis::semaphore::permit& p)
{
    auto e = std::make_shared<semaphore_event>();
    p.async_wait_lost([e](boost::system::error_code ec) {
        e->when.set_value(std::chrono::steady_clock::now());
        e->error.set_value(ec);
        e->fence.set_value(0);
    });
    return e;
}

// An acquire of n permits of `sem`; the permit goes to `kept`, before the event is told, so that a
// test that waits for the event finds the permit there.
inline std::shared_ptr<semaphore_event> acquire_timed(redis::semaphore& sem, std::size_t n,
                                                      std::shared_ptr<redis::semaphore::permit> kept)
{
    auto e = std::make_shared<semaphore_event>();
    sem.async_acquire_permit(n, [e, kept](boost::system::error_code ec, redis::semaphore::permit p) {
        const auto now = std::chrono::steady_clock::now();
        const std::uint64_t fence = p.fencing_token();
        *kept = std::move(p);
        e->when.set_value(now);
        e->error.set_value(ec);
        e->fence.set_value(fence);
    });
    return e;
}

// One hold of a permit: from its grant until its release started or its loss was reported, the
// time its holder believed it held the permit.
struct hold
{
    std::chrono::steady_clock::time_point granted;
    std::chrono::steady_clock::time_point ended;
    std::uint64_t fence = 0;
    bool lost = false;
};

// The most holds that overlap at one instant: a sweep over the grants (+1) and ends (-1), an end
// before a grant at the same instant.
inline std::size_t peak(const std::vector<hold>& holds)
{
    std::vector<std::pair<std::chrono::steady_clock::time_point, int>> events;
    for (const hold& h : holds)
    {
        events.emplace_back(h.granted, 1);
        events.emplace_back(h.ended, -1);
    }
    std::sort(events.begin(), events.end());
    std::size_t active = 0, most = 0;
    for (const auto& e : events)
    {
        active += static_cast<std::size_t>(e.second == 1 ? 1 : -1);
        most = std::max(most, active);
    }
    return most;
}

// The stretches of time during which more than `capacity` holds overlapped, in order (the sweep of
// peak()).
inline std::vector<std::pair<std::chrono::steady_clock::time_point, std::chrono::steady_clock::time_point>>
above(const std::vector<hold>& holds, std::size_t capacity)
{
    std::vector<std::pair<std::chrono::steady_clock::time_point, int>> events;
    for (const hold& h : holds)
    {
        events.emplace_back(h.granted, 1);
        events.emplace_back(h.ended, -1);
    }
    std::sort(events.begin(), events.end());
    std::vector<std::pair<std::chrono::steady_clock::time_point, std::chrono::steady_clock::time_point>>
        stretches;
    std::size_t active = 0;
    for (const auto& e : events)
    {
        const bool was_above = active > capacity;
        active += static_cast<std::size_t>(e.second == 1 ? 1 : -1);
        if (!was_above && active > capacity)
            stretches.emplace_back(e.first, e.first);
        else if (was_above && active <= capacity)
            stretches.back().second = e.first;
    }
    return stretches;
}

// For failure messages: how far apart two events were.
inline double milliseconds(std::chrono::steady_clock::duration d)
{
    return std::chrono::duration<double, std::milli>(d).count();
}

} // namespace asio_sync::test

#endif // ASIO_SYNC_TEST_SUPPORT_SEMAPHORE_TIMELINE_HPP
