// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_REDIS_PERMIT_HPP
#define ASIO_SYNC_REDIS_PERMIT_HPP

/// \file
/// The permits of a fleet-wide semaphore: asio_sync::redis::basic_permit.

#include <asio_sync/redis/detail/access.hpp>
#include <asio_sync/redis/detail/lease_view.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/assert.hpp>
#include <boost/system/error_code.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

namespace asio_sync::redis {

namespace detail {

template <class Executor>
class semaphore_engine;

} // namespace detail

/// The permits of one grant of a fleet-wide semaphore (`basic_semaphore<Executor>::permit`),
/// handed to the completion handler of an acquire. Move-only.
///
/// While the permit lives its lease is renewed every third of the lease duration. Its destructor
/// (and a move assignment onto it) releases the permits without waiting.
///
/// **Thread safety.** One permit object is used by one thread at a time, like any value; but
/// `expires_at()` and `valid_for()` may be called from any thread.
///
/// @tparam Executor The executor type of the semaphore's connection.
template <class Executor = boost::asio::any_io_executor>
class basic_permit
{
public:
    /// The executor type of the semaphore's connection.
    using executor_type = Executor;

    /// Rebinds the permit to another executor type.
    ///
    /// @tparam OtherExecutor The executor type to rebind to.
    template <class OtherExecutor>
    struct rebind_executor
    {
        /// The permit type when rebound to the specified executor.
        using other = basic_permit<OtherExecutor>;
    };

    /// An empty permit: holds nothing, `count() == 0`, `fencing_token() == 0`.
    basic_permit() noexcept = default;

    /// Takes over the permits of `other`, which becomes empty.
    basic_permit(basic_permit&& other) noexcept;

    /// Releases the permits held (without waiting), then takes over those of `other`, which
    /// becomes empty.
    basic_permit& operator=(basic_permit&& other) noexcept;

    /// Releases the permits held, without waiting for Redis' answer.
    ~basic_permit() { release_in_background(); }

    /// Returns the executor of the semaphore's connection: the default executor of the
    /// completion handlers of `async_release` and `async_wait_lost`.
    ///
    /// @pre The permit was handed out by a semaphore, or moved from one that was (a
    /// default-constructed permit has no executor).
    const executor_type& get_executor() const noexcept
    {
        BOOST_ASSERT(executor_);
        return *executor_;
    }

    /// The number of permits held: `n` of the acquire; 0 once released, moved from, or for the
    /// empty permit of a failed acquire or of `n == 0`.
    std::size_t count() const noexcept { return count_; }

    /// The fencing token of the grant: strictly greater than that of every earlier grant of the
    /// semaphore, fleet-wide (the server's clock in microseconds, or just above the last token);
    /// 0 for an empty permit. Pass it with every write the permit guards, so that the resource
    /// can refuse a holder whose lease was lost.
    std::uint64_t fencing_token() const noexcept { return fence_; }

    /// The moment this process declares the lease lost if no renewal extends it first: the end of
    /// the lease as the last call that set it proves it (the time that call was sent plus the
    /// lease time left that Redis answered), minus the safety margin. Redis keeps the lease at
    /// least until then, so no other process can be granted these permits before it, the clocks
    /// running at the same rate. Moves forward with each renewal. `time_point::min()` for an empty
    /// permit.
    std::chrono::steady_clock::time_point expires_at() const noexcept
    {
        return lease_ ? lease_->deadline() : std::chrono::steady_clock::time_point::min();
    }

    /// The time left before `expires_at()`, or zero once it has passed, the lease is lost or the
    /// permit is empty: check it before each write that the permit guards, as Redlock clients
    /// check their "validity time". A synchronous read, safe from any thread.
    std::chrono::steady_clock::duration valid_for() const noexcept
    {
        if (!lease_ || lease_->lost())
            return std::chrono::steady_clock::duration::zero();
        const auto left = lease_->deadline() - std::chrono::steady_clock::now();
        return left > std::chrono::steady_clock::duration::zero()
                   ? left
                   : std::chrono::steady_clock::duration::zero();
    }

