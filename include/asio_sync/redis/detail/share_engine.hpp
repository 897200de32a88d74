// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_REDIS_DETAIL_SHARE_ENGINE_HPP
#define ASIO_SYNC_REDIS_DETAIL_SHARE_ENGINE_HPP

// The driver of a leased share: carries out share_client's decisions with the connection (through
// semaphore_link: the library's calls, the channel, the reconnections), a timer, and the local
// semaphore the acquires are served from. Shared: its timer and its calls keep it alive after the
// share semaphore is gone, until it has left.

#include <asio_sync/manual_reset_event.hpp>
#include <asio_sync/redis/detail/command.hpp>
#include <asio_sync/redis/detail/semaphore_link.hpp>
#include <asio_sync/redis/detail/semaphore_script.hpp>
#include <asio_sync/redis/detail/share_client.hpp>
#include <asio_sync/redis/detail/share_library.hpp>
#include <asio_sync/redis/error.hpp>
#include <asio_sync/redis/reply.hpp>
#include <asio_sync/semaphore.hpp>

#include <boost/asio/append.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/system/error_code.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#if defined(__linux__)
#include <time.h>
#endif

namespace asio_sync::redis {

/// What a `basic_share_semaphore` holds and wants, as its change listener hears it.
struct share_state
{
    /// The local share: the permits this process may hand out now.
    std::size_t share = 0;
    /// This process' part of the last division (its share moves toward it).
    std::size_t target = 0;
    /// The permits in use here plus those its queued acquires still miss, at the last sample.
    std::size_t demand = 0;
    /// The fleet-wide capacity, as Redis last answered it.
    std::size_t capacity = 0;
    /// The share's fence: larger for every share Redis hands out later, to any process.
    std::uint64_t fence = 0;
};

} // namespace asio_sync::redis

namespace asio_sync::redis::detail {

template <class Executor>
class share_engine : public std::enable_shared_from_this<share_engine<Executor>>
{
public:
    using clock = std::chrono::steady_clock;
    using local_type = asio_sync::basic_semaphore<Executor>;
    using listener_type = std::function<void(const share_state&)>;

    share_engine(std::shared_ptr<semaphore_link> link, const Executor& ex, std::string_view name,
                 std::size_t capacity, const share_settings& settings)
        : link_(std::move(link)), executor_(ex), key_(key_prefix(name) + "share"),
          channel_(key_prefix(name) + "shares"), id_(random_id()), declared_(capacity), client_(settings),
          local_(ex, 0), lost_(ex, true), timer_(ex), capacity_(capacity)
    {
    }

    share_engine(const share_engine&) = delete;
    share_engine& operator=(const share_engine&) = delete;

    ~share_engine() { link_->stop(started_); }

    // Loads the library on every connect (best effort: an administrator may have loaded it), listens
    // for new divisions and reconnections, and makes the first call.
    void start()
    {
        link_->add_setup_command(formatted_command::format_for_pipeline(load_command()));
        const std::weak_ptr<share_engine> weak = this->weak_from_this();
        const auto notice = [weak] {
            if (const auto self = weak.lock())
                self->run([&] {
                    self->client_.on_notice();
                    return share_actions();
                });
        };
        started_ = link_->start(
            channel_, [notice](const std::string&) { notice(); }, notice, notice,
            [weak] {
                if (const auto self = weak.lock())
                    self->close();
            });
        run([] { return share_actions(); });
    }

    // The share drops to 0 and the queued acquires fail with asio_sync::error::closed; the process
    // leaves the division once its holders have given back.
    void close()
    {
        local_.close();
        run([&] { return client_.close(); });
    }

    local_type& local() noexcept { return local_; }
    asio_sync::basic_manual_reset_event<Executor>& lost_event() noexcept { return lost_; }

    // The fleet's capacity as last learnt (the declared one before the first answer); from any thread.
    std::size_t capacity() const noexcept { return capacity_.load(std::memory_order_relaxed); }

    // The most one acquire may ask for: the capacity in force, or before the first answer (which may
    // bring another capacity than the declared one) the library's limit.
    std::size_t admissible() const noexcept
    {
        return known_.load(std::memory_order_relaxed)
                   ? capacity_.load(std::memory_order_relaxed)
                   : static_cast<std::size_t>(std::min<std::uint64_t>(share_library::max_capacity, SIZE_MAX));
    }

