// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

// Notification hand-off: two coroutines take turns, each waking the other once per round, on an
// io_context run by `threads` threads. The time column is wall-clock time per hand-off (one side
// gives the turn to the other, which was waiting for it).
//
// condition_variable: the turn is guarded by an asio_sync::mutex; each side waits with a predicate
// (`turn == me`), passes the turn and calls notify_one, so every hand-off is a notify, an unlock
// and a relock. The nearest hand-rolled Asio idioms do the same without a mutex:
//  - timer: each side waits on its own steady_timer that never expires, and the other side wakes
//    it with cancel(); timers are not thread-safe, so both coroutines run on one strand;
//  - channel: an experimental::concurrent_channel<void(error_code)> per direction; a hand-off is
//    a send that the waiting receive takes.
// After each batch the counters prove that every hand-off happened.

#include <asio_sync/condition_variable.hpp>
#include <asio_sync/mutex.hpp>

#include <benchmark/benchmark.h>

#include "support/harness.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/concurrent_channel.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <cstddef>
#include <mutex>

namespace {

using asio_sync::bench::context_threads;
using asio_sync::bench::rounds;
using asio_sync::bench::run_coroutines;
namespace asio = boost::asio;

constexpr std::size_t sides = 2;
constexpr std::size_t handoffs_per_batch = sides * rounds;

// Arguments: threads. `batch(ctx)` runs one batch of hand-offs and returns how many happened.
template <class Batch>
void run_handoffs(benchmark::State& state, Batch batch)
{
    const auto threads = static_cast<std::size_t>(state.range(0));
    asio::io_context ctx(static_cast<int>(threads));
    context_threads pool(ctx, threads);
    while (state.KeepRunningBatch(static_cast<benchmark::IterationCount>(handoffs_per_batch)))
    {
        // SkipWithError also makes the next KeepRunningBatch return false, ending the loop.
        if (batch(ctx) != handoffs_per_batch)
            state.SkipWithError("a task failed or a hand-off was lost");
    }
}

// ---------------------------------------------------------------------------------------------
// condition_variable

struct cv_turns
{
    explicit cv_turns(asio::io_context& ctx) : mutex(ctx), cv(ctx) {}

    asio_sync::mutex mutex;
    asio_sync::condition_variable cv;
    std::size_t turn = 0; // guarded by mutex, as is handoffs
    std::size_t handoffs = 0;
};

asio::awaitable<void> cv_side(cv_turns& t, std::size_t me)
{
    std::unique_lock<asio_sync::mutex> lock = co_await t.mutex.async_scoped_lock(asio::use_awaitable);
    for (std::size_t i = 0; i < rounds; ++i)
    {
        co_await t.cv.async_wait(
            lock, [&] { return t.turn == me; }, asio::use_awaitable);
        t.turn = 1 - me;
        ++t.handoffs;
        t.cv.notify_one();
    }
}

void BM_condition_variable_notify_one(benchmark::State& state)
{
    run_handoffs(state, [](asio::io_context& ctx) {
        cv_turns t(ctx);
        const std::size_t failures =
            run_coroutines(ctx, sides, [&](std::size_t me) { return cv_side(t, me); });
        return failures == 0 ? t.handoffs : 0;
    });
}

// ---------------------------------------------------------------------------------------------
// steady_timer cancelled to wake

struct timer_turns
{
    explicit timer_turns(asio::strand<asio::io_context::executor_type> s)
        : strand(s), timers{asio::steady_timer(s), asio::steady_timer(s)}
    {
    }

    asio::strand<asio::io_context::executor_type> strand;
    asio::steady_timer timers[sides];
    std::size_t turn = 0; // touched only on the strand
    std::size_t handoffs = 0;
};

asio::awaitable<void> timer_side(timer_turns& t, std::size_t me)
{
    for (std::size_t i = 0; i < rounds; ++i)
    {
        while (t.turn != me)
        {
            t.timers[me].expires_at(asio::steady_timer::time_point::max());
            co_await t.timers[me].async_wait(asio::as_tuple(asio::use_awaitable));
        }
        t.turn = 1 - me;
        ++t.handoffs;
        t.timers[1 - me].cancel();
    }
}

void BM_timer_cancel_handoff(benchmark::State& state)
{
    run_handoffs(state, [](asio::io_context& ctx) {
        timer_turns t(asio::make_strand(ctx));
        const std::size_t failures = run_coroutines(ctx, sides, [&](std::size_t me) {
            return asio::co_spawn(t.strand, timer_side(t, me), asio::use_awaitable);
        });
        return failures == 0 ? t.handoffs : 0;
    });
}

// ---------------------------------------------------------------------------------------------
// a channel per direction

using notify_channel = asio::experimental::concurrent_channel<void(boost::system::error_code)>;

struct channel_turns
{
    explicit channel_turns(asio::io_context& ctx) : to{notify_channel(ctx), notify_channel(ctx)} {}

    notify_channel to[sides]; // to[i] wakes side i
    std::size_t handoffs = 0; // written by the side that holds the turn
};

asio::awaitable<void> channel_side(channel_turns& t, std::size_t me)
{
    for (std::size_t i = 0; i < rounds; ++i)
    {
        if (me == 1 || i > 0)
            co_await t.to[me].async_receive(asio::use_awaitable);
        ++t.handoffs;
        co_await t.to[1 - me].async_send(boost::system::error_code(), asio::use_awaitable);
    }
    if (me == 0)
        co_await t.to[me].async_receive(asio::use_awaitable); // the last hand-off
}

void BM_channel_handoff(benchmark::State& state)
{
    run_handoffs(state, [](asio::io_context& ctx) {
        channel_turns t(ctx);
        const std::size_t failures =
            run_coroutines(ctx, sides, [&](std::size_t me) { return channel_side(t, me); });
        return failures == 0 ? t.handoffs : 0;
    });
}

} // namespace

BENCHMARK(BM_condition_variable_notify_one)->ArgName("threads")->Arg(1)->Arg(2)->UseRealTime();
BENCHMARK(BM_timer_cancel_handoff)->ArgName("threads")->Arg(1)->Arg(2)->UseRealTime();
BENCHMARK(BM_channel_handoff)->ArgName("threads")->Arg(1)->Arg(2)->UseRealTime();
