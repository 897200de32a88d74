// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_REDIS_DETAIL_SEMAPHORE_OPS_HPP
#define ASIO_SYNC_REDIS_DETAIL_SEMAPHORE_OPS_HPP

// The operations of the fleet-wide semaphore: a remote acquire, and the `void(error_code)`
// completion of a resize, of a permit's release or of its wait for loss. They are operations of the
// core's acquire
// machinery (detail/start_acquire.hpp): allocated with the handler's allocator, cancelled through
// acquire_cancellation, completed through the handler's executor by complete_all once the
// engine's mutex is released.

#include <asio_sync/detail/acquire_op.hpp>
#include <asio_sync/detail/completion.hpp>
#include <asio_sync/detail/grant.hpp>
#include <asio_sync/detail/timed_acquire_op.hpp>
#include <asio_sync/detail/waiter_list.hpp>
#include <asio_sync/redis/detail/access.hpp>
#include <asio_sync/redis/detail/semaphore_client.hpp>

#include <boost/asio/basic_waitable_timer.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/wait_traits.hpp>
#include <boost/core/no_exceptions_support.hpp>
#include <boost/system/error_code.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

namespace asio_sync::redis {

template <class Executor>
class basic_permit;

namespace detail {

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

// An operation the engine keeps in its list of remote operations, named by the serial the client
// state machine knows it by: an acquire (remote_waiter) or a resize.
struct remote_op : coded_waiter
{
    using coded_waiter::coded_waiter;

    std::uint64_t serial = 0;
};

// The `void(error_code)` completion of a permit's release or wait for loss (Base coded_waiter), or of
// a resize (Base remote_op): the core's operation parts with a grant that hands over the error code
// alone.
template <class Handler, class IoExecutor, class Base = coded_waiter>
class status_op final : public Base
{
public:
    using parts_type = core::acquire_parts<Handler, IoExecutor, core::signal_grant>;
    using typename Base::action;

    status_op(Handler&& handler, const IoExecutor& io_ex)
        : Base(&do_func), parts_(std::move(handler), io_ex, core::signal_grant())
    {
    }

    static status_op* create(Handler&& handler, const IoExecutor& io_ex)
    {
        return core::allocate_op<status_op>(core::get_handler_allocator(handler), std::move(handler), io_ex);
    }

    typename parts_type::slot_type& slot() noexcept { return parts_.slot(); }

    // The engine's list owns the operation alone: the initiator has nothing to let go of.
    void initiated(bool) noexcept {}

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

// A local acquire, known to the engine from enqueue() until it is decided; its state as the
// client sees it is in semaphore_client, under the same serial. The engine reads and writes its
// fields under its mutex.
struct remote_waiter : remote_op
{
    remote_waiter(func_type func, acquire_mode how) noexcept : remote_op(func), mode(how) {}

    acquire_mode mode;
    // What the permit of a granted acquire holds beyond its count.
    char id[id_capacity] = {};
    std::uint64_t fence = 0;
    std::shared_ptr<boost::asio::cancellation_signal> lost_signal;
    std::shared_ptr<lease_view> lease;
    // Starts the time limit, if the acquire has one; false if the timer could not be started.
    bool (*start_timer)(remote_waiter&) = nullptr;
};

// The grant of a remote acquire. Copied at initiation, it knows only the engine; the operation of a
// granted acquire fills in the rest of its permit (id, count, fence, lost signal, lease) just before
// it completes, through acquire_parts::grant().
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
    std::shared_ptr<lease_view> lease;

    void bind(const remote_waiter& w, std::size_t n) noexcept
    {
        std::memcpy(id, w.id, sizeof id);
        count = n;
        fence = w.fence;
        lost_signal = w.lost_signal;
        lease = w.lease;
    }

    std::tuple<boost::system::error_code, permit_type> operator()(boost::system::error_code ec) const
    {
        if (ec || count == 0)
            return {ec, permit_type()};
        return {ec,
                access::construct<permit_type>(engine, std::string(id), count, fence, lost_signal, lease)};
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
    using clock = std::chrono::steady_clock;
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

} // namespace detail

} // namespace asio_sync::redis

#endif // ASIO_SYNC_REDIS_DETAIL_SEMAPHORE_OPS_HPP
