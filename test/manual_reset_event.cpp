// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#define BOOST_TEST_MODULE manual_reset_event
#include <boost/test/unit_test.hpp>

#include <asio_sync/manual_reset_event.hpp>

#include "support/deadline_checks.hpp"
#include "support/event_checks.hpp"
#include "support/fault_injection.hpp"
#include "support/handler.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/bind_allocator.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>

#include <atomic>
#include <future>
#include <memory>
#include <new>
#include <thread>
#include <type_traits>
#include <vector>

namespace asio = boost::asio;
using asio_sync::manual_reset_event;
using asio_sync::test::drain;
using asio_sync::test::failing_allocator;
using asio_sync::test::fault_plan;
using asio_sync::test::make_record;
using asio_sync::test::order_log;
using boost::system::error_code;

namespace {

void set(manual_reset_event& event)
{
    event.set();
}

// The timed waits, for the table of test/support/deadline_checks.hpp. The event starts set; a
// clear one blocks. A set lets every wait through, so a successful wait holds nothing.
struct timed_wait : asio_sync::test::async_wait_deadlines
{
    static constexpr const char* name = "manual_reset_event.async_wait_for/until";

    struct object : asio_sync::manual_reset_event
    {
        explicit object(asio::io_context& io) : asio_sync::manual_reset_event(io, true) {}
    };

    static void block(object& e) { e.reset(); }
    static void grant(object& e) { e.set(); }
    static void release(object&) {}
    static bool idle(object& e) { return e.is_set(); }
};

} // namespace

BOOST_AUTO_TEST_SUITE(manual_reset_event_suite)

BOOST_DATA_TEST_CASE(every_timed_wait,
                     boost::unit_test::data::make(asio_sync::test::deadline_checks<timed_wait>::all()), check)
{
    check.run();
}

BOOST_AUTO_TEST_CASE(construction_and_observers)
{
    asio::io_context ctx;
    manual_reset_event clear(ctx);
    BOOST_TEST(!clear.is_set());
    manual_reset_event set_at_start(ctx.get_executor(), true);
    BOOST_TEST(set_at_start.is_set());
    BOOST_TEST((clear.get_executor() == asio::any_io_executor(ctx.get_executor())));
    static_assert(!std::is_copy_constructible_v<manual_reset_event>);
    static_assert(!std::is_move_constructible_v<manual_reset_event>);
    static_assert(std::is_same_v<manual_reset_event::rebind_executor<asio::io_context::executor_type>::other,
                                 asio_sync::basic_manual_reset_event<asio::io_context::executor_type>>);
}

BOOST_AUTO_TEST_CASE(set_and_reset_change_the_state)
{
    asio::io_context ctx;
    manual_reset_event event(ctx);
    event.set();
    BOOST_TEST(event.is_set());
    event.set();
    BOOST_TEST(event.is_set());
    event.reset();
    BOOST_TEST(!event.is_set());
    event.reset();
    BOOST_TEST(!event.is_set());
}

BOOST_AUTO_TEST_CASE(a_wait_on_a_set_event_is_posted_not_invoked_inline)
{
    asio_sync::test::check_immediate_wait_is_posted<manual_reset_event>(set);
}

BOOST_AUTO_TEST_CASE(set_completes_every_waiter_in_fifo_order_and_stays_set)
{
    asio::io_context ctx;
    manual_reset_event event(ctx);
    order_log log;
    for (int id = 1; id <= 4; ++id)
        event.async_wait(log.handler(id));
    drain(ctx);
    BOOST_TEST(log.order.empty());
    event.set();
    BOOST_TEST(log.order.empty()); // never inside set()
    drain(ctx);
    BOOST_TEST(log.order == (std::vector<int>{1, 2, 3, 4}));
    for (auto ec : log.codes)
        BOOST_TEST(!ec);
    BOOST_TEST(event.is_set());
    event.async_wait(log.handler(5)); // later waits pass
    drain(ctx);
    BOOST_TEST(log.order.size() == 5u);
}

BOOST_AUTO_TEST_CASE(reset_makes_later_waits_queue_and_leaves_completed_ones_alone)
{
    asio::io_context ctx;
    manual_reset_event event(ctx);
    order_log log;
    event.async_wait(log.handler(1));
    event.set();
    event.reset(); // the first wait was let through by the set
    event.async_wait(log.handler(2));
    drain(ctx);
    BOOST_TEST(log.order == (std::vector<int>{1}));
    event.set();
    drain(ctx);
    BOOST_TEST(log.order == (std::vector<int>{1, 2}));
}

BOOST_AUTO_TEST_CASE(per_operation_cancellation_of_each_type)
{
    asio_sync::test::check_per_operation_cancellation<manual_reset_event>(set);
}

BOOST_AUTO_TEST_CASE(a_cancellation_after_the_set_does_nothing)
{
    asio_sync::test::check_cancellation_after_the_signal_does_nothing<manual_reset_event>(set);
}

BOOST_AUTO_TEST_CASE(a_cancelled_wait_leaves_the_event_set_for_the_others)
{
    asio::io_context ctx;
    manual_reset_event event(ctx);
    asio::cancellation_signal cancel;
    order_log log;
    event.async_wait(asio::bind_cancellation_slot(cancel.slot(), log.handler(1)));
    event.async_wait(log.handler(2));
    cancel.emit(asio::cancellation_type::terminal);
    event.set();
    drain(ctx);
    BOOST_TEST(log.order == (std::vector<int>{1, 2}));
    BOOST_TEST(log.codes.at(0) == asio::error::operation_aborted);
    BOOST_TEST(!log.codes.at(1));
    BOOST_TEST(event.is_set());
}

