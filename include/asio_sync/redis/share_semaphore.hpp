// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_REDIS_SHARE_SEMAPHORE_HPP
#define ASIO_SYNC_REDIS_SHARE_SEMAPHORE_HPP

/// \file
/// The fleet-wide limit served in-process from a leased share: asio_sync::redis::basic_share_semaphore,
/// the asio_sync::redis::share_semaphore alias and asio_sync::redis::share_state.

#include <asio_sync/call_site.hpp>
#include <asio_sync/redis/connection.hpp>
#include <asio_sync/redis/detail/semaphore_link.hpp>
#include <asio_sync/redis/detail/share_engine.hpp>
#include <asio_sync/redis/share_options.hpp>
#include <asio_sync/semaphore.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/system/error_code.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>

namespace asio_sync::redis {

/// A fleet-wide limit whose acquires are served in this process, from a share of the capacity
/// leased from Redis.
///
/// Every process that opens the same name holds a share of the fleet's capacity and serves its
/// own acquires from a local `asio_sync::basic_semaphore` whose capacity is that share: an acquire
/// that fits the share never touches the network, and costs what a local acquire costs. Each
/// process refreshes its share every `share_options::refresh_interval`, reporting its demand (the
/// permits in use here plus those its queued acquires miss); one Redis function divides the
/// capacity among the live processes, max-min fair (a process that wants less than an equal part
/// gets what it wants; the others split the rest within one permit of each other). A share grows
/// only from capacity that is free in Redis and shrinks through the local semaphore's
/// `reduce_permits` with debt: the holders keep their permits, and Redis counts the permits as
/// given back only once this process reports them returned. So at no instant do the shares exceed
/// the capacity.
///
/// **The interface of a local semaphore.** `async_acquire`, the timed and permit forms,
/// `try_acquire`, `release`, `cancel` and `close` behave as `asio_sync::basic_semaphore`'s, within
/// this process: FIFO among this process' acquires, per-operation cancellation, every completion
/// token, no allocation beyond the handler's for a queued acquire. Across processes there is no
/// queue: fairness is the division's. An acquire of more permits than the fleet's capacity (as
/// Redis last answered it; before the first answer, more than `max_capacity`) fails with
/// `asio_sync::error::too_many_permits`; one larger than the share queues, raises the demand,
/// and completes once the share has grown enough (it waits while the other processes' demand keeps
/// this one's part below it). Acquires made before the first share arrives queue the same way.
/// `try_acquire` never calls Redis: it fails when the share is spent, even if the fleet has capacity
/// free (the next refresh may grow the share, if an acquire waits for it). When the share shrinks,
/// what this process' queued acquires have collected pays the shrink first: permits that no holder
/// uses go back to the fleet without waiting for those acquires.
///
/// **The lease.** The share is valid until the send time of the last refresh answered plus the
/// lease minus `share_options::safety_margin`, never later than Redis' own end of it. If that
/// passes without a new answer (Redis unreachable, this process paused), the share is lost: the
/// local capacity drops to 0 (the holders keep their permits as a debt) and `async_wait_lost`
/// completes, before Redis can give that capacity to another process. A timer on the connection's
/// executor declares it, and every acquire, try and `release` checks the lease first, so that a
/// busy executor does not delay it for them; a `permit` given back while the executor is blocked
/// past the lease may still pass its permits to a queued acquire before the loss is declared (a
/// blocked executor is a paused process: see the faults in docs/cluster/shares.md). A process
/// killed gives its share back when its lease ends in Redis. Closing the connection closes the
/// object. Each object is one participant of the division, with its own id, even beside another
/// of the same name on the same connection.
///
/// **Lifetime.** The connection must outlive the object; the object must outlive its permits and
/// its holders' releases. The destructor closes it.
///
/// The design, the division, the guarantees and their limits: docs/cluster/shares.md.
///
/// @tparam Executor The connection's executor type: the default executor of completion handlers.
template <class Executor = boost::asio::any_io_executor>
class basic_share_semaphore
{
    using engine_type = detail::share_engine<Executor>;
    using local_type = asio_sync::basic_semaphore<Executor>;

public:
    /// The executor type of the connection.
    using executor_type = Executor;

    /// The connection the share is leased through.
    using connection_type = basic_connection<Executor>;

    /// The permits of one acquire, given back when destroyed: the local semaphore's permit.
    using permit = typename local_type::permit;

    /// The shortest lease: a refresh every third of it must still have time for a round trip.
    static constexpr std::chrono::milliseconds min_lease_duration{40};

    /// The longest lease, one year, as for `basic_semaphore`.
    static constexpr std::chrono::milliseconds max_lease_duration{std::chrono::hours(24 * 365)};

    /// The largest capacity, 2^52, as for `basic_semaphore`.
    static constexpr std::uint64_t max_capacity = detail::share_library::max_capacity;

