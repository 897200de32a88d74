// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

// The condition variable, the events and the bounded semaphore's releases checked against their
// documented promises from the outside: calls racing from other threads, cancellation of every
// kind in every phase, destruction of the object and of its context in every phase, every
// completion token, executors that throw, predicates that call back, and counts that must match
// exactly. No outcome depends on timing: races are repeated and every round's outcome is counted.

#define BOOST_TEST_MODULE hostile_waits
#include <boost/test/unit_test.hpp>

#include <asio_sync/auto_reset_event.hpp>
#include <asio_sync/condition_variable.hpp>
#include <asio_sync/detail/semaphore_core.hpp>
#include <asio_sync/manual_reset_event.hpp>
#include <asio_sync/mutex.hpp>
#include <asio_sync/semaphore.hpp>
#include <asio_sync/shared_mutex.hpp>

#include "support/counting_allocator.hpp"
#include "support/dsched.hpp"
#include "support/event_checks.hpp"
#include "support/fault_injection.hpp"
#include "support/handler.hpp"
#include "support/racing_calls.hpp"
#include "support/recording_executor.hpp"

#include <boost/asio/bind_allocator.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_future.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <stdexcept>
#include <thread>
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
namespace dsched = asio_sync::test::dsched;
using asio_sync::condition_variable;
using asio_sync::test::drain;
using asio_sync::test::make_record;
using asio_sync::test::race_calls;
using boost::system::error_code;
using lock_type = std::unique_lock<asio_sync::mutex>;

namespace {

const error_code aborted = asio::error::operation_aborted;

// Generous on purpose: it only turns a hang (a wait that never completes) into a failure that
// says so; no outcome depends on it.
constexpr std::chrono::seconds hang_limit{60};

[[noreturn]] void hung(const char* what)
{
    std::fprintf(stderr, "hostile_waits: %s (still pending after %lld s)\n", what,
                 static_cast<long long>(hang_limit.count()));
    std::abort();
}

// future.get(), failing loudly instead of hanging when the operation never completes.
template <class T>
T await(std::future<T> f, const char* what)
{
    if (f.wait_for(hang_limit) != std::future_status::ready)
        hung(what);
    return f.get();
}

// Starts `count` threads that each run `f(i)` as soon as all of them are ready, and joins them.
template <class F>
void all_at_once(int count, F f)
{
    std::atomic<int> ready{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < count; ++i)
        threads.emplace_back([&, i] {
            ready.fetch_add(1);
            while (ready.load() < count)
            {
            }
            f(i);
        });
    for (std::thread& t : threads)
        t.join();
}

// A mutex and a condition variable on one io_context, and a lock taken at once.
struct cv_fixture
{
    asio::io_context ctx;
    asio_sync::mutex mutex{ctx};
    condition_variable cv{ctx};

    lock_type lock()
    {
        BOOST_TEST_REQUIRE(mutex.try_lock());
        return lock_type(mutex, std::adopt_lock);
    }
};

// What one wait's handler saw, written on whatever thread ran it.
struct seen
{
    std::atomic<int> calls{0};
    std::atomic<int> successes{0};
    std::atomic<int> aborts{0};
    std::atomic<int> other{0};
    std::atomic<int> owned{0};

    void record(error_code ec, bool owns)
    {
        ++calls;
        if (!ec)
            ++successes;
        else if (ec == aborted)
            ++aborts;
        else
            ++other;
        owned += owns;
    }
};

} // namespace

BOOST_AUTO_TEST_SUITE(interleavings)

// The engine of a bounded semaphore, run one shared-memory step at a time.
using checked_core = asio_sync::detail::semaphore_core<dsched::atomic, dsched::mutex>;
using asio_sync::detail::semaphore_waiter;
using asio_sync::detail::waiter_list;
using asio_sync::detail::waiter_outcome;

// auto_reset_event::set() documents: "each of them that finds a wait queued completes one", and
// docs/permits.md: "a semaphore bounded at 1 used as a binary signal never refuses a
// try_release(1) while an acquire is queued". An auto_reset_event is set (a semaphore bounded at 1
// holding its permit). Thread 0 consumes the set lock-free (reset(), or a wait on a set event:
// try_acquire). Thread 1 waits (the lock-free attempt, then the queue) and, once its wait is queued,
// sets the event. Its set finds its own wait queued, so it must complete it.
class set_after_a_queued_wait_while_a_set_is_consumed : public dsched::scenario
{
public:
    std::vector<std::function<void()>> threads() override
    {
        return {[this] { consumed_ = core_.try_acquire(1, false); },
                [this] {
                    if (core_.try_acquire(1, false))
                        return;
                    queued_ = core_.enqueue(waiter_, 1) == waiter_outcome::pending;
                    if (!queued_)
                        return;
                    released_ = core_.release(1, done_);
                }};
    }

    void check_end() override
    {
        if (!queued_)
            return;
        bool completed = false;
        while (semaphore_waiter* w = done_.pop_front())
            completed = completed || w == &waiter_;
        if (!released_ || !completed)
            fail(std::string("a set made while a wait was queued ") +
                 (released_ ? "did not complete it" : "was refused (try_release returned false)") +
                 "; the wait stays queued (consumer " + (consumed_ ? "took" : "did not take") +
                 " the earlier set)");
    }

private:
    checked_core core_{1, 1};
    semaphore_waiter waiter_;
    waiter_list done_;
    bool consumed_ = false;
    bool queued_ = false;
    bool released_ = false;
};

