// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_REDIS_DETAIL_SEMAPHORE_ENGINE_HPP
#define ASIO_SYNC_REDIS_DETAIL_SEMAPHORE_ENGINE_HPP

// The client side of the fleet-wide semaphore: the local waiters and holders of one
// redis::basic_semaphore, the calls of the function library in semaphore_script on them, the
// grants published on the semaphore's channel, and the heartbeat that renews every lease.
//
// Every local acquire has a remote id, "<random prefix>:<counter>", unique across the fleet; a call
// with an id is replayable, so an acquire whose reply was lost with the link is sent again with
// the same id after the reconnection and is never granted twice. An acquire given up locally
// (cancelled, timed out) completes at once and sends release(id) on the same ordered command link,
// after its acquire: a grant that raced the give-up is handed back exactly once. The state is
// guarded by one mutex; no handler runs under it, every completion is submitted to the handler's
// executor.

#include <asio_sync/error.hpp>
#include <asio_sync/redis/connection.hpp>
#include <asio_sync/redis/detail/access.hpp>
#include <asio_sync/redis/detail/command.hpp>
#include <asio_sync/redis/detail/semaphore_script.hpp>
#include <asio_sync/redis/error.hpp>
#include <asio_sync/redis/reply.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/associated_allocator.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/bind_allocator.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/system/error_code.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

namespace asio_sync::redis::detail {

template <class Executor>
class semaphore_engine;

// What a granted acquire holds: the permits of one remote id, released on destruction.
template <class Executor>
class semaphore_permit
{
public:
    semaphore_permit() noexcept = default;

    semaphore_permit(semaphore_permit&& other) noexcept
        : engine_(std::move(other.engine_)), id_(std::move(other.id_)),
          count_(std::exchange(other.count_, 0)), fence_(std::exchange(other.fence_, 0)),
          lost_signal_(std::move(other.lost_signal_))
    {
    }

    semaphore_permit& operator=(semaphore_permit&& other) noexcept
    {
        if (this != &other)
        {
            release_in_background();
            engine_ = std::move(other.engine_);
            id_ = std::move(other.id_);
            count_ = std::exchange(other.count_, 0);
            fence_ = std::exchange(other.fence_, 0);
            lost_signal_ = std::move(other.lost_signal_);
        }
        return *this;
    }

    ~semaphore_permit() { release_in_background(); }

    /// The number of permits held: `n` of the acquire, or 0 once released or moved from.
    std::size_t count() const noexcept { return count_; }

    /// The fence of the grant: strictly greater than that of every earlier grant of the
    /// semaphore, fleet-wide. 0 for an empty permit.
    std::uint64_t fencing_token() const noexcept { return fence_; }

    /// A slot emitted with `cancellation_type::terminal` when the lease is lost, to bind to the
    /// work the permit guards. The signal is emitted from the connection's executor.
    boost::asio::cancellation_slot lost_slot() const noexcept
    {
        return lost_signal_ ? lost_signal_->slot() : boost::asio::cancellation_slot();
    }

    /// Stops renewing and gives the permits back; completes with the release's outcome: success,
    /// `error::lease_lost` if the lease had lapsed, or a Redis error.
    ///
    /// Signature: `void(boost::system::error_code)`.
    template <BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code)) ReleaseToken>
    auto async_release(ReleaseToken&& token)
    {
        return boost::asio::async_initiate<ReleaseToken, void(boost::system::error_code)>(
            [this](auto handler) {
                count_ = 0;
                if (const auto engine = std::exchange(engine_, nullptr))
                    return engine->release(id_, status_handler(std::move(handler)));
                post_empty(std::move(handler), boost::system::error_code());
            },
            token);
    }

    /// Completes with `error::lease_lost` when the lease is lost, or with
    /// `boost::asio::error::operation_aborted` when the permit is released first (or holds
    /// nothing).
    ///
    /// Signature: `void(boost::system::error_code)`.
    template <BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code)) WaitToken>
    auto async_wait_lost(WaitToken&& token)
    {
        return boost::asio::async_initiate<WaitToken, void(boost::system::error_code)>(
            [this](auto handler) {
                if (engine_)
                    return engine_->wait_lost(id_, status_handler(std::move(handler)));
                post_empty(std::move(handler), boost::asio::error::operation_aborted);
            },
            token);
    }

