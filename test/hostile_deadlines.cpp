// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

// The condition variable's and the barrier's timed waits and the gate's stop request checked
// against their documented promises from the outside: deadlines at the ends of every clock's range,
// a deadline racing a notification or the last arrival and a cancellation on a thread pool, a
// timed-out wait relocking behind another holder, and stop requests from several threads with
// guards released, moved and entered by the cancellation handlers themselves. No outcome depends
// on timing: races are repeated and every round's outcome is counted.

#define BOOST_TEST_MODULE hostile_deadlines
#include <boost/test/unit_test.hpp>

#include <asio_sync/barrier.hpp>
#include <asio_sync/condition_variable.hpp>
#include <asio_sync/gate.hpp>
#include <asio_sync/mutex.hpp>
#include <asio_sync/shared_mutex.hpp>

#include "support/counting_allocator.hpp"
#include "support/event_checks.hpp"
#include "support/handler.hpp"
#include "support/replaced_new.hpp"
#include "support/sanitizers.hpp"

#include <boost/asio/bind_allocator.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <exception>
#include <iostream>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <vector>

namespace asio = boost::asio;
using asio_sync::condition_variable;
using asio_sync::test::drain;
using asio_sync::test::make_record;
using boost::system::error_code;
using lock_type = std::unique_lock<asio_sync::mutex>;
using shared_lock_type = std::shared_lock<asio_sync::shared_mutex>;
using gate = asio_sync::gate;

namespace {

const asio_sync::test::operator_new_hook counting_operator_new(&asio_sync::test::count_operator_new);

const error_code aborted = asio::error::operation_aborted;
const error_code timed_out = asio_sync::error::timed_out;

// Runs `io` until a timer due now has fired, then everything that became ready. Timers of one
// context share one queue ordered by expiry: a wait whose deadline is not later than now has
// expired by then too, and its relock and completion have run if nothing blocks them.
void run_past_now(asio::io_context& io)
{
    asio::steady_timer due(io, std::chrono::steady_clock::now());
    bool fired = false;
    due.async_wait([&](error_code) { fired = true; });
    io.restart();
    while (!fired)
        io.run_one();
    drain(io);
}

// Waits, spinning, until `flag` reaches `value`, set by another thread.
void await(const std::atomic<int>& flag, int value)
{
    while (flag.load(std::memory_order_acquire) < value)
        std::this_thread::yield();
}

// Emits a terminal cancellation on `signal` through `strand` if `cancel`, then sets `emitted` (at
// once if not), and waits a little, a different time each round, so that what the caller does next
// meets the wait's deadline and the cancellation at every offset.
template <class Strand>
void cancel_then_spin(const Strand& strand, asio::cancellation_signal& signal, std::atomic<int>& emitted,
                      bool cancel, int round)
{
    if (cancel)
        asio::post(strand, [&signal, &emitted] {
            signal.emit(asio::cancellation_type::terminal);
            emitted.store(1, std::memory_order_release);
        });
    else
        emitted.store(1, std::memory_order_release);
    for (int spin = round % 64; spin > 0; --spin)
        std::this_thread::yield();
}

// Two threads running a context until the object goes.
class pool
{
public:
    pool() : work_(asio::make_work_guard(io))
    {
        for (std::thread& t : threads_)
            t = std::thread([this] { io.run(); });
    }
    pool(const pool&) = delete;
    pool& operator=(const pool&) = delete;
    ~pool()
    {
        work_.reset();
        for (std::thread& t : threads_)
            t.join();
    }

    asio::io_context io;

private:
    asio::executor_work_guard<asio::io_context::executor_type> work_;
    std::array<std::thread, 2> threads_;
};

// What a wait that has not completed reports below.
const error_code still_waiting = make_error_code(std::errc::operation_in_progress);

// The outcome of a timed wait started by `start(cv, lock, notified, handler)` once every timer due by
// now has fired (still_waiting if it is still queued); a notification (`notified` true) then ends
// it. Either way it completes once, holding the lock.
template <class Start>
error_code outcome_by_now(Start start)
{
    asio::io_context io;
    asio_sync::mutex m(io);
    condition_variable cv(io);
    lock_type lock(m, std::try_to_lock);
    BOOST_TEST_REQUIRE(lock.owns_lock());
    auto [out, handler] = make_record();
    bool notified = false;
    start(cv, lock, notified, handler);
    BOOST_TEST(!out->done()); // never inline
    run_past_now(io);
    const error_code by_now = out->done() ? *out->ec : still_waiting;
    notified = true;
    cv.notify_one();
    drain(io);
    BOOST_TEST(out->calls == 1);
    BOOST_TEST(lock.owns_lock());
    return by_now;
}

} // namespace

