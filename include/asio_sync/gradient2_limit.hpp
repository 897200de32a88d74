// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_GRADIENT2_LIMIT_HPP
#define ASIO_SYNC_GRADIENT2_LIMIT_HPP

/// @file
/// The Gradient2 limit algorithm: asio_sync::gradient2_limit.

#include <asio_sync/detail/limit_arithmetic.hpp>
#include <asio_sync/limit_sample.hpp>

#include <boost/throw_exception.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <stdexcept>

namespace asio_sync {

/// A limit that compares each latency with a long-term average of latencies: while the newest
/// latency stays within `rtt_tolerance` times the average the limit grows by `queue_size` per
/// sample (smoothed); when latency climbs above it, the limit shrinks in proportion.
///
/// For each sample: the long-term average takes the latency in (the plain mean of the first 10
/// samples, then an exponential average over `long_window` samples: weight `2 / (long_window +
/// 1)`); if the average is more than twice the latency it is scaled by 0.95 (latency came back
/// after a long overload, and the average must follow faster). Unless fewer than half the limit
/// were in flight (the limit is then left alone): `gradient = clamp(rtt_tolerance * average /
/// latency, 0.5, 1)`, `new = limit * gradient + queue_size + queue_fraction * limit`, `limit =
/// (1 - smoothing) * limit + smoothing * new`, clamped to `[min_limit, max_limit]`.
///
/// A dropped sample counts by its latency alone, as in Netflix concurrency-limits'
/// `Gradient2Limit`, whose parameters and defaults (0.5 series) these are.
///
/// A plain class without I/O, not thread-safe: asio_sync::basic_adaptive_limiter serialises
/// its calls.
class gradient2_limit
{
public:
    /// The parameters of a Gradient2 limit.
    struct options
    {
        /// The limit at the start, clamped to `[min_limit, max_limit]`.
        std::size_t initial_limit = 20;
        /// The floor: the limit never falls below it. At least 1.
        std::size_t min_limit = 20;
        /// The ceiling: the limit never rises above it.
        std::size_t max_limit = 200;
        /// The weight of a new estimate against the current limit, in (0, 1].
        double smoothing = 0.2;
        /// How much the limit may grow per sample while latency stays low.
        double queue_size = 4;
        /// The part of the limit added to `queue_size` (Netflix's `queueSize` as a function of
        /// the limit): the limit then settles that fraction above the knee, whatever the knee;
        /// 0 (the default) keeps the growth `queue_size`. At least 0.
        double queue_fraction = 0;
        /// The number of samples the long-term average spans.
        std::size_t long_window = 600;
        /// How much above the long-term average a latency may be before the limit shrinks: 1.5
        /// lets it be 50% higher. At least 1.
        double rtt_tolerance = 1.5;
    };

    /// Constructs a Gradient2 limit with the default options.
    gradient2_limit();

    /// Constructs a Gradient2 limit.
    ///
    /// @param o The parameters.
    /// @throws std::invalid_argument if `o.min_limit == 0`, `o.min_limit > o.max_limit`,
    /// `o.smoothing` is not in (0, 1], `o.rtt_tolerance < 1`, `o.queue_fraction` or `o.queue_size`
    /// is not a finite number at least 0, or `o.long_window == 0`.
    explicit gradient2_limit(const options& o)
        : options_(o), limit_(detail::initial_limit(o.initial_limit, o.min_limit, o.max_limit))
    {
        detail::checked_smoothing(o.smoothing);
        if (!(o.rtt_tolerance >= 1))
            boost::throw_exception(
                std::invalid_argument("asio_sync: Gradient2 rtt_tolerance must be at least 1"));
        detail::check_finite_at_least(
            o.queue_fraction, 0, "asio_sync: Gradient2 queue_fraction must be a finite number at least 0");
        detail::check_finite_at_least(o.queue_size, 0,
                                      "asio_sync: Gradient2 queue_size must be a finite number at least 0");
        if (o.long_window == 0)
            boost::throw_exception(
                std::invalid_argument("asio_sync: Gradient2 long_window must be at least 1"));
    }

    /// Returns the current limit.
    std::size_t limit() const noexcept { return static_cast<std::size_t>(limit_); }

    /// Returns the floor.
    std::size_t min_limit() const noexcept { return options_.min_limit; }

    /// Returns the ceiling.
    std::size_t max_limit() const noexcept { return options_.max_limit; }

    /// Returns the long-term average latency (0 before any sample).
    std::chrono::nanoseconds long_latency() const noexcept
    {
        return std::chrono::nanoseconds(static_cast<std::chrono::nanoseconds::rep>(long_));
    }

    /// Learns one outcome.
    ///
    /// @param s The sample; a latency of 0 counts as 1 ns.
    void on_sample(const limit_sample& s) noexcept
    {
        const double latency =
            static_cast<double>(std::max<std::chrono::nanoseconds::rep>(s.latency.count(), 1));
        if (samples_ < warmup_samples)
        {
            ++samples_;
            long_ += (latency - long_) / static_cast<double>(samples_);
        }
        else
        {
            const double factor = 2.0 / static_cast<double>(options_.long_window + 1);
            long_ = long_ * (1 - factor) + latency * factor;
        }
        if (long_ / latency > 2)
            long_ *= 0.95;

        if (static_cast<double>(s.in_flight) < limit_ / 2)
            return;
        const double gradient = std::clamp(options_.rtt_tolerance * long_ / latency, 0.5, 1.0);
        const double next = limit_ * gradient + options_.queue_size + options_.queue_fraction * limit_;
        limit_ = detail::clamp_limit(limit_ * (1 - options_.smoothing) + next * options_.smoothing,
                                     options_.min_limit, options_.max_limit);
    }

private:
    static constexpr std::size_t warmup_samples = 10;

    options options_;
    double limit_;
    double long_ = 0;
    std::size_t samples_ = 0;
};

inline gradient2_limit::gradient2_limit() : gradient2_limit(options())
{
}

} // namespace asio_sync

#endif // ASIO_SYNC_GRADIENT2_LIMIT_HPP
