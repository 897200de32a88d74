// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_REDIS_DETAIL_SEMAPHORE_CLIENT_HPP
#define ASIO_SYNC_REDIS_DETAIL_SEMAPHORE_CLIENT_HPP

// The client side of the fleet-wide semaphore as a state machine without I/O: no Asio, no
// connection, no clock of its own. It holds the local waiters by serial, the holders by id and
// their lease clocks; each event (an acquire started or given up, a decoded reply, a grant
// published, a tick of the clock) goes in with the time it happened, and what to do comes out as
// a list of actions that the engine (semaphore_engine.hpp) carries out in order: send a call,
// retry after a pause, load the library, complete an acquire, declare a permit lost.
//
// The lease rule. A client's idea of when a lease ends is never later than the server's. Every
// call that sets a deadline runs on the server after it was sent, so its deadline is at least
// (send time + lease) on the client's clock, the clocks running at the same rate; a reply carries
// the lease time left on the server, so (send time + left) is no later than the server's deadline
// either. A lease's end is the latest of those bounds; a replay, which moves no deadline, only
// ever adds the time its reply says is left. The client declares a permit lost at that end minus
// the safety margin (for clock drift), or when Redis says so, whichever comes first.
//
// Ids. Every acquire has a remote id "<prefix>:<counter>", unique across the fleet: a call with
// an id is replayable, so an acquire whose reply was lost with the link is sent again with the
// same id and is never granted twice. An acquire given up locally (cancelled, timed out, closed)
// completes at once and, if its id was ever sent, releases it after its acquire on the same
// ordered link: a grant that raced the give-up is handed back exactly once.

#include <asio_sync/error.hpp>
#include <asio_sync/redis/detail/lease_view.hpp>
#include <asio_sync/redis/detail/semaphore_reply.hpp>
#include <asio_sync/redis/detail/semaphore_script.hpp>
#include <asio_sync/redis/error.hpp>

#include <boost/asio/error.hpp>
#include <boost/system/error_code.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace asio_sync::redis::detail {

// The answer to the check of the server's eviction policy.
enum class server_check
{
    passed,     // it evicts nothing, or does not let the client read its configuration
    evicts,     // a maxmemory and a policy other than noeviction
    unanswered, // the link dropped before the reply
};

struct client_options
{
    std::size_t capacity = 0;
    std::chrono::milliseconds lease{0};
    std::chrono::milliseconds safety_margin{0};
    std::string id_prefix; // unique across the fleet
    bool durable = false;  // grants are confirmed by the replicas: a published grant is only a hint
};

// One thing for the engine to do.
struct client_action
{
    enum class type
    {
        send_acquire, // acquire(id, n, mode) for the waiter `serial`
        send_renew,   // renew(id, fence) for the waiter `serial`, or for a holder (serial 0)
        send_release, // release(id, fence) of a waiter given up; nobody waits for the reply
        send_watch,   // watch(): when the queue may be served
        send_check,   // CONFIG GET maxmemory*: may the server evict the semaphore's keys?
        load_library, // FUNCTION LOAD; for the waiter `serial` (on_library_loaded), or for nobody
        retry_later,  // on_retry(serial) after `delay`
        grant,        // complete the acquire `serial`: id, n, fence, lease
        fail,         // complete the acquire `serial` with `error`
        lose,         // the permit of the holder `id` is lost, with `error`
    };

    using time_point = std::chrono::steady_clock::time_point;

    type what = type::send_watch;
    std::uint64_t serial = 0;
    std::string id;
    std::size_t n = 0;
    std::uint64_t fence = 0;
    acquire_mode mode = acquire_mode::wait;
    time_point sent_at{}; // a send's time, to pass back with its reply
    std::chrono::milliseconds delay{0};
    boost::system::error_code error;
    std::shared_ptr<lease_view> lease;

    static client_action send_acquire(std::uint64_t serial, std::string id, std::size_t n, acquire_mode mode,
                                      time_point sent_at)
    {
        client_action a = of(type::send_acquire, serial, std::move(id));
        a.n = n;
        a.mode = mode;
        a.sent_at = sent_at;
        return a;
    }

