// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#define BOOST_TEST_MODULE auto_reset_event
#include <boost/test/unit_test.hpp>

#include <asio_sync/auto_reset_event.hpp>

#include "support/deadline_checks.hpp"
#include "support/event_checks.hpp"
#include "support/fault_injection.hpp"
#include "support/handler.hpp"
#include "support/racing_calls.hpp"
#include "support/sanitizers.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/bind_allocator.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>

#include <atomic>
#include <new>
#include <thread>
#include <type_traits>
#include <vector>

namespace asio = boost::asio;
using asio_sync::auto_reset_event;
using asio_sync::test::drain;
using asio_sync::test::failing_allocator;
using asio_sync::test::fault_plan;
using asio_sync::test::make_record;
using asio_sync::test::order_log;
using asio_sync::test::under_tsan;
using boost::system::error_code;

namespace {

void set(auto_reset_event& event)
{
    event.set();
}

// The timed waits, for the table of test/support/deadline_checks.hpp. The event starts set; a
// wait consumes the set, so `release` sets it again: a successful wait took exactly one set, a
// timed-out one none, and the event ends set either way unless a set was lost.
struct timed_wait : asio_sync::test::async_wait_deadlines
{
    static constexpr const char* name = "auto_reset_event.async_wait_for/until";

    struct object : auto_reset_event
    {
        explicit object(asio::io_context& io) : auto_reset_event(io, true) {}
    };

    static void block(object& e) { BOOST_TEST_REQUIRE(e.reset()); }
    static void grant(object& e) { e.set(); }
    static void release(object& e) { e.set(); }
    static bool idle(object& e) { return e.is_set(); }
};

} // namespace

BOOST_AUTO_TEST_SUITE(auto_reset_event_suite)

BOOST_DATA_TEST_CASE(every_timed_wait,
                     boost::unit_test::data::make(asio_sync::test::deadline_checks<timed_wait>::all()), check)
{
    check.run();
}

BOOST_AUTO_TEST_CASE(construction_and_observers)
{
    asio::io_context ctx;
    auto_reset_event clear(ctx);
    BOOST_TEST(!clear.is_set());
    auto_reset_event set_at_start(ctx.get_executor(), true);
    BOOST_TEST(set_at_start.is_set());
    BOOST_TEST((clear.get_executor() == asio::any_io_executor(ctx.get_executor())));
    static_assert(!std::is_copy_constructible_v<auto_reset_event>);
    static_assert(!std::is_move_constructible_v<auto_reset_event>);
    static_assert(std::is_same_v<auto_reset_event::rebind_executor<asio::io_context::executor_type>::other,
                                 asio_sync::basic_auto_reset_event<asio::io_context::executor_type>>);
}

BOOST_AUTO_TEST_CASE(a_set_saturates_and_reset_consumes_it)
{
    asio::io_context ctx;
    auto_reset_event event(ctx);
    BOOST_TEST(!event.reset());
    event.set();
    event.set(); // still one set
    BOOST_TEST(event.is_set());
    BOOST_TEST(event.reset());
    BOOST_TEST(!event.is_set());
    BOOST_TEST(!event.reset());
}

BOOST_AUTO_TEST_CASE(a_wait_on_a_set_event_is_posted_and_consumes_the_set)
{
    asio_sync::test::check_immediate_wait_is_posted<auto_reset_event>(set);
    asio::io_context ctx;
    auto_reset_event event(ctx, true);
    order_log log;
    event.async_wait(log.handler(1));
    BOOST_TEST(!event.is_set()); // taken at initiation
    event.async_wait(log.handler(2));
    drain(ctx);
    BOOST_TEST(log.order == (std::vector<int>{1}));
}

