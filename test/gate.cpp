// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#define BOOST_TEST_MODULE gate
// The library's debug assertions call boost::assertion_failed_msg below, so that a test can see one
// fire.
#define BOOST_ENABLE_ASSERT_HANDLER
#include <boost/test/unit_test.hpp>

#include <asio_sync/gate.hpp>

#include "support/counting_allocator.hpp"
#include "support/deadline_checks.hpp"
#include "support/event_checks.hpp"
#include "support/fault_injection.hpp"
#include "support/handler.hpp"
#include "support/recording_executor.hpp"
#include "support/replaced_new.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/bind_allocator.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_future.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <memory>
#include <new>
#include <optional>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#if defined(BOOST_ASIO_HAS_CO_AWAIT)
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>
#endif

namespace {

// The message of the one assertion a test expects to fire, and how often it did; any other
// assertion aborts, as it would without the handler.
const char* expected_assertion = nullptr;
int expected_assertions_fired = 0;

} // namespace

namespace boost {

void assertion_failed_msg(const char* expr, const char* msg, const char* function, const char* file,
                          long line)
{
    if (expected_assertion && msg && std::strcmp(msg, expected_assertion) == 0)
    {
        ++expected_assertions_fired;
        return;
    }
    std::fprintf(stderr, "%s:%ld: %s: assertion '%s' failed: %s\n", file, line, function, expr,
                 msg ? msg : "");
    std::abort();
}

void assertion_failed(const char* expr, const char* function, const char* file, long line)
{
    assertion_failed_msg(expr, nullptr, function, file, line);
}

} // namespace boost

namespace {

// Sanitizer runtimes replace operator new themselves; there only the handler allocator is counted.
const asio_sync::test::operator_new_hook counting_operator_new(&asio_sync::test::count_operator_new);

} // namespace

namespace asio = boost::asio;
using asio_sync::gate;
using asio_sync::test::drain;
using asio_sync::test::failing_allocator;
using asio_sync::test::fault_plan;
using asio_sync::test::global_news;
using asio_sync::test::make_record;
using asio_sync::test::op_record;
using asio_sync::test::order_log;
using asio_sync::test::tracked_handler;
using boost::system::error_code;

namespace {

// A gate with one task in flight, seen as an event so that the checks shared with the events
// apply: its wait is a close, and the task's leaving is the signal.
struct gate_with_one_task
{
    template <class ExecutorOrContext>
    explicit gate_with_one_task(ExecutorOrContext&& ex) : g(ex), task(g.try_enter())
    {
    }

    template <class Token>
    auto async_wait(Token&& token)
    {
        return g.async_close(std::forward<Token>(token));
    }

    gate g;
    gate::guard task;
};

void leave(gate_with_one_task& x)
{
    x.task.release();
}

// The timed closes, for the table of test/support/deadline_checks.hpp: a guard alive blocks the
// close; its release drains the gate, which lets every close through and leaves it drained.
struct timed_close
{
    static constexpr const char* name = "gate.async_close_for/until";
    static constexpr bool destroying_grants = true;

    struct object
    {
        explicit object(asio::io_context& io) : entries(io) {}

        gate entries;
        gate::guard held; // declared after the gate: released before it goes
    };

    static void block(object& o)
    {
        o.held = o.entries.try_enter();
        BOOST_TEST_REQUIRE(static_cast<bool>(o.held));
    }
    static void grant(object& o) { o.held.release(); }
    static void release(object&) {}
    static bool idle(object& o) { return o.entries.count() == 0 && !o.held; }

    template <class Duration, class Token>
    static auto wait_for(object& o, Duration d, Token&& token)
    {
        return o.entries.async_close_for(d, std::forward<Token>(token));
    }

    template <class TimePoint, class Token>
    static auto wait_until(object& o, TimePoint t, Token&& token)
    {
        return o.entries.async_close_until(t, std::forward<Token>(token));
    }
};

} // namespace

BOOST_AUTO_TEST_SUITE(gate_suite)

BOOST_DATA_TEST_CASE(every_timed_close,
                     boost::unit_test::data::make(asio_sync::test::deadline_checks<timed_close>::all()),
                     check)
{
    check.run();
}