    static client_action send_renew(std::uint64_t serial, std::string id, std::uint64_t fence,
                                    time_point sent_at)
    {
        client_action a = of(type::send_renew, serial, std::move(id));
        a.fence = fence;
        a.sent_at = sent_at;
        return a;
    }

    static client_action send_release(std::string id) { return of(type::send_release, 0, std::move(id)); }
    static client_action send_watch() { return of(type::send_watch, 0, {}); }
    static client_action send_check() { return of(type::send_check, 0, {}); }
    static client_action load_library(std::uint64_t serial) { return of(type::load_library, serial, {}); }

    static client_action retry_later(std::uint64_t serial, std::chrono::milliseconds delay)
    {
        client_action a = of(type::retry_later, serial, {});
        a.delay = delay;
        return a;
    }

    static client_action grant(std::uint64_t serial, std::string id, std::size_t n, std::uint64_t fence,
                               std::shared_ptr<lease_view> lease)
    {
        client_action a = of(type::grant, serial, std::move(id));
        a.n = n;
        a.fence = fence;
        a.lease = std::move(lease);
        return a;
    }

    static client_action fail(std::uint64_t serial, boost::system::error_code ec)
    {
        client_action a = of(type::fail, serial, {});
        a.error = ec;
        return a;
    }

    static client_action lose(std::string id, boost::system::error_code ec)
    {
        client_action a = of(type::lose, 0, std::move(id));
        a.error = ec;
        return a;
    }

private:
    static client_action of(type what, std::uint64_t serial, std::string id)
    {
        client_action a;
        a.what = what;
        a.serial = serial;
        a.id = std::move(id);
        return a;
    }
};

using client_actions = std::vector<client_action>;

// What to do next with a permit's release, whose reply its own operation awaits.
struct release_step
{
    enum class type
    {
        send,        // send release(id, fence); `replayed` if it was sent before
        reload_send, // load the library, then send it
        done,        // complete with `error` (none: released)
    };

    type what = type::done;
    boost::system::error_code error;
};

// A release in flight: what the engine keeps with the call to decide on its reply.
struct release_call
{
    std::string id;
    std::uint64_t fence = 0;
    bool replayed = false; // sent before: its reply was lost with the link
    bool reloaded = false; // the library was loaded again for it once
};

class semaphore_client
{
public:
    using clock = std::chrono::steady_clock;
    using outcome = semaphore_reply::outcome;

    // LOADING or BUSY: the pause before an acquire is sent again.
    static constexpr std::chrono::milliseconds retry_delay{20};

    explicit semaphore_client(client_options options) : options_(std::move(options)) {}

    const client_options& options() const noexcept { return options_; }

    // ---- acquires

    // An acquire of n > 0 permits, `serial` chosen by the engine and unique.
    void start_acquire(std::uint64_t serial, std::size_t n, acquire_mode mode, clock::time_point now,
                       client_actions& out)
    {
        if (closed_)
            return fail(serial, asio_sync::error::closed, out);
        if (check_ == check_state::refused)
            return fail(serial, redis::error::eviction_policy, out);
        waiter& w = waiters_[serial];
        w.n = n;
        w.mode = mode;
        new_id(serial, w);
        start_heartbeat(now);
        if (check_ == check_state::passed)
            return send_acquire(serial, w, now, out);
        w.at = phase::checking;
        if (check_ == check_state::unchecked)
        {
            check_ = check_state::checking;
            out.push_back(client_action::send_check());
        }
    }

    // The acquire `serial` gives up (cancelled, timed out): it completes with `why`, and its id, if
    // ever sent, is released. Nothing if it was decided already.
    void give_up(std::uint64_t serial, boost::system::error_code why, client_actions& out)
    {
        const auto it = waiters_.find(serial);
        if (it == waiters_.end())
            return;
        remove(it, why, true, out);
    }

    // Every pending acquire completes with `why`; with `remotely`, the ids sent are released (a
    // closed connection can send nothing: their waiter leases expire them).
    void abort_all(boost::system::error_code why, bool remotely, client_actions& out)
    {
        while (!waiters_.empty())
            remove(waiters_.begin(), why, remotely, out);
    }

