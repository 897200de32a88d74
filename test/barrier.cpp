// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#define BOOST_TEST_MODULE barrier
#include <boost/test/unit_test.hpp>

#include <asio_sync/barrier.hpp>

#include "support/counting_allocator.hpp"
#include "support/deadline_checks.hpp"
#include "support/event_checks.hpp"
#include "support/fault_injection.hpp"
#include "support/handler.hpp"
#include "support/recording_executor.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/associated_allocator.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/bind_allocator.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_future.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <future>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#if defined(BOOST_ASIO_HAS_CO_AWAIT)
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>
#endif

namespace asio = boost::asio;
using asio_sync::barrier;
using asio_sync::test::drain;
using boost::system::error_code;

namespace {

// Records the order in which arrivals complete, and what each received.
struct arrival_log
{
    std::vector<int> order;
    std::vector<error_code> codes;
    std::vector<std::size_t> phases;

    auto handler(int id)
    {
        return [this, id](error_code ec, std::size_t phase) {
            order.push_back(id);
            codes.push_back(ec);
            phases.push_back(phase);
        };
    }
};

// A handler of the table of test/support/deadline_checks.hpp, which expects only the error code:
// drops the phase, keeps the wrapped handler's cancellation slot and allocator.
template <class Handler>
struct phase_dropped
{
    Handler handler;

    using cancellation_slot_type = asio::associated_cancellation_slot_t<Handler>;
    using allocator_type = asio::associated_allocator_t<Handler>;

    cancellation_slot_type get_cancellation_slot() const noexcept
    {
        return asio::get_associated_cancellation_slot(handler);
    }
    allocator_type get_allocator() const noexcept { return asio::get_associated_allocator(handler); }

    void operator()(error_code ec, std::size_t) { std::move(handler)(ec); }
};

// The timed arrivals, for the table. The barrier expects three participants, two of them
// stand-ins that leave with arrive_and_drop: unblocked, before the arrival, which then completes
// the phase at once; blocked, only when granted. One waiting arrival and a grant complete a
// phase, two waiting arrivals do not, and a grant that finds the arrival gone (it timed out)
// stays for the next one.
struct timed_arrival
{
    static constexpr const char* name = "barrier.async_arrive_and_wait_for/until";

    struct object : barrier
    {
        explicit object(asio::io_context& io) : barrier(io, 3) {}
        bool blocked = false;
    };

    static void block(object& b) { b.blocked = true; }
    static void grant(object& b) { leave(b); }
    static void release(object&) {}
    static bool idle(object& b) { return b.missing() == b.expected(); }

    template <class Duration, class Token>
    static auto wait_for(object& b, Duration d, Token&& token)
    {
        if (!b.blocked)
            leave(b);
        return b.async_arrive_and_wait_for(d, adapt(std::forward<Token>(token)));
    }

    template <class TimePoint, class Token>
    static auto wait_until(object& b, TimePoint t, Token&& token)
    {
        if (!b.blocked)
            leave(b);
        return b.async_arrive_and_wait_until(t, adapt(std::forward<Token>(token)));
    }

private:
    static void leave(object& b)
    {
        while (b.expected() > 1)
            b.arrive_and_drop();
    }

    template <class Token>
    static auto adapt(Token&& token)
    {
        if constexpr (std::is_invocable_v<Token, error_code>)
            return phase_dropped<std::decay_t<Token>>{std::forward<Token>(token)};
        else
            return std::forward<Token>(token);
    }
};

} // namespace

BOOST_AUTO_TEST_SUITE(barrier_suite)

BOOST_DATA_TEST_CASE(every_timed_arrival,
                     boost::unit_test::data::make(asio_sync::test::deadline_checks<timed_arrival>::all()),
                     check)
{
    check.run();
}

