// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_DETAIL_LIMIT_ARITHMETIC_HPP
#define ASIO_SYNC_DETAIL_LIMIT_ARITHMETIC_HPP

#include <boost/throw_exception.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>

namespace asio_sync::detail {

// A NaN (which no checked option produces) falls to the floor rather than through the clamp.
inline double clamp_limit(double limit, std::size_t min_limit, std::size_t max_limit) noexcept
{
    if (std::isnan(limit))
        return static_cast<double>(min_limit);
    return std::clamp(limit, static_cast<double>(min_limit), static_cast<double>(max_limit));
}

// A parameter that must be a finite number at least `least`.
inline void check_finite_at_least(double value, double least, const char* what)
{
    if (!(std::isfinite(value) && value >= least))
        boost::throw_exception(std::invalid_argument(what));
}

// The initial limit of every algorithm, clamped to its floor and ceiling, once they are checked:
// a floor of 0 would let the limit reach 0, where no permit is granted, so no sample ever moves
// it again.
inline double initial_limit(std::size_t initial, std::size_t min_limit, std::size_t max_limit)
{
    if (min_limit == 0)
        boost::throw_exception(std::invalid_argument("asio_sync: a limit's floor must be at least 1"));
    if (min_limit > max_limit)
        boost::throw_exception(std::invalid_argument("asio_sync: a limit's floor is above its ceiling"));
    return clamp_limit(static_cast<double>(initial), min_limit, max_limit);
}

// A smoothing factor: the weight of a new estimate, in (0, 1].
inline double checked_smoothing(double smoothing)
{
    if (!(smoothing > 0 && smoothing <= 1))
        boost::throw_exception(std::invalid_argument("asio_sync: a limit's smoothing must be in (0, 1]"));
    return smoothing;
}

// The step of Vegas's thresholds: max(1, floor(log10(limit))) below 1000, floor(sqrt(limit))
// from there (concurrency-limits' Log10RootFunction).
inline double log10_root(double limit) noexcept
{
    if (limit < 1000)
        return std::max(1.0, std::floor(std::log10(std::max(limit, 1.0))));
    return std::floor(std::sqrt(limit));
}

// A uniform draw in [low, high) from a splitmix64 state: a few instructions, reproducible from
// its seed, which is what a scripted test of a jittered algorithm needs.
inline double uniform_draw(std::uint64_t& state, double low, double high) noexcept
{
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return low + (high - low) * static_cast<double>(z >> 11) * 0x1p-53;
}

} // namespace asio_sync::detail

#endif // ASIO_SYNC_DETAIL_LIMIT_ARITHMETIC_HPP
