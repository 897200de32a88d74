// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_ADAPTIVE_LIMITER_HPP
#define ASIO_SYNC_ADAPTIVE_LIMITER_HPP

/// @file
/// The adaptive concurrency limiter: asio_sync::basic_adaptive_limiter, its permits
/// (asio_sync::basic_adaptive_limiter::permit) and the asio_sync::adaptive_limiter alias.

#include <asio_sync/call_site.hpp>
#include <asio_sync/detail/access.hpp>
#include <asio_sync/detail/deadline.hpp>
#include <asio_sync/detail/limit_algorithm.hpp>
#include <asio_sync/limit_sample.hpp>
#include <asio_sync/semaphore.hpp>
#include <asio_sync/wait_observer.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/execution_context.hpp>
#include <boost/system/error_code.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>

namespace asio_sync {

/// A concurrency limit that finds itself: a semaphore whose permits are the current limit, moved
/// by a limit algorithm from the outcomes of the work it admits.
///
/// Work enters with a `permit` (`async_acquire`, `try_acquire`) and, when done, reports through it
/// how it went: `success()` (its latency, from the grant, is a sample), `dropped()` (an overload
/// signal: a timeout, a refused request) or `ignore()` (no signal). A permit destroyed without an
/// outcome counts as ignored. A timed-out or cancelled acquire held nothing and is not a sample.
/// The algorithm (asio_sync::vegas_limit, asio_sync::gradient2_limit, asio_sync::aimd_limit, any of
/// them behind an asio_sync::windowed_limit, or a type with the members asio_sync::limit_sample
/// lists) runs on that return path, one return at a time under a small internal lock, and the limit
/// follows it through the semaphore's `add_permits` and `reduce_permits`: a lower limit is a debt
/// that returning permits pay, so holders are never disturbed. Acquires never run the algorithm;
/// they cost a plain semaphore acquire and one `steady_clock::now()`.
///
/// An acquire of `n` permits: more than `max_limit()` fails at once with
/// `asio_sync::error::too_many_permits`; more than the current limit but within `max_limit()`
/// queues, in FIFO order, until the limit has grown to `n` and as many permits have come back.
/// The algorithms do not grow a limit that the work in flight does not use, so such an acquire
/// may wait for good unless other work keeps the limit up: give it a deadline (`async_acquire_for`).
///
/// Its waits keep the contract of \ref async_waits (every completion token, `_for` and `_until`,
/// per-operation cancellation, FIFO, one allocation per queued acquire). See
/// [Adaptive concurrency limits](adaptive.md) for the algorithms and their failure modes.
///
/// **Thread safety.** Every member function may be called concurrently from any thread, except
/// `set_listener`, which must be called before any permit is granted. Distinct permits may be
/// returned concurrently.
///
/// **Not copyable, not movable:** permits refer to the limiter by address.
///
/// @tparam Executor The I/O executor: the default executor for completion handlers and of the
/// timers of timed acquires.
template <class Executor = boost::asio::any_io_executor>
class basic_adaptive_limiter
{
public:
    /// The type of the executor associated with the limiter.
    using executor_type = Executor;

    /// Rebinds the limiter to another executor type.
    ///
    /// @tparam OtherExecutor The executor type to rebind to.
    template <class OtherExecutor>
    struct rebind_executor
    {
        /// The limiter type when rebound to the specified executor.
        using other = basic_adaptive_limiter<OtherExecutor>;
    };

    /// Called on each change of the limit with the old limit, the new one and what moved it.
    ///
    /// It runs on the thread that returned the permit, after the limit has changed, under no
    /// lock; when permits return on several threads, calls may overlap or arrive out of order,
    /// but each one's old and new values are exact. It must not throw.
    using limit_listener =
        std::function<void(std::size_t old_limit, std::size_t new_limit, limit_reason reason)>;

    class permit;

    /// Constructs a limiter whose limit `algorithm` moves, starting at `algorithm.limit()`.
    ///
    /// \ctorex
    /// @tparam LimitAlgorithm A limit algorithm (see asio_sync::limit_sample).
    /// @param algorithm The algorithm, which the limiter then owns.
    template <class LimitAlgorithm>
    basic_adaptive_limiter(const executor_type& ex, LimitAlgorithm algorithm)
        : algorithm_(detail::make_limit_algorithm(std::move(algorithm))), semaphore_(ex, algorithm_->limit()),
          limit_(algorithm_->limit())
    {
        detail::access::entry(semaphore_).names = {"adaptive_limiter", "async_acquire", this};
    }

    /// Constructs a limiter that uses the context's executor.
    ///
    /// \ctorctx
    /// @tparam LimitAlgorithm A limit algorithm (see asio_sync::limit_sample).
    /// @param algorithm The algorithm, which the limiter then owns.
    template <
        class ExecutionContext, class LimitAlgorithm,
        std::enable_if_t<std::is_convertible_v<ExecutionContext&, boost::asio::execution_context&>, int> = 0>
    basic_adaptive_limiter(ExecutionContext& ctx, LimitAlgorithm algorithm)
        : basic_adaptive_limiter(executor_type(ctx.get_executor()), std::move(algorithm))
    {
    }