BOOST_AUTO_TEST_CASE(construction_and_observers)
{
    asio::io_context ctx;
    barrier three(ctx, 3);
    BOOST_TEST(three.phase() == 0u);
    BOOST_TEST(three.missing() == 3u);
    BOOST_TEST(three.expected() == 3u);
    barrier with_function(ctx.get_executor(), 2, [] {});
    BOOST_TEST(with_function.missing() == 2u);
    BOOST_TEST((three.get_executor() == asio::any_io_executor(ctx.get_executor())));
    static_assert(!std::is_copy_constructible_v<barrier>);
    static_assert(!std::is_move_constructible_v<barrier>);
    static_assert(std::is_same_v<barrier::rebind_executor<asio::io_context::executor_type>::other,
                                 asio_sync::basic_barrier<asio::io_context::executor_type>>);
}

BOOST_AUTO_TEST_CASE(a_phase_completes_its_arrivals_in_fifo_order_with_its_number)
{
    asio::io_context ctx;
    barrier b(ctx, 3);
    arrival_log log;
    b.async_arrive_and_wait(log.handler(1));
    b.async_arrive_and_wait(log.handler(2));
    drain(ctx);
    BOOST_TEST(log.order.empty());
    BOOST_TEST(b.missing() == 1u);
    b.async_arrive_and_wait(log.handler(3));
    BOOST_TEST(log.order.empty()); // never inside the last arrival
    BOOST_TEST(b.phase() == 1u);
    BOOST_TEST(b.missing() == 3u); // ready for the next phase at once
    drain(ctx);
    BOOST_TEST(log.order == (std::vector<int>{1, 2, 3}));
    BOOST_TEST(log.phases == (std::vector<std::size_t>{0, 0, 0}));
    for (auto ec : log.codes)
        BOOST_TEST(!ec);

    for (int id = 4; id <= 6; ++id)
        b.async_arrive_and_wait(log.handler(id));
    drain(ctx);
    BOOST_TEST(log.order == (std::vector<int>{1, 2, 3, 4, 5, 6}));
    BOOST_TEST(log.phases == (std::vector<std::size_t>{0, 0, 0, 1, 1, 1}));
}

// The completion function runs before anything of the phase is submitted; then the waiters are
// forks and the last arrival continues its caller.
BOOST_AUTO_TEST_CASE(the_last_arrival_continues_the_caller_and_the_others_are_forks)
{
    using executor = asio_sync::test::recording_executor<asio::io_context::executor_type>;
    asio::io_context ctx;
    std::vector<bool> continuations;
    std::vector<std::size_t> submitted_before_the_function;
    asio_sync::basic_barrier<executor> b(executor(ctx.get_executor(), continuations), 3, [&] {
        submitted_before_the_function.push_back(continuations.size());
    });
    arrival_log log;
    b.async_arrive_and_wait(log.handler(1));
    b.async_arrive_and_wait(log.handler(2));
    BOOST_TEST(continuations.empty()); // nothing submitted while waiting
    b.async_arrive_and_wait(log.handler(3));
    BOOST_TEST(submitted_before_the_function == (std::vector<std::size_t>{0}));
    BOOST_TEST(continuations == (std::vector<bool>{false, false, true}), boost::test_tools::per_element());
    BOOST_TEST(log.order.empty()); // submitted, not invoked
    ctx.run();
    BOOST_TEST(log.order == (std::vector<int>{1, 2, 3}));
}

// The completion function runs once per phase, inside the last arrival's call, before any
// waiter of the phase is submitted, and sees the next phase already open.
BOOST_AUTO_TEST_CASE(the_completion_function_runs_once_per_phase_before_anyone_continues)
{
    asio::io_context ctx;
    arrival_log log;
    std::vector<std::size_t> completed_before; // arrivals completed when the function ran
    std::vector<std::thread::id> threads;
    barrier* self = nullptr;
    std::vector<std::size_t> phases_seen;
    barrier b(ctx, 2, [&] {
        completed_before.push_back(log.order.size());
        threads.push_back(std::this_thread::get_id());
        phases_seen.push_back(self->phase());
    });
    self = &b;
    for (int round = 0; round < 3; ++round)
    {
        b.async_arrive_and_wait(log.handler(2 * round));
        drain(ctx);
        BOOST_TEST(completed_before.size() == std::size_t(round));
        b.async_arrive_and_wait(log.handler(2 * round + 1));
        BOOST_TEST(completed_before.size() == std::size_t(round + 1)); // inside the call
        drain(ctx);
    }
    BOOST_TEST(completed_before == (std::vector<std::size_t>{0, 2, 4}));
    BOOST_TEST(phases_seen == (std::vector<std::size_t>{1, 2, 3}));
    for (auto id : threads)
        BOOST_TEST((id == std::this_thread::get_id()));
    BOOST_TEST(log.phases == (std::vector<std::size_t>{0, 0, 1, 1, 2, 2}));
}

