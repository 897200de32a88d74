// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#define BOOST_TEST_MODULE condition_variable
#include <boost/test/unit_test.hpp>

#include <asio_sync/condition_variable.hpp>
#include <asio_sync/mutex.hpp>
#include <asio_sync/shared_mutex.hpp>

#include "support/counting_allocator.hpp"
#include "support/deadline_checks.hpp"
#include "support/event_checks.hpp"
#include "support/fault_injection.hpp"
#include "support/handler.hpp"
#include "support/lock_checks.hpp"
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
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_future.hpp>

#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <future>
#include <list>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <random>
#include <shared_mutex>
#include <stdexcept>
#include <thread>
#include <type_traits>
#include <vector>

#if defined(BOOST_ASIO_HAS_CO_AWAIT)
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/use_awaitable.hpp>
#endif

namespace asio = boost::asio;
using asio_sync::condition_variable;
using asio_sync::test::drain;
using asio_sync::test::failing_allocator;
using asio_sync::test::fault_plan;
using asio_sync::test::make_record;
using boost::system::error_code;
using lock_type = std::unique_lock<asio_sync::mutex>;

namespace {

// A mutex, a condition variable on one io_context, and waiters that each hold their own lock
// object (as a coroutine frame would) and record, when their handler runs, whether that lock owns
// the mutex.
struct waiters
{
    asio::io_context ctx;
    asio_sync::mutex mutex{ctx};
    condition_variable cv{ctx};
    std::deque<lock_type> locks;
    std::vector<int> order;
    std::vector<error_code> codes;
    std::vector<bool> owned;

    // Locks the mutex at once; the caller must not hold it.
    lock_type& lock()
    {
        BOOST_TEST_REQUIRE(mutex.try_lock());
        return locks.emplace_back(mutex, std::adopt_lock);
    }

    // A handler for a wait with lock `lock`: records, then unlocks so that the next waiter relocks.
    auto handler(int id, lock_type& lock)
    {
        return [this, id, &lock](error_code ec) {
            order.push_back(id);
            codes.push_back(ec);
            owned.push_back(lock.owns_lock());
            if (lock.owns_lock())
                lock.unlock();
        };
    }

    void wait(int id)
    {
        lock_type& l = lock();
        cv.async_wait(l, handler(id, l));
    }

    // Runs the context until a timer of `d` started now has expired: every timer of the context
    // due earlier has expired before it (timers run in the order of their deadlines).
    void run_past(std::chrono::milliseconds d)
    {
        asio::steady_timer after(ctx, d);
        bool ran = false;
        after.async_wait([&](error_code) { ran = true; });
        ctx.restart();
        while (!ran)
            ctx.run_one();
    }
};

// The state of the table's object: the mutex, and the lock object of every wait, each left in
// place until the end (a wait refers to its lock object). Shared with the waits' handlers, so that
// it outlives a condition variable destroyed with waits pending until they relock and complete.
struct table_state
{
    explicit table_state(asio::io_context& io) : mutex(io) {}

    asio_sync::mutex mutex;
    std::list<lock_type> locks;
    std::atomic<bool> ready{true}; // the predicate, and for a plain wait: no need to block
};

// A handler of the table, which expects only the error code: a wait that fails gives the mutex it
// relocked back at once, so that it holds nothing; a successful one keeps it until release().
template <class Handler>
struct failed_wait_unlocks
{
    Handler handler;
    std::shared_ptr<table_state> state;
    lock_type* lock;

    using cancellation_slot_type = asio::associated_cancellation_slot_t<Handler>;
    using allocator_type = asio::associated_allocator_t<Handler>;

    cancellation_slot_type get_cancellation_slot() const noexcept
    {
        return asio::get_associated_cancellation_slot(handler);
    }
    allocator_type get_allocator() const noexcept { return asio::get_associated_allocator(handler); }

    void operator()(error_code ec)
    {
        if (ec && lock->owns_lock())
            lock->unlock();
        std::move(handler)(ec);
    }
};

// The timed waits, for the table of test/support/deadline_checks.hpp: plain, and with a predicate.
// Blocked, a wait queues until grant(), which makes the predicate true and notifies one wait.
// Unblocked, the predicate is true, so a predicate wait completes at once; a plain wait, which
// always queues, is notified as soon as it is queued (by this thread, or for a coroutine, which
// starts the wait when it suspends, by a handler posted before that).
template <bool WithPredicate>
struct timed_wait
{
    static constexpr const char* name = WithPredicate ? "condition_variable.async_wait_for/until(pred)"
                                                      : "condition_variable.async_wait_for/until";

    struct object
    {
        explicit object(asio::io_context& io) : state(std::make_shared<table_state>(io)), cv(io) {}

        std::shared_ptr<table_state> state;
        condition_variable cv; // destroyed first: its waits relock the state's mutex
    };

    static void block(object& o) { o.state->ready = false; }

    static void grant(object& o)
    {
        o.state->ready = true;
        o.cv.notify_one();
    }

    // Also what a coroutine's wait that failed still holds (its token cannot be wrapped).
    static void release(object& o)
    {
        for (lock_type& lock : o.state->locks)
            if (lock.owns_lock())
                lock.unlock();
    }

    static bool idle(object& o)
    {
        for (const lock_type& lock : o.state->locks)
            if (lock.owns_lock())
                return false;
        return asio_sync::test::unlocked_now(o.state->mutex);
    }

    template <class Duration, class Token>
    static auto wait_for(object& o, Duration d, Token&& token)
    {
        return wait(o, std::forward<Token>(token), [&](lock_type& lock, auto&&... args) {
            return o.cv.async_wait_for(lock, d, std::forward<decltype(args)>(args)...);
        });
    }

    template <class TimePoint, class Token>
    static auto wait_until(object& o, TimePoint t, Token&& token)
    {
        return wait(o, std::forward<Token>(token), [&](lock_type& lock, auto&&... args) {
            return o.cv.async_wait_until(lock, t, std::forward<decltype(args)>(args)...);
        });
    }

private:
    template <class Token, class Start>
    static auto wait(object& o, Token&& token, Start start)
    {
        release(o);
        // Not a Boost.Test assertion: the table may start a wait on another thread.
        if (!o.state->mutex.try_lock())
            throw std::logic_error("the table's mutex is held when a wait starts");
        lock_type& lock = o.state->locks.emplace_back(o.state->mutex, std::adopt_lock);
        const bool notify = !WithPredicate && o.state->ready;
        if constexpr (std::is_invocable_v<Token, error_code>)
        {
            with_predicate(
                o, lock, start,
                failed_wait_unlocks<std::decay_t<Token>>{std::forward<Token>(token), o.state, &lock});
            if (notify)
                o.cv.notify_one();
        }
        else
        {
            if (notify)
                asio::post(o.cv.get_executor(), [&o] { o.cv.notify_one(); });
            return with_predicate(o, lock, start, std::forward<Token>(token));
        }
    }