private:
    friend class semaphore_engine<Executor>;

    using status_handler = boost::asio::any_completion_handler<void(boost::system::error_code)>;

    // A permit without an engine completes through the handler's executor alone.
    template <class Handler>
    static void post_empty(Handler handler, boost::system::error_code ec)
    {
        const auto ex = boost::asio::get_associated_executor(handler);
        boost::asio::post(ex, [handler = std::move(handler), ec]() mutable { std::move(handler)(ec); });
    }

    semaphore_permit(std::shared_ptr<semaphore_engine<Executor>> engine, std::string id, std::size_t count,
                     std::uint64_t fence, std::shared_ptr<boost::asio::cancellation_signal> lost_signal)
        : engine_(std::move(engine)), id_(std::move(id)), count_(count), fence_(fence),
          lost_signal_(std::move(lost_signal))
    {
    }

    void release_in_background() noexcept;

    std::shared_ptr<semaphore_engine<Executor>> engine_;
    std::string id_;
    std::size_t count_ = 0;
    std::uint64_t fence_ = 0;
    std::shared_ptr<boost::asio::cancellation_signal> lost_signal_; // shared with the engine, which emits it
};

template <class Executor>
class semaphore_engine : public std::enable_shared_from_this<semaphore_engine<Executor>>
{
public:
    using connection_type = basic_connection<Executor>;
    using permit_type = semaphore_permit<Executor>;
    using acquire_handler = boost::asio::any_completion_handler<void(boost::system::error_code, permit_type)>;
    using status_handler = boost::asio::any_completion_handler<void(boost::system::error_code)>;
    using clock = std::chrono::steady_clock;

    semaphore_engine(connection_type& connection, std::string_view name, std::size_t capacity,
                     std::chrono::milliseconds lease)
        : connection_(connection), script_(name), capacity_(capacity), lease_(lease),
          heartbeat_(connection.get_executor()), id_prefix_(random_prefix())
    {
    }

    // Loads the library on every connect, and listens for grants.
    void start()
    {
        access::impl(connection_)
            .add_setup_command(formatted_command::format_for_pipeline(semaphore_script::load_command()));
        const std::weak_ptr<semaphore_engine> weak = this->weak_from_this();
        subscription_ = connection_.subscribe(
            script_.channel(),
            [weak](std::string message) {
                if (const auto self = weak.lock())
                    self->on_message(message);
            },
            [weak] {
                if (const auto self = weak.lock())
                    self->renew_queued_waiters();
            });
        const std::lock_guard<std::mutex> lock(mutex_);
        schedule_heartbeat();
    }

    // The semaphore is gone: its waiters complete with operation_aborted; its holders keep their
    // leases renewed until their permits go.
    void stop()
    {
        connection_.unsubscribe(subscription_);
        std::vector<std::uint64_t> keys;
        {
            const std::lock_guard<std::mutex> lock(mutex_);
            stopped_ = true;
            if (holders_.empty())
                heartbeat_.cancel();
            for (const auto& entry : waiters_)
                keys.push_back(entry.first);
        }
        for (const std::uint64_t key : keys)
            give_up(key, boost::asio::error::operation_aborted, true);
    }

    void acquire(std::size_t n, acquire_mode mode, std::optional<clock::duration> timeout,
                 acquire_handler handler)
    {
        if (n == 0)
            return complete(std::move(handler), boost::system::error_code(), permit_type());
        if (n > capacity_)
            return complete(std::move(handler), asio_sync::error::too_many_permits, permit_type());
        auto slot = boost::asio::get_associated_cancellation_slot(handler);
        const std::weak_ptr<semaphore_engine> weak = this->weak_from_this();
        std::string id;
        std::uint64_t key = 0;
        {
            const std::lock_guard<std::mutex> lock(mutex_);
            key = ++last_key_;
            id = next_id();
            // Constructed in place: Boost 1.81's any_completion_handler cannot be move-assigned
            // (its move assignment wraps the source in a new handler, endlessly).
            waiter& w =
                waiters_.try_emplace(key, id, n, mode, clock::now(), std::move(handler)).first->second;
            if (slot.is_connected())
            {
                w.slot = slot;
                slot.assign([weak, key](boost::asio::cancellation_type) {
                    if (const auto self = weak.lock())
                        self->give_up(key, boost::asio::error::operation_aborted, false);
                });
            }
            if (timeout)
            {
                w.timer = std::make_unique<boost::asio::steady_timer>(connection_.get_executor(), *timeout);
                w.timer->async_wait([weak, key](boost::system::error_code ec) {
                    if (const auto self = weak.lock(); self && !ec)
                        self->give_up(key, asio_sync::error::timed_out, true);
                });
            }
        }
        send_acquire(key, id, n, mode);
    }