BOOST_AUTO_TEST_CASE(construction_and_observers)
{
    asio::io_context ctx;
    gate g(ctx);
    BOOST_TEST(g.count() == 0u);
    BOOST_TEST(!g.is_closed());
    gate from_executor(ctx.get_executor());
    BOOST_TEST((from_executor.get_executor() == asio::any_io_executor(ctx.get_executor())));
    static_assert(!std::is_copy_constructible_v<gate>);
    static_assert(!std::is_move_constructible_v<gate>);
    static_assert(std::is_same_v<gate::rebind_executor<asio::io_context::executor_type>::other,
                                 asio_sync::basic_gate<asio::io_context::executor_type>>);
    static_assert(!std::is_copy_constructible_v<gate::guard>);
    static_assert(std::is_nothrow_move_constructible_v<gate::guard>);
    static_assert(std::is_nothrow_move_assignable_v<gate::guard>);
    static_assert(!std::is_convertible_v<gate::guard, bool>);
}

#if !defined(NDEBUG)
// A gate destroyed while a guard lives would be reached by that guard's release: debug builds
// assert, as Seastar's gate does. The gate and the guard live in storage of the test's, and the
// guard is never released.
BOOST_AUTO_TEST_CASE(destroying_a_gate_while_a_guard_lives_asserts_in_debug_builds)
{
    asio::io_context ctx;
    alignas(gate) unsigned char gate_storage[sizeof(gate)];
    alignas(gate::guard) unsigned char guard_storage[sizeof(gate::guard)];
    gate* g = new (gate_storage) gate(ctx);
    new (guard_storage) gate::guard(g->try_enter());
    expected_assertion = "asio_sync::basic_gate destroyed while a guard is alive";
    g->~gate();
    expected_assertion = nullptr;
    BOOST_TEST(expected_assertions_fired == 1);

    // Without a guard, or once it is released, nothing fires.
    expected_assertions_fired = 0;
    expected_assertion = "asio_sync::basic_gate destroyed while a guard is alive";
    {
        gate released(ctx);
        released.try_enter().release();
    }
    expected_assertion = nullptr;
    BOOST_TEST(expected_assertions_fired == 0);
}
#endif

BOOST_AUTO_TEST_CASE(guards_count_the_tasks_in_flight)
{
    asio::io_context ctx;
    gate g(ctx);
    gate::guard a = g.try_enter();
    gate::guard b = g.try_enter();
    BOOST_TEST(static_cast<bool>(a));
    BOOST_TEST(g.count() == 2u);
    gate::guard moved(std::move(a));
    BOOST_TEST(!a);
    BOOST_TEST(static_cast<bool>(moved));
    BOOST_TEST(g.count() == 2u);
    a = std::move(b); // a held nothing: nobody leaves
    BOOST_TEST(g.count() == 2u);
    a = std::move(moved); // a leaves, then takes moved's entry
    BOOST_TEST(g.count() == 1u);
    auto& self = a;
    a = std::move(self);
    BOOST_TEST(g.count() == 1u);
    a.release();
    BOOST_TEST(!a);
    BOOST_TEST(g.count() == 0u);
    a.release(); // an empty guard does nothing
    {
        gate::guard scoped = g.try_enter();
        BOOST_TEST(g.count() == 1u);
    }
    BOOST_TEST(g.count() == 0u);
    gate::guard empty;
    BOOST_TEST(!empty);
}

BOOST_AUTO_TEST_CASE(a_close_with_no_task_in_flight_is_posted_not_invoked_inline)
{
    asio::io_context ctx;
    gate g(ctx);
    auto [out, handler] = make_record();
    g.async_close(handler);
    BOOST_TEST(g.is_closed());
    BOOST_TEST(!out->done());
    drain(ctx);
    BOOST_TEST(out->calls == 1);
    BOOST_TEST(!*out->ec);
}

