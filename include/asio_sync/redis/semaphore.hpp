// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_REDIS_SEMAPHORE_HPP
#define ASIO_SYNC_REDIS_SEMAPHORE_HPP

/// \file
/// The fleet-wide counting semaphore: asio_sync::redis::basic_semaphore, the
/// asio_sync::redis::semaphore alias, asio_sync::redis::semaphore_status and
/// asio_sync::redis::set_capacity_mode.

#include <asio_sync/error.hpp>
#include <asio_sync/redis/connection.hpp>
#include <asio_sync/redis/detail/access.hpp>
#include <asio_sync/redis/detail/semaphore_engine.hpp>
#include <asio_sync/redis/permit.hpp>
#include <asio_sync/redis/semaphore_options.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/system/error_code.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

namespace asio_sync::redis {

/// A snapshot of a fleet-wide semaphore, as `basic_semaphore::async_status` reads it from Redis.
struct semaphore_status
{
    /// The capacity in force in Redis: stored by the last resize, or else declared by the first
    /// acquire; 0 if neither.
    std::size_t capacity = 0;

    /// The permits held across the fleet under leases that have not lapsed.
    std::size_t held = 0;

    /// The waiters queued across the fleet under leases that have not lapsed.
    std::size_t queued = 0;

    /// The permits free now: `capacity - held`, or 0 while a shrink waits for the holders (the
    /// permits held may then exceed the capacity).
    std::size_t available() const noexcept { return held < capacity ? capacity - held : 0; }
};

/// When `basic_semaphore::async_set_capacity` completes.
enum class set_capacity_mode
{
    /// Once the resize is stored and the permits held have come down to the new capacity (at once
    /// for a larger one).
    wait_for_holders,

    /// As soon as the resize is stored, whatever the permits held.
    at_once,
};

/// A counting semaphore shared by every process that opens the same name on the same Redis
/// server: at most `capacity` permits are held across the fleet at any time, and waiters are
/// served in the order Redis queued them (strict FIFO: a waiter that does not fit stops the ones
/// behind it).
///
/// **Leases.** A granted permit holds a lease of `lease_duration`, renewed in the background every
/// third of it while the permit lives. This process dates each lease from when it *sent* the call
/// that set it, plus the lease time Redis says is left, so its idea of when the lease ends is
/// never later than Redis's; it declares the permit lost a safety margin before that end if no
/// renewal got through (see `semaphore_options`), or when Redis says it is lost. A process that
/// cannot renew (Redis unreachable, the process stalled or killed) loses its permits when the
/// lease lapses, so a dead process never blocks the fleet for longer than one lease. A permit
/// learns that it was lost through `async_wait_lost`, `lost_slot()` and `valid_for()`; its
/// `fencing_token()` is smaller than that of every later grant, so a resource that remembers the
/// largest token it saw can refuse a stale holder.
///
/// **Faults.** An acquire made while Redis is unreachable waits (bounded by its own timeout or
/// cancellation) and completes once Redis is back; one whose reply was lost with the link is sent
/// again with the same id, so it is never granted twice. A cancelled or timed-out acquire
/// completes at once; its remote waiter is removed, and a grant that raced it is given back. If
/// Redis loses the semaphore's state (evicted or deleted keys, a restart without persistence), the
/// holders of the lost state hear `error::state_lost`, and nothing is granted again before every
/// lease of the lost state could have lapsed. A server that may evict the semaphore's keys
/// (`maxmemory` with a policy other than `noeviction`) is refused: acquires fail with
/// `error::eviction_policy`. Under Sentinel without durable grants, so is a primary that would
/// write without its replicas (`min-replicas-to-write` or `min-replicas-max-lag` 0), with
/// `error::replica_policy`: a primary cut off by a partition must refuse the renewals of the
/// holders on its side (see "A partitioned primary" in docs/cluster/guarantees.md). A call refused with
/// `NOREPLICAS` did not run: an acquire, a resize or a renewal is sent again.
///
/// **Completion.** A handler is never invoked from inside an initiating function, `cancel`,
/// `close` or the destructor. It runs through its associated executor (by default the
/// connection's), as if by `boost::asio::post`.
///
/// **Thread safety.** Every member function may be called concurrently from any thread.
///
/// **Lifetime.** The connection must outlive the semaphore, and should outlive every permit made by
/// it. Where it cannot (a permit inside a completion handler that the context's shutdown destroys,
/// after the connection, which must go before its context), the permit's release is not sent and
/// its lease lapses on the server within one lease, as a dead process's does. While the semaphore
/// has pending acquires or one of its permits exists, its timer keeps the connection's execution
/// context busy.
///
/// The design, the guarantees and their limits (one Redis primary, failover, clocks, lost state,
/// choosing the lease), the errors and how to operate it are in the guide "Beyond one process"
/// (docs/cluster/index.md).
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