// A deadline at the far end of any clock's range never expires, and one at the near end has
// passed: a time point of another clock whose duration is coarser than the steady clock's ticks
// must not overflow in its conversion (`hours::max()` on the system clock is the classic
// "forever").
BOOST_AUTO_TEST_CASE(condition_wait_deadlines_at_both_ends_of_every_clock)
{
    using std::chrono::hours;
    using std::chrono::steady_clock;
    using std::chrono::system_clock;
    auto until = [&](auto expiry) {
        return outcome_by_now([&](condition_variable& cv, lock_type& lock, const bool&, auto handler) {
            cv.async_wait_until(lock, expiry, handler);
        });
    };
    auto until_pred = [&](auto expiry) {
        return outcome_by_now(
            [&](condition_variable& cv, lock_type& lock, const bool& notified, auto handler) {
                cv.async_wait_until(
                    lock, expiry, [&notified] { return notified; }, handler);
            });
    };
    auto wait_for = [&](auto duration) {
        return outcome_by_now([&](condition_variable& cv, lock_type& lock, const bool&, auto handler) {
            cv.async_wait_for(lock, duration, handler);
        });
    };

    BOOST_TEST(until(steady_clock::time_point::max()) == still_waiting);
    BOOST_TEST(until(std::chrono::time_point<steady_clock, hours>::max()) == still_waiting);
    BOOST_TEST(until(system_clock::time_point::max()) == still_waiting);
    BOOST_TEST(until(std::chrono::time_point<system_clock, hours>::max()) == still_waiting);
    BOOST_TEST(until_pred(std::chrono::time_point<system_clock, hours>::max()) == still_waiting);
    BOOST_TEST(until(std::chrono::time_point<system_clock, std::chrono::duration<double>>::max()) ==
               still_waiting);
    BOOST_TEST(wait_for(hours::max()) == still_waiting);
    BOOST_TEST(wait_for(std::chrono::duration<double>(1e300)) == still_waiting);

    BOOST_TEST(until(std::chrono::time_point<system_clock, hours>::min()) == timed_out);
    BOOST_TEST(until_pred(std::chrono::time_point<system_clock, hours>::min()) == timed_out);
    BOOST_TEST(until(system_clock::time_point::min()) == timed_out);
    BOOST_TEST(until(std::chrono::time_point<steady_clock, hours>::min()) == timed_out);
    BOOST_TEST(until(steady_clock::time_point::min()) == timed_out);
    BOOST_TEST(wait_for(hours::min()) == timed_out);
    BOOST_TEST(wait_for(std::chrono::nanoseconds::min()) == timed_out);
    BOOST_TEST(wait_for(std::chrono::duration<double>(-1e300)) == timed_out);
}

// A wait whose time runs out while someone else holds the mutex leaves the queue at once, so a
// notification made while it waits for the mutex wakes the next waiter, not it; it completes once,
// with timed_out, when the holder lets go, holding the lock. A predicate wait evaluates its
// predicate once more then, and only then.
BOOST_AUTO_TEST_CASE(a_wait_timed_out_behind_a_holder_takes_no_notification)
{
    for (bool with_predicate : {false, true})
    {
        BOOST_TEST_CONTEXT("with a predicate: " << with_predicate)
        {
            asio::io_context io;
            asio_sync::mutex m(io);
            condition_variable cv(io);
            int evaluations = 0;
            lock_type first(m, std::try_to_lock);
            auto [first_out, first_handler] = make_record();
            if (with_predicate)
                cv.async_wait_for(
                    first, std::chrono::seconds(0),
                    [&] {
                        ++evaluations;
                        return false;
                    },
                    first_handler);
            else
                cv.async_wait_for(first, std::chrono::seconds(0), first_handler);
            lock_type second(m, std::try_to_lock);
            BOOST_TEST_REQUIRE(second.owns_lock());
            auto [second_out, second_handler] = make_record();
            cv.async_wait(second, second_handler);
            lock_type holder(m, std::try_to_lock);
            BOOST_TEST_REQUIRE(holder.owns_lock());

            run_past_now(io); // the first wait's time has run out: it waits for the mutex
            BOOST_TEST(!first_out->done());
            cv.notify_one(); // for the second
            drain(io);
            BOOST_TEST(!second_out->done()); // woken, waiting for the mutex
            BOOST_TEST(evaluations == (with_predicate ? 1 : 0));

            holder.unlock();
            drain(io);
            BOOST_TEST(first_out->calls == 1);
            BOOST_TEST(*first_out->ec == timed_out);
            BOOST_TEST(first.owns_lock());
            BOOST_TEST(evaluations == (with_predicate ? 2 : 0));
            BOOST_TEST(!second_out->done());
            first.unlock();
            drain(io);
            BOOST_TEST(second_out->calls == 1);
            BOOST_TEST(!*second_out->ec); // the notification reached it
            BOOST_TEST(second.owns_lock());
            BOOST_TEST(cv.cancel() == 0u);
        }
    }
}

