// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

// Tutorial 4: waiting for a permit with a time limit, and the `acquire || timer` trap.
//
// async_acquire_for(n, timeout, token) is async_acquire with a deadline. If the permits have not
// been granted when the time runs out, it completes with asio_sync::error::timed_out and holds
// nothing. The semaphore decides the grant and the timeout under its own lock, so exactly one of
// them wins: either you have the permits, or you have an error and owe nothing.
//
// The tempting alternative is to race a plain acquire against a timer with Asio's awaitable
// operators:
//
//     auto winner = co_await (sem.async_acquire(use_awaitable) || timer.async_wait(use_awaitable));
//
// When the timer fires first, `||` cancels the acquire. But if the semaphore granted the acquire
// in the short moment between the timer firing and that cancellation, the cancellation comes too
// late: the acquire completes with success, and `||` throws that result away because the timer
// won. The program believes it timed out, so nobody ever releases that permit. Rare in testing,
// fatal in production: each occurrence shrinks the semaphore by one, until nothing runs.
//
// This program first shows a plain timeout, then stages that exact timing on one thread for both
// versions: `||` loses the permit, async_acquire_for keeps it. It exits non-zero if the timed
// acquire misbehaves.

#include <asio_sync/semaphore.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <cstddef>
#include <cstdio>
#include <thread>

namespace asio = boost::asio;
using namespace std::chrono_literals;
using namespace asio::experimental::awaitable_operators; // for `||`
using asio::use_awaitable;

constexpr auto deadline = 20ms; // how long each waiter is prepared to wait

// Holds the semaphore's only permit until just after the waiter's deadline, then gives it back.
// It first lets the waiter start (and arm its timer). The thread is then kept busy past the
// deadline (as a slow handler would), and the release happens one hop later: by then the waiter's
// timer has fired, but its handler has not run yet.
asio::awaitable<void> hold_past_deadline(asio_sync::semaphore& sem)
{
    co_await sem.async_acquire(use_awaitable);
    co_await asio::post(co_await asio::this_coro::executor, use_awaitable);
    std::this_thread::sleep_for(deadline + 10ms);
    co_await asio::post(co_await asio::this_coro::executor, use_awaitable);
    sem.release();
}

// The wrong way. Returns normally either way; the damage is invisible here.
asio::awaitable<void> acquire_or_timer(asio_sync::semaphore& sem)
{
    asio::steady_timer timer(co_await asio::this_coro::executor, deadline);
    auto winner = co_await (sem.async_acquire(use_awaitable) || timer.async_wait(use_awaitable));
    if (winner.index() == 0)
        sem.release(); // we had the permit: done with it
    else
        std::printf("  ||: the timer won, so we think we hold nothing\n");
}

// The right way. `as_tuple` turns the error into a value instead of an exception.
asio::awaitable<void> acquire_for(asio_sync::semaphore& sem)
{
    auto [ec] = co_await sem.async_acquire_for(1, deadline, asio::as_tuple(use_awaitable));
    if (!ec)
        sem.release(); // we had the permit: done with it
    std::printf("  async_acquire_for: %s\n", ec ? ec.message().c_str() : "granted (late, but ours)");
}

// Runs the holder and then the waiter on a fresh single-threaded io_context; returns the permits
// left in the semaphore afterwards, when nobody holds one any more.
template <class Waiter>
std::size_t stage(Waiter waiter)
{
    asio::io_context ctx;
    asio_sync::semaphore sem(ctx, 1);
    asio::co_spawn(ctx, hold_past_deadline(sem), asio::detached);
    asio::co_spawn(ctx, waiter(sem), asio::detached);
    ctx.run();
    return sem.available();
}

int main()
{
    // 1. A plain timeout: the permit is held for 100 ms, the waiter gives up after 20 ms.
    asio::io_context ctx;
    asio_sync::semaphore sem(ctx, 0);
    asio::steady_timer holder(ctx, 100ms);
    holder.async_wait([&](auto) { sem.release(); });
    bool timed_out = false;
    sem.async_acquire_for(1, deadline, [&](boost::system::error_code ec) {
        timed_out = ec == asio_sync::error::timed_out;
        std::printf("waited %lld ms: %s\n", static_cast<long long>(deadline.count()), ec.message().c_str());
    });
    ctx.run();

    // 2. A release that lands just after the deadline.
    std::printf("a release just after the deadline:\n");
    const std::size_t left_by_or = stage(acquire_or_timer);
    const std::size_t left_by_acquire_for = stage(acquire_for);
    std::printf("permits left of 1: %zu with ||, %zu with async_acquire_for\n", left_by_or,
                left_by_acquire_for);
    if (left_by_or == 0)
        std::printf("|| lost the permit: it was granted, reported as a timeout, and never released\n");

    return timed_out && sem.available() == 1 && left_by_acquire_for == 1 ? 0 : 1;
}