    /// Not copyable (nor movable): permits refer to the limiter by address.
    basic_adaptive_limiter(const basic_adaptive_limiter&) = delete;
    /// Not copy-assignable (nor move-assignable).
    basic_adaptive_limiter& operator=(const basic_adaptive_limiter&) = delete;

    /// Destroys the limiter: queued acquires complete with `boost::asio::error::operation_aborted`
    /// (posted). No permit may outlive the limiter.
    ~basic_adaptive_limiter() = default;

    /// Returns the executor associated with the limiter.
    const executor_type& get_executor() const noexcept { return semaphore_.get_executor(); }

    /// Starts an asynchronous acquire of `n` permits, which completes with a `permit` holding
    /// them.
    ///
    /// \guardsig{permit}
    /// @par Errors
    /// - `asio_sync::error::too_many_permits`: `n > max_limit()`, at once; nothing was queued.
    /// - `boost::asio::error::operation_aborted`: cancellation, `cancel()`, or destruction.
    /// .
    /// An acquire of more than the current limit, within `max_limit()`, waits for the limit to
    /// grow (see the class). `n == 0` succeeds at once with an empty permit.
    /// \asyncwait
    /// @param n The number of permits to acquire.
    /// \waitparams
    template <BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code, permit))
                  AcquireToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_acquire(std::size_t n, AcquireToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type),
                       call_site where = call_site())
    {
        return acquire_until(n, std::forward<AcquireToken>(token), detail::no_deadline(), where);
    }

    /// Starts an asynchronous acquire of one permit: `async_acquire(1, token)`.
    ///
    /// \guardsig{permit}
    /// \asyncwait
    /// \waitparams
    template <BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code, permit))
                  AcquireToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_acquire(AcquireToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type),
                       call_site where = call_site())
    {
        return async_acquire(1, std::forward<AcquireToken>(token), where);
    }

    /// Starts `async_acquire(n, token)` that gives up after `timeout`. A timed-out acquire is not
    /// a sample.
    ///
    /// \guardsig{permit}
    /// \timedwait
    /// @param n The number of permits to acquire.
    /// \forparams
    /// \waitparams
    template <class Rep, class Period,
              BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code, permit))
                  AcquireToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_acquire_for(std::size_t n, const std::chrono::duration<Rep, Period>& timeout,
                           AcquireToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type),
                           call_site where = call_site())
    {
        return acquire_until(n, std::forward<AcquireToken>(token), detail::deadline_after(timeout), where);
    }

    /// Starts `async_acquire(n, token)` that gives up at `expiry`. A timed-out acquire is not a
    /// sample.
    ///
    /// \guardsig{permit}
    /// \timedwait
    /// @param n The number of permits to acquire.
    /// \untilparams
    /// \waitparams
    template <class Clock, class Duration,
              BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code, permit))
                  AcquireToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_acquire_until(std::size_t n, const std::chrono::time_point<Clock, Duration>& expiry,
                             AcquireToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type),
                             call_site where = call_site())
    {
        return acquire_until(n, std::forward<AcquireToken>(token), detail::deadline_at(expiry), where);
    }

    /// Takes `n` permits if that can be done at once: fails when fewer than `n` are free, when
    /// any acquire is queued, or when a lowered limit's debt is still open (`n == 0` succeeds
    /// then too, with a permit holding nothing, as the semaphore's `try_acquire(0)`). Lock-free.
    ///
    /// @param n The number of permits to take.
    /// @returns a permit holding `n` permits, or `std::nullopt` with nothing changed.
    std::optional<permit> try_acquire(std::size_t n = 1);

    /// Returns the current limit: the permits in circulation once every lowering is paid. A
    /// snapshot.
    std::size_t limit() const noexcept { return limit_.load(std::memory_order_relaxed); }

    /// Returns the algorithm's floor.
    std::size_t min_limit() const noexcept { return algorithm_->min_limit(); }

    /// Returns the algorithm's ceiling: acquires of more permits fail at once.
    std::size_t max_limit() const noexcept { return algorithm_->max_limit(); }

    /// Returns the permits free now (0 while anyone waits or a lowering is unpaid). A snapshot.
    std::size_t available() const noexcept { return semaphore_.available(); }

    /// Returns the number of acquires queued now. A snapshot.
    std::size_t waiting() const noexcept { return semaphore_.waiting(); }

    /// Sets the function called on each change of the limit (see `limit_listener`), or removes
    /// it (an empty function). Not thread-safe: call it before any permit is granted.
    ///
    /// @param listener The listener.
    void set_listener(limit_listener listener) { listener_ = std::move(listener); }

    /// \setobserver
    void set_observer(wait_observer* observer) noexcept { semaphore_.set_observer(observer); }

    /// Aborts every queued acquire with `boost::asio::error::operation_aborted` (posted, oldest
    /// first). The limiter stays usable.
    ///
    /// @returns the number of acquires aborted.
    std::size_t cancel() { return semaphore_.cancel(); }

