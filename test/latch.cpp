// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#define BOOST_TEST_MODULE latch
#include <boost/test/unit_test.hpp>

#include <asio_sync/latch.hpp>

#include "support/counting_allocator.hpp"
#include "support/deadline_checks.hpp"
#include "support/event_checks.hpp"
#include "support/handler.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/bind_allocator.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>

#include <atomic>
#include <stdexcept>
#include <type_traits>
#include <vector>

namespace asio = boost::asio;
using asio_sync::latch;
using asio_sync::test::drain;
using asio_sync::test::make_record;
using asio_sync::test::order_log;
using boost::system::error_code;

namespace {

// A latch of one, so that the checks shared with the events can open it with one count_down.
struct latch_of_one : latch
{
    explicit latch_of_one(asio::io_context& ctx) : latch(ctx, 1) {}
};

void count_down_once(latch_of_one& l)
{
    l.count_down();
}

// The timed waits, for the table of test/support/deadline_checks.hpp. The latch counts one: it
// blocks until that count_down, which opens it for good.
struct timed_wait
{
    static constexpr const char* name = "latch.async_wait_for/until";

    struct object : asio_sync::latch
    {
        explicit object(asio::io_context& io) : asio_sync::latch(io, 1) {}
        bool blocked = false; // else the first wait opens it
    };

    static void block(object& l) { l.blocked = true; }
    static void grant(object& l) { l.count_down(); }
    static void release(object&) {}
    static bool idle(object& l) { return l.try_wait(); }

    template <class Duration, class Token>
    static auto wait_for(object& l, Duration d, Token&& token)
    {
        if (!l.blocked && !l.try_wait())
            l.count_down();
        return l.async_wait_for(d, std::forward<Token>(token));
    }

    template <class TimePoint, class Token>
    static auto wait_until(object& l, TimePoint t, Token&& token)
    {
        if (!l.blocked && !l.try_wait())
            l.count_down();
        return l.async_wait_until(t, std::forward<Token>(token));
    }
};

} // namespace

BOOST_AUTO_TEST_SUITE(latch_suite)

BOOST_DATA_TEST_CASE(every_timed_wait,
                     boost::unit_test::data::make(asio_sync::test::deadline_checks<timed_wait>::all()), check)
{
    check.run();
}

BOOST_AUTO_TEST_CASE(construction_and_observers)
{
    asio::io_context ctx;
    latch three(ctx, 3);
    BOOST_TEST(three.count() == 3u);
    BOOST_TEST(!three.try_wait());
    latch open_at_start(ctx.get_executor(), 0);
    BOOST_TEST(open_at_start.try_wait());
    BOOST_TEST((three.get_executor() == asio::any_io_executor(ctx.get_executor())));
    static_assert(!std::is_copy_constructible_v<latch>);
    static_assert(!std::is_move_constructible_v<latch>);
    static_assert(std::is_same_v<latch::rebind_executor<asio::io_context::executor_type>::other,
                                 asio_sync::basic_latch<asio::io_context::executor_type>>);
}

BOOST_AUTO_TEST_CASE(waits_complete_in_fifo_order_when_the_count_reaches_zero)
{
    asio::io_context ctx;
    latch l(ctx, 3);
    order_log log;
    for (int id = 1; id <= 3; ++id)
        l.async_wait(log.handler(id));
    l.count_down();
    l.count_down();
    drain(ctx);
    BOOST_TEST(log.order.empty());
    BOOST_TEST(l.count() == 1u);
    l.count_down();
    BOOST_TEST(log.order.empty()); // never inside count_down
    BOOST_TEST(l.try_wait());
    drain(ctx);
    BOOST_TEST(log.order == (std::vector<int>{1, 2, 3}));
    for (auto ec : log.codes)
        BOOST_TEST(!ec);
    l.async_wait(log.handler(4)); // stays open
    drain(ctx);
    BOOST_TEST(log.order.size() == 4u);
}

