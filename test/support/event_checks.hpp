// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_TEST_SUPPORT_EVENT_CHECKS_HPP
#define ASIO_SYNC_TEST_SUPPORT_EVENT_CHECKS_HPP

// Checks that hold for every primitive with `async_wait(token)` -> void(error_code) and a
// `set()`-like release (the events): `Event` is the primitive, `signal(e)` what lets one wait
// through.

#include "support/counting_allocator.hpp"
#include "support/handler.hpp"
#include "support/recording_executor.hpp"

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
#include <boost/system/error_code.hpp>
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <cstddef>
#include <future>
#include <memory>
#include <vector>

#if defined(BOOST_ASIO_HAS_CO_AWAIT)
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>
#endif

namespace asio_sync::test {

// Runs every handler that is ready, without blocking.
inline void drain(boost::asio::io_context& ctx)
{
    ctx.restart();
    ctx.poll();
}

// Records the order in which handlers complete.
struct order_log
{
    std::vector<int> order;
    std::vector<boost::system::error_code> codes;

    auto handler(int id)
    {
        return [this, id](boost::system::error_code ec) {
            order.push_back(id);
            codes.push_back(ec);
        };
    }
};

// A wait on a signalled primitive completes, but through the executor, never inside async_wait.
template <class Event, class Signal>
void check_immediate_wait_is_posted(Signal signal)
{
    boost::asio::io_context ctx;
    Event event(ctx);
    signal(event);
    auto [out, handler] = make_record();
    event.async_wait(handler);
    BOOST_TEST(!out->done());
    drain(ctx);
    BOOST_TEST(out->calls == 1);
    BOOST_TEST(!*out->ec);
}

// Each of the three cancellation types aborts a queued wait, leaves the others queued, and a
// cancellation that arrives after the wait was let through does nothing.
template <class Event, class Signal>
void check_per_operation_cancellation(Signal signal)
{
    using boost::asio::cancellation_type;
    for (cancellation_type type :
         {cancellation_type::terminal, cancellation_type::partial, cancellation_type::total})
    {
        BOOST_TEST_CONTEXT("type " << static_cast<int>(type))
        {
            boost::asio::io_context ctx;
            Event event(ctx);
            boost::asio::cancellation_signal cancel;
            order_log log;
            event.async_wait(boost::asio::bind_cancellation_slot(cancel.slot(), log.handler(1)));
            event.async_wait(log.handler(2));
            cancel.emit(type);
            drain(ctx);
            BOOST_TEST(log.order == (std::vector<int>{1}));
            BOOST_TEST(log.codes.at(0) == boost::asio::error::operation_aborted);
            signal(event);
            drain(ctx);
            BOOST_TEST(log.order == (std::vector<int>{1, 2}));
            BOOST_TEST(!log.codes.at(1));
        }
    }
}

// A cancellation emitted after the signal, before the handler ran: the wait already succeeded.
template <class Event, class Signal>
void check_cancellation_after_the_signal_does_nothing(Signal signal)
{
    boost::asio::io_context ctx;
    Event event(ctx);
    boost::asio::cancellation_signal cancel;
    auto [out, handler] = make_record();
    event.async_wait(boost::asio::bind_cancellation_slot(cancel.slot(), handler));
    signal(event);
    cancel.emit(boost::asio::cancellation_type::terminal);
    drain(ctx);
    BOOST_TEST(out->calls == 1);
    BOOST_TEST(!*out->ec);
}

// cancel() aborts every queued wait, oldest first, and reports how many.
template <class Event>
void check_cancel_aborts_every_queued_wait()
{
    boost::asio::io_context ctx;
    Event event(ctx);
    order_log log;
    for (int id = 1; id <= 3; ++id)
        event.async_wait(log.handler(id));
    BOOST_TEST(event.cancel() == 3u);
    BOOST_TEST(log.order.empty());
    drain(ctx);
    BOOST_TEST(log.order == (std::vector<int>{1, 2, 3}));
    for (auto ec : log.codes)
        BOOST_TEST(ec == boost::asio::error::operation_aborted);
    BOOST_TEST(event.cancel() == 0u);
}

// Destroying the primitive aborts its queued waits; context shutdown destroys the handlers of
// queued waits without invoking them, and the primitive may still be destroyed afterwards.
template <class Event>
void check_destruction_and_shutdown()
{
    {
        boost::asio::io_context ctx;
        auto [out, handler] = make_record();
        {
            Event event(ctx);
            event.async_wait(handler);
        }
        BOOST_TEST(!out->done());
        ctx.run();
        BOOST_TEST(out->calls == 1);
        BOOST_TEST(*out->ec == boost::asio::error::operation_aborted);
    }
    {
        bool destroyed = false;
        int calls = 0;
        auto ctx = std::make_unique<boost::asio::io_context>();
        Event event(*ctx);
        event.async_wait([&calls, guard = std::make_shared<on_destroy>([&] { destroyed = true; })](
                             boost::system::error_code) { ++calls; });
        ctx.reset();
        BOOST_TEST(destroyed);
        BOOST_TEST(calls == 0);
    }
}

// The wait the caller's signal lets through first continues the caller; the others are forks.
template <template <class> class BasicEvent, class Signal>
void check_completion_relations(Signal signal, const std::vector<bool>& expected, int waiters)
{
    using executor = recording_executor<boost::asio::io_context::executor_type>;
    boost::asio::io_context ctx;
    std::vector<bool> continuations;
    BasicEvent<executor> event(executor(ctx.get_executor(), continuations));
    order_log log;
    for (int id = 1; id <= waiters; ++id)
        event.async_wait(log.handler(id));
    BOOST_TEST(continuations.empty()); // nothing submitted while waiting: never inline
    signal(event);
    BOOST_TEST(continuations == expected, boost::test_tools::per_element());
    BOOST_TEST(log.order.empty()); // submitted, not invoked
    event.cancel();                // the waits the signal did not reach
    ctx.run();
    BOOST_TEST(log.order.size() == std::size_t(waiters));
}

// A queued wait allocates its operation and its completion's submission through the handler's
// allocator, and nothing else: on the concrete and the type-erased executor.
template <class Event, class Signal>
void check_waits_allocate_through_the_handler_allocator(Signal signal)
{
    boost::asio::io_context ctx(1);
    Event event(ctx);
    allocation_counts counts;
    constexpr int rounds = 100;
    int succeeded = 0;
    auto handler = boost::asio::bind_allocator(counting_allocator<void>(counts),
                                               [&](boost::system::error_code ec) { succeeded += !ec; });
    for (int i = 0; i < rounds; ++i)
    {
        event.async_wait(handler);
        signal(event);
        drain(ctx);
    }
    BOOST_TEST(succeeded == rounds);
    BOOST_TEST(counts.allocations.load() == std::size_t(2 * rounds));
    BOOST_TEST(counts.deallocations.load() == counts.allocations.load());
}

// Every completion token: a callback, use_future, deferred and, in C++20, use_awaitable.
template <class Event, class Signal>
void check_tokens(Signal signal)
{
    {
        boost::asio::io_context ctx;
        Event event(ctx);
        std::future<void> f = event.async_wait(boost::asio::use_future);
        signal(event);
        ctx.run();
        BOOST_CHECK_NO_THROW(f.get());
    }
    {
        boost::asio::io_context ctx;
        Event event(ctx);
        std::future<void> f = event.async_wait(boost::asio::use_future);
        event.cancel();
        ctx.run();
        BOOST_CHECK_THROW(f.get(), boost::system::system_error);
    }
    {
        boost::asio::io_context ctx;
        Event event(ctx);
        auto op = event.async_wait(boost::asio::deferred);
        signal(event); // nothing waits yet: a deferred operation starts when it is invoked
        auto [out, handler] = make_record();
        std::move(op)(handler);
        ctx.run();
        BOOST_TEST(out->calls == 1);
        BOOST_TEST(!*out->ec);
    }
#if defined(BOOST_ASIO_HAS_CO_AWAIT)
    {
        boost::asio::io_context ctx;
        Event event(ctx);
        int done = 0;
        auto waiter = [&]() -> boost::asio::awaitable<void> {
            co_await event.async_wait(boost::asio::use_awaitable);
            auto [ec] = co_await event.async_wait(boost::asio::as_tuple(boost::asio::use_awaitable));
            BOOST_TEST(!ec);
            ++done;
        };
        boost::asio::co_spawn(ctx, waiter(), boost::asio::detached);
        drain(ctx);
        BOOST_TEST(done == 0);
        signal(event);
        drain(ctx);
        if (done == 0) // an auto-reset event needs a second signal
            signal(event);
        ctx.run();
        BOOST_TEST(done == 1);
    }
    {
        boost::asio::io_context ctx;
        Event event(ctx);
        bool aborted = false;
        auto waiter = [&]() -> boost::asio::awaitable<void> {
            try
            {
                co_await event.async_wait(boost::asio::use_awaitable);
            }
            catch (const boost::system::system_error& e)
            {
                aborted = e.code() == boost::asio::error::operation_aborted;
            }
        };
        boost::asio::co_spawn(ctx, waiter(), boost::asio::detached);
        drain(ctx);
        event.cancel();
        ctx.run();
        BOOST_TEST(aborted);
    }
#endif
}

// A wait cancelled from its strand while this thread signals, `rounds` times on a thread pool;
// `check(ec, event)` judges each round's one outcome.
template <class Event, class Signal, class Check>
void race_cancellation_with_the_signal(int rounds, Signal signal, Check check)
{
    boost::asio::thread_pool pool(4);
    for (int round = 0; round < rounds; ++round)
    {
        Event event(pool.get_executor());
        auto strand = boost::asio::make_strand(pool);
        auto cancel = std::make_shared<boost::asio::cancellation_signal>();
        std::promise<boost::system::error_code> result;
        std::promise<void> waiting;
        boost::asio::post(strand, [&, cancel] {
            event.async_wait(boost::asio::bind_cancellation_slot(
                cancel->slot(), boost::asio::bind_executor(strand, [&result](boost::system::error_code ec) {
                    result.set_value(ec);
                })));
            waiting.set_value();
            boost::asio::post(strand, [cancel] { cancel->emit(boost::asio::cancellation_type::terminal); });
        });
        waiting.get_future().get();
        signal(event);
        check(result.get_future().get(), event);
    }
    pool.join();
}

} // namespace asio_sync::test

#endif // ASIO_SYNC_TEST_SUPPORT_EVENT_CHECKS_HPP