    template <class Start, class Token>
    static auto with_predicate(object& o, lock_type& lock, Start& start, Token&& token)
    {
        if constexpr (WithPredicate)
            return start(
                lock, [state = o.state.get()] { return state->ready.load(); }, std::forward<Token>(token));
        else
            return start(lock, std::forward<Token>(token));
    }
};

} // namespace

BOOST_AUTO_TEST_SUITE(condition_variable_suite)

BOOST_DATA_TEST_CASE(
    every_timed_wait,
    boost::unit_test::data::make(asio_sync::test::deadline_checks<timed_wait<false>>::all()) +
        boost::unit_test::data::make(asio_sync::test::deadline_checks<timed_wait<true>>::all()),
    check)
{
    check.run();
}

BOOST_AUTO_TEST_CASE(construction_and_observers)
{
    asio::io_context ctx;
    condition_variable cv(ctx);
    condition_variable from_executor(ctx.get_executor());
    BOOST_TEST((cv.get_executor() == asio::any_io_executor(ctx.get_executor())));
    static_assert(!std::is_copy_constructible_v<condition_variable>);
    static_assert(!std::is_move_constructible_v<condition_variable>);
    static_assert(std::is_same_v<condition_variable::rebind_executor<asio::io_context::executor_type>::other,
                                 asio_sync::basic_condition_variable<asio::io_context::executor_type>>);
}

// The wait gives the mutex up at the call, and the handler runs holding it again, with the
// caller's lock object owning it.
BOOST_AUTO_TEST_CASE(a_wait_unlocks_at_once_and_completes_holding_the_lock)
{
    waiters w;
    lock_type& lock = w.lock();
    bool held_in_handler = false;
    w.cv.async_wait(lock, [&](error_code ec) {
        BOOST_TEST(!ec);
        held_in_handler = lock.owns_lock() && !w.mutex.try_lock();
    });
    BOOST_TEST(!lock.owns_lock());
    BOOST_TEST_REQUIRE(w.mutex.try_lock()); // the wait gave it up
    w.mutex.unlock();
    drain(w.ctx);
    BOOST_TEST(!held_in_handler); // no notification yet
    w.cv.notify_one();
    BOOST_TEST(!held_in_handler); // never inside notify_one
    drain(w.ctx);
    BOOST_TEST(held_in_handler);
    BOOST_TEST(lock.owns_lock());
}

BOOST_AUTO_TEST_CASE(notify_one_wakes_the_oldest_waiter_only)
{
    waiters w;
    for (int id = 1; id <= 3; ++id)
        w.wait(id);
    w.cv.notify_one();
    drain(w.ctx);
    BOOST_TEST(w.order == (std::vector<int>{1}));
    w.cv.notify_one();
    w.cv.notify_one();
    drain(w.ctx);
    BOOST_TEST(w.order == (std::vector<int>{1, 2, 3}));
    for (std::size_t i = 0; i < w.order.size(); ++i)
    {
        BOOST_TEST(!w.codes[i]);
        BOOST_TEST(w.owned[i]);
    }
}

// notify_all wakes everyone; they take the lock one after the other, oldest first.
BOOST_AUTO_TEST_CASE(notify_all_wakes_every_waiter_and_they_relock_in_fifo_order)
{
    waiters w;
    for (int id = 1; id <= 4; ++id)
        w.wait(id);
    w.cv.notify_all();
    BOOST_TEST(w.order.empty());
    drain(w.ctx);
    BOOST_TEST(w.order == (std::vector<int>{1, 2, 3, 4}));
    for (std::size_t i = 0; i < w.order.size(); ++i)
        BOOST_TEST(w.owned[i]);
}

// A notification is not stored: with nobody waiting it does nothing.
BOOST_AUTO_TEST_CASE(a_notification_with_nobody_waiting_is_not_kept)
{
    waiters w;
    w.cv.notify_one();
    w.cv.notify_all();
    w.wait(1);
    drain(w.ctx);
    BOOST_TEST(w.order.empty());
    w.cv.notify_one();
    drain(w.ctx);
    BOOST_TEST(w.order == (std::vector<int>{1}));
}

// A woken waiter queues for the mutex like any locker: it runs only once the holder unlocks.
BOOST_AUTO_TEST_CASE(a_woken_waiter_waits_for_the_mutex_to_be_unlocked)
{
    waiters w;
    w.wait(1);
    BOOST_TEST_REQUIRE(w.mutex.try_lock());
    w.cv.notify_one(); // under the lock, as with std::condition_variable
    drain(w.ctx);
    BOOST_TEST(w.order.empty());
    w.mutex.unlock();
    drain(w.ctx);
    BOOST_TEST(w.order == (std::vector<int>{1}));
    BOOST_TEST(w.owned.at(0));
}

// The lost-wake-up window: the next holder of the lock notifies as soon as the wait unlocks,
// inside the unlock itself (its executor runs the notification where the mutex submits its
// completion). The waiter is already queued, so it is woken.
BOOST_AUTO_TEST_CASE(a_notification_from_the_next_holder_during_the_unlock_is_not_lost)
{
    using executor = asio_sync::test::recording_executor<asio::io_context::executor_type>;
    waiters w;
    lock_type& lock = w.lock();
    std::vector<bool> continuations;
    bool ready = false;
    const std::function<void()> notify_on_grant = [&] {
        ready = true;
        w.cv.notify_one();
    };
    bool next_holder_ran = false;
    w.mutex.async_lock(
        asio::bind_executor(executor(w.ctx.get_executor(), continuations, notify_on_grant), [&](error_code) {
            next_holder_ran = true;
            w.mutex.unlock();
        }));
    int woken = 0;
    w.cv.async_wait(lock, [&](error_code ec) {
        BOOST_TEST(!ec);
        BOOST_TEST(ready);
        ++woken;
    });
    BOOST_TEST(ready); // notified during the wait's unlock
    drain(w.ctx);
    BOOST_TEST(next_holder_ran);
    BOOST_TEST(woken == 1);
    BOOST_TEST(lock.owns_lock());
}

BOOST_AUTO_TEST_CASE(per_operation_cancellation_of_each_type_relocks_and_aborts)
{
    using asio::cancellation_type;
    for (cancellation_type type :
         {cancellation_type::terminal, cancellation_type::partial, cancellation_type::total})
    {
        BOOST_TEST_CONTEXT("type " << static_cast<int>(type))
        {
            waiters w;
            asio::cancellation_signal cancel;
            lock_type& first = w.lock();
            w.cv.async_wait(first, asio::bind_cancellation_slot(cancel.slot(), w.handler(1, first)));
            w.wait(2);
            cancel.emit(type);
            drain(w.ctx);
            BOOST_TEST(w.order == (std::vector<int>{1}));
            BOOST_TEST(w.codes.at(0) == asio::error::operation_aborted);
            BOOST_TEST(w.owned.at(0)); // the handler holds the lock, also on error
            w.cv.notify_one();         // the cancelled wait left the queue: this wakes the second
            drain(w.ctx);
            BOOST_TEST(w.order == (std::vector<int>{1, 2}));
            BOOST_TEST(!w.codes.at(1));
        }
    }
}