// A context destroyed while a wait that timed out waits for the mutex held by another: the handler
// is destroyed without being invoked, the lock object stays without the mutex, and the mutex is
// free once its holder lets go.
BOOST_AUTO_TEST_CASE(context_destroyed_while_a_timed_out_wait_relocks)
{
    for (bool with_predicate : {false, true})
    {
        auto io = std::make_unique<asio::io_context>();
        asio_sync::mutex m(*io);
        auto cv = std::make_unique<condition_variable>(*io);
        lock_type lock(m, std::try_to_lock);
        bool destroyed = false;
        auto guard = std::make_shared<asio_sync::test::on_destroy>([&] { destroyed = true; });
        int calls = 0;
        auto handler = [&calls, guard](error_code) { ++calls; };
        if (with_predicate)
            cv->async_wait_for(
                lock, std::chrono::seconds(0), [] { return false; }, std::move(handler));
        else
            cv->async_wait_for(lock, std::chrono::seconds(0), std::move(handler));
        guard.reset();
        lock_type holder(m, std::try_to_lock);
        BOOST_TEST_REQUIRE(holder.owns_lock());
        run_past_now(*io);
        cv.reset(); // the condition variable may go first, too
        drain(*io);
        io.reset();
        BOOST_TEST(destroyed);
        BOOST_TEST(calls == 0);
        BOOST_TEST(!lock.owns_lock());
        holder.unlock();
        BOOST_TEST(m.try_lock());
        m.unlock();
    }
}

// A timed predicate wait whose predicate throws: at the first evaluation the initiating function
// throws, nothing is queued and no timer runs; at the evaluation after the time ran out (behind
// another holder) the exception comes out of the handler's executor, the lock owns the mutex, and
// the handler is destroyed without being invoked. The condition variable works on.
BOOST_AUTO_TEST_CASE(a_timed_predicate_wait_whose_predicate_throws)
{
    asio::io_context io;
    asio_sync::mutex m(io);
    condition_variable cv(io);
    lock_type lock(m, std::try_to_lock);
    BOOST_TEST_REQUIRE(lock.owns_lock());
    int calls = 0;
    BOOST_CHECK_THROW(cv.async_wait_for(
                          lock, std::chrono::hours(1), []() -> bool { throw std::runtime_error("first"); },
                          [&](error_code) { ++calls; }),
                      std::runtime_error);
    BOOST_TEST(lock.owns_lock());
    BOOST_TEST(cv.cancel() == 0u);
    BOOST_TEST(io.run() == 0u); // no timer

    int evaluations = 0;
    bool destroyed = false;
    auto guard = std::make_shared<asio_sync::test::on_destroy>([&] { destroyed = true; });
    cv.async_wait_for(
        lock, std::chrono::seconds(0),
        [&]() -> bool {
            if (++evaluations == 2)
                throw std::runtime_error("last");
            return false;
        },
        [&calls, guard](error_code) { ++calls; });
    guard.reset();
    lock_type holder(m, std::try_to_lock);
    BOOST_TEST_REQUIRE(holder.owns_lock());
    run_past_now(io);
    BOOST_TEST(evaluations == 1);
    holder.unlock();
    io.restart();
    BOOST_CHECK_THROW(io.run(), std::runtime_error);
    BOOST_TEST(evaluations == 2);
    BOOST_TEST(lock.owns_lock());
    io.restart();
    io.run(); // returns: nothing left, the timer included
    BOOST_TEST(destroyed);
    BOOST_TEST(calls == 0);

    auto [out, handler] = make_record();
    cv.async_wait_for(lock, std::chrono::hours(1), handler);
    cv.notify_one();
    drain(io);
    BOOST_TEST(out->calls == 1);
    BOOST_TEST(!*out->ec);
    BOOST_TEST(lock.owns_lock());
}

