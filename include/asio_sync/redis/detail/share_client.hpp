// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_REDIS_DETAIL_SHARE_CLIENT_HPP
#define ASIO_SYNC_REDIS_DETAIL_SHARE_CLIENT_HPP

// The client side of a leased share, without I/O: given the time, what the local semaphore looks
// like and what Redis answered, it decides when to call Redis and with what demand, how much to add
// to or take from the local semaphore, and when the share is lost. basic_share_semaphore carries
// out its decisions (share_engine.hpp); test/redis/share_client.cpp drives it by tables.
//
// The local share (`share()`) is the capacity of the local semaphore. It never exceeds what Redis
// counts for this process (`held`), so that the shares together never exceed the capacity: it grows
// only to min(held, target) from a reply, and it is lowered (with a debt: the holders keep their
// permits) before the process reports the lower bound that lets Redis give the rest away. The
// bound reported is the share plus the open debt: every permit this process may still have in use.
//
// The lease rule: the share is valid until send time + lease - safety margin of the last refresh
// answered, never later than Redis' own expiry. When that passes without a newer answer, the share
// is lost: the local semaphore's capacity drops to 0 and the holders are told, before Redis can
// give the capacity to anyone else.

#include <asio_sync/redis/share_options.hpp>

#include <boost/throw_exception.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>

namespace asio_sync::redis::detail {

// A refresh's answer: share <held> <target> <lease_ms> <fence> <capacity>.
struct share_reply
{
    std::size_t held = 0;
    std::size_t target = 0;
    std::chrono::milliseconds lease{0};
    std::uint64_t fence = 0;
    std::size_t capacity = 0;
};

// The local semaphore now: its open debt, the permits its queued acquires still miss, and its
// counter.
struct local_view
{
    std::size_t debt = 0;
    std::size_t missing = 0;
    std::size_t available = 0;
};

// What the driver does now, in this order: take `reduce` from the local semaphore (with debt), add
// `add`, tell the holders the share was lost, send the refresh or the leave, and call the change
// listener.
struct share_actions
{
    std::size_t reduce = 0;
    std::size_t add = 0;
    bool lost = false;
    bool refresh = false;
    std::size_t want = 0;  // the refresh's demand
    std::size_t bound = 0; // the refresh's bound
    std::uint64_t seq = 0; // the refresh's number, for on_reply
    bool leave = false;
    bool changed = false; // share, target, demand or capacity changed
};

// The options, checked.
class share_settings
{
public:
    // Throws std::invalid_argument if the lease is not within [min_lease, max_lease], the safety
    // margin not within [0, lease / 2], or the refresh interval not within [lease / 100, lease / 3]
    // or below 1 ms.
    share_settings(const share_options& options, std::chrono::milliseconds min_lease,
                   std::chrono::milliseconds max_lease)
        : lease_(options.lease_duration)
    {
        if (lease_ < min_lease || lease_ > max_lease)
            fail("lease_duration out of range");
        margin_ = options.safety_margin.value_or(lease_ / 50 + std::chrono::milliseconds(5));
        if (margin_.count() < 0 || margin_ > lease_ / 2)
            fail("safety_margin out of range");
        interval_ = options.refresh_interval.value_or(lease_ / 10);
        if (interval_ < lease_ / 100 || interval_ > lease_ / 3 || interval_.count() < 1)
            fail("refresh_interval out of range");
    }

    std::chrono::milliseconds lease() const noexcept { return lease_; }
    std::chrono::milliseconds safety_margin() const noexcept { return margin_; }
    std::chrono::milliseconds refresh_interval() const noexcept { return interval_; }
    // The shortest time between two calls.
    std::chrono::steady_clock::duration quarter() const noexcept
    {
        return std::chrono::duration_cast<std::chrono::steady_clock::duration>(interval_) / 4;
    }

private:
    [[noreturn]] static void fail(const char* what)
    {
        boost::throw_exception(
            std::invalid_argument(std::string("asio_sync::redis::basic_share_semaphore: ") + what));
    }