// A cancellation that comes after the notification does nothing: the relock is not cancellable.
BOOST_AUTO_TEST_CASE(a_cancellation_after_the_notification_does_nothing)
{
    waiters w;
    asio::cancellation_signal cancel;
    BOOST_TEST_REQUIRE(w.mutex.try_lock());
    lock_type lock(w.mutex, std::adopt_lock);
    auto [out, handler] = make_record();
    w.cv.async_wait(lock, asio::bind_cancellation_slot(cancel.slot(), handler));
    BOOST_TEST_REQUIRE(w.mutex.try_lock()); // the relock will have to wait for this holder
    w.cv.notify_one();
    cancel.emit(asio::cancellation_type::terminal);
    drain(w.ctx);
    BOOST_TEST(!out->done());
    w.mutex.unlock();
    drain(w.ctx);
    BOOST_TEST(out->calls == 1);
    BOOST_TEST(!*out->ec);
    BOOST_TEST(lock.owns_lock());
}

// A notify_one that follows a cancellation is not swallowed by the cancelled wait.
BOOST_AUTO_TEST_CASE(a_notification_after_a_cancellation_goes_to_the_next_waiter)
{
    waiters w;
    asio::cancellation_signal cancel;
    lock_type& first = w.lock();
    w.cv.async_wait(first, asio::bind_cancellation_slot(cancel.slot(), w.handler(1, first)));
    w.wait(2);
    cancel.emit(asio::cancellation_type::terminal);
    w.cv.notify_one();
    drain(w.ctx);
    BOOST_TEST(w.order == (std::vector<int>{1, 2}));
    BOOST_TEST(w.codes.at(0) == asio::error::operation_aborted);
    BOOST_TEST(!w.codes.at(1));
}

BOOST_AUTO_TEST_CASE(cancel_aborts_every_queued_wait_and_each_relocks)
{
    waiters w;
    for (int id = 1; id <= 3; ++id)
        w.wait(id);
    BOOST_TEST(w.cv.cancel() == 3u);
    BOOST_TEST(w.order.empty());
    drain(w.ctx);
    BOOST_TEST(w.order == (std::vector<int>{1, 2, 3}));
    for (std::size_t i = 0; i < w.order.size(); ++i)
    {
        BOOST_TEST(w.codes[i] == asio::error::operation_aborted);
        BOOST_TEST(w.owned[i]);
    }
    BOOST_TEST(w.cv.cancel() == 0u);
}

// A relock that the mutex aborts leaves the lock object without the mutex, and says so.
BOOST_AUTO_TEST_CASE(a_relock_aborted_by_the_mutex_completes_without_the_lock)
{
    waiters w;
    w.wait(1);
    BOOST_TEST_REQUIRE(w.mutex.try_lock());
    w.cv.notify_one();
    BOOST_TEST(w.mutex.cancel() == 1u); // the relock
    drain(w.ctx);
    BOOST_TEST(w.order == (std::vector<int>{1}));
    BOOST_TEST(w.codes.at(0) == asio::error::operation_aborted);
    BOOST_TEST(!w.owned.at(0));
    w.mutex.unlock();
}

BOOST_AUTO_TEST_CASE(destruction_aborts_the_waits_which_relock)
{
    asio::io_context ctx;
    asio_sync::mutex mutex(ctx);
    BOOST_TEST_REQUIRE(mutex.try_lock());
    lock_type lock(mutex, std::adopt_lock);
    auto [out, handler] = make_record();
    {
        condition_variable cv(ctx);
        cv.async_wait(lock, handler);
    }
    BOOST_TEST(!out->done());
    ctx.run();
    BOOST_TEST(out->calls == 1);
    BOOST_TEST(*out->ec == asio::error::operation_aborted);
    BOOST_TEST(lock.owns_lock());
}

// Context shutdown destroys a queued wait's handler without invoking it; the mutex stays free and
// the lock object untouched.
BOOST_AUTO_TEST_CASE(context_shutdown_destroys_queued_waits)
{
    bool destroyed = false;
    int calls = 0;
    auto ctx = std::make_unique<asio::io_context>();
    asio_sync::mutex mutex(*ctx);
    condition_variable cv(*ctx);
    BOOST_TEST_REQUIRE(mutex.try_lock());
    lock_type lock(mutex, std::adopt_lock);
    cv.async_wait(lock, [&calls, guard = std::make_shared<asio_sync::test::on_destroy>(
                                     [&] { destroyed = true; })](error_code) { ++calls; });
    ctx.reset();
    BOOST_TEST(destroyed);
    BOOST_TEST(calls == 0);
    BOOST_TEST(!lock.owns_lock());
    BOOST_TEST(mutex.try_lock());
    mutex.unlock();
}

// A woken waiter whose relock is posted at once continues the notifier; the others are forks.
BOOST_AUTO_TEST_CASE(the_relock_is_submitted_not_invoked)
{
    using executor = asio_sync::test::recording_executor<asio::io_context::executor_type>;
    asio::io_context ctx;
    std::vector<bool> continuations;
    asio_sync::basic_mutex<executor> mutex(executor(ctx.get_executor(), continuations));
    asio_sync::basic_condition_variable<executor> cv(executor(ctx.get_executor(), continuations));
    BOOST_TEST_REQUIRE(mutex.try_lock());
    std::unique_lock<asio_sync::basic_mutex<executor>> lock(mutex, std::adopt_lock);
    auto [out, handler] = make_record();
    cv.async_wait(lock, handler);
    BOOST_TEST(continuations.empty()); // nothing submitted by the wait
    cv.notify_one();
    BOOST_TEST(continuations == (std::vector<bool>{true}), boost::test_tools::per_element());
    BOOST_TEST(!out->done());
    ctx.run();
    BOOST_TEST(out->calls == 1);
}

