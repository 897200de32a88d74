// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_REDIS_SEMAPHORE_HPP
#define ASIO_SYNC_REDIS_SEMAPHORE_HPP

/// \file
/// The fleet-wide counting semaphore: asio_sync::redis::basic_semaphore, its permits, and the
/// asio_sync::redis::semaphore alias.

#include <asio_sync/redis/connection.hpp>
#include <asio_sync/redis/detail/semaphore_engine.hpp>

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
/// operations may be started from any thread.
template <class Executor = boost::asio::any_io_executor>
class basic_semaphore
{
    using engine_type = detail::semaphore_engine<Executor>;

public:
    using executor_type = Executor;
    using connection_type = basic_connection<Executor>;

    /// Holds granted permits; see detail::semaphore_permit.
    using permit = detail::semaphore_permit<Executor>;

    /// Opens the semaphore `name` of `capacity` permits on `connection`'s server. The first acquire
    /// declares the capacity in Redis; an acquire with another capacity fails with
    /// `error::capacity_mismatch`.
    basic_semaphore(connection_type& conn, std::string name, std::size_t capacity,
                    std::chrono::milliseconds lease_duration)
        : engine_(std::make_shared<engine_type>(conn, name, capacity, lease_duration))
    {
        engine_->start();
    }

    basic_semaphore(const basic_semaphore&) = delete;
    basic_semaphore& operator=(const basic_semaphore&) = delete;

    /// Pending acquires complete with `boost::asio::error::operation_aborted`; live permits keep
    /// their leases renewed until they are released.
    ~basic_semaphore() { engine_->stop(); }

    /// Acquires `n` permits, waiting in the fleet-wide queue.
    ///
    /// Signature: `void(boost::system::error_code, permit)`. Errors: `too_many_permits` (n greater
    /// than the capacity), `error::capacity_mismatch`, `error::wrong_type`,
    /// `error::server_error`, `boost::asio::error::operation_aborted` (cancelled: any type).
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
    /// Fails with `boost::asio::error::would_block` otherwise.
    template <BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code, permit)) AcquireToken>
    auto async_try_acquire_permit(std::size_t n, AcquireToken&& token)
    {
        return initiate(n, detail::acquire_mode::try_once, std::nullopt, std::forward<AcquireToken>(token));
    }

private:
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
