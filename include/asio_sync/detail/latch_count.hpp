// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_DETAIL_LATCH_COUNT_HPP
#define ASIO_SYNC_DETAIL_LATCH_COUNT_HPP

#include <boost/throw_exception.hpp>

#include <atomic>
#include <cstddef>
#include <stdexcept>

namespace asio_sync::detail {

// The count of a latch. Each count_down is one atomic read-modify-write, so exactly one call sees
// the count reach zero and returns true; its caller sets the event on which the waits queue
// (event_core). The atomic type is a parameter so that a test scheduler can run it one
// shared-memory step at a time.
template <template <class> class Atomic = std::atomic>
class latch_count
{
public:
    explicit latch_count(std::size_t expected) noexcept : count_(expected) {}

    latch_count(const latch_count&) = delete;
    latch_count& operator=(const latch_count&) = delete;

    // Lowers the count by n; true for the call that brings it to zero. acq_rel: what each caller
    // did before its count_down happens-before the waits that the last one completes.
    bool count_down(std::size_t n)
    {
        std::size_t count = count_.load(std::memory_order_relaxed);
        do
        {
            if (n > count)
                boost::throw_exception(std::invalid_argument("asio_sync: latch count_down below zero"));
        } while (!count_.compare_exchange_weak(count, count - n, std::memory_order_acq_rel,
                                               std::memory_order_relaxed));
        return n != 0 && count == n;
    }

    std::size_t load() const noexcept { return count_.load(std::memory_order_relaxed); }

private:
    Atomic<std::size_t> count_;
};

} // namespace asio_sync::detail

#endif // ASIO_SYNC_DETAIL_LATCH_COUNT_HPP