    // Fails the pending acquires and every later one with error::closed, like the local
    // semaphore's close(). Holders keep their leases.
    void close(client_actions& out)
    {
        closed_ = true;
        abort_all(asio_sync::error::closed, true, out);
    }

    bool is_closed() const noexcept { return closed_; }

    void on_acquire_reply(std::uint64_t serial, std::string_view id, clock::time_point sent_at,
                          const semaphore_reply& r, clock::time_point now, client_actions& out)
    {
        waiter* w = find(serial, id);
        if (!w || w->at != phase::in_flight)
            return;
        switch (r.what)
        {
        case outcome::connection_lost: // its outcome is unknown: the same id is answered with its state
            return send_acquire(serial, *w, now, out);
        case outcome::retry:
            w->at = phase::retrying;
            return out.push_back(client_action::retry_later(serial, retry_delay));
        case outcome::library_missing:
            if (w->reloaded)
                return fail(serial, redis::error::server_error, out);
            w->reloaded = true;
            w->at = phase::reloading;
            return out.push_back(client_action::load_library(serial));
        case outcome::granted:
            if (r.left < options_.lease / 2)
            {
                // A replay found it granted long ago (its replies were lost, or, with durable
                // grants, not confirmed): with less than half a lease left it could lapse before
                // the heartbeat (each third of a lease) renews it. Renewed first; the renewal's
                // reply, with a whole lease, grants it.
                w->at = phase::queued;
                w->lease_end = later(w->lease_end, sent_at + r.left);
                return out.push_back(client_action::send_renew(serial, w->id, 0, now));
            }
            return grant(serial, *w, r.fence, later(w->lease_end, sent_at + r.left), out);
        case outcome::queued:
            w->at = phase::queued;
            w->lease_end = later(w->lease_end, sent_at + r.left);
            return watch(out);
        case outcome::busy:
            return fail(serial, boost::asio::error::would_block, out);
        case outcome::failed:
            return fail(serial, r.error, out);
        default:
            return fail(serial, redis::error::server_error, out);
        }
    }

    // The pause after LOADING or BUSY is over.
    void on_retry(std::uint64_t serial, clock::time_point now, client_actions& out)
    {
        const auto it = waiters_.find(serial);
        if (it != waiters_.end() && it->second.at == phase::retrying)
            send_acquire(serial, it->second, now, out);
    }

    // The library was loaded again for the acquire `serial`: send it again, or fail it with the
    // reason the library could not be loaded.
    void on_library_loaded(std::uint64_t serial, const semaphore_reply& r, clock::time_point now,
                           client_actions& out)
    {
        const auto it = waiters_.find(serial);
        if (it == waiters_.end() || it->second.at != phase::reloading)
            return;
        if (r.what == outcome::loaded || r.what == outcome::connection_lost)
            return send_acquire(serial, it->second, now, out);
        fail(serial, r.what == outcome::failed ? r.error : redis::error::server_error, out);
    }

    // A grant published on the semaphore's channel: "<id> <fence> <n>" (fence and n are the last
    // two words, whatever the id holds). A hint for the waiter of that id, if it is ours. With
    // durable grants the waiter is renewed at once instead: the renewal's confirmed reply grants it.
    void on_message(std::string_view message, clock::time_point now, client_actions& out)
    {
        const std::size_t n_at = message.rfind(' ');
        if (n_at == std::string_view::npos || n_at == 0)
            return;
        const std::size_t fence_at = message.rfind(' ', n_at - 1);
        if (fence_at == std::string_view::npos)
            return;
        std::uint64_t fence = 0;
        for (const char c : message.substr(fence_at + 1, n_at - fence_at - 1))
        {
            if (c < '0' || c > '9')
                return;
            fence = fence * 10 + static_cast<std::uint64_t>(c - '0');
        }
        const auto serial = serial_of_.find(message.substr(0, fence_at));
        if (serial == serial_of_.end())
            return;
        waiter& w = waiters_.at(serial->second);
        if (options_.durable)
        {
            // An acquire in flight hears it from its own confirmed reply.
            if (w.at == phase::queued)
                out.push_back(client_action::send_renew(serial->second, w.id, 0, now));
            return;
        }
        // Its lease is the waiter lease that its last deadline-setting call set.
        if (w.at == phase::in_flight || w.at == phase::queued)
            grant(serial->second, w, fence, w.lease_end, out);
    }