// A timed wait that times out while another holds the mutex, plain and with a predicate, and a
// timed arrival and a timed close that time out: everything they allocate (the operation with its
// timer, the timer's wait, the relock that has to queue, the completion) goes through the
// handler's allocator and comes back; operator new is never called (counted outside sanitizers).
BOOST_AUTO_TEST_CASE(timed_waits_that_time_out_allocate_only_through_the_handler_allocator)
{
    using asio_sync::test::global_news;
    asio::io_context io(1);
    asio_sync::mutex m(io);
    condition_variable cv(io);
    asio_sync::barrier b(io, 2);
    gate g(io);
    // The timer queue's heap and Asio's handler cache, grown once, beforehand.
    std::vector<std::unique_ptr<asio::steady_timer>> warm;
    for (int i = 0; i < 8; ++i)
    {
        warm.push_back(std::make_unique<asio::steady_timer>(io, std::chrono::hours(1)));
        warm.back()->async_wait([](error_code) {});
    }
    warm.clear();
    io.run();
    run_past_now(io);
    asio_sync::test::allocation_counts counts;
    std::vector<error_code> codes;
    codes.reserve(4);
    auto handler = [&] {
        return asio::bind_allocator(asio_sync::test::counting_allocator<void>(counts),
                                    [&](error_code ec) { codes.push_back(ec); });
    };
    lock_type plain(m, std::defer_lock);
    lock_type with_predicate(m, std::defer_lock);
    lock_type holder(m, std::defer_lock);
    gate::guard guard = g.try_enter();
    std::array<std::size_t, 3> completed{};
    // No Boost.Test check from here to the count: they allocate.
    const std::size_t news_before = global_news.load();
    const bool locked = plain.try_lock();
    cv.async_wait_for(plain, std::chrono::seconds(0), handler());
    const bool locked_too = with_predicate.try_lock();
    cv.async_wait_until(
        with_predicate, std::chrono::steady_clock::now(), [] { return false; }, handler());
    b.async_arrive_and_wait_for(
        std::chrono::seconds(0),
        asio::bind_allocator(asio_sync::test::counting_allocator<void>(counts),
                             [&](error_code ec, std::size_t) { codes.push_back(ec); }));
    g.async_close_for(std::chrono::seconds(0), handler());
    const bool held = holder.try_lock();
    run_past_now(io);
    completed[0] = codes.size(); // the arrival and the close; the waits relock behind the holder
    holder.unlock();
    drain(io);
    completed[1] = codes.size();
    plain.unlock();
    drain(io);
    completed[2] = codes.size();
    with_predicate.unlock();
    const std::size_t news = global_news.load() - news_before;

    BOOST_TEST(locked);
    BOOST_TEST(locked_too);
    BOOST_TEST(held);
    BOOST_TEST(completed == (std::array<std::size_t, 3>{2, 3, 4}), boost::test_tools::per_element());
    BOOST_TEST(codes == std::vector<error_code>(4, timed_out), boost::test_tools::per_element());
    BOOST_TEST(news == 0u);
    BOOST_TEST(counts.allocations.load() > 0u);
    BOOST_TEST(counts.deallocations.load() == counts.allocations.load());
    guard.release();
    drain(io);
}

// On a thread pool: a timed wait (its handler on a strand, where its cancellation is emitted
// too, two rounds in three), a notify_one from another thread, the deadline and the cancellation
// all race. Exactly one outcome each round, holding the lock, and the notification is never lost
// nor used twice: when the wait did not take it, the waiter queued behind it did. A predicate
// wait's timed-out or cancelled end passes the notification on too; one that succeeds may have
// seen the predicate true without it.
BOOST_AUTO_TEST_CASE(deadline_notification_and_cancellation_race_on_a_thread_pool)
{
    const int rounds = asio_sync::test::under_tsan ? 300 : 1500;
    for (bool with_predicate : {false, true})
    {
        BOOST_TEST_CONTEXT("with a predicate: " << with_predicate)
        {
            pool threads;
            asio_sync::shared_mutex m(threads.io);
            condition_variable cv(threads.io);
            auto strand = asio::make_strand(threads.io);
            std::array<int, 3> outcomes{}; // success, timed out, aborted
            for (int round = 0; round < rounds; ++round)
            {
                shared_lock_type first(m, std::defer_lock);
                shared_lock_type second(m, std::defer_lock);
                BOOST_TEST_REQUIRE(first.try_lock());
                BOOST_TEST_REQUIRE(second.try_lock());
                asio::cancellation_signal signal;
                std::atomic<bool> ready{false};
                std::atomic<int> stage{0};
                std::atomic<int> first_done{0};
                std::atomic<int> second_done{0};
                std::atomic<int> emitted{0};
                error_code first_ec;
                error_code second_ec;
                bool first_owned = false;
                bool second_owned = false;
                auto first_handler = asio::bind_cancellation_slot(
                    signal.slot(), asio::bind_executor(strand, [&](error_code ec) {
                        first_ec = ec;
                        first_owned = first.owns_lock();
                        if (first_owned)
                            first.unlock();
                        first_done.fetch_add(1, std::memory_order_release);
                    }));
                auto second_handler = [&](error_code ec) {
                    second_ec = ec;
                    second_owned = second.owns_lock();
                    if (second_owned)
                        second.unlock();
                    second_done.fetch_add(1, std::memory_order_release);
                };
                const auto timeout = std::chrono::microseconds(round * 7 % 200);
                asio::post(strand, [&] {
                    if (with_predicate)
                        cv.async_wait_for(
                            first, timeout, [&] { return ready.load(); }, first_handler);
                    else
                        cv.async_wait_for(first, timeout, first_handler);
                    cv.async_wait(second, second_handler);
                    stage.store(1, std::memory_order_release);
                });
                await(stage, 1);
                cancel_then_spin(strand, signal, emitted, round % 3 != 0, round);
                ready.store(true);
                cv.notify_one();
                await(first_done, 1);
                await(emitted, 1);
                // The second waiter is queued still, unless the notification woke it.
                const std::size_t still_queued = cv.cancel();
                await(second_done, 1);
                BOOST_TEST_REQUIRE(first_owned);
                BOOST_TEST_REQUIRE(second_owned);
                BOOST_TEST(first_done.load() == 1);
                BOOST_TEST(second_done.load() == 1);
                BOOST_TEST(still_queued == (second_ec ? 1u : 0u));
                if (!first_ec)
                {
                    ++outcomes[0];
                    if (!with_predicate)
                        BOOST_TEST_REQUIRE(second_ec == aborted);
                }
                else
                {
                    ++outcomes[first_ec == timed_out ? 1 : 2];
                    BOOST_TEST_REQUIRE((first_ec == timed_out || first_ec == aborted));
                    BOOST_TEST_REQUIRE(!second_ec); // the notification went on to it
                }
            }
            BOOST_TEST_MESSAGE("woken " << outcomes[0] << ", timed out " << outcomes[1] << ", cancelled "
                                        << outcomes[2]);
            BOOST_TEST(outcomes[0] + outcomes[1] + outcomes[2] == rounds);
        }
    }
}

