// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_REDIS_DETAIL_SEMAPHORE_ENGINE_HPP
#define ASIO_SYNC_REDIS_DETAIL_SEMAPHORE_ENGINE_HPP

// The driver of one redis::basic_semaphore: it feeds the events of the connection (replies,
// messages on the channel, (re)connections), of the clock and of the local operations to the client
// state machine (semaphore_client.hpp), and carries out the actions it returns: calls of the
// function library, the timer, and the completions of the operations (semaphore_ops.hpp). It
// reaches the connection only through a semaphore_link.
//
// One mutex guards the client and the operations. The calls an event produces are issued under
// it, in the order the client returned them: a give-up's release always follows its acquire on
// the connection's ordered link. Completions are collected under it and submitted after it is
// released, through each handler's executor; a lost permit's signal is emitted then too.

#include <asio_sync/detail/start_acquire.hpp>
#include <asio_sync/detail/waiter_list.hpp>
#include <asio_sync/error.hpp>
#include <asio_sync/redis/detail/command.hpp>
#include <asio_sync/redis/detail/durable_confirmation.hpp>
#include <asio_sync/redis/detail/semaphore_client.hpp>
#include <asio_sync/redis/detail/semaphore_link.hpp>
#include <asio_sync/redis/detail/semaphore_ops.hpp>
#include <asio_sync/redis/detail/semaphore_reply.hpp>
#include <asio_sync/redis/detail/semaphore_script.hpp>
#include <asio_sync/redis/error.hpp>
#include <asio_sync/redis/reply.hpp>

#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/system/error_code.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace asio_sync::redis::detail {

template <class Executor>
class semaphore_engine : public std::enable_shared_from_this<semaphore_engine<Executor>>
{
public:
    using grant_type = permit_grant<Executor>;
    using clock = std::chrono::steady_clock;

    // Sends its commands through `link`; completes its operations, and runs its timers, on `ex`.
    semaphore_engine(std::shared_ptr<semaphore_link> link, const Executor& ex, std::string_view name,
                     std::size_t capacity, const checked_semaphore_options& options)
        : link_(std::move(link)), executor_(ex), script_(name),
          wait_timeout_(durable_confirmation::wait_timeout(options.lease(), link_->health_check_interval())),
          client_(
              client_options{capacity, options, random_id(), !options.durable() && link_->uses_sentinels()}),
          capacity_(capacity), timer_(executor_)
    {
    }

    // Loads the library on every connect (best effort), listens for grants, reconnections and the
    // connection's close.
    void start()
    {
        // Refused (an ACL without FUNCTION LOAD) is no reason to fail the link: an administrator may
        // have loaded the library; an FCALL that does not find it loads it again and says why it
        // cannot.
        link_->add_setup_command(formatted_command::format_for_pipeline(semaphore_script::load_command()));
        const std::weak_ptr<semaphore_engine> weak = this->weak_from_this();
        started_ = link_->start(
            std::string(script_.channel()),
            [weak](std::string message) {
                if (const auto self = weak.lock())
                    self->run(
                        [&](client_actions& out) { self->client_.on_message(message, clock::now(), out); });
            },
            [weak] {
                if (const auto self = weak.lock())
                    self->run([&](client_actions& out) { self->client_.on_subscribed(clock::now(), out); });
            },
            [weak] {
                if (const auto self = weak.lock())
                    self->run([&](client_actions& out) { self->client_.on_connected(out); });
            },
            [weak] {
                if (const auto self = weak.lock())
                    self->run([&](client_actions& out) {
                        self->client_.abort_all(asio_sync::error::closed, false, out);
                    });
            });
    }

    // The semaphore is gone: its waiters complete with operation_aborted and leave the remote
    // queue; its holders keep their leases renewed until their permits go.
    void stop()
    {
        link_->stop(started_);
        abort_waiters(boost::asio::error::operation_aborted);
    }

    // Completes every pending acquire and resize with `ec`, and takes the waiters out of the remote
    // queue.
    void abort_waiters(boost::system::error_code ec)
    {
        run([&](client_actions& out) { client_.abort_all(ec, true, out); });
    }

    // Fails the pending acquires and every later one with asio_sync::error::closed.
    void close()
    {
        closed_.store(true, std::memory_order_relaxed);
        run([&](client_actions& out) { client_.close(out); });
    }

    template <class Handler>
    void acquire(std::size_t n, acquire_mode mode, std::optional<clock::duration> timeout, Handler handler)
    {
        grant_type grant;
        grant.engine = this->shared_from_this();
        core::start_acquire<remote_acquire_op>(*this, std::move(handler), executor_, n, grant, mode, timeout);
    }