// A notification moves the waiters into the mutex's queue (wait morphing): notify_all submits
// nothing while the notifier holds the mutex, every unlock then lets exactly one of them through,
// behind a lock that queued before the notification, and each waiter's handler is submitted once,
// holding the lock. A wake-up that only put the waiters back in line (two hops each, a herd on
// notify_all) would submit all three at the notification.
BOOST_AUTO_TEST_CASE(a_notification_moves_the_waiters_into_the_mutex_queue_one_hop_each)
{
    using executor = asio_sync::test::recording_executor<asio::io_context::executor_type>;
    using mutex_type = asio_sync::basic_mutex<executor>;
    asio::io_context ctx;
    std::vector<bool> submissions;
    mutex_type mutex(executor(ctx.get_executor(), submissions));
    asio_sync::basic_condition_variable<executor> cv(executor(ctx.get_executor(), submissions));
    std::vector<int> order;
    std::list<std::unique_lock<mutex_type>> locks;
    for (int i = 1; i <= 3; ++i)
    {
        BOOST_TEST_REQUIRE(mutex.try_lock());
        std::unique_lock<mutex_type>& lock = locks.emplace_back(mutex, std::adopt_lock);
        cv.async_wait(lock, [&, i](error_code ec) {
            BOOST_TEST(!ec);
            BOOST_TEST(lock.owns_lock());
            order.push_back(i);
            lock.unlock();
        });
    }
    BOOST_TEST_REQUIRE(mutex.try_lock()); // the notifier
    mutex.async_lock([&](error_code ec) {
        BOOST_TEST(!ec);
        order.push_back(0);
        mutex.unlock();
    });
    cv.notify_all();
    BOOST_TEST(submissions.empty());
    mutex.unlock();
    for (std::size_t handled = 0; handled < 4; ++handled)
    {
        BOOST_TEST(submissions.size() == handled + 1);
        BOOST_TEST(ctx.run_one() == 1U);
    }
    BOOST_TEST(submissions.size() == 4U);
    BOOST_TEST(order == (std::vector<int>{0, 1, 2, 3}), boost::test_tools::per_element());
    BOOST_TEST(mutex.try_lock());
}

// A handler that could also be called with no arguments (a variadic lambda), returning nothing or
// a bool, is a completion handler: the wait gives the mutex up and the handler gets the error code.
BOOST_AUTO_TEST_CASE(a_variadic_lambda_is_a_completion_handler_not_a_predicate)
{
    waiters w;
    int calls = 0;
    error_code last = asio::error::fault;
    lock_type& first = w.lock();
    w.cv.async_wait(first, [&](auto&&... ec) {
        ++calls;
        ((last = ec), ...);
    });
    BOOST_TEST(!first.owns_lock()); // a plain wait: it gave the mutex up
    w.cv.notify_one();
    drain(w.ctx);
    BOOST_TEST(calls == 1);
    BOOST_TEST(!last);
    BOOST_TEST(first.owns_lock());
    first.unlock();

    lock_type& second = w.lock();
    w.cv.async_wait(second, [&](auto&&... ec) {
        ++calls;
        ((last = ec), ...);
        return true;
    });
    BOOST_TEST(!second.owns_lock());
    w.cv.cancel();
    drain(w.ctx);
    BOOST_TEST(calls == 2);
    BOOST_TEST(last == asio::error::operation_aborted);
    BOOST_TEST(second.owns_lock());
}

BOOST_AUTO_TEST_CASE(a_predicate_true_at_the_call_completes_without_unlocking)
{
    waiters w;
    lock_type& lock = w.lock();
    auto [out, handler] = make_record();
    w.cv.async_wait(
        lock, [] { return true; }, handler);
    BOOST_TEST(lock.owns_lock());
    BOOST_TEST(!out->done()); // posted, not invoked
    drain(w.ctx);
    BOOST_TEST(out->calls == 1);
    BOOST_TEST(!*out->ec);
    BOOST_TEST(lock.owns_lock());
}

// Notifications while the predicate is false keep the wait going; it ends on the first one that
// finds it true, and evaluates it holding the lock.
BOOST_AUTO_TEST_CASE(a_predicate_wait_ends_once_the_predicate_holds)
{
    waiters w;
    lock_type& lock = w.lock();
    int value = 0;
    int evaluations = 0;
    bool held_at_each_evaluation = true;
    auto [out, handler] = make_record();
    w.cv.async_wait(
        lock,
        [&] {
            ++evaluations;
            held_at_each_evaluation = held_at_each_evaluation && lock.owns_lock();
            return value == 2;
        },
        handler);
    for (int i = 1; i <= 2; ++i)
    {
        BOOST_TEST_REQUIRE(w.mutex.try_lock());
        value = i;
        w.mutex.unlock();
        w.cv.notify_one();
        drain(w.ctx);
    }
    BOOST_TEST(out->calls == 1);
    BOOST_TEST(!*out->ec);
    BOOST_TEST(evaluations == 3);
    BOOST_TEST(held_at_each_evaluation);
    BOOST_TEST(lock.owns_lock());
}

BOOST_AUTO_TEST_CASE(a_cancelled_predicate_wait_completes_holding_the_lock)
{
    waiters w;
    lock_type& lock = w.lock();
    asio::cancellation_signal cancel;
    auto [out, handler] = make_record();
    w.cv.async_wait(
        lock, [] { return false; }, asio::bind_cancellation_slot(cancel.slot(), handler));
    w.cv.notify_one(); // one round: false, waits again with the same slot
    drain(w.ctx);
    BOOST_TEST(!out->done());
    cancel.emit(asio::cancellation_type::partial);
    drain(w.ctx);
    BOOST_TEST(out->calls == 1);
    BOOST_TEST(*out->ec == asio::error::operation_aborted);
    BOOST_TEST(lock.owns_lock());
}

// A timed wait that times out leaves the queue, relocks (here it waits for the mutex, held
// elsewhere when the time runs out) and completes with timed_out, its lock owning the mutex: a
// deadline already past, a zero duration, and a duration that runs out.
BOOST_AUTO_TEST_CASE(a_timed_out_wait_relocks_and_completes_holding_the_lock)
{
    using std::chrono::system_clock;
    const std::function<void(waiters&, lock_type&, int)> starts[] = {
        [](waiters& w, lock_type& l, int id) {
            w.cv.async_wait_for(l, std::chrono::seconds(0), w.handler(id, l));
        },
        [](waiters& w, lock_type& l, int id) {
            w.cv.async_wait_until(l, system_clock::now() - std::chrono::hours(1), w.handler(id, l));
        },
        [](waiters& w, lock_type& l, int id) {
            w.cv.async_wait_until(l, std::chrono::steady_clock::now(), w.handler(id, l));
        },
        [](waiters& w, lock_type& l, int id) {
            w.cv.async_wait_for(l, std::chrono::milliseconds(1), w.handler(id, l));
        },
    };
    int id = 0;
    for (const auto& start : starts)
        BOOST_TEST_CONTEXT("start " << id)
        {
            waiters w;
            lock_type& lock = w.lock();
            start(w, lock, id);
            BOOST_TEST(!lock.owns_lock());
            BOOST_TEST_REQUIRE(w.mutex.try_lock()); // held elsewhere when the time runs out
            w.run_past(std::chrono::milliseconds(2)); // the wait's timer expires
            drain(w.ctx);
            BOOST_TEST(w.order.empty()); // relocking
            w.mutex.unlock();
            drain(w.ctx);
            BOOST_TEST(w.order == (std::vector<int>{id}));
            BOOST_TEST(w.codes.at(0) == asio_sync::error::timed_out);
            BOOST_TEST(w.owned.at(0));
            w.ctx.restart();
            w.ctx.run(); // returns: nothing is left, no timer
            ++id;
        }
}

