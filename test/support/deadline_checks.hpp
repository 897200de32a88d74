// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_TEST_SUPPORT_DEADLINE_CHECKS_HPP
#define ASIO_SYNC_TEST_SUPPORT_DEADLINE_CHECKS_HPP

// One table of checks for every wait with a deadline (`_for` and `_until`), run for each kind of
// wait, so that the semaphore, the locks and the events are held to the same scenarios: decided at
// once without a timer, a deadline already past, zero and negative durations, a timeout that
// holds nothing and lets the next waiter move up, a grant before the deadline, cancellation on
// top, destruction and context shutdown with timers pending, allocation through the handler's
// allocator, coroutines, and a grant racing the deadline on two threads (exactly one outcome per
// round, counted).
//
// A kind provides:
//  - `name`, and `object`, constructible from an io_context;
//  - `block(o)`: from now on a wait has to queue; `grant(o)`: lets one queued wait through;
//  - `release(o)`: gives back what a successful wait holds;
//  - `idle(o)`: true when nothing is held and nobody waits (checked once the blocker let go);
//  - `wait_for(o, duration, handler)`, `wait_until(o, time_point, handler)`: the timed wait,
//    reporting only its error code to `handler` (a scoped kind takes its guard over from the
//    handler's argument, so that `release` gives it back like the others); with a coroutine
//    token, the error code comes first;
//  - optionally `destroying_grants = true`: destroying the object lets its waits through rather
//    than aborting them (a gate releases its blocking guard before it goes).

#include <support/counting_allocator.hpp>
#include <support/handler.hpp>

#include <asio_sync/error.hpp>

#include <boost/asio/associated_allocator.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/bind_allocator.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/system/error_code.hpp>
#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#if defined(BOOST_ASIO_HAS_CO_AWAIT)
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>
#endif

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <limits>
#include <memory>
#include <optional>
#include <ostream>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace asio_sync::test {

// The timed waits of a kind whose object has `async_wait_for` and `async_wait_until` (the
// events): a kind derives from it.
struct async_wait_deadlines
{
    template <class Object, class Duration, class Token>
    static auto wait_for(Object& o, Duration d, Token&& token)
    {
        return o.async_wait_for(d, std::forward<Token>(token));
    }

    template <class Object, class TimePoint, class Token>
    static auto wait_until(Object& o, TimePoint t, Token&& token)
    {
        return o.async_wait_until(t, std::forward<Token>(token));
    }
};

// The handler of a scoped kind: takes the guard over from the handler's argument (so that the
// kind's release() gives the lock back), and reports only the error code. It keeps the wrapped
// handler's cancellation slot and allocator.
template <class Handler>
struct guard_taker
{
    Handler handler;

    using cancellation_slot_type = boost::asio::associated_cancellation_slot_t<Handler>;
    using allocator_type = boost::asio::associated_allocator_t<Handler>;

    cancellation_slot_type get_cancellation_slot() const noexcept
    {
        return boost::asio::get_associated_cancellation_slot(handler);
    }
    allocator_type get_allocator() const noexcept { return boost::asio::get_associated_allocator(handler); }

    template <class Lock>
    void operator()(boost::system::error_code ec, Lock lock)
    {
        lock.release();
        std::move(handler)(ec);
    }
};

template <class Handler>
guard_taker<std::decay_t<Handler>> take_guard(Handler&& handler)
{
    return {std::forward<Handler>(handler)};
}

struct deadline_check
{
    std::string name;
    std::function<void()> run;
};

inline std::ostream& operator<<(std::ostream& os, const deadline_check& check)
{
    return os << check.name;
}

template <class Kind, class = void>
struct destroying_grants : std::false_type
{
};

template <class Kind>
struct destroying_grants<Kind, std::void_t<decltype(Kind::destroying_grants)>>
    : std::bool_constant<Kind::destroying_grants>
{
};