// A timed arrival, its handler and cancellation on a strand, races the last arrival of its phase
// (from another thread), its deadline and, every other round, its cancellation. Exactly one outcome
// per arrival: the phase completes with both, or the timed arrival is withdrawn and a third one
// completes the phase instead. Phases and completion-function runs stay counted exactly.
BOOST_AUTO_TEST_CASE(a_timed_arrival_races_the_last_arrival_and_its_cancellation)
{
    const int rounds = asio_sync::test::under_tsan ? 300 : 1500;
    pool threads;
    std::atomic<std::size_t> completions{0};
    asio_sync::barrier b(threads.io, 2, [&] { completions.fetch_add(1, std::memory_order_relaxed); });
    auto strand = asio::make_strand(threads.io);
    std::array<int, 3> outcomes{}; // through, timed out, cancelled
    for (int round = 0; round < rounds; ++round)
    {
        const std::size_t phase = static_cast<std::size_t>(round);
        BOOST_TEST_REQUIRE(b.phase() == phase);
        BOOST_TEST_REQUIRE(b.missing() == 2u);
        BOOST_TEST_REQUIRE(completions.load() == phase);
        asio::cancellation_signal signal;
        std::atomic<int> timed_done{0};
        std::atomic<int> last_done{0};
        std::atomic<int> emitted{0};
        std::atomic<int> stage{0};
        error_code timed_ec;
        std::size_t timed_phase = 0;
        error_code last_ec;
        std::size_t last_phase = 0;
        const auto timeout = std::chrono::microseconds(round * 7 % 200);
        asio::post(strand, [&] {
            b.async_arrive_and_wait_for(
                timeout, asio::bind_cancellation_slot(
                             signal.slot(), asio::bind_executor(strand, [&](error_code ec, std::size_t p) {
                                 timed_ec = ec;
                                 timed_phase = p;
                                 timed_done.fetch_add(1, std::memory_order_release);
                             })));
            stage.store(1, std::memory_order_release);
        });
        await(stage, 1);
        cancel_then_spin(strand, signal, emitted, round % 2 != 0, round);
        b.async_arrive_and_wait([&](error_code ec, std::size_t p) {
            last_ec = ec;
            last_phase = p;
            last_done.fetch_add(1, std::memory_order_release);
        });
        await(timed_done, 1);
        await(emitted, 1);
        BOOST_TEST_REQUIRE(timed_phase == phase);
        if (timed_ec)
        {
            BOOST_TEST_REQUIRE((timed_ec == timed_out || timed_ec == aborted));
            ++outcomes[timed_ec == timed_out ? 1 : 2];
            // Withdrawn: the other arrival waits alone, and a third one completes the phase.
            std::atomic<int> third_done{0};
            error_code third_ec;
            std::size_t third_phase = 0;
            b.async_arrive_and_wait([&](error_code ec, std::size_t p) {
                third_ec = ec;
                third_phase = p;
                third_done.fetch_add(1, std::memory_order_release);
            });
            await(third_done, 1);
            BOOST_TEST_REQUIRE(!third_ec);
            BOOST_TEST_REQUIRE(third_phase == phase);
        }
        else
        {
            ++outcomes[0];
        }
        await(last_done, 1);
        BOOST_TEST_REQUIRE(!last_ec);
        BOOST_TEST_REQUIRE(last_phase == phase);
        BOOST_TEST_REQUIRE(timed_done.load() == 1);
        BOOST_TEST_REQUIRE(last_done.load() == 1);
    }
    BOOST_TEST(b.phase() == static_cast<std::size_t>(rounds));
    BOOST_TEST(completions.load() == static_cast<std::size_t>(rounds));
    BOOST_TEST(b.missing() == 2u);
    BOOST_TEST_MESSAGE("through " << outcomes[0] << ", timed out " << outcomes[1] << ", cancelled "
                                  << outcomes[2]);
}

