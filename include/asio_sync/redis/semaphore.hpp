// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_REDIS_SEMAPHORE_HPP
#define ASIO_SYNC_REDIS_SEMAPHORE_HPP

/// \file
/// The fleet-wide counting semaphore: asio_sync::redis::basic_semaphore, the
/// asio_sync::redis::semaphore alias, and asio_sync::redis::semaphore_status.

#include <asio_sync/error.hpp>
#include <asio_sync/redis/connection.hpp>
#include <asio_sync/redis/detail/semaphore_engine.hpp>
#include <asio_sync/redis/permit.hpp>
#include <asio_sync/redis/reply.hpp>
#include <asio_sync/redis/semaphore_options.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/compose.hpp>
#include <boost/system/error_code.hpp>
#include <boost/throw_exception.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

namespace asio_sync::redis {

/// A snapshot of a fleet-wide semaphore, as `basic_semaphore::async_status` reads it from Redis.
struct semaphore_status
{
    /// The capacity declared in Redis by the first acquire; 0 if nobody has acquired yet (or the
    /// semaphore's keys expired while it was idle).
    std::size_t capacity = 0;

    /// The permits held across the fleet under leases that have not lapsed.
    std::size_t held = 0;

    /// The waiters queued across the fleet under leases that have not lapsed.
    std::size_t queued = 0;

    /// The permits free now: `capacity - held` (0 if that is negative, which it cannot be).
    std::size_t available() const noexcept { return held < capacity ? capacity - held : 0; }
};

/// A counting semaphore shared by every process that opens the same name on the same Redis
/// server: at most `capacity` permits are held across the fleet at any time, and waiters are
/// served in the order Redis queued them (strict FIFO: a waiter that does not fit stops the ones
/// behind it).
///
/// **Leases.** A granted permit holds a lease of `lease_duration`, renewed in the background every
/// third of it while the permit lives. A holder that cannot renew (Redis unreachable, the process
/// stalled or killed) loses its permits when the lease lapses, so a dead process never blocks the
/// fleet for longer than one lease. A permit learns that it was lost through `async_wait_lost` and
/// `lost_slot()`; its `fencing_token()` is smaller than that of every later grant, so a resource
/// that remembers the largest token it saw can refuse a stale holder.
///
/// **Faults.** An acquire made while Redis is unreachable waits (bounded by its own timeout or
/// cancellation) and completes once Redis is back; one whose reply was lost with the link is sent
/// again with the same id, so it is never granted twice. A cancelled or timed-out acquire
/// completes at once; its remote waiter is removed, and a grant that raced it is given back.
///
/// **Completions** run through the handler's associated executor, never inside the initiating
/// call.
///
/// The connection must outlive the semaphore and every permit made by it. Thread-safe: its
/// operations may be started from any thread. While the semaphore or one of its permits exists,
/// its renewal timer keeps the connection's execution context busy.
///
/// The design, the guarantees and their limits (one Redis primary, failover, clocks, choosing the
/// lease), the errors and how to operate it are in the guide "Beyond one process"
/// (docs/cluster.md).
///
/// @tparam Executor The connection's executor type: the default executor of completion handlers,
/// and the executor of the semaphore's timers.
template <class Executor = boost::asio::any_io_executor>
class basic_semaphore
{
    using engine_type = detail::semaphore_engine<Executor>;

public:
    /// The executor type of the connection.
    using executor_type = Executor;

    /// The connection the semaphore talks to Redis through.
    using connection_type = basic_connection<Executor>;

    /// The shortest lease: a renewal every third of it must still have time for a round trip.
    static constexpr std::chrono::milliseconds min_lease_duration{10};

    /// The longest lease, one year: the server's deadlines (its clock in milliseconds plus twice
    /// the lease) stay exact in the function library's arithmetic.
    static constexpr std::chrono::milliseconds max_lease_duration{std::chrono::hours(24 * 365)};

    /// The permits of one grant, handed to the completion handler of an acquire: move-only,
    /// renewed while it lives, released by its destructor. See `basic_permit`.
    using permit = basic_permit<Executor>;

    /// Opens the semaphore `name` of `capacity` permits on `conn`'s server. The first acquire
    /// declares the capacity in Redis; an acquire with another capacity fails with
    /// `error::capacity_mismatch`. The constructor registers the semaphore's function library
    /// with the connection, which loads it at once and on every reconnect, and subscribes to the
    /// semaphore's channel.
    ///
    /// @param conn The connection; it must outlive the semaphore and its permits.
    /// @param name The semaphore's name, shared by every process that uses it; its keys are
    /// `asio_sync:{name}:...`. Any bytes but an empty string.
    /// @param capacity The most permits held at once across the fleet.
    /// @param lease_duration The lease of each permit and queued waiter, renewed every third of
    /// it; from `min_lease_duration` to `max_lease_duration`. A process that stops renewing loses
    /// its permits one lease after its last renewal.
    /// @throws std::invalid_argument if `name` is empty, or `lease_duration` is out of range.
    basic_semaphore(connection_type& conn, std::string name, std::size_t capacity,
                    std::chrono::milliseconds lease_duration)
        : basic_semaphore(conn, std::move(name), capacity, semaphore_options{lease_duration, std::nullopt})
    {
    }

    /// Opens the semaphore `name` of `capacity` permits on `conn`'s server, with the leases of
    /// `options`; otherwise as the constructor above.
    ///
    /// @throws std::invalid_argument if `name` is empty, `options.lease_duration` is out of range,
    /// or `options.safety_margin` is negative or more than half the lease.
    basic_semaphore(connection_type& conn, std::string name, std::size_t capacity,
                    const semaphore_options& options)
        : engine_(std::make_shared<engine_type>(conn, name, capacity, checked_lease(options.lease_duration),
                                                checked_margin(options)))
    {
        engine_->start();
    }

