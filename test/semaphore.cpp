// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#define BOOST_TEST_MODULE semaphore
#include <boost/test/unit_test.hpp>

#include <asio_sync/semaphore.hpp>

#include "support/handler.hpp"
#include "support/recording_executor.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <chrono>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <vector>

namespace asio = boost::asio;
using asio_sync::test::make_record;
using asio_sync::test::on_destroy;
using asio_sync::test::outcome;
using boost::system::error_code;

namespace {

// Runs every handler that is ready, without blocking.
void drain(asio::io_context& ctx)
{
    ctx.restart();
    ctx.poll();
}

// Records the order in which handlers complete.
struct order_log
{
    std::vector<int> order;
    std::vector<error_code> codes;

    auto handler(int id)
    {
        return [this, id](error_code ec) {
            order.push_back(id);
            codes.push_back(ec);
        };
    }
};

struct fixture
{
    asio::io_context ctx;
};

} // namespace

BOOST_AUTO_TEST_SUITE(semaphore)

BOOST_FIXTURE_TEST_CASE(construction_and_observers, fixture)
{
    asio_sync::semaphore sem(ctx, 3);
    BOOST_TEST(sem.available() == 3u);
    BOOST_TEST(sem.waiting() == 0u);
    BOOST_TEST(!sem.is_closed());
    BOOST_TEST((sem.get_executor() == asio::any_io_executor(ctx.get_executor())));

    static_assert(asio_sync::semaphore::max_permits >=
                  std::uint64_t(std::numeric_limits<std::uint32_t>::max()));
    BOOST_CHECK_THROW(asio_sync::semaphore(ctx, asio_sync::semaphore::max_permits + 1),
                      std::invalid_argument);
    asio_sync::semaphore full(ctx.get_executor(), asio_sync::semaphore::max_permits);
    BOOST_TEST(full.available() == asio_sync::semaphore::max_permits);

    static_assert(!std::is_copy_constructible_v<asio_sync::semaphore>);
    static_assert(!std::is_move_constructible_v<asio_sync::semaphore>);
    static_assert(
        std::is_same_v<asio_sync::semaphore::rebind_executor<asio::io_context::executor_type>::other,
                       asio_sync::basic_semaphore<asio::io_context::executor_type>>);
}

BOOST_FIXTURE_TEST_CASE(try_acquire_counts_and_fails_without_changing_state, fixture)
{
    asio_sync::semaphore sem(ctx, 3);
    BOOST_TEST(sem.try_acquire(2));
    BOOST_TEST(sem.available() == 1u);
    BOOST_TEST(!sem.try_acquire(2));
    BOOST_TEST(sem.available() == 1u);
    BOOST_TEST(sem.try_acquire(0));
    BOOST_TEST(sem.try_acquire());
    BOOST_TEST(!sem.try_acquire());
    BOOST_TEST(!sem.try_acquire(asio_sync::semaphore::max_permits + 1));
    sem.release(3);
    BOOST_TEST(sem.available() == 3u);
}

BOOST_FIXTURE_TEST_CASE(immediate_acquire_is_posted_not_invoked_inline, fixture)
{
    asio_sync::semaphore sem(ctx, 1);
    auto [out, handler] = make_record();
    sem.async_acquire(handler);
    BOOST_TEST(!out->done());
    BOOST_TEST(sem.available() == 0u); // the permit is taken at initiation
    drain(ctx);
    BOOST_TEST(out->calls == 1);
    BOOST_TEST(!*out->ec);
}

BOOST_FIXTURE_TEST_CASE(acquire_zero_succeeds_even_behind_waiters, fixture)
{
    asio_sync::semaphore sem(ctx, 0);
    auto [blocked, blocked_handler] = make_record();
    sem.async_acquire(blocked_handler);
    auto [out, handler] = make_record();
    sem.async_acquire(0, handler);
    BOOST_TEST(!out->done());
    drain(ctx);
    BOOST_TEST(out->calls == 1);
    BOOST_TEST(!*out->ec);
    BOOST_TEST(!blocked->done());
    BOOST_TEST(sem.waiting() == 1u);
}