    // Starts a resize to `n`; with `settle`, it completes once the permits held have come down to it.
    template <class Handler>
    void set_capacity(std::size_t n, bool settle, Handler handler)
    {
        using op_type = status_op<Handler, Executor, remote_op>;
        op_type* op = op_type::create(std::move(handler), executor_);
        // A resize is not undone: once sent it may have been stored, so it honours no `total`.
        core::install_cancellation<boost::asio::cancellation_type::terminal |
                                   boost::asio::cancellation_type::partial>(*this, op);
        run([&](client_actions& out) {
            op->serial = ++serials_;
            waiters_.push_back(*op);
            op->queued.store(true, std::memory_order_relaxed);
            client_.start_resize(op->serial, n, settle, out);
        });
    }

    // The capacity in force as this object last learnt it; from any thread.
    std::size_t capacity_in_force() const noexcept { return capacity_.load(std::memory_order_relaxed); }

    // ---- the engine concept of start_acquire.hpp. Nothing is decided without Redis but n == 0.

    bool try_acquire(std::size_t n, bool) const noexcept
    {
        return n == 0 && !closed_.load(std::memory_order_relaxed);
    }

    // The most one acquire may ask for before Redis is asked: the library's limit. Redis refuses
    // more than the capacity in force, which this process may not have learnt yet.
    std::size_t capacity() const noexcept
    {
        return static_cast<std::size_t>(std::min<std::uint64_t>(semaphore_library::max_capacity,
                                                                std::numeric_limits<std::size_t>::max()));
    }

    core::waiter_outcome enqueue(core::semaphore_waiter& w, std::size_t n)
    {
        auto& waiter = static_cast<remote_waiter&>(w);
        waiter.missing = n;
        const std::lock_guard<std::mutex> lock(mutex_);
        if (client_.is_closed())
            return core::waiter_outcome::closed;
        if (waiter.start_timer && !waiter.start_timer(waiter))
            return core::waiter_outcome::no_memory;
        waiter.serial = ++serials_;
        client_actions out;
        client_.start_acquire(waiter.serial, n, waiter.mode, clock::now(), out);
        // Decided at once (the server refuses to keep the semaphore): the initiator completes it.
        if (!out.empty() && out.front().what == client_action::type::fail)
        {
            waiter.error = out.front().error;
            return core::waiter_outcome::aborted;
        }
        waiters_.push_back(w);
        w.queued.store(true, std::memory_order_relaxed);
        core::waiter_list done;
        carry_out(out, done);
        rearm();
        return core::waiter_outcome::pending;
    }

    bool cancel(core::semaphore_waiter* const* ref, core::waiter_outcome why, core::waiter_list& done)
    {
        const std::lock_guard<std::mutex> lock(mutex_);
        core::semaphore_waiter* w = *ref;
        if (!w || !w->queued.load(std::memory_order_relaxed))
            return false;
        client_actions out;
        client_.give_up(static_cast<remote_op*>(w)->serial, core::to_error_code(why), out);
        carry_out(out, done);
        rearm();
        return true;
    }

    // ---- permits

    // The operation that completes a permit's release or wait for loss, on the connection's
    // executor unless the handler has its own.
    template <class Handler>
    owned_op make_status_op(Handler handler)
    {
        return owned_op(status_op<Handler, Executor>::create(std::move(handler), executor_));
    }

    // Stops renewing the holder `id` and releases it remotely; `op` (if any) completes on the
    // reply (with lease_lost or state_lost if the permit was lost).
    void release(const std::string& id, owned_op op)
    {
        core::waiter_list done;
        release_call call;
        release_step step;
        {
            const std::lock_guard<std::mutex> lock(mutex_);
            step = client_.release(id, call);
            if (const auto it = holders_.find(id); it != holders_.end())
            {
                finish_all(it->second.lost_waiters, boost::asio::error::operation_aborted, done);
                holders_.erase(it);
            }
            if (step.what == release_step::type::send)
                send_release(std::move(call), std::move(op));
            rearm();
        }
        core::complete_all(done);
        if (op && step.what == release_step::type::done)
            complete(std::move(op), step.error);
    }

    void wait_lost(const std::string& id, owned_op op)
    {
        boost::system::error_code ec;
        {
            const std::lock_guard<std::mutex> lock(mutex_);
            const std::optional<boost::system::error_code> lost = client_.lost(id);
            if (!lost)
                return holders_[id].lost_waiters.push_back(*op.release());
            ec = *lost;
        }
        complete(std::move(op), ec);
    }

