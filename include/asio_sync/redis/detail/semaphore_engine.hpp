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
// A local acquire is an operation of the core's acquire machinery (detail/start_acquire.hpp):
// allocated with the handler's allocator, cancelled through acquire_cancellation, completed
// through the handler's executor by complete_all once the engine's mutex is released. The engine
// is an engine in start_acquire's sense: enqueue() registers the waiter and sends its call, and the
// replies, grant messages and renewals decide it later.
//
// Every local acquire has a remote id, "<random prefix>:<counter>", unique across the fleet; a call
// with an id is replayable, so an acquire whose reply was lost with the link is sent again with
// the same id after the reconnection and is never granted twice. An acquire given up locally
// (cancelled, timed out) completes at once and sends release(id) on the same ordered command link,
// after its acquire: a grant that raced the give-up is handed back exactly once. Every acquire is
// sent under the engine's mutex, so a give-up, which reads the waiter under it, is always sent
// after it.

#include <asio_sync/detail/acquire_op.hpp>
#include <asio_sync/detail/completion.hpp>
#include <asio_sync/detail/grant.hpp>
#include <asio_sync/detail/start_acquire.hpp>
#include <asio_sync/detail/timed_acquire_op.hpp>
#include <asio_sync/detail/waiter_list.hpp>
#include <asio_sync/error.hpp>
#include <asio_sync/redis/connection.hpp>
#include <asio_sync/redis/detail/access.hpp>
#include <asio_sync/redis/detail/command.hpp>
#include <asio_sync/redis/detail/semaphore_script.hpp>
#include <asio_sync/redis/error.hpp>
#include <asio_sync/redis/permit.hpp>
#include <asio_sync/redis/reply.hpp>

#include <boost/asio/async_result.hpp>
#include <boost/asio/basic_waitable_timer.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/wait_traits.hpp>
#include <boost/core/no_exceptions_support.hpp>
#include <boost/system/error_code.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
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

namespace core = asio_sync::detail;

template <class Executor>
class semaphore_engine;

// A completion kept by the engine whose error code may be one that waiter_outcome does not name
// (a Redis error, would_block, lease_lost): `error`, when set, is the one the handler receives.
struct coded_waiter : core::acquire_op_base
{
    using acquire_op_base::acquire_op_base;

    boost::system::error_code error;
};

// Destroys an operation that nobody completed, as when a command's handler is dropped unrun.
struct destroy_op
{
    void operator()(coded_waiter* op) const noexcept { op->destroy(); }
};

using owned_op = std::unique_ptr<coded_waiter, destroy_op>;

// The `void(error_code)` completion of a permit's release or wait for loss: the core's operation
// parts with a grant that hands over the error code alone.
template <class Handler, class IoExecutor>
class status_op final : public coded_waiter
{
public:
    using parts_type = core::acquire_parts<Handler, IoExecutor, core::signal_grant>;

    status_op(Handler&& handler, const IoExecutor& io_ex)
        : coded_waiter(&do_func), parts_(std::move(handler), io_ex, core::signal_grant())
    {
    }

    static status_op* create(Handler&& handler, const IoExecutor& io_ex)
    {
        return core::allocate_op<status_op>(core::get_handler_allocator(handler), std::move(handler), io_ex);
    }

private:
    static void do_func(core::acquire_op_base* base, action what, const boost::system::error_code& ec,
                        core::relation how)
    {
        auto* op = static_cast<status_op*>(base);
        const boost::system::error_code result = op->error ? op->error : ec;
        parts_type parts(std::move(op->parts_));
        core::deallocate_op(op, parts.get_allocator());
        if (what == action::complete)
            parts.complete(result, how, 0);
    }

    parts_type parts_;
};

// The longest remote id: 16 hex digits, ':', a 64-bit counter, and the terminating NUL.
constexpr std::size_t id_capacity = 16 + 1 + 20 + 1;

// A local acquire, known to the engine from enqueue() until it is decided. The engine reads and
// writes its fields under its mutex.
struct remote_waiter : coded_waiter
{
    using clock = std::chrono::steady_clock;

    remote_waiter(func_type func, acquire_mode how) noexcept : coded_waiter(func), mode(how) {}