BOOST_FIXTURE_TEST_CASE(too_many_permits_completes_with_error_and_queues_nothing, fixture)
{
    asio_sync::semaphore sem(ctx, 2);
    auto [out, handler] = make_record();
    sem.async_acquire(asio_sync::semaphore::max_permits + 1, handler);
    BOOST_TEST(sem.waiting() == 0u);
    BOOST_TEST(sem.available() == 2u);
    BOOST_TEST(!out->done());
    drain(ctx);
    BOOST_TEST(out->calls == 1);
    BOOST_TEST(*out->ec == asio_sync::error::too_many_permits);
}

BOOST_FIXTURE_TEST_CASE(release_overflow_throws_and_changes_nothing, fixture)
{
    asio_sync::semaphore sem(ctx, asio_sync::semaphore::max_permits - 1);
    BOOST_CHECK_THROW(sem.release(2), std::overflow_error);
    BOOST_TEST(sem.available() == asio_sync::semaphore::max_permits - 1);
    sem.release(1);
    BOOST_TEST(sem.available() == asio_sync::semaphore::max_permits);
    BOOST_CHECK_THROW(sem.release(), std::overflow_error);

    // With a waiter queued the check happens before any hand-off.
    asio_sync::semaphore empty(ctx, 0);
    auto [out, handler] = make_record();
    empty.async_acquire(3, handler);
    BOOST_CHECK_THROW(empty.release(asio_sync::semaphore::max_permits + 1), std::overflow_error);
    BOOST_TEST(empty.waiting() == 1u);
    BOOST_TEST(empty.available() == 0u);
    drain(ctx);
    BOOST_TEST(!out->done());
    empty.release(3);
    drain(ctx);
    BOOST_TEST(out->calls == 1);
}

BOOST_FIXTURE_TEST_CASE(fifo_with_single_releases, fixture)
{
    asio_sync::semaphore sem(ctx, 0);
    order_log log;
    for (int i = 0; i < 5; ++i)
        sem.async_acquire(log.handler(i));
    BOOST_TEST(sem.waiting() == 5u);
    for (int i = 0; i < 5; ++i)
    {
        sem.release();
        drain(ctx);
        BOOST_TEST(log.order.size() == std::size_t(i + 1));
    }
    BOOST_TEST(log.order == (std::vector<int>{0, 1, 2, 3, 4}));
    BOOST_TEST(sem.available() == 0u);
}

BOOST_FIXTURE_TEST_CASE(fifo_with_batch_release_and_surplus_to_counter, fixture)
{
    asio_sync::semaphore sem(ctx, 0);
    order_log log;
    sem.async_acquire(1, log.handler(0));
    sem.async_acquire(2, log.handler(1));
    sem.async_acquire(1, log.handler(2));
    sem.release(6);
    BOOST_TEST(sem.waiting() == 0u);
    BOOST_TEST(sem.available() == 2u);
    drain(ctx);
    BOOST_TEST(log.order == (std::vector<int>{0, 1, 2}));
}

BOOST_FIXTURE_TEST_CASE(head_of_line_blocks_smaller_later_requests, fixture)
{
    asio_sync::semaphore sem(ctx, 2);
    order_log log;
    sem.async_acquire(5, log.handler(0)); // collects the 2 available permits
    sem.async_acquire(1, log.handler(1));
    BOOST_TEST(sem.available() == 0u);
    sem.release(2); // head has 4 of 5; the acquire(1) behind it must not overtake
    drain(ctx);
    BOOST_TEST(log.order.empty());
    BOOST_TEST(sem.available() == 0u);
    sem.release(1);
    drain(ctx);
    BOOST_TEST(log.order == (std::vector<int>{0}));
    sem.release(1);
    drain(ctx);
    BOOST_TEST(log.order == (std::vector<int>{0, 1}));
}