    // The subscription became active (again): grants published while it was not are re-checked
    // by renewing every queued waiter.
    void on_subscribed(clock::time_point now, client_actions& out) { renew_waiters(now, out); }

    void on_waiter_renewed(std::uint64_t serial, std::string_view id, clock::time_point sent_at,
                           const semaphore_reply& r, clock::time_point now, client_actions& out)
    {
        waiter* w = find(serial, id);
        if (!w || w->at != phase::queued)
            return;
        switch (r.what)
        {
        case outcome::queued:
            w->lease_end = later(w->lease_end, sent_at + r.left);
            return watch(out);
        case outcome::granted:
            return grant(serial, *w, r.fence, later(w->lease_end, sent_at + r.left), out);
        case outcome::lost:
        case outcome::state_lost:
            // Its waiter lease lapsed while this process could not reach Redis: queue again under a
            // new id (the old one is unknown to Redis, so it cannot be granted).
            new_id(serial, *w);
            return send_acquire(serial, *w, now, out);
        case outcome::library_missing:
            return out.push_back(client_action::load_library(0)); // for the next renewal
        default:
            return; // the next heartbeat renews it again
        }
    }

    void on_watch_reply(const semaphore_reply& r, clock::time_point now)
    {
        watching_ = false;
        // The library reaps a deadline that is at most its clock: wake 1 ms after it.
        if (r.what == outcome::wake && has_queued())
            watch_at_ = now + r.left + std::chrono::milliseconds(1);
    }

    // The answer to the check of the eviction policy: the acquires waiting for it are sent, or
    // fail with eviction_policy. A check whose reply was lost is sent again.
    void on_check_reply(server_check result, clock::time_point now, client_actions& out)
    {
        if (result == server_check::unanswered)
        {
            check_ = check_state::checking;
            return out.push_back(client_action::send_check());
        }
        check_ = result == server_check::evicts ? check_state::refused : check_state::passed;
        for (auto it = waiters_.begin(); it != waiters_.end();)
        {
            const auto current = it++; // fail erases it
            if (current->second.at != phase::checking)
                continue;
            if (check_ == check_state::refused)
                fail(current->first, redis::error::eviction_policy, out);
            else
                send_acquire(current->first, current->second, now, out);
        }
    }

    // The command link (re)connected: the server may have changed, so the next acquire checks it
    // again.
    void on_connected()
    {
        if (check_ != check_state::checking)
            check_ = check_state::unchecked;
    }

    // ---- holders

    void on_holder_renewed(std::string_view id, clock::time_point sent_at, const semaphore_reply& r,
                           client_actions& out)
    {
        const auto it = holders_.find(id);
        if (it == holders_.end() || it->second.lost)
            return;
        holder& h = it->second;
        switch (r.what)
        {
        case outcome::granted:
            h.lease_end = later(h.lease_end, sent_at + r.left);
            return h.view->extend(h.lease_end - options_.safety_margin);
        case outcome::lost:
            return lose(it, redis::error::lease_lost, out);
        case outcome::state_lost:
            return lose(it, redis::error::state_lost, out);
        case outcome::library_missing:
            return out.push_back(client_action::load_library(0)); // for the next renewal
        default:
            return; // its lease deadline decides
        }
    }

    // The permit of `id` is released: it stops renewing. The release is sent, unless the permit
    // was lost (then it completes with why); `call` is what to send.
    release_step release(std::string_view id, release_call& call)
    {
        const auto it = holders_.find(id);
        if (it == holders_.end())
            return {release_step::type::done, {}};
        holder h = std::move(it->second);
        holders_.erase(it);
        if (h.lost)
            return {release_step::type::done, h.lost_why};
        call.id = std::string(id);
        call.fence = h.fence;
        return {release_step::type::send, {}};
    }

