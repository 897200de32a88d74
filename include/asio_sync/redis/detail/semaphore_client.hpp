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
// The check. Acquires go only to a server whose configuration passed the check (judge_server): made
// by the first acquire after a connect, and at once by a reconnect with anything pending or held (a
// failover may reach a server configured otherwise). Until it passes, nothing is sent for them
// there and no reply, renewal or grant from it is taken: the same ids ask again after it. A refusal
// fails the pending acquires, giving back what they sent, and loses the permits held at once: they
// are renewed no more there, and a loss told early keeps the lease rule.
//
// Ids. Every acquire has a remote id "<prefix>:<counter>", unique across the fleet: a call with
// an id is replayable, so an acquire whose reply was lost with the link is sent again with the
// same id and is never granted twice. An acquire given up locally (cancelled, timed out, closed)
// completes at once and, if its id was ever sent, releases it after its acquire on the same
// ordered link: a grant that raced the give-up is handed back exactly once.
//
// Capacity. The object works with the capacity it was constructed with until it learns of another
// in force: from a message on the channel (a resize, or a shrink settled), from a read of the usage
// (on every subscription, and each third of a lease while a resize of its own waits for the holders),
// from the refusal of an acquire (ASIO_SYNC_CAPACITY tells the capacity in force), or from its own
// resize. It takes the capacity of a resize stored while it existed: one published while it was
// subscribed, one made by itself, or one whose stamp is above a token at which it is known to have
// existed (the clock of a read of the usage, the fence of a grant, the stamp of a resize it took;
// stamps, fences and clocks are all tokens of one sequence). A capacity stored before that (a
// resize, or the declaration of another process) it takes only with adopt_capacity; otherwise its
// acquires keep failing with capacity_mismatch. A refused acquire that it may take the capacity from
// is sent again with it, under the same id: a missed message costs a round trip, never a failure.
//
// Resizes. A resize is sent from the latest stamp seen; the library stores it only from that stamp,
// so one whose reply was lost is sent again safely: it answers resized if it ran and is in force,
// stores it if nothing ran since, and otherwise (a resize ran since, this one's outcome unknown)
// fails with connection_lost. A resize that waits for the holders completes once some capacity in
// force since it was stored was no longer exceeded: a calm (published with resized and settled, read
// with the usage) at least its stamp, or a usage read under its stamp or a later one with the permits
// held within the capacity.

#include <asio_sync/error.hpp>
#include <asio_sync/redis/detail/checked_semaphore_options.hpp>
#include <asio_sync/redis/detail/lease_view.hpp>
#include <asio_sync/redis/detail/semaphore_reply.hpp>
#include <asio_sync/redis/detail/semaphore_script.hpp>
#include <asio_sync/redis/error.hpp>

#include <boost/asio/error.hpp>
#include <boost/system/error_code.hpp>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace asio_sync::redis::detail {

struct client_options
{
    std::size_t capacity;              // declared at construction
    checked_semaphore_options options; // the semaphore's
    std::string id_prefix;             // unique across the fleet
    bool replicas_required = false;    // the server must refuse writes without its replicas (Sentinel,
                                       // not durable): checked with its configuration
};

// One thing for the engine to do.
struct client_action
{
    enum class type
    {
        send_acquire, // acquire(id, n, capacity, mode) for the waiter `serial`
        send_renew,   // renew(id, fence) for the waiter `serial`, or for a holder (serial 0)
        send_release, // release(id, fence) of a waiter given up; nobody waits for the reply
        send_watch,   // watch(): when the queue may be served
        send_check,   // CONFIG GET maxmemory* min-replicas-*: may it evict, or write without replicas?
        send_resize,  // resize(id, capacity, base) for the resize `serial`
        send_usage,   // usage(): the capacity in force, its stamp and calm, the permits held
        load_library, // FUNCTION LOAD; for the waiter `serial` (on_library_loaded), or for nobody
        retry_later,  // on_retry(serial) after `delay`
        grant,        // complete the acquire `serial`: id, n, fence, lease
        fail,         // complete the acquire `serial` with `error`
        lose,         // the permit of the holder `id` is lost, with `error`
        resize_done,  // complete the resize `serial` with `error` (none: done)
    };

    using time_point = std::chrono::steady_clock::time_point;

