// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

// A round of a 4-party barrier: `tasks` coroutines on an io_context run by `threads` threads each
// arrive `rounds` times in a row; the time column is wall-clock time per phase (KeepRunningBatch
// counts phases). After each batch, every task must have seen every phase, in order.
//
// The peers are the barriers users hand-roll from Asio today:
//  - a steady_timer cancelled to wake: the count and the timer live on a strand; a waiter waits on
//    the timer (which never expires), the last arrival cancels it, which wakes every waiter.
//    Everything goes through the strand: the timer is not thread-safe, and a cancel that runs
//    before a wait has started would be lost;
//  - channels: an atomic count and two concurrent_channels, one per phase parity; the last
//    arrival sends one message per waiter into its phase's channel. Two channels because a fast
//    task that goes on to the next phase would otherwise take a message meant for a slow one.

#include <asio_sync/barrier.hpp>

#include <benchmark/benchmark.h>

#include "support/harness.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/experimental/concurrent_channel.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <array>
#include <atomic>
#include <cstddef>
#include <memory>

namespace {

namespace asio = boost::asio;
using asio_sync::bench::context_threads;
using asio_sync::bench::rounds;
using asio_sync::bench::run_coroutines;
using boost::system::error_code;

// Each barrier's `arrive_and_wait()` returns an awaitable of the phase number.

struct ours
{
    asio_sync::barrier b;

    ours(asio::io_context& ctx, std::size_t parties) : b(ctx, parties) {}

    asio::awaitable<std::size_t> arrive_and_wait() { return b.async_arrive_and_wait(asio::use_awaitable); }
};

class timer_barrier
{
public:
    timer_barrier(asio::io_context& ctx, std::size_t parties)
        : strand_(asio::make_strand(ctx)), timer_(strand_, asio::steady_timer::time_point::max()),
          parties_(parties), missing_(parties)
    {
    }

    asio::awaitable<std::size_t> arrive_and_wait()
    {
        co_await asio::post(strand_, asio::use_awaitable); // resumes on the strand
        const std::size_t phase = phase_;
        if (--missing_ == 0)
        {
            missing_ = parties_;
            ++phase_;
            timer_.cancel();
            co_return phase;
        }
        co_await timer_.async_wait(asio::as_tuple(asio::use_awaitable)); // operation_aborted: woken
        co_return phase;
    }

private:
    asio::strand<asio::io_context::executor_type> strand_;
    asio::steady_timer timer_;
    std::size_t parties_;
    std::size_t missing_;
    std::size_t phase_ = 0;
};

class channel_barrier
{
public:
    channel_barrier(asio::io_context& ctx, std::size_t parties)
        : parties_(parties), missing_(parties), wake_{std::make_unique<channel>(ctx, parties),
                                                      std::make_unique<channel>(ctx, parties)}
    {
    }

    asio::awaitable<std::size_t> arrive_and_wait()
    {
        // Read before arriving: the phase cannot move on before this arrival.
        const std::size_t phase = phase_.load(std::memory_order_acquire);
        channel& wake = *wake_[phase % 2];
        if (missing_.fetch_sub(1, std::memory_order_acq_rel) == 1)
        {
            missing_.store(parties_, std::memory_order_relaxed);
            phase_.store(phase + 1, std::memory_order_release);
            for (std::size_t i = 1; i < parties_; ++i)
                wake.try_send(error_code());
            co_return phase;
        }
        co_await wake.async_receive(asio::use_awaitable);
        co_return phase;
    }

private:
    using channel = asio::experimental::concurrent_channel<void(error_code)>;

    std::size_t parties_;
    std::atomic<std::size_t> missing_;
    std::atomic<std::size_t> phase_{0};
    std::array<std::unique_ptr<channel>, 2> wake_;
};

template <class Barrier>
asio::awaitable<void> participant(Barrier& b, std::atomic<std::size_t>& misnumbered)
{
    for (std::size_t i = 0; i < rounds; ++i)
        if (co_await b.arrive_and_wait() != i)
            misnumbered.fetch_add(1, std::memory_order_relaxed);
}

// Arguments: tasks (the parties), threads.
template <class Barrier>
void BM_barrier_round(benchmark::State& state)
{
    const auto tasks = static_cast<std::size_t>(state.range(0));
    const auto threads = static_cast<std::size_t>(state.range(1));
    asio::io_context ctx(static_cast<int>(threads));
    context_threads pool(ctx, threads);
    while (state.KeepRunningBatch(static_cast<benchmark::IterationCount>(rounds)))
    {
        // A fresh barrier per batch, so that every batch numbers its phases from 0.
        Barrier b(ctx, tasks);
        std::atomic<std::size_t> misnumbered{0};
        const std::size_t failures =
            run_coroutines(ctx, tasks, [&](std::size_t) { return participant(b, misnumbered); });
        if (failures != 0 || misnumbered.load() != 0)
            state.SkipWithError("a task failed or saw a phase out of order");
    }
}

BENCHMARK_TEMPLATE(BM_barrier_round, ours)
    ->ArgNames({"tasks", "threads"})
    ->Args({4, 1})
    ->Args({4, 2})
    ->UseRealTime();
BENCHMARK_TEMPLATE(BM_barrier_round, timer_barrier)
    ->ArgNames({"tasks", "threads"})
    ->Args({4, 2})
    ->UseRealTime();
BENCHMARK_TEMPLATE(BM_barrier_round, channel_barrier)
    ->ArgNames({"tasks", "threads"})
    ->Args({4, 2})
    ->UseRealTime();

} // namespace
