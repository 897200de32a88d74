// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_VEGAS_LIMIT_HPP
#define ASIO_SYNC_VEGAS_LIMIT_HPP

/// @file
/// The Vegas limit algorithm: asio_sync::vegas_limit.

#include <asio_sync/detail/limit_arithmetic.hpp>
#include <asio_sync/limit_sample.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>

namespace asio_sync {

/// A limit that follows TCP Vegas: it estimates the queue the work builds in the backend from
/// the latency without load (the smallest latency seen) and moves the limit to keep that queue
/// small.
///
/// For each sample: `queue = ceil(limit * (1 - no_load_latency / latency))`. A dropped sample
/// lowers the limit by `log10_root(limit)`. Otherwise, unless fewer than half the limit were in
/// flight (the work does not use the limit: it is left alone), the limit rises by
/// `beta * log10_root(limit)` while `queue <= log10_root(limit)`, by `log10_root(limit)` while
/// `queue < alpha * log10_root(limit)`, falls by `log10_root(limit)` once
/// `queue > beta * log10_root(limit)`, and stays in between; then it is clamped to
/// `[min_limit, max_limit]` and smoothed: `limit = (1 - smoothing) * limit + smoothing * new`.
/// `log10_root(x)` is `max(1, floor(log10(x)))` below 1000 and `floor(sqrt(x))` from there.
///
/// The latency without load is re-measured: after `probe_multiplier * limit * j` samples, `j`
/// drawn in [0.5, 1) each time, the next sample's latency replaces it, so that a backend which
/// became slower for good is not taken for a queue for ever.
///
/// Parameters and defaults follow Netflix concurrency-limits' `VegasLimit` (0.5 series), except
/// `min_limit`, which is fixed at 1 there.
///
/// A plain class without I/O, not thread-safe: asio_sync::basic_adaptive_limiter serialises
/// its calls.
class vegas_limit
{
public:
    /// The parameters of a Vegas limit.
    struct options
    {
        /// The limit at the start, clamped to `[min_limit, max_limit]`.
        std::size_t initial_limit = 20;
        /// The floor: the limit never falls below it. At least 1.
        std::size_t min_limit = 1;
        /// The ceiling: the limit never rises above it.
        std::size_t max_limit = 1000;
        /// The weight of a new estimate against the current limit, in (0, 1].
        double smoothing = 1.0;
        /// Below `alpha * log10_root(limit)` queued, the limit grows.
        double alpha = 3;
        /// Above `beta * log10_root(limit)` queued, the limit shrinks.
        double beta = 6;
        /// The latency without load is re-measured every `probe_multiplier * limit` samples,
        /// jittered down by up to a half.
        double probe_multiplier = 30;
        /// The seed of the jitter, so that a run can be replayed.
        std::uint64_t probe_seed = 0;
    };

    /// Constructs a Vegas limit with the default options.
    vegas_limit();

    /// Constructs a Vegas limit.
    ///
    /// @param o The parameters.
    /// @throws std::invalid_argument if `o.min_limit == 0`, `o.min_limit > o.max_limit`,
    /// `o.smoothing` is not in (0, 1], `o.alpha`, `o.beta` or `o.probe_multiplier` is not a finite
    /// number at least 0, or `o.alpha > o.beta`.
    explicit vegas_limit(const options& o)
        : options_(o), limit_(detail::initial_limit(o.initial_limit, o.min_limit, o.max_limit)),
          probe_state_(o.probe_seed)
    {
        detail::checked_smoothing(o.smoothing);
        detail::check_finite_at_least(o.alpha, 0,
                                      "asio_sync: Vegas alpha must be a finite number at least 0");
        detail::check_finite_at_least(o.beta, o.alpha,
                                      "asio_sync: Vegas beta must be a finite number at least alpha");
        detail::check_finite_at_least(o.probe_multiplier, 0,
                                      "asio_sync: Vegas probe_multiplier must be a finite number at least 0");
        next_probe();
    }

    /// Returns the current limit.
    std::size_t limit() const noexcept { return static_cast<std::size_t>(limit_); }

    /// Returns the floor.
    std::size_t min_limit() const noexcept { return options_.min_limit; }

    /// Returns the ceiling.
    std::size_t max_limit() const noexcept { return options_.max_limit; }

    /// Returns the latency without load it measures the queue against (0 before any sample).
    std::chrono::nanoseconds no_load_latency() const noexcept { return no_load_; }

    /// Learns one outcome.
    ///
    /// @param s The sample; a latency of 0 counts as 1 ns.
    void on_sample(const limit_sample& s) noexcept
    {
        const std::chrono::nanoseconds latency = std::max(s.latency, std::chrono::nanoseconds(1));
        if (++since_probe_ >= probe_after_)
        {
            next_probe();
            no_load_ = latency;
            return;
        }
        if (no_load_.count() == 0 || latency < no_load_)
        {
            no_load_ = latency;
            return;
        }

        const double step = detail::log10_root(limit_);
        double next = limit_;
        if (s.dropped)
            next = limit_ - step;
        else if (static_cast<double>(s.in_flight) * 2 < limit_)
            return;
        else
        {
            const double queue = std::ceil(
                limit_ * (1 - static_cast<double>(no_load_.count()) / static_cast<double>(latency.count())));
            if (queue <= step)
                next = limit_ + options_.beta * step;
            else if (queue < options_.alpha * step)
                next = limit_ + step;
            else if (queue > options_.beta * step)
                next = limit_ - step;
            else
                return;
        }
        next = detail::clamp_limit(next, options_.min_limit, options_.max_limit);
        limit_ = (1 - options_.smoothing) * limit_ + options_.smoothing * next;
    }

private:
    void next_probe() noexcept
    {
        since_probe_ = 0;
        probe_after_ = detail::uniform_draw(probe_state_, 0.5, 1) * options_.probe_multiplier * limit_;
    }

    options options_;
    double limit_;
    std::chrono::nanoseconds no_load_{0};
    std::uint64_t probe_state_;
    double since_probe_ = 0;
    double probe_after_ = 0;
};

inline vegas_limit::vegas_limit() : vegas_limit(options())
{
}

} // namespace asio_sync

#endif // ASIO_SYNC_VEGAS_LIMIT_HPP