    type what = type::send_watch;
    std::uint64_t serial = 0;
    std::string id;
    std::size_t n = 0;
    std::size_t capacity = 0;
    std::uint64_t fence = 0;
    std::uint64_t base = 0; // the stamp a resize is sent from
    acquire_mode mode = acquire_mode::wait;
    time_point sent_at{}; // a send's time, to pass back with its reply
    std::chrono::milliseconds delay{0};
    boost::system::error_code error;
    std::shared_ptr<lease_view> lease;

    static client_action send_acquire(std::uint64_t serial, std::string id, std::size_t n,
                                      std::size_t capacity, acquire_mode mode, time_point sent_at)
    {
        client_action a = of(type::send_acquire, serial, std::move(id));
        a.n = n;
        a.capacity = capacity;
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
    static client_action send_usage() { return of(type::send_usage, 0, {}); }

    static client_action send_resize(std::uint64_t serial, std::string id, std::size_t capacity,
                                     std::uint64_t base)
    {
        client_action a = of(type::send_resize, serial, std::move(id));
        a.capacity = capacity;
        a.base = base;
        return a;
    }

    static client_action resize_done(std::uint64_t serial, boost::system::error_code ec)
    {
        client_action a = of(type::resize_done, serial, {});
        a.error = ec;
        return a;
    }
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
    // NOREPLICAS: the pause before an acquire or a resize is sent again. The primary refuses writes
    // until a replica acknowledges it again (after a failover, once a replica syncs with it; never,
    // if it is cut off from them and the sentinels promoted another).
    static constexpr std::chrono::milliseconds no_replicas_delay{100};

    explicit semaphore_client(client_options options)
        : options_(std::move(options)), capacity_(options_.capacity)
    {
    }

    const client_options& options() const noexcept { return options_; }

    // The capacity this object works with: its own until it learns of another in force (above).
    std::size_t capacity() const noexcept { return capacity_; }

    // ---- acquires

    // An acquire of n > 0 permits, `serial` chosen by the engine and unique.
    void start_acquire(std::uint64_t serial, std::size_t n, acquire_mode mode, clock::time_point now,
                       client_actions& out)
    {
        if (closed_)
            return fail(serial, asio_sync::error::closed, out);
        if (check_ == check_state::refused)
            return fail(serial, refused_why_, out);
        // A capacity of 0, never replaced, admits nothing; Redis would refuse to declare it. Any
        // other is checked by Redis, against the capacity in force.
        if (capacity_ == 0)
            return fail(serial, asio_sync::error::too_many_permits, out);
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
        if (const auto it = waiters_.find(serial); it != waiters_.end())
            remove(it, why, true, out);
        else if (resizes_.count(serial))
            finish_resize(serial, why, out); // not undone: it may have been stored
    }

    // Every pending acquire completes with `why`; with `remotely`, the ids sent are released (a
    // closed connection can send nothing: their waiter leases expire them).
    void abort_all(boost::system::error_code why, bool remotely, client_actions& out)
    {
        while (!waiters_.empty())
            remove(waiters_.begin(), why, remotely, out);
        while (!resizes_.empty())
            finish_resize(resizes_.begin()->first, why, out);
    }

    // Fails the pending acquires and resizes and every later one with error::closed, like the local
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
        if (check_ != check_state::passed)
        {
            // Sent before a reconnect, or queued while the link was down and run on a server not
            // checked yet: whatever it says waits for the check, then the same id asks again.
            w->at = phase::checking;
            return;
        }
        switch (r.what)
        {
        case outcome::connection_lost: // its outcome is unknown: the same id is answered with its state
            return send_acquire(serial, *w, now, out);
        case outcome::retry:
            w->at = phase::retrying;
            return out.push_back(client_action::retry_later(serial, retry_delay));
        case outcome::no_replicas: // refused before it ran: the same id again, later
            w->at = phase::retrying;
            return out.push_back(client_action::retry_later(serial, no_replicas_delay));
        case outcome::library_missing:
            if (w->reloaded)
                return fail(serial, redis::error::server_error, out);
            w->reloaded = true;
            w->at = phase::reloading;
            return out.push_back(client_action::load_library(serial));
        case outcome::granted:
            if (r.left < options_.options.lease() / 2)
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
            if (std::exchange(w->hinted, false))
                // Granted since, as a message said while the reply was awaited: the renewal's
                // confirmed reply grants it now, not the next heartbeat.
                return out.push_back(client_action::send_renew(serial, w->id, 0, now));
            return watch(out);
        case outcome::busy:
            return fail(serial, boost::asio::error::would_block, out);
        case outcome::failed:
            // Refused for its capacity: sent again (it changed nothing) if this object now works with
            // another capacity than the one it was sent with, learnt from the refusal or meanwhile.
            if (r.error == redis::error::capacity_mismatch)
            {
                if (r.stamp < w->stamp)
                    went_back(r.capacity, r.stamp, now, out);
                else
                    learn(r.capacity, r.stamp, told::refusal, now, out);
                if (capacity_ != w->capacity)
                    return send_acquire(serial, *w, now, out);
            }
            if (r.stored) // a grant or a waiter that cannot be confirmed: given back
                return remove(waiters_.find(serial), r.error, true, out);
            return fail(serial, r.error, out);
        default:
            return fail(serial, redis::error::server_error, out);
        }
    }