// A throwing completion function: the phase completes all the same and its waiters are released;
// the last arrival's call throws and its own handler is never invoked.
BOOST_AUTO_TEST_CASE(a_throwing_completion_function_releases_the_phase_and_reaches_the_last_caller)
{
    asio::io_context ctx;
    bool fail = true;
    barrier b(ctx, 3, [&] {
        if (fail)
            throw std::runtime_error("completion");
    });
    arrival_log log;
    b.async_arrive_and_wait(log.handler(1));
    b.arrive_and_drop();
    BOOST_CHECK_THROW(b.async_arrive_and_wait(log.handler(3)), std::runtime_error);
    drain(ctx);
    BOOST_TEST(log.order == (std::vector<int>{1}));
    BOOST_TEST(!log.codes.at(0));
    BOOST_TEST(b.phase() == 1u);
    BOOST_TEST(b.missing() == 2u);

    b.async_arrive_and_wait(log.handler(4));
    BOOST_CHECK_THROW(b.arrive_and_drop(), std::runtime_error);
    drain(ctx);
    BOOST_TEST(log.order == (std::vector<int>{1, 4}));
    BOOST_TEST(log.phases.at(1) == 1u);
    BOOST_TEST(b.expected() == 1u);

    fail = false;
    b.async_arrive_and_wait(log.handler(5));
    drain(ctx);
    BOOST_TEST(log.order == (std::vector<int>{1, 4, 5}));
    BOOST_TEST(log.phases.at(2) == 2u);
}

BOOST_AUTO_TEST_CASE(arrive_and_drop_counts_now_and_lowers_every_later_phase)
{
    asio::io_context ctx;
    int completions = 0;
    barrier b(ctx, 3, [&] { ++completions; });
    arrival_log log;
    b.async_arrive_and_wait(log.handler(1));
    b.arrive_and_drop();
    BOOST_TEST(b.missing() == 1u);
    BOOST_TEST(b.expected() == 2u);
    b.async_arrive_and_wait(log.handler(2));
    drain(ctx);
    BOOST_TEST(log.order == (std::vector<int>{1, 2}));
    BOOST_TEST(b.missing() == 2u); // the next phase expects one fewer
    b.async_arrive_and_wait(log.handler(3));
    b.arrive_and_drop(); // the last arrival of phase 1 may be a drop
    drain(ctx);
    BOOST_TEST(log.order == (std::vector<int>{1, 2, 3}));
    BOOST_TEST(log.phases.at(2) == 1u);
    BOOST_TEST(completions == 2);
    b.arrive_and_drop();
    BOOST_TEST(completions == 3);
    BOOST_TEST(b.expected() == 0u);
}

BOOST_AUTO_TEST_CASE(an_arrival_with_no_participant_left_throws_and_changes_nothing)
{
    asio::io_context ctx;
    barrier none(ctx, 0);
    BOOST_CHECK_THROW(none.async_arrive_and_wait([](error_code, std::size_t) {}), std::logic_error);
    BOOST_CHECK_THROW(none.arrive_and_drop(), std::logic_error);
    BOOST_TEST(none.phase() == 0u);
    drain(ctx);
    BOOST_TEST(ctx.stopped());
}

