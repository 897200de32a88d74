// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_REDIS_DETAIL_LINK_FSM_HPP
#define ASIO_SYNC_REDIS_DETAIL_LINK_FSM_HPP

// The life of one link to the server, without I/O: connect, set up, run (with a health check),
// and on any failure drop the session and connect again after a delay that doubles with each
// failed attempt. It reads top to bottom as the sequence it is; each event (a connect done, the
// set-up answered, a failure, a timer) comes in, and the next thing the driver must do comes out.

#include <asio_sync/redis/connection_options.hpp>

#include <algorithm>
#include <chrono>
#include <random>

namespace asio_sync::redis::detail {

class link_fsm
{
public:
    using duration = std::chrono::steady_clock::duration;

    enum class state
    {
        idle,       // never started
        connecting, // resolving and connecting; the connect timeout runs
        setting_up, // the set-up commands written, their replies awaited; the connect timeout runs
        ready,      // running; a health check every interval
        waiting,    // the session dropped: the reconnect delay runs
        closed,
    };

    // The next thing for the driver to do.
    enum class action
    {
        none,
        connect,      // open a session: resolve, connect, and arm the connect timeout (timeout())
        set_up,       // write the set-up commands and start reading
        run,          // the link is up: write what waits, arm the health check (health_interval())
        check_health, // write a PING, and arm the next health check
        reconnect,    // drop the session, then connect again after delay()
        stop,         // drop the session for good
    };

    link_fsm(const connection_options& options, unsigned seed) : options_(options), random_(seed) {}

    state current() const noexcept { return state_; }
    bool started() const noexcept { return state_ != state::idle; }
    bool ready() const noexcept { return state_ == state::ready; }

    // The connect timeout, the reconnect delay of the last `reconnect`, the health check interval
    // (zero: no health check).
    duration timeout() const noexcept { return options_.connect_timeout; }
    duration delay() const noexcept { return delay_; }
    duration health_interval() const noexcept { return options_.health_check_interval; }

    action start()
    {
        if (state_ != state::idle)
            return action::none;
        return connect();
    }

    action on_connected(bool ok)
    {
        if (state_ != state::connecting)
            return action::none;
        if (!ok)
            return fail();
        state_ = state::setting_up;
        return action::set_up;
    }

    // The set-up commands were all answered; `ok` if none failed.
    action on_set_up(bool ok)
    {
        if (state_ != state::setting_up)
            return action::none;
        if (!ok)
            return fail();
        state_ = state::ready;
        ping_outstanding_ = false;
        return action::run;
    }

    // A set-up command added while the link runs: the callers' commands wait for its reply again.
    void on_setup_added() noexcept
    {
        if (state_ == state::ready)
            state_ = state::setting_up;
    }

    // The server answered something other than an error: the link works, so the next failure
    // starts again from the shortest delay.
    void on_answer() noexcept { failures_ = 0; }

    // The session failed: a read or write error, a reply that cannot be parsed or was not
    // expected, the connect timeout.
    action on_failure()
    {
        if (state_ == state::idle || state_ == state::waiting || state_ == state::closed)
            return action::none;
        return fail();
    }

    // The health check's timer: a PING written a whole interval ago, with no reply at all since,
    // means a dead link (a stuck proxy, a half-open connection), however long it stays open.
    action on_health_timer()
    {
        if (state_ != state::ready)
            return action::none;
        if (ping_outstanding_)
            return fail();
        ping_outstanding_ = true;
        return action::check_health;
    }

    // A reply, the PING's or any other: the server answers on this link. A PING held back behind
    // slow commands (WAITs, a long script) is no sign of death while their replies come.
    void on_reply() noexcept { ping_outstanding_ = false; }

    action on_reconnect_timer()
    {
        if (state_ != state::waiting)
            return action::none;
        return connect();
    }

    // The link is no longer needed while it fails (a cluster node that left): it stays down,
    // until started again.
    action park()
    {
        if (state_ != state::waiting)
            return action::none;
        state_ = state::idle;
        return action::stop;
    }

    action close()
    {
        if (state_ == state::closed)
            return action::none;
        state_ = state::closed;
        return action::stop;
    }

private:
    action connect()
    {
        state_ = state::connecting;
        return action::connect;
    }

    action fail()
    {
        state_ = state::waiting;
        delay_ = next_delay();
        if (failures_ < 32)
            ++failures_;
        return action::reconnect;
    }

    // reconnect_delay_min doubled per consecutive failure up to reconnect_delay_max, then a
    // uniform draw from [d * (1 - jitter), d].
    duration next_delay()
    {
        std::chrono::duration<double, std::milli> d = options_.reconnect_delay_min;
        for (unsigned i = 0; i < failures_ && d < options_.reconnect_delay_max; ++i)
            d *= 2;
        d = std::min<std::chrono::duration<double, std::milli>>(d, options_.reconnect_delay_max);
        const double jitter = std::clamp(options_.reconnect_jitter, 0.0, 1.0);
        d *= std::uniform_real_distribution<double>(1.0 - jitter, 1.0)(random_);
        return std::chrono::duration_cast<duration>(d);
    }

    const connection_options options_;
    state state_ = state::idle;
    unsigned failures_ = 0; // consecutive failed attempts: the exponent of the reconnect delay
    bool ping_outstanding_ = false;
    duration delay_{};
    std::minstd_rand random_; // the jitter
};

} // namespace asio_sync::redis::detail

#endif // ASIO_SYNC_REDIS_DETAIL_LINK_FSM_HPP