// barrier::cancel() races the deadlines of two timed arrivals (one phase of three), which expire on
// a thread pool: each arrival ends once, timed out or aborted, and cancel() counts exactly the aborted
// ones; the phase then misses all three again.
BOOST_AUTO_TEST_CASE(barrier_cancel_races_the_deadlines_of_timed_arrivals)
{
    const int rounds = asio_sync::test::under_tsan ? 300 : 1500;
    pool threads;
    asio_sync::barrier b(threads.io, 3);
    int aborted_total = 0;
    std::size_t withdrawn_total = 0;
    for (int round = 0; round < rounds; ++round)
    {
        std::atomic<int> done{0};
        std::array<error_code, 2> codes;
        for (std::size_t i = 0; i < codes.size(); ++i)
            b.async_arrive_and_wait_for(std::chrono::microseconds(round * 7 % 200 + static_cast<int>(i)),
                                        [&, i](error_code ec, std::size_t) {
                                            codes[i] = ec;
                                            done.fetch_add(1, std::memory_order_release);
                                        });
        for (int spin = round % 64; spin > 0; --spin)
            std::this_thread::yield();
        const std::size_t withdrawn = b.cancel();
        await(done, 2);
        int aborted_here = 0;
        for (const error_code& ec : codes)
        {
            BOOST_TEST_REQUIRE((ec == timed_out || ec == aborted));
            aborted_here += ec == aborted;
        }
        BOOST_TEST_REQUIRE(withdrawn == static_cast<std::size_t>(aborted_here));
        BOOST_TEST_REQUIRE(b.missing() == 3u);
        BOOST_TEST_REQUIRE(b.phase() == 0u);
        aborted_total += aborted_here;
        withdrawn_total += withdrawn;
    }
    BOOST_TEST_MESSAGE("aborted " << aborted_total << ", timed out " << 2 * rounds - aborted_total);
    BOOST_TEST(withdrawn_total == static_cast<std::size_t>(aborted_total));
}

// A timed last arrival with no time left completes its phase, and one whose completion function
// throws throws from its call with its phase completed: the others are released, its own handler
// is never invoked, and the next phase counts from the start.
BOOST_AUTO_TEST_CASE(a_timed_last_arrival_whose_completion_function_throws)
{
    asio::io_context io;
    int runs = 0;
    asio_sync::barrier b(io, 2, [&] {
        if (++runs == 1)
            throw std::runtime_error("completion");
    });
    auto [first, first_handler] = make_record();
    b.async_arrive_and_wait_for(std::chrono::hours(1),
                                [h = first_handler](error_code ec, std::size_t) mutable { h(ec); });
    int last_calls = 0;
    BOOST_CHECK_THROW(
        b.async_arrive_and_wait_for(std::chrono::seconds(-1), [&](error_code, std::size_t) { ++last_calls; }),
        std::runtime_error);
    BOOST_TEST(b.phase() == 1u);
    BOOST_TEST(b.missing() == 2u);
    io.run(); // returns: the first arrival's timer was cancelled
    BOOST_TEST(first->calls == 1);
    BOOST_TEST(!*first->ec);
    BOOST_TEST(last_calls == 0);

    std::vector<error_code> codes;
    b.async_arrive_and_wait_for(std::chrono::seconds(0),
                                [&](error_code ec, std::size_t) { codes.push_back(ec); });
    b.async_arrive_and_wait_until(std::chrono::steady_clock::time_point::min(),
                                  [&](error_code ec, std::size_t) { codes.push_back(ec); });
    BOOST_TEST(codes.empty());
    io.restart();
    io.run();
    BOOST_TEST(codes == (std::vector<error_code>{error_code(), error_code()}),
               boost::test_tools::per_element());
    BOOST_TEST(runs == 2);
}

// Stop requests from three threads at once: each stoppable guard alive is signalled exactly once,
// whichever thread emits, also when its cancellation handler releases its own guard, and the
// closes complete once the last guard is gone.
BOOST_AUTO_TEST_CASE(concurrent_stop_requests_signal_each_guard_once)
{
    const int rounds = asio_sync::test::under_tsan ? 100 : 400;
    constexpr std::size_t guards = 8;
    for (int round = 0; round < rounds; ++round)
    {
        asio::io_context io;
        gate g(io);
        std::vector<gate::guard> entered;
        std::array<std::atomic<int>, guards> signals{};
        for (std::size_t i = 0; i < guards; ++i)
        {
            entered.push_back(g.try_enter_stoppable());
            BOOST_TEST_REQUIRE(static_cast<bool>(entered.back()));
        }
        for (std::size_t i = 0; i < guards; ++i)
            entered[i].slot().assign([&, i](asio::cancellation_type) {
                signals[i].fetch_add(1, std::memory_order_relaxed);
                if (i % 2)
                    entered[i].release(); // only the emitting thread touches it
            });
        std::atomic<int> go{0};
        std::atomic<int> wrong{0}; // Boost.Test checks are for the main thread only
        auto stop = [&] {
            await(go, 1);
            g.request_stop();
            if (!g.is_closed() || !g.stop_requested() || g.try_enter_stoppable())
                wrong.fetch_add(1);
        };
        std::thread a(stop);
        std::thread b(stop);
        go.store(1, std::memory_order_release);
        stop();
        a.join();
        b.join();
        BOOST_TEST(wrong.load() == 0);
        for (std::size_t i = 0; i < guards; ++i)
            BOOST_TEST(signals[i].load() == 1);
        BOOST_TEST(g.count() == guards / 2);
        auto [out, handler] = make_record();
        g.async_close(handler);
        entered.clear();
        BOOST_TEST(!out->done());
        drain(io);
        BOOST_TEST(out->calls == 1);
        BOOST_TEST(!*out->ec);
    }
}