BOOST_AUTO_TEST_CASE(each_set_completes_exactly_one_waiter_oldest_first)
{
    asio::io_context ctx;
    auto_reset_event event(ctx);
    order_log log;
    for (int id = 1; id <= 3; ++id)
        event.async_wait(log.handler(id));
    event.set();
    BOOST_TEST(log.order.empty()); // never inside set()
    drain(ctx);
    BOOST_TEST(log.order == (std::vector<int>{1}));
    event.set();
    event.set();
    drain(ctx);
    BOOST_TEST(log.order == (std::vector<int>{1, 2, 3}));
    for (auto ec : log.codes)
        BOOST_TEST(!ec);
    BOOST_TEST(!event.is_set()); // every set was consumed
}

BOOST_AUTO_TEST_CASE(sets_while_nobody_waits_let_one_wait_through)
{
    asio::io_context ctx;
    auto_reset_event event(ctx);
    event.set();
    event.set();
    order_log log;
    event.async_wait(log.handler(1));
    event.async_wait(log.handler(2));
    drain(ctx);
    BOOST_TEST(log.order == (std::vector<int>{1}));
}

BOOST_AUTO_TEST_CASE(per_operation_cancellation_of_each_type)
{
    asio_sync::test::check_per_operation_cancellation<auto_reset_event>(set);
}

BOOST_AUTO_TEST_CASE(a_cancellation_after_the_set_does_nothing)
{
    asio_sync::test::check_cancellation_after_the_signal_does_nothing<auto_reset_event>(set);
    // ... and the set it received is not given to anyone else.
    asio::io_context ctx;
    auto_reset_event event(ctx);
    asio::cancellation_signal cancel;
    order_log log;
    event.async_wait(asio::bind_cancellation_slot(cancel.slot(), log.handler(1)));
    event.async_wait(log.handler(2));
    event.set();
    cancel.emit(asio::cancellation_type::terminal);
    drain(ctx);
    BOOST_TEST(log.order == (std::vector<int>{1}));
    BOOST_TEST(!event.is_set());
}

// A cancelled waiter never swallows a set: the set reaches the next waiter, or stays.
BOOST_AUTO_TEST_CASE(a_cancelled_waiter_does_not_swallow_a_set)
{
    asio::io_context ctx;
    auto_reset_event event(ctx);
    asio::cancellation_signal cancel;
    order_log log;
    event.async_wait(asio::bind_cancellation_slot(cancel.slot(), log.handler(1)));
    cancel.emit(asio::cancellation_type::terminal);
    event.set();
    drain(ctx);
    BOOST_TEST(log.codes.at(0) == asio::error::operation_aborted);
    BOOST_TEST(event.is_set());
    event.async_wait(log.handler(2));
    drain(ctx);
    BOOST_TEST(log.order == (std::vector<int>{1, 2}));
    BOOST_TEST(!log.codes.at(1));
}

BOOST_AUTO_TEST_CASE(cancel_aborts_every_queued_wait)
{
    asio_sync::test::check_cancel_aborts_every_queued_wait<auto_reset_event>();
}

BOOST_AUTO_TEST_CASE(destruction_and_context_shutdown)
{
    asio_sync::test::check_destruction_and_shutdown<auto_reset_event>();
}

BOOST_AUTO_TEST_CASE(the_waiter_a_set_serves_continues_the_setter)
{
    asio_sync::test::check_completion_relations<asio_sync::basic_auto_reset_event>(
        [](auto& event) { event.set(); }, {true}, 3);
}

BOOST_AUTO_TEST_CASE(every_token)
{
    asio_sync::test::check_tokens<auto_reset_event>(set);
}

BOOST_AUTO_TEST_CASE(a_queued_wait_allocates_only_through_the_handler_allocator)
{
    asio_sync::test::check_waits_allocate_through_the_handler_allocator<auto_reset_event>(set);
}

// The fault rule: a set whose completion cannot be delivered is not lost.
BOOST_AUTO_TEST_CASE(a_set_that_cannot_be_delivered_passes_to_the_next_waiter)
{
    asio::io_context ctx;
    auto_reset_event event(ctx);
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
    BOOST_TEST(!event.is_set());
}