    // Declares the share lost now if its lease has ended, even if the timer that would do it is late
    // (the connection's executor busy): called before an acquire may take permits and before a
    // release may hand them to a queued acquire. A coarse clock, read early by its resolution.
    void check_lease()
    {
        if (coarse_now() >= expires_.load(std::memory_order_relaxed))
            run([] { return share_actions(); });
    }

    share_state state() const
    {
        const std::lock_guard<std::mutex> lock(mutex_);
        return state_locked();
    }

    clock::duration valid_for() const
    {
        const std::lock_guard<std::mutex> lock(mutex_);
        const std::optional<clock::time_point> until = client_.valid_until();
        const clock::time_point now = clock::now();
        return until && *until > now ? *until - now : clock::duration::zero();
    }

    // An empty `listener` removes it.
    // A call of the old listener running on another thread ends before this returns (as
    // std::stop_callback's destructor waits for its callback), so that what it captured may be
    // destroyed then; a call from inside the listener does not wait for itself.
    void set_listener(listener_type listener)
    {
        std::unique_lock<std::mutex> lock(mutex_);
        listener_ = listener ? std::make_shared<listener_type>(std::move(listener)) : nullptr;
        const std::size_t own = delivering().engine == this ? delivering().depth : 0;
        listener_idle_.wait(lock, [&] { return listener_calls_ == own; });
    }

    // An acquire may queue for want of share: sample the demand at once. At most once until the
    // next refresh is sent, so that a process short of share does not run the client on every acquire.
    void poke()
    {
        if (poked_.load(std::memory_order_relaxed) || poked_.exchange(true, std::memory_order_relaxed))
            return;
        boost::asio::post(executor_, [weak = this->weak_from_this()] {
            if (const auto self = weak.lock())
                self->run([] { return share_actions(); });
        });
    }

    // Stores capacity `n` in Redis; `handler` (void(error_code)) completes with the answer, through
    // its associated executor, which has work outstanding until then. A library found missing
    // (FUNCTION FLUSH) is loaded again and the resize sent once more.
    template <class Handler>
    void set_capacity(std::size_t n, Handler handler)
    {
        const auto ex = boost::asio::get_associated_executor(handler, executor_);
        auto pending = std::make_shared<resize_op<Handler, std::decay_t<decltype(ex)>>>(
            std::move(handler), boost::asio::make_work_guard(ex));
        send_resize(n, std::move(pending), true);
    }

    const Executor& get_executor() const noexcept { return executor_; }

private:
    template <class Handler, class HandlerExecutor>
    struct resize_op
    {
        resize_op(Handler h, boost::asio::executor_work_guard<HandlerExecutor> w)
            : handler(std::move(h)), work(std::move(w))
        {
        }

        void complete(boost::system::error_code ec)
        {
            const HandlerExecutor ex = work.get_executor();
            boost::asio::post(ex, boost::asio::append(std::move(handler), ec));
            work.reset();
        }

        Handler handler;
        boost::asio::executor_work_guard<HandlerExecutor> work;
    };

    template <class Op>
    void send_resize(std::size_t n, std::shared_ptr<Op> op, bool reload)
    {
        link_->execute(
            routed(call(share_library::function::resize, {std::to_string(n)})),
            [self = this->shared_from_this(), op, n, reload](boost::system::error_code ec, const reply& r) {
                if (reload && missing_library(r))
                {
                    self->load_library();
                    return self->send_resize(n, op, false);
                }
                if (!ec && r.kind == reply_kind::error)
                    ec = error::server_error;
                if (!ec && r.kind == reply_kind::array && r.elements.size() == 2)
                    self->run([&] {
                        return self->client_.on_resized(static_cast<std::size_t>(r.elements[1].integer));
                    });
                op->complete(ec);
            });
    }

    static bool missing_library(const reply& r)
    {
        return r.kind == reply_kind::error && r.text.rfind("ERR Function not found", 0) == 0;
    }

    void load_library()
    {
        link_->execute(routed(load_command()), [](boost::system::error_code, const reply&) {});
    }