BOOST_AUTO_TEST_CASE(cancel_aborts_every_queued_wait)
{
    asio_sync::test::check_cancel_aborts_every_queued_wait<manual_reset_event>();
}

BOOST_AUTO_TEST_CASE(cancel_leaves_the_state_alone)
{
    asio::io_context ctx;
    manual_reset_event event(ctx, true);
    BOOST_TEST(event.cancel() == 0u);
    BOOST_TEST(event.is_set());
}

BOOST_AUTO_TEST_CASE(destruction_and_context_shutdown)
{
    asio_sync::test::check_destruction_and_shutdown<manual_reset_event>();
}

BOOST_AUTO_TEST_CASE(the_first_waiter_continues_the_setter_and_the_rest_are_forks)
{
    asio_sync::test::check_completion_relations<asio_sync::basic_manual_reset_event>(
        [](auto& event) { event.set(); }, {true, false, false}, 3);
}

BOOST_AUTO_TEST_CASE(every_token)
{
    asio_sync::test::check_tokens<manual_reset_event>(set);
}

BOOST_AUTO_TEST_CASE(a_queued_wait_allocates_only_through_the_handler_allocator)
{
    asio_sync::test::check_waits_allocate_through_the_handler_allocator<manual_reset_event>(
        [](manual_reset_event& event) {
            event.set();
            event.reset();
        });
}

BOOST_AUTO_TEST_CASE(a_wait_on_a_set_event_allocates_no_operation)
{
    asio::io_context ctx;
    manual_reset_event event(ctx, true);
    asio_sync::test::allocation_counts counts;
    int completed = 0;
    event.async_wait(asio::bind_allocator(asio_sync::test::counting_allocator<void>(counts),
                                          [&](error_code) { ++completed; }));
    BOOST_TEST(counts.allocations.load() == 1u); // the submission only
    ctx.run();
    BOOST_TEST(completed == 1);
}

// A completion that cannot be submitted loses its own handler only: set() does not throw, the
// waiters behind it complete, and the event stays set.
BOOST_AUTO_TEST_CASE(a_waiter_that_cannot_be_completed_does_not_keep_the_others_waiting)
{
    asio::io_context ctx;
    manual_reset_event event(ctx);
    fault_plan plan;
    plan.fail_at = 2; // the operation, then the completion
    plan.armed = true;
    int failed = 0;
    order_log log;
    event.async_wait(asio::bind_allocator(failing_allocator<void>(plan), [&](error_code) { ++failed; }));
    event.async_wait(log.handler(2));
    BOOST_CHECK_NO_THROW(event.set());
    ctx.run();
    BOOST_TEST(plan.failures == 1u);
    BOOST_TEST(failed == 0);
    BOOST_TEST(log.order == (std::vector<int>{2}));
    BOOST_TEST(event.is_set());
}

BOOST_AUTO_TEST_CASE(a_wait_that_cannot_post_or_queue_throws_and_changes_nothing)
{
    asio::io_context ctx;
    fault_plan plan;
    plan.armed = true;
    int calls = 0;
    auto handler = asio::bind_allocator(failing_allocator<void>(plan), [&](error_code) { ++calls; });
    manual_reset_event set_event(ctx, true);
    plan.fail_at = 1;
    BOOST_CHECK_THROW(set_event.async_wait(handler), std::bad_alloc); // the submission
    BOOST_TEST(set_event.is_set());
    manual_reset_event clear_event(ctx);
    plan.fail_at = 2;
    BOOST_CHECK_THROW(clear_event.async_wait(handler), std::bad_alloc); // the operation
    BOOST_TEST(clear_event.cancel() == 0u);
    ctx.run();
    BOOST_TEST(calls == 0);
}

// Threads wait, set and reset at once: every wait completes exactly once, and every wait started
// before the final set() succeeds.
BOOST_AUTO_TEST_CASE(every_wait_completes_exactly_once_under_concurrent_set_and_reset)
{
    constexpr int waiters = 2000;
    asio::thread_pool pool(4);
    manual_reset_event event(pool.get_executor());
    std::atomic<int> completions{0};
    std::atomic<int> successes{0};
    std::atomic<int> started{0};
    std::atomic<bool> stop{false};
    std::thread toggler([&] {
        while (!stop.load())
        {
            event.set();
            event.reset();
        }
    });
    for (int i = 0; i < waiters; ++i)
        asio::post(pool, [&] {
            event.async_wait([&](error_code ec) {
                successes += !ec;
                ++completions;
            });
            ++started;
        });
    while (started.load() != waiters)
        std::this_thread::yield();
    stop = true;
    toggler.join();
    event.set();
    pool.join();
    BOOST_TEST(completions.load() == waiters);
    BOOST_TEST(successes.load() == waiters);
}

// A wait cancelled from its strand while another thread sets the event: one outcome each, and
// the event stays set.
BOOST_AUTO_TEST_CASE(cancellation_racing_set_completes_each_wait_once)
{
    asio_sync::test::race_cancellation_with_the_signal<manual_reset_event>(
        500, set, [](error_code ec, const manual_reset_event& event) {
            BOOST_TEST((!ec || ec == asio::error::operation_aborted));
            BOOST_TEST(event.is_set());
        });
}

BOOST_AUTO_TEST_SUITE_END()