BOOST_AUTO_TEST_CASE(a_close_refuses_new_entries_and_waits_for_the_last_guard)
{
    asio::io_context ctx;
    gate g(ctx);
    gate::guard first = g.try_enter();
    gate::guard second = g.try_enter();
    auto [out, handler] = make_record();
    g.async_close(handler);
    BOOST_TEST(g.is_closed());
    BOOST_TEST(!g.try_enter());
    BOOST_TEST(g.count() == 2u);
    first.release();
    drain(ctx);
    BOOST_TEST(!out->done());
    second.release();
    BOOST_TEST(!out->done()); // never inside the release
    BOOST_TEST(g.count() == 0u);
    drain(ctx);
    BOOST_TEST(out->calls == 1);
    BOOST_TEST(!*out->ec);
    BOOST_TEST(!g.try_enter()); // closing is final
    BOOST_TEST(g.count() == 0u);
}

BOOST_AUTO_TEST_CASE(several_closes_complete_in_fifo_order_when_the_last_guard_goes)
{
    asio::io_context ctx;
    gate g(ctx);
    gate::guard task = g.try_enter();
    order_log log;
    for (int id = 1; id <= 4; ++id)
        g.async_close(log.handler(id));
    drain(ctx);
    BOOST_TEST(log.order.empty());
    task.release();
    drain(ctx);
    BOOST_TEST(log.order == (std::vector<int>{1, 2, 3, 4}));
    for (auto ec : log.codes)
        BOOST_TEST(!ec);
    g.async_close(log.handler(5)); // a drained gate lets later closes through
    drain(ctx);
    BOOST_TEST(log.order.size() == 5u);
}

BOOST_AUTO_TEST_CASE(per_operation_cancellation_of_each_type)
{
    asio_sync::test::check_per_operation_cancellation<gate_with_one_task>(leave);
}

// A cancelled close stops waiting, but the gate stays closed and drains for the others.
BOOST_AUTO_TEST_CASE(a_cancelled_close_leaves_the_gate_closed)
{
    asio::io_context ctx;
    gate g(ctx);
    gate::guard task = g.try_enter();
    asio::cancellation_signal cancel;
    order_log log;
    g.async_close(asio::bind_cancellation_slot(cancel.slot(), log.handler(1)));
    cancel.emit(asio::cancellation_type::total);
    drain(ctx);
    BOOST_TEST(log.order == (std::vector<int>{1}));
    BOOST_TEST(log.codes.at(0) == asio::error::operation_aborted);
    BOOST_TEST(g.is_closed());
    BOOST_TEST(!g.try_enter());
    BOOST_TEST(g.count() == 1u);
    g.async_close(log.handler(2));
    task.release();
    drain(ctx);
    BOOST_TEST(log.order == (std::vector<int>{1, 2}));
    BOOST_TEST(!log.codes.at(1));
}

BOOST_AUTO_TEST_CASE(a_cancellation_after_the_last_guard_went_does_nothing)
{
    asio_sync::test::check_cancellation_after_the_signal_does_nothing<gate_with_one_task>(leave);
}

// A close cancelled from its strand while another thread releases the last guard: one outcome
// each, and the gate ends closed and empty.
BOOST_AUTO_TEST_CASE(cancellation_racing_the_last_leave_completes_each_close_once)
{
    asio_sync::test::race_cancellation_with_the_signal<gate_with_one_task>(
        500, leave, [](error_code ec, const gate_with_one_task& x) {
            BOOST_TEST((!ec || ec == asio::error::operation_aborted));
            BOOST_TEST(x.g.is_closed());
            BOOST_TEST(x.g.count() == 0u);
        });
}

BOOST_AUTO_TEST_CASE(context_shutdown_destroys_a_waiting_close)
{
    bool destroyed = false;
    int calls = 0;
    auto ctx = std::make_unique<asio::io_context>();
    gate g(*ctx);
    gate::guard task = g.try_enter();
    g.async_close([&calls, on_exit = std::make_shared<asio_sync::test::on_destroy>(
                               [&] { destroyed = true; })](error_code) { ++calls; });
    ctx.reset();
    BOOST_TEST(destroyed);
    BOOST_TEST(calls == 0);
    task.release(); // the gate outlives its context
    BOOST_TEST(g.count() == 0u);
}