private:
    friend detail::access;

    // The grant of an acquire: a permit made when the acquire is granted, which starts the clock
    // of its latency.
    struct permit_grant
    {
        static constexpr bool to_permit = true;

        basic_adaptive_limiter* limiter;
        std::size_t n;

        std::tuple<boost::system::error_code, permit> operator()(boost::system::error_code ec) const;

        // The permit of an undelivered completion has given the permits back (as ignored).
        void undelivered(std::size_t) const noexcept {}
    };

    template <class Token, class Deadline>
    auto acquire_until(std::size_t n, Token&& token, Deadline expiry, call_site where);

    std::size_t in_flight_at_grant() const noexcept;

    void give_back(std::size_t n, const limit_sample* sample) noexcept;

    std::unique_ptr<detail::limit_algorithm> algorithm_;
    basic_semaphore<Executor> semaphore_;
    std::atomic<std::size_t> limit_;
    std::mutex sample_mutex_;
    limit_listener listener_;
};

/// Permits of a `basic_adaptive_limiter`, which report the outcome of the work they admitted when
/// they give the permits back.
///
/// The clock of the latency starts when the acquire is granted (`std::chrono::steady_clock`).
/// Each outcome (`success`, `dropped`, `ignore`) gives every permit back; a permit destroyed
/// while still holding permits counts as `ignore()`, so does one whose acquire's handler was
/// destroyed without being invoked. Move-only; a moved-from permit holds nothing.
///
/// **Thread safety:** distinct permits may be used concurrently; one permit object must not be
/// used by two threads at once.
template <class Executor>
class basic_adaptive_limiter<Executor>::permit
{
public:
    /// Takes over what `other` holds; `other` then holds nothing.
    ///
    /// @param other The permit to take over.
    permit(permit&& other) noexcept
        : limiter_(other.limiter_), count_(std::exchange(other.count_, 0)), in_flight_(other.in_flight_),
          granted_(other.granted_)
    {
    }

    /// Ignores what this permit holds (as `ignore()`), then takes over what `other` holds;
    /// `other` then holds nothing. Self-assignment does nothing.
    ///
    /// @param other The permit to take over.
    /// @returns `*this`.
    permit& operator=(permit&& other) noexcept
    {
        if (this != &other)
        {
            ignore();
            limiter_ = other.limiter_;
            count_ = std::exchange(other.count_, 0);
            in_flight_ = other.in_flight_;
            granted_ = other.granted_;
        }
        return *this;
    }

    /// Not copyable.
    permit(const permit&) = delete;
    /// Not copy-assignable.
    permit& operator=(const permit&) = delete;

    /// Gives back what the permit holds, as `ignore()`.
    ~permit() { ignore(); }

    /// Returns the number of permits held.
    std::size_t count() const noexcept { return count_; }

    /// Returns true if any permit is held.
    explicit operator bool() const noexcept { return count_ != 0; }

    /// Returns when the acquire was granted.
    std::chrono::steady_clock::time_point granted_at() const noexcept { return granted_; }

    /// Reports that the work succeeded and gives the permits back: the time since the grant is a
    /// latency sample. Does nothing if the permit holds nothing.
    void success() noexcept { finish(std::chrono::steady_clock::now() - granted_, false); }

    /// Reports that the work succeeded with a latency the caller measured (say, without the time
    /// a reply spent in the network, or on a clock of its own), and gives the permits back. Does
    /// nothing if the permit holds nothing.
    ///
    /// @param latency The latency of the work.
    void success(std::chrono::nanoseconds latency) noexcept { finish(latency, false); }

    /// Reports that the work was dropped (a timeout, a refused request: an overload signal) and
    /// gives the permits back. Does nothing if the permit holds nothing.
    void dropped() noexcept { finish(std::chrono::steady_clock::now() - granted_, true); }

    /// Gives the permits back without a sample: the outcome says nothing of the load (the
    /// client went away, the request was invalid). Does nothing if the permit holds nothing.
    void ignore() noexcept
    {
        if (count_ != 0)
            limiter_->give_back(std::exchange(count_, 0), nullptr);
    }

private:
    friend detail::access;

    permit(basic_adaptive_limiter* owner, std::size_t n, std::size_t in_flight) noexcept
        : limiter_(owner), count_(n), in_flight_(in_flight),
          granted_(n != 0 ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point())
    {
    }

    void finish(std::chrono::nanoseconds latency, bool dropped) noexcept
    {
        if (count_ == 0)
            return;
        const limit_sample sample{latency, in_flight_, dropped};
        limiter_->give_back(std::exchange(count_, 0), &sample);
    }

    basic_adaptive_limiter* limiter_;
    std::size_t count_;
    std::size_t in_flight_;
    std::chrono::steady_clock::time_point granted_;
};

/// An adaptive limiter with the default executor type, `boost::asio::any_io_executor`.
using adaptive_limiter = basic_adaptive_limiter<>;

} // namespace asio_sync

#include <asio_sync/impl/adaptive_limiter.hpp>

#endif // ASIO_SYNC_ADAPTIVE_LIMITER_HPP