BOOST_FIXTURE_TEST_CASE(no_barging_try_acquire_fails_while_anyone_waits, fixture)
{
    asio_sync::semaphore sem(ctx, 1);
    auto [out, handler] = make_record();
    sem.async_acquire(2, handler); // takes the one permit, waits for another
    BOOST_TEST(!sem.try_acquire(1));
    BOOST_TEST(sem.try_acquire(0));
    sem.release(1); // handed to the waiter directly, never visible in the counter
    BOOST_TEST(!sem.try_acquire(1));
    BOOST_TEST(sem.available() == 0u);
    drain(ctx);
    BOOST_TEST(out->calls == 1);
    BOOST_TEST(!*out->ec);
}

BOOST_FIXTURE_TEST_CASE(release_hands_off_before_the_handler_runs, fixture)
{
    asio_sync::semaphore sem(ctx, 0);
    auto [first, first_handler] = make_record();
    auto [second, second_handler] = make_record();
    sem.async_acquire(first_handler);
    sem.release();
    // The grant is decided in release(); a later acquire cannot steal it before the handler runs.
    sem.async_acquire(second_handler);
    BOOST_TEST(sem.waiting() == 1u);
    drain(ctx);
    BOOST_TEST(first->calls == 1);
    BOOST_TEST(!second->done());
}

// embassy-rs/embassy#6964: cancelling the head waiter must wake the one behind it, which the
// head was blocking (head-of-line).
BOOST_FIXTURE_TEST_CASE(regression_cancelled_head_wakes_the_next_waiter, fixture)
{
    asio_sync::semaphore sem(ctx, 1);
    asio::cancellation_signal signal;
    auto [head, head_handler] = make_record();
    auto [next, next_handler] = make_record();
    sem.async_acquire(2, asio::bind_cancellation_slot(signal.slot(), head_handler)); // collects 1
    sem.async_acquire(1, next_handler);
    drain(ctx);
    BOOST_TEST(!next->done());
    signal.emit(asio::cancellation_type::terminal);
    drain(ctx);
    BOOST_TEST(*head->ec == asio::error::operation_aborted);
    BOOST_TEST(next->calls == 1);
    BOOST_TEST(!*next->ec);
    BOOST_TEST(sem.available() == 0u);
    BOOST_TEST(sem.waiting() == 0u);
}

// typelevel/cats-effect#403: a cancelled acquire(N) that had collected part of N must give every
// collected permit back: to the next waiter first, the rest to the counter.
BOOST_FIXTURE_TEST_CASE(regression_cancelled_partial_acquire_returns_what_it_collected, fixture)
{
    asio_sync::semaphore sem(ctx, 0);
    asio::cancellation_signal signal;
    auto [head, head_handler] = make_record();
    auto [next, next_handler] = make_record();
    sem.async_acquire(3, asio::bind_cancellation_slot(signal.slot(), head_handler));
    sem.async_acquire(1, next_handler);
    sem.release(2); // the head collects 2 of 3
    drain(ctx);
    BOOST_TEST(!head->done());
    signal.emit(asio::cancellation_type::terminal);
    BOOST_TEST(!head->done()); // posted, not invoked inside emit
    BOOST_TEST(sem.waiting() == 0u);
    BOOST_TEST(sem.available() == 1u); // 2 collected: 1 to the next waiter, 1 to the counter
    drain(ctx);
    BOOST_TEST(*head->ec == asio::error::operation_aborted);
    BOOST_TEST(!*next->ec);
}