BOOST_AUTO_TEST_CASE(the_first_close_continues_the_last_leave_and_the_rest_are_forks)
{
    using executor = asio_sync::test::recording_executor<asio::io_context::executor_type>;
    asio::io_context ctx;
    std::vector<bool> continuations;
    asio_sync::basic_gate<executor> g(executor(ctx.get_executor(), continuations));
    auto task = g.try_enter();
    order_log log;
    for (int id = 1; id <= 3; ++id)
        g.async_close(log.handler(id));
    BOOST_TEST(continuations.empty()); // nothing submitted while waiting: never inline
    task.release();
    BOOST_TEST(continuations == (std::vector<bool>{true, false, false}), boost::test_tools::per_element());
    BOOST_TEST(log.order.empty()); // submitted, not invoked
    ctx.run();
    BOOST_TEST(log.order == (std::vector<int>{1, 2, 3}));
}

BOOST_AUTO_TEST_CASE(every_token)
{
    {
        asio::io_context ctx;
        gate g(ctx);
        auto task = g.try_enter();
        std::future<void> f = g.async_close(asio::use_future);
        task.release();
        ctx.run();
        BOOST_CHECK_NO_THROW(f.get());
    }
    {
        asio::io_context ctx;
        gate g(ctx);
        auto task = g.try_enter();
        asio::cancellation_signal cancel;
        std::future<void> f = g.async_close(asio::bind_cancellation_slot(cancel.slot(), asio::use_future));
        cancel.emit(asio::cancellation_type::terminal);
        ctx.run();
        BOOST_CHECK_THROW(f.get(), boost::system::system_error);
    }
    {
        asio::io_context ctx;
        gate g(ctx);
        auto op = g.async_close(asio::deferred);
        BOOST_TEST(!g.is_closed()); // a deferred close starts when it is launched
        auto task = g.try_enter();
        BOOST_TEST(static_cast<bool>(task));
        auto [out, handler] = make_record();
        std::move(op)(handler);
        BOOST_TEST(g.is_closed());
        task.release();
        ctx.run();
        BOOST_TEST(out->calls == 1);
        BOOST_TEST(!*out->ec);
    }
#if defined(BOOST_ASIO_HAS_CO_AWAIT)
    {
        asio::io_context ctx;
        gate g(ctx);
        auto task = g.try_enter();
        int done = 0;
        auto closer = [&]() -> asio::awaitable<void> {
            co_await g.async_close(asio::use_awaitable);
            auto [ec] = co_await g.async_close(asio::as_tuple(asio::use_awaitable));
            BOOST_TEST(!ec);
            ++done;
        };
        asio::co_spawn(ctx, closer(), asio::detached);
        drain(ctx);
        BOOST_TEST(done == 0);
        task.release();
        ctx.run();
        BOOST_TEST(done == 1);
    }
#endif
}

// A waiting close allocates its operation and its completion's submission through the handler's
// allocator; try_enter, the guards and a close of a drained gate allocate nothing of their own.
BOOST_AUTO_TEST_CASE(a_close_allocates_only_through_the_handler_allocator)
{
    asio::io_context ctx(1);
    asio_sync::test::allocation_counts counts;
    int succeeded = 0;
    auto handler = asio::bind_allocator(asio_sync::test::counting_allocator<void>(counts),
                                        [&](error_code ec) { succeeded += !ec; });
    gate g(ctx);
    const std::size_t news_before = global_news.load();
    {
        auto a = g.try_enter();
        auto b = g.try_enter();
        g.async_close(handler);
        a.release();
        BOOST_TEST(!g.try_enter());
    }
    BOOST_TEST(counts.allocations.load() == 2u); // the operation and the submission
    g.async_close(handler);
    BOOST_TEST(counts.allocations.load() == 3u); // the submission only
    ctx.run();
    BOOST_TEST(global_news.load() == news_before);
    BOOST_TEST(succeeded == 2);
    BOOST_TEST(counts.deallocations.load() == counts.allocations.load());
}

