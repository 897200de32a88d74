// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#define BOOST_TEST_MODULE semaphore_allocation
#include <boost/test/unit_test.hpp>

#include <asio_sync/semaphore.hpp>

#include "support/counting_allocator.hpp"
#include "support/replaced_new.hpp"

#include <boost/asio/bind_allocator.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <new>

namespace {

// Sanitizer runtimes replace operator new themselves; there only the handler allocator is counted.
const asio_sync::test::operator_new_hook counting_operator_new(&asio_sync::test::count_operator_new);

} // namespace

namespace asio = boost::asio;
using asio_sync::test::allocation_counts;
using asio_sync::test::counting_allocator;
using asio_sync::test::global_news;
using boost::system::error_code;

namespace {

// Each completion starts the next acquire that has to wait, then releases the permit it waits
// for, so every round queues one waiter and hands it one permit.
template <class Semaphore>
struct waiting_chain
{
    Semaphore* sem;
    counting_allocator<void> alloc;
    int* left;
    int* succeeded;

    void operator()(error_code ec) const
    {
        *succeeded += !ec;
        if (--*left > 0)
            start();
    }

    void start() const
    {
        sem->async_acquire(asio::bind_allocator(alloc, *this));
        BOOST_REQUIRE(sem->waiting() == 1u);
        sem->release();
    }
};

// The same with permit acquires: each completion queues the next acquire, and the permit it
// received, returning when the handler ends, is what grants it. The last one is forgotten, so
// that the counter is empty again for the next chain.
template <class Semaphore>
struct waiting_permit_chain
{
    Semaphore* sem;
    counting_allocator<void> alloc;
    int* left;
    int* succeeded;

    void operator()(error_code ec, typename Semaphore::permit p) const
    {
        *succeeded += !ec && p.count() == 1;
        if (--*left > 0)
            queue();
        else
            p.forget();
    }

    void queue() const
    {
        sem->async_acquire_permit(1, asio::bind_allocator(alloc, *this));
        BOOST_REQUIRE(sem->waiting() == 1u);
    }

    void start() const
    {
        queue();
        sem->release();
    }
};

// The same with timed acquires that are granted before their time runs out: each one starts a
// timer, which the grant cancels.
template <class Semaphore>
struct waiting_timed_chain
{
    Semaphore* sem;
    counting_allocator<void> alloc;
    int* left;
    int* succeeded;

    void operator()(error_code ec) const
    {
        *succeeded += !ec;
        if (--*left > 0)
            start();
    }

    void start() const
    {
        sem->async_acquire_for(1, std::chrono::hours(1), asio::bind_allocator(alloc, *this));
        BOOST_REQUIRE(sem->waiting() == 1u);
        sem->release();
    }
};

template <template <class> class Chain = waiting_chain, class Semaphore>
void run_chain(asio::io_context& ctx, Semaphore& sem, allocation_counts& counts, int rounds)
{
    int left = rounds;
    int succeeded = 0;
    Chain<Semaphore> chain{&sem, counting_allocator<void>(counts), &left, &succeeded};
    asio::post(ctx, [chain] { chain.start(); });
    ctx.restart();
    ctx.run();
    BOOST_TEST(succeeded == rounds);
}

void check_no_global_allocation(std::size_t news)
{
#ifdef ASIO_SYNC_TEST_SANITIZED
    BOOST_TEST_MESSAGE("sanitizer build: operator new is not counted (" << news << ")");
#else
    BOOST_TEST(news == 0u);
#endif
}

// Runs `rounds` waits after a warm-up (which fills Asio's per-thread caches) and checks that none
// of them called the global operator new; `counts` receives what the handlers' allocator saw.
template <template <class> class Chain = waiting_chain, class Semaphore>
void measure_waits(asio::io_context& ctx, Semaphore& sem, allocation_counts& counts, int rounds)
{
    allocation_counts warmup;
    run_chain<Chain>(ctx, sem, warmup, 10);
    const std::size_t news_before = global_news.load();
    run_chain<Chain>(ctx, sem, counts, rounds);
    check_no_global_allocation(global_news.load() - news_before);
    BOOST_TEST(counts.allocations.load() == counts.deallocations.load());
}

} // namespace

BOOST_AUTO_TEST_SUITE(semaphore_allocation)

#ifndef ASIO_SYNC_TEST_SANITIZED
// What the other cases check would hold trivially if operator new were not counted.
BOOST_AUTO_TEST_CASE(operator_new_is_counted)
{
    const std::size_t before = global_news.load();
    ::operator delete(::operator new(1)); // a call, unlike a new-expression, is never elided
    BOOST_TEST(global_news.load() == before + 1);
}
#endif

// The waiting acquire's operation and the completion's submission both go through the
// handler's allocator when the executor honours the allocator property.
BOOST_AUTO_TEST_CASE(a_wait_allocates_only_through_the_handler_allocator)
{
    asio::io_context ctx(1);
    asio_sync::basic_semaphore<asio::io_context::executor_type> sem(ctx.get_executor(), 0);
    allocation_counts counts;
    constexpr int rounds = 1000;
    measure_waits(ctx, sem, counts, rounds);
    BOOST_TEST(counts.allocations.load() >= std::size_t(rounds));
    BOOST_TEST(sem.available() == 0u);
}

// any_io_executor drops the allocator property; the semaphore submits through the io_context
// executor it holds instead, so the operation and the submission both come from the handler's
// allocator, as with the concrete executor.
BOOST_AUTO_TEST_CASE(type_erased_executor_allocates_the_wait_through_the_handler_allocator)
{
    asio::io_context ctx(1);
    asio_sync::semaphore sem(ctx, 0);
    allocation_counts counts;
    constexpr int rounds = 1000;
    measure_waits(ctx, sem, counts, rounds);
    BOOST_TEST(counts.allocations.load() == std::size_t(2 * rounds));
}