// A cancelled arrival is withdrawn: its phase misses it again, and no other arrival is affected.
BOOST_AUTO_TEST_CASE(per_operation_cancellation_withdraws_the_arrival)
{
    using asio::cancellation_type;
    for (cancellation_type type :
         {cancellation_type::terminal, cancellation_type::partial, cancellation_type::total})
    {
        BOOST_TEST_CONTEXT("type " << static_cast<int>(type))
        {
            asio::io_context ctx;
            barrier b(ctx, 2);
            asio::cancellation_signal cancel;
            arrival_log log;
            b.async_arrive_and_wait(asio::bind_cancellation_slot(cancel.slot(), log.handler(1)));
            cancel.emit(type);
            BOOST_TEST(b.missing() == 2u);
            drain(ctx);
            BOOST_TEST(log.order == (std::vector<int>{1}));
            BOOST_TEST(log.codes.at(0) == asio::error::operation_aborted);
            BOOST_TEST(log.phases.at(0) == 0u);
            b.async_arrive_and_wait(log.handler(2));
            drain(ctx);
            BOOST_TEST(log.order.size() == 1u); // the withdrawn arrival does not count
            b.async_arrive_and_wait(log.handler(3));
            drain(ctx);
            BOOST_TEST(log.order == (std::vector<int>{1, 2, 3}));
            BOOST_TEST(!log.codes.at(1));
            BOOST_TEST(!log.codes.at(2));
        }
    }
}

// A timed-out arrival is withdrawn as a cancelled one is, and reports the phase it arrived in;
// the last arrival of a phase completes it whatever its deadline.
BOOST_AUTO_TEST_CASE(a_timed_out_arrival_is_withdrawn_from_its_phase)
{
    asio::io_context ctx;
    barrier b(ctx, 2);
    arrival_log log;
    b.async_arrive_and_wait(log.handler(1));
    b.async_arrive_and_wait_for(std::chrono::seconds(0), log.handler(2)); // the last: no time-out
    drain(ctx);
    BOOST_TEST(log.order == (std::vector<int>{1, 2}));
    b.async_arrive_and_wait_for(std::chrono::milliseconds(1), log.handler(3));
    BOOST_TEST(b.missing() == 1u);
    ctx.restart();
    ctx.run();
    BOOST_TEST(b.missing() == 2u);
    BOOST_TEST_REQUIRE(log.order.size() == 3u);
    BOOST_TEST(log.codes.at(2) == asio_sync::error::timed_out);
    BOOST_TEST(log.phases.at(2) == 1u);
    b.async_arrive_and_wait(log.handler(4));
    drain(ctx);
    BOOST_TEST(log.order.size() == 3u); // the withdrawn arrival does not count
    b.async_arrive_and_wait_until(std::chrono::system_clock::now() - std::chrono::hours(1), log.handler(5));
    drain(ctx);
    BOOST_TEST(log.order == (std::vector<int>{1, 2, 3, 4, 5}));
    BOOST_TEST(!log.codes.at(3));
    BOOST_TEST(!log.codes.at(4));
    BOOST_TEST(b.phase() == 2u);
}

BOOST_AUTO_TEST_CASE(a_cancellation_after_the_phase_completed_does_nothing)
{
    asio::io_context ctx;
    barrier b(ctx, 2);
    asio::cancellation_signal cancel;
    arrival_log log;
    b.async_arrive_and_wait(asio::bind_cancellation_slot(cancel.slot(), log.handler(1)));
    b.async_arrive_and_wait(log.handler(2));
    cancel.emit(asio::cancellation_type::terminal);
    BOOST_TEST(b.missing() == 2u); // not withdrawn from the next phase
    drain(ctx);
    BOOST_TEST(log.order == (std::vector<int>{1, 2}));
    BOOST_TEST(!log.codes.at(0));
}

BOOST_AUTO_TEST_CASE(cancel_withdraws_every_waiting_arrival)
{
    asio::io_context ctx;
    barrier b(ctx, 4);
    arrival_log log;
    for (int id = 1; id <= 3; ++id)
        b.async_arrive_and_wait(log.handler(id));
    BOOST_TEST(b.missing() == 1u);
    BOOST_TEST(b.cancel() == 3u);
    BOOST_TEST(b.missing() == 4u);
    BOOST_TEST(log.order.empty());
    drain(ctx);
    BOOST_TEST(log.order == (std::vector<int>{1, 2, 3}));
    for (auto ec : log.codes)
        BOOST_TEST(ec == asio::error::operation_aborted);
    BOOST_TEST(b.cancel() == 0u);
    BOOST_TEST(b.phase() == 0u);
}