// A completion that cannot be submitted loses its own handler only: the release that drained the
// gate does not throw and the closes behind it complete.
BOOST_AUTO_TEST_CASE(a_close_that_cannot_be_completed_does_not_keep_the_others_waiting)
{
    asio::io_context ctx;
    gate g(ctx);
    auto task = g.try_enter();
    fault_plan plan;
    plan.fail_at = 2; // the operation, then the completion
    plan.armed = true;
    int failed = 0;
    order_log log;
    g.async_close(asio::bind_allocator(failing_allocator<void>(plan), [&](error_code) { ++failed; }));
    g.async_close(log.handler(2));
    BOOST_CHECK_NO_THROW(task.release());
    ctx.run();
    BOOST_TEST(plan.failures == 1u);
    BOOST_TEST(failed == 0);
    BOOST_TEST(log.order == (std::vector<int>{2}));
    BOOST_TEST(g.count() == 0u);
}

BOOST_AUTO_TEST_CASE(a_close_that_cannot_post_or_queue_throws_and_the_gate_is_closed)
{
    asio::io_context ctx;
    fault_plan plan;
    plan.armed = true;
    int calls = 0;
    auto handler = asio::bind_allocator(failing_allocator<void>(plan), [&](error_code) { ++calls; });
    gate drained(ctx);
    plan.fail_at = 1;
    BOOST_CHECK_THROW(drained.async_close(handler), std::bad_alloc); // the submission
    BOOST_TEST(drained.is_closed());
    gate busy(ctx);
    auto task = busy.try_enter();
    plan.fail_at = 2;
    BOOST_CHECK_THROW(busy.async_close(handler), std::bad_alloc); // the operation
    BOOST_TEST(busy.is_closed());
    BOOST_TEST(!busy.try_enter());
    task.release();
    ctx.run();
    BOOST_TEST(calls == 0);
}

// Every allocation of a scenario with three waiting closes fails in turn: each close completes
// exactly once or has its handler destroyed (only if its own allocation failed), never both, and
// the gate ends closed and empty.
BOOST_AUTO_TEST_CASE(the_fault_walk_over_every_allocation)
{
    std::size_t walked = 0;
    for (std::size_t fail_at = 1;; ++fail_at)
    {
        BOOST_TEST_CONTEXT("failing allocation " << fail_at)
        {
            asio::io_context ctx;
            gate g(ctx);
            fault_plan plan;
            plan.fail_at = fail_at;
            plan.armed = true;
            std::vector<op_record> closes(3);
            std::optional<gate::guard> task(g.try_enter());
            for (op_record& r : closes)
            {
                r.used = true;
                try
                {
                    g.async_close(asio::bind_allocator(failing_allocator<void>(plan),
                                                       tracked_handler(r, [](error_code) {})));
                    r.started = true;
                }
                catch (const std::bad_alloc&)
                {
                }
            }
            BOOST_CHECK_NO_THROW(task.reset());
            ctx.run();
            for (const op_record& r : closes)
            {
                BOOST_TEST(r.exactly_once());
                if (r.calls == 1)
                    BOOST_TEST(!r.ec);
            }
            BOOST_TEST(g.is_closed());
            BOOST_TEST(g.count() == 0u);
            if (plan.failures == 0)
                break;
            ++walked;
        }
    }
    BOOST_TEST(walked == 6u); // three operations, three completions
}