    // The pause after LOADING or BUSY is over.
    void on_retry(std::uint64_t serial, clock::time_point now, client_actions& out)
    {
        if (const auto it = waiters_.find(serial); it != waiters_.end() && it->second.at == phase::retrying)
            send_checked(serial, it->second, now, out);
        else if (const auto r = resizes_.find(serial); r != resizes_.end() && r->second.at == phase::retrying)
            send_resize(serial, r->second, out);
    }

    // The library was loaded again for the acquire `serial`: send it again, or fail it with the
    // reason the library could not be loaded.
    void on_library_loaded(std::uint64_t serial, const semaphore_reply& r, clock::time_point now,
                           client_actions& out)
    {
        const bool loaded = r.what == outcome::loaded || r.what == outcome::connection_lost;
        const boost::system::error_code why = r.error ? r.error : redis::error::server_error;
        if (const auto it = waiters_.find(serial); it != waiters_.end() && it->second.at == phase::reloading)
            return loaded ? send_checked(serial, it->second, now, out) : fail(serial, why, out);
        if (const auto it = resizes_.find(serial); it != resizes_.end() && it->second.at == phase::reloading)
            return loaded ? send_resize(serial, it->second, out) : finish_resize(serial, why, out);
    }

    // A message on the semaphore's channel, a hint: "granted <fence> <n> <id>" for the waiter of that
    // id, if it is ours (the id is the rest of the message, whatever it holds); "resized <capacity>
    // <stamp> <calm>", a resize stored while this object was subscribed; "settled <capacity>
    // <stamp>", the permits held came down to that resize's capacity. With durable grants a granted
    // waiter is renewed at once instead: the renewal's confirmed reply grants it.
    void on_message(std::string_view message, clock::time_point now, client_actions& out)
    {
        using semaphore_library::reply_word;
        const std::string_view kind = next_word(message);
        std::uint64_t first = 0;
        std::uint64_t second = 0;
        if (!next_number(message, first) || !next_number(message, second))
            return;
        if (kind == word(reply_word::granted))
            return on_granted(message, first, now, out);
        std::uint64_t calm = second;
        if (kind == word(reply_word::resized) && next_number(message, calm) && message.empty())
        {
            learn(static_cast<std::size_t>(first), second, told::resize, now, out);
            return settle(calm, out);
        }
        if (kind == word(reply_word::settled) && message.empty())
        {
            learn(static_cast<std::size_t>(first), second, told::observation, now, out);
            settle(second, out);
        }
    }

    // The subscription became active (again): grants published while it was not are re-checked
    // by renewing every queued waiter, and resizes by reading the usage.
    void on_subscribed(clock::time_point now, client_actions& out)
    {
        renew_waiters(now, out);
        out.push_back(client_action::send_usage());
    }