BOOST_FIXTURE_TEST_CASE(cancelling_a_non_head_waiter_keeps_the_head_served, fixture)
{
    asio_sync::semaphore sem(ctx, 0);
    asio::cancellation_signal signal;
    order_log log;
    sem.async_acquire(2, log.handler(0));
    sem.async_acquire(1, asio::bind_cancellation_slot(signal.slot(), log.handler(1)));
    sem.async_acquire(1, log.handler(2));
    sem.release(1);
    signal.emit(asio::cancellation_type::partial);
    drain(ctx);
    BOOST_TEST(log.order == (std::vector<int>{1}));
    BOOST_TEST(log.codes[0] == asio::error::operation_aborted);
    sem.release(2);
    drain(ctx);
    BOOST_TEST(log.order == (std::vector<int>{1, 0, 2}));
    BOOST_TEST(sem.available() == 0u);
}

BOOST_FIXTURE_TEST_CASE(every_cancellation_type_aborts_a_waiter, fixture)
{
    for (auto type : {asio::cancellation_type::terminal, asio::cancellation_type::partial,
                      asio::cancellation_type::total})
    {
        asio_sync::semaphore sem(ctx, 0);
        asio::cancellation_signal signal;
        auto [out, handler] = make_record();
        sem.async_acquire(asio::bind_cancellation_slot(signal.slot(), handler));
        signal.emit(asio::cancellation_type::none);
        BOOST_TEST(sem.waiting() == 1u);
        signal.emit(type);
        BOOST_TEST(sem.waiting() == 0u);
        drain(ctx);
        BOOST_TEST(out->calls == 1);
        BOOST_TEST(*out->ec == asio::error::operation_aborted);
        sem.release();
        BOOST_TEST(sem.available() == 1u);
    }
}

// Kotlin/kotlinx.coroutines#2380: a cancellation arriving after the grant must not lose the
// permit, nor complete twice. The grant wins; the permit is the caller's.
BOOST_FIXTURE_TEST_CASE(regression_cancellation_after_grant_keeps_the_permit, fixture)
{
    asio_sync::semaphore sem(ctx, 0);
    asio::cancellation_signal signal;
    auto [out, handler] = make_record();
    sem.async_acquire(asio::bind_cancellation_slot(signal.slot(), handler));
    sem.release();
    signal.emit(asio::cancellation_type::terminal); // too late: already granted
    drain(ctx);
    BOOST_TEST(out->calls == 1);
    BOOST_TEST(!*out->ec);
    BOOST_TEST(sem.available() == 0u);
    signal.emit(asio::cancellation_type::terminal); // after completion: the slot was cleared
    sem.release();
    BOOST_TEST(sem.available() == 1u);
}

BOOST_FIXTURE_TEST_CASE(cancellation_before_release_returns_the_permit_to_the_counter, fixture)
{
    asio_sync::semaphore sem(ctx, 0);
    asio::cancellation_signal signal;
    auto [out, handler] = make_record();
    sem.async_acquire(asio::bind_cancellation_slot(signal.slot(), handler));
    signal.emit(asio::cancellation_type::terminal);
    sem.release();
    drain(ctx);
    BOOST_TEST(*out->ec == asio::error::operation_aborted);
    BOOST_TEST(sem.available() == 1u);
}

BOOST_FIXTURE_TEST_CASE(cancel_aborts_all_returns_partial_permits_and_stays_usable, fixture)
{
    asio_sync::semaphore sem(ctx, 1);
    order_log log;
    sem.async_acquire(3, log.handler(0)); // collects 1
    sem.async_acquire(1, log.handler(1));
    BOOST_TEST(sem.cancel() == 2u);
    BOOST_TEST(sem.waiting() == 0u);
    BOOST_TEST(sem.available() == 1u);
    BOOST_TEST(log.order.empty());
    drain(ctx);
    BOOST_TEST(log.order == (std::vector<int>{0, 1}));
    BOOST_TEST(log.codes[0] == asio::error::operation_aborted);
    BOOST_TEST(log.codes[1] == asio::error::operation_aborted);
    BOOST_TEST(sem.cancel() == 0u);

    auto [out, handler] = make_record();
    sem.async_acquire(handler);
    drain(ctx);
    BOOST_TEST(!*out->ec);
    BOOST_TEST(!sem.is_closed());
}