template <class Kind>
class deadline_checks
{
public:
    static std::vector<deadline_check> all()
    {
        std::vector<deadline_check> checks{
            {"decided at once, it starts no timer", &decided_at_once},
            {"a deadline already past", &deadline_already_past},
            {"zero and negative durations", &zero_and_negative_durations},
            {"a timeout holds nothing and the next waiter moves up", &timeout_holds_nothing},
            {"a grant before the deadline cancels the timer", &grant_before_the_deadline},
            {"cancellation is operation_aborted, not timed_out", &cancellation_on_top},
            {"destroying the object with a timer pending", &destroyed_with_timer_pending},
            {"context shutdown with a timer pending", &context_shut_down_with_timer_pending},
            {"the operation and its timer use the handler's allocator", &handler_allocator},
            {"a grant racing the deadline on two threads has exactly one outcome", &grant_races_deadline},
        };
#if defined(BOOST_ASIO_HAS_CO_AWAIT)
        checks.push_back({"use_awaitable and as_tuple", &coroutines});
#endif
        for (deadline_check& check : checks)
            check.name = std::string(Kind::name) + ": " + check.name;
        return checks;
    }

private:
    using object = typename Kind::object;
    using error_code = boost::system::error_code;
    using steady = std::chrono::steady_clock;

    static constexpr std::chrono::seconds limit{60};
    static constexpr std::chrono::hours never{24};

    struct fixture
    {
        boost::asio::io_context io;
        object o{io};
    };

    static const error_code& timed_out()
    {
        static const error_code ec = asio_sync::error::timed_out;
        return ec;
    }

    // Runs until nothing is left to do; a timer left running would keep the context busy.
    static void run(boost::asio::io_context& io)
    {
        io.restart();
        io.run_for(limit);
        BOOST_TEST_REQUIRE(io.stopped(), "the io_context still had work when the time limit expired");
    }

    static void run_until_done(boost::asio::io_context& io, const outcome& out)
    {
        io.restart();
        const auto give_up = steady::now() + limit;
        while (!out.done() && steady::now() < give_up)
            io.run_one_for(limit);
        BOOST_TEST_REQUIRE(out.done());
    }

    // One wait, started through `start`, on a blocked object (or a free one): its outcome once
    // the context has run dry, and the object idle once the blocker let go.
    template <class Start>
    static void expect(bool blocked, Start start, const error_code& expected)
    {
        fixture f;
        if (blocked)
            Kind::block(f.o);
        auto [out, handler] = make_record();
        start(f.o, handler);
        BOOST_TEST(!out->done()); // never inline
        run(f.io);
        BOOST_TEST_REQUIRE(out->calls == 1);
        BOOST_TEST(*out->ec == expected);
        if (!expected)
            Kind::release(f.o);
        if (blocked)
            Kind::grant(f.o);
        run(f.io);
        BOOST_TEST(Kind::idle(f.o));
    }

    static void decided_at_once()
    {
        // A timer left running for a day would keep run() from returning.
        expect(false, [](object& o, record h) { Kind::wait_for(o, never, h); }, {});
        expect(false, [](object& o, record h) { Kind::wait_until(o, steady::now() + never, h); }, {});
        expect(false, [](object& o, record h) { Kind::wait_until(o, steady::time_point::max(), h); }, {});
    }

    template <class Clock>
    static std::chrono::time_point<Clock, std::chrono::duration<double>> not_a_number()
    {
        return std::chrono::time_point<Clock, std::chrono::duration<double>>(
            std::chrono::duration<double>(std::numeric_limits<double>::quiet_NaN()));
    }

    static void deadline_already_past()
    {
        const auto long_ago = std::chrono::system_clock::now() - std::chrono::hours(1);
        for (const bool blocked : {false, true})
        {
            const error_code expected = blocked ? timed_out() : error_code();
            expect(
                blocked, [](object& o, record h) { Kind::wait_until(o, steady::now(), h); }, expected);
            expect(
                blocked,
                [](object& o, record h) { Kind::wait_until(o, steady::now() - std::chrono::seconds(1), h); },
                expected);
            expect(
                blocked, [](object& o, record h) { Kind::wait_until(o, steady::time_point::min(), h); },
                expected);
            expect(
                blocked, [&](object& o, record h) { Kind::wait_until(o, long_ago, h); }, expected);
            // A time point that is not a number has passed, on any clock.
            expect(
                blocked, [](object& o, record h) { Kind::wait_until(o, not_a_number<steady>(), h); },
                expected);
            expect(
                blocked,
                [](object& o, record h) {
                    Kind::wait_until(o, not_a_number<std::chrono::system_clock>(), h);
                },
                expected);
        }
    }

