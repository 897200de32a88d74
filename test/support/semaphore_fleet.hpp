// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_TEST_SUPPORT_SEMAPHORE_FLEET_HPP
#define ASIO_SYNC_TEST_SUPPORT_SEMAPHORE_FLEET_HPP

// A busy fleet on a fleet-wide semaphore, for the fault tests (a failover, a migration): workers
// that acquire a permit, hold it 20 ms and release it, in a loop, recording each hold on the
// CLOCK_MONOTONIC timeline; and the checks that hold whatever the fault.

#include "semaphore_timeline.hpp"

#include <asio_sync/redis/semaphore.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace asio_sync::test {

// What the workers of a fleet recorded.
struct fleet_record
{
    std::mutex mutex;
    std::vector<hold> holds;
    std::map<std::string, std::size_t> failures; // acquire errors by message
    std::vector<std::pair<std::chrono::steady_clock::time_point, std::string>>
        losses; // grant, and how it was lost
    std::vector<std::chrono::steady_clock::time_point>
        requested; // of each hold, by index: when its acquire started
    std::size_t started = 0, completed = 0;
};

// One worker, until `stop`: each acquire waits at most 20 s; a failed one is tried again 20 ms later.
inline boost::asio::awaitable<void> fleet_worker(redis::semaphore& sem, fleet_record& log,
                                                 const std::atomic<bool>& stop)
{
    using namespace std::chrono_literals;
    constexpr auto as_result = boost::asio::as_tuple(boost::asio::use_awaitable);
    boost::asio::steady_timer timer(co_await boost::asio::this_coro::executor);
    while (!stop.load())
    {
        {
            const std::lock_guard lock(log.mutex);
            ++log.started;
        }
        const auto requested = std::chrono::steady_clock::now();
        auto [ec, permit] = co_await sem.async_acquire_permit_for(1, 20s, as_result);
        const auto granted = std::chrono::steady_clock::now();
        {
            const std::lock_guard lock(log.mutex);
            ++log.completed;
            if (ec)
                ++log.failures[ec.message()];
        }
        if (ec)
        {
            timer.expires_after(20ms);
            co_await timer.async_wait(as_result);
            continue;
        }
        // The loss, if it is reported while held, ends the hold.
        auto lost_at = std::make_shared<std::optional<std::chrono::steady_clock::time_point>>();
        auto lost_how = std::make_shared<boost::system::error_code>();
        permit.async_wait_lost([lost_at, lost_how](boost::system::error_code lost) {
            if (lost != boost::asio::error::operation_aborted)
            {
                *lost_at = std::chrono::steady_clock::now();
                *lost_how = lost;
            }
        });
        timer.expires_after(20ms);
        co_await timer.async_wait(as_result);
        hold h{granted, std::chrono::steady_clock::now(), permit.fencing_token(), false};
        if (*lost_at)
        {
            h.ended = std::min(h.ended, **lost_at);
            h.lost = true;
        }
        auto [released] = co_await permit.async_release(as_result);
        if (released)
            h.lost = true; // lease_lost or state_lost: held up to its end all the same
        const std::lock_guard lock(log.mutex);
        log.holds.push_back(h);
        log.requested.push_back(requested);
        if (h.lost)
            log.losses.emplace_back(
                granted, "fence " + std::to_string(h.fence) + ": " +
                             (*lost_at ? "told \"" + lost_how->message() + "\"" : std::string("not told")) +
                             ", released with \"" + released.message() + "\" " +
                             std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                                                std::chrono::steady_clock::now() - granted)
                                                .count()) +
                             " ms after the grant");
    }
}

// Checks that no two holds had the same fence; returns how many holds were lost.
inline std::size_t check_unique_fences(const std::vector<hold>& holds)
{
    std::vector<std::uint64_t> fences;
    std::size_t lost = 0;
    for (const hold& h : holds)
    {
        fences.push_back(h.fence);
        lost += h.lost ? 1 : 0;
    }
    std::sort(fences.begin(), fences.end());
    BOOST_TEST((std::adjacent_find(fences.begin(), fences.end()) == fences.end()));
    return lost;
}

// The fleet has stopped: checks that every acquire completed exactly once, that fences are unique
// and that an acquire started after another was granted got a larger fence; reports the acquires'
// failures and the lost holds (granted how long after `fault`). Returns the number of lost holds.
inline std::size_t check_fleet(fleet_record& log, std::chrono::steady_clock::time_point fault)
{
    const std::lock_guard lock(log.mutex);
    BOOST_TEST(log.started == log.completed); // every acquire completed, once (a coroutine resumes once)
    for (const auto& [message, count] : log.failures)
        BOOST_TEST_MESSAGE("acquires failed with \"" << message << "\": " << count);
    const std::size_t lost = check_unique_fences(log.holds);
    // Fences grow with the grants, across the failover: an acquire started after another was
    // granted gets a larger fence. (Its own completion time says nothing: a replay after the kill
    // can complete a grant the old primary made, with its fence.)
    std::vector<std::pair<std::chrono::steady_clock::time_point, std::uint64_t>>
        by_grant; // (granted, largest fence so far)
    for (const hold& h : log.holds)
        by_grant.emplace_back(h.granted, h.fence);
    std::sort(by_grant.begin(), by_grant.end());
    for (std::size_t i = 1; i < by_grant.size(); ++i)
        by_grant[i].second = std::max(by_grant[i].second, by_grant[i - 1].second);
    std::size_t backwards = 0;
    for (std::size_t i = 0; i < log.holds.size(); ++i)
    {
        const auto earlier = std::lower_bound(by_grant.begin(), by_grant.end(),
                                              std::make_pair(log.requested[i], std::uint64_t{0}));
        if (earlier != by_grant.begin() && std::prev(earlier)->second >= log.holds[i].fence)
            ++backwards;
    }
    BOOST_TEST(backwards == 0u);
    for (const auto& [granted, story] : log.losses)
        BOOST_TEST_MESSAGE("lost: granted "
                           << std::chrono::duration_cast<std::chrono::milliseconds>(granted - fault).count()
                           << " ms from the fault, " << story);
    return lost;
}

// The number of holds recorded so far.
inline std::size_t holds_of(fleet_record& log)
{
    const std::lock_guard lock(log.mutex);
    return log.holds.size();
}

} // namespace asio_sync::test

#endif // ASIO_SYNC_TEST_SUPPORT_SEMAPHORE_FLEET_HPP