// chriskohlhoff/asio#1318: closing Asio's channel left pending async_sends waiting. Closing the
// semaphore completes every queued acquire with error::closed, then refuses new ones.
BOOST_FIXTURE_TEST_CASE(regression_close_fails_queued_and_later_acquires_release_still_works, fixture)
{
    asio_sync::semaphore sem(ctx, 1);
    BOOST_TEST(sem.try_acquire());
    order_log log;
    sem.async_acquire(2, log.handler(0));
    sem.async_acquire(1, log.handler(1));
    sem.close();
    BOOST_TEST(sem.is_closed());
    BOOST_TEST(sem.waiting() == 0u);
    sem.async_acquire(1, log.handler(2));
    sem.async_acquire(0, log.handler(3));
    BOOST_TEST(!sem.try_acquire(0));
    BOOST_TEST(!sem.try_acquire(1));
    drain(ctx);
    BOOST_TEST(log.order == (std::vector<int>{0, 1, 2, 3}));
    for (const error_code& ec : log.codes)
        BOOST_TEST(ec == asio_sync::error::closed);

    sem.release(); // the permit taken before close comes back
    BOOST_TEST(sem.available() == 1u);
    BOOST_TEST(!sem.try_acquire());
    sem.close();
    BOOST_TEST(sem.is_closed());
    BOOST_TEST(sem.available() == 1u);
}

BOOST_FIXTURE_TEST_CASE(close_returns_collected_permits_to_the_counter, fixture)
{
    asio_sync::semaphore sem(ctx, 2);
    auto [out, handler] = make_record();
    sem.async_acquire(5, handler);
    BOOST_TEST(sem.available() == 0u);
    sem.close();
    BOOST_TEST(sem.available() == 2u);
    drain(ctx);
    BOOST_TEST(*out->ec == asio_sync::error::closed);
}

BOOST_FIXTURE_TEST_CASE(close_during_a_grant_keeps_the_grant, fixture)
{
    asio_sync::semaphore sem(ctx, 0);
    auto [granted, granted_handler] = make_record();
    auto [queued, queued_handler] = make_record();
    sem.async_acquire(granted_handler);
    sem.async_acquire(queued_handler);
    sem.release(); // grants the first; its completion is pending
    sem.close();
    drain(ctx);
    BOOST_TEST(!*granted->ec);
    BOOST_TEST(*queued->ec == asio_sync::error::closed);
    BOOST_TEST(sem.available() == 0u);
}

BOOST_FIXTURE_TEST_CASE(destroying_the_semaphore_aborts_waiters, fixture)
{
    auto [out, handler] = make_record();
    auto [partial, partial_handler] = make_record();
    {
        asio_sync::semaphore sem(ctx, 1);
        sem.async_acquire(2, partial_handler);
        sem.async_acquire(handler);
    }
    BOOST_TEST(!out->done());
    drain(ctx);
    BOOST_TEST(*out->ec == asio::error::operation_aborted);
    BOOST_TEST(*partial->ec == asio::error::operation_aborted);
}

BOOST_AUTO_TEST_CASE(context_shutdown_destroys_pending_handlers_without_invoking_them)
{
    auto ctx = std::make_unique<asio::io_context>();
    asio_sync::semaphore sem(*ctx, 1);
    auto token = std::make_shared<int>(0);
    bool invoked = false;
    sem.async_acquire(3, [&invoked, token](error_code) { invoked = true; });
    sem.async_acquire([&invoked, token](error_code) { invoked = true; });
    BOOST_TEST(token.use_count() == 3);
    ctx.reset(); // the semaphore outlives its context
    BOOST_TEST(!invoked);
    BOOST_TEST(token.use_count() == 1);
    BOOST_TEST(sem.waiting() == 0u);
    BOOST_TEST(sem.available() == 1u); // what the waiter had collected is back
}