// A predicate wait whose time runs out evaluates its predicate once more, holding the lock, and
// completes with success if it is true, timed_out otherwise (std::condition_variable::wait_until
// returns pred()). One true at the call completes at once and starts no timer.
BOOST_AUTO_TEST_CASE(a_timed_out_predicate_wait_evaluates_its_predicate_once_more)
{
    for (const bool true_at_expiry : {false, true})
        for (const bool past : {false, true})
            BOOST_TEST_CONTEXT("true at expiry " << true_at_expiry << ", deadline already past " << past)
            {
                waiters w;
                lock_type& lock = w.lock();
                bool ready = false;
                int evaluations = 0;
                int owned_evaluations = 0;
                auto pred = [&] {
                    ++evaluations;
                    owned_evaluations += lock.owns_lock() && !w.mutex.try_lock();
                    return ready;
                };
                if (past)
                    w.cv.async_wait_until(lock, std::chrono::system_clock::now() - std::chrono::hours(1),
                                          pred, w.handler(1, lock));
                else
                    w.cv.async_wait_for(lock, std::chrono::milliseconds(1), pred, w.handler(1, lock));
                BOOST_TEST(evaluations == 1);
                ready = true_at_expiry; // no notification
                w.ctx.run();
                BOOST_TEST(evaluations == 2);
                BOOST_TEST(owned_evaluations == 2);
                BOOST_TEST_REQUIRE(w.codes.size() == 1u);
                BOOST_TEST((w.codes[0] ==
                            (true_at_expiry ? error_code() : error_code(asio_sync::error::timed_out))));
                BOOST_TEST(w.owned.at(0));
            }
    waiters w;
    lock_type& lock = w.lock();
    w.cv.async_wait_for(
        lock, std::chrono::hours(1), [] { return true; }, w.handler(1, lock));
    BOOST_TEST(lock.owns_lock()); // not given up
    w.ctx.run();                  // returns: no timer
    BOOST_TEST(w.codes.size() == 1u);
    BOOST_TEST(!w.codes.at(0));
}

// A predicate wait that a notification woke, and whose time runs out while it relocks, uses that
// notification for its last evaluation: false, it completes with timed_out instead of waiting
// again, and the wait queued behind it is not woken (one notify_one, one wait woken).
BOOST_AUTO_TEST_CASE(a_notified_predicate_wait_whose_time_runs_out_while_it_relocks_ends)
{
    waiters w;
    lock_type& lock = w.lock();
    int evaluations = 0;
    w.cv.async_wait_for(
        lock, std::chrono::milliseconds(1),
        [&] {
            ++evaluations;
            return false;
        },
        w.handler(1, lock));
    w.wait(2);
    BOOST_TEST_REQUIRE(w.mutex.try_lock());
    w.cv.notify_one(); // the first wait relocks, behind this holder
    w.run_past(std::chrono::milliseconds(2)); // the wait's timer expires
    drain(w.ctx);
    BOOST_TEST(w.order.empty());
    w.mutex.unlock();
    drain(w.ctx);
    BOOST_TEST(evaluations == 2);
    BOOST_TEST(w.order == (std::vector<int>{1}));
    BOOST_TEST(w.codes.at(0) == asio_sync::error::timed_out);
    BOOST_TEST(w.owned.at(0));
    w.cv.notify_one();
    drain(w.ctx);
    BOOST_TEST(w.order == (std::vector<int>{1, 2}));
    BOOST_TEST(!w.codes.at(1));
}

// Destroying the condition variable with timed waits pending (a predicate wait notified and
// relocking, a plain and a predicate wait queued) completes each with operation_aborted, holding
// the lock, without evaluating the predicate again, and cancels their timers: the context runs dry.
BOOST_AUTO_TEST_CASE(destruction_with_timed_waits_pending)
{
    waiters w;
    auto cv = std::make_unique<condition_variable>(w.ctx);
    int evaluations = 0;
    auto never_true = [&] {
        ++evaluations;
        return false;
    };
    lock_type& relocking = w.lock();
    cv->async_wait_for(relocking, std::chrono::hours(1), never_true, w.handler(1, relocking));
    lock_type& plain = w.lock();
    cv->async_wait_until(plain, std::chrono::system_clock::now() + std::chrono::hours(1),
                         w.handler(2, plain));
    lock_type& queued = w.lock();
    cv->async_wait_until(queued, std::chrono::steady_clock::now() + std::chrono::hours(1), never_true,
                         w.handler(3, queued));
    BOOST_TEST_REQUIRE(w.mutex.try_lock());
    cv->notify_one(); // the first relocks behind this holder
    drain(w.ctx);
    cv.reset();
    drain(w.ctx);
    BOOST_TEST(w.order.empty()); // all three relock
    w.mutex.unlock();
    w.ctx.restart();
    w.ctx.run(); // returns: every timer was cancelled
    BOOST_TEST(w.order == (std::vector<int>{1, 2, 3}));
    for (const error_code& ec : w.codes)
        BOOST_TEST(ec == asio::error::operation_aborted);
    BOOST_TEST((w.owned == std::vector<bool>{true, true, true}));
    BOOST_TEST(evaluations == 2); // at each call only
}

namespace {

// How a predicate wait is ended from outside, and where it is then: queued; notified and
// relocking (the mutex held elsewhere); or evaluating its predicate again (from inside it).
enum class ending
{
    terminal,
    partial,
    total,
    cancel_call,
    destruction,
};

enum class phase
{
    queued,
    relocking,
    evaluating,
};

const char* name(ending how)
{
    static const char* const names[] = {"terminal", "partial", "total", "cancel()", "destruction"};
    return names[static_cast<int>(how)];
}

const char* name(phase where)
{
    static const char* const names[] = {"queued", "relocking", "evaluating its predicate"};
    return names[static_cast<int>(where)];
}

asio::cancellation_type cancellation_of(ending how)
{
    switch (how)
    {
    case ending::terminal:
        return asio::cancellation_type::terminal;
    case ending::partial:
        return asio::cancellation_type::partial;
    default:
        return asio::cancellation_type::total;
    }
}

} // namespace

