// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_WINDOWED_LIMIT_HPP
#define ASIO_SYNC_WINDOWED_LIMIT_HPP

/// @file
/// A limit algorithm fed one aggregated sample per window of time: asio_sync::windowed_limit.

#include <asio_sync/limit_sample.hpp>

#include <boost/throw_exception.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <utility>
#include <vector>

namespace asio_sync {

/// How asio_sync::windowed_limit sums up the latencies of a window.
enum class window_aggregate
{
    /// Their mean (Netflix concurrency-limits' `AverageSampleWindow`).
    average,
    /// Their `percentile` (Netflix concurrency-limits' `PercentileSampleWindow`, Envoy's
    /// `sample_aggregate_percentile`).
    percentile,
};

/// A limit algorithm that learns one sample per window of time instead of one per request, as
/// Netflix concurrency-limits' `WindowedLimit` does for its algorithms.
///
/// Per-request latencies are noisy (with exponential service times their spread equals their
/// mean): an algorithm fed each of them mistakes the noise for queues. `windowed_limit` collects
/// the samples of a window and gives `Algorithm` one: the window's latency (the mean, or a
/// percentile), the most permits in flight of any of its samples, and dropped if any of them
/// was. Samples faster than `min_latency` are left out (they did no work worth measuring).
///
/// A window opens with its first sample and closes with the first sample that arrives at least
/// `clamp(2 * smallest latency of the previous window, min_window, max_window)` after it opened,
/// once it holds `window_size` samples. The limit moves only then, so the reason a limit
/// listener receives is the outcome of the permit that closed the window, even when an earlier
/// drop in the window moved it.
///
/// Defaults: `window_size` 10 and `min_latency` 100 µs are `WindowedLimit`'s (0.5 series);
/// `min_window` is 50 ms instead of its 1 s, so that Vegas, which moves the limit by 1 per
/// sample below a limit of 100, can follow a backend whose knee falls from 40 to 10 within 2 s
/// (30 windows), while a window of a backend serving a thousand requests a second still averages
/// fifty of them; `max_window` is its 1 s.
///
/// A plain class without I/O, not thread-safe: asio_sync::basic_adaptive_limiter serialises
/// its calls. It reads `Clock::now()` once per sample.
///
/// @tparam Algorithm The limit algorithm it feeds (see asio_sync::limit_sample).
/// @tparam Clock The clock of the windows: a type with a static `now()`, as
/// `std::chrono::steady_clock`.
template <class Algorithm, class Clock = std::chrono::steady_clock>
class windowed_limit
{
public:
    /// The parameters of the windows.
    struct options
    {
        /// The shortest window.
        std::chrono::nanoseconds min_window = std::chrono::milliseconds(50);
        /// The longest window, unless it has fewer than `window_size` samples.
        std::chrono::nanoseconds max_window = std::chrono::seconds(1);
        /// The fewest samples a window holds before it closes. At least 1.
        std::size_t window_size = 10;
        /// Samples faster than this are left out.
        std::chrono::nanoseconds min_latency = std::chrono::microseconds(100);
        /// How the latencies of a window are summed up.
        window_aggregate aggregate = window_aggregate::average;
        /// The percentile of window_aggregate::percentile, in (0, 1].
        double percentile = 0.5;
        /// How many latencies of a window window_aggregate::percentile keeps (reserved at
        /// construction: no allocation per sample); later samples of a full window count in its
        /// size, its in-flight maximum and its drops, not in its percentile. At least 1.
        std::size_t percentile_capacity = 1000;
    };

    /// Constructs a windowed limit with the default options.
    ///
    /// @param algorithm The algorithm the windows feed.
    explicit windowed_limit(Algorithm algorithm) : windowed_limit(std::move(algorithm), options()) {}