// Tokio 1.26: a waker dropped under the semaphore's lock deadlocked when dropping it released a
// permit. Here handlers are destroyed only after the lock is released.
BOOST_AUTO_TEST_CASE(regression_handler_whose_destruction_releases_a_permit)
{
    auto ctx = std::make_unique<asio::io_context>();
    asio_sync::semaphore sem(*ctx, 0);
    auto releaser = std::make_shared<on_destroy>([&sem] { sem.release(2); });
    sem.async_acquire([releaser](error_code) {});
    releaser.reset();
    ctx.reset();
    BOOST_TEST(sem.available() == 2u);
}

BOOST_AUTO_TEST_CASE(handler_whose_destruction_destroys_the_semaphore)
{
    auto ctx = std::make_unique<asio::io_context>();
    auto sem = std::make_unique<asio_sync::semaphore>(*ctx, 0);
    auto destroyer = std::make_shared<on_destroy>([&sem] { sem.reset(); });
    sem->async_acquire([destroyer](error_code) {});
    destroyer.reset();
    ctx.reset();
    BOOST_TEST(!sem);
}

BOOST_FIXTURE_TEST_CASE(handlers_may_release_and_acquire_again, fixture)
{
    asio_sync::semaphore sem(ctx, 1);
    int rounds = 0;
    std::function<void(error_code)> step = [&](error_code ec) {
        BOOST_REQUIRE(!ec);
        ++rounds;
        sem.release();
        if (rounds < 100)
            sem.async_acquire(step);
    };
    sem.async_acquire(step);
    ctx.run();
    BOOST_TEST(rounds == 100);
    BOOST_TEST(sem.available() == 1u);
}

// lewissbaker/cppcoro#204, libunifex#449, async_simple#404: resuming waiters inline from a
// release overflowed the stack. Each handler here releases to the next of 100000 waiters; the
// chain runs through the executor, one frame deep.
BOOST_FIXTURE_TEST_CASE(regression_long_release_chain_does_not_recurse, fixture)
{
    asio_sync::semaphore sem(ctx, 0);
    constexpr int count = 100000;
    int completed = 0;
    for (int i = 0; i < count; ++i)
        sem.async_acquire([&](error_code ec) {
            completed += !ec;
            sem.release();
        });
    BOOST_TEST(sem.waiting() == std::size_t(count));
    sem.release();
    ctx.run();
    BOOST_TEST(completed == count);
    BOOST_TEST(sem.available() == 1u);
}

BOOST_FIXTURE_TEST_CASE(a_waiter_keeps_the_context_running, fixture)
{
    asio_sync::semaphore sem(ctx, 0);
    auto [out, handler] = make_record();
    sem.async_acquire(handler);
    ctx.run_for(std::chrono::milliseconds(20));
    BOOST_TEST(!ctx.stopped()); // outstanding work: run_for timed out instead of running dry
    BOOST_TEST(!out->done());
    sem.cancel();
    ctx.restart();
    ctx.run_for(std::chrono::seconds(10));
    BOOST_TEST(ctx.stopped()); // the work is gone once the handler has run
    BOOST_TEST(*out->ec == asio::error::operation_aborted);
}

// Starts a waiter on a semaphore of context `a` with its handler bound to `handler_ex`, an executor
// of `handler_ctx` (`a` itself or another context), and checks the outstanding work on both
// contexts: held while the waiter waits, gone once its handler has run. poll() stops a context
// that has no work left, so stopped() tells, without waiting for anything.
template <class IoExecutor, class HandlerExecutor>
void check_waiter_work(asio::io_context& a, const HandlerExecutor& handler_ex, asio::io_context& handler_ctx)
{
    asio_sync::basic_semaphore<IoExecutor> sem(IoExecutor(a.get_executor()), 0);
    auto [out, handler] = make_record();
    sem.async_acquire(asio::bind_executor(handler_ex, handler));
    drain(a);
    BOOST_TEST(!a.stopped()); // tracked on the semaphore's context
    drain(handler_ctx);
    BOOST_TEST(!handler_ctx.stopped()); // and on the handler's
    BOOST_TEST(!out->done());

    sem.release(1);
    drain(handler_ctx);
    BOOST_TEST(out->done());
    drain(a);
    BOOST_TEST(a.stopped()); // nothing left behind, nor counted twice
    drain(handler_ctx);
    BOOST_TEST(handler_ctx.stopped());
}