    /// Opens the limit `name` of `capacity` permits across the fleet on `conn`'s server, and asks
    /// for a first share at once. The capacity stored in Redis (declared by the first process, or
    /// stored by `async_set_capacity`) is the one in force; `capacity` is only declared when Redis
    /// holds none.
    ///
    /// @param conn The connection; it must outlive the object.
    /// @param name The limit's name, shared by every process that uses it; its key is
    /// `asio_sync:{name}:share` and its channel `asio_sync:{name}:shares`. Any bytes but an empty
    /// string.
    /// @param capacity The most permits held at once across the fleet, from 1 to `max_capacity`.
    /// @param options The lease, the safety margin and the refresh interval.
    /// @throws std::invalid_argument if `name` is empty, `capacity` is out of range, or an option
    /// is (see `share_options`).
    basic_share_semaphore(connection_type& conn, std::string name, std::size_t capacity,
                          const share_options& options = share_options())
        : engine_(std::make_shared<engine_type>(
              std::make_shared<detail::connection_semaphore_link<Executor>>(conn), conn.get_executor(), name,
              checked(capacity), detail::share_settings(options, min_lease_duration, max_lease_duration)))
    {
        engine_->start();
    }

    /// Not copyable (nor movable).
    basic_share_semaphore(const basic_share_semaphore&) = delete;
    /// Not copy-assignable (nor move-assignable).
    basic_share_semaphore& operator=(const basic_share_semaphore&) = delete;

    /// Closes the object (see `close()`) after removing the listener, which is not called from then
    /// on: a call running on another thread ends first (see `set_listener`).
    ~basic_share_semaphore()
    {
        engine_->set_listener(nullptr);
        engine_->close();
    }

    /// Returns the executor of the connection.
    const executor_type& get_executor() const noexcept { return engine_->get_executor(); }