BOOST_AUTO_TEST_CASE(destruction_and_context_shutdown)
{
    {
        asio::io_context ctx;
        arrival_log log;
        {
            barrier b(ctx, 2);
            b.async_arrive_and_wait(log.handler(1));
        }
        BOOST_TEST(log.order.empty());
        ctx.run();
        BOOST_TEST(log.order == (std::vector<int>{1}));
        BOOST_TEST(log.codes.at(0) == asio::error::operation_aborted);
    }
    {
        bool destroyed = false;
        int calls = 0;
        auto ctx = std::make_unique<asio::io_context>();
        barrier b(*ctx, 2);
        b.async_arrive_and_wait([&calls, guard = std::make_shared<asio_sync::test::on_destroy>([&] {
                                             destroyed = true;
                                         })](error_code, std::size_t) { ++calls; });
        ctx.reset();
        BOOST_TEST(destroyed);
        BOOST_TEST(calls == 0);
    }
}

BOOST_AUTO_TEST_CASE(every_token)
{
    {
        asio::io_context ctx;
        barrier b(ctx, 2);
        std::future<std::size_t> first = b.async_arrive_and_wait(asio::use_future);
        std::future<std::size_t> second = b.async_arrive_and_wait(asio::use_future);
        ctx.run();
        BOOST_TEST(first.get() == 0u);
        BOOST_TEST(second.get() == 0u);
    }
    {
        asio::io_context ctx;
        barrier b(ctx, 2);
        std::future<std::size_t> f = b.async_arrive_and_wait(asio::use_future);
        b.cancel();
        ctx.run();
        BOOST_CHECK_THROW(f.get(), boost::system::system_error);
    }
    {
        asio::io_context ctx;
        barrier b(ctx, 1);
        auto op = b.async_arrive_and_wait(asio::deferred);
        BOOST_TEST(b.phase() == 0u); // a deferred arrival arrives when it is invoked
        arrival_log log;
        std::move(op)(log.handler(1));
        BOOST_TEST(b.phase() == 1u);
        ctx.run();
        BOOST_TEST(log.phases == (std::vector<std::size_t>{0}));
    }
#if defined(BOOST_ASIO_HAS_CO_AWAIT)
    {
        asio::io_context ctx;
        barrier b(ctx, 2);
        std::vector<std::size_t> phases;
        auto participant = [&]() -> asio::awaitable<void> {
            phases.push_back(co_await b.async_arrive_and_wait(asio::use_awaitable));
            auto [ec, phase] = co_await b.async_arrive_and_wait(asio::as_tuple(asio::use_awaitable));
            BOOST_TEST(!ec);
            phases.push_back(phase);
        };
        asio::co_spawn(ctx, participant(), asio::detached);
        asio::co_spawn(ctx, participant(), asio::detached);
        ctx.run();
        BOOST_TEST(phases == (std::vector<std::size_t>{0, 0, 1, 1}));
    }
    {
        asio::io_context ctx;
        barrier b(ctx, 2);
        bool aborted = false;
        auto participant = [&]() -> asio::awaitable<void> {
            try
            {
                co_await b.async_arrive_and_wait(asio::use_awaitable);
            }
            catch (const boost::system::system_error& e)
            {
                aborted = e.code() == asio::error::operation_aborted;
            }
        };
        asio::co_spawn(ctx, participant(), asio::detached);
        drain(ctx);
        b.cancel();
        ctx.run();
        BOOST_TEST(aborted);
    }
#endif
}

#if defined(BOOST_ASIO_HAS_CO_AWAIT)
// With use_awaitable the last arrival goes on without suspending, after the completion function,
// while the others are resumed through the executor.
BOOST_AUTO_TEST_CASE(an_awaiting_last_arrival_continues_without_suspending)
{
    asio::io_context ctx;
    std::vector<std::string> log;
    barrier b(ctx, 2, [&] { log.push_back("function"); });
    auto participant = [&](std::string name) -> asio::awaitable<void> {
        const std::size_t phase = co_await b.async_arrive_and_wait(asio::use_awaitable);
        log.push_back(name + " " + std::to_string(phase));
    };
    asio::co_spawn(ctx, participant("first"), asio::detached);
    drain(ctx);
    asio::co_spawn(ctx, participant("last"), asio::detached);
    ctx.run();
    BOOST_TEST(log == (std::vector<std::string>{"function", "last 0", "first 0"}),
               boost::test_tools::per_element());
}