// Outside run() Asio's per-thread cache is not there to hide an allocation: a wait started and
// granted from a thread that is not running the context allocates only through the handler's
// allocator, with the type-erased executor too.
BOOST_AUTO_TEST_CASE(a_wait_outside_run_allocates_only_through_the_handler_allocator)
{
    asio::io_context ctx(1);
    asio_sync::semaphore sem(ctx, 0);
    allocation_counts counts;
    int succeeded = 0;
    auto handler =
        asio::bind_allocator(counting_allocator<void>(counts), [&](error_code ec) { succeeded += !ec; });
    sem.async_acquire(handler); // warm-up: the service and the context's first allocations
    sem.release();
    ctx.run();
    constexpr int rounds = 100;
    const std::size_t news_before = global_news.load();
    for (int i = 0; i < rounds; ++i)
    {
        sem.async_acquire(handler);
        sem.release();
        ctx.restart();
        ctx.run();
    }
    check_no_global_allocation(global_news.load() - news_before);
    BOOST_TEST(succeeded == rounds + 1);
    BOOST_TEST(counts.allocations.load() == std::size_t(2 * (rounds + 1)));
}

BOOST_AUTO_TEST_CASE(an_immediate_acquire_allocates_no_operation)
{
    asio::io_context ctx(1);
    asio_sync::basic_semaphore<asio::io_context::executor_type> sem(ctx.get_executor(), 1);
    allocation_counts counts;
    int completed = 0;
    sem.async_acquire(
        asio::bind_allocator(counting_allocator<void>(counts), [&](error_code) { ++completed; }));
    // Only the completion's submission, never a queued operation.
    BOOST_TEST(counts.allocations.load() == 1u);
    ctx.run();
    BOOST_TEST(completed == 1);
    BOOST_TEST(counts.deallocations.load() == 1u);
}

// A permit acquire that waits, granted by a permit coming back: the operation and the submission
// through the handler's allocator, nothing else, with either executor type. The permit itself
// lives in the completion.
BOOST_AUTO_TEST_CASE(a_permit_wait_allocates_only_through_the_handler_allocator)
{
    constexpr int rounds = 1000;
    {
        asio::io_context ctx(1);
        asio_sync::basic_semaphore<asio::io_context::executor_type> sem(ctx.get_executor(), 0);
        allocation_counts counts;
        measure_waits<waiting_permit_chain>(ctx, sem, counts, rounds);
        BOOST_TEST(counts.allocations.load() >= std::size_t(rounds));
        BOOST_TEST(sem.available() == 0u);
    }
    {
        asio::io_context ctx(1);
        asio_sync::semaphore sem(ctx, 0);
        allocation_counts counts;
        measure_waits<waiting_permit_chain>(ctx, sem, counts, rounds);
        BOOST_TEST(counts.allocations.load() == std::size_t(2 * rounds));
        BOOST_TEST(sem.available() == 0u);
    }
}

// A timed acquire that waits allocates through the handler's allocator (the operation, which
// holds the timer, the timer's wait and the completion's submission) and nothing through
// operator new.
BOOST_AUTO_TEST_CASE(a_timed_wait_allocates_only_through_the_handler_allocator)
{
    constexpr int rounds = 1000;
    {
        asio::io_context ctx(1);
        asio_sync::basic_semaphore<asio::io_context::executor_type> sem(ctx.get_executor(), 0);
        allocation_counts counts;
        measure_waits<waiting_timed_chain>(ctx, sem, counts, rounds);
        BOOST_TEST(counts.allocations.load() >= std::size_t(2 * rounds));
        BOOST_TEST(sem.available() == 0u);
    }
    {
        asio::io_context ctx(1);
        asio_sync::semaphore sem(ctx, 0);
        allocation_counts counts;
        measure_waits<waiting_timed_chain>(ctx, sem, counts, rounds);
        BOOST_TEST(counts.allocations.load() == std::size_t(3 * rounds));
        BOOST_TEST(sem.available() == 0u);
    }
}

BOOST_AUTO_TEST_CASE(immediate_permit_and_timed_acquires_allocate_no_operation)
{
    asio::io_context ctx(1);
    asio_sync::basic_semaphore<asio::io_context::executor_type> sem(ctx.get_executor(), 3);
    allocation_counts permit_counts;
    allocation_counts timed_counts;
    allocation_counts timed_permit_counts;
    int completed = 0;
    using permit = asio_sync::basic_semaphore<asio::io_context::executor_type>::permit;
    sem.async_acquire_permit(1, asio::bind_allocator(counting_allocator<void>(permit_counts),
                                                     [&](error_code ec, permit) { completed += !ec; }));
    sem.async_acquire_for(1, std::chrono::hours(1),
                          asio::bind_allocator(counting_allocator<void>(timed_counts),
                                               [&](error_code ec) { completed += !ec; }));
    sem.async_acquire_permit_for(1, std::chrono::hours(1),
                                 asio::bind_allocator(counting_allocator<void>(timed_permit_counts),
                                                      [&](error_code ec, permit) { completed += !ec; }));
    // Only the completions' submissions: no operation, no timer.
    BOOST_TEST(permit_counts.allocations.load() == 1u);
    BOOST_TEST(timed_counts.allocations.load() == 1u);
    BOOST_TEST(timed_permit_counts.allocations.load() == 1u);
    ctx.run();
    BOOST_TEST(completed == 3);
    BOOST_TEST(permit_counts.deallocations.load() == 1u);
    BOOST_TEST(timed_counts.deallocations.load() == 1u);
    BOOST_TEST(timed_permit_counts.deallocations.load() == 1u);
}

BOOST_AUTO_TEST_SUITE_END()