    static void zero_and_negative_durations()
    {
        for (const bool blocked : {false, true})
        {
            const error_code expected = blocked ? timed_out() : error_code();
            expect(
                blocked, [](object& o, record h) { Kind::wait_for(o, std::chrono::seconds(0), h); },
                expected);
            expect(
                blocked, [](object& o, record h) { Kind::wait_for(o, std::chrono::nanoseconds(-1), h); },
                expected);
            expect(
                blocked, [](object& o, record h) { Kind::wait_for(o, std::chrono::hours::min(), h); },
                expected);
            expect(
                blocked,
                [](object& o, record h) {
                    Kind::wait_for(o, std::chrono::duration<double>(std::numeric_limits<double>::quiet_NaN()),
                                   h);
                },
                expected); // not a number: no time at all
            // The largest duration saturates: the wait just never times out.
            expect(false, [](object& o, record h) { Kind::wait_for(o, std::chrono::hours::max(), h); }, {});
        }
    }

    static void timeout_holds_nothing()
    {
        fixture f;
        Kind::block(f.o);
        auto [timed, timed_handler] = make_record();
        auto [behind, behind_handler] = make_record();
        Kind::wait_for(f.o, std::chrono::milliseconds(1), timed_handler);
        Kind::wait_for(f.o, never, behind_handler);
        run_until_done(f.io, *timed);
        BOOST_TEST(*timed->ec == timed_out());
        BOOST_TEST(!behind->done());
        Kind::grant(f.o); // goes to the waiter behind, not to the one that timed out
        run(f.io);
        BOOST_TEST_REQUIRE(behind->calls == 1);
        BOOST_TEST(!*behind->ec);
        Kind::release(f.o);
        BOOST_TEST(Kind::idle(f.o));
    }

    static void grant_before_the_deadline()
    {
        fixture f;
        Kind::block(f.o);
        auto [out, handler] = make_record();
        Kind::wait_until(f.o, steady::now() + never, handler);
        f.io.poll();
        BOOST_TEST(!out->done());
        Kind::grant(f.o);
        BOOST_TEST(!out->done()); // posted, never inline
        run(f.io);                // returns: the timer was cancelled with the grant
        BOOST_TEST_REQUIRE(out->calls == 1);
        BOOST_TEST(!*out->ec);
        Kind::release(f.o);
        BOOST_TEST(Kind::idle(f.o));
    }

    static void cancellation_on_top()
    {
        fixture f;
        Kind::block(f.o);
        boost::asio::cancellation_signal signal;
        auto [out, handler] = make_record();
        Kind::wait_for(f.o, never, boost::asio::bind_cancellation_slot(signal.slot(), handler));
        f.io.poll();
        signal.emit(boost::asio::cancellation_type::terminal);
        BOOST_TEST(!out->done());
        run(f.io);
        BOOST_TEST_REQUIRE(out->calls == 1);
        BOOST_TEST(*out->ec == boost::asio::error::operation_aborted);
        signal.emit(boost::asio::cancellation_type::terminal); // after completion: does nothing
        Kind::grant(f.o);
        run(f.io);
        BOOST_TEST(Kind::idle(f.o));
    }

    static void destroyed_with_timer_pending()
    {
        boost::asio::io_context io;
        auto [out, handler] = make_record();
        auto [expired, expired_handler] = make_record();
        {
            object o(io);
            Kind::block(o);
            Kind::wait_for(o, never, handler);
            Kind::wait_for(o, std::chrono::seconds(0), expired_handler);
            io.poll_one(); // may run the expiry: it reaches the object while it still exists
        }
        run(io); // returns: both timers were cancelled or had expired
        const error_code destroyed =
            destroying_grants<Kind>::value ? error_code() : error_code(boost::asio::error::operation_aborted);
        BOOST_TEST(out->calls == 1);
        BOOST_TEST(*out->ec == destroyed);
        BOOST_TEST(expired->calls == 1);
        BOOST_TEST((*expired->ec == timed_out() || *expired->ec == destroyed));
    }

    static void context_shut_down_with_timer_pending()
    {
        auto destroyed = std::make_shared<int>(0);
        std::optional<boost::asio::io_context> io(std::in_place);
        std::optional<object> o(std::in_place, *io);
        Kind::block(*o);
        auto witness = std::make_shared<on_destroy>([destroyed] { ++*destroyed; });
        Kind::wait_for(*o, never, [witness](error_code) { BOOST_ERROR("invoked after shutdown"); });
        witness.reset();
        BOOST_TEST(*destroyed == 0);
        io.reset(); // destroys the handler and the timer's wait without invoking them
        BOOST_TEST(*destroyed == 1);
        o.reset(); // the object may outlive its context
    }