// A coroutine that is the only participant arrives again and again without waiting: it still
// lets the other handlers of its thread run, at most immediate_acquire_budget arrivals apart.
BOOST_AUTO_TEST_CASE(a_loop_of_last_arrivals_still_yields)
{
    asio::io_context ctx;
    barrier alone(ctx, 1);
    std::size_t arrivals = 0;
    std::optional<std::size_t> arrivals_when_posted_ran;
    auto loop = [&]() -> asio::awaitable<void> {
        asio::post(ctx, [&] { arrivals_when_posted_ran = arrivals; });
        while (arrivals < 1000 && !arrivals_when_posted_ran)
        {
            co_await alone.async_arrive_and_wait(asio::use_awaitable);
            ++arrivals;
        }
    };
    // On a new thread, whose budget of completions without suspension is whole.
    std::thread([&] {
        asio::co_spawn(ctx, loop(), asio::detached);
        ctx.run();
    }).join();
    BOOST_TEST_REQUIRE(arrivals_when_posted_ran.has_value());
    BOOST_TEST(*arrivals_when_posted_ran <= asio_sync::detail::immediate_acquire_budget);
    BOOST_TEST(alone.phase() == arrivals);
}

// The awaiting last arrival gets the completion function's exception; the others are released.
BOOST_AUTO_TEST_CASE(an_awaiting_last_arrival_gets_the_completion_function_exception)
{
    asio::io_context ctx;
    barrier b(ctx, 2, [] { throw std::runtime_error("completion"); });
    arrival_log log;
    b.async_arrive_and_wait(log.handler(1));
    bool thrown = false;
    asio::co_spawn(
        ctx,
        [&]() -> asio::awaitable<void> {
            try
            {
                co_await b.async_arrive_and_wait(asio::use_awaitable);
            }
            catch (const std::runtime_error&)
            {
                thrown = true;
            }
        },
        asio::detached);
    ctx.run();
    BOOST_TEST(thrown);
    BOOST_TEST(log.order == (std::vector<int>{1}));
    BOOST_TEST(!log.codes.at(0));
    BOOST_TEST(b.phase() == 1u);
}
#endif

#if defined(BOOST_ASIO_HAS_CO_AWAIT)
// A coroutine's arrival races a callback's on a thread pool, and the completion function throws:
// whichever arrival is last gets the exception, the coroutine through its co_await even when
// its arrival turned out last only after it had suspended; never the thread running it.
BOOST_AUTO_TEST_CASE(a_throwing_completion_function_raced_on_a_thread_pool_reaches_the_last_arrival)
{
    constexpr int rounds = 1000;
    asio::thread_pool pool(2);
    int coroutine_last = 0;
    for (int round = 0; round < rounds; ++round)
    {
        barrier b(pool.get_executor(), 2, [] { throw std::runtime_error("completion"); });
        std::atomic<int> ready{0};
        std::promise<bool> coroutine_threw;
        std::promise<bool> callback_threw;
        // Both start together; the callback's arrival comes a little later each round, so that
        // some rounds land while the coroutine's arrival is on its way from its check to its wait.
        const int delay = round % 200;
        asio::co_spawn(
            pool,
            [&]() -> asio::awaitable<void> {
                ++ready;
                while (ready.load() != 2)
                {
                }
                try
                {
                    co_await b.async_arrive_and_wait(asio::use_awaitable);
                    coroutine_threw.set_value(false);
                }
                catch (const std::runtime_error&)
                {
                    coroutine_threw.set_value(true);
                }
            },
            asio::detached);
        asio::post(pool, [&] {
            ++ready;
            while (ready.load() != 2)
            {
            }
            for (int i = 0; i < delay; ++i)
                ready.load();
            try
            {
                b.async_arrive_and_wait([](error_code, std::size_t) {});
                callback_threw.set_value(false);
            }
            catch (const std::runtime_error&)
            {
                callback_threw.set_value(true);
            }
        });
        const bool by_coroutine = coroutine_threw.get_future().get();
        const bool by_callback = callback_threw.get_future().get();
        BOOST_TEST(by_coroutine != by_callback);
        coroutine_last += by_coroutine;
        BOOST_TEST(b.phase() == 1u);
    }
    BOOST_TEST_MESSAGE("the coroutine arrived last " << coroutine_last << " times of " << rounds);
}
#endif