    basic_semaphore(const basic_semaphore&) = delete;
    basic_semaphore& operator=(const basic_semaphore&) = delete;

    /// Pending acquires complete with `boost::asio::error::operation_aborted`; live permits keep
    /// their leases renewed until they are released.
    ~basic_semaphore() { engine_->stop(); }

    /// Gives up every pending acquire of this semaphore object: each completes with
    /// `boost::asio::error::operation_aborted`, and its waiter is taken out of the fleet-wide queue
    /// (a grant that raced it is given back). Permits already granted are not affected, and later
    /// acquires work as usual. Thread-safe.
    void cancel() { engine_->abort_waiters(boost::asio::error::operation_aborted); }

    /// Acquires `n` permits, waiting in the fleet-wide queue.
    ///
    /// Signature: `void(boost::system::error_code, permit)`. Errors: `too_many_permits` (n greater
    /// than the capacity), `error::capacity_mismatch`, `error::wrong_type`,
    /// `error::server_error` (any other error reply, such as `NOPERM` or `READONLY`),
    /// `error::auth_failed`, `boost::asio::error::operation_aborted` (cancelled: any type, or by
    /// `cancel()`; the semaphore destroyed while it waited), `asio_sync::error::closed` (the
    /// connection was closed before the acquire was decided, whether its call was unsent, in
    /// flight or queued in Redis; its remote waiter, if any, expires with its lease). A reply
    /// lost with the connection is not an error: the acquire is sent again with the same id, and
    /// is never granted twice. While Redis is unreachable the acquire waits: bound it with
    /// `async_acquire_permit_for` or a cancellation.
    /// `n == 0` completes at once with an empty permit.
    template <BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code, permit)) AcquireToken>
    auto async_acquire_permit(std::size_t n, AcquireToken&& token)
    {
        return initiate(n, detail::acquire_mode::wait, std::nullopt, std::forward<AcquireToken>(token));
    }

    /// As `async_acquire_permit`, giving up with `asio_sync::error::timed_out` after `timeout`.
    template <class Rep, class Period,
              BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code, permit)) AcquireToken>
    auto async_acquire_permit_for(std::size_t n, std::chrono::duration<Rep, Period> timeout,
                                  AcquireToken&& token)
    {
        return initiate(n, detail::acquire_mode::wait,
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(timeout),
                        std::forward<AcquireToken>(token));
    }

    /// Acquires `n` permits if they are free and nobody waits, in one round trip; never queues.
    /// Fails with `boost::asio::error::would_block` otherwise, or with the errors of
    /// `async_acquire_permit`.
    template <BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code, permit)) AcquireToken>
    auto async_try_acquire_permit(std::size_t n, AcquireToken&& token)
    {
        return initiate(n, detail::acquire_mode::try_once, std::nullopt, std::forward<AcquireToken>(token));
    }

    /// Reads the semaphore's usage across the fleet from Redis, in one read-only round trip
    /// (`FCALL_RO`, so a replica may answer it). An observer: the numbers may have changed by the
    /// time the handler runs.
    ///
    /// Signature: `void(boost::system::error_code, semaphore_status)`. Errors: those of
    /// `connection::async_execute`, and the Redis errors of `async_acquire_permit`.
    template <BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code, semaphore_status)) StatusToken>
    auto async_status(StatusToken&& token)
    {
        return boost::asio::async_compose<StatusToken, void(boost::system::error_code, semaphore_status)>(
            [engine = engine_, started = false](auto& self, boost::system::error_code ec = {},
                                                reply r = {}) mutable {
                if (!started)
                {
                    started = true;
                    return engine->connection().async_execute(engine->script().usage(), std::move(self));
                }
                const detail::semaphore_reply usage = detail::decode_semaphore_reply(ec, r);
                if (usage.what == detail::semaphore_reply::outcome::usage)
                    return self.complete({}, semaphore_status{usage.capacity, usage.held, usage.queued});
                self.complete(usage.what == detail::semaphore_reply::outcome::failed
                                  ? usage.error
                                  : boost::system::error_code(redis::error::server_error),
                              semaphore_status{});
            },
            token, engine_->connection().get_executor());
    }

private:
    static std::chrono::milliseconds checked_lease(std::chrono::milliseconds lease)
    {
        if (lease < min_lease_duration || lease > max_lease_duration)
            boost::throw_exception(
                std::invalid_argument("asio_sync::redis::basic_semaphore: lease_duration out of range"));
        return lease;
    }

    static std::chrono::milliseconds checked_margin(const semaphore_options& options)
    {
        const std::chrono::milliseconds margin =
            options.safety_margin.value_or(semaphore_options::default_safety_margin(options.lease_duration));
        if (margin.count() < 0 || margin > options.lease_duration / 2)
            boost::throw_exception(
                std::invalid_argument("asio_sync::redis::basic_semaphore: safety_margin out of range"));
        return margin;
    }

    template <class AcquireToken>
    auto initiate(std::size_t n, detail::acquire_mode mode,
                  std::optional<std::chrono::steady_clock::duration> timeout, AcquireToken&& token)
    {
        return boost::asio::async_initiate<AcquireToken, void(boost::system::error_code, permit)>(
            [engine = engine_, n, mode, timeout](auto handler) {
                engine->acquire(n, mode, timeout, std::move(handler));
            },
            token);
    }

    std::shared_ptr<engine_type> engine_;
};

/// The fleet-wide semaphore on `boost::asio::any_io_executor`.
using semaphore = basic_semaphore<>;

} // namespace asio_sync::redis

#endif // ASIO_SYNC_REDIS_SEMAPHORE_HPP