    char id[id_capacity] = {};
    std::uint64_t serial = 0; // the counter of `id`: how a reply names its waiter
    acquire_mode mode;
    bool remotely_queued = false; // Redis answered queued: the heartbeat renews its waiter lease
    bool reloaded = false;        // the library was loaded again for it once (after a FUNCTION FLUSH)
    clock::time_point sent_at{};  // when the call that last set its remote deadline was sent
    // What the permit of a granted acquire holds beyond its count.
    std::uint64_t fence = 0;
    std::shared_ptr<boost::asio::cancellation_signal> lost_signal;
    // Starts the time limit, if the acquire has one; false if the timer could not be started.
    bool (*start_timer)(remote_waiter&) = nullptr;
};

// The grant of a remote acquire. Copied at initiation, it knows only the engine; the operation of a
// granted acquire fills in the rest of its permit (id, count, fence, lost signal) just before it
// completes, through acquire_parts::grant().
template <class Executor>
struct permit_grant
{
    using engine_type = semaphore_engine<Executor>;
    using permit_type = redis::basic_permit<Executor>;

    static constexpr bool to_permit = true;

    std::shared_ptr<engine_type> engine;
    char id[id_capacity] = {};
    std::size_t count = 0;
    std::uint64_t fence = 0;
    std::shared_ptr<boost::asio::cancellation_signal> lost_signal;

    void bind(const remote_waiter& w, std::size_t n) noexcept
    {
        std::memcpy(id, w.id, sizeof id);
        count = n;
        fence = w.fence;
        lost_signal = w.lost_signal;
    }

    std::tuple<boost::system::error_code, permit_type> operator()(boost::system::error_code ec) const
    {
        if (ec || count == 0)
            return {ec, permit_type()};
        return {ec, permit_type(engine, id, count, fence, lost_signal)};
    }

    // The permit of an undelivered completion, if it was made, released the id when it was
    // destroyed; releasing it again is harmless (release is idempotent). If that fails too, the
    // lease expires it.
    void undelivered(std::size_t n) const noexcept
    {
        if (n == 0)
            return;
        BOOST_TRY
        {
            engine->release(id, nullptr);
        }
        BOOST_CATCH(...)
        {
        }
        BOOST_CATCH_END
    }
};

// The operation of a remote acquire. With a time limit, its timer lives in it, as in
// timed_acquire_op: the queue side and the timer's wait handler own it, and the memory goes with
// the last. The timer is started by enqueue under the engine's mutex, before the waiter is
// visible, so whoever decides the waiter later may cancel the timer without racing its start.
template <class Handler, class IoExecutor, class Grant>
class remote_acquire_op final : public remote_waiter
{
public:
    using parts_type = core::acquire_parts<Handler, IoExecutor, Grant>;
    using allocator_type = typename parts_type::allocator_type;
    using engine_type = typename Grant::engine_type;
    using timer_type = boost::asio::basic_waitable_timer<clock, boost::asio::wait_traits<clock>, IoExecutor>;

    remote_acquire_op(Handler&& handler, const IoExecutor& io_ex, const Grant& grant, acquire_mode how,
                      std::optional<clock::duration> timeout)
        : remote_waiter(&do_func, how), parts_(std::move(handler), io_ex, grant),
          alloc_(parts_.get_allocator()), timer_(io_ex), timeout_(timeout.value_or(clock::duration()))
    {
        to_permit = Grant::to_permit;
        if (timeout)
            start_timer = &start;
    }

    static remote_acquire_op* create(Handler&& handler, const IoExecutor& io_ex, const Grant& grant,
                                     acquire_mode how, std::optional<clock::duration> timeout)
    {
        return core::allocate_op<remote_acquire_op>(core::get_handler_allocator(handler), std::move(handler),
                                                    io_ex, grant, how, timeout);
    }

    typename parts_type::slot_type& slot() noexcept { return parts_.slot(); }

    // The queue side owns the operation alone: the initiator has nothing to let go of.
    void initiated(bool) noexcept {}

private:
    friend class core::timer_expiry<remote_acquire_op>;
    using expiry = core::timer_expiry<remote_acquire_op>;