    std::chrono::milliseconds lease_;
    std::chrono::milliseconds margin_{0};
    std::chrono::milliseconds interval_{0};
};

class share_client
{
public:
    using clock = std::chrono::steady_clock;
    using time_point = clock::time_point;

    explicit share_client(const share_settings& settings) : settings_(settings) {}

    // The timer the driver arms at next_wake(), and every event's second step: samples the
    // demand, declares the share lost at the end of its lease, and calls Redis if something asks for
    // it (the first call goes at once).
    share_actions tick(time_point now, const local_view& view) { return decide(now, view); }

    // Redis published a new division, or the link came back: call soon (then tick).
    void on_notice() noexcept { heard_ = true; }

    // This process stored `capacity` (then tick): the new division is published, and heard.
    share_actions on_resized(std::size_t capacity) noexcept
    {
        share_actions a;
        a.changed = capacity != capacity_;
        capacity_ = capacity;
        heard_ = true;
        return a;
    }

    // The answer to the refresh numbered `seq`: resizes the share. An answer to an abandoned refresh
    // is ignored: what it granted stays counted in Redis until the next refresh reports the bound.
    // Like close(), it calls nothing: the driver carries out the resize and then ticks, with the
    // local semaphore as the resize left it.
    share_actions on_reply(time_point now, std::uint64_t seq, const share_reply& reply)
    {
        share_actions a;
        if (seq != seq_ || !in_flight_)
            return a;
        in_flight_ = false;
        const std::size_t old_share = share_, old_target = target_, old_capacity = capacity_;
        const time_point until = sent_at_ + reply.lease - settings_.safety_margin();
        if (fence_ != 0 && valid_until_ && (reply.fence != fence_ || reply.held < sent_share_))
        {
            // Redis made a new entry for this process while this one thought its share valid (its
            // lease ended there first: state lost, or a clock running fast), or it holds less for
            // the entry than the share this process had when it called, which it never does but
            // after going back to an earlier state (a restart that lost its last writes, a
            // failover to a replica that lacked them). What the holders hold is no longer counted.
            lose(a);
        }
        fence_ = reply.fence;
        target_ = reply.target;
        capacity_ = reply.capacity;
        held_ = reply.held;
        if (until > now)
        {
            valid_until_ = until;
            const std::size_t wanted = closing_ ? 0 : std::min(reply.held, reply.target);
            resize_to(wanted, a);
        }
        retry_ = false;
        a.changed = a.changed || share_ != old_share || target_ != old_target || capacity_ != old_capacity;
        return a;
    }

    // The refresh numbered `seq` failed (no answer, an error): retry a quarter interval after it
    // was sent. The share stays valid until its lease says otherwise.
    share_actions on_error(std::uint64_t seq)
    {
        if (seq == seq_ && in_flight_)
        {
            in_flight_ = false;
            retry_ = true;
        }
        return {};
    }

    // close(): the share drops to 0 at once (the holders keep theirs, as a debt), the demand to 0;
    // the process leaves once nothing is in use.
    share_actions close()
    {
        share_actions a;
        if (closing_)
            return a;
        closing_ = true;
        heard_ = true;
        resize_to(0, a);
        a.changed = true;
        return a;
    }

    // When the driver's timer should fire next.
    time_point next_wake(time_point now) const
    {
        time_point wake = now + settings_.quarter();
        if (valid_until_ && *valid_until_ < wake)
            wake = *valid_until_;
        return wake;
    }

    const share_settings& settings() const noexcept { return settings_; }
    std::size_t share() const noexcept { return share_; }
    std::size_t target() const noexcept { return target_; }
    std::size_t demand() const noexcept { return demand_; }
    std::size_t capacity() const noexcept { return capacity_; }
    std::uint64_t fence() const noexcept { return fence_; }
    std::optional<time_point> valid_until() const noexcept { return valid_until_; }
    bool left() const noexcept { return left_; }
    bool in_flight() const noexcept { return in_flight_; }

private:
    // Lowers or raises the local share; a lowered one reaches Redis with the next refresh's bound.
    void resize_to(std::size_t wanted, share_actions& a)
    {
        if (wanted < share_)
        {
            a.reduce += share_ - wanted;
            share_ = wanted;
        }
        else if (wanted > share_)
        {
            a.add += wanted - share_;
            share_ = wanted;
        }
    }

