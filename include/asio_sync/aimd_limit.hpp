// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_AIMD_LIMIT_HPP
#define ASIO_SYNC_AIMD_LIMIT_HPP

/// @file
/// The AIMD limit algorithm: asio_sync::aimd_limit.

#include <asio_sync/detail/limit_arithmetic.hpp>
#include <asio_sync/limit_sample.hpp>

#include <boost/throw_exception.hpp>

#include <chrono>
#include <cstddef>
#include <stdexcept>

namespace asio_sync {

/// A limit driven by losses: additive increase, multiplicative decrease, as TCP's congestion
/// window.
///
/// A dropped sample, or one whose latency exceeds `timeout`, multiplies the limit by
/// `backoff_ratio` (rounded down); any other sample adds 1 when at least half the limit was in
/// flight. The limit stays in `[min_limit, max_limit]`. Latency below `timeout` does not move it
/// down: AIMD needs drops (or a `timeout` near the latency the work must keep) to find a knee.
///
/// Parameters and defaults follow Netflix concurrency-limits' `AIMDLimit` (0.5 series).
///
/// A plain class without I/O, not thread-safe: asio_sync::basic_adaptive_limiter serialises
/// its calls.
class aimd_limit
{
public:
    /// The parameters of an AIMD limit.
    struct options
    {
        /// The limit at the start, clamped to `[min_limit, max_limit]`.
        std::size_t initial_limit = 20;
        /// The floor: the limit never falls below it. At least 1.
        std::size_t min_limit = 20;
        /// The ceiling: the limit never rises above it.
        std::size_t max_limit = 200;
        /// The factor a drop multiplies the limit by, in [0.5, 1).
        double backoff_ratio = 0.9;
        /// A success slower than this counts as a drop.
        std::chrono::nanoseconds timeout = std::chrono::seconds(5);
    };

    /// Constructs an AIMD limit with the default options.
    aimd_limit();

    /// Constructs an AIMD limit.
    ///
    /// @param o The parameters.
    /// @throws std::invalid_argument if `o.min_limit == 0`, `o.min_limit > o.max_limit`,
    /// `o.backoff_ratio` is not in [0.5, 1), or `o.timeout` is not positive.
    explicit aimd_limit(const options& o)
        : options_(o),
          limit_(static_cast<std::size_t>(detail::initial_limit(o.initial_limit, o.min_limit, o.max_limit)))
    {
        if (!(o.backoff_ratio >= 0.5 && o.backoff_ratio < 1))
            boost::throw_exception(
                std::invalid_argument("asio_sync: AIMD backoff_ratio must be in [0.5, 1)"));
        if (o.timeout.count() <= 0)
            boost::throw_exception(std::invalid_argument("asio_sync: AIMD timeout must be positive"));
    }

    /// Returns the current limit.
    std::size_t limit() const noexcept { return limit_; }

    /// Returns the floor.
    std::size_t min_limit() const noexcept { return options_.min_limit; }

    /// Returns the ceiling.
    std::size_t max_limit() const noexcept { return options_.max_limit; }

    /// Learns one outcome.
    ///
    /// @param s The sample.
    void on_sample(const limit_sample& s) noexcept
    {
        std::size_t next = limit_;
        if (s.dropped || s.latency > options_.timeout)
            next = static_cast<std::size_t>(static_cast<double>(limit_) * options_.backoff_ratio);
        else if (s.in_flight * 2 >= limit_)
            next = limit_ + 1;
        limit_ = static_cast<std::size_t>(
            detail::clamp_limit(static_cast<double>(next), options_.min_limit, options_.max_limit));
    }

private:
    options options_;
    std::size_t limit_;
};

inline aimd_limit::aimd_limit() : aimd_limit(options())
{
}

} // namespace asio_sync

#endif // ASIO_SYNC_AIMD_LIMIT_HPP