    /// A slot emitted with `cancellation_type::terminal` when the lease is lost, to bind to the
    /// work the permit guards. It is emitted from the connection's executor: bind it only to
    /// operations that run there. An empty permit's slot is not connected.
    boost::asio::cancellation_slot lost_slot() const noexcept
    {
        return lost_signal_ ? lost_signal_->slot() : boost::asio::cancellation_slot();
    }

    /// Stops renewing and gives the permits back; the permit becomes empty at once.
    ///
    /// @par Completion signature
    /// `void(boost::system::error_code)`.
    ///
    /// @par Per-operation cancellation
    /// Not supported: the release goes through whatever happens to the handler.
    ///
    /// @par Executor
    /// The handler is never invoked from within this function; it is submitted to its associated
    /// executor (default: `get_executor()`; the system executor for an empty permit) as if by
    /// `boost::asio::post`.
    ///
    /// @par Errors
    /// - none: released (also when a release sent again after its reply was lost finds that the
    ///   first one ran), or the permit was empty.
    /// - `error::lease_lost`: the lease had lapsed before the release; nothing is sent.
    /// - `error::state_lost`: Redis had lost the semaphore's state; nothing is sent.
    /// - Redis errors (`error::server_error`, `error::no_permission`, `error::no_replicas`, ...):
    ///   Redis refused the call; the lease lapses on its own.
    /// .
    /// A release whose reply was lost with the connection is sent again until Redis answers.
    ///
    /// @par Thread safety
    /// Not with other calls on the same permit.
    ///
    /// @par Object lifetimes
    /// The permit may be destroyed at once; the connection must outlive the release (a release
    /// whose connection is gone is not sent: the lease lapses on the server).
    ///
    /// @param token The completion token.
    template <BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code))
                  ReleaseToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_release(ReleaseToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type))
    {
        return boost::asio::async_initiate<ReleaseToken, void(boost::system::error_code)>(
            initiate_async_release(this), token);
    }

    /// Waits until the lease is lost.
    ///
    /// @par Completion signature
    /// `void(boost::system::error_code)`.
    ///
    /// @par Per-operation cancellation
    /// Not supported: release the permit to end the wait.
    ///
    /// @par Executor
    /// The handler is never invoked from within this function; it is submitted to its associated
    /// executor (default: `get_executor()`; the system executor for an empty permit) as if by
    /// `boost::asio::post`.
    ///
    /// @par Errors
    /// - `error::lease_lost`: the lease lapsed (this process could not renew it in time, or Redis
    ///   reaped it).
    /// - `error::state_lost`: Redis lost the semaphore's state.
    /// - `boost::asio::error::operation_aborted`: the permit was released first, or holds nothing.
    ///
    /// @par Thread safety
    /// Not with other calls on the same permit.
    ///
    /// @par Object lifetimes
    /// The permit may be destroyed while the wait is pending (which releases it, completing the
    /// wait with `operation_aborted`).
    ///
    /// @param token The completion token.
    template <BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code))
                  WaitToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_wait_lost(WaitToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type))
    {
        return boost::asio::async_initiate<WaitToken, void(boost::system::error_code)>(
            initiate_async_wait_lost(this), token);
    }

private:
    friend detail::access;

    class initiate_async_release;
    class initiate_async_wait_lost;

    using engine_type = detail::semaphore_engine<Executor>;

    basic_permit(std::shared_ptr<engine_type> engine, std::string id, std::size_t count, std::uint64_t fence,
                 std::shared_ptr<boost::asio::cancellation_signal> lost_signal,
                 std::shared_ptr<const detail::lease_view> lease);

    // A permit without an engine has no I/O executor: the handler completes through its own.
    template <class Handler>
    static void complete_empty(Handler handler, boost::system::error_code ec);

    void release_in_background() noexcept;

    std::shared_ptr<engine_type> engine_;
    std::optional<executor_type> executor_;
    std::string id_;
    std::size_t count_ = 0;
    std::uint64_t fence_ = 0;
    std::shared_ptr<boost::asio::cancellation_signal> lost_signal_; // shared with the engine, which emits it
    std::shared_ptr<const detail::lease_view> lease_;               // written by the engine's client
};

} // namespace asio_sync::redis

#include <asio_sync/redis/impl/permit.hpp>

#endif // ASIO_SYNC_REDIS_PERMIT_HPP