    const semaphore_script& script() const noexcept { return script_; }

    const Executor& get_executor() const noexcept { return executor_; }

private:
    // The parts of a holder that the client does not keep: the operations waiting for its loss,
    // and the signal its permit's lost slot is connected to.
    struct holder_parts
    {
        core::waiter_list lost_waiters; // of coded_waiter
        std::shared_ptr<boost::asio::cancellation_signal> lost_signal;
    };

    // Runs `event` on the client under the mutex, carries out what it returns, and completes
    // what it decided once the mutex is released.
    template <class Event>
    void run(Event&& event)
    {
        core::waiter_list done;
        std::vector<std::shared_ptr<boost::asio::cancellation_signal>> lost;
        {
            const std::lock_guard<std::mutex> lock(mutex_);
            client_actions out;
            event(out);
            carry_out(out, done, &lost);
            rearm();
            capacity_.store(client_.capacity(), std::memory_order_relaxed);
        }
        core::complete_all(done);
        for (const auto& signal : lost)
            signal->emit(boost::asio::cancellation_type::terminal);
    }

    // Carries out the client's actions in order; under the mutex. Completions go to `done`, the
    // signals of lost permits to `lost` (a cancellation and a timeout lose no permit).
    void carry_out(client_actions& actions, core::waiter_list& done,
                   std::vector<std::shared_ptr<boost::asio::cancellation_signal>>* lost = nullptr)
    {
        for (client_action& a : actions)
        {
            switch (a.what)
            {
            case client_action::type::send_acquire:
                send_acquire(a);
                break;
            case client_action::type::send_renew:
                send_renew(a);
                break;
            case client_action::type::send_release:
                send_release(release_call{std::move(a.id)}, nullptr);
                break;
            case client_action::type::send_watch:
                send_watch();
                break;
            case client_action::type::send_check:
                send_check();
                break;
            case client_action::type::send_resize:
                send_resize(a);
                break;
            case client_action::type::send_usage:
                send_usage();
                break;
            case client_action::type::load_library:
                load_library(a.serial);
                break;
            case client_action::type::retry_later:
                retry_later(a.serial, a.delay);
                break;
            case client_action::type::grant:
                grant(a, done);
                break;
            case client_action::type::fail:
            case client_action::type::resize_done:
                if (remote_op* op = find(a.serial))
                {
                    op->error = a.error;
                    remove(*op, a.error ? core::waiter_outcome::aborted : core::waiter_outcome::granted,
                           done);
                }
                break;
            case client_action::type::lose:
                if (const auto it = holders_.find(a.id); it != holders_.end())
                {
                    finish_all(it->second.lost_waiters, a.error, done);
                    if (lost)
                        lost->push_back(it->second.lost_signal);
                }
                break;
            }
        }
    }

    // Arms the timer for the client's next wake-up, if it moved; under the mutex.
    void rearm()
    {
        const std::optional<clock::time_point> next = client_.next_wakeup();
        if (next == armed_)
            return;
        armed_ = next;
        if (!next)
        {
            timer_.cancel();
            return;
        }
        timer_.expires_at(*next);
        timer_.async_wait([weak = this->weak_from_this()](boost::system::error_code ec) {
            if (ec)
                return;
            if (const auto self = weak.lock())
                self->run([&](client_actions& out) {
                    self->armed_.reset();
                    self->client_.on_tick(clock::now(), out);
                });
        });
    }

    remote_op* find(std::uint64_t serial) noexcept
    {
        for (core::semaphore_waiter* w = waiters_.front(); w; w = w->next)
            if (static_cast<remote_op*>(w)->serial == serial)
                return static_cast<remote_op*>(w);
        return nullptr;
    }

    // Takes `w` out of the local queue with outcome `why` into `done`; under the mutex.
    void remove(core::semaphore_waiter& w, core::waiter_outcome why, core::waiter_list& done) noexcept
    {
        waiters_.erase(w);
        w.queued.store(false, std::memory_order_relaxed);
        if (w.cancel_ref)
            *w.cancel_ref = nullptr;
        w.outcome = why;
        done.push_back(w);
    }