// Per-operation cancellation of each type, cancel() and the destruction of the condition variable
// end a predicate wait whose predicate stays false in every phase: while it is queued, while a
// notified round waits to relock, and while it evaluates its predicate. Each time the handler runs
// once, with operation_aborted, holding the lock; the predicate is not evaluated after the
// cancellation; cancel() counts the wait; and nothing is left queued. (A round that queued again
// regardless used to swallow the cancellation, and to queue on a destroyed condition variable.)
BOOST_AUTO_TEST_CASE(a_predicate_wait_is_ended_in_every_phase)
{
    for (const phase where : {phase::queued, phase::relocking, phase::evaluating})
        for (const ending how :
             {ending::terminal, ending::partial, ending::total, ending::cancel_call, ending::destruction})
            BOOST_TEST_CONTEXT(name(how) << " while " << name(where))
            {
                asio::io_context ctx;
                asio_sync::mutex mutex(ctx);
                auto cv = std::make_unique<condition_variable>(ctx);
                asio::cancellation_signal signal;
                std::size_t counted = 0;
                const auto end_the_wait = [&] {
                    if (how == ending::cancel_call)
                        counted = cv->cancel();
                    else if (how == ending::destruction)
                        cv.reset();
                    else
                        signal.emit(cancellation_of(how));
                };
                BOOST_TEST_REQUIRE(mutex.try_lock());
                lock_type lock(mutex, std::adopt_lock);
                int evaluations = 0;
                auto [out, handler] = make_record();
                cv->async_wait(
                    lock,
                    [&] {
                        if (++evaluations == 2 && where == phase::evaluating)
                            end_the_wait();
                        return false;
                    },
                    asio::bind_cancellation_slot(signal.slot(), handler));
                if (where == phase::queued)
                    end_the_wait();
                else
                {
                    BOOST_TEST_REQUIRE(mutex.try_lock()); // the relock waits for this holder
                    cv->notify_one();
                    drain(ctx);
                    if (where == phase::relocking)
                        end_the_wait();
                    mutex.unlock();
                }
                drain(ctx);
                BOOST_TEST(out->calls == 1);
                BOOST_TEST((out->ec == error_code(asio::error::operation_aborted)));
                BOOST_TEST(lock.owns_lock());
                BOOST_TEST(evaluations == (where == phase::evaluating ? 2 : 1));
                if (how == ending::cancel_call)
                    BOOST_TEST(counted == 1u);
                if (cv)
                    BOOST_TEST(cv->cancel() == 0u); // also cleans up after a failure
                drain(ctx);
            }
}

#if defined(BOOST_ASIO_HAS_CO_AWAIT)
// A predicate wait raced against a timer with `||` times out also when the deadline comes while
// a notified round waits to relock, its predicate still false: the timer wins, and the coroutine
// holds the lock again.
BOOST_AUTO_TEST_CASE(a_predicate_wait_raced_against_a_timer_times_out_while_it_relocks)
{
    using namespace asio::experimental::awaitable_operators;
    waiters w;
    std::optional<std::size_t> winner;
    bool owned = false;
    int evaluations = 0;
    asio::co_spawn(
        w.ctx,
        [&]() -> asio::awaitable<void> {
            lock_type lock = co_await w.mutex.async_scoped_lock(asio::use_awaitable);
            asio::steady_timer timer(w.ctx, std::chrono::milliseconds(20));
            auto result = co_await (w.cv.async_wait(
                                        lock,
                                        [&] {
                                            ++evaluations;
                                            return false;
                                        },
                                        asio::use_awaitable) ||
                                    timer.async_wait(asio::use_awaitable));
            winner = result.index();
            owned = lock.owns_lock();
        },
        asio::detached);
    drain(w.ctx);
    // The wait gave the mutex up. Held here, it keeps the notified round relocking until the
    // deadline has passed: the timer's expiry is all there is left to run.
    BOOST_TEST_REQUIRE(w.mutex.try_lock());
    w.cv.notify_one();
    w.ctx.restart();
    w.ctx.run_one();
    drain(w.ctx);
    w.mutex.unlock();
    drain(w.ctx);
    BOOST_TEST_REQUIRE(winner.has_value());
    BOOST_TEST(*winner == 1u);
    BOOST_TEST(owned);
    BOOST_TEST(evaluations == 1);
    w.cv.cancel(); // after a failure, ends the coroutine before the mutex goes
    drain(w.ctx);
}
#endif

// A predicate that throws in a later round: the exception leaves through the handler's executor
// (here, poll), the handler is destroyed without being invoked, and the lock owns the mutex.
BOOST_AUTO_TEST_CASE(a_predicate_that_throws_later_leaves_the_lock_held)
{
    waiters w;
    lock_type& lock = w.lock();
    int evaluations = 0;
    bool destroyed = false;
    int calls = 0;
    w.cv.async_wait(
        lock,
        [&] {
            if (++evaluations == 2)
                throw std::runtime_error("predicate");
            return false;
        },
        [&calls, guard = std::make_shared<asio_sync::test::on_destroy>([&] { destroyed = true; })](
            error_code) { ++calls; });
    w.cv.notify_one();
    w.ctx.restart();
    BOOST_CHECK_THROW(w.ctx.poll(), std::runtime_error);
    BOOST_TEST(destroyed);
    BOOST_TEST(calls == 0);
    BOOST_TEST(lock.owns_lock());
}

#if defined(BOOST_ASIO_HAS_CO_AWAIT)
// A predicate that throws at its first evaluation, awaited with use_awaitable or
// as_tuple(use_awaitable): the exception comes out of the co_await, the lock held, and the
// coroutine goes on; it does not escape the executor's run() while the coroutine stays suspended.
BOOST_AUTO_TEST_CASE(a_predicate_that_throws_at_once_reaches_the_awaiting_coroutine)
{
    waiters w;
    int caught = 0;
    int held = 0;
    const auto wait = [&](auto token) -> asio::awaitable<void> {
        lock_type lock = co_await w.mutex.async_scoped_lock(asio::use_awaitable);
        try
        {
            co_await w.cv.async_wait(
                lock, []() -> bool { throw std::runtime_error("predicate"); }, token);
        }
        catch (const std::runtime_error&)
        {
            ++caught;
            held += lock.owns_lock();
        }
    };
    asio::co_spawn(w.ctx, wait(asio::use_awaitable), asio::detached);
    asio::co_spawn(w.ctx, wait(asio::as_tuple(asio::use_awaitable)), asio::detached);
    BOOST_CHECK_NO_THROW(drain(w.ctx));
    BOOST_TEST(caught == 2);
    BOOST_TEST(held == 2);
    BOOST_TEST(w.mutex.try_lock()); // each coroutine's lock unlocked at its end
}
#endif