// Many tasks enter and leave on a thread pool while closes start from several threads: every
// close completes exactly once, successfully, after which no task is in flight; no entry succeeds
// once a close has started.
BOOST_AUTO_TEST_CASE(closing_while_many_tasks_enter_and_leave_on_a_thread_pool)
{
    constexpr int tasks = 4000;
    constexpr int closes = 8;
    asio::thread_pool pool(4);
    gate g(pool.get_executor());
    std::atomic<int> in_flight{0};
    std::atomic<int> entered{0};
    std::atomic<int> refused{0};
    std::atomic<int> late_entries{0};
    std::atomic<bool> close_started{false};
    std::atomic<int> completions{0};
    std::atomic<int> failed_closes{0};
    std::atomic<int> drained_on_completion{0};
    auto enter_and_leave = [&] {
        const bool closing = close_started.load();
        gate::guard entry = g.try_enter();
        if (!entry)
        {
            ++refused;
            return;
        }
        late_entries += closing;
        ++entered;
        ++in_flight;
        asio::post(pool, [&, entry = std::move(entry)]() mutable {
            --in_flight;
            entry.release();
        });
    };
    for (int i = 0; i < tasks; ++i)
    {
        asio::post(pool, enter_and_leave);
        if (i == tasks / 2)
            for (int c = 0; c < closes; ++c)
                asio::post(pool, [&] {
                    g.async_close([&](error_code ec) {
                        // Counted, not checked here: Boost.Test's checks are not thread-safe.
                        failed_closes += !!ec;
                        drained_on_completion += in_flight.load() == 0 && g.count() == 0;
                        ++completions;
                    });
                    close_started = true;
                });
    }
    pool.join();
    BOOST_TEST(completions.load() == closes);
    BOOST_TEST(failed_closes.load() == 0);
    BOOST_TEST(drained_on_completion.load() == closes);
    BOOST_TEST(late_entries.load() == 0);
    BOOST_TEST(entered.load() + refused.load() == tasks);
    BOOST_TEST(g.count() == 0u);
    BOOST_TEST(g.is_closed());
}

// A stop request cancels the operation bound to each stoppable guard's slot once, with the type
// requested, on the calling thread and inside the call; plain guards are not signalled; the close
// behind it completes after the last guard, plain or stoppable, has left.
BOOST_AUTO_TEST_CASE(a_stop_request_cancels_each_stoppable_guard_once)
{
    asio::io_context ctx;
    gate g(ctx);
    std::vector<gate::guard> timed;
    std::vector<std::unique_ptr<asio::steady_timer>> timers;
    std::vector<error_code> timer_codes;
    for (int i = 0; i < 2; ++i)
    {
        timed.push_back(g.try_enter_stoppable());
        BOOST_TEST_REQUIRE(static_cast<bool>(timed.back()));
        BOOST_TEST(timed.back().slot().is_connected());
        timers.push_back(std::make_unique<asio::steady_timer>(ctx, std::chrono::hours(1)));
    }
    for (std::size_t i = 0; i < timers.size(); ++i)
        timers[i]->async_wait(asio::bind_cancellation_slot(timed[i].slot(), [&, i](error_code ec) {
            timer_codes.push_back(ec);
            timed[i].release();
        }));
    gate::guard assigned = g.try_enter_stoppable();
    std::vector<asio::cancellation_type> types;
    assigned.slot().assign([&](asio::cancellation_type type) { types.push_back(type); });
    gate::guard plain = g.try_enter();
    BOOST_TEST(!plain.slot().is_connected());
    asio::steady_timer plain_timer(ctx, std::chrono::hours(1));
    int plain_calls = 0;
    plain_timer.async_wait(asio::bind_cancellation_slot(plain.slot(), [&](error_code) { ++plain_calls; }));
    BOOST_TEST(!g.stop_requested());
    BOOST_TEST(g.count() == 4u);

    g.request_stop(asio::cancellation_type::partial);
    BOOST_TEST(g.is_closed());
    BOOST_TEST(g.stop_requested());
    BOOST_TEST_REQUIRE(types.size() == 1u); // inside the call
    BOOST_TEST((types.front() == asio::cancellation_type::partial));
    auto [out, handler] = make_record();
    g.async_close(handler);
    drain(ctx);
    BOOST_TEST(timer_codes ==
                   (std::vector<error_code>{asio::error::operation_aborted, asio::error::operation_aborted}),
               boost::test_tools::per_element());
    BOOST_TEST(g.count() == 2u);
    g.request_stop(); // emits no more
    drain(ctx);
    BOOST_TEST(types.size() == 1u);
    BOOST_TEST(timer_codes.size() == 2u);
    assigned.release();
    drain(ctx);
    BOOST_TEST(!out->done()); // the plain guard is still in
    BOOST_TEST(plain_calls == 0);
    plain_timer.cancel();
    drain(ctx);
    BOOST_TEST(plain_calls == 1);
    plain.release();
    BOOST_TEST(!out->done());
    drain(ctx);
    BOOST_TEST(out->calls == 1);
    BOOST_TEST(!*out->ec);
    BOOST_TEST(g.count() == 0u);
}