    // Stops renewing the holder `id` and releases it remotely; `handler` (if any) completes on
    // the reply, with lease_lost if the lease had lapsed.
    void release(const std::string& id, std::optional<status_handler> handler)
    {
        std::vector<status_handler> lost_waiters;
        bool was_lost = false;
        {
            const std::lock_guard<std::mutex> lock(mutex_);
            const auto it = holders_.find(id);
            if (it != holders_.end())
            {
                was_lost = it->second.lost;
                lost_waiters = std::move(it->second.lost_waiters);
                holders_.erase(it);
            }
        }
        for (status_handler& lost_waiter : lost_waiters)
            complete(std::move(lost_waiter), boost::asio::error::operation_aborted);
        if (was_lost)
        {
            if (handler)
                complete(std::move(*handler), redis::error::lease_lost);
            return;
        }
        send_release(id, std::move(handler));
    }

    void wait_lost(const std::string& id, status_handler handler)
    {
        std::unique_lock<std::mutex> lock(mutex_);
        const auto it = holders_.find(id);
        if (it == holders_.end())
        {
            lock.unlock();
            return complete(std::move(handler), boost::asio::error::operation_aborted);
        }
        if (it->second.lost)
        {
            lock.unlock();
            return complete(std::move(handler), redis::error::lease_lost);
        }
        it->second.lost_waiters.push_back(std::move(handler));
    }

    const semaphore_script& script() const noexcept { return script_; }

private:
    struct waiter
    {
        waiter(std::string id_, std::size_t n_, acquire_mode mode_, clock::time_point sent_at_,
               acquire_handler handler_)
            : id(std::move(id_)), n(n_), mode(mode_), sent_at(sent_at_), handler(std::move(handler_))
        {
        }

        std::string id;
        std::size_t n = 0;
        acquire_mode mode = acquire_mode::wait;
        bool queued = false;         // Redis answered queued: the heartbeat renews its waiter lease
        clock::time_point sent_at{}; // when the call that last set its remote deadline was sent
        acquire_handler handler;
        boost::asio::cancellation_slot slot;
        std::unique_ptr<boost::asio::steady_timer> timer;
    };

    struct holder
    {
        std::size_t n = 0;
        clock::time_point renewed_at{}; // send time of the last call that moved its deadline
        bool lost = false;
        std::vector<status_handler> lost_waiters;
        std::shared_ptr<boost::asio::cancellation_signal> lost_signal;
    };

    // A granted, queued or busy reply of the library, or lost.
    struct state
    {
        std::string_view word;
        std::uint64_t fence = 0;
    };