    /// Starts an acquire of `n` permits from the share: `asio_sync::basic_semaphore::async_acquire`
    /// of the local semaphore, but `n` above `capacity()` fails with
    /// `asio_sync::error::too_many_permits` and `n` above the share queues and raises the demand.
    ///
    /// \ecsig
    /// \asyncwait
    /// @param n The number of permits to acquire.
    /// \waitparams
    template <BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code))
                  AcquireToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_acquire(std::size_t n, AcquireToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type),
                       call_site where = call_site())
    {
        return local().async_acquire(admit(n), std::forward<AcquireToken>(token), where);
    }

    /// As `async_acquire`, giving up after `timeout` with `asio_sync::error::timed_out`.
    ///
    /// \ecsig
    /// \timedwait
    /// @param n The number of permits to acquire.
    /// \forparams
    /// \waitparams
    template <class Rep, class Period,
              BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code))
                  AcquireToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_acquire_for(std::size_t n, const std::chrono::duration<Rep, Period>& timeout,
                           AcquireToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type),
                           call_site where = call_site())
    {
        return local().async_acquire_for(admit(n), timeout, std::forward<AcquireToken>(token), where);
    }

    /// As `async_acquire`, giving up at `expiry` with `asio_sync::error::timed_out`.
    ///
    /// \ecsig
    /// \timedwait
    /// @param n The number of permits to acquire.
    /// \untilparams
    /// \waitparams
    template <class Clock, class Duration,
              BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code))
                  AcquireToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_acquire_until(std::size_t n, const std::chrono::time_point<Clock, Duration>& expiry,
                             AcquireToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type),
                             call_site where = call_site())
    {
        return local().async_acquire_until(admit(n), expiry, std::forward<AcquireToken>(token), where);
    }

    /// As `async_acquire`, completing with a `permit` that gives the permits back when destroyed.
    ///
    /// \guardsig{permit}
    /// \asyncwait
    /// @param n The number of permits to acquire.
    /// \waitparams
    template <BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code, permit))
                  AcquireToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_acquire_permit(std::size_t n,
                              AcquireToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type),
                              call_site where = call_site())
    {
        return local().async_acquire_permit(admit(n), std::forward<AcquireToken>(token), where);
    }

    /// As `async_acquire_permit`, giving up after `timeout` with `asio_sync::error::timed_out`.
    ///
    /// \guardsig{permit}
    /// \timedwait
    /// @param n The number of permits to acquire.
    /// \forparams
    /// \waitparams
    template <class Rep, class Period,
              BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code, permit))
                  AcquireToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_acquire_permit_for(std::size_t n, const std::chrono::duration<Rep, Period>& timeout,
                                  AcquireToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type),
                                  call_site where = call_site())
    {
        return local().async_acquire_permit_for(admit(n), timeout, std::forward<AcquireToken>(token), where);
    }

    /// Takes `n` permits from the share if they are there now, without calling Redis.
    ///
    /// @param n The number of permits to take.
    /// @returns true if the caller now holds `n` permits (give them back with `release`).
    bool try_acquire(std::size_t n = 1)
    {
        engine_->check_lease();
        return n <= engine_->admissible() && local().try_acquire(n);
    }

    /// Takes `n` permits from the share as a `permit` if they are there now, without calling Redis.
    ///
    /// @param n The number of permits to take.
    /// @returns a permit holding `n` permits, or `std::nullopt` with nothing changed.
    std::optional<permit> try_acquire_permit(std::size_t n = 1)
    {
        engine_->check_lease();
        if (n > engine_->admissible())
            return std::nullopt;
        return local().try_acquire_permit(n);
    }

    /// Gives back `n` permits taken by `async_acquire` or `try_acquire`: to this process' oldest
    /// waiters, to a shrink's debt, or to the share.
    ///
    /// @param n The number of permits to give back.
    void release(std::size_t n = 1)
    {
        engine_->check_lease();
        local().release(n);
    }

    /// Aborts this process' queued acquires with `boost::asio::error::operation_aborted`.
    ///
    /// @returns the number of acquires aborted.
    std::size_t cancel() { return local().cancel(); }

    /// Closes the object for good: queued acquires complete with `asio_sync::error::closed`, later
    /// ones too; the share drops to 0 at once (the holders keep their permits) and the demand to 0;
    /// once the holders have given their permits back, the process leaves the division and its
    /// part of the capacity goes to the others (pub/sub tells them).
    void close() { engine_->close(); }

    /// Returns true once `close()` has been called.
    bool is_closed() const noexcept { return engine_->local().is_closed(); }

    /// The fleet-wide capacity: the one Redis last answered, the declared one before. Thread-safe.
    std::size_t capacity() const noexcept { return engine_->capacity(); }

    /// The share, the target, the demand, the capacity and the fence, read together. Thread-safe.
    share_state state() const { return engine_->state(); }

    /// How long the share stays valid without another refresh; zero while there is none.
    std::chrono::steady_clock::duration valid_for() const { return engine_->valid_for(); }

    /// Registers `listener`, called after the share, the target, the demand or the capacity
    /// changes, posted to the connection's executor (never inside a call of this object, never
    /// under a lock), with the state as it is when it runs: changes close together may be reported
    /// by one call. It replaces the previous one; the destructor removes it. It must not throw.
    ///
    /// Once this returns (or the destructor), the previous listener is neither called nor running,
    /// so what it captured may be destroyed: a call running on another thread is waited for, as
    /// `std::stop_callback`'s destructor waits for its callback. Called from inside the listener,
    /// it does not wait for that call.
    ///
    /// @param listener The function to call; an empty one removes the listener.
    void set_listener(std::function<void(const share_state&)> listener)
    {
        engine_->set_listener(std::move(listener));
    }

    /// Starts a wait that completes when the share is lost: its lease ended without a refresh
    /// (Redis unreachable, this process paused past it), or Redis no longer knew it, or knew less
    /// of it than this process used (Redis went back to an earlier state). From then on the
    /// holders of this process' permits are no longer counted in Redis: they should stop the work
    /// the limit protects. It completes at once while no share is valid.
    ///
    /// \ecsig
    /// \asyncwait
    /// @param token The completion token.
    template <BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code))
                  WaitToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_wait_lost(WaitToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type))
    {
        return engine_->lost_event().async_wait(std::forward<WaitToken>(token));
    }

    /// Stores `n` as the fleet-wide capacity in Redis (last writer wins). It completes once stored;
    /// every process then refreshes (Redis publishes the new division), and shares above their new
    /// part shrink as their holders give back: a lower capacity is in force once they have.
    ///
    /// \ecsig
    /// @par Errors
    /// Those of `basic_connection::async_execute`, and `error::server_error` for a refused call.
    /// @param n The new capacity, from 1 to `max_capacity`.
    /// @param token The completion token.
    /// @throws std::invalid_argument if `n` is out of range; nothing is sent.
    template <BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code))
                  ResizeToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_set_capacity(std::size_t n,
                            ResizeToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type))
    {
        checked(n);
        return boost::asio::async_initiate<ResizeToken, void(boost::system::error_code)>(
            [engine = engine_](auto handler, std::size_t to) {
                engine->set_capacity(to, std::move(handler));
            },
            token, n);
    }

private:
    static std::size_t checked(std::size_t capacity)
    {
        if (capacity == 0 || capacity > max_capacity)
            boost::throw_exception(
                std::invalid_argument("asio_sync::redis::basic_share_semaphore: capacity out of range"));
        return capacity;
    }

    local_type& local() const noexcept { return engine_->local(); }

    // An acquire above the fleet's capacity asks the local semaphore for more than it can count, so
    // that it fails with too_many_permits through the local semaphore's own path; one that may
    // queue asks for a new sample of the demand.
    std::size_t admit(std::size_t n) const
    {
        engine_->check_lease();
        if (n > engine_->admissible())
            return local_type::max_permits + 1;
        if (local().available() < n)
            engine_->poke();
        return n;
    }

    std::shared_ptr<engine_type> engine_;
};

/// A share semaphore on the default executor type.
using share_semaphore = basic_share_semaphore<>;

} // namespace asio_sync::redis

#endif // ASIO_SYNC_REDIS_SHARE_SEMAPHORE_HPP