    static void handler_allocator()
    {
        allocation_counts counts;
        {
            fixture f;
            Kind::block(f.o);
            auto [out, handler] = make_record();
            Kind::wait_for(f.o, never,
                           boost::asio::bind_allocator(counting_allocator<void>(counts), handler));
            f.io.poll();
            BOOST_TEST(counts.allocations.load() >=
                       2u); // the operation (with its timer) and the timer's wait
            Kind::grant(f.o);
            run(f.io);
            BOOST_TEST(!*out->ec);
            Kind::release(f.o);
        }
        BOOST_TEST(counts.allocations.load() == counts.deallocations.load());
    }

    // Each round: a blocked object, a timed wait on a two-thread context, and a grant from this
    // thread at about the deadline. Exactly one outcome per round; a timed-out wait holds nothing
    // (the grant went nowhere, or stayed for the next wait), a successful one holds the object.
    static void grant_races_deadline()
    {
        constexpr int rounds = 200;
        std::mt19937 rng(20260424);
        int granted = 0;
        int expired = 0;
        boost::asio::io_context io;
        auto work = boost::asio::make_work_guard(io);
        std::thread runner([&io] { io.run_for(limit); });
        std::thread second_runner([&io] { io.run_for(limit); });
        for (int round = 0; round < rounds; ++round)
        {
            std::optional<object> o(std::in_place, io);
            Kind::block(*o);
            const auto delay = std::chrono::microseconds(std::uniform_int_distribution<int>(0, 300)(rng));
            std::promise<error_code> result;
            std::atomic<int> calls{0};
            boost::asio::post(io, [&] {
                Kind::wait_for(*o, delay, [&](error_code ec) {
                    if (calls.fetch_add(1) == 0)
                        result.set_value(ec);
                });
            });
            std::this_thread::sleep_for(
                std::chrono::microseconds(std::uniform_int_distribution<int>(0, 300)(rng)));
            std::promise<void> grant_done;
            boost::asio::post(io, [&] {
                Kind::grant(*o);
                grant_done.set_value();
            });
            auto done = result.get_future();
            auto granted_now = grant_done.get_future();
            BOOST_TEST_REQUIRE((done.wait_for(limit) == std::future_status::ready));
            BOOST_TEST_REQUIRE((granted_now.wait_for(limit) == std::future_status::ready));
            const error_code ec = done.get();
            // Both sides are done: what the wait holds, if anything, goes back, and then nothing
            // may be held.
            if (!ec)
                Kind::release(*o);
            BOOST_TEST(Kind::idle(*o), "round " << round << ": something held after " << ec.message());
            BOOST_TEST(calls.load() == 1);
            if (!ec)
                ++granted;
            else if (ec == timed_out())
                ++expired;
            else
                BOOST_ERROR("round " << round << ": " << ec.message());
        }
        work.reset();
        runner.join();
        second_runner.join();
        BOOST_TEST_MESSAGE(Kind::name << ": " << granted << " granted, " << expired << " timed out");
        BOOST_TEST(granted + expired == rounds);
    }

#if defined(BOOST_ASIO_HAS_CO_AWAIT)
    static boost::asio::awaitable<void> waits(object& o, int& step)
    {
        Kind::block(o);
        // The error code first, then whatever else the wait completes with (a barrier's phase).
        const auto result = co_await Kind::wait_for(o, std::chrono::milliseconds(1),
                                                    boost::asio::as_tuple(boost::asio::use_awaitable));
        BOOST_TEST(std::get<0>(result) == timed_out());
        ++step;
        try
        {
            co_await Kind::wait_until(o, steady::now(), boost::asio::use_awaitable);
            BOOST_ERROR("a blocked wait with a past deadline succeeded");
        }
        catch (const boost::system::system_error& e)
        {
            BOOST_TEST(e.code() == timed_out());
            ++step;
        }
        Kind::grant(o);
        co_await Kind::wait_for(o, never, boost::asio::use_awaitable); // granted at once, or queued
        Kind::release(o);
        ++step;
    }

    static void coroutines()
    {
        fixture f;
        int step = 0;
        boost::asio::co_spawn(f.io, waits(f.o, step), [](std::exception_ptr e) {
            if (e)
                std::rethrow_exception(e);
        });
        run(f.io);
        BOOST_TEST(step == 3);
        BOOST_TEST(Kind::idle(f.o));
    }
#endif
};

} // namespace asio_sync::test

#endif // ASIO_SYNC_TEST_SUPPORT_DEADLINE_CHECKS_HPP