// Each arrival, the last one included, allocates its operation and its completion's submission
// through the handler's allocator, and nothing else.
BOOST_AUTO_TEST_CASE(an_arrival_allocates_only_through_the_handler_allocator)
{
    asio::io_context ctx(1);
    barrier b(ctx, 2, [] {});
    asio_sync::test::allocation_counts counts;
    constexpr int rounds = 100;
    int succeeded = 0;
    auto handler = asio::bind_allocator(asio_sync::test::counting_allocator<void>(counts),
                                        [&](error_code ec, std::size_t) { succeeded += !ec; });
    for (int i = 0; i < rounds; ++i)
    {
        b.async_arrive_and_wait(handler);
        b.async_arrive_and_wait(handler);
        drain(ctx);
    }
    BOOST_TEST(succeeded == 2 * rounds);
    BOOST_TEST(counts.allocations.load() == std::size_t(4 * rounds));
    BOOST_TEST(counts.deallocations.load() == counts.allocations.load());
}

// A waiter whose completion cannot be submitted loses only its own handler: the others of the
// phase complete, and the last arrival does not throw because of it. The last arrival's own
// failure reaches its caller.
BOOST_AUTO_TEST_CASE(a_completion_that_cannot_be_submitted_loses_only_its_handler)
{
    asio::io_context ctx;
    barrier b(ctx, 3);
    asio_sync::test::fault_plan plan;
    arrival_log log;
    b.async_arrive_and_wait(log.handler(1));
    b.async_arrive_and_wait(
        asio::bind_allocator(asio_sync::test::failing_allocator<void>(plan), log.handler(2)));
    plan.fail_at = 1; // the submission of waiter 2's completion
    plan.armed = true;
    BOOST_CHECK_NO_THROW(b.async_arrive_and_wait(log.handler(3)));
    plan.armed = false;
    ctx.run();
    BOOST_TEST(plan.failures == 1u);
    BOOST_TEST(log.order == (std::vector<int>{1, 3}));

    ctx.restart();
    b.async_arrive_and_wait(log.handler(4));
    b.async_arrive_and_wait(log.handler(5));
    plan = asio_sync::test::fault_plan();
    plan.fail_at = 2; // the operation allocates, then the submission fails
    plan.armed = true;
    BOOST_CHECK_THROW(b.async_arrive_and_wait(asio::bind_allocator(
                          asio_sync::test::failing_allocator<void>(plan), log.handler(6))),
                      std::bad_alloc);
    plan.armed = false;
    BOOST_TEST(b.phase() == 2u); // the phase completed with it
    ctx.run();
    BOOST_TEST(log.order == (std::vector<int>{1, 3, 4, 5}));
}

// An arrival whose operation cannot be allocated has not arrived.
BOOST_AUTO_TEST_CASE(an_arrival_that_cannot_allocate_has_not_arrived)
{
    asio::io_context ctx;
    barrier b(ctx, 2);
    asio_sync::test::fault_plan plan;
    plan.fail_at = 1;
    plan.armed = true;
    arrival_log log;
    BOOST_CHECK_THROW(b.async_arrive_and_wait(asio::bind_allocator(
                          asio_sync::test::failing_allocator<void>(plan), log.handler(1))),
                      std::bad_alloc);
    BOOST_TEST(b.missing() == 2u);
    ctx.run();
    BOOST_TEST(log.order.empty());
}

