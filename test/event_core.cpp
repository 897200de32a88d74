// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

// The broadcast engine of manual_reset_event under the interleaving checker: every interleaving
// of its shared-memory steps, with waits, sets, resets and cancellations on separate threads. The
// same engine queues condition_variable's waits, which notify_one grants one at a time (and its
// predicate waits, which queue again between rounds), and latch's, which the count_down that
// brings its count (latch_count) to zero sets.

#define BOOST_TEST_MODULE event_core
#include <boost/test/unit_test.hpp>

#include <asio_sync/detail/event_core.hpp>
#include <asio_sync/detail/latch_count.hpp>
#include <asio_sync/detail/waiter_list.hpp>

#include "support/dsched_scripted.hpp"
#include "support/scripted_waiter.hpp"

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace dsched = asio_sync::test::dsched;
using asio_sync::detail::waiter_list;
using asio_sync::detail::waiter_outcome;
using asio_sync::test::dsched::report;
using checked_core = asio_sync::detail::event_core<dsched::atomic, dsched::mutex>;
using waiter = asio_sync::test::scripted_waiter;

namespace {

// Scripted threads on one engine. After every step: no waiter completes twice. At the end:
// every waiter completed once, except one still queued while the event is clear; none is queued
// while the event is set (a lost wake-up); and once a condition variable's state was made ready
// and notified, a waiter still queued means another was granted (else the notification was lost);
// a latch's count lost no count_down, and reached zero in exactly one; a predicate wait that a
// cancellation reached after it started completed once, aborted; a condition wait whose deadline
// passed completed once; and every cancellation that reported success (cancel(), per operation, or
// every wait cancel_all() counted) ended one wait, aborted.
class scripted : public dsched::scripted_scenario<scripted>
{
public:
    scripted(bool initially_set, std::size_t waiters, std::vector<script> scripts,
             std::size_t latch_count = 0)
        : scripted_scenario(std::move(scripts)), core_(initially_set), is_latch_(latch_count != 0),
          latch_count_(latch_count), latch_left_(latch_count), waiters_(waiters), skipped_(waiters),
          started_(waiters), must_abort_(waiters), expired_(waiters)
    {
    }

    void wait(std::size_t i)
    {
        waiter& x = waiters_[i];
        const waiter_outcome decided = asio_sync::test::start_wait(core_, x);
        if (decided != waiter_outcome::pending)
            x.complete(decided);
    }

    // A condition variable's wait as basic_condition_variable::async_wait orders it: under the
    // caller's lock, the state is checked and the waiter queued before the lock is released.
    void wait_unless_ready(std::size_t i)
    {
        user_mutex_.lock();
        if (ready_)
            skipped_[i] = true;
        else
            wait(i);
        user_mutex_.unlock();
    }

    // The other side: the state changes under the lock, and a notify_one follows.
    void make_ready_and_notify_one()
    {
        user_mutex_.lock();
        ready_ = true;
        user_mutex_.unlock();
        notify_one();
    }

    void notify_one()
    {
        finish([&](waiter_list& done) { core_.grant_first(done); });
    }

    // A condition variable's wait with the predicate `ready_`, as predicate_wait_op runs it: it
    // queues under the caller's lock unless the state is ready, and each round that ends relocks
    // (here on the thread that ended it), evaluates the predicate unless a cancellation came, and
    // queues again or ends (see end_of_round).
    void predicate_wait(std::size_t i)
    {
        waiters_[i].repeats = true;
        wait_unless_ready(i);
        started_[i] = !skipped_[i];
    }

    // A per-operation cancellation of wait i, which it must end if the wait has started.
    void cancel_after_start(std::size_t i)
    {
        if (started_[i])
            must_abort_[i] = true;
        cancel(i);
    }

    // cancel(): it must end every predicate wait that has started and not completed yet.
    void cancel_all()
    {
        for (std::size_t i = 0; i < waiters_.size(); ++i)
            if (started_[i] && waiters_[i].completions == 0)
                must_abort_[i] = true;
        finish([&](waiter_list& done) {
            cancel_alls_counted_ += core_.abort_all(waiter_outcome::aborted, done);
        });
    }

    void set()
    {
        finish([&](waiter_list& done) { core_.set(done); });
    }
    void reset() { core_.reset(); }