    void lose(share_actions& a)
    {
        valid_until_.reset();
        resize_to(0, a);
        a.lost = true;
        a.changed = true;
    }

    share_actions decide(time_point now, const local_view& view)
    {
        share_actions a;
        if (left_)
            return a;
        if (valid_until_ && now >= *valid_until_)
            lose(a);
        const std::size_t in_use = share_ + view.debt - std::min(view.available, share_ + view.debt);
        const std::size_t demand = closing_ ? 0 : in_use + view.missing;
        if (demand != demand_)
            a.changed = true;
        demand_ = demand;
        // The demand reported is the largest sampled over the last two quarters: a burst between
        // samples is not lost, and a demand that fell is reported within half an interval.
        if (now - quarter_start_ >= settings_.quarter())
        {
            previous_peak_ = peak_;
            peak_ = 0;
            quarter_start_ = now;
        }
        peak_ = std::max(peak_, demand);
        const std::size_t want = std::max(peak_, previous_peak_);
        const std::size_t bound = share_ + view.debt;
        if (in_flight_)
        {
            // An answer that does not come within a refresh interval is given up: the next call
            // may go (the lease rule does not depend on it).
            if (now - sent_at_ < settings_.refresh_interval())
                return a;
            in_flight_ = false;
            retry_ = true;
        }
        if (closing_ && bound == 0)
        {
            // Gone from the division: no share is valid any more.
            valid_until_.reset();
            left_ = true;
            a.leave = true;
            a.changed = true;
            return a;
        }
        // A process that reported no demand and now has acquires waiting calls at once: its first
        // acquires do not wait for a quarter interval after the constructor's call.
        const bool quiet =
            sent_ && now - sent_at_ < settings_.quarter() && !(reported_want_ == 0 && view.missing != 0);
        const bool due = !sent_ || now - sent_at_ >= settings_.refresh_interval();
        // Reasons to call before the refresh is due: a published division or a new link, a failed
        // call, waiters that need more than the share (and more than last asked for), a bound below
        // what Redis counts (permits given back), no share at all.
        const bool early = heard_ || retry_ || (view.missing != 0 && want > reported_want_) ||
                           bound < held_ || (!valid_until_ && demand != 0);
        if (!due && (quiet || !early))
            return a;
        heard_ = false;
        retry_ = false;
        a.refresh = true;
        a.want = closing_ ? 0 : want;
        a.bound = bound;
        a.seq = ++seq_;
        reported_want_ = a.want;
        sent_share_ = share_;
        held_ = std::min(held_, bound);
        in_flight_ = true;
        sent_ = true;
        sent_at_ = now;
        return a;
    }

    share_settings settings_;
    std::size_t share_ = 0;         // the local semaphore's capacity
    std::size_t held_ = 0;          // what Redis counts for this process, as last known
    std::size_t target_ = 0;        // this process' part of the division
    std::size_t capacity_ = 0;      // the fleet's capacity, as last answered
    std::size_t demand_ = 0;        // in use plus missing, at the last sample
    std::size_t peak_ = 0;          // the largest demand sampled in this quarter
    std::size_t previous_peak_ = 0; // and in the previous one
    time_point quarter_start_{};
    std::size_t reported_want_ = 0;
    std::size_t sent_share_ = 0; // the share when the last call was sent: Redis holds at least that
    std::uint64_t fence_ = 0;
    std::uint64_t seq_ = 0;
    std::optional<time_point> valid_until_;
    time_point sent_at_{};
    bool sent_ = false;
    bool in_flight_ = false;
    bool heard_ = false;
    bool retry_ = false;
    bool closing_ = false;
    bool left_ = false;
};

} // namespace asio_sync::redis::detail

#endif // ASIO_SYNC_REDIS_DETAIL_SHARE_CLIENT_HPP