// Participants loop over many phases on a thread pool, from several threads at once: every
// arrival completes exactly once, with its own phase, only after every participant of the phase
// arrived and after the phase's completion function, which runs once per phase.
BOOST_AUTO_TEST_CASE(participants_stepping_on_a_thread_pool)
{
    constexpr int participants = 4;
    constexpr std::size_t phases = 500;
    asio::thread_pool pool(4);
    std::atomic<int> arrived_total{0};
    std::atomic<std::size_t> functions{0};
    std::atomic<int> early{0};
    std::atomic<int> misnumbered{0};
    std::atomic<int> failures{0};
    barrier b(pool.get_executor(), participants, [&] {
        // Every participant of phase `functions` has arrived, and nobody has left it.
        early += arrived_total.load() != participants * int(functions.load() + 1);
        ++functions;
    });
    struct participant
    {
        barrier& b;
        std::atomic<int>& arrived_total;
        std::atomic<std::size_t>& functions;
        std::atomic<int>& early;
        std::atomic<int>& misnumbered;
        std::atomic<int>& failures;
        std::size_t next = 0;

        void arrive()
        {
            ++arrived_total;
            b.async_arrive_and_wait([this](error_code ec, std::size_t phase) {
                failures += bool(ec);
                misnumbered += phase != next;
                early += functions.load() < phase + 1;
                if (++next < phases)
                    arrive();
            });
        }
    };
    std::vector<std::unique_ptr<participant>> all;
    for (int i = 0; i < participants; ++i)
    {
        all.push_back(std::unique_ptr<participant>(
            new participant{b, arrived_total, functions, early, misnumbered, failures}));
        asio::post(pool, [p = all.back().get()] { p->arrive(); });
    }
    pool.join();
    BOOST_TEST(functions.load() == phases);
    BOOST_TEST(b.phase() == phases);
    BOOST_TEST(early.load() == 0);
    BOOST_TEST(misnumbered.load() == 0);
    BOOST_TEST(failures.load() == 0);
    for (auto& p : all)
        BOOST_TEST(p->next == phases);
}

// A waiting arrival cancelled from its strand while another thread makes the last arrival: the
// arrival is withdrawn (and the phase still misses one) or it completed the phase; never both,
// never neither.
BOOST_AUTO_TEST_CASE(cancellation_racing_the_last_arrival_on_a_thread_pool)
{
    constexpr int rounds = 2000;
    asio::thread_pool pool(4);
    int withdrawn = 0;
    int completed = 0;
    for (int round = 0; round < rounds; ++round)
    {
        barrier b(pool.get_executor(), 2);
        auto strand = asio::make_strand(pool);
        asio::cancellation_signal cancel;
        std::promise<std::pair<error_code, std::size_t>> first;
        std::promise<error_code> last;
        std::promise<void> last_arrived;
        std::promise<void> emitted; // the round's objects outlive every handler that uses them
        asio::post(strand, [&] {
            b.async_arrive_and_wait(asio::bind_cancellation_slot(
                cancel.slot(), asio::bind_executor(strand, [&](error_code ec, std::size_t phase) {
                    first.set_value({ec, phase});
                })));
            asio::post(pool, [&] {
                b.async_arrive_and_wait([&](error_code ec, std::size_t) { last.set_value(ec); });
                last_arrived.set_value();
            });
            asio::post(strand, [&] {
                cancel.emit(asio::cancellation_type::terminal);
                emitted.set_value();
            });
        });
        const auto [ec, phase] = first.get_future().get();
        last_arrived.get_future().wait();
        BOOST_TEST(phase == 0u);
        if (ec)
        {
            BOOST_TEST(ec == asio::error::operation_aborted);
            ++withdrawn;
            // Withdrawn: the other arrival waits alone, and the phase never completed.
            BOOST_TEST(b.phase() == 0u);
            BOOST_TEST(b.missing() == 1u);
            b.arrive_and_drop();
        }
        else
        {
            ++completed;
            BOOST_TEST(b.phase() == 1u);
        }
        BOOST_TEST(!last.get_future().get());
        emitted.get_future().wait();
    }
    BOOST_TEST_MESSAGE("withdrawn " << withdrawn << ", completed " << completed);
    BOOST_TEST(withdrawn + completed == rounds);
}

BOOST_AUTO_TEST_SUITE_END()