// A handler bound to another context's executor keeps the semaphore's context running too, whether
// the two executors have the same type (decided by value) or not. Bound to the semaphore's own
// executor, the work is tracked once.
BOOST_AUTO_TEST_CASE(a_waiter_with_its_own_executor_keeps_both_contexts_running)
{
    using io_executor = asio::io_context::executor_type;
    asio::io_context a;
    asio::io_context b;
    BOOST_TEST_CONTEXT("any_io_executor of another context")
    check_waiter_work<asio::any_io_executor>(a, asio::any_io_executor(b.get_executor()), b);
    BOOST_TEST_CONTEXT("io_context executor of another context, on an any_io_executor semaphore")
    check_waiter_work<asio::any_io_executor>(a, b.get_executor(), b);
    BOOST_TEST_CONTEXT("io_context executor of another context")
    check_waiter_work<io_executor>(a, b.get_executor(), b);
    BOOST_TEST_CONTEXT("the semaphore's own any_io_executor")
    check_waiter_work<asio::any_io_executor>(a, asio::any_io_executor(a.get_executor()), a);
    BOOST_TEST_CONTEXT("the semaphore's own io_context executor")
    check_waiter_work<io_executor>(a, a.get_executor(), a);
}

// A grant decided by the caller's own call (an acquire satisfied at initiation, the first waiter a
// release serves) is submitted as a continuation of the caller: on a thread that runs the
// handler's context it runs when the caller's handler returns, without waking another thread.
// Further waiters served by the same release, and aborts, are submitted as forks so that idle
// threads can take them.
BOOST_FIXTURE_TEST_CASE(the_callers_own_grant_continues_it_and_the_rest_are_forks, fixture)
{
    using executor = asio_sync::test::recording_executor<asio::io_context::executor_type>;
    std::vector<bool> continuations;
    asio_sync::basic_semaphore<executor> sem(executor(ctx.get_executor(), continuations), 1);
    order_log log;
    sem.async_acquire(log.handler(1));
    BOOST_TEST(continuations == (std::vector<bool>{true}), boost::test_tools::per_element());
    for (int id = 2; id <= 5; ++id)
        sem.async_acquire(log.handler(id));
    sem.release(2);
    BOOST_TEST(continuations == (std::vector<bool>{true, true, false}), boost::test_tools::per_element());
    BOOST_TEST(sem.try_release(1));
    BOOST_TEST(continuations == (std::vector<bool>{true, true, false, true}),
               boost::test_tools::per_element());
    BOOST_TEST(sem.cancel() == 1u);
    BOOST_TEST(continuations == (std::vector<bool>{true, true, false, true, false}),
               boost::test_tools::per_element());
    ctx.run();
    BOOST_TEST(log.order == (std::vector<int>{1, 2, 3, 4, 5}));
    BOOST_TEST(log.codes.back() == asio::error::operation_aborted);
}

BOOST_FIXTURE_TEST_CASE(works_with_a_concrete_executor_type, fixture)
{
    asio_sync::basic_semaphore<asio::io_context::executor_type> sem(ctx.get_executor(), 0);
    order_log log;
    sem.async_acquire(2, log.handler(0));
    sem.async_acquire(log.handler(1));
    sem.release(3);
    ctx.run();
    BOOST_TEST(log.order == (std::vector<int>{0, 1}));
}

BOOST_AUTO_TEST_SUITE_END()