    /// Constructs a windowed limit.
    ///
    /// @param algorithm The algorithm the windows feed.
    /// @param o The parameters of the windows.
    /// @throws std::invalid_argument if `o.min_window` or `o.min_latency` is negative,
    /// `o.min_window > o.max_window`, `o.window_size == 0`, or, with window_aggregate::percentile,
    /// `o.percentile` is not in (0, 1] or `o.percentile_capacity == 0`.
    windowed_limit(Algorithm algorithm, const options& o)
        : algorithm_(std::move(algorithm)), options_(o), window_length_(o.min_window)
    {
        if (o.min_window.count() < 0 || o.min_window > o.max_window)
            boost::throw_exception(
                std::invalid_argument("asio_sync: a window's min_window must be in [0, max_window]"));
        if (o.min_latency.count() < 0)
            boost::throw_exception(
                std::invalid_argument("asio_sync: a window's min_latency must be at least 0"));
        if (o.window_size == 0)
            boost::throw_exception(
                std::invalid_argument("asio_sync: a window's window_size must be at least 1"));
        if (o.aggregate == window_aggregate::percentile)
        {
            if (!(o.percentile > 0 && o.percentile <= 1) || o.percentile_capacity == 0)
                boost::throw_exception(std::invalid_argument(
                    "asio_sync: a window's percentile must be in (0, 1] and its capacity at least 1"));
            latencies_.reserve(o.percentile_capacity);
        }
    }

    /// Returns the current limit: the algorithm's.
    std::size_t limit() const noexcept { return algorithm_.limit(); }

    /// Returns the floor: the algorithm's.
    std::size_t min_limit() const noexcept { return algorithm_.min_limit(); }

    /// Returns the ceiling: the algorithm's.
    std::size_t max_limit() const noexcept { return algorithm_.max_limit(); }

    /// Returns the algorithm the windows feed.
    const Algorithm& algorithm() const noexcept { return algorithm_; }

    /// Learns one outcome; the window it closes, if any, is one sample to the algorithm.
    ///
    /// @param s The sample.
    void on_sample(const limit_sample& s) noexcept
    {
        if (s.latency < options_.min_latency)
            return;
        const typename Clock::time_point now = Clock::now();
        if (count_ == 0)
            opened_ = now;
        ++count_;
        sum_ += static_cast<double>(s.latency.count()); // a double: no sum of latencies overflows
        smallest_ = count_ == 1 ? s.latency : std::min(smallest_, s.latency);
        in_flight_ = std::max(in_flight_, s.in_flight);
        dropped_ = dropped_ || s.dropped;
        if (latencies_.size() < latencies_.capacity())
            latencies_.push_back(s.latency);
        if (count_ >= options_.window_size && now - opened_ >= window_length_)
            close();
    }

private:
    void close() noexcept
    {
        algorithm_.on_sample({aggregate(), in_flight_, dropped_});
        const std::chrono::nanoseconds twice =
            smallest_ > std::chrono::nanoseconds::max() / 2 ? std::chrono::nanoseconds::max() : 2 * smallest_;
        window_length_ =
            std::clamp<std::chrono::nanoseconds>(twice, options_.min_window, options_.max_window);
        count_ = 0;
        sum_ = 0;
        in_flight_ = 0;
        dropped_ = false;
        latencies_.clear();
    }

    std::chrono::nanoseconds aggregate() noexcept
    {
        if (options_.aggregate == window_aggregate::average)
        {
            // The mean lies between the latencies; near the largest one a double may round above it.
            const double mean = sum_ / static_cast<double>(count_);
            return mean >= static_cast<double>(std::chrono::nanoseconds::max().count())
                       ? std::chrono::nanoseconds::max()
                       : std::chrono::nanoseconds(static_cast<std::chrono::nanoseconds::rep>(mean));
        }
        // The nearest rank: the smallest latency with at least `percentile` of them at or below it.
        const auto rank =
            static_cast<std::size_t>(std::ceil(options_.percentile * static_cast<double>(latencies_.size())));
        const auto nth = latencies_.begin() + static_cast<std::ptrdiff_t>(std::max<std::size_t>(rank, 1) - 1);
        std::nth_element(latencies_.begin(), nth, latencies_.end());
        return *nth;
    }

    Algorithm algorithm_;
    options options_;
    std::chrono::nanoseconds window_length_;
    typename Clock::time_point opened_{};
    std::size_t count_ = 0;
    double sum_ = 0; // nanoseconds
    std::chrono::nanoseconds smallest_{0};
    std::size_t in_flight_ = 0;
    bool dropped_ = false;
    std::vector<std::chrono::nanoseconds> latencies_;
};

} // namespace asio_sync

#endif // ASIO_SYNC_WINDOWED_LIMIT_HPP