BOOST_AUTO_TEST_CASE(count_down_by_more_than_one)
{
    asio::io_context ctx;
    latch l(ctx, 5);
    auto [out, handler] = make_record();
    l.async_wait(handler);
    l.count_down(0);
    BOOST_TEST(l.count() == 5u);
    l.count_down(4);
    BOOST_TEST(!l.try_wait());
    l.count_down(1);
    drain(ctx);
    BOOST_TEST(out->calls == 1);
}

BOOST_AUTO_TEST_CASE(counting_below_zero_throws_and_changes_nothing)
{
    asio::io_context ctx;
    latch l(ctx, 2);
    auto [out, handler] = make_record();
    l.async_wait(handler);
    BOOST_CHECK_THROW(l.count_down(3), std::invalid_argument);
    BOOST_TEST(l.count() == 2u);
    BOOST_TEST(!l.try_wait());
    l.count_down(2);
    BOOST_CHECK_THROW(l.count_down(), std::invalid_argument);
    BOOST_TEST(l.count() == 0u);
    BOOST_CHECK_NO_THROW(l.count_down(0));
    drain(ctx);
    BOOST_TEST(out->calls == 1); // completed once, by the count_down that reached zero
}

BOOST_AUTO_TEST_CASE(a_wait_on_an_open_latch_is_posted_not_invoked_inline)
{
    asio_sync::test::check_immediate_wait_is_posted<latch_of_one>(count_down_once);
}

BOOST_AUTO_TEST_CASE(per_operation_cancellation_of_each_type)
{
    asio_sync::test::check_per_operation_cancellation<latch_of_one>(count_down_once);
}

BOOST_AUTO_TEST_CASE(a_cancellation_after_the_last_count_down_does_nothing)
{
    asio_sync::test::check_cancellation_after_the_signal_does_nothing<latch_of_one>(count_down_once);
}

BOOST_AUTO_TEST_CASE(cancel_aborts_every_queued_wait)
{
    asio_sync::test::check_cancel_aborts_every_queued_wait<latch_of_one>();
}

BOOST_AUTO_TEST_CASE(destruction_and_context_shutdown)
{
    asio_sync::test::check_destruction_and_shutdown<latch_of_one>();
}

BOOST_AUTO_TEST_CASE(every_token)
{
    asio_sync::test::check_tokens<latch_of_one>(count_down_once);
}

BOOST_AUTO_TEST_CASE(a_queued_wait_allocates_only_through_the_handler_allocator)
{
    asio::io_context ctx(1);
    latch l(ctx, 1);
    asio_sync::test::allocation_counts counts;
    int succeeded = 0;
    l.async_wait(asio::bind_allocator(asio_sync::test::counting_allocator<void>(counts),
                                      [&](error_code ec) { succeeded += !ec; }));
    l.count_down();
    ctx.run();
    BOOST_TEST(succeeded == 1);
    BOOST_TEST(counts.allocations.load() == 2u); // the operation and the submission
    BOOST_TEST(counts.deallocations.load() == 2u);
}

// Many tasks count down from several threads while others wait: every wait completes exactly
// once, successfully, and only after the last count_down.
BOOST_AUTO_TEST_CASE(a_join_of_many_tasks_on_a_thread_pool)
{
    constexpr int tasks = 1000;
    constexpr int waiters = 200;
    asio::thread_pool pool(4);
    latch l(pool.get_executor(), tasks);
    std::atomic<int> counted{0};
    std::atomic<int> successes{0};
    std::atomic<int> early{0};
    for (int i = 0; i < waiters; ++i)
        asio::post(pool, [&] {
            l.async_wait([&](error_code ec) {
                successes += !ec;
                early += counted.load() != tasks;
            });
        });
    for (int i = 0; i < tasks; ++i)
        asio::post(pool, [&] {
            ++counted;
            l.count_down();
        });
    pool.join();
    BOOST_TEST(successes.load() == waiters);
    BOOST_TEST(early.load() == 0);
    BOOST_TEST(l.count() == 0u);
}

BOOST_AUTO_TEST_SUITE_END()