    // basic_latch::count_down.
    void count_down(std::size_t n)
    {
        latch_left_ -= n;
        if (latch_count_.count_down(n))
        {
            ++latch_openings_;
            set();
        }
    }
    void cancel(std::size_t i)
    {
        finish([&](waiter_list& done) {
            cancelled_ += core_.cancel(&waiters_[i].handle, waiter_outcome::aborted, done);
        });
    }

    // A timed wait's timer expiring.
    void time_out(std::size_t i)
    {
        asio_sync::test::time_out(core_, waiters_[i], [](waiter& x, waiter_outcome why) { x.complete(why); });
    }

    // A timed condition wait's timer expiring (condition_timer), once the wait has queued: the
    // wait must end, whatever phase it is in.
    void expire(std::size_t i)
    {
        if (skipped_[i])
            return;
        expired_[i] = true;
        finish([&](waiter_list& done) { core_.expire(waiters_[i], done); });
    }

    void check_step() override
    {
        for (const waiter& x : waiters_)
            if (x.completions > 1)
                fail("a waiter completed twice");
    }

    void check_end() override
    {
        std::size_t aborted = 0;
        for (std::size_t i = 0; i < waiters_.size(); ++i)
        {
            const waiter& x = waiters_[i];
            if (must_abort_[i] && (x.completions != 1 || x.result != waiter_outcome::aborted))
                fail("a predicate wait outlived its cancellation");
            if (expired_[i] && x.completions != 1)
                fail("a condition wait outlived its deadline");
            aborted += x.result == waiter_outcome::aborted;
        }
        if (aborted != cancelled_ + cancel_alls_counted_)
            fail("the cancellations that reported success did not end as many waits");
        bool queued = false;
        bool granted = false;
        for (std::size_t i = 0; i < waiters_.size(); ++i)
        {
            const waiter& x = waiters_[i];
            queued = queued || (x.completions == 0 && x.queued.load());
            granted = granted || x.result == waiter_outcome::granted;
            if (x.completions == 1 || skipped_[i])
                continue;
            if (!x.queued.load())
                fail("a waiter neither completed nor queued");
            else if (core_.is_set())
                fail("a waiter is queued on a set event: lost wake-up");
        }
        if (ready_ && queued && !granted)
            fail("a waiter is queued after the notification, which woke nobody: lost wake-up");
        if (latch_openings_ > 1)
            fail("the latch's count reached zero twice");
        if (latch_count_.load() != latch_left_)
            fail("the latch's count lost a count_down");
        else if (is_latch_ && latch_left_ == 0 && latch_openings_ != 1)
            fail("the latch's count reached zero but no count_down opened it");
    }

    const waiter& w(std::size_t i) const { return waiters_[i]; }
    bool is_set() const { return core_.is_set(); }

private:
    template <class Step>
    void finish(Step step)
    {
        asio_sync::test::finish(step, [&](waiter& x, waiter_outcome why) {
            if (x.repeats && why == waiter_outcome::granted)
                end_of_round(x);
            else
                x.complete(why);
        });
    }

    // A predicate wait was notified: what its relock's completion does.
    void end_of_round(waiter& x)
    {
        user_mutex_.lock();
        const bool again = !core_.round_cancelled(x) && !ready_;
        const waiter_outcome ended = core_.end_round(x, again);
        user_mutex_.unlock();
        if (ended != waiter_outcome::pending)
            x.complete(ended);
    }

    checked_core core_;
    bool is_latch_;                                              // the scenario counts a latch down
    asio_sync::detail::latch_count<dsched::atomic> latch_count_; // a latch's count, over core_
    std::size_t latch_left_;   // what the count must be after the count_downs so far
    int latch_openings_ = 0;   // count_downs that reached zero
    dsched::mutex user_mutex_; // the caller's asio_sync::mutex
    bool ready_ = false;       // the condition variable's state, guarded by user_mutex_
    std::vector<waiter> waiters_;
    std::vector<bool> skipped_;           // waits that found the state ready and did not queue
    std::vector<bool> started_;           // predicate waits past their initiation
    std::vector<bool> must_abort_;        // predicate waits a cancellation reached after they started
    std::vector<bool> expired_;           // condition waits whose deadline passed
    std::size_t cancelled_ = 0;           // per-operation cancellations that reported success
    std::size_t cancel_alls_counted_ = 0; // what cancel_all() returned, in all
};

dsched::exploration explore(bool initially_set, std::size_t waiters, std::vector<scripted::script> scripts,
                            std::size_t latch_count = 0)
{
    return dsched::explore(
        [&] { return std::make_unique<scripted>(initially_set, waiters, scripts, latch_count); });
}

} // namespace