// With a shared_mutex, a shared_lock waits and relocks in shared mode, a unique_lock exclusively.
BOOST_AUTO_TEST_CASE(works_with_a_shared_mutex_in_either_mode)
{
    asio::io_context ctx;
    asio_sync::shared_mutex mutex(ctx);
    condition_variable cv(ctx);
    BOOST_TEST_REQUIRE(mutex.try_lock_shared());
    std::shared_lock<asio_sync::shared_mutex> reader(mutex, std::adopt_lock);
    BOOST_TEST_REQUIRE(mutex.try_lock_shared());
    std::shared_lock<asio_sync::shared_mutex> other_reader(mutex, std::adopt_lock);
    bool reader_shared = false;
    cv.async_wait(reader, [&](error_code ec) {
        BOOST_TEST(!ec);
        reader_shared = reader.owns_lock() && !mutex.try_lock(); // held, shared with other_reader
        if (reader_shared && mutex.try_lock_shared())
            mutex.unlock_shared();
        else
            reader_shared = false;
    });
    cv.notify_one();
    ctx.run();
    BOOST_TEST(reader_shared); // relocked while other_reader still holds the mutex
    reader.unlock();
    other_reader.unlock();

    ctx.restart();
    BOOST_TEST_REQUIRE(mutex.try_lock());
    std::unique_lock<asio_sync::shared_mutex> writer(mutex, std::adopt_lock);
    bool writer_exclusive = false;
    cv.async_wait(writer, [&](error_code ec) {
        BOOST_TEST(!ec);
        writer_exclusive = writer.owns_lock() && !mutex.try_lock_shared();
    });
    BOOST_TEST_REQUIRE(mutex.try_lock_shared()); // the wait gave the exclusive lock up
    mutex.unlock_shared();
    cv.notify_all();
    ctx.run();
    BOOST_TEST(writer_exclusive);
}

BOOST_AUTO_TEST_CASE(every_token)
{
    {
        waiters w;
        lock_type& lock = w.lock();
        std::future<void> f = w.cv.async_wait(lock, asio::use_future);
        w.cv.notify_one();
        w.ctx.run();
        BOOST_CHECK_NO_THROW(f.get());
        BOOST_TEST(lock.owns_lock());
    }
    {
        waiters w;
        lock_type& lock = w.lock();
        std::future<void> f = w.cv.async_wait(
            lock, [] { return false; }, asio::use_future);
        w.cv.cancel();
        w.ctx.run();
        BOOST_CHECK_THROW(f.get(), boost::system::system_error);
        BOOST_TEST(lock.owns_lock());
    }
    {
        waiters w;
        lock_type& lock = w.lock();
        auto op = w.cv.async_wait(lock, asio::deferred);
        BOOST_TEST(lock.owns_lock()); // a deferred wait starts when it is invoked
        w.cv.notify_one();
        auto [out, handler] = make_record();
        std::move(op)(handler);
        BOOST_TEST(!lock.owns_lock());
        w.cv.notify_one();
        w.ctx.run();
        BOOST_TEST(out->calls == 1);
        BOOST_TEST(lock.owns_lock());
    }
#if defined(BOOST_ASIO_HAS_CO_AWAIT)
    {
        waiters w;
        std::deque<int> queue;
        int consumed = 0;
        auto consumer = [&]() -> asio::awaitable<void> {
            lock_type lock = co_await w.mutex.async_scoped_lock(asio::use_awaitable);
            co_await w.cv.async_wait(
                lock, [&] { return !queue.empty(); }, asio::use_awaitable);
            consumed = queue.front();
            auto [ec] = co_await w.cv.async_wait(lock, asio::as_tuple(asio::use_awaitable));
            BOOST_TEST(!ec);
            BOOST_TEST(lock.owns_lock());
        };
        asio::co_spawn(w.ctx, consumer(), asio::detached);
        drain(w.ctx);
        BOOST_TEST_REQUIRE(w.mutex.try_lock());
        queue.push_back(7);
        w.mutex.unlock();
        w.cv.notify_one();
        drain(w.ctx);
        BOOST_TEST(consumed == 7);
        w.cv.notify_one();
        w.ctx.run();
        BOOST_TEST(w.mutex.try_lock()); // the coroutine's lock unlocked at its end
    }
#endif
}

// A wait allocates its operation through the handler's allocator, and the relock what a lock
// allocates: with the mutex free, its completion's submission. Nothing else.
BOOST_AUTO_TEST_CASE(a_wait_allocates_only_through_the_handler_allocator)
{
    asio::io_context ctx(1);
    asio_sync::mutex mutex(ctx);
    condition_variable cv(ctx);
    asio_sync::test::allocation_counts counts;
    constexpr int rounds = 100;
    int succeeded = 0;
    BOOST_TEST_REQUIRE(mutex.try_lock());
    lock_type lock(mutex, std::adopt_lock);
    auto handler = asio::bind_allocator(asio_sync::test::counting_allocator<void>(counts),
                                        [&](error_code ec) { succeeded += !ec; });
    for (int i = 0; i < rounds; ++i)
    {
        cv.async_wait(lock, handler);
        cv.notify_one();
        drain(ctx);
    }
    BOOST_TEST(succeeded == rounds);
    BOOST_TEST(counts.allocations.load() == std::size_t(2 * rounds));
    BOOST_TEST(counts.deallocations.load() == counts.allocations.load());

    // A timed wait adds its timer's wait, through the same allocator, notified or timed out.
    counts.allocations = 0;
    counts.deallocations = 0;
    int timed_out = 0;
    auto timed_handler =
        asio::bind_allocator(asio_sync::test::counting_allocator<void>(counts), [&](error_code ec) {
            succeeded += !ec;
            timed_out += ec == asio_sync::error::timed_out;
        });
    for (int i = 0; i < rounds; ++i)
    {
        cv.async_wait_for(lock, std::chrono::hours(1), timed_handler);
        cv.notify_one();
        drain(ctx);
        cv.async_wait_for(lock, std::chrono::seconds(0), timed_handler);
        drain(ctx);
    }
    BOOST_TEST(succeeded == 2 * rounds);
    BOOST_TEST(timed_out == rounds);
    BOOST_TEST(counts.allocations.load() == std::size_t(2 * 3 * rounds));
    BOOST_TEST(counts.deallocations.load() == counts.allocations.load());
}

// A notified waiter whose relock cannot start loses its own handler; the notification passes to
// the next waiter, and notify_one does not throw.
BOOST_AUTO_TEST_CASE(a_woken_waiter_that_cannot_relock_passes_the_notification_on)
{
    waiters w;
    fault_plan plan;
    plan.fail_at = 2; // the wait's operation, then the relock's submission
    plan.armed = true;
    int failed = 0;
    lock_type& first = w.lock();
    w.cv.async_wait(first,
                    asio::bind_allocator(failing_allocator<void>(plan), [&](error_code) { ++failed; }));
    w.wait(2);
    BOOST_CHECK_NO_THROW(w.cv.notify_one());
    drain(w.ctx);
    BOOST_TEST(plan.failures == 1u);
    BOOST_TEST(failed == 0);
    BOOST_TEST(w.order == (std::vector<int>{2}));
    BOOST_TEST(w.owned.at(0));
    BOOST_TEST(!first.owns_lock());
}

BOOST_AUTO_TEST_CASE(a_wait_that_cannot_allocate_throws_and_keeps_the_lock)
{
    waiters w;
    fault_plan plan;
    plan.fail_at = 1;
    plan.armed = true;
    lock_type& lock = w.lock();
    int calls = 0;
    BOOST_CHECK_THROW(w.cv.async_wait(lock, asio::bind_allocator(failing_allocator<void>(plan),
                                                                 [&](error_code) { ++calls; })),
                      std::bad_alloc);
    BOOST_TEST(lock.owns_lock());
    BOOST_TEST(w.cv.cancel() == 0u);
    w.ctx.run();
    BOOST_TEST(calls == 0);
}