// The cancellation handlers of a stop request misbehave in every way a guard allows: release their
// own guard, move-assign another guard over theirs, release a guard not yet signalled, move the
// guard being signalled away, request the stop again, try to enter, start a close. Every guard
// alive at the request is signalled exactly once, in its slot wherever the guard has moved, and
// the gate drains to one completion per close.
BOOST_AUTO_TEST_CASE(cancellation_handlers_that_release_move_and_enter_guards)
{
    asio::io_context io;
    gate g(io);
    std::array<gate::guard, 6> guards;
    for (gate::guard& guard : guards)
    {
        guard = g.try_enter_stoppable();
        BOOST_TEST_REQUIRE(static_cast<bool>(guard));
    }
    gate::guard plain = g.try_enter();
    std::array<int, 6> signals{};
    auto [inner_close, inner_handler] = make_record();
    guards[0].slot().assign([&, h = inner_handler](asio::cancellation_type) mutable {
        ++signals[0];
        guards[0].release();
        g.request_stop(); // emits no more
        BOOST_TEST(!g.try_enter_stoppable());
        BOOST_TEST(!g.try_enter());
        g.async_close(h);
    });
    guards[1].slot().assign([&](asio::cancellation_type) {
        ++signals[1];
        guards[1] = std::move(guards[3]); // leaves with guard 1's entry, takes guard 3's
        BOOST_TEST(!guards[3].slot().is_connected());
    });
    guards[2].slot().assign([&](asio::cancellation_type) {
        ++signals[2];
        guards[4].release(); // alive at the request: still signalled
    });
    guards[3].slot().assign([&](asio::cancellation_type) {
        ++signals[3];
        gate::guard moved = std::move(guards[1]); // the guard being signalled, gone at once
    });
    guards[4].slot().assign([&](asio::cancellation_type) { ++signals[4]; });
    gate::guard moved = std::move(guards[5]); // the slot goes with the entry
    BOOST_TEST(!guards[5].slot().is_connected());
    moved.slot().assign([&](asio::cancellation_type) { ++signals[5]; });
    BOOST_TEST(g.count() == 7u);

    g.request_stop(asio::cancellation_type::total);
    BOOST_TEST(signals == (std::array<int, 6>{1, 1, 1, 1, 1, 1}), boost::test_tools::per_element());
    BOOST_TEST(g.count() == 3u); // guards[2], moved and plain
    BOOST_TEST(!inner_close->done());
    auto [outer_close, outer_handler] = make_record();
    g.async_close_for(std::chrono::hours(1), outer_handler);
    drain(io);
    BOOST_TEST(!inner_close->done());
    guards[2].release();
    moved.release();
    plain.release();
    BOOST_TEST(!inner_close->done()); // posted, never inline
    io.run();                         // returns: the timed close's timer was cancelled
    BOOST_TEST(inner_close->calls == 1);
    BOOST_TEST(outer_close->calls == 1);
    BOOST_TEST(!*inner_close->ec);
    BOOST_TEST(!*outer_close->ec);
    BOOST_TEST(signals == (std::array<int, 6>{1, 1, 1, 1, 1, 1}), boost::test_tools::per_element());
}