    static bool start(remote_waiter& base)
    {
        auto& op = static_cast<remote_acquire_op&>(base);
        BOOST_TRY
        {
            op.engine_ = op.parts_.grant().engine;
            op.timer_.expires_after(op.timeout_);
            op.timer_.async_wait(expiry(&op));
            op.timing_ = true;
        }
        BOOST_CATCH(...)
        {
        }
        BOOST_CATCH_END
        return op.timing_;
    }

    // The timer expired: the acquire leaves the queue unless it was decided meanwhile.
    void expire()
    {
        core::semaphore_waiter* self = this;
        core::waiter_list done;
        engine_->cancel(&self, core::waiter_outcome::timed_out, done);
        core::complete_all(done);
    }

    void release() noexcept
    {
        if (owners_.fetch_sub(1, std::memory_order_acq_rel) == 1)
            core::deallocate_op(this, alloc_);
    }

    static void do_func(core::acquire_op_base* base, action what, const boost::system::error_code& ec,
                        core::relation how)
    {
        auto* op = static_cast<remote_acquire_op*>(base);
        const std::size_t n = op->granted();
        const boost::system::error_code result = op->error ? op->error : ec;
        parts_type parts(std::move(op->parts_));
        if (op->outcome == core::waiter_outcome::granted)
            parts.grant().bind(*op, n);
        if (op->timing_)
            op->timer_.cancel();
        op->release();
        if (what == action::complete)
            parts.complete(result, how, n);
    }

    parts_type parts_;
    allocator_type alloc_;
    timer_type timer_;
    clock::duration timeout_;
    std::shared_ptr<engine_type> engine_; // for the timer's expiry, which may come after the grant's is gone
    bool timing_ = false;
    std::atomic<unsigned char> owners_{1}; // the queue side, and the timer's wait handler once started
};

template <class Executor>
class semaphore_engine : public std::enable_shared_from_this<semaphore_engine<Executor>>
{
public:
    using connection_type = basic_connection<Executor>;
    using permit_type = redis::basic_permit<Executor>;
    using grant_type = permit_grant<Executor>;
    using clock = std::chrono::steady_clock;

    semaphore_engine(connection_type& connection, std::string_view name, std::size_t capacity,
                     std::chrono::milliseconds lease)
        : connection_(connection), script_(name), capacity_(capacity), lease_(lease),
          heartbeat_(connection.get_executor()), holder_expiry_(connection.get_executor()),
          id_prefix_(random_prefix())
    {
    }

    // Loads the library on every connect (best effort), and listens for grants.
    void start()
    {
        access::impl(connection_)
            .add_setup_command(formatted_command::format_for_pipeline(semaphore_script::load_command()),
                               // Refused (an ACL without FUNCTION LOAD) is no reason to fail the link:
                               // an administrator may have loaded the library; an FCALL that does not
                               // find it loads it again and reports why it cannot.
                               true);
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
        close_listener_ = access::impl(connection_).new_id();
        access::impl(connection_).add_close_listener(close_listener_, [weak] {
            if (const auto self = weak.lock())
                self->abort_waiters(asio_sync::error::closed, false);
        });
        const std::lock_guard<std::mutex> lock(mutex_);
        schedule_heartbeat();
    }

    // The semaphore is gone: its waiters complete with operation_aborted; its holders keep their
    // leases renewed until their permits go.
    void stop()
    {
        connection_.unsubscribe(subscription_);
        access::impl(connection_).remove_close_listener(close_listener_);
        {
            const std::lock_guard<std::mutex> lock(mutex_);
            stopped_ = true;
            if (holders_.empty())
                heartbeat_.cancel();
            holder_expiry_.cancel();
        }
        abort_waiters(boost::asio::error::operation_aborted, true);
    }

    // Completes every local waiter with `ec`; with `remotely`, also takes their waiters out of the
    // remote queue (after a connection close nothing can be sent: their waiter leases expire them).
    void abort_waiters(boost::system::error_code ec, bool remotely)
    {
        core::waiter_list done;
        std::vector<std::string> given_up;
        {
            const std::lock_guard<std::mutex> lock(mutex_);
            while (core::semaphore_waiter* w = waiters_.front())
            {
                auto& waiter = static_cast<remote_waiter&>(*w);
                if (remotely)
                    given_up.emplace_back(waiter.id);
                fail(waiter, ec, done);
            }
        }
        for (const std::string& id : given_up)
            send_release(id, 0, nullptr);
        core::complete_all(done);
    }

