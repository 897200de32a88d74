// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_WAIT_HISTOGRAM_HPP
#define ASIO_SYNC_WAIT_HISTOGRAM_HPP

/// @file
/// A ready wait observer: asio_sync::wait_histogram, counts, total and buckets of the wait times.

#include <asio_sync/wait_observer.hpp>

#include <boost/throw_exception.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <utility>
#include <vector>

namespace asio_sync {

/// A `wait_observer` that counts the waits of the primitives it is attached to, per outcome, and
/// sorts their wait times into buckets, as a metrics system's histogram does: a count, a sum and
/// buckets, readable at any time with `snapshot()`.
///
/// One histogram may be attached to several primitives and read from any thread while they run:
/// every count is an atomic, updated with one relaxed read-modify-write per report, so a snapshot
/// taken while waits end may mix reports from slightly different moments (each number is exact in
/// itself). It never throws from its observer functions and never allocates after construction.
///
/// ```cpp
/// asio_sync::wait_histogram waits;
/// sem.set_observer(&waits);
/// ...
/// auto s = waits.snapshot();   // s.count, s.sum, s.buckets[i] for s.upper_bounds[i]
/// ```
class wait_histogram final : public wait_observer
{
public:
    /// The type of the wait times.
    using duration = clock::duration;

    /// What `snapshot()` returns.
    struct snapshot_type
    {
        /// The waits queued so far.
        std::uint64_t queued = 0;
        /// The waits that have ended so far: the sum of the four counts below.
        std::uint64_t count = 0;
        /// The waits that ended granted.
        std::uint64_t granted = 0;
        /// The waits that ended cancelled.
        std::uint64_t cancelled = 0;
        /// The waits that ended timed out.
        std::uint64_t timed_out = 0;
        /// The waits that ended failed otherwise.
        std::uint64_t failed = 0;
        /// The time the ended waits waited, in all.
        duration sum{};
        /// The buckets' upper bounds, ascending, as given to the constructor.
        std::vector<duration> upper_bounds;
        /// `buckets[i]` counts the ended waits that waited at most `upper_bounds[i]` and more than
        /// the bound before it (not cumulative); the last element, one past the bounds, counts
        /// those that waited longer than every bound.
        std::vector<std::uint64_t> buckets;
    };

    /// A histogram with buckets up to 1 µs, 10 µs, 100 µs, 1 ms, 10 ms, 100 ms, 1 s and 10 s, and
    /// one above.
    wait_histogram() : wait_histogram(default_bounds()) {}

    /// A histogram with the buckets given by their upper bounds, and one above them all.
    ///
    /// @param upper_bounds The bounds, strictly ascending; may be empty (one bucket).
    /// @throws std::invalid_argument if the bounds are not strictly ascending.
    explicit wait_histogram(std::vector<duration> upper_bounds)
        : bounds_(std::move(upper_bounds)), buckets_(new std::atomic<std::uint64_t>[bounds_.size() + 1])
    {
        for (std::size_t i = 1; i < bounds_.size(); ++i)
            if (!(bounds_[i - 1] < bounds_[i]))
                boost::throw_exception(std::invalid_argument(
                    "asio_sync::wait_histogram: the bounds must be strictly ascending"));
        for (std::size_t i = 0; i <= bounds_.size(); ++i)
            buckets_[i].store(0, std::memory_order_relaxed);
    }

    /// Not copyable: primitives refer to it by address.
    wait_histogram(const wait_histogram&) = delete;
    /// Not copy-assignable.
    wait_histogram& operator=(const wait_histogram&) = delete;

    /// Counts a queued wait.
    void on_queued() noexcept override { queued_.fetch_add(1, std::memory_order_relaxed); }

    /// Counts an ended wait under its outcome, adds its time to the sum and to its bucket.
    ///
    /// @param outcome How it ended.
    /// @param waited How long it waited.
    void on_finished(wait_outcome outcome, duration waited) noexcept override
    {
        outcomes_[static_cast<std::size_t>(outcome)].fetch_add(1, std::memory_order_relaxed);
        sum_.fetch_add(waited.count(), std::memory_order_relaxed);
        std::size_t bucket = 0;
        while (bucket < bounds_.size() && waited > bounds_[bucket])
            ++bucket;
        buckets_[bucket].fetch_add(1, std::memory_order_relaxed);
    }

    /// Returns the counts so far. Allocates the snapshot's two vectors.
    snapshot_type snapshot() const
    {
        snapshot_type s;
        s.queued = queued_.load(std::memory_order_relaxed);
        s.granted =
            outcomes_[static_cast<std::size_t>(wait_outcome::granted)].load(std::memory_order_relaxed);
        s.cancelled =
            outcomes_[static_cast<std::size_t>(wait_outcome::cancelled)].load(std::memory_order_relaxed);
        s.timed_out =
            outcomes_[static_cast<std::size_t>(wait_outcome::timed_out)].load(std::memory_order_relaxed);
        s.failed = outcomes_[static_cast<std::size_t>(wait_outcome::failed)].load(std::memory_order_relaxed);
        s.count = s.granted + s.cancelled + s.timed_out + s.failed;
        s.sum = duration(sum_.load(std::memory_order_relaxed));
        s.upper_bounds = bounds_;
        s.buckets.reserve(bounds_.size() + 1);
        for (std::size_t i = 0; i <= bounds_.size(); ++i)
            s.buckets.push_back(buckets_[i].load(std::memory_order_relaxed));
        return s;
    }

private:
    static std::vector<duration> default_bounds()
    {
        using namespace std::chrono;
        return {microseconds(1),  microseconds(10),  microseconds(100), milliseconds(1),
                milliseconds(10), milliseconds(100), seconds(1),        seconds(10)};
    }

    std::vector<duration> bounds_;
    std::unique_ptr<std::atomic<std::uint64_t>[]> buckets_;
    std::atomic<std::uint64_t> queued_{0};
    std::array<std::atomic<std::uint64_t>, 4> outcomes_{};
    std::atomic<duration::rep> sum_{0};
};

} // namespace asio_sync

#endif // ASIO_SYNC_WAIT_HISTOGRAM_HPP