    /// Rebinds the semaphore to another executor type.
    ///
    /// @tparam OtherExecutor The executor type to rebind to.
    template <class OtherExecutor>
    struct rebind_executor
    {
        /// The semaphore type when rebound to the specified executor.
        using other = basic_semaphore<OtherExecutor>;
    };

    /// The connection the semaphore talks to Redis through.
    using connection_type = basic_connection<Executor>;

    /// The shortest lease: a renewal every third of it must still have time for a round trip.
    static constexpr std::chrono::milliseconds min_lease_duration{10};

    /// The longest lease, one year: the server's deadlines (its clock in milliseconds plus twice
    /// the lease) stay exact in the function library's arithmetic.
    static constexpr std::chrono::milliseconds max_lease_duration{std::chrono::hours(24 * 365)};

    /// The largest capacity, 2^52: the permits held plus those asked for stay exact in the function
    /// library's arithmetic.
    static constexpr std::uint64_t max_capacity = detail::semaphore_library::max_capacity;

    /// The permits of one grant, handed to the completion handler of an acquire: move-only,
    /// renewed while it lives, released by its destructor. See `basic_permit`.
    using permit = basic_permit<Executor>;

    /// Opens the semaphore `name` of `capacity` permits on `conn`'s server, with leases of
    /// `lease_duration` and the default safety margin. The first acquire declares the capacity in
    /// Redis, unless a resize stored one (`async_set_capacity`); an acquire with another capacity
    /// than the one in force fails with `error::capacity_mismatch`, unless this object learnt that
    /// capacity from a resize made since it first read it (or adopts whatever is in force: see
    /// `semaphore_options::adopt_capacity`). The constructor registers the semaphore's function
    /// library with the connection, which loads it at once and on every reconnect, subscribes to the
    /// semaphore's channel, and reads the capacity in force once the subscription is active.
    ///
    /// @param conn The connection; it must outlive the semaphore and its permits.
    /// @param name The semaphore's name, shared by every process that uses it; its keys are
    /// `asio_sync:{name}:...`. Any bytes but an empty string.
    /// @param capacity The most permits held at once across the fleet.
    /// @param lease_duration The lease of each permit and queued waiter, renewed every third of
    /// it; from `min_lease_duration` to `max_lease_duration`.
    /// @throws std::invalid_argument if `name` is empty, or `lease_duration` is out of range.
    basic_semaphore(connection_type& conn, std::string name, std::size_t capacity,
                    std::chrono::milliseconds lease_duration);

    /// Opens the semaphore `name` of `capacity` permits on `conn`'s server, with the leases of
    /// `options`; otherwise as the constructor above.
    ///
    /// @param conn The connection; it must outlive the semaphore and its permits.
    /// @param name The semaphore's name. Any bytes but an empty string.
    /// @param capacity The most permits held at once across the fleet.
    /// @param options The lease duration, the safety margin and whether to adopt the capacity in
    /// force.
    /// @throws std::invalid_argument if `name` is empty, `options.lease_duration` is out of range,
    /// or `options.safety_margin` is negative or more than half the lease.
    basic_semaphore(connection_type& conn, std::string name, std::size_t capacity,
                    const semaphore_options& options);