    void grant(const client_action& a, core::waiter_list& done)
    {
        // Grants name acquires only.
        auto* w = static_cast<remote_waiter*>(find(a.serial));
        if (!w)
            return;
        holder_parts& h = holders_[a.id];
        h.lost_signal = std::make_shared<boost::asio::cancellation_signal>();
        std::memcpy(w->id, a.id.c_str(), std::min(a.id.size() + 1, sizeof w->id));
        w->fence = a.fence;
        w->lost_signal = h.lost_signal;
        w->lease = a.lease;
        remove(*w, core::waiter_outcome::granted, done);
    }

    // Moves every completion of `waiters` to `done`, to complete with `ec`; under the mutex.
    static void finish_all(core::waiter_list& waiters, boost::system::error_code ec, core::waiter_list& done)
    {
        for (core::semaphore_waiter* w = waiters.front(); w; w = w->next)
            static_cast<coded_waiter*>(w)->error = ec;
        done.splice_back(waiters);
    }

    static void complete(owned_op op, boost::system::error_code ec)
    {
        op->error = ec;
        core::waiter_list done;
        done.push_back(*op.release());
        core::complete_all(done);
    }

    // ---- the calls, each completing into an event of the client

    void send_acquire(const client_action& a)
    {
        execute_durable(script_.acquire(a.id, a.n, a.capacity, client_.options().options.lease(), a.mode),
                        [self = this->shared_from_this(), serial = a.serial, id = a.id,
                         sent_at = a.sent_at](const semaphore_reply& decoded) {
                            self->run([&](client_actions& out) {
                                self->client_.on_acquire_reply(serial, id, sent_at, decoded, clock::now(),
                                                               out);
                            });
                        });
    }

    void send_renew(const client_action& a)
    {
        execute_durable(script_.renew(a.id, client_.options().options.lease(), a.fence),
                        [self = this->shared_from_this(), serial = a.serial, id = a.id,
                         sent_at = a.sent_at](const semaphore_reply& decoded) {
                            self->run([&](client_actions& out) {
                                if (serial != 0)
                                    self->client_.on_waiter_renewed(serial, id, sent_at, decoded,
                                                                    clock::now(), out);
                                else
                                    self->client_.on_holder_renewed(id, sent_at, decoded, out);
                            });
                        });
    }

    // Sends a call of the library and hands its decoded answer to `handler`; with durable grants,
    // the answer that durable_confirmation makes of it and of the WAIT that follows it.
    template <class Handler>
    void execute_durable(const std::vector<std::string>& args, Handler handler)
    {
        const unsigned replicas = client_.options().options.durable_replicas();
        if (replicas == 0)
            return execute(
                args, [handler = std::move(handler)](boost::system::error_code ec, const reply& r) mutable {
                    handler(decode_semaphore_reply(ec, r));
                });
        // The two completions may run on two threads of the executor: the second to arrive
        // decides.
        struct confirmation
        {
            confirmation(Handler h, unsigned replicas) : handler(std::move(h)), rule(replicas) {}

            void on_call(const semaphore_reply& answer)
            {
                std::unique_lock<std::mutex> lock(mutex);
                hand_on(rule.on_call(answer), lock);
            }

            void on_wait(boost::system::error_code ec, const reply& acks)
            {
                std::unique_lock<std::mutex> lock(mutex);
                hand_on(rule.on_wait(ec, acks), lock);
            }

            void hand_on(const std::optional<semaphore_reply>& answer, std::unique_lock<std::mutex>& lock)
            {
                lock.unlock();
                if (answer)
                    handler(*answer);
            }

            std::mutex mutex;
            Handler handler;
            durable_confirmation rule;
        };
        auto state = std::make_shared<confirmation>(std::move(handler), replicas);
        link_->execute_confirmed(
            routed(args),
            [state](boost::system::error_code ec, const reply& r) {
                state->on_call(decode_semaphore_reply(ec, r));
            },
            routed(durable_confirmation::wait_command(replicas, wait_timeout_)),
            [state](boost::system::error_code ec, const reply& acks) { state->on_wait(ec, acks); });
    }

    // A command formatted for the node of the semaphore's slot in a cluster.
    template <class Args>
    formatted_command routed(const Args& args) const
    {
        formatted_command command = formatted_command::format_for_pipeline(args);
        command.route_to(script_.slot());
        return command;
    }

    // Sends a command, as the connection's async_execute does, to the node of the semaphore's
    // slot in a cluster. Once the connection is gone (destroyed, and nothing of its own left
    // running), nothing is sent and the handler is destroyed: only a permit released after its
    // connection (which the docs allow at context shutdown) gets here, and its lease lapses on the
    // server.
    template <class Args, class Handler>
    void execute(const Args& args, Handler&& handler)
    {
        link_->execute(routed(args), std::forward<Handler>(handler));
    }

