// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_LIMIT_SAMPLE_HPP
#define ASIO_SYNC_LIMIT_SAMPLE_HPP

/// @file
/// What a limit algorithm learns from one piece of admitted work: asio_sync::limit_sample, and
/// asio_sync::limit_reason, which says to a limit listener what moved the limit.

#include <chrono>
#include <cstddef>

namespace asio_sync {

/// What moved an adaptive limit: the outcome of the permit whose sample changed it.
enum class limit_reason
{
    /// A permit reported success: its latency moved the limit.
    success,
    /// A permit reported the work dropped (a timeout, a refused request): an overload signal.
    dropped,
};

/// One outcome of the work a permit admitted, as a limit algorithm receives it.
///
/// A limit algorithm (asio_sync::vegas_limit, asio_sync::gradient2_limit, asio_sync::aimd_limit,
/// or a type of the user's with the same members) is a plain class without I/O:
///
/// - `std::size_t limit() const`: the current limit, in `[min_limit(), max_limit()]`;
/// - `std::size_t min_limit() const` and `std::size_t max_limit() const`: the floor and the
///   ceiling, fixed at construction (`min_limit() >= 1`);
/// - `void on_sample(const limit_sample&)`: learns one outcome, and may move `limit()`. It must
///   not throw: it runs inside a permit's return, which is `noexcept`.
///
/// asio_sync::basic_adaptive_limiter calls `on_sample` on the thread that returns a permit,
/// one call at a time, so the algorithm needs no synchronisation of its own.
struct limit_sample
{
    /// The time from the grant of the permit to its outcome, on `std::chrono::steady_clock`.
    std::chrono::nanoseconds latency;

    /// How many permits were held, this one's included, when it was granted: the limit minus the
    /// permits left at that moment. The algorithms do not grow a limit the work does not use.
    std::size_t in_flight;

    /// True if the work was dropped: an overload signal, whatever its latency.
    bool dropped;
};

} // namespace asio_sync

#endif // ASIO_SYNC_LIMIT_SAMPLE_HPP
