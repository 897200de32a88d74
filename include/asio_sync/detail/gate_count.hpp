// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_DETAIL_GATE_COUNT_HPP
#define ASIO_SYNC_DETAIL_GATE_COUNT_HPP

#include <boost/config.hpp>

#include <atomic>
#include <cstddef>

namespace asio_sync::detail {

// The entries of a gate and whether it is closing, in one word: bit 0 is the closed flag, the rest
// counts the guards alive. Entering and leaving are one atomic operation each; so is closing
// (unless an entry races it). The word alone decides which call drains the gate: exactly one of
// them, either the last leave after the close or the close that finds no guard, returns true, and
// its caller sets the event on which the closers wait (event_core). The atomic type is a parameter
// so that a test scheduler can run it one shared-memory step at a time.
//
// The flag and the count share one word so that an entry that saw the gate open and the close
// that will wait for it cannot miss each other: the close's read-modify-write either comes before
// the entry's, which then fails, or after it, and then counts it.
template <template <class> class Atomic = std::atomic>
class gate_count
{
public:
    gate_count() noexcept = default;

    gate_count(const gate_count&) = delete;
    gate_count& operator=(const gate_count&) = delete;

    // Counts one more guard unless the gate is closed. Relaxed: an entry publishes nothing, and
    // its leave orders what the guard's holder did before the drain.
    BOOST_FORCEINLINE bool try_enter() noexcept
    {
        std::size_t word = word_.load(std::memory_order_relaxed);
        do
        {
            if (word & closed_flag)
                return false;
        } while (!word_.compare_exchange_weak(word, word + one_guard, std::memory_order_relaxed,
                                              std::memory_order_relaxed));
        return true;
    }

    // Counts one guard less. Returns true if it was the last one of a closed gate: the caller
    // drains it. Acquire-release: the last leave carries every earlier leave's writes to the
    // closers.
    BOOST_FORCEINLINE bool leave() noexcept
    {
        return word_.fetch_sub(one_guard, std::memory_order_acq_rel) == (one_guard | closed_flag);
    }

    // Closes the gate. Returns true if this call closed it and no guard was alive: the caller
    // drains it. Closing a closed gate changes nothing and returns false.
    bool close() noexcept
    {
        std::size_t word = word_.load(std::memory_order_relaxed);
        do
        {
            if (word & closed_flag)
                return false;
        } while (!word_.compare_exchange_weak(word, word | closed_flag, std::memory_order_acq_rel,
                                              std::memory_order_relaxed));
        return word == 0;
    }

    std::size_t count() const noexcept { return word_.load(std::memory_order_relaxed) / one_guard; }

    bool is_closed() const noexcept { return (word_.load(std::memory_order_relaxed) & closed_flag) != 0; }

private:
    static constexpr std::size_t closed_flag = 1;
    static constexpr std::size_t one_guard = 2;

    Atomic<std::size_t> word_{0};
};

} // namespace asio_sync::detail

#endif // ASIO_SYNC_DETAIL_GATE_COUNT_HPP