    // The reply to a release: a release sent again after its reply was lost that finds its id
    // gone is a success (the first one ran).
    static release_step on_release_reply(release_call& call, const semaphore_reply& r)
    {
        switch (r.what)
        {
        case outcome::connection_lost: // idempotent
            call.replayed = true;
            return {release_step::type::send, {}};
        case outcome::library_missing:
            if (call.reloaded)
                return {release_step::type::done, redis::error::server_error};
            call.reloaded = true;
            return {release_step::type::reload_send, {}};
        case outcome::released:
        case outcome::cancelled:
            return {release_step::type::done, {}};
        case outcome::lost:
            return {release_step::type::done,
                    call.replayed ? boost::system::error_code() : redis::error::lease_lost};
        case outcome::state_lost:
            return {release_step::type::done,
                    call.replayed ? boost::system::error_code() : redis::error::state_lost};
        case outcome::failed:
            return {release_step::type::done, r.error};
        default:
            return {release_step::type::done, redis::error::server_error};
        }
    }

    // Whether `id` is a holder whose permit is lost, and why; for a wait for loss.
    std::optional<boost::system::error_code> lost(std::string_view id) const
    {
        const auto it = holders_.find(id);
        if (it == holders_.end())
            return boost::asio::error::operation_aborted;
        if (it->second.lost)
            return it->second.lost_why;
        return std::nullopt;
    }

    // ---- the clock

    // Declares lost the holders whose lease deadline has come; renews every holder and queued
    // waiter each third of a lease, and the queued waiters when the queue may be served.
    void on_tick(clock::time_point now, client_actions& out)
    {
        for (auto it = holders_.begin(); it != holders_.end(); ++it)
            if (!it->second.lost && now >= deadline(it->second))
                lose(it, redis::error::lease_lost, out);
        if (next_heartbeat_ && now >= *next_heartbeat_)
        {
            next_heartbeat_.reset();
            for (const auto& [id, h] : holders_)
                if (!h.lost)
                    out.push_back(client_action::send_renew(0, id, h.fence, now));
            renew_waiters(now, out);
            if (!holders_.empty() || !waiters_.empty())
                start_heartbeat(now);
        }
        if (watch_at_ && now >= *watch_at_)
        {
            watch_at_.reset();
            renew_waiters(now, out);
        }
    }

    // When on_tick has something to do next: the earliest of the heartbeat, a holder's lease
    // deadline and the watch; none once the client holds nothing and waits for nothing.
    std::optional<clock::time_point> next_wakeup() const
    {
        // The heartbeat runs while anything is held or waited for.
        if (!next_heartbeat_)
            return std::nullopt;
        clock::time_point next = *next_heartbeat_;
        for (const auto& [id, h] : holders_)
            if (!h.lost)
                next = std::min(next, deadline(h));
        if (watch_at_)
            next = std::min(next, *watch_at_);
        return next;
    }

    std::size_t waiting() const noexcept { return waiters_.size(); }
    std::size_t holding() const noexcept { return holders_.size(); }

private:
    enum class phase
    {
        checking,  // waits for the check of the server's eviction policy; never sent
        in_flight, // its acquire is sent and its reply awaited
        queued,    // Redis queued it: renewed, watched, granted by a message or a renewal
        retrying,  // waits to be sent again after LOADING or BUSY
        reloading, // waits for the library to load again
    };

    enum class check_state
    {
        unchecked,
        checking,
        passed,  // or the server would not tell
        refused, // the server may evict: every acquire fails
    };

    struct waiter
    {
        std::string id;
        std::size_t n = 0;
        acquire_mode mode = acquire_mode::wait;
        phase at = phase::checking;
        bool sent = false;             // its id was sent: giving up releases it
        bool reloaded = false;         // the library was loaded again for it once
        clock::time_point lease_end{}; // the earliest its waiter lease can end on the server
    };

    struct holder
    {
        std::size_t n = 0;
        std::uint64_t fence = 0;
        clock::time_point lease_end{};
        bool lost = false;
        boost::system::error_code lost_why;
        std::shared_ptr<lease_view> view;
    };

    using waiter_map = std::map<std::uint64_t, waiter>;
    using holder_map = std::map<std::string, holder, std::less<>>;