BOOST_AUTO_TEST_SUITE(event_core)

BOOST_AUTO_TEST_CASE(wait_vs_set)
{
    report("wait_vs_set", explore(false, 1, {[](scripted& s) { s.wait(0); }, [](scripted& s) { s.set(); }}));
}

// set racing reset, with a wait between them: the wait is either let through or queued on a
// clear event, never stranded on a set one.
BOOST_AUTO_TEST_CASE(set_racing_reset_and_a_wait)
{
    report("set_racing_reset_and_a_wait",
           explore(false, 1,
                   {[](scripted& s) { s.wait(0); }, [](scripted& s) { s.set(); },
                    [](scripted& s) { s.reset(); }}));
}

BOOST_AUTO_TEST_CASE(two_waits_vs_set_then_reset)
{
    report("two_waits_vs_set_then_reset",
           explore(false, 2,
                   {[](scripted& s) { s.wait(0); }, [](scripted& s) { s.wait(1); },
                    [](scripted& s) {
                        s.set();
                        s.reset();
                    }}));
}

// A cancellation racing the set: exactly one outcome, and the other waiter is let through.
BOOST_AUTO_TEST_CASE(cancel_vs_set)
{
    report("cancel_vs_set", explore(false, 2,
                                    {[](scripted& s) {
                                         s.wait(0);
                                         s.cancel(0);
                                     },
                                     [](scripted& s) { s.wait(1); }, [](scripted& s) { s.set(); }}));
}

// A deadline racing the set (a timed wait's timer expiring as the event is set): exactly one
// outcome, granted or timed out, and the other waiter is let through.
BOOST_AUTO_TEST_CASE(timeout_vs_set)
{
    report("timeout_vs_set", explore(false, 2,
                                     {[](scripted& s) { s.wait(0); }, [](scripted& s) { s.time_out(0); },
                                      [](scripted& s) { s.wait(1); }, [](scripted& s) { s.set(); }}));
}

BOOST_AUTO_TEST_CASE(reset_vs_wait_on_a_set_event)
{
    report("reset_vs_wait_on_a_set_event",
           explore(true, 1, {[](scripted& s) { s.wait(0); }, [](scripted& s) { s.reset(); }}));
}

// The lost-wake-up window of a condition variable: the notification may come between the
// waiter's unlock and its wait, but the waiter is queued before it unlocks.
BOOST_AUTO_TEST_CASE(notify_between_unlock_and_wait)
{
    report("notify_between_unlock_and_wait", explore(false, 1,
                                                     {[](scripted& s) { s.wait_unless_ready(0); },
                                                      [](scripted& s) { s.make_ready_and_notify_one(); }}));
}

// notify_one racing the cancellation of the oldest waiter: the notification wakes it or, once it
// is cancelled, the next one; it is never swallowed.
BOOST_AUTO_TEST_CASE(notify_one_racing_a_cancellation)
{
    report("notify_one_racing_a_cancellation", explore(false, 2,
                                                       {[](scripted& s) {
                                                            s.wait_unless_ready(0);
                                                            s.cancel(0);
                                                        },
                                                        [](scripted& s) { s.wait_unless_ready(1); },
                                                        [](scripted& s) { s.make_ready_and_notify_one(); }}));
}

// A latch's window: the count_down that brings the count to zero races the last wait, which is
// either let through or queued and then completed, never stranded on an open latch; the two
// count_downs race each other, and exactly one of them opens the latch.
BOOST_AUTO_TEST_CASE(count_down_racing_the_last_waiter)
{
    report("count_down_racing_the_last_waiter",
           explore(false, 1,
                   {[](scripted& s) { s.wait(0); }, [](scripted& s) { s.count_down(1); },
                    [](scripted& s) { s.count_down(1); }},
                   2));
}

// The same with the waiter cancelled: it completes once, aborted or let through.
BOOST_AUTO_TEST_CASE(count_down_racing_a_cancellation)
{
    report("count_down_racing_a_cancellation",
           explore(false, 1,
                   {[](scripted& s) {
                        s.wait(0);
                        s.cancel(0);
                    },
                    [](scripted& s) { s.count_down(1); }, [](scripted& s) { s.count_down(1); }},
                   2));
}