// Producers push under the lock and notify one consumer each time; consumers on a thread pool
// wait with a predicate, and the last item wakes them all to stop. Every item is consumed exactly
// once and every consumer finishes: no notification is lost. Outcomes are counted on the pool and
// checked here, as Boost.Test is not thread-safe.
BOOST_AUTO_TEST_CASE(producers_and_consumers_on_a_thread_pool_lose_nothing)
{
    constexpr std::size_t consumers = 8;
    constexpr int producers = 4;
    constexpr int items_each = 250;
    constexpr int total = producers * items_each;
    asio::thread_pool pool(4);
    asio_sync::mutex mutex(pool);
    condition_variable cv(pool);
    std::deque<int> queue; // guarded by mutex, as is consumed
    int consumed = 0;
    std::atomic<int> failures{0};
    std::atomic<int> finished{0};
    std::vector<lock_type> locks(consumers);

    std::function<void(std::size_t)> consume = [&](std::size_t c) {
        cv.async_wait(
            locks[c], [&] { return !queue.empty() || consumed == total; },
            [&, c](error_code ec) {
                failures += ec || !locks[c].owns_lock();
                if (queue.empty())
                {
                    locks[c].unlock();
                    ++finished;
                    return;
                }
                queue.pop_front();
                if (++consumed == total)
                    cv.notify_all();
                consume(c);
            });
    };
    for (std::size_t c = 0; c < consumers; ++c)
        mutex.async_scoped_lock([&, c](error_code ec, lock_type lock) {
            failures += bool(ec);
            locks[c] = std::move(lock);
            consume(c);
        });
    for (int p = 0; p < producers; ++p)
        asio::post(pool, [&] {
            for (int i = 0; i < items_each; ++i)
                mutex.async_scoped_lock([&, i](error_code ec, lock_type) {
                    failures += bool(ec);
                    queue.push_back(i);
                    cv.notify_one();
                });
        });
    pool.join();
    BOOST_TEST(failures.load() == 0);
    BOOST_TEST(consumed == total);
    BOOST_TEST(finished.load() == int(consumers));
    BOOST_TEST(queue.empty());
}

namespace {

// What a wait on a thread pool reports to the test's thread: its error code, and whether its lock
// owned the mutex, which the handler then gives back.
struct result
{
    error_code ec;
    bool owned = false;
};

auto report_to(lock_type& lock, std::promise<result>& out)
{
    return [&lock, &out](error_code ec) {
        const bool owned = lock.owns_lock();
        if (owned)
            lock.unlock();
        out.set_value({ec, owned});
    };
}

} // namespace

// A wait cancelled from its strand while another thread notifies: one outcome each, the handler
// holds the lock either way, and a notification the cancelled wait did not take wakes the second
// waiter.
BOOST_AUTO_TEST_CASE(cancellation_racing_notify_one_loses_no_notification)
{
    asio::thread_pool pool(4);
    for (int round = 0; round < 300; ++round)
    {
        asio_sync::mutex mutex(pool);
        condition_variable cv(pool);
        auto strand = asio::make_strand(pool);
        auto cancel = std::make_shared<asio::cancellation_signal>();
        lock_type first;
        lock_type second;
        std::promise<result> first_result;
        std::promise<result> second_result;
        std::promise<void> waiting;
        asio::post(strand, [&, cancel] {
            first = lock_type(mutex, std::try_to_lock); // free: nothing else runs yet
            cv.async_wait(first,
                          asio::bind_cancellation_slot(
                              cancel->slot(), asio::bind_executor(strand, report_to(first, first_result))));
            second = lock_type(mutex, std::try_to_lock);
            cv.async_wait(second, report_to(second, second_result));
            waiting.set_value();
            asio::post(strand, [cancel] { cancel->emit(asio::cancellation_type::terminal); });
        });
        waiting.get_future().get();
        cv.notify_one();
        const result r1 = first_result.get_future().get();
        BOOST_TEST(r1.owned);
        BOOST_TEST((!r1.ec || r1.ec == asio::error::operation_aborted));
        if (!r1.ec)
            cv.notify_one(); // the first took the notification: the second needs its own
        const result r2 = second_result.get_future().get();
        BOOST_TEST(!r2.ec); // if the first was cancelled, the notification went on
        BOOST_TEST(r2.owned);
    }
    pool.join();
}

// A timed wait (time limit of 0 to 300 µs) and an untimed one behind it, on a thread pool, and
// one notify_one at about the deadline: every round, the timed wait is notified (success) or times
// out, holding the lock either way, and one notification reaches exactly one wait: if the timed
// wait timed out, the untimed one is woken by it; if not, the untimed one waits for the next.
BOOST_AUTO_TEST_CASE(notify_one_racing_the_deadline_on_a_thread_pool_has_one_outcome)
{
    constexpr int rounds = 300;
    std::mt19937 rng(20261126);
    int notified = 0;
    int expired = 0;
    asio::thread_pool pool(2);
    for (int round = 0; round < rounds; ++round)
    {
        asio_sync::mutex mutex(pool);
        condition_variable cv(pool);
        lock_type first;
        lock_type second;
        std::promise<result> first_result;
        std::promise<result> second_result;
        std::promise<void> waiting;
        const auto limit = std::chrono::microseconds(std::uniform_int_distribution<int>(0, 300)(rng));
        asio::post(pool, [&] {
            first = lock_type(mutex, std::try_to_lock); // free: nothing else runs yet
            cv.async_wait_for(first, limit, report_to(first, first_result));
            // The first may have timed out and relocked already: the second waits its turn.
            mutex.async_scoped_lock([&](error_code, lock_type lock) {
                second = std::move(lock);
                cv.async_wait(second, report_to(second, second_result));
                waiting.set_value();
            });
        });
        waiting.get_future().get();
        std::this_thread::sleep_for(
            std::chrono::microseconds(std::uniform_int_distribution<int>(0, 300)(rng)));
        cv.notify_one();
        const result r1 = first_result.get_future().get();
        BOOST_TEST(r1.owned);
        if (!r1.ec)
        {
            ++notified;
            cv.notify_one(); // the first took the notification: the second needs its own
        }
        else if (r1.ec == asio_sync::error::timed_out)
            ++expired;
        else
            BOOST_ERROR("round " << round << ": " << r1.ec.message());
        const result r2 = second_result.get_future().get();
        BOOST_TEST(!r2.ec);
        BOOST_TEST(r2.owned);
    }
    pool.join();
    BOOST_TEST_MESSAGE(notified << " notified, " << expired << " timed out");
    BOOST_TEST(notified + expired == rounds);
}

BOOST_AUTO_TEST_SUITE_END()
