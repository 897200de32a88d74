// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_REDIS_PERMIT_HPP
#define ASIO_SYNC_REDIS_PERMIT_HPP

/// \file
/// The permits of a fleet-wide semaphore: asio_sync::redis::basic_permit.

#include <asio_sync/detail/completion.hpp>
#include <asio_sync/detail/grant.hpp>
#include <asio_sync/redis/detail/lease_view.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/system_executor.hpp>
#include <boost/system/error_code.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

namespace asio_sync::redis {

namespace detail {

template <class Executor>
class semaphore_engine;

template <class Executor>
struct permit_grant;

} // namespace detail

/// The permits of one grant of a fleet-wide semaphore (`basic_semaphore<Executor>::permit`),
/// handed to the completion handler of an acquire. Move-only.
///
/// While the permit lives its lease is renewed every third of the lease duration. Its destructor
/// (and a move assignment onto it) releases the permits without waiting.
///
/// Not thread-safe: one permit object is used by one thread at a time, like any value.
///
/// @tparam Executor The executor type of the semaphore's connection.
template <class Executor = boost::asio::any_io_executor>
class basic_permit
{
public:
    /// An empty permit: holds nothing, `count() == 0`, `fencing_token() == 0`.
    basic_permit() noexcept = default;

    /// Takes over the permits of `other`, which becomes empty.
    basic_permit(basic_permit&& other) noexcept
        : engine_(std::move(other.engine_)), id_(std::move(other.id_)),
          count_(std::exchange(other.count_, 0)), fence_(std::exchange(other.fence_, 0)),
          lost_signal_(std::move(other.lost_signal_)), lease_(std::move(other.lease_))
    {
    }

    /// Releases the permits held (without waiting), then takes over those of `other`, which
    /// becomes empty.
    basic_permit& operator=(basic_permit&& other) noexcept
    {
        if (this != &other)
        {
            release_in_background();
            engine_ = std::move(other.engine_);
            id_ = std::move(other.id_);
            count_ = std::exchange(other.count_, 0);
            fence_ = std::exchange(other.fence_, 0);
            lost_signal_ = std::move(other.lost_signal_);
            lease_ = std::move(other.lease_);
        }
        return *this;
    }

    /// Releases the permits held, without waiting for Redis' answer.
    ~basic_permit() { release_in_background(); }

    /// The number of permits held: `n` of the acquire; 0 once released, moved from, or for the
    /// empty permit of a failed acquire or of `n == 0`.
    std::size_t count() const noexcept { return count_; }

    /// The fencing token of the grant: strictly greater than that of every earlier grant of the
    /// semaphore, fleet-wide; 0 for an empty permit. Pass it with every write the permit guards,
    /// so that the resource can refuse a holder whose lease was lost.
    std::uint64_t fencing_token() const noexcept { return fence_; }

    /// The moment this process declares the lease lost if no renewal extends it first: the end of
    /// the lease as the last call that set it proves it (the time that call was sent plus the
    /// lease time left that Redis answered), minus the safety margin. Redis keeps the lease at
    /// least until then, so no other process can be granted these permits before it, the clocks
    /// running at the same rate. Moves forward with each renewal. `time_point::min()` for an empty
    /// permit; once the lease is lost, the moment it was declared lost or earlier.
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

    /// Stops renewing and gives the permits back; the permit becomes empty at once. Completes on
    /// Redis' reply: success, `error::lease_lost` if the lease had lapsed, or a Redis error (an
    /// empty permit completes with success).
    ///
    /// Signature: `void(boost::system::error_code)`.
    template <BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code)) ReleaseToken>
    auto async_release(ReleaseToken&& token)
    {
        return boost::asio::async_initiate<ReleaseToken, void(boost::system::error_code)>(
            [this](auto handler) {
                count_ = 0;
                if (const auto engine = std::exchange(engine_, nullptr))
                    return engine->release(id_, engine->make_status_op(std::move(handler)));
                complete_empty(std::move(handler), boost::system::error_code());
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
                    return engine_->wait_lost(id_, engine_->make_status_op(std::move(handler)));
                complete_empty(std::move(handler), boost::asio::error::operation_aborted);
            },
            token);
    }

private:
    template <class>
    friend class detail::semaphore_engine;
    template <class>
    friend struct detail::permit_grant;

    // A permit without an engine has no I/O executor: the handler completes through its own.
    template <class Handler>
    static void complete_empty(Handler handler, boost::system::error_code ec)
    {
        asio_sync::detail::post_completion(std::move(handler), boost::asio::system_executor(),
                                           asio_sync::detail::signal_grant(), ec, 0);
    }

    basic_permit(std::shared_ptr<detail::semaphore_engine<Executor>> engine, std::string id,
                 std::size_t count, std::uint64_t fence,
                 std::shared_ptr<boost::asio::cancellation_signal> lost_signal,
                 std::shared_ptr<const detail::lease_view> lease)
        : engine_(std::move(engine)), id_(std::move(id)), count_(count), fence_(fence),
          lost_signal_(std::move(lost_signal)), lease_(std::move(lease))
    {
    }

    void release_in_background() noexcept
    {
        if (const auto engine = std::exchange(engine_, nullptr))
            engine->release(id_, nullptr);
        count_ = 0;
    }

    std::shared_ptr<detail::semaphore_engine<Executor>> engine_;
    std::string id_;
    std::size_t count_ = 0;
    std::uint64_t fence_ = 0;
    std::shared_ptr<boost::asio::cancellation_signal> lost_signal_; // shared with the engine, which emits it
    std::shared_ptr<const detail::lease_view> lease_;               // written by the engine's client
};

} // namespace asio_sync::redis

// The engine completes the permit's members; included last, so that either header may come first.
#include <asio_sync/redis/detail/semaphore_engine.hpp>

#endif // ASIO_SYNC_REDIS_PERMIT_HPP