#if !defined(ASIO_SYNC_TEST_SANITIZED)
// A stoppable entry allocates one object, its signal, with operator new, and a plain entry none;
// a stoppable entry that cannot allocate throws and leaves the gate as it was.
BOOST_AUTO_TEST_CASE(a_stoppable_entry_allocates_its_signal_and_throws_if_it_cannot)
{
    asio::io_context ctx;
    gate g(ctx);
    const std::size_t news_before = global_news.load();
    g.try_enter().release();
    BOOST_TEST(global_news.load() == news_before);
    g.try_enter_stoppable().release();
    BOOST_TEST(global_news.load() == news_before + 1);

    bool threw = false;
    asio_sync::test::on_operator_new = []() noexcept { return true; };
    try
    {
        g.try_enter_stoppable();
    }
    catch (const std::bad_alloc&)
    {
        threw = true;
    }
    asio_sync::test::on_operator_new = &asio_sync::test::count_operator_new;
    BOOST_TEST(threw);
    BOOST_TEST(g.count() == 0u);
    BOOST_TEST(!g.is_closed());
    gate::guard task = g.try_enter_stoppable();
    BOOST_TEST(static_cast<bool>(task));
    BOOST_TEST(g.count() == 1u);
}
#endif

// After a close or a stop request, both kinds of entry are refused; a stop requested after a plain
// close still reaches the stoppable guards alive.
BOOST_AUTO_TEST_CASE(entering_after_a_close_or_a_stop_request_is_refused)
{
    asio::io_context ctx;
    gate stopped(ctx);
    stopped.request_stop();
    BOOST_TEST(stopped.is_closed());
    BOOST_TEST(!stopped.try_enter());
    BOOST_TEST(!stopped.try_enter_stoppable());
    BOOST_TEST(!stopped.try_enter_stoppable().slot().is_connected());
    BOOST_TEST(stopped.count() == 0u);

    gate closed(ctx);
    gate::guard task = closed.try_enter_stoppable();
    int signalled = 0;
    task.slot().assign([&](asio::cancellation_type) { ++signalled; });
    auto [out, handler] = make_record();
    closed.async_close(handler);
    BOOST_TEST(!closed.try_enter());
    BOOST_TEST(!closed.try_enter_stoppable());
    BOOST_TEST(!closed.stop_requested());
    BOOST_TEST(signalled == 0);
    closed.request_stop();
    BOOST_TEST(signalled == 1);
    gate::guard moved(std::move(task)); // the signal stays where the slot points
    BOOST_TEST(!task.slot().is_connected());
    BOOST_TEST(moved.slot().is_connected());
    moved.release();
    drain(ctx);
    BOOST_TEST(out->calls == 1);
    BOOST_TEST(!*out->ec);
    drain(ctx);
}

// A task that tries to enter from inside the emission, from its cancellation handler, is refused
// with either kind of entry: the gate is closed before the emission starts.
BOOST_AUTO_TEST_CASE(entering_from_inside_the_stop_emission_is_refused)
{
    asio::io_context ctx;
    gate g(ctx);
    gate::guard task = g.try_enter_stoppable();
    gate::guard plain_inside;
    gate::guard stoppable_inside;
    int signalled = 0;
    task.slot().assign([&](asio::cancellation_type) {
        ++signalled;
        plain_inside = g.try_enter();
        stoppable_inside = g.try_enter_stoppable();
    });
    g.request_stop();
    BOOST_TEST(signalled == 1);
    BOOST_TEST(!plain_inside);
    BOOST_TEST(!stoppable_inside);
    BOOST_TEST(g.count() == 1u);
    auto [out, handler] = make_record();
    g.async_close(handler);
    task.release();
    drain(ctx);
    BOOST_TEST(out->calls == 1);
    BOOST_TEST(!*out->ec);
    plain_inside.release();
    stoppable_inside.release();
}