    /// Not copyable (nor movable).
    basic_semaphore(const basic_semaphore&) = delete;
    /// Not copy-assignable (nor move-assignable).
    basic_semaphore& operator=(const basic_semaphore&) = delete;

    /// Pending acquires complete with `boost::asio::error::operation_aborted` and leave the
    /// fleet-wide queue; live permits keep their leases renewed until they are released.
    ~basic_semaphore();

    /// Returns the executor of the connection: the default executor of completion handlers.
    const executor_type& get_executor() const noexcept { return executor_; }

    /// The capacity in force as this semaphore object last learnt it: the one it was constructed
    /// with, replaced by that of each resize it learns of (from the semaphore's channel, from a read
    /// of the capacity, from a refused acquire, or from its own `async_set_capacity`), or by the
    /// capacity in force when it adopts it (`semaphore_options::adopt_capacity`). An object whose
    /// capacity Redis refuses (`error::capacity_mismatch`) keeps reporting its own. `async_status`
    /// reads the capacity stored in Redis. Thread-safe.
    std::size_t capacity() const noexcept { return engine_->capacity_in_force(); }

    /// Gives up every pending acquire and resize of this semaphore object: each completes with
    /// `boost::asio::error::operation_aborted`, and each waiter is taken out of the fleet-wide queue
    /// (a grant that raced it is given back; a resize is not undone). Permits already granted are
    /// not affected, and later operations work as usual. Thread-safe; invokes no handler.
    void cancel();

    /// Closes this semaphore object, like `asio_sync::semaphore::close()`: every pending acquire
    /// and resize and every later one completes with `asio_sync::error::closed` (pending waiters
    /// leave the fleet-wide queue, a grant that raced them is given back, a resize is not undone).
    /// Permits already granted are not affected: they renew and release as before. Closing twice
    /// does nothing. Thread-safe; invokes no handler.
    void close();

