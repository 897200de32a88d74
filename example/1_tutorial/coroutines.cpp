// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

// Tutorial 2: acquire and release in C++20 coroutines, with boost::asio::use_awaitable.
//
// With use_awaitable as the completion token, `co_await sem.async_acquire(use_awaitable)`
// suspends the coroutine until it holds a permit; the thread meanwhile runs other coroutines.
// An error (the semaphore was closed, or the wait was cancelled) is thrown as a
// boost::system::system_error, and then no permit is held.
//
// The simplest correct way to give the permit back is to let an object do it:
// async_acquire_permit completes with a `permit` that releases when it is destroyed, so an
// exception or an early co_return cannot leak it. The plain pair async_acquire / release is
// shown too, for comparison.
//
// Eight downloads share three permits. The program checks that never more than three ran at
// once and that all permits are back at the end.

#include <asio_sync/semaphore.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>

namespace asio = boost::asio;
using asio::use_awaitable;

constexpr std::size_t permits = 3;
constexpr int download_count = 8;

int running = 0;
int most_running = 0;
int finished = 0;

// Stands in for the real work: a short asynchronous wait.
asio::awaitable<void> transfer(int id)
{
    most_running = std::max(most_running, ++running);
    std::printf("download %d starts (%d running)\n", id, running);
    asio::steady_timer timer(co_await asio::this_coro::executor, std::chrono::milliseconds(10 + 5 * id));
    co_await timer.async_wait(use_awaitable);
    --running;
    ++finished;
}

// Preferred: the permit object gives the permit back however the coroutine leaves this scope.
asio::awaitable<void> download(asio_sync::semaphore& sem, int id)
{
    asio_sync::semaphore::permit permit = co_await sem.async_acquire_permit(1, use_awaitable);
    co_await transfer(id);
} // `permit` is destroyed here: the next waiting download starts

// Also correct, as long as every path out of the coroutine after the acquire reaches release().
asio::awaitable<void> download_by_hand(asio_sync::semaphore& sem, int id)
{
    co_await sem.async_acquire(use_awaitable);
    try
    {
        co_await transfer(id);
    }
    catch (...)
    {
        sem.release();
        throw;
    }
    sem.release();
}

int main()
{
    asio::io_context ctx;
    asio_sync::semaphore sem(ctx, permits);

    // co_spawn starts each coroutine; `detached` means nobody waits for its result (an exception
    // escaping it would be lost, which is why the examples catch or avoid them).
    for (int id = 1; id <= download_count; ++id)
    {
        if (id % 2 == 0)
            asio::co_spawn(ctx, download(sem, id), asio::detached);
        else
            asio::co_spawn(ctx, download_by_hand(sem, id), asio::detached);
    }
    ctx.run();

    std::printf("%d downloads finished, at most %d at once, %zu of %zu permits free\n", finished,
                most_running, sem.available(), permits);
    return finished == download_count && most_running <= static_cast<int>(permits) &&
                   sem.available() == permits
               ? 0
               : 1;
}