    template <class Handler>
    void acquire(std::size_t n, acquire_mode mode, std::optional<clock::duration> timeout, Handler handler)
    {
        core::start_acquire<remote_acquire_op>(*this, std::move(handler), connection_.get_executor(), n,
                                               make_grant(), mode, timeout);
    }

    // The engine concept of start_acquire.hpp. Nothing is decided without Redis but n == 0.
    bool try_acquire(std::size_t n, bool) const noexcept { return n == 0; }

    std::size_t capacity() const noexcept { return capacity_; }

    core::waiter_outcome enqueue(core::semaphore_waiter& w, std::size_t n)
    {
        auto& waiter = static_cast<remote_waiter&>(w);
        waiter.missing = n;
        const std::lock_guard<std::mutex> lock(mutex_);
        if (waiter.start_timer && !waiter.start_timer(waiter))
            return core::waiter_outcome::no_memory;
        waiters_.push_back(w);
        w.queued.store(true, std::memory_order_relaxed);
        send_acquire(waiter, next_id(waiter));
        return core::waiter_outcome::pending;
    }

    bool cancel(core::semaphore_waiter* const* ref, core::waiter_outcome why, core::waiter_list& done)
    {
        std::string id;
        {
            const std::lock_guard<std::mutex> lock(mutex_);
            core::semaphore_waiter* w = *ref;
            if (!w || !w->queued.load(std::memory_order_relaxed))
                return false;
            id = static_cast<remote_waiter*>(w)->id;
            remove(*w, why, done);
        }
        send_release(id, 0, nullptr);
        return true;
    }

    // The operation that completes a permit's release or wait for loss, on the connection's
    // executor unless the handler has its own.
    template <class Handler>
    owned_op make_status_op(Handler handler)
    {
        return owned_op(status_op<Handler, Executor>::create(std::move(handler), connection_.get_executor()));
    }

    // Stops renewing the holder `id` and releases it remotely; `op` (if any) completes on the
    // reply, with lease_lost if the lease had lapsed.
    void release(const std::string& id, owned_op op)
    {
        core::waiter_list done;
        bool was_lost = false;
        std::uint64_t fence = 0;
        {
            const std::lock_guard<std::mutex> lock(mutex_);
            const auto it = holders_.find(id);
            if (it != holders_.end())
            {
                was_lost = it->second.lost;
                fence = it->second.fence;
                finish_all(it->second.lost_waiters, boost::asio::error::operation_aborted, done);
                holders_.erase(it);
            }
        }
        core::complete_all(done);
        if (was_lost)
        {
            if (op)
                complete(std::move(op), redis::error::lease_lost);
            return;
        }
        send_release(id, fence, std::move(op));
    }

    void wait_lost(const std::string& id, owned_op op)
    {
        boost::system::error_code ec = boost::asio::error::operation_aborted;
        {
            const std::lock_guard<std::mutex> lock(mutex_);
            const auto it = holders_.find(id);
            if (it != holders_.end() && !it->second.lost)
                return it->second.lost_waiters.push_back(*op.release());
            if (it != holders_.end())
                ec = redis::error::lease_lost;
        }
        complete(std::move(op), ec);
    }

    const semaphore_script& script() const noexcept { return script_; }

    connection_type& connection() const noexcept { return connection_; }

    // The usage reply's capacity, permits held and waiters queued, or the error of `ec` and `r`.
    static boost::system::error_code usage_of(boost::system::error_code ec, const reply& r,
                                              std::size_t (&values)[3])
    {
        if (ec)
            return ec == redis::error::server_error ? error_of(r) : ec;
        if (r.kind != reply_kind::array || r.elements.size() != 4 ||
            r.elements[0].text != word(reply_word::usage))
            return redis::error::server_error;
        for (std::size_t i = 0; i < 3; ++i)
            values[i] = static_cast<std::size_t>(number(r.elements[i + 1]));
        return {};
    }

private:
    struct holder
    {
        std::size_t n = 0;
        std::uint64_t fence = 0;
        clock::time_point renewed_at{}; // send time of the last call that moved its deadline
        bool lost = false;
        core::waiter_list lost_waiters; // of coded_waiter
        std::shared_ptr<boost::asio::cancellation_signal> lost_signal;
    };