    /// Starts an acquire of `n` permits, waiting in the fleet-wide queue.
    ///
    /// @par Completion signature
    /// `void(boost::system::error_code, permit)`. On success the permit holds `n` permits (none
    /// for `n == 0`); on error it holds nothing.
    ///
    /// @par Per-operation cancellation
    /// `boost::asio::cancellation_type::terminal`, `partial` and `total`, through the handler's
    /// associated cancellation slot: the acquire completes with `operation_aborted` at once and
    /// its remote waiter is released after its acquire on the same connection, so a grant that
    /// raced the cancellation is given back exactly once. A cancellation after the grant does
    /// nothing.
    ///
    /// @par Executor
    /// The handler is never invoked from within this function; it is submitted to its associated
    /// executor (default: `get_executor()`) as if by `boost::asio::post`.
    ///
    /// @par Errors
    /// - none: granted.
    /// - `asio_sync::error::too_many_permits`: `n` greater than the capacity in force (Redis refused
    ///   it; `n` above `max_capacity` is not sent), or a resize to a smaller capacity took the waiter
    ///   out of the fleet-wide queue.
    /// - `asio_sync::error::closed`: `close()` was called, or the connection was closed before the
    ///   acquire was decided (whether its call was unsent, in flight or queued in Redis; its remote
    ///   waiter, if any, expires with its lease).
    /// - `boost::asio::error::operation_aborted`: cancelled (any type, or by `cancel()`), or the
    ///   semaphore was destroyed while the acquire waited.
    /// - `error::eviction_policy`: the server may evict the semaphore's keys.
    /// - `error::replica_policy`: under Sentinel without durable grants, the primary does not refuse
    ///   writes without its replicas (`min-replicas-to-write` or `min-replicas-max-lag` is 0).
    /// - `error::capacity_mismatch`: Redis holds another capacity than this object's, which this
    ///   object may not take (see the constructor and `semaphore_options::adopt_capacity`); nothing
    ///   was changed.
    /// - `error::wrong_type`, `error::invalid_argument`,
    ///   `error::no_permission`, `error::read_only`, `error::out_of_memory`,
    ///   `error::cluster_redirect`, `error::auth_failed`, `error::server_error`: Redis refused the
    ///   call (see docs/cluster/errors.md).
    /// .
    /// A reply lost with the connection is not an error: the acquire is sent again with the same
    /// id, and is never granted twice. (A first send that a stuck proxy delivers after the acquire
    /// was released or given up runs as a new acquire that nobody renews: it lapses within one
    /// lease; see docs/cluster/guarantees.md.) While Redis is unreachable the acquire waits: bound it with
    /// `async_acquire_permit_for` or a cancellation.
    ///
    /// @par Thread safety
    /// May be called concurrently with any member function but the destructor.
    ///
    /// @par Object lifetimes
    /// The semaphore may be destroyed while the acquire waits, which then completes with
    /// `operation_aborted`; the connection must outlive the permit. The acquire waits in one
    /// object allocated with the handler's associated allocator.
    ///
    /// @param n The number of permits, at most the capacity in force.
    /// @param token The completion token.
    template <BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code, permit))
                  AcquireToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_acquire_permit(std::size_t n,
                              AcquireToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type))
    {
        return boost::asio::async_initiate<AcquireToken, void(boost::system::error_code, permit)>(
            initiate_async_acquire_permit(this), token, n, detail::acquire_mode::wait, no_timeout());
    }

    /// Starts an acquire of `n` permits that gives up with `asio_sync::error::timed_out` after
    /// `timeout`; otherwise as `async_acquire_permit`.
    ///
    /// @par Completion signature
    /// `void(boost::system::error_code, permit)`.
    ///
    /// @par Per-operation cancellation
    /// As `async_acquire_permit`; the timer is cancelled with the acquire.
    ///
    /// @par Executor
    /// The handler is never invoked from within this function; it is submitted to its associated
    /// executor (default: `get_executor()`) as if by `boost::asio::post`. The timer runs on
    /// `get_executor()`.
    ///
    /// @par Errors
    /// Those of `async_acquire_permit`, and `asio_sync::error::timed_out` (not granted in time;
    /// its remote waiter is removed), `boost::asio::error::no_memory` (the timer could not be
    /// started).
    ///
    /// @par Thread safety
    /// May be called concurrently with any member function but the destructor.
    ///
    /// @par Object lifetimes
    /// As `async_acquire_permit`; the timer lives in the acquire's object.
    ///
    /// @param n The number of permits, at most the capacity in force.
    /// @param timeout How long the acquire may wait.
    /// @param token The completion token.
    template <class Rep, class Period,
              BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code, permit))
                  AcquireToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_acquire_permit_for(std::size_t n, std::chrono::duration<Rep, Period> timeout,
                                  AcquireToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type))
    {
        return boost::asio::async_initiate<AcquireToken, void(boost::system::error_code, permit)>(
            initiate_async_acquire_permit(this), token, n, detail::acquire_mode::wait,
            std::optional<std::chrono::steady_clock::duration>(
                std::chrono::duration_cast<std::chrono::steady_clock::duration>(timeout)));
    }

    /// Starts an acquire of `n` permits that is granted if they are free and nobody waits, in one
    /// round trip; it never queues.
    ///
    /// @par Completion signature
    /// `void(boost::system::error_code, permit)`.
    ///
    /// @par Per-operation cancellation
    /// As `async_acquire_permit`.
    ///
    /// @par Executor
    /// The handler is never invoked from within this function; it is submitted to its associated
    /// executor (default: `get_executor()`) as if by `boost::asio::post`.
    ///
    /// @par Errors
    /// `boost::asio::error::would_block` when the permits are not free now, someone is queued, or
    /// the semaphore is in the quiet period that follows lost state; otherwise those of
    /// `async_acquire_permit`.
    ///
    /// @par Thread safety
    /// May be called concurrently with any member function but the destructor.
    ///
    /// @par Object lifetimes
    /// As `async_acquire_permit`.
    ///
    /// @param n The number of permits, at most the capacity in force.
    /// @param token The completion token.
    template <BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code, permit))
                  AcquireToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_try_acquire_permit(std::size_t n,
                                  AcquireToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type))
    {
        return boost::asio::async_initiate<AcquireToken, void(boost::system::error_code, permit)>(
            initiate_async_acquire_permit(this), token, n, detail::acquire_mode::try_once, no_timeout());
    }

    /// Starts a change of the semaphore's capacity, for the whole fleet, to `n` permits, and waits
    /// for the permits held to come down to it: `async_set_capacity(n,
    /// set_capacity_mode::wait_for_holders, token)`.
    ///
    /// @par Completion signature
    /// `void(boost::system::error_code)`.
    ///
    /// @par Per-operation cancellation
    /// As the overload below.
    ///
    /// @par Executor
    /// The handler is never invoked from within this function; it is submitted to its associated
    /// executor (default: `get_executor()`) as if by `boost::asio::post`.
    ///
    /// @par Errors
    /// As the overload below.
    ///
    /// @par Thread safety
    /// May be called concurrently with any member function but the destructor.
    ///
    /// @par Object lifetimes
    /// As the overload below.
    ///
    /// @param n The new capacity, from 1 to `max_capacity`.
    /// @param token The completion token.
    template <BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code))
                  ResizeToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_set_capacity(std::size_t n,
                            ResizeToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type))
    {
        return boost::asio::async_initiate<ResizeToken, void(boost::system::error_code)>(
            initiate_async_set_capacity(this), token, n, set_capacity_mode::wait_for_holders);
    }

    /// Starts a change of the semaphore's capacity, for the whole fleet, to `n` permits.
    ///
    /// The capacity is stored in Redis (the resize stored last wins) and is in force for every
    /// process from that moment: nothing is granted beyond it. A larger capacity serves the
    /// fleet-wide queue at once, strictly FIFO (the head first; the first waiter that does not fit
    /// stops it). A smaller one takes no permit from its holder: while the permits held exceed it,
    /// the shrink is pending and nothing is granted. Waiters that ask for more than it leave the
    /// queue, and their acquires fail with `asio_sync::error::too_many_permits` in whichever process
    /// they wait. Every process learns the new capacity (`capacity()`), from the semaphore's channel
    /// or, should it miss the message, from its next read of the capacity; an acquire never fails
    /// because its process had not learnt it yet. The resize outlives the semaphore's state in
    /// Redis when that is lost (see docs/cluster/resizing.md).
    ///
    /// With `set_capacity_mode::wait_for_holders` the operation completes once the permits held are
    /// at most the new capacity (at once for a larger one); with `set_capacity_mode::at_once`, as
    /// soon as the resize is stored. A shrink that a later resize replaces before the permits held
    /// came down to it completes, with success, once a capacity in force since it was stored is no
    /// longer exceeded: at once if the later resize is large enough, else with the later shrink.
    ///
    /// @par Completion signature
    /// `void(boost::system::error_code)`.
    ///
    /// @par Per-operation cancellation
    /// `boost::asio::cancellation_type::terminal` and `partial`, through the handler's associated
    /// cancellation slot: the operation completes with `operation_aborted` at once. The resize is
    /// not undone: if its call reached Redis, it is stored. `total` is not supported.
    ///
    /// @par Executor
    /// The handler is never invoked from within this function; it is submitted to its associated
    /// executor (default: `get_executor()`) as if by `boost::asio::post`.
    ///
    /// @par Errors
    /// - none: stored, and in `wait_for_holders` mode the permits held came down to it (or to a
    ///   later resize that replaced it).
    /// - `error::invalid_argument`: `n` is 0 or above `max_capacity`; nothing was sent.
    /// - `error::connection_lost`: the link dropped after the resize was sent, and another resize was
    ///   stored since, so whether this one ran before it cannot be known (read `async_status`). A
    ///   resize whose reply was lost is otherwise sent again, and stored once.
    /// - `error::state_lost`: waiting for the holders, the resize was lost by Redis (a failover to
    ///   a replica that lacked it): an older capacity is in force again (see "Resizing" in
    ///   docs/cluster/resizing.md).
    /// - `asio_sync::error::closed`: `close()` was called, or the connection was closed before the
    ///   operation completed (the resize may have been stored).
    /// - `boost::asio::error::operation_aborted`: cancelled (terminal, partial, or by `cancel()`), or
    ///   the semaphore was destroyed while the operation waited; the resize may have been stored.
    /// - `error::wrong_type`, `error::no_permission`, `error::read_only`, `error::out_of_memory`,
    ///   `error::cluster_redirect`, `error::auth_failed`, `error::server_error`: Redis refused the
    ///   call (see docs/cluster/errors.md); nothing was stored.
    /// .
    /// While Redis is unreachable the operation waits: bound it with a cancellation.
    ///
    /// @par Thread safety
    /// May be called concurrently with any member function but the destructor.
    ///
    /// @par Object lifetimes
    /// The semaphore may be destroyed while the operation waits, which then completes with
    /// `operation_aborted`. The operation waits in one object allocated with the handler's
    /// associated allocator.
    ///
    /// @param n The new capacity, from 1 to `max_capacity`.
    /// @param mode When the operation completes.
    /// @param token The completion token.
    template <BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code))
                  ResizeToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_set_capacity(std::size_t n, set_capacity_mode mode,
                            ResizeToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type))
    {
        return boost::asio::async_initiate<ResizeToken, void(boost::system::error_code)>(
            initiate_async_set_capacity(this), token, n, mode);
    }

    /// Starts reading the semaphore's usage across the fleet from Redis, in one read-only round
    /// trip (`FCALL_RO`, so a replica may answer it). An observer: the numbers may have changed by
    /// the time the handler runs.
    ///
    /// @par Completion signature
    /// `void(boost::system::error_code, semaphore_status)`.
    ///
    /// @par Per-operation cancellation
    /// As `basic_connection::async_execute`: terminal and partial complete it with
    /// `operation_aborted` at once (the read may still run in Redis); total only while it is not
    /// yet written.
    ///
    /// @par Executor
    /// The handler is never invoked from within this function; it is submitted to its associated
    /// executor (default: `get_executor()`) as if by `boost::asio::post`.
    ///
    /// @par Errors
    /// Those of `basic_connection::async_execute` (`error::connection_lost` when the link dropped
    /// after the read was written: it is not sent again), and the Redis errors of
    /// `async_acquire_permit` (`error::server_error` for a reply the library would not send).
    ///
    /// @par Thread safety
    /// May be called concurrently with any member function but the destructor.
    ///
    /// @par Object lifetimes
    /// The semaphore may be destroyed while the read is pending; the connection may not. The
    /// handler may destroy the semaphore, the connection and their execution context: the
    /// operation uses none of them once the handler is called.
    ///
    /// @param token The completion token.
    template <BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code, semaphore_status))
                  StatusToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_status(StatusToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type))
    {
        return boost::asio::async_initiate<StatusToken, void(boost::system::error_code, semaphore_status)>(
            initiate_async_status(this), token);
    }

private:
    friend detail::access;

    using no_timeout = std::optional<std::chrono::steady_clock::duration>;

    class initiate_async_acquire_permit;
    class initiate_async_set_capacity;
    class initiate_async_status;
    struct status_read;

    executor_type executor_;
    connection_type* connection_; // for status reads
    std::shared_ptr<engine_type> engine_;
};

/// The fleet-wide semaphore on `boost::asio::any_io_executor`.
using semaphore = basic_semaphore<>;

} // namespace asio_sync::redis

#include <asio_sync/redis/impl/semaphore.hpp>

#endif // ASIO_SYNC_REDIS_SEMAPHORE_HPP