    static clock::time_point later(clock::time_point a, clock::time_point b) noexcept
    {
        return std::max(a, b);
    }

    clock::time_point deadline(const holder& h) const noexcept
    {
        return h.lease_end - options_.safety_margin;
    }

    waiter* find(std::uint64_t serial, std::string_view id)
    {
        const auto it = waiters_.find(serial);
        return it != waiters_.end() && it->second.id == id ? &it->second : nullptr;
    }

    bool has_queued() const
    {
        return std::any_of(waiters_.begin(), waiters_.end(),
                           [](const auto& w) { return w.second.at == phase::queued; });
    }

    void new_id(std::uint64_t serial, waiter& w)
    {
        if (!w.id.empty())
            serial_of_.erase(w.id);
        w.id = options_.id_prefix + ":" + std::to_string(++id_counter_);
        w.sent = false;
        serial_of_[w.id] = serial;
    }

    void start_heartbeat(clock::time_point now)
    {
        if (!next_heartbeat_)
            next_heartbeat_ = now + std::chrono::duration_cast<clock::duration>(options_.lease) / 3;
    }

    void send_acquire(std::uint64_t serial, waiter& w, clock::time_point now, client_actions& out)
    {
        if (!w.sent)
        {
            // The first call with this id sets its deadline no earlier than now + lease; a replay
            // moves nothing.
            w.sent = true;
            w.lease_end = now + options_.lease;
        }
        w.at = phase::in_flight;
        out.push_back(client_action::send_acquire(serial, w.id, w.n, w.mode, now));
    }

    void renew_waiters(clock::time_point now, client_actions& out)
    {
        for (const auto& [serial, w] : waiters_)
            if (w.at == phase::queued)
                out.push_back(client_action::send_renew(serial, w.id, 0, now));
    }

    void watch(client_actions& out)
    {
        if (watching_ || watch_at_)
            return;
        watching_ = true;
        out.push_back(client_action::send_watch());
    }

    void fail(std::uint64_t serial, boost::system::error_code ec, client_actions& out)
    {
        const auto it = waiters_.find(serial);
        if (it != waiters_.end())
            forget(it);
        out.push_back(client_action::fail(serial, ec));
    }

    void remove(waiter_map::iterator it, boost::system::error_code why, bool remotely, client_actions& out)
    {
        const std::uint64_t serial = it->first;
        const bool sent = it->second.sent;
        std::string id = it->second.id;
        forget(it);
        out.push_back(client_action::fail(serial, why));
        if (remotely && sent)
            out.push_back(client_action::send_release(std::move(id)));
    }

    void forget(waiter_map::iterator it)
    {
        serial_of_.erase(it->second.id);
        waiters_.erase(it);
    }

    void grant(std::uint64_t serial, waiter& w, std::uint64_t fence, clock::time_point lease_end,
               client_actions& out)
    {
        holder h;
        h.n = w.n;
        h.fence = fence;
        h.lease_end = lease_end;
        h.view = std::make_shared<lease_view>(deadline(h));
        out.push_back(client_action::grant(serial, w.id, w.n, fence, h.view));
        holders_[w.id] = std::move(h);
        forget(waiters_.find(serial));
    }

    void lose(holder_map::iterator it, boost::system::error_code why, client_actions& out)
    {
        holder& h = it->second;
        h.lost = true;
        h.lost_why = why;
        h.view->lose();
        out.push_back(client_action::lose(it->first, why));
    }

    client_options options_;
    waiter_map waiters_;                                          // by serial: the order the acquires started
    std::map<std::string, std::uint64_t, std::less<>> serial_of_; // a waiter's serial by its id
    holder_map holders_;
    std::uint64_t id_counter_ = 0;
    std::optional<clock::time_point> next_heartbeat_;
    std::optional<clock::time_point> watch_at_;
    bool watching_ = false;
    bool closed_ = false;
    check_state check_ = check_state::unchecked;
};

} // namespace asio_sync::redis::detail

#endif // ASIO_SYNC_REDIS_DETAIL_SEMAPHORE_CLIENT_HPP