    // A granted, queued or busy reply of the library, or lost.
    struct state
    {
        std::string_view word;
        std::uint64_t fence = 0;
    };

    // What a remote acquire starts with: the engine, to build its permit with.
    grant_type make_grant()
    {
        grant_type grant;
        grant.engine = this->shared_from_this();
        return grant;
    }

    static std::string random_prefix()
    {
        std::random_device device;
        std::uint64_t bits = (std::uint64_t(device()) << 32) ^ device();
        char text[17];
        std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(bits));
        return text;
    }

    // Gives `w` the next id; under the mutex.
    std::string_view next_id(remote_waiter& w)
    {
        w.serial = ++id_counter_;
        const int length = std::snprintf(w.id, sizeof w.id, "%s:%llu", id_prefix_.c_str(),
                                         static_cast<unsigned long long>(w.serial));
        return std::string_view(w.id, static_cast<std::size_t>(length));
    }

    // The queued waiter of id number `serial`, if it is still queued; under the mutex.
    remote_waiter* find(std::uint64_t serial) noexcept
    {
        for (core::semaphore_waiter* w = waiters_.front(); w; w = w->next)
            if (static_cast<remote_waiter*>(w)->serial == serial)
                return static_cast<remote_waiter*>(w);
        return nullptr;
    }

    using reply_word = semaphore_library::reply_word;
    using error_prefix = semaphore_library::error_prefix;

    static std::string_view word(reply_word w) noexcept
    {
        return semaphore_library::reply_words[static_cast<std::size_t>(w)];
    }

    static bool starts_with(std::string_view text, error_prefix prefix) noexcept
    {
        return text.rfind(semaphore_library::error_prefixes[static_cast<std::size_t>(prefix)], 0) == 0;
    }

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
        if (s.word == word(reply_word::granted) && r.elements.size() >= 2)
            s.fence = number(r.elements[1]);
        return s;
    }

    static boost::system::error_code error_of(const reply& r)
    {
        const std::string_view text = r.text;
        if (starts_with(text, error_prefix::capacity))
            return redis::error::capacity_mismatch;
        if (starts_with(text, error_prefix::too_many))
            return asio_sync::error::too_many_permits;
        if (text.rfind("WRONGTYPE", 0) == 0)
            return redis::error::wrong_type;
        if (starts_with(text, error_prefix::argument))
            return redis::error::invalid_argument;
        if (text.rfind("NOPERM", 0) == 0)
            return redis::error::no_permission;
        if (text.rfind("READONLY", 0) == 0)
            return redis::error::read_only;
        if (text.rfind("OOM", 0) == 0)
            return redis::error::out_of_memory;
        if (text.rfind("MOVED ", 0) == 0 || text.rfind("ASK ", 0) == 0)
            return redis::error::cluster_redirect;
        return redis::error::server_error;
    }

    // Takes `w` out of the queue with outcome `why` into `done`; under the mutex.
    void remove(core::semaphore_waiter& w, core::waiter_outcome why, core::waiter_list& done) noexcept
    {
        waiters_.erase(w);
        w.queued.store(false, std::memory_order_relaxed);
        if (w.cancel_ref)
            *w.cancel_ref = nullptr;
        w.outcome = why;
        done.push_back(w);
    }

    // Decides `w` with an error code that waiter_outcome does not name; under the mutex.
    void fail(remote_waiter& w, boost::system::error_code ec, core::waiter_list& done) noexcept
    {
        w.error = ec;
        remove(w, core::waiter_outcome::aborted, done);
    }

    // Grants `w` and makes it a holder; under the mutex.
    void grant(remote_waiter& w, std::uint64_t fence, core::waiter_list& done)
    {
        holder& h = holders_[w.id];
        h.n = w.missing;
        h.fence = fence;
        h.renewed_at = w.sent_at;
        h.lost_signal = std::make_shared<boost::asio::cancellation_signal>();
        w.fence = fence;
        w.lost_signal = h.lost_signal;
        remove(w, core::waiter_outcome::granted, done);
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

    // Sends acquire(`id`) for `w`; under the mutex, so a give-up's release is sent after it.
    void send_acquire(remote_waiter& w, std::string_view id)
    {
        w.sent_at = clock::now();
        connection_.async_execute(
            script_.acquire(id, w.missing, capacity_, lease_, w.mode),
            [self = this->shared_from_this(), serial = w.serial](boost::system::error_code ec, reply r) {
                self->on_acquire_reply(serial, ec, r);
            });
    }

    void on_acquire_reply(std::uint64_t serial, boost::system::error_code ec, const reply& r)
    {
        core::waiter_list done;
        {
            const std::lock_guard<std::mutex> lock(mutex_);
            remote_waiter* w = find(serial);
            // Given up: the release sent after this acquire hands back whatever it got.
            if (!w)
                return;
            if (ec == redis::error::connection_lost)
                // Its outcome is unknown: the same id again is answered with its state.
                return send_acquire(*w, w->id);
            if (ec == redis::error::server_error && transient(r))
                return retry_acquire(serial);
            if (ec == redis::error::server_error && library_missing(r) && !w->reloaded)
            {
                w->reloaded = true;
                return reload_library([self = this->shared_from_this(),
                                       serial](boost::system::error_code load_ec, const reply& load_reply) {
                    self->on_library_reloaded(serial, load_ec, load_reply);
                });
            }
            if (ec)
                fail(*w, ec == redis::error::server_error ? error_of(r) : ec, done);
            else if (const state s = parse(r); s.word == word(reply_word::granted))
                grant(*w, s.fence, done);
            else if (s.word == word(reply_word::busy))
                fail(*w, boost::asio::error::would_block, done);
            else if (s.word == word(reply_word::queued))
            {
                w->remotely_queued = true;
                watch_earliest_holder();
            }
            else
                fail(*w, redis::error::server_error, done);
        }
        core::complete_all(done);
    }

    // An error reply that a later call will not get: the server is loading its data set after a
    // restart (LOADING), or is busy running a script (BUSY).
    static bool transient(const reply& r)
    {
        const std::string_view text = r.text;
        return text.rfind("LOADING", 0) == 0 || text.rfind("BUSY", 0) == 0;
    }

    // The server no longer has the library (a FUNCTION FLUSH, or a restart that did not keep it).
    static bool library_missing(const reply& r) { return r.text.rfind("ERR Function not found", 0) == 0; }

    // Loads the library again; `on_loaded(ec, reply)` runs on the reply.
    template <class Handler>
    void reload_library(Handler on_loaded)
    {
        connection_.async_execute(semaphore_script::load_command(), std::move(on_loaded));
    }

    // Sends the acquire of id number `serial` again once the library is back, if it is still
    // wanted; fails it with the reason if the library could not be loaded.
    void on_library_reloaded(std::uint64_t serial, boost::system::error_code ec, const reply& r)
    {
        core::waiter_list done;
        {
            const std::lock_guard<std::mutex> lock(mutex_);
            remote_waiter* w = find(serial);
            if (!w)
                return;
            if (!ec || ec == redis::error::connection_lost)
                send_acquire(*w, w->id);
            else
                fail(*w, ec == redis::error::server_error ? error_of(r) : ec, done);
        }
        core::complete_all(done);
    }

    // Sends the acquire of id number `serial` again after a short pause, if it is still wanted.
    void retry_acquire(std::uint64_t serial)
    {
        auto timer = std::make_shared<boost::asio::steady_timer>(connection_.get_executor(), retry_delay);
        timer->async_wait([self = this->shared_from_this(), timer, serial](boost::system::error_code) {
            const std::lock_guard<std::mutex> lock(self->mutex_);
            if (remote_waiter* w = self->find(serial))
                self->send_acquire(*w, w->id);
        });
    }

    // Sends release(`id`) of a holder with `fence` (0 for a waiter); `op` (if any) completes on the
    // reply. If the library is missing, it is loaded again and the release sent once more. A
    // release sent again after its reply was lost and that finds its id gone is a success: the
    // first one ran.
    void send_release(const std::string& id, std::uint64_t fence, owned_op op, bool reloaded = false,
                      bool replayed = false)
    {
        connection_.async_execute(
            script_.release(id, fence), [self = this->shared_from_this(), id, fence, op = std::move(op),
                                         reloaded, replayed](boost::system::error_code ec, reply r) mutable {
                if (ec == redis::error::connection_lost)
                    return self->send_release(id, fence, std::move(op), reloaded, true); // idempotent
                if (ec == redis::error::server_error && library_missing(r) && !reloaded)
                {
                    self->reload_library([](boost::system::error_code, const reply&) {});
                    return self->send_release(id, fence, std::move(op), true, replayed);
                }
                if (!op)
                    return;
                if (!ec && !replayed && parse(r).word == word(reply_word::lost))
                    ec = redis::error::lease_lost;
                else if (!ec && !replayed && parse(r).word == word(reply_word::state_lost))
                    ec = redis::error::state_lost;
                else if (ec == redis::error::server_error)
                    ec = error_of(r);
                complete(std::move(op), ec);
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
        core::waiter_list done;
        {
            const std::lock_guard<std::mutex> lock(mutex_);
            for (core::semaphore_waiter* w = waiters_.front(); w; w = w->next)
                if (auto* waiter = static_cast<remote_waiter*>(w); id == waiter->id)
                {
                    grant(*waiter, fence, done);
                    break;
                }
        }
        core::complete_all(done);
    }

    // Renews every queued waiter: keeps its place, and learns of a grant whose message was lost.
    void renew_queued_waiters()
    {
        std::vector<std::pair<std::uint64_t, std::string>> queued;
        {
            const std::lock_guard<std::mutex> lock(mutex_);
            for (core::semaphore_waiter* w = waiters_.front(); w; w = w->next)
                if (auto* waiter = static_cast<remote_waiter*>(w); waiter->remotely_queued)
                    queued.emplace_back(waiter->serial, waiter->id);
        }
        const clock::time_point now = clock::now();
        for (auto& [serial, id] : queued)
            connection_.async_execute(script_.renew(id, lease_, 0),
                                      [self = this->shared_from_this(), serial = serial,
                                       now](boost::system::error_code ec, reply r) {
                                          self->on_waiter_renewed(serial, now, ec, r);
                                      });
    }

    void on_waiter_renewed(std::uint64_t serial, clock::time_point sent_at, boost::system::error_code ec,
                           const reply& r)
    {
        if (ec)
            return reload_if_missing(ec, r); // the next heartbeat tries again
        core::waiter_list done;
        {
            const std::lock_guard<std::mutex> lock(mutex_);
            remote_waiter* w = find(serial);
            if (!w)
                return;
            const state s = parse(r);
            if (s.word == word(reply_word::queued))
            {
                w->sent_at = sent_at;
                watch_earliest_holder();
            }
            else if (s.word == word(reply_word::granted))
            {
                w->sent_at = sent_at;
                grant(*w, s.fence, done);
            }
            else if (s.word == word(reply_word::lost) || s.word == word(reply_word::state_lost))
            {
                // Its waiter lease lapsed while the link was down: queue again under a new id (the
                // old one is unknown to Redis, so it cannot be granted).
                w->remotely_queued = false;
                send_acquire(*w, next_id(*w));
            }
        }
        core::complete_all(done);
    }

    // A queued waiter waits for a release (published) or for a holder's lease to lapse, which
    // nobody announces: the engine asks the library when a writing call may serve the queue (the
    // earliest deadline, or the end of a quiet period) and renews its queued waiters then, so that
    // the call that reaps the lapsed holder serves them. A dead holder's permits thus come back one
    // lease after its last renewal (plus a round trip), not at the waiters' next heartbeat. Under
    // the mutex.
    void watch_earliest_holder()
    {
        if (watching_ || stopped_)
            return;
        watching_ = true;
        connection_.async_execute(script_.watch(),
                                  [self = this->shared_from_this()](boost::system::error_code ec, reply r) {
                                      self->on_watch_reply(ec, r);
                                  });
    }

    void on_watch_reply(boost::system::error_code ec, const reply& r)
    {
        const std::lock_guard<std::mutex> lock(mutex_);
        watching_ = false;
        // An error, or nothing to wait for: the heartbeat and the published releases are the
        // waiters' wake-ups.
        if (ec || r.elements.size() != 2 || r.elements[0].text != word(reply_word::wake) || stopped_ ||
            waiters_.empty())
            return;
        // The library reaps a deadline that is at most its clock: wake 1 ms after it.
        holder_expiry_.expires_after(std::chrono::milliseconds(number(r.elements[1]) + 1));
        holder_expiry_.async_wait([self = this->shared_from_this()](boost::system::error_code ec2) {
            if (!ec2)
                self->renew_queued_waiters();
        });
    }

    // After a renewal found the library missing: loads it for the next heartbeat's renewals.
    void reload_if_missing(boost::system::error_code ec, const reply& r)
    {
        if (ec == redis::error::server_error && library_missing(r))
            reload_library([](boost::system::error_code, const reply&) {});
    }

    void schedule_heartbeat()
    {
        heartbeat_.expires_after(std::chrono::duration_cast<clock::duration>(lease_) / 3);
        heartbeat_.async_wait([self = this->shared_from_this()](boost::system::error_code ec) {
            if (!ec)
                self->on_heartbeat();
        });
    }

    void on_heartbeat()
    {
        std::vector<std::pair<std::string, std::uint64_t>> renewing;
        std::vector<std::shared_ptr<boost::asio::cancellation_signal>> lost;
        core::waiter_list done;
        const clock::time_point now = clock::now();
        {
            const std::lock_guard<std::mutex> lock(mutex_);
            for (auto& [id, h] : holders_)
            {
                if (h.lost)
                    continue;
                if (now - h.renewed_at >= lease_)
                    lose(h, lost, done);
                else
                    renewing.emplace_back(id, h.fence);
            }
            if (!stopped_ || !holders_.empty() || !waiters_.empty())
                schedule_heartbeat();
        }
        notify_lost(lost, done);
        for (const auto& [id, fence] : renewing)
            connection_.async_execute(
                script_.renew(id, lease_, fence),
                [self = this->shared_from_this(), id = id, now](boost::system::error_code ec, reply r) {
                    self->on_holder_renewed(id, now, ec, r);
                });
        renew_queued_waiters();
    }

    void on_holder_renewed(const std::string& id, clock::time_point sent_at, boost::system::error_code ec,
                           const reply& r)
    {
        if (ec)
            return reload_if_missing(ec, r); // the lease check of the next heartbeats decides
        std::vector<std::shared_ptr<boost::asio::cancellation_signal>> lost;
        core::waiter_list done;
        {
            const std::lock_guard<std::mutex> lock(mutex_);
            const auto it = holders_.find(id);
            if (it == holders_.end() || it->second.lost)
                return;
            holder& h = it->second;
            if (parse(r).word == word(reply_word::granted))
            {
                if (sent_at > h.renewed_at)
                    h.renewed_at = sent_at;
                return;
            }
            lose(h, lost, done,
                 parse(r).word == word(reply_word::state_lost) ? redis::error::state_lost
                                                               : redis::error::lease_lost);
        }
        notify_lost(lost, done);
    }

    // Marks `h` lost: its waits for loss go to `done`, its signal to `lost`; under the mutex.
    static void lose(holder& h, std::vector<std::shared_ptr<boost::asio::cancellation_signal>>& lost,
                     core::waiter_list& done, redis::error why = redis::error::lease_lost)
    {
        h.lost = true;
        finish_all(h.lost_waiters, why, done);
        lost.push_back(h.lost_signal);
    }

    static void notify_lost(const std::vector<std::shared_ptr<boost::asio::cancellation_signal>>& lost,
                            core::waiter_list& done)
    {
        core::complete_all(done);
        for (const auto& signal : lost)
            signal->emit(boost::asio::cancellation_type::terminal);
    }

    static constexpr std::chrono::milliseconds retry_delay{20};

    connection_type& connection_;
    const semaphore_script script_;
    const std::size_t capacity_;
    const std::chrono::milliseconds lease_;
    typename connection_type::subscription_id subscription_{};
    std::uint64_t close_listener_ = 0;

    std::mutex mutex_;
    boost::asio::steady_timer heartbeat_;
    boost::asio::steady_timer holder_expiry_; // the earliest holder deadline, while waiters are queued
    bool watching_ = false;                   // its watch call is in flight
    const std::string id_prefix_;
    std::uint64_t id_counter_ = 0;
    bool stopped_ = false;
    core::waiter_list waiters_; // of remote_waiter, in the order they were started
    std::map<std::string, holder> holders_;
};

} // namespace asio_sync::redis::detail

#endif // ASIO_SYNC_REDIS_DETAIL_SEMAPHORE_ENGINE_HPP