// A predicate wait whose state is never ready, notified while a per-operation cancellation races:
// the cancellation finds it queued, relocking, or evaluating its predicate, and in every case ends
// it, once, aborted: none swallows it by queueing again.
BOOST_AUTO_TEST_CASE(predicate_wait_cancelled_in_any_phase)
{
    report("predicate_wait_cancelled_in_any_phase",
           explore(false, 1,
                   {[](scripted& s) { s.predicate_wait(0); }, [](scripted& s) { s.notify_one(); },
                    [](scripted& s) { s.cancel_after_start(0); }}));
}

// A per-operation cancellation racing the notification that makes the predicate true: the wait
// ends once, aborted (the cancellation reported success) or granted, never left queued.
BOOST_AUTO_TEST_CASE(predicate_wait_made_ready_vs_cancellation)
{
    report("predicate_wait_made_ready_vs_cancellation",
           explore(false, 1,
                   {[](scripted& s) { s.predicate_wait(0); },
                    [](scripted& s) { s.make_ready_and_notify_one(); }, [](scripted& s) { s.cancel(0); }}));
}

// Two predicate waits, the notify_one that makes their state ready, and a per-operation
// cancellation of the first. Whether the cancellation comes before the notification, while the
// first wait relocks, or after it ended, someone is woken: a notification the first wait took and
// did not use passes to the second (the end check fails on a waiter queued after a notification
// that woke nobody).
BOOST_AUTO_TEST_CASE(a_notification_taken_by_a_cancelled_predicate_wait_passes_on)
{
    report("a_notification_taken_by_a_cancelled_predicate_wait_passes_on",
           explore(false, 2,
                   {[](scripted& s) {
                        s.predicate_wait(0);
                        s.predicate_wait(1);
                    },
                    [](scripted& s) { s.make_ready_and_notify_one(); }, [](scripted& s) { s.cancel(0); }}));
}

// The same with cancel(): once the wait has started, cancel() counts it and ends it, in any phase.
BOOST_AUTO_TEST_CASE(predicate_wait_vs_notify_vs_cancel_all)
{
    report("predicate_wait_vs_notify_vs_cancel_all",
           explore(false, 1,
                   {[](scripted& s) { s.predicate_wait(0); }, [](scripted& s) { s.notify_one(); },
                    [](scripted& s) { s.cancel_all(); }}));
}

// A timed condition wait's deadline racing the notify_one that makes the state ready, with a
// second wait behind it: the first is woken or times out, once; if it times out before the
// notification, the notification wakes the second (the end check fails on a waiter queued after
// a notification that woke nobody).
BOOST_AUTO_TEST_CASE(condition_wait_expiry_vs_notify_one)
{
    report("condition_wait_expiry_vs_notify_one",
           explore(false, 2,
                   {[](scripted& s) {
                        s.wait_unless_ready(0);
                        s.expire(0);
                    },
                    [](scripted& s) { s.wait_unless_ready(1); },
                    [](scripted& s) { s.make_ready_and_notify_one(); }}));
}

// The same with a predicate wait first: the expiry finds it queued (it is taken out for one more
// evaluation), relocking after the notification (it evaluates once more and does not queue
// again), or ended. Either way it ends, and a notification it took is used by that evaluation,
// which sees the state ready: it is granted.
BOOST_AUTO_TEST_CASE(predicate_wait_expiry_vs_notify_one)
{
    report("predicate_wait_expiry_vs_notify_one",
           explore(false, 2,
                   {[](scripted& s) {
                        s.predicate_wait(0);
                        s.expire(0);
                    },
                    [](scripted& s) { s.wait_unless_ready(1); },
                    [](scripted& s) { s.make_ready_and_notify_one(); }}));
}

// A predicate wait whose state is never ready, notified while its deadline passes and a
// per-operation cancellation races: it ends once, timed out or aborted, and aborted if the
// cancellation reported that it reached it.
BOOST_AUTO_TEST_CASE(predicate_wait_expiry_vs_notify_vs_cancellation)
{
    report("predicate_wait_expiry_vs_notify_vs_cancellation",
           explore(false, 1,
                   {[](scripted& s) {
                        s.predicate_wait(0);
                        s.expire(0);
                    },
                    [](scripted& s) { s.notify_one(); }, [](scripted& s) { s.cancel(0); }}));
}

BOOST_AUTO_TEST_SUITE_END()