BOOST_AUTO_TEST_CASE(a_set_that_cannot_be_delivered_stays_for_the_next_wait)
{
    asio::io_context ctx;
    auto_reset_event event(ctx, true);
    fault_plan plan;
    plan.fail_at = 1; // the immediate completion
    plan.armed = true;
    BOOST_CHECK_THROW(
        event.async_wait(asio::bind_allocator(failing_allocator<void>(plan), [](error_code) {})),
        std::bad_alloc);
    BOOST_TEST(event.is_set());
}

// Sets from several threads against waits from several threads: every wait completes once, no
// set is given to two waiters, and once everything has run no wait is queued on a set event. The
// sets made then, one at a time, release the waits still queued, exactly one each.
BOOST_AUTO_TEST_CASE(sets_and_waits_from_many_threads_pair_up_exactly)
{
    constexpr int waits = 2000;
    asio::io_context handlers(1);
    asio::thread_pool pool(4);
    auto_reset_event event(pool.get_executor());
    int successes = 0;
    int completions = 0;
    std::atomic<int> calls{0};
    for (int i = 0; i < waits; ++i)
    {
        asio::post(pool, [&] {
            event.async_wait(asio::bind_executor(handlers, [&](error_code ec) {
                successes += !ec;
                ++completions;
            }));
            ++calls;
        });
        asio::post(pool, [&] {
            event.set();
            ++calls;
        });
    }
    // Not pool.join(): the waits still queued keep work on the pool.
    while (calls.load() != 2 * waits)
        std::this_thread::yield();
    drain(handlers);
    BOOST_TEST(completions == successes);
    BOOST_TEST(!(successes < waits && event.is_set())); // a wait queued on a set event
    for (int queued = waits - successes; queued > 0; --queued)
    {
        event.set();
        drain(handlers);
    }
    pool.join();
    BOOST_TEST(completions == waits);
    BOOST_TEST(successes == waits);
    BOOST_TEST(!event.is_set());
}

// Two sets at once, with 0, 1 or 2 waits queued: each set releases one queued wait, and a set
// that finds none leaves the event set. Counted every round: a set refused while the other one's
// hand-off was under way would leave a wait queued on a clear event.
BOOST_AUTO_TEST_CASE(two_sets_at_once_each_release_one_queued_wait)
{
    const long rounds = under_tsan ? 1000 : 5000;
    for (int queued = 0; queued <= 2; ++queued)
    {
        asio::io_context ctx(1);
        auto_reset_event event(ctx);
        int successes = 0;
        long wrong = 0;
        asio_sync::test::race_calls(
            rounds,
            [&] {
                for (int i = 0; i < queued; ++i)
                    event.async_wait([&](error_code ec) { successes += !ec; });
            },
            [&] { event.set(); }, [&] { event.set(); },
            [&] {
                drain(ctx);
                wrong += successes != queued || event.is_set() != (queued < 2);
                successes = 0;
                event.cancel();
                event.reset();
                drain(ctx);
            });
        BOOST_TEST_CONTEXT(queued << " waits queued")
        {
            BOOST_TEST(wrong == 0);
        }
    }
}

// A wait cancelled from its strand while another thread sets: exactly one of the two gets the
// set; a set the cancelled wait did not take is still there.
BOOST_AUTO_TEST_CASE(cancellation_racing_set_never_loses_the_set)
{
    asio_sync::test::race_cancellation_with_the_signal<auto_reset_event>(
        500, set, [](error_code ec, const auto_reset_event& event) {
            if (ec)
            {
                BOOST_TEST(ec == asio::error::operation_aborted);
                BOOST_TEST(event.is_set());
            }
            else
                BOOST_TEST(!event.is_set());
        });
}

BOOST_AUTO_TEST_SUITE_END()