// The gate destroyed by its own close's handler, once the guards it stopped have left: one guard
// leaves from its timer's handler, the other inside the emission, from its cancellation handler.
BOOST_AUTO_TEST_CASE(a_stopped_gate_destroyed_in_its_close_handler)
{
    asio::io_context ctx;
    auto g = std::make_unique<gate>(ctx);
    gate::guard timed = g->try_enter_stoppable();
    gate::guard inside = g->try_enter_stoppable();
    asio::steady_timer timer(ctx, std::chrono::hours(1));
    error_code timer_ec;
    timer.async_wait(asio::bind_cancellation_slot(timed.slot(), [&](error_code ec) {
        timer_ec = ec;
        timed.release();
    }));
    inside.slot().assign([&](asio::cancellation_type) { inside.release(); });
    int closes = 0;
    g->async_close([&](error_code ec) {
        BOOST_TEST(!ec);
        ++closes;
        g.reset();
    });
    g->request_stop();
    BOOST_TEST(!inside);
    BOOST_TEST(closes == 0);
    ctx.run();
    BOOST_TEST(timer_ec == asio::error::operation_aborted);
    BOOST_TEST(closes == 1);
    BOOST_TEST(!g);
}

// Stoppable guards released on a thread pool while the test thread requests the stop, round
// after round. Guard 0 is emitted on first; its cancellation handler releases guards 2 and 3 on
// the pool and waits until they and guard 1 are gone, so that the emission reaches guards whose
// release raced it. Each guard is signalled at most once; a guard alive when the request started
// (0, 2, 3) is signalled exactly once; guard 1, released on the pool as the request starts, is
// not signalled if its release came first. Under the sanitizers, a signal destroyed while the
// request emitted on it would be reported.
BOOST_AUTO_TEST_CASE(stoppable_guards_released_on_a_thread_pool_while_the_stop_is_emitted)
{
    constexpr int rounds = 2000;
    constexpr int guards = 4;
    asio::thread_pool pool(2);
    std::atomic<int> clock{0}; // orders the end of guard 1's release and the request
    int racing_signalled = 0;
    int racing_left_before = 0;
    for (int round = 0; round < rounds; ++round)
    {
        asio::io_context ctx;
        gate g(ctx);
        std::atomic<int> signalled[guards] = {};
        std::atomic<int> released{0};
        std::atomic<int> released_at{0};
        gate::guard tasks[guards];
        for (gate::guard& task : tasks)
            task = g.try_enter_stoppable();
        auto release_on_the_pool = [&](int i) {
            asio::post(pool, [&, i] {
                tasks[i].release();
                if (i == 1)
                    released_at = ++clock;
                ++released; // the last thing the pool touches: the emission waits for it
            });
        };
        tasks[0].slot().assign([&](asio::cancellation_type) {
            ++signalled[0];
            release_on_the_pool(2);
            release_on_the_pool(3);
            while (released.load() < guards - 1)
                std::this_thread::yield();
        });
        for (int i = 1; i < guards; ++i)
            tasks[i].slot().assign([&signalled, i](asio::cancellation_type) { ++signalled[i]; });
        release_on_the_pool(1);
        const int stop_started = ++clock;
        g.request_stop();
        tasks[0].release();
        int closes = 0;
        g.async_close([&](error_code ec) { closes += !ec; });
        ctx.run();
        BOOST_TEST(closes == 1);
        BOOST_TEST(signalled[0].load() == 1);
        BOOST_TEST(signalled[2].load() == 1);
        BOOST_TEST(signalled[3].load() == 1);
        BOOST_TEST(signalled[1].load() <= 1);
        if (released_at.load() < stop_started)
            BOOST_TEST(signalled[1].load() == 0);
        else
            racing_signalled += signalled[1].load();
        racing_left_before += released_at.load() < stop_started;
        BOOST_TEST(g.count() == 0u);
    }
    BOOST_TEST_MESSAGE("guard 1: released before the request " << racing_left_before << ", signalled "
                                                               << racing_signalled << " of " << rounds);
}

BOOST_AUTO_TEST_SUITE_END()