BOOST_AUTO_TEST_CASE(a_set_after_a_queued_wait_completes_it_while_a_lock_free_consume_races)
{
    const auto e =
        dsched::explore([] { return std::make_unique<set_after_a_queued_wait_while_a_set_is_consumed>(); });
    BOOST_TEST_MESSAGE("schedules explored: " << e.schedules << (e.complete ? " (all)" : ""));
    BOOST_TEST(e.failure.empty(), e.failure);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(auto_reset_event_attacks)

// With k waits queued, m sets from m threads at once: exactly min(m, k) waits succeed, the rest
// stay queued, and the event is set exactly when m > k (a set event stays set once).
BOOST_AUTO_TEST_CASE(concurrent_sets_release_exactly_min_of_sets_and_waits)
{
    constexpr int rounds = 150;
    for (const auto& [sets, waits] : {std::pair{2, 2}, std::pair{3, 2}, std::pair{2, 3}, std::pair{4, 4}})
    {
        int bad_count = 0;
        int bad_state = 0;
        for (int round = 0; round < rounds; ++round)
        {
            asio::io_context ctx;
            asio_sync::auto_reset_event ev(ctx);
            seen s;
            for (int i = 0; i < waits; ++i)
                ev.async_wait([&](error_code ec) { s.record(ec, false); });
            all_at_once(sets, [&](int) { ev.set(); });
            drain(ctx); // runs the completions posted, without waiting for the others
            bad_count += s.successes.load() != std::min(sets, waits);
            bad_state += ev.is_set() != (sets > waits);
            ev.cancel();
            drain(ctx);
        }
        BOOST_TEST_CONTEXT(sets << " sets, " << waits << " waits")
        {
            BOOST_TEST(bad_count == 0);
            BOOST_TEST(bad_state == 0);
        }
    }
}

// A set racing the cancellation of the only queued wait (per-operation, emitted on the wait's
// strand, or cancel()): exactly one of "the wait succeeded, the event is clear" and "the wait was
// aborted, the event is set".
BOOST_AUTO_TEST_CASE(a_set_racing_a_cancellation_is_taken_exactly_once)
{
    asio::thread_pool pool(2);
    for (const bool per_operation : {true, false})
    {
        std::optional<asio_sync::auto_reset_event> ev;
        auto strand = asio::make_strand(pool);
        asio::cancellation_signal signal;
        std::promise<error_code> result;
        std::size_t counted = 0;
        long wrong = 0;
        long successes = 0;
        std::promise<void> set_done;
        race_calls(
            2000,
            [&] {
                ev.emplace(pool);
                result = std::promise<error_code>();
                set_done = std::promise<void>();
                std::promise<void> queued;
                asio::post(strand, [&] {
                    ev->async_wait(asio::bind_cancellation_slot(
                        signal.slot(),
                        asio::bind_executor(strand, [&](error_code ec) { result.set_value(ec); })));
                    queued.set_value();
                });
                queued.get_future().get();
            },
            [&] {
                // From a thread of the pool, as the emit on the strand is.
                asio::post(pool, [&] {
                    ev->set();
                    set_done.set_value();
                });
            },
            [&] {
                if (per_operation)
                    asio::post(strand, [&] { signal.emit(asio::cancellation_type::terminal); });
                else
                    counted = ev->cancel();
            },
            [&] {
                await(set_done.get_future(), "a set");
                const error_code ec = await(result.get_future(), "an auto_reset_event wait");
                std::promise<void> done; // the emit, if posted, has run
                asio::post(strand, [&] { done.set_value(); });
                done.get_future().get();
                const bool set = ev->is_set();
                successes += !ec;
                wrong += !ec ? set : !(ec == aborted && set && (per_operation || counted == 1));
                ev.reset();
            });
        BOOST_TEST_CONTEXT((per_operation ? "per-operation cancellation" : "cancel()"))
        {
            BOOST_TEST(wrong == 0);
            BOOST_TEST_MESSAGE("successes: " << successes << " of 2000");
        }
    }
    pool.join();
}

// Through the public API, the interleaving above: one thread consumes a set with reset() while
// another queues a wait and then sets. Every set that finds its wait queued must complete it.
// (Real threads meet in that window only rarely; the count of rounds that lost the set is exact.)
BOOST_AUTO_TEST_CASE(a_set_after_a_queued_wait_completes_it_while_reset_races)
{
    asio::io_context ctx;
    long lost = 0;
    long queued_rounds = 0;
    std::optional<asio_sync::auto_reset_event> ev;
    seen s;
    race_calls(
        20000,
        [&] {
            ev.emplace(ctx, true);
            s.successes = 0;
        },
        [&] { ev->reset(); },
        [&] {
            // A wait that finds the event set completes at once; count only the queued ones.
            ev->async_wait([&](error_code ec) { s.record(ec, false); });
            ev->set();
        },
        [&] {
            drain(ctx);
            if (s.successes.load() == 0)
                ++lost;
            ++queued_rounds;
            ev->cancel();
            drain(ctx);
        });
    BOOST_TEST(lost == 0);
    BOOST_TEST_MESSAGE("rounds: " << queued_rounds << ", a wait left queued after a later set: " << lost);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(bounded_semaphore_attacks)

// Bounded at 1: with none queued, of two racing try_release(1) exactly one fits; with one acquire
// queued, both fit (one completes the acquire, the other stays); with two queued, both fit and both
// acquires complete. release(1) agrees, throwing exactly where try_release is false.
BOOST_AUTO_TEST_CASE(racing_releases_of_a_binary_semaphore_count_exactly)
{
    for (const int queued : {0, 1, 2})
        for (const bool throwing : {false, true})
        {
            long wrong = 0;
            for (int round = 0; round < 300; ++round)
            {
                asio::io_context ctx;
                asio_sync::semaphore sem(ctx, 0, 1);
                seen s;
                for (int i = 0; i < queued; ++i)
                    sem.async_acquire([&](error_code ec) { s.record(ec, false); });
                std::atomic<int> accepted{0};
                all_at_once(2, [&](int) {
                    if (!throwing)
                        accepted += sem.try_release(1);
                    else
                        try
                        {
                            sem.release(1);
                            ++accepted;
                        }
                        catch (const std::overflow_error&)
                        {
                        }
                });
                drain(ctx);
                const int expected_accepted = queued == 0 ? 1 : 2;
                wrong += accepted.load() != expected_accepted || s.successes.load() != queued ||
                         sem.available() != std::size_t(queued < 2 ? 1 : 0);
            }
            BOOST_TEST_CONTEXT(queued << " queued, " << (throwing ? "release" : "try_release"))
            BOOST_TEST(wrong == 0);
        }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(manual_reset_event_attacks)

// cancel() racing set() with n waits queued: every wait completes once, the ones cancel() counted
// with operation_aborted and the others with success.
BOOST_AUTO_TEST_CASE(cancel_racing_set_counts_exactly)
{
    constexpr int waits = 4;
    asio::io_context ctx;
    std::optional<asio_sync::manual_reset_event> ev;
    seen s;
    std::size_t counted = 0;
    long wrong = 0;
    race_calls(
        5000,
        [&] {
            ev.emplace(ctx);
            s.calls = 0;
            s.successes = 0;
            s.aborts = 0;
            for (int i = 0; i < waits; ++i)
                ev->async_wait([&](error_code ec) { s.record(ec, false); });
        },
        [&] { ev->set(); }, [&] { counted = ev->cancel(); },
        [&] {
            drain(ctx);
            wrong += s.calls.load() != waits || std::size_t(s.aborts.load()) != counted ||
                     s.successes.load() + s.aborts.load() != waits;
        });
    BOOST_TEST(wrong == 0);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(condition_variable_attacks)

// n plain waits queued, k notify_one() from k threads at once: exactly k wake (each relocking in
// turn), and cancel() then counts and aborts the n - k others.
BOOST_AUTO_TEST_CASE(concurrent_notify_one_wakes_exactly_as_many)
{
    constexpr int n = 5;
    for (const int k : {2, 3, 5})
    {
        long wrong = 0;
        for (int round = 0; round < 100; ++round)
        {
            cv_fixture f;
            std::vector<lock_type> locks(n);
            seen s;
            for (std::size_t i = 0; i < std::size_t(n); ++i)
            {
                locks[i] = f.lock();
                f.cv.async_wait(locks[i], [&, i](error_code ec) {
                    s.record(ec, locks[i].owns_lock());
                    if (locks[i].owns_lock())
                        locks[i].unlock();
                });
            }
            all_at_once(k, [&](int) { f.cv.notify_one(); });
            drain(f.ctx);
            const int woken = s.successes.load();
            const std::size_t counted = f.cv.cancel();
            drain(f.ctx);
            wrong += woken != k || counted != std::size_t(n - k) || s.aborts.load() != n - k ||
                     s.owned.load() != n || s.calls.load() != n;
        }
        BOOST_TEST_CONTEXT(k << " notify_one of " << n) BOOST_TEST(wrong == 0);
    }
}

// A predicate wait whose predicate stays false, while another thread runs the context (relocks and
// evaluations): notify_one() (or notify_all()) racing cancel() from two more threads. Whatever the
// order, the wait is queued, between rounds or queued again when cancel() runs, so cancel() counts
// it and it ends with operation_aborted, once, holding the lock.
BOOST_AUTO_TEST_CASE(a_predicate_wait_notified_while_cancel_races_ends_once)
{
    for (const bool all : {false, true})
    {
        asio::io_context ctx;
        auto guard = asio::make_work_guard(ctx);
        std::thread runner([&] { ctx.run(); });
        long wrong = 0;
        long evaluations_total = 0;
        {
            std::optional<condition_variable> cv;
            asio_sync::mutex mutex(ctx);
            lock_type lock;
            std::promise<std::pair<error_code, bool>> result;
            std::atomic<long> evaluations{0};
            std::size_t counted = 0;
            race_calls(
                1000,
                [&] {
                    cv.emplace(ctx);
                    result = std::promise<std::pair<error_code, bool>>();
                    std::promise<void> queued;
                    asio::post(ctx, [&] {
                        lock = lock_type(mutex, std::try_to_lock);
                        cv->async_wait(
                            lock,
                            [&] {
                                ++evaluations;
                                return false;
                            },
                            [&](error_code ec) {
                                const bool owned = lock.owns_lock();
                                if (owned)
                                    lock.unlock();
                                result.set_value({ec, owned});
                            });
                        queued.set_value();
                    });
                    queued.get_future().get();
                },
                [&] { all ? cv->notify_all() : cv->notify_one(); }, [&] { counted = cv->cancel(); },
                [&] {
                    const auto [ec, owned] = await(result.get_future(), "a predicate wait");
                    wrong += ec != aborted || !owned || counted != 1;
                });
            evaluations_total = evaluations.load();
            std::promise<void> flushed;
            asio::post(ctx, [&] { flushed.set_value(); });
            flushed.get_future().get();
        }
        guard.reset();
        runner.join();
        BOOST_TEST_CONTEXT((all ? "notify_all" : "notify_one"))
        {
            BOOST_TEST(wrong == 0);
            BOOST_TEST_MESSAGE("predicate evaluations: " << evaluations_total);
        }
    }
}

// The same with a per-operation cancellation (each type) emitted on the wait's strand, and the
// context run by a thread pool.
BOOST_AUTO_TEST_CASE(a_predicate_wait_notified_while_its_cancellation_races_ends_once)
{
    asio::thread_pool pool(2);
    for (const auto type : {asio::cancellation_type::terminal, asio::cancellation_type::partial,
                            asio::cancellation_type::total})
    {
        asio_sync::mutex mutex(pool);
        std::optional<condition_variable> cv;
        auto strand = asio::make_strand(pool);
        asio::cancellation_signal signal;
        lock_type lock;
        std::promise<std::pair<error_code, bool>> result;
        long wrong = 0;
        race_calls(
            700,
            [&] {
                cv.emplace(pool);
                result = std::promise<std::pair<error_code, bool>>();
                std::promise<void> queued;
                asio::post(strand, [&] {
                    lock = lock_type(mutex, std::try_to_lock);
                    cv->async_wait(
                        lock, [] { return false; },
                        asio::bind_cancellation_slot(signal.slot(),
                                                     asio::bind_executor(strand, [&](error_code ec) {
                                                         const bool owned = lock.owns_lock();
                                                         if (owned)
                                                             lock.unlock();
                                                         result.set_value({ec, owned});
                                                     })));
                    queued.set_value();
                });
                queued.get_future().get();
            },
            [&] { cv->notify_one(); }, [&] { asio::post(strand, [&, type] { signal.emit(type); }); },
            [&] {
                const auto [ec, owned] = await(result.get_future(), "a predicate wait");
                wrong += ec != aborted || !owned;
                std::promise<void> done;
                asio::post(strand, [&] { done.set_value(); });
                done.get_future().get();
            });
        BOOST_TEST_CONTEXT("type " << int(type)) BOOST_TEST(wrong == 0);
        std::promise<void> done;
        asio::post(strand, [&] {
            cv.reset();
            done.set_value();
        });
        done.get_future().get();
    }
    pool.join();
}

// The docs: the first evaluation of a predicate, inside async_wait, comes before the wait exists,
// as for any operation not yet started. A cancel() made by it counts nothing and the wait queues;
// a cancellation emitted by it finds no handler. Either way the wait is then queued, exactly once:
// a later cancel() counts it and ends it, holding the lock.
BOOST_AUTO_TEST_CASE(cancel_called_by_the_first_evaluation_precedes_the_wait)
{
    cv_fixture f;
    lock_type lock = f.lock();
    std::size_t counted = 99;
    int evaluations = 0;
    auto [out, handler] = make_record();
    f.cv.async_wait(
        lock,
        [&] {
            if (++evaluations == 1)
                counted = f.cv.cancel();
            return false;
        },
        handler);
    drain(f.ctx);
    BOOST_TEST(counted == 0u);
    BOOST_TEST(out->calls == 0);
    BOOST_TEST(f.cv.cancel() == 1u);
    drain(f.ctx);
    BOOST_TEST(out->calls == 1);
    BOOST_TEST((out->ec == std::optional<error_code>(aborted)));
    BOOST_TEST(evaluations == 1);
    BOOST_TEST(lock.owns_lock());
}

// The same with a per-operation cancellation emitted by the first evaluation: it is lost, as a
// signal emitted before any operation installs its handler is; one emitted later ends the wait.
BOOST_AUTO_TEST_CASE(a_cancellation_emitted_by_the_first_evaluation_precedes_the_wait)
{
    cv_fixture f;
    lock_type lock = f.lock();
    asio::cancellation_signal signal;
    int evaluations = 0;
    auto [out, handler] = make_record();
    f.cv.async_wait(
        lock,
        [&] {
            if (++evaluations == 1)
                signal.emit(asio::cancellation_type::terminal);
            return false;
        },
        asio::bind_cancellation_slot(signal.slot(), handler));
    drain(f.ctx);
    BOOST_TEST(out->calls == 0);
    signal.emit(asio::cancellation_type::terminal);
    drain(f.ctx);
    BOOST_TEST(out->calls == 1);
    BOOST_TEST((out->ec == std::optional<error_code>(aborted)));
    BOOST_TEST(evaluations == 1);
    BOOST_TEST(lock.owns_lock());
}

// A predicate that notifies from a later round: the other waiter is woken, exactly once, and the
// notifying wait, not queued while its predicate runs, is not.
BOOST_AUTO_TEST_CASE(a_predicate_that_notifies_wakes_the_other_waiter_once)
{
    cv_fixture f;
    bool go = false; // guarded by the mutex
    lock_type first = f.lock();
    int first_evaluations = 0;
    auto [out1, h1] = make_record();
    f.cv.async_wait(
        first,
        [&] {
            if (++first_evaluations == 2)
            {
                go = true;
                f.cv.notify_one();
            }
            return false;
        },
        h1);
    lock_type second = f.lock();
    int second_evaluations = 0;
    auto [out2, h2] = make_record();
    f.cv.async_wait(
        second,
        [&] {
            ++second_evaluations;
            return go;
        },
        h2);
    f.cv.notify_one(); // wakes the first, the oldest
    drain(f.ctx);
    BOOST_TEST(first_evaluations == 2);
    BOOST_TEST(second_evaluations == 2);
    BOOST_TEST(out1->calls == 0);
    BOOST_TEST(out2->calls == 1);
    BOOST_TEST(!out2->ec.value_or(aborted));
    BOOST_TEST(second.owns_lock());
    second.unlock();
    BOOST_TEST(f.cv.cancel() == 1u); // the first, queued again
    drain(f.ctx);
    BOOST_TEST(out1->calls == 1);
    BOOST_TEST(first_evaluations == 2);
}

// A predicate that calls cancel() in a later round: the docs say the wait then ends "when pred
// returns, whatever it returned", and cancel() counts it.
BOOST_AUTO_TEST_CASE(a_predicate_that_calls_cancel_ends_its_own_wait_whatever_it_returns)
{
    for (const bool returns : {false, true})
    {
        cv_fixture f;
        lock_type lock = f.lock();
        std::size_t counted = 99;
        int evaluations = 0;
        auto [out, handler] = make_record();
        f.cv.async_wait(
            lock,
            [&] {
                if (++evaluations == 2)
                {
                    counted = f.cv.cancel();
                    return returns;
                }
                return false;
            },
            handler);
        f.cv.notify_one();
        drain(f.ctx);
        BOOST_TEST_CONTEXT("predicate returns " << returns)
        {
            BOOST_TEST(out->calls == 1);
            BOOST_TEST((out->ec == std::optional<error_code>(aborted)));
            BOOST_TEST(counted == 1u);
            BOOST_TEST(lock.owns_lock());
        }
        f.cv.cancel();
        drain(f.ctx);
    }
}

// Two predicate waits for the same state; the notification that makes it true wakes the first,
// which is then cancelled while it relocks. The first completes with operation_aborted, and the
// notification it did not use passes to the second, as the docs say.
BOOST_AUTO_TEST_CASE(a_notification_taken_by_a_wait_cancelled_while_it_relocks_reaches_the_next)
{
    cv_fixture f;
    bool ready = false;
    asio::cancellation_signal signal;
    lock_type first = f.lock();
    auto [out1, h1] = make_record();
    f.cv.async_wait(
        first, [&] { return ready; }, asio::bind_cancellation_slot(signal.slot(), h1));
    lock_type second = f.lock();
    auto [out2, h2] = make_record();
    f.cv.async_wait(
        second, [&] { return ready; }, h2);
    lock_type notifier = f.lock();
    ready = true;
    f.cv.notify_one();
    drain(f.ctx);
    signal.emit(asio::cancellation_type::terminal); // the first is relocking
    notifier.unlock();
    drain(f.ctx);
    BOOST_TEST(out1->calls == 1);
    BOOST_TEST((out1->ec == std::optional<error_code>(aborted)));
    if (first.owns_lock())
        first.unlock();
    drain(f.ctx);
    BOOST_TEST(out2->calls == 1, "the second wait, whose predicate holds, got no wake-up");
    f.cv.cancel();
    drain(f.ctx);
}

// A handler whose executor throws when the relock's completion is submitted (the mutex is free, so
// the relock completes at once through that executor): the docs say that wait loses only its own
// handler, destroyed without being invoked, the notification passes to the next waiter, and
// notify_one() does not throw. For a plain wait and a predicate wait.
BOOST_AUTO_TEST_CASE(a_waiter_whose_executor_throws_passes_the_notification_on)
{
    for (const bool with_predicate : {false, true})
    {
        cv_fixture f;
        std::vector<bool> continuations;
        bool armed = false;
        const std::function<void()> maybe_throw = [&] {
            if (armed)
                throw std::runtime_error("executor");
        };
        asio_sync::test::recording_executor<asio::io_context::executor_type> throwing(
            f.ctx.get_executor(), continuations, maybe_throw);
        lock_type first = f.lock();
        int first_calls = 0;
        bool first_destroyed = false;
        auto first_handler = asio::bind_executor(
            throwing, [&first_calls, guard = std::make_shared<asio_sync::test::on_destroy>(
                                         [&] { first_destroyed = true; })](error_code) { ++first_calls; });
        if (with_predicate)
            f.cv.async_wait(
                first, [] { return false; }, std::move(first_handler));
        else
            f.cv.async_wait(first, std::move(first_handler));
        lock_type second = f.lock();
        auto [out2, h2] = make_record();
        f.cv.async_wait(second, h2);
        armed = true;
        BOOST_CHECK_NO_THROW(f.cv.notify_one());
        armed = false;
        drain(f.ctx);
        BOOST_TEST_CONTEXT((with_predicate ? "predicate wait" : "plain wait"))
        {
            BOOST_TEST(first_calls == 0);
            BOOST_TEST(first_destroyed);
            BOOST_TEST(out2->calls == 1);
            BOOST_TEST(!out2->ec.value_or(aborted));
            BOOST_TEST(second.owns_lock());
            BOOST_TEST(!first.owns_lock());
            BOOST_TEST(f.cv.cancel() == 0u);
        }
        second.unlock();
        BOOST_TEST(f.mutex.try_lock()); // nothing kept it locked
        f.mutex.unlock();
    }
}

// The same when the relock has to queue on the mutex (held elsewhere) and the handler's allocator
// throws for that queued relock: the wait loses only its own handler, the notification passes to
// the next waiter, and notify_one() does not throw.
BOOST_AUTO_TEST_CASE(a_waiter_whose_relock_cannot_allocate_passes_the_notification_on)
{
    for (const bool with_predicate : {false, true})
    {
        cv_fixture f;
        asio_sync::test::fault_plan plan;
        plan.fail_at = 1;
        lock_type first = f.lock();
        int first_calls = 0;
        bool first_destroyed = false;
        auto first_handler =
            asio::bind_allocator(asio_sync::test::failing_allocator<void>(plan),
                                 [&first_calls, guard = std::make_shared<asio_sync::test::on_destroy>([&] {
                                                    first_destroyed = true;
                                                })](error_code) { ++first_calls; });
        if (with_predicate)
            f.cv.async_wait(
                first, [] { return false; }, std::move(first_handler));
        else
            f.cv.async_wait(first, std::move(first_handler));
        lock_type second = f.lock();
        auto [out2, h2] = make_record();
        f.cv.async_wait(second, h2);
        lock_type holder = f.lock(); // the relocks queue behind this holder
        plan.armed = true;
        BOOST_CHECK_NO_THROW(f.cv.notify_one());
        plan.armed = false;
        drain(f.ctx);
        BOOST_TEST_CONTEXT((with_predicate ? "predicate wait" : "plain wait"))
        {
            BOOST_TEST(plan.failures == 1u);
            BOOST_TEST(first_calls == 0);
            BOOST_TEST(first_destroyed);
            BOOST_TEST(out2->calls == 0); // queued on the mutex
            holder.unlock();
            drain(f.ctx);
            BOOST_TEST(out2->calls == 1);
            BOOST_TEST(!out2->ec.value_or(aborted));
            BOOST_TEST(second.owns_lock());
            BOOST_TEST(f.cv.cancel() == 0u);
        }
        if (second.owns_lock())
            second.unlock();
        BOOST_TEST(f.mutex.try_lock());
        f.mutex.unlock();
    }
}

// A predicate wait between rounds that ends without its handler: its relock, queued on the mutex,
// cannot be submitted when the holder unlocks (the executor throws: "the lock goes back"), or its
// predicate throws in a later round. The handler is destroyed once, never invoked, the unlock
// does not throw, the mutex ends free, and cancel() finds nothing left to count: the wait has
// left the condition variable's books.
BOOST_AUTO_TEST_CASE(a_predicate_wait_that_ends_without_its_handler_leaves_nothing_behind)
{
    for (const bool executor_throws : {true, false})
        BOOST_TEST_CONTEXT((executor_throws ? "executor throws at the hand-over" : "predicate throws"))
        {
            cv_fixture f;
            std::vector<bool> continuations;
            bool armed = false;
            const std::function<void()> maybe_throw = [&] {
                if (armed)
                    throw std::runtime_error("executor");
            };
            asio_sync::test::recording_executor<asio::io_context::executor_type> ex(
                f.ctx.get_executor(), continuations, maybe_throw);
            lock_type lock = f.lock();
            int calls = 0;
            int destroyed = 0;
            int evaluations = 0;
            f.cv.async_wait(
                lock,
                [&] {
                    if (++evaluations == 2 && !executor_throws)
                        throw std::runtime_error("predicate");
                    return false;
                },
                asio::bind_executor(ex, [&calls, guard = std::make_shared<asio_sync::test::on_destroy>(
                                                     [&] { ++destroyed; })](error_code) { ++calls; }));
            lock_type holder = f.lock();
            f.cv.notify_one();
            drain(f.ctx); // the relock queues behind the holder
            armed = executor_throws;
            BOOST_CHECK_NO_THROW(holder.unlock());
            armed = false;
            if (executor_throws)
                BOOST_CHECK_NO_THROW(drain(f.ctx));
            else
            {
                f.ctx.restart();
                BOOST_CHECK_THROW(f.ctx.poll(), std::runtime_error);
            }
            BOOST_TEST(calls == 0);
            BOOST_TEST(destroyed == 1);
            BOOST_TEST(f.cv.cancel() == 0u);
            if (lock.owns_lock())
                lock.unlock();
            BOOST_TEST(f.mutex.try_lock());
            f.mutex.unlock();
        }
}

// An executor that notifies or cancels from inside execute(): where the library submits a
// completion. A submission made under an internal lock would deadlock here; none is, and every
// wait still completes once.
BOOST_AUTO_TEST_CASE(an_executor_that_calls_back_into_the_condition_variable_while_submitting)
{
    for (const bool cancels : {false, true})
    {
        cv_fixture f;
        std::vector<bool> continuations;
        int depth = 0;
        const std::function<void()> call_back = [&] {
            if (depth++ == 0)
                cancels ? (void)f.cv.cancel() : f.cv.notify_all();
            --depth;
        };
        asio_sync::test::recording_executor<asio::io_context::executor_type> ex(f.ctx.get_executor(),
                                                                                continuations, call_back);
        std::vector<lock_type> locks(3);
        std::vector<std::shared_ptr<asio_sync::test::outcome>> outs;
        for (std::size_t i = 0; i < 3; ++i)
        {
            locks[i] = f.lock();
            auto [out, h] = make_record();
            outs.push_back(out);
            f.cv.async_wait(locks[i], asio::bind_executor(ex, [&, i, h = h](error_code ec) mutable {
                                h(ec);
                                if (locks[i].owns_lock())
                                    locks[i].unlock();
                            }));
        }
        f.cv.notify_one();
        drain(f.ctx);
        BOOST_TEST_CONTEXT((cancels ? "cancel() from execute" : "notify_all() from execute"))
        for (std::size_t i = 0; i < 3; ++i)
            BOOST_TEST(outs[i]->calls == 1);
    }
}

// Destruction of the context in every phase of a predicate wait, with the condition variable
// destroyed before or after it: the handler is destroyed once without being invoked, nothing is
// touched after it is freed (ASan), and the mutex ends unlocked.
BOOST_AUTO_TEST_CASE(context_destruction_in_every_phase_of_a_predicate_wait)
{
    enum class where
    {
        queued,
        relock_posted,
        relock_queued_on_the_mutex,
    };
    for (const where phase : {where::queued, where::relock_posted, where::relock_queued_on_the_mutex})
        for (const bool cv_first : {false, true})
            for (const bool with_predicate : {false, true})
                for (const bool on_strand : {false, true})
                    BOOST_TEST_CONTEXT("phase " << int(phase)
                                                << (cv_first ? ", cv destroyed first" : ", context first")
                                                << (with_predicate ? ", predicate" : ", plain")
                                                << (on_strand ? ", on a strand" : ""))
                    {
                        auto ctx = std::make_unique<asio::io_context>();
                        auto mutex = std::make_unique<asio_sync::mutex>(*ctx);
                        auto cv = std::make_unique<condition_variable>(*ctx);
                        BOOST_TEST_REQUIRE(mutex->try_lock());
                        lock_type lock(*mutex, std::adopt_lock);
                        int calls = 0;
                        int destroyed = 0;
                        auto handler = [&calls, guard = std::make_shared<asio_sync::test::on_destroy>(
                                                    [&] { ++destroyed; })](error_code) { ++calls; };
                        // A strand made after the mutex: its service shuts down before the library's.
                        std::optional strand(asio::make_strand(ctx->get_executor()));
                        const auto start = [&](auto h) {
                            if (with_predicate)
                                cv->async_wait(
                                    lock, [] { return false; }, std::move(h));
                            else
                                cv->async_wait(lock, std::move(h));
                        };
                        if (on_strand)
                            start(asio::bind_executor(*strand, std::move(handler)));
                        else
                            start(std::move(handler));
                        lock_type holder;
                        if (phase == where::relock_queued_on_the_mutex)
                        {
                            BOOST_TEST_REQUIRE(mutex->try_lock());
                            holder = lock_type(*mutex, std::adopt_lock);
                        }
                        if (phase != where::queued)
                            cv->notify_one();
                        if (phase == where::relock_queued_on_the_mutex)
                            drain(*ctx);
                        if (cv_first)
                            cv.reset();
                        strand.reset(); // a strand object must not outlive its context
                        ctx.reset();
                        if (cv)
                            BOOST_TEST(cv->cancel() == 0u); // nothing left on its books
                        cv.reset();
                        BOOST_TEST(calls == 0);
                        BOOST_TEST(destroyed == 1);
                        BOOST_TEST(!lock.owns_lock());
                        if (holder.owns_lock())
                            holder.unlock();
                        BOOST_TEST(mutex->try_lock());
                        mutex->unlock();
                    }
}

#if defined(BOOST_ASIO_HAS_CO_AWAIT)
// `co_await (cv.async_wait(lock, pred, use_awaitable) || timer)` with a timer that has already
// expired and a predicate that stays false: the timer wins, and by the time the co_await returns
// the wait has ended and the lock is held again. For as_tuple too, and for the plain wait.
BOOST_AUTO_TEST_CASE(an_expired_timer_beats_a_predicate_wait_and_the_lock_is_held_again)
{
    using namespace asio::experimental::awaitable_operators;
    for (const int variant : {0, 1, 2})
        BOOST_TEST_CONTEXT("variant " << variant)
        {
            cv_fixture f;
            std::optional<std::size_t> winner;
            bool owned = false;
            int evaluations = 0;
            asio::co_spawn(
                f.ctx,
                [&]() -> asio::awaitable<void> {
                    lock_type lock = co_await f.mutex.async_scoped_lock(asio::use_awaitable);
                    asio::steady_timer timer(f.ctx, asio::steady_timer::time_point::min());
                    const auto pred = [&] {
                        ++evaluations;
                        return false;
                    };
                    if (variant == 0)
                        winner = (co_await (f.cv.async_wait(lock, pred, asio::use_awaitable) ||
                                            timer.async_wait(asio::use_awaitable)))
                                     .index();
                    else if (variant == 1)
                        winner =
                            (co_await (f.cv.async_wait(lock, pred, asio::as_tuple(asio::use_awaitable)) ||
                                       timer.async_wait(asio::as_tuple(asio::use_awaitable))))
                                .index();
                    else
                        winner = (co_await (f.cv.async_wait(lock, asio::use_awaitable) ||
                                            timer.async_wait(asio::use_awaitable)))
                                     .index();
                    owned = lock.owns_lock();
                },
                asio::detached);
            drain(f.ctx);
            BOOST_TEST_REQUIRE(winner.has_value());
            BOOST_TEST(*winner == 1u);
            BOOST_TEST(owned);
            BOOST_TEST(evaluations == (variant == 2 ? 0 : 1));
            BOOST_TEST(f.cv.cancel() == 0u);
            BOOST_TEST(f.mutex.try_lock());
        }
}

// A first predicate that throws inside `&&` (which ends at the first failure; `||` waits for a
// success, so a failing branch does not end it): the exception reaches the co_await, the lock held.
BOOST_AUTO_TEST_CASE(a_throwing_first_predicate_inside_an_awaitable_operator)
{
    using namespace asio::experimental::awaitable_operators;
    cv_fixture f;
    int caught = 0;
    bool owned = false;
    asio::co_spawn(
        f.ctx,
        [&]() -> asio::awaitable<void> {
            lock_type lock = co_await f.mutex.async_scoped_lock(asio::use_awaitable);
            asio::steady_timer timer(f.ctx, std::chrono::hours(1));
            try
            {
                co_await (
                    f.cv.async_wait(
                        lock, []() -> bool { throw std::runtime_error("predicate"); }, asio::use_awaitable) &&
                    timer.async_wait(asio::use_awaitable));
            }
            catch (const std::exception&)
            {
                // `&&` reports the predicate's exception and the cancelled timer's together, as
                // asio::multiple_exceptions (first: the predicate's).
                ++caught;
                owned = lock.owns_lock();
            }
        },
        asio::detached);
    BOOST_CHECK_NO_THROW(drain(f.ctx));
    BOOST_TEST(caught == 1);
    BOOST_TEST(owned);
    BOOST_TEST(f.mutex.try_lock());
}
#endif

// Every other token with a predicate wait of two rounds: use_future (the context run by another
// thread), deferred, bind_executor on a strand of a thread pool (every later evaluation and the
// handler run on the strand), bind_allocator (every allocation of the operation goes through it,
// and is given back).
BOOST_AUTO_TEST_CASE(predicate_wait_with_every_token)
{
    {
        asio::io_context ctx;
        auto guard = asio::make_work_guard(ctx);
        std::thread runner([&] { ctx.run(); });
        asio_sync::mutex mutex(ctx);
        condition_variable cv(ctx);
        std::atomic<bool> ready{false};
        lock_type lock;
        std::future<void> done = asio::post(ctx, asio::use_future([&] {
                                                lock = lock_type(mutex, std::try_to_lock);
                                                return cv.async_wait(
                                                    lock, [&] { return ready.load(); }, asio::use_future);
                                            }))
                                     .get();
        cv.notify_one(); // false: waits again
        mutex.async_scoped_lock([&](error_code, lock_type) {
            ready = true;
            cv.notify_one();
        });
        BOOST_CHECK_NO_THROW(await(std::move(done), "a use_future predicate wait"));
        std::promise<bool> owned;
        asio::post(ctx, [&] {
            owned.set_value(lock.owns_lock());
            lock.unlock();
        });
        BOOST_TEST(owned.get_future().get());
        guard.reset();
        runner.join();
    }
    {
        cv_fixture f;
        lock_type lock = f.lock();
        bool ready = false;
        int evaluations = 0;
        auto op = f.cv.async_wait(
            lock,
            [&] {
                ++evaluations;
                return ready;
            },
            asio::deferred);
        BOOST_TEST(evaluations == 0); // nothing happens before the deferred operation is launched
        BOOST_TEST(lock.owns_lock());
        auto [out, h] = make_record();
        std::move(op)(h);
        BOOST_TEST(evaluations == 1);
        f.cv.notify_one();
        drain(f.ctx);
        ready = true;
        f.cv.notify_one();
        drain(f.ctx);
        BOOST_TEST(out->calls == 1);
        BOOST_TEST(evaluations == 3);
        BOOST_TEST(lock.owns_lock());
    }
    {
        asio::thread_pool pool(2);
        asio_sync::mutex mutex(pool);
        condition_variable cv(pool);
        auto strand = asio::make_strand(pool);
        std::atomic<int> off_strand{0};
        std::atomic<int> evaluations{0};
        std::atomic<bool> ready{false};
        lock_type lock;
        std::promise<bool> result;
        std::promise<void> queued;
        asio::post(strand, [&] {
            lock = lock_type(mutex, std::try_to_lock);
            cv.async_wait(
                lock,
                [&] {
                    if (evaluations++ > 0)
                        off_strand += !strand.running_in_this_thread();
                    return ready.load();
                },
                asio::bind_executor(strand, [&](error_code ec) {
                    off_strand += !strand.running_in_this_thread();
                    result.set_value(!ec && lock.owns_lock());
                    lock.unlock();
                }));
            queued.set_value();
        });
        queued.get_future().get();
        for (int i = 0; i < 5; ++i)
            cv.notify_all();
        mutex.async_scoped_lock([&](error_code, lock_type) {
            ready = true;
            cv.notify_all();
        });
        BOOST_TEST(await(result.get_future(), "a predicate wait on a strand"));
        BOOST_TEST(off_strand.load() == 0);
        pool.join();
    }
    {
        cv_fixture f;
        asio_sync::test::allocation_counts counts;
        lock_type lock = f.lock();
        int evaluations = 0;
        auto [out, h] = make_record();
        f.cv.async_wait(
            lock, [&] { return ++evaluations == 3; },
            asio::bind_allocator(asio_sync::test::counting_allocator<void>(counts), h));
        for (int i = 0; i < 2; ++i)
        {
            f.cv.notify_one();
            drain(f.ctx);
        }
        BOOST_TEST(out->calls == 1);
        BOOST_TEST(counts.allocations.load() >= 1u);
        BOOST_TEST(counts.allocations.load() == counts.deallocations.load());
        BOOST_TEST_MESSAGE(
            "allocations through the handler's allocator over 3 rounds: " << counts.allocations.load());
    }
}

// No handler runs inside notify_one, notify_all, cancel, the destructor or a per-operation
// cancellation, for a plain and a predicate wait (queued, or between rounds for the predicate).
BOOST_AUTO_TEST_CASE(no_handler_runs_inside_any_call)
{
    for (int call = 0; call < 5; ++call)
        for (const bool with_predicate : {false, true})
        {
            cv_fixture f;
            auto cv = std::make_unique<condition_variable>(f.ctx);
            asio::cancellation_signal signal;
            lock_type lock = f.lock();
            auto [out, h] = make_record();
            int evaluations = 0;
            if (with_predicate)
                cv->async_wait(
                    lock, [&] { return ++evaluations == 3; }, asio::bind_cancellation_slot(signal.slot(), h));
            else
                cv->async_wait(lock, asio::bind_cancellation_slot(signal.slot(), h));
            if (with_predicate)
            {
                cv->notify_one(); // one round: false, waits again
                drain(f.ctx);
            }
            switch (call)
            {
            case 0:
                cv->notify_one();
                break;
            case 1:
                cv->notify_all();
                break;
            case 2:
                cv->cancel();
                break;
            case 3:
                cv.reset();
                break;
            default:
                signal.emit(asio::cancellation_type::total);
                break;
            }
            BOOST_TEST_CONTEXT("call " << call << (with_predicate ? ", predicate" : ", plain"))
            {
                BOOST_TEST(out->calls == 0);
                drain(f.ctx);
                BOOST_TEST(out->calls == 1);
            }
            if (cv)
                cv->cancel();
            drain(f.ctx);
        }
}

// With a shared_mutex in shared mode: many predicate waits on a thread pool, notify_all racing
// cancel(): every wait completes exactly once, holding its shared lock, and cancel() counted
// exactly the aborted ones.
BOOST_AUTO_TEST_CASE(shared_predicate_waits_notify_all_racing_cancel)
{
    constexpr int waits = 4;
    asio::thread_pool pool(2);
    asio_sync::shared_mutex mutex(pool);
    std::optional<condition_variable> cv;
    std::vector<std::shared_lock<asio_sync::shared_mutex>> locks(waits);
    std::atomic<bool> ready{false};
    seen s;
    std::atomic<int> completed{0};
    std::size_t counted = 0;
    long wrong = 0;
    race_calls(
        1500,
        [&] {
            cv.emplace(pool);
            ready = false;
            s.calls = 0;
            s.aborts = 0;
            s.successes = 0;
            s.owned = 0;
            completed = 0;
            std::promise<void> queued;
            asio::post(pool, [&] {
                for (std::size_t i = 0; i < std::size_t(waits); ++i)
                {
                    locks[i] = std::shared_lock<asio_sync::shared_mutex>(mutex, std::try_to_lock);
                    cv->async_wait(
                        locks[i], [&] { return ready.load(); },
                        [&, i](error_code ec) {
                            s.record(ec, locks[i].owns_lock());
                            if (locks[i].owns_lock())
                                locks[i].unlock();
                            ++completed;
                        });
                }
                queued.set_value();
            });
            queued.get_future().get();
        },
        [&] {
            ready = true;
            cv->notify_all();
        },
        [&] { counted = cv->cancel(); },
        [&] {
            // Each wait was either woken by notify_all (and its predicate holds) or aborted by cancel():
            // nothing is left waiting.
            const auto limit = std::chrono::steady_clock::now() + hang_limit;
            while (completed.load() < waits)
            {
                if (std::chrono::steady_clock::now() > limit)
                    hung("a shared predicate wait never completed");
                std::this_thread::yield();
            }
            wrong +=
                s.calls.load() != waits || std::size_t(s.aborts.load()) != counted || s.owned.load() != waits;
        });
    BOOST_TEST(wrong == 0);
    pool.join();
}

BOOST_AUTO_TEST_SUITE_END()