    void on_waiter_renewed(std::uint64_t serial, std::string_view id, clock::time_point sent_at,
                           const semaphore_reply& r, clock::time_point now, client_actions& out)
    {
        waiter* w = find(serial, id);
        if (!w || w->at != phase::queued || check_ != check_state::passed)
            return; // a renewal that ran before the check: the one after it decides
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
            return send_checked(serial, *w, now, out);
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

    // The answer to the check of the server's configuration. Passed: the acquires waiting for it
    // are sent, and after a reconnect the queued waiters and the holders are renewed. Refused
    // (eviction_policy, replica_policy): every pending acquire fails with that code, giving back
    // what it may have stored, and every holder's permit is lost with it at once: it is renewed no
    // more on that server, and its release sends nothing (its lease lapses there). A check whose
    // reply was lost is sent again.
    void on_check_reply(server_check result, clock::time_point now, client_actions& out)
    {
        if (result == server_check::unanswered)
        {
            check_ = check_state::checking;
            return out.push_back(client_action::send_check());
        }
        check_ = result == server_check::passed ? check_state::passed : check_state::refused;
        refused_why_ =
            result == server_check::evicts ? redis::error::eviction_policy : redis::error::replica_policy;
        if (check_ == check_state::refused)
        {
            while (!waiters_.empty())
                remove(waiters_.begin(), refused_why_, true, out);
            for (auto it = holders_.begin(); it != holders_.end(); ++it)
                if (!it->second.lost)
                    lose(it, refused_why_, out);
            return;
        }
        for (auto& [serial, w] : waiters_)
            if (w.at == phase::checking)
                send_acquire(serial, w, now, out);
        renew_holders(now, out);
        renew_waiters(now, out);
    }

    // The command link (re)connected: the server may have changed (a failover, a restart). With
    // acquires pending or permits held it is checked again at once, and until it passes nothing is
    // sent for them (acquires, replays, renewals) and no reply or grant from it is taken; otherwise
    // the next acquire checks it.
    void on_connected(client_actions& out)
    {
        if (check_ == check_state::checking)
            return; // its reply is lost with the old link, and the check is sent again
        const bool held =
            std::any_of(holders_.begin(), holders_.end(), [](const auto& h) { return !h.second.lost; });
        if (waiters_.empty() && !held)
        {
            check_ = check_state::unchecked;
            return;
        }
        check_ = check_state::checking;
        out.push_back(client_action::send_check());
    }

    // ---- capacity

    // A resize to `capacity`, `serial` chosen by the engine and unique among acquires and resizes;
    // with `settle`, it completes once the permits held have come down to it.
    void start_resize(std::uint64_t serial, std::size_t capacity, bool settle, client_actions& out)
    {
        if (closed_)
            return out.push_back(client_action::resize_done(serial, asio_sync::error::closed));
        if (capacity == 0 || capacity > semaphore_library::max_capacity)
            return out.push_back(client_action::resize_done(serial, redis::error::invalid_argument));
        resize_request& r = resizes_[serial];
        r.id = next_id();
        r.capacity = capacity;
        r.settle = settle;
        r.base = latest_;
        send_resize(serial, r, out);
    }

    void on_resize_reply(std::uint64_t serial, std::string_view id, const semaphore_reply& r,
                         clock::time_point now, client_actions& out)
    {
        const auto it = resizes_.find(serial);
        if (it == resizes_.end() || it->second.id != id || it->second.at != phase::in_flight)
            return;
        resize_request& request = it->second;
        switch (r.what)
        {
        case outcome::connection_lost: // it may have run: sent again from the same base
            request.replayed = true;
            return send_resize(serial, request, out);
        case outcome::retry:
            request.at = phase::retrying;
            return out.push_back(client_action::retry_later(serial, retry_delay));
        case outcome::no_replicas: // refused before it ran
            request.at = phase::retrying;
            return out.push_back(client_action::retry_later(serial, no_replicas_delay));
        case outcome::library_missing:
            if (request.reloaded)
                return finish_resize(serial, redis::error::server_error, out);
            request.reloaded = true;
            request.at = phase::reloading;
            return out.push_back(client_action::load_library(serial));
        case outcome::resized:
            learn(r.capacity, r.stamp, told::resize, now, out);
            request.stamp = r.stamp;
            if (!request.settle || r.calm >= r.stamp)
                return finish_resize(serial, {}, out);
            request.at = phase::settling;
            return start_heartbeat(now);
        case outcome::conflict:
            // Not stored: another resize ran since its base. Sent again from the stamp in force,
            // unless an earlier send's reply was lost: that one may have run, before the other.
            learn(r.capacity, r.stamp, told::observation, now, out);
            if (request.replayed)
                return finish_resize(serial, redis::error::connection_lost, out);
            request.base = r.stamp;
            return send_resize(serial, request, out);
        case outcome::failed:
            return finish_resize(serial, r.error, out);
        default:
            return finish_resize(serial, redis::error::server_error, out);
        }
    }

    // A read of the usage: the capacity in force, and whether the resizes that wait for the holders
    // are done. Its clock is a token at which this object existed.
    void on_usage_reply(const semaphore_reply& r, clock::time_point now, client_actions& out)
    {
        if (r.what == outcome::connection_lost && since_ == 0)
            return out.push_back(client_action::send_usage());
        if (r.what != outcome::usage)
            return;
        // Made after the resize this object took was stored (the clock is above its stamp), the read
        // finds an older one in force: Redis lost it.
        if (r.clock > stamp_ && r.stamp < stamp_)
            went_back(r.capacity, r.stamp, now, out);
        else
            learn(r.capacity, r.stamp, told::observation, now, out);
        settle(r.calm, out);
        if (r.held <= r.capacity)
            settle(r.stamp, out);
        // A read made after a resize was stored (its clock is above the resize's stamp) that finds
        // an older stamp in force: Redis lost it (a failover to a replica that lacked it, lost
        // state) before the holders came down to it.
        for (auto it = resizes_.begin(); it != resizes_.end();)
        {
            const auto current = it++; // finish_resize erases it
            const resize_request& request = current->second;
            if (request.at == phase::settling && r.clock > request.stamp && r.stamp < request.stamp)
                finish_resize(current->first, redis::error::state_lost, out);
        }
        existed_at(r.clock);
    }

    std::size_t resizing() const noexcept { return resizes_.size(); }

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
            if (check_ != check_state::passed)
                return; // ran before the check of a server reconnected to: the one after it extends
            h.lease_end = later(h.lease_end, sent_at + r.left);
            return h.view->extend(h.lease_end - options_.options.safety_margin());
        case outcome::lost:
            return lose(it, redis::error::lease_lost, out);
        case outcome::state_lost:
            return lose(it, redis::error::state_lost, out);
        case outcome::library_missing:
            return out.push_back(client_action::load_library(0)); // for the next renewal
        case outcome::no_replicas:
            // Refused: not a renewal. The primary may be cut off from its replicas, and another
            // promoted; the next heartbeat tries again, and the lease deadline decides.
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
        case outcome::no_replicas: // not released: its lease lapses on the server
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
    // waiter each third of a lease, and the queued waiters when the queue may be served; reads the
    // usage each third of a lease while a resize waits for the holders.
    void on_tick(clock::time_point now, client_actions& out)
    {
        for (auto it = holders_.begin(); it != holders_.end(); ++it)
            if (!it->second.lost && now >= deadline(it->second))
                lose(it, redis::error::lease_lost, out);
        if (next_heartbeat_ && now >= *next_heartbeat_)
        {
            next_heartbeat_.reset();
            renew_holders(now, out);
            renew_waiters(now, out);
            if (std::any_of(resizes_.begin(), resizes_.end(),
                            [](const auto& r) { return r.second.at == phase::settling; }))
                out.push_back(client_action::send_usage());
            if (!holders_.empty() || !waiters_.empty() || !resizes_.empty())
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
        // The heartbeat runs while anything is held or waited for, a resize included.
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
        checking,  // waits for the check of the server (first, or after a reconnect) to send
        in_flight, // its acquire is sent and its reply awaited
        queued,    // Redis queued it: renewed, watched, granted by a message or a renewal
        retrying,  // waits to be sent again after LOADING or BUSY
        reloading, // waits for the library to load again
        settling,  // a resize stored, which waits for the permits held to come down to it
    };

    enum class check_state
    {
        unchecked,
        checking,
        passed,  // or the server would not tell
        refused, // the server may evict, or write without replicas: every acquire fails
    };

    struct waiter
    {
        std::string id;
        std::size_t n = 0;
        acquire_mode mode = acquire_mode::wait;
        phase at = phase::checking;
        std::size_t capacity = 0;      // the capacity its acquire was last sent with
        std::uint64_t stamp = 0;       // and the stamp of that capacity
        bool sent = false;             // its id was sent: giving up releases it
        bool reloaded = false;         // the library was loaded again for it once
        bool hinted = false;           // durable grants: a grant was published while it was in flight
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

    struct resize_request
    {
        std::string id;
        std::size_t capacity = 0;
        bool settle = true;      // completes once the permits held have come down to it
        std::uint64_t base = 0;  // the stamp it is sent from
        std::uint64_t stamp = 0; // once stored
        phase at = phase::in_flight;
        bool replayed = false; // sent again after a reply lost with the link: it may have run
        bool reloaded = false; // the library was loaded again for it once
    };

    using waiter_map = std::map<std::uint64_t, waiter>;
    using holder_map = std::map<std::string, holder, std::less<>>;

    static clock::time_point later(clock::time_point a, clock::time_point b) noexcept
    {
        return std::max(a, b);
    }

    clock::time_point deadline(const holder& h) const noexcept
    {
        return h.lease_end - options_.options.safety_margin();
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

    std::string next_id() { return options_.id_prefix + ":" + std::to_string(++id_counter_); }

    void new_id(std::uint64_t serial, waiter& w)
    {
        if (!w.id.empty())
            serial_of_.erase(w.id);
        w.id = next_id();
        w.sent = false;
        w.hinted = false;
        serial_of_[w.id] = serial;
    }

    void start_heartbeat(clock::time_point now)
    {
        if (!next_heartbeat_)
            next_heartbeat_ = now + std::chrono::duration_cast<clock::duration>(options_.options.lease()) / 3;
    }

    void send_acquire(std::uint64_t serial, waiter& w, clock::time_point now, client_actions& out)
    {
        if (!w.sent)
        {
            // The first call with this id sets its deadline no earlier than now + lease; a replay
            // moves nothing.
            w.sent = true;
            w.lease_end = now + options_.options.lease();
        }
        w.at = phase::in_flight;
        w.capacity = capacity_;
        w.stamp = stamp_;
        out.push_back(client_action::send_acquire(serial, w.id, w.n, capacity_, w.mode, now));
    }

    void send_resize(std::uint64_t serial, resize_request& r, client_actions& out)
    {
        r.at = phase::in_flight;
        out.push_back(client_action::send_resize(serial, r.id, r.capacity, r.base));
    }

    void finish_resize(std::uint64_t serial, boost::system::error_code ec, client_actions& out)
    {
        resizes_.erase(serial);
        out.push_back(client_action::resize_done(serial, ec));
    }

    // Completes the resizes that wait for the holders whose stamp is at most `calm`: some capacity in
    // force since they were stored was no longer exceeded.
    void settle(std::uint64_t calm, client_actions& out)
    {
        for (auto it = resizes_.begin(); it != resizes_.end();)
        {
            const auto current = it++; // finish_resize erases it
            if (current->second.at == phase::settling && current->second.stamp <= calm)
                finish_resize(current->first, {}, out);
        }
    }

    // How this object learns of a capacity in force.
    enum class told
    {
        resize,      // by a resize stored while it existed: a message, or its own
        observation, // by a read of the usage, a settled shrink, a refused resize
        refusal,     // by an acquire refused for its capacity: its own is not in force
    };

    // Learns that `capacity` is in force under `stamp`; takes it if it may (above).
    void learn(std::size_t capacity, std::uint64_t stamp, told how, clock::time_point now,
               client_actions& out)
    {
        const bool adopt = options_.options.adopt_capacity();
        latest_ = std::max(latest_, stamp);
        if (how == told::resize)
            existed_at(stamp);
        // An older stamp is news only to an object that adopts what a refusal says is in force
        // (a capacity declared again after a reset by hand has the stamp 0).
        if (capacity == 0 || (stamp < stamp_ && !(adopt && how == told::refusal)))
            return;
        if (capacity != capacity_ && !adopt && how != told::resize && !(since_ != 0 && stamp > since_))
            return;
        take(capacity, stamp, now, out);
    }

    // An acquire sent under `stamp_` was refused with an older stamp in force, or a read made after
    // `stamp_` was stored found an older one: Redis went back (a failover to a replica that lacked
    // the resizes this object took, a restore). What it holds is in force again, and this object
    // takes it if it would have taken it then: a resize stored while it existed, the capacity it
    // declared, or any with adopt_capacity; else its acquires fail with capacity_mismatch, as for
    // a process that declares another capacity.
    void went_back(std::size_t capacity, std::uint64_t stamp, clock::time_point now, client_actions& out)
    {
        latest_ = stamp;
        if (capacity != 0 && (options_.options.adopt_capacity() || capacity == options_.capacity ||
                              (since_ != 0 && stamp > since_)))
            take(capacity, stamp, now, out);
    }

    // Works with `capacity` under `stamp` from now on. Waiters are renewed when it shrinks: Redis
    // took those that ask for more out of the queue, and their renewal answers lost.
    void take(std::size_t capacity, std::uint64_t stamp, clock::time_point now, client_actions& out)
    {
        const bool smaller = capacity < capacity_;
        capacity_ = capacity;
        stamp_ = stamp;
        if (smaller)
            renew_waiters(now, out);
    }

    // This object existed at `token` (a fence, a stamp or a clock): it takes the capacity of every
    // resize stored after it.
    void existed_at(std::uint64_t token) noexcept
    {
        if (token != 0)
            since_ = since_ == 0 ? token : std::min(since_, token);
    }

    // The rest of a "granted <fence> <n> <id>" message, after its n: the id.
    void on_granted(std::string_view id, std::uint64_t fence, clock::time_point now, client_actions& out)
    {
        const auto serial = serial_of_.find(id);
        // Not taken from a server not checked yet: the renewals after its check find the grant.
        if (serial == serial_of_.end() || check_ != check_state::passed)
            return;
        waiter& w = waiters_.at(serial->second);
        if (options_.options.durable())
        {
            // An acquire in flight hears it from its own confirmed reply, unless that reply says
            // queued: then it renews at once.
            if (w.at == phase::queued)
                out.push_back(client_action::send_renew(serial->second, w.id, 0, now));
            else
                w.hinted = true;
            return;
        }
        // Its lease is the waiter lease that its last deadline-setting call set.
        if (w.at == phase::in_flight || w.at == phase::queued)
            grant(serial->second, w, fence, w.lease_end, out);
    }

    static std::string_view word(semaphore_library::reply_word w) noexcept
    {
        return semaphore_library::reply_words[static_cast<std::size_t>(w)];
    }

    // The text up to the next space, taken off `text` with the space.
    static std::string_view next_word(std::string_view& text) noexcept
    {
        const std::size_t end = std::min(text.find(' '), text.size());
        const std::string_view first = text.substr(0, end);
        text.remove_prefix(std::min(end + 1, text.size()));
        return first;
    }

    // The next word of `text` as a decimal number, taken off it; false if it is not one.
    static bool next_number(std::string_view& text, std::uint64_t& value) noexcept
    {
        const std::string_view digits = next_word(text);
        const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
        return !digits.empty() && error == std::errc() && end == digits.data() + digits.size();
    }

    // Renewals go only to a server that passed its check (after a reconnect, the check's pass
    // renews).
    void renew_waiters(clock::time_point now, client_actions& out)
    {
        if (check_ != check_state::passed)
            return;
        for (const auto& [serial, w] : waiters_)
            if (w.at == phase::queued)
                out.push_back(client_action::send_renew(serial, w.id, 0, now));
    }

    void renew_holders(clock::time_point now, client_actions& out)
    {
        if (check_ != check_state::passed)
            return;
        for (const auto& [id, h] : holders_)
            if (!h.lost)
                out.push_back(client_action::send_renew(0, id, h.fence, now));
    }

    // Sends the acquire of `w`, or holds it for the check of a server reconnected to.
    void send_checked(std::uint64_t serial, waiter& w, clock::time_point now, client_actions& out)
    {
        if (check_ == check_state::passed)
            return send_acquire(serial, w, now, out);
        w.at = phase::checking;
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
        existed_at(fence);
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
    std::size_t capacity_;     // the capacity this object works with
    std::uint64_t stamp_ = 0;  // the stamp of capacity_ (0: a declaration)
    std::uint64_t latest_ = 0; // the latest stamp seen: a resize is sent from it
    std::uint64_t since_ = 0;  // the earliest token at which this object is known to exist (0: none)
    std::map<std::uint64_t, resize_request> resizes_;             // by serial
    waiter_map waiters_;                                          // by serial: the order the acquires started
    std::map<std::string, std::uint64_t, std::less<>> serial_of_; // a waiter's serial by its id
    holder_map holders_;
    std::uint64_t id_counter_ = 0;
    std::optional<clock::time_point> next_heartbeat_;
    std::optional<clock::time_point> watch_at_;
    bool watching_ = false;
    bool closed_ = false;
    check_state check_ = check_state::unchecked;
    boost::system::error_code refused_why_; // of check_state::refused
};

} // namespace asio_sync::redis::detail

#endif // ASIO_SYNC_REDIS_DETAIL_SEMAPHORE_CLIENT_HPP