    // CLOCK_MONOTONIC_COARSE read early by its resolution, where there is one: a few nanoseconds,
    // against tens for steady_clock::now(). steady_clock is CLOCK_MONOTONIC there.
    static clock::rep coarse_now() noexcept
    {
#if defined(__linux__)
        static const clock::rep resolution = [] {
            timespec r{};
            ::clock_getres(CLOCK_MONOTONIC_COARSE, &r);
            return clock::rep(r.tv_sec) * 1000000000 + r.tv_nsec;
        }();
        timespec t{};
        ::clock_gettime(CLOCK_MONOTONIC_COARSE, &t);
        return std::chrono::duration_cast<clock::duration>(std::chrono::seconds(t.tv_sec) +
                                                           std::chrono::nanoseconds(t.tv_nsec))
                   .count() +
               std::chrono::duration_cast<clock::duration>(std::chrono::nanoseconds(resolution)).count();
#else
        return clock::now().time_since_epoch().count();
#endif
    }

    static std::vector<std::string> load_command()
    {
        return {"FUNCTION", "LOAD", "REPLACE", std::string(share_library::source)};
    }

    std::vector<std::string> call(share_library::function f, std::initializer_list<std::string> args) const
    {
        std::vector<std::string> argv{"FCALL",
                                      std::string(share_library::function_names[static_cast<std::size_t>(f)]),
                                      "1", key_, channel_};
        argv.insert(argv.end(), args.begin(), args.end());
        return argv;
    }

    formatted_command routed(const std::vector<std::string>& args) const
    {
        formatted_command command = formatted_command::format_for_pipeline(args);
        command.route_to(key_slot(key_));
        return command;
    }

    local_view view()
    {
        const auto [debt, missing] = asio_sync::detail::access::entry(local_).core.shortfall();
        return local_view{debt, missing, local_.available()};
    }

    share_state state_locked() const
    {
        return share_state{client_.share(), client_.target(), client_.demand(), client_.capacity(),
                           client_.fence()};
    }

    // Runs `event` on the client under the mutex and carries out its actions, then a tick of the
    // client with the local semaphore as they left it; re-arms the timer, and calls the listener
    // (outside the mutex) if anything changed.
    template <class Event>
    void run(Event&& event)
    {
        const std::lock_guard<std::mutex> lock(mutex_);
        const share_actions a = event();
        carry_out(a);
        const share_actions b = client_.tick(clock::now(), view());
        carry_out(b);
        if (b.refresh)
            poked_.store(false, std::memory_order_relaxed);
        if (client_.capacity() != 0)
        {
            capacity_.store(client_.capacity(), std::memory_order_relaxed);
            known_.store(true, std::memory_order_relaxed);
        }
        // The lost event and the acquires' deadline follow the lease: set, and checked never, while
        // no share is valid (the local capacity is 0 then).
        const std::optional<clock::time_point> until = client_.valid_until();
        if (until)
            lost_.reset();
        else if (!lost_.is_set())
            lost_.set();
        expires_.store(until ? until->time_since_epoch().count() : std::numeric_limits<clock::rep>::max(),
                       std::memory_order_relaxed);
        if ((a.changed || b.changed) && listener_ && !listener_posted_)
        {
            // One call pending at a time, with the state as it is when it runs.
            listener_posted_ = true;
            boost::asio::post(executor_, [weak = this->weak_from_this()] {
                if (const auto self = weak.lock())
                    self->deliver();
            });
        }
        rearm();
    }

    void deliver()
    {
        std::shared_ptr<listener_type> listener;
        share_state state;
        {
            const std::lock_guard<std::mutex> lock(mutex_);
            listener_posted_ = false;
            listener = listener_;
            state = state_locked();
            if (!listener)
                return;
            ++listener_calls_;
        }
        // Counted until it returns (or throws, though it must not), for set_listener.
        struct call
        {
            share_engine& self;
            delivery outer = delivering();

            explicit call(share_engine& e) : self(e)
            {
                delivering() = {&self, outer.engine == &self ? outer.depth + 1 : 1};
            }

            ~call()
            {
                delivering() = outer;
                {
                    const std::lock_guard<std::mutex> lock(self.mutex_);
                    --self.listener_calls_;
                }
                self.listener_idle_.notify_all();
            }
        } counted(*this);
        (*listener)(state);
    }