    static std::string random_prefix()
    {
        std::random_device device;
        std::uint64_t bits = (std::uint64_t(device()) << 32) ^ device();
        char text[17];
        std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(bits));
        return text;
    }

    std::string next_id() { return id_prefix_ + ':' + std::to_string(++id_counter_); }

    static std::uint64_t number(const reply& r)
    {
        if (r.kind == reply_kind::integer)
            return static_cast<std::uint64_t>(r.integer);
        return std::strtoull(r.text.c_str(), nullptr, 10);
    }

    static state parse(const reply& r)
    {
        if (r.kind != reply_kind::array || r.elements.empty())
            return {};
        state s{r.elements[0].text};
        if (s.word == "granted" && r.elements.size() >= 2)
            s.fence = number(r.elements[1]);
        return s;
    }

    static boost::system::error_code error_of(const reply& r)
    {
        const std::string_view text = r.text;
        if (text.rfind("ASIO_SYNC_CAPACITY", 0) == 0)
            return redis::error::capacity_mismatch;
        if (text.rfind("ASIO_SYNC_TOO_MANY", 0) == 0)
            return asio_sync::error::too_many_permits;
        if (text.rfind("WRONGTYPE", 0) == 0)
            return redis::error::wrong_type;
        return redis::error::server_error;
    }

    // Never inside the caller: posted to the connection's executor, which hands it to the
    // handler's own (a type-erased handler's executor cannot be required blocking.never).
    template <class Handler, class... Args>
    void complete(Handler handler, Args... args)
    {
        const auto ex = boost::asio::get_associated_executor(handler, connection_.get_executor());
        const auto alloc = boost::asio::get_associated_allocator(handler);
        boost::asio::post(
            connection_.get_executor(),
            boost::asio::bind_executor(ex, boost::asio::bind_allocator(
                                               alloc, [handler = std::move(handler),
                                                       args = std::make_tuple(std::move(args)...)]() mutable {
                                                   std::apply(std::move(handler), std::move(args));
                                               })));
    }

    void send_acquire(std::uint64_t key, const std::string& id, std::size_t n, acquire_mode mode)
    {
        connection_.async_execute(
            script_.acquire(id, n, capacity_, lease_, mode),
            [self = this->shared_from_this(), key, id](boost::system::error_code ec, reply r) {
                self->on_acquire_reply(key, id, ec, r);
            });
    }

    void on_acquire_reply(std::uint64_t key, const std::string& id, boost::system::error_code ec,
                          const reply& r)
    {
        std::unique_lock<std::mutex> lock(mutex_);
        const auto it = waiters_.find(key);
        // Given up: the release sent after this acquire hands back whatever it got.
        if (it == waiters_.end() || it->second.id != id)
            return;
        waiter& w = it->second;
        if (ec == redis::error::connection_lost)
        {
            // Its outcome is unknown: the same id again is answered with its state.
            const std::size_t n = w.n;
            const acquire_mode mode = w.mode;
            lock.unlock();
            return send_acquire(key, id, n, mode);
        }
        if (ec == redis::error::server_error && transient(r))
        {
            lock.unlock();
            return retry_acquire(key, id);
        }
        if (ec)
            return finish(lock, it, ec == redis::error::server_error ? error_of(r) : ec);
        const state s = parse(r);
        if (s.word == "granted")
            return grant(lock, it, s.fence);
        if (s.word == "busy")
            return finish(lock, it, boost::asio::error::would_block);
        if (s.word == "queued")
            w.queued = true;
        else
            finish(lock, it, redis::error::server_error);
    }

    // An error reply that a later call will not get: the server is loading its data set after a
    // restart (LOADING), or is busy running a script (BUSY).
    static bool transient(const reply& r)
    {
        const std::string_view text = r.text;
        return text.rfind("LOADING", 0) == 0 || text.rfind("BUSY", 0) == 0;
    }

    // Sends the acquire `id` again after a short pause, if it is still wanted.
    void retry_acquire(std::uint64_t key, const std::string& id)
    {
        auto timer = std::make_shared<boost::asio::steady_timer>(connection_.get_executor(), retry_delay);
        timer->async_wait([self = this->shared_from_this(), timer, key, id](boost::system::error_code) {
            std::unique_lock<std::mutex> lock(self->mutex_);
            const auto it = self->waiters_.find(key);
            if (it == self->waiters_.end() || it->second.id != id)
                return;
            const std::size_t n = it->second.n;
            const acquire_mode mode = it->second.mode;
            lock.unlock();
            self->send_acquire(key, id, n, mode);
        });
    }

    // Completes the waiter `it` with `ec` and no permit; `lock` is released.
    void finish(std::unique_lock<std::mutex>& lock, typename std::map<std::uint64_t, waiter>::iterator it,
                boost::system::error_code ec)
    {
        waiter w = std::move(it->second);
        waiters_.erase(it);
        lock.unlock();
        if (w.slot.is_connected())
            w.slot.clear();
        if (w.timer)
            w.timer->cancel();
        complete(std::move(w.handler), ec, permit_type());
    }

    void grant(std::unique_lock<std::mutex>& lock, typename std::map<std::uint64_t, waiter>::iterator it,
               std::uint64_t fence)
    {
        waiter w = std::move(it->second);
        waiters_.erase(it);
        holder& h = holders_[w.id];
        h.n = w.n;
        h.renewed_at = w.sent_at;
        h.lost_signal = std::make_shared<boost::asio::cancellation_signal>();
        permit_type p(this->shared_from_this(), w.id, w.n, fence, h.lost_signal);
        lock.unlock();
        if (w.slot.is_connected())
            w.slot.clear();
        if (w.timer)
            w.timer->cancel();
        complete(std::move(w.handler), boost::system::error_code(), std::move(p));
    }

    // Completes the waiter `key` with `ec` at once and sends release(id) after its acquire.
    // `clear_slot` is false when the call comes from the slot's own handler, which must not be
    // destroyed while it runs.
    void give_up(std::uint64_t key, boost::system::error_code ec, bool clear_slot)
    {
        std::unique_lock<std::mutex> lock(mutex_);
        const auto it = waiters_.find(key);
        if (it == waiters_.end())
            return;
        waiter w = std::move(it->second);
        waiters_.erase(it);
        lock.unlock();
        if (clear_slot && w.slot.is_connected())
            w.slot.clear();
        if (w.timer)
            w.timer->cancel();
        complete(std::move(w.handler), ec, permit_type());
        send_release(w.id, std::nullopt);
    }

    void send_release(const std::string& id, std::optional<status_handler> handler)
    {
        connection_.async_execute(script_.release(id),
                                  [self = this->shared_from_this(), id, handler = std::move(handler)](
                                      boost::system::error_code ec, reply r) mutable {
                                      if (ec == redis::error::connection_lost)
                                          return self->send_release(id, std::move(handler)); // idempotent
                                      if (!handler)
                                          return;
                                      if (!ec && parse(r).word == "lost")
                                          ec = redis::error::lease_lost;
                                      else if (ec == redis::error::server_error)
                                          ec = error_of(r);
                                      self->complete(std::move(*handler), ec);
                                  });
    }

    void on_message(const std::string& message)
    {
        // "<id> <fence> <n>": fence and n are the last two words.
        const std::size_t n_at = message.rfind(' ');
        if (n_at == std::string::npos || n_at == 0)
            return;
        const std::size_t fence_at = message.rfind(' ', n_at - 1);
        if (fence_at == std::string::npos)
            return;
        const std::string_view id(message.data(), fence_at);
        const std::uint64_t fence = std::strtoull(message.c_str() + fence_at + 1, nullptr, 10);
        std::unique_lock<std::mutex> lock(mutex_);
        for (auto it = waiters_.begin(); it != waiters_.end(); ++it)
            if (it->second.id == id)
                return grant(lock, it, fence);
    }

    // Renews every queued waiter: keeps its place, and learns of a grant whose message was lost.
    void renew_queued_waiters()
    {
        std::vector<std::pair<std::uint64_t, std::string>> queued;
        {
            const std::lock_guard<std::mutex> lock(mutex_);
            for (const auto& [key, w] : waiters_)
                if (w.queued)
                    queued.emplace_back(key, w.id);
        }
        const clock::time_point now = clock::now();
        for (auto& [key, id] : queued)
            connection_.async_execute(script_.renew(id, lease_),
                                      [self = this->shared_from_this(), key = key, id = id,
                                       now](boost::system::error_code ec, reply r) {
                                          self->on_waiter_renewed(key, id, now, ec, r);
                                      });
    }

    void on_waiter_renewed(std::uint64_t key, const std::string& id, clock::time_point sent_at,
                           boost::system::error_code ec, const reply& r)
    {
        if (ec)
            return; // the next heartbeat tries again
        std::unique_lock<std::mutex> lock(mutex_);
        const auto it = waiters_.find(key);
        if (it == waiters_.end() || it->second.id != id)
            return;
        waiter& w = it->second;
        const state s = parse(r);
        if (s.word == "queued")
            w.sent_at = sent_at;
        else if (s.word == "granted")
        {
            w.sent_at = sent_at;
            grant(lock, it, s.fence);
        }
        else if (s.word == "lost")
        {
            // Its waiter lease lapsed while the link was down: queue again under a new id (the
            // old one is unknown to Redis, so it cannot be granted).
            w.id = next_id();
            w.queued = false;
            w.sent_at = clock::now();
            const std::string new_id = w.id;
            const std::size_t n = w.n;
            lock.unlock();
            send_acquire(key, new_id, n, acquire_mode::wait);
        }
    }

    void schedule_heartbeat()
    {
        heartbeat_.expires_after(lease_ / 3);
        heartbeat_.async_wait([self = this->shared_from_this()](boost::system::error_code ec) {
            if (!ec)
                self->on_heartbeat();
        });
    }

    void on_heartbeat()
    {
        std::vector<std::string> renewing;
        std::vector<std::pair<std::vector<status_handler>, std::shared_ptr<boost::asio::cancellation_signal>>>
            lost;
        const clock::time_point now = clock::now();
        {
            const std::lock_guard<std::mutex> lock(mutex_);
            for (auto& [id, h] : holders_)
            {
                if (h.lost)
                    continue;
                if (now - h.renewed_at >= lease_)
                {
                    h.lost = true;
                    lost.emplace_back(std::move(h.lost_waiters), h.lost_signal);
                }
                else
                    renewing.push_back(id);
            }
            if (!stopped_ || !holders_.empty() || !waiters_.empty())
                schedule_heartbeat();
        }
        notify_lost(lost);
        for (const std::string& id : renewing)
            connection_.async_execute(script_.renew(id, lease_), [self = this->shared_from_this(), id, now](
                                                                     boost::system::error_code ec, reply r) {
                self->on_holder_renewed(id, now, ec, r);
            });
        renew_queued_waiters();
    }

    void on_holder_renewed(const std::string& id, clock::time_point sent_at, boost::system::error_code ec,
                           const reply& r)
    {
        if (ec)
            return; // the lease check of the next heartbeats decides
        std::vector<std::pair<std::vector<status_handler>, std::shared_ptr<boost::asio::cancellation_signal>>>
            lost;
        {
            const std::lock_guard<std::mutex> lock(mutex_);
            const auto it = holders_.find(id);
            if (it == holders_.end() || it->second.lost)
                return;
            holder& h = it->second;
            if (parse(r).word == "granted")
            {
                if (sent_at > h.renewed_at)
                    h.renewed_at = sent_at;
                return;
            }
            h.lost = true;
            lost.emplace_back(std::move(h.lost_waiters), h.lost_signal);
        }
        notify_lost(lost);
    }

    void notify_lost(std::vector<std::pair<std::vector<status_handler>,
                                           std::shared_ptr<boost::asio::cancellation_signal>>>& lost)
    {
        for (auto& [waiters, signal] : lost)
        {
            for (status_handler& lost_waiter : waiters)
                complete(std::move(lost_waiter), redis::error::lease_lost);
            signal->emit(boost::asio::cancellation_type::terminal);
        }
    }

    static constexpr std::chrono::milliseconds retry_delay{20};

    connection_type& connection_;
    const semaphore_script script_;
    const std::size_t capacity_;
    const std::chrono::milliseconds lease_;
    typename connection_type::subscription_id subscription_{};

    std::mutex mutex_;
    boost::asio::steady_timer heartbeat_;
    const std::string id_prefix_;
    std::uint64_t id_counter_ = 0;
    std::uint64_t last_key_ = 0;
    bool stopped_ = false;
    std::map<std::uint64_t, waiter> waiters_;
    std::map<std::string, holder> holders_;
};

template <class Executor>
void semaphore_permit<Executor>::release_in_background() noexcept
{
    if (const auto engine = std::exchange(engine_, nullptr))
        engine->release(id_, std::nullopt);
    count_ = 0;
}

} // namespace asio_sync::redis::detail

#endif // ASIO_SYNC_REDIS_DETAIL_SEMAPHORE_ENGINE_HPP