    template <class Handler>
    void execute(std::initializer_list<std::string_view> args, Handler&& handler)
    {
        execute<std::initializer_list<std::string_view>>(args, std::forward<Handler>(handler));
    }

    // Sends a release; `op` (if any) completes on its outcome. Sent again after connection_lost,
    // and after loading the library if it was missing.
    void send_release(release_call call, owned_op op)
    {
        auto command = script_.release(call.id, call.fence);
        // Shared: a reply handler is copyable. Destroyed unsent, it destroys `op`.
        execute(command, [self = this->shared_from_this(), call = std::move(call),
                          op = std::make_shared<owned_op>(std::move(op))](boost::system::error_code ec,
                                                                          const reply& r) mutable {
            const release_step step = semaphore_client::on_release_reply(call, decode_semaphore_reply(ec, r));
            if (step.what == release_step::type::done)
            {
                if (*op)
                    complete(std::move(*op), step.error);
                return;
            }
            if (step.what == release_step::type::reload_send)
                self->load_library(0);
            self->send_release(std::move(call), std::move(*op));
        });
    }

    void send_resize(const client_action& a)
    {
        execute_durable(
            script_.resize(a.id, a.capacity, a.base),
            [self = this->shared_from_this(), serial = a.serial, id = a.id](const semaphore_reply& decoded) {
                self->run([&](client_actions& out) {
                    self->client_.on_resize_reply(serial, id, decoded, clock::now(), out);
                });
            });
    }

    void send_usage()
    {
        execute(script_.usage(), [self = this->shared_from_this()](boost::system::error_code ec,
                                                                   const reply& r) {
            const semaphore_reply decoded = decode_semaphore_reply(ec, r);
            self->run([&](client_actions& out) { self->client_.on_usage_reply(decoded, clock::now(), out); });
        });
    }

    void send_watch()
    {
        execute(script_.watch(),
                [self = this->shared_from_this()](boost::system::error_code ec, const reply& r) {
                    const semaphore_reply decoded = decode_semaphore_reply(ec, r);
                    self->run([&](client_actions&) { self->client_.on_watch_reply(decoded, clock::now()); });
                });
    }

    void send_check()
    {
        execute({"CONFIG", "GET", "maxmemory*", "min-replicas-*"},
                [self = this->shared_from_this()](boost::system::error_code ec, const reply& r) {
                    const server_check result =
                        judge_server(ec, r, self->client_.options().replicas_required);
                    self->run([&](client_actions& out) {
                        self->client_.on_check_reply(result, clock::now(), out);
                    });
                });
    }

    // FUNCTION LOAD; the acquire `serial`, if any, hears how it went.
    void load_library(std::uint64_t serial)
    {
        execute(semaphore_script::load_command(),
                [self = this->shared_from_this(), serial](boost::system::error_code ec, const reply& r) {
                    if (serial == 0)
                        return;
                    const semaphore_reply decoded = decode_semaphore_reply(ec, r);
                    self->run([&](client_actions& out) {
                        self->client_.on_library_loaded(serial, decoded, clock::now(), out);
                    });
                });
    }

    void retry_later(std::uint64_t serial, std::chrono::milliseconds delay)
    {
        auto timer = std::make_shared<boost::asio::steady_timer>(executor_, delay);
        timer->async_wait([self = this->shared_from_this(), timer, serial](boost::system::error_code) {
            self->run([&](client_actions& out) { self->client_.on_retry(serial, clock::now(), out); });
        });
    }

    std::shared_ptr<semaphore_link> link_;
    Executor executor_;
    const semaphore_script script_;
    const std::chrono::milliseconds wait_timeout_; // of each WAIT
    std::uint64_t started_ = 0;                    // what link_->start returned
    std::atomic<bool> closed_{false}; // close() was called: what an acquire of 0 reads without the mutex

    std::mutex mutex_;
    semaphore_client client_;
    std::atomic<std::size_t> capacity_; // client_.capacity(), for readers without the mutex
    core::waiter_list waiters_;         // of remote_op (acquires and resizes), in the order they were started
    std::map<std::string, holder_parts, std::less<>> holders_;
    std::uint64_t serials_ = 0;
    boost::asio::steady_timer timer_;
    std::optional<clock::time_point> armed_; // when timer_ is set to expire
};

} // namespace asio_sync::redis::detail

#endif // ASIO_SYNC_REDIS_DETAIL_SEMAPHORE_ENGINE_HPP