    // The listener calls running on this thread, for the engine running them.
    struct delivery
    {
        const share_engine* engine = nullptr;
        std::size_t depth = 0;
    };

    static delivery& delivering() noexcept
    {
        static thread_local delivery current;
        return current;
    }

    // Under the mutex: the local semaphore's resizes and the lost event post their completions.
    void carry_out(const share_actions& a)
    {
        if (a.reduce != 0)
        {
            local_.reduce_permits(a.reduce);
            // What queued acquires collected pays the debt: no holder uses it, and another process
            // may be waiting for it.
            asio_sync::detail::access::entry(local_).core.pay_debt_with_collected();
        }
        if (a.lost)
            lost_.set(); // completes the waits now, even if a new share follows in the same step
        if (a.add != 0)
            local_.add_permits(a.add);
        if (a.refresh)
            send_refresh(a);
        if (a.leave)
        {
            timer_.cancel();
            link_->execute(routed(call(share_library::function::leave, {id_})),
                           // Keeps the engine until the answer: its subscription ends with it.
                           [self = this->shared_from_this()](boost::system::error_code, const reply&) {});
        }
    }

    void send_refresh(const share_actions& a)
    {
        link_->execute(
            routed(
                call(share_library::function::refresh, {id_, std::to_string(a.want), std::to_string(a.bound),
                                                        std::to_string(client_.settings().lease().count()),
                                                        std::to_string(declared_), std::to_string(a.seq)})),
            [self = this->shared_from_this(), seq = a.seq](boost::system::error_code ec, const reply& r) {
                std::optional<share_reply> decoded;
                if (!ec)
                    decoded = decode(r);
                if (missing_library(r))
                    self->load_library();
                self->run([&] {
                    return decoded ? self->client_.on_reply(clock::now(), seq, *decoded)
                                   : self->client_.on_error(seq);
                });
            });
    }

    static std::optional<share_reply> decode(const reply& r)
    {
        if (r.kind != reply_kind::array || r.elements.size() != 6 || r.elements[0].text != "share")
            return std::nullopt;
        for (std::size_t i = 1; i < 6; ++i)
            if (r.elements[i].kind != reply_kind::integer || r.elements[i].integer < 0)
                return std::nullopt;
        share_reply decoded;
        decoded.held = static_cast<std::size_t>(r.elements[1].integer);
        decoded.target = static_cast<std::size_t>(r.elements[2].integer);
        decoded.lease = std::chrono::milliseconds(r.elements[3].integer);
        decoded.fence = static_cast<std::uint64_t>(r.elements[4].integer);
        decoded.capacity = static_cast<std::size_t>(r.elements[5].integer);
        return decoded;
    }

    // Arms the timer for the client's next wake-up; under the mutex.
    void rearm()
    {
        if (client_.left())
            return;
        timer_.expires_at(client_.next_wake(clock::now()));
        timer_.async_wait([weak = this->weak_from_this()](boost::system::error_code ec) {
            if (ec)
                return;
            if (const auto self = weak.lock())
                self->run([] { return share_actions(); });
        });
    }

    std::shared_ptr<semaphore_link> link_;
    Executor executor_;
    std::string key_;
    std::string channel_;
    std::string id_;
    std::size_t declared_;
    mutable std::mutex mutex_;
    share_client client_;
    local_type local_;
    asio_sync::basic_manual_reset_event<Executor> lost_; // set while no share is valid
    boost::asio::basic_waitable_timer<clock, boost::asio::wait_traits<clock>, Executor> timer_;
    std::shared_ptr<listener_type> listener_;
    std::condition_variable listener_idle_; // with the mutex: no listener call running
    std::size_t listener_calls_ = 0;        // under the mutex: calls running
    std::atomic<std::size_t> capacity_;
    std::atomic<bool> poked_{false};
    std::atomic<bool> known_{false};                                          // capacity_ answered
    std::atomic<clock::rep> expires_{std::numeric_limits<clock::rep>::max()}; // the share's valid_until
    bool listener_posted_ = false;                                            // under the mutex
    std::uint64_t started_ = 0;
};

} // namespace asio_sync::redis::detail

#endif // ASIO_SYNC_REDIS_DETAIL_SHARE_ENGINE_HPP