// Stoppable guards moved, move-assigned over one another and released on two other threads while
// the stop request emits on this one: every signal emitted once at most, and exactly once on the
// guards that stay. Their cancellation handlers only count: the tasks' slots are used by this
// thread alone, as the gate requires.
BOOST_AUTO_TEST_CASE(guards_moved_and_released_on_other_threads_during_the_emission)
{
    const int rounds = asio_sync::test::under_tsan ? 100 : 400;
    constexpr std::size_t guards = 8;
    for (int round = 0; round < rounds; ++round)
    {
        asio::io_context io;
        gate g(io);
        std::array<gate::guard, guards> entered;
        std::array<std::atomic<int>, guards> signals{};
        for (std::size_t i = 0; i < guards; ++i)
        {
            entered[i] = g.try_enter_stoppable();
            BOOST_TEST_REQUIRE(static_cast<bool>(entered[i]));
            entered[i].slot().assign([&signals, i](asio::cancellation_type) {
                signals[i].fetch_add(1, std::memory_order_relaxed);
            });
        }
        // Each worker churns its half: guards 0-1 and 4-5 move around and leave, 2-3 and 6-7 stay.
        std::atomic<int> go{0};
        auto churn = [&](std::size_t first) {
            await(go, 1);
            gate::guard moved = std::move(entered[first]);
            moved = std::move(entered[first + 1]);              // leaves with the first entry
            entered[first + 2] = std::move(entered[first + 2]); // self-assignment: nothing
            moved.release();
        };
        std::thread a(churn, std::size_t{0});
        std::thread b(churn, std::size_t{4});
        go.store(1, std::memory_order_release);
        for (int spin = round % 64; spin > 0; --spin)
            std::this_thread::yield();
        g.request_stop();
        a.join();
        b.join();
        for (std::size_t i = 0; i < guards; ++i)
        {
            const bool stays = i % 4 >= 2;
            BOOST_TEST(signals[i].load() <= 1);
            if (stays)
                BOOST_TEST(signals[i].load() == 1);
        }
        BOOST_TEST(g.count() == 4u);
        auto [out, handler] = make_record();
        g.async_close(handler);
        for (gate::guard& guard : entered)
            guard.release();
        drain(io);
        BOOST_TEST(out->calls == 1);
    }
}

// A close, then a stop request: the first request still emits, on the guards entered before the
// close. A stop request on an empty gate: nothing to emit, the gate is closed and drained, a
// timed close completes at once and starts no timer.
BOOST_AUTO_TEST_CASE(a_stop_request_after_a_close_and_on_an_empty_gate)
{
    asio::io_context io;
    {
        gate g(io);
        gate::guard guard = g.try_enter_stoppable();
        int signals = 0;
        guard.slot().assign([&](asio::cancellation_type) { ++signals; });
        auto [out, handler] = make_record();
        g.async_close(handler);
        BOOST_TEST(!g.stop_requested());
        BOOST_TEST(!g.try_enter_stoppable());
        g.request_stop();
        BOOST_TEST(signals == 1);
        g.request_stop();
        BOOST_TEST(signals == 1);
        drain(io);
        BOOST_TEST(!out->done());
        guard.release();
        drain(io);
        BOOST_TEST(out->calls == 1);
        BOOST_TEST(!*out->ec);
    }
    {
        auto g = std::make_unique<gate>(io);
        g->request_stop();
        BOOST_TEST(g->is_closed());
        BOOST_TEST(g->stop_requested());
        BOOST_TEST(!g->try_enter());
        auto [out, handler] = make_record();
        g->async_close_for(std::chrono::seconds(-1), [&, h = handler](error_code ec) mutable {
            h(ec);
            g.reset(); // the gate may go in its close's handler
        });
        BOOST_TEST(!out->done());
        io.restart();
        io.run();
        BOOST_TEST(out->calls == 1);
        BOOST_TEST(!*out->ec); // drained at once: no time-out
        BOOST_TEST(!g);
    }
}

// A stopped gate whose last guard leaves in its cancellation handler, with a timed close pending
// whose handler destroys the gate: the timer goes with the close, nothing touches the gate after.
BOOST_AUTO_TEST_CASE(a_gate_destroyed_by_its_timed_close_after_a_stop)
{
    asio::io_context io;
    auto g = std::make_unique<gate>(io);
    gate::guard guard = g->try_enter_stoppable();
    guard.slot().assign([&](asio::cancellation_type) { guard.release(); });
    auto [out, handler] = make_record();
    g->async_close_until(std::chrono::system_clock::now() + std::chrono::hours(1),
                         [&, h = handler](error_code ec) mutable {
                             h(ec);
                             g.reset();
                         });
    g->request_stop();
    BOOST_TEST(!guard);
    BOOST_TEST(!out->done());
    io.run(); // returns: the timer was cancelled
    BOOST_TEST(out->calls == 1);
    BOOST_TEST(!*out->ec);
    BOOST_TEST(!g);
}

// A cancellation handler that throws during a stop request ends the process with std::terminate,
// as documented; checked in a child process.
BOOST_AUTO_TEST_CASE(a_throwing_cancellation_handler_terminates)
{
    std::cout.flush(); // what the child would write out again
    std::fflush(nullptr);
    const pid_t child = fork();
    BOOST_TEST_REQUIRE(child >= 0);
    if (child == 0)
    {
        std::set_terminate([] { _exit(42); });
        asio::io_context io;
        gate g(io);
        gate::guard guard = g.try_enter_stoppable();
        guard.slot().assign([](asio::cancellation_type) { throw std::runtime_error("stop"); });
        g.request_stop();
        _exit(0);
    }
    int status = 0;
    BOOST_TEST_REQUIRE(waitpid(child, &status, 0) == child);
    BOOST_TEST(WIFEXITED(status));
    BOOST_TEST(WEXITSTATUS(status) == 42);
}
