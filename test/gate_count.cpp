// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

// The gate's count and the event its closes wait on, under the interleaving checker: every
// interleaving of their shared-memory steps, with entries, leaves, closes and cancellations of
// closes on separate threads, glued together as basic_gate glues them.

#define BOOST_TEST_MODULE gate_count
#include <boost/test/unit_test.hpp>

#include <asio_sync/detail/event_core.hpp>
#include <asio_sync/detail/gate_count.hpp>
#include <asio_sync/detail/gate_stop.hpp>
#include <asio_sync/detail/waiter_list.hpp>

#include <boost/asio/cancellation_type.hpp>

#include "support/dsched_scripted.hpp"
#include "support/scripted_waiter.hpp"

#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

namespace dsched = asio_sync::test::dsched;
using asio_sync::detail::waiter_list;
using asio_sync::detail::waiter_outcome;
using asio_sync::test::dsched::report;
using checked_count = asio_sync::detail::gate_count<dsched::atomic>;
using checked_event = asio_sync::detail::event_core<dsched::atomic, dsched::mutex>;
using checked_stops = asio_sync::detail::gate_stop_list<dsched::atomic, dsched::mutex>;
using closer = asio_sync::test::scripted_waiter;

namespace {

// Scripted threads on one gate that starts with `guards` entries. After every step: no close
// completed twice, and a close that succeeded found the gate closed and empty. At the end: the
// gate was drained exactly once, every close completed once (granted, unless it was cancelled),
// and no entry succeeded once a close had started.
class scripted : public dsched::scripted_scenario<scripted>
{
public:
    scripted(std::size_t guards, std::size_t closers, std::vector<script> scripts)
        : scripted_scenario(std::move(scripts)), closers_(closers)
    {
        for (std::size_t i = 0; i < guards; ++i)
            count_.try_enter();
    }

    // What initiate_gate_close does: close the count, drain if nobody is in, then wait.
    void close(std::size_t i)
    {
        if (count_.close())
            drain();
        closing_ = true;
        closer& x = closers_[i];
        const waiter_outcome decided = asio_sync::test::start_wait(event_, x);
        if (decided != waiter_outcome::pending)
            complete(x, decided);
    }

    // What a guard's release does.
    void leave()
    {
        if (count_.leave())
            drain();
    }

    // An entry that leaves again at once if it got in.
    void enter_and_leave()
    {
        const bool closing = closing_;
        if (!count_.try_enter())
            return;
        if (closing)
            fail("an entry succeeded after a close started");
        leave();
    }

    void cancel(std::size_t i)
    {
        finish([&](waiter_list& done) { event_.cancel(&closers_[i].handle, waiter_outcome::aborted, done); });
    }

    void check_step() override
    {
        for (const closer& x : closers_)
            if (x.completions > 1)
                fail("a close completed twice");
    }

    void check_end() override
    {
        if (drains_ != 1)
            fail(drains_ == 0 ? "the gate was never drained" : "the gate was drained twice");
        if (count_.count() != 0 || !count_.is_closed())
            fail("the gate ended open or with guards");
        for (const closer& x : closers_)
        {
            if (x.completions != 1)
                fail(x.queued.load() ? "a close is queued on a drained gate: lost wake-up"
                                     : "a close neither completed nor queued");
            else if (x.result != waiter_outcome::granted && x.result != waiter_outcome::aborted)
                fail("a close completed with an unexpected outcome");
        }
    }

private:
    void drain()
    {
        ++drains_;
        finish([&](waiter_list& done) { event_.set(done); });
    }

    template <class Step>
    void finish(Step step)
    {
        asio_sync::test::finish(step, [this](closer& x, waiter_outcome why) { complete(x, why); });
    }

    void complete(closer& x, waiter_outcome why)
    {
        x.complete(why);
        if (why == waiter_outcome::granted && (count_.count() != 0 || !count_.is_closed()))
            fail("a close succeeded while a guard was alive");
    }

    checked_count count_;
    checked_event event_{false};
    std::vector<closer> closers_;
    bool closing_ = false; // a close has started (scheduler threads never run at once)
    int drains_ = 0;
};

dsched::exploration explore(std::size_t guards, std::size_t closers, std::vector<scripted::script> scripts)
{
    return dsched::explore([&] { return std::make_unique<scripted>(guards, closers, scripts); });
}

// Scripted threads on the stoppable guards of a gate, which starts with `guards` of them, and its
// stop request, which is basic_gate's own (detail::request_gate_stop), drain included. A guard
// installs its cancellation handler as soon as it is in, as a task on the stopping strand does.
// After every step: no guard signalled twice. At the end: a guard that got in and was still in
// when the request ended was signalled once (whenever it entered), a guard gone before the request
// started was not, no stoppable entry succeeded once the request had closed the gate, and the gate
// is closed, counts the guards still in (they leave after the checks) and was drained once if none
// is. An entry destroyed while the request emitted on it is a use-after-free that the sanitizer
// builds report.
class stop_scripted : public dsched::scripted_scenario<stop_scripted>
{
public:
    stop_scripted(std::size_t guards, std::vector<script> scripts)
        : scripted_scenario(std::move(scripts)), guards_(guards)
    {
        for (guard& g : guards_)
            enter(g);
    }

    ~stop_scripted() override
    {
        for (guard& g : guards_)
            if (g.entry)
                leave(g);
    }

    // basic_gate::request_stop: the function it calls.
    void request_stop()
    {
        stop_started_ = true;
        asio_sync::detail::request_gate_stop(count_, stops_, boost::asio::cancellation_type::terminal,
                                             [this] { ++drains_; });
        stop_ended_ = true;
    }

    // A guard that enters (try_enter_stoppable), then leaves if it got in.
    void enter_and_leave()
    {
        guard& g = guards_.emplace_back();
        const bool closed = count_.is_closed();
        if (!enter(g))
            return;
        if (closed)
            fail("a stoppable entry succeeded after the stop request closed the gate");
        leave(g);
    }

    // A guard that enters (try_enter_stoppable) and stays, if it got in.
    void enter_and_stay()
    {
        guard& g = guards_.emplace_back();
        const bool closed = count_.is_closed();
        if (enter(g) && closed)
            fail("a stoppable entry succeeded after the stop request closed the gate");
    }

    // What the release of guard i does.
    void leave(std::size_t i) { leave(guards_[i]); }

    void check_step() override
    {
        for (const guard& g : guards_)
            if (g.signalled > 1)
                fail("a guard was signalled twice");
    }

    void check_end() override
    {
        std::size_t still_in = 0;
        for (const guard& g : guards_)
        {
            still_in += g.entry != nullptr;
            const bool alive_through = g.entry ? stop_ended_ : g.alive_through;
            if (alive_through && g.signalled != 1)
                fail("a guard alive through the stop request was not signalled");
            if (g.left_before && g.signalled != 0)
                fail("a guard gone before the stop request was signalled");
        }
        if (count_.count() != still_in || !count_.is_closed())
            fail("the gate ended open or with a wrong count");
        if (drains_ != (still_in == 0 ? 1 : 0))
            fail("the gate was not drained exactly once when its last guard left");
    }

private:
    struct guard
    {
        checked_stops::entry_type* entry = nullptr;
        bool alive_through = false;
        bool left_before = false;
        int signalled = 0;
    };

    bool enter(guard& g)
    {
        g.entry = stops_.enter(count_);
        if (!g.entry)
            return false;
        // The handler takes a step of its own, as one that cancels an operation does: other threads
        // run in the middle of the emission.
        g.entry->signal.slot().assign([&g](boost::asio::cancellation_type) {
            ++g.signalled;
            dsched::scheduler::point();
        });
        return true;
    }

    void leave(guard& g)
    {
        g.alive_through = stop_ended_;
        stops_.leave(std::exchange(g.entry, nullptr));
        if (count_.leave())
            ++drains_;
        g.left_before = !stop_started_;
    }

    checked_count count_;
    checked_stops stops_;
    std::deque<guard> guards_; // stays put as it grows: the handlers refer to their guard
    // Scheduler threads never run at once: plain flags order the steps.
    bool stop_started_ = false;
    bool stop_ended_ = false;
    int drains_ = 0;
};

dsched::exploration explore_stop(std::size_t guards, std::vector<stop_scripted::script> scripts)
{
    return dsched::explore([&] { return std::make_unique<stop_scripted>(guards, scripts); });
}

} // namespace

BOOST_AUTO_TEST_SUITE(gate_count)

// The window of the issue: the last guard leaves while the close starts.
BOOST_AUTO_TEST_CASE(last_leave_vs_close)
{
    report("last_leave_vs_close",
           explore(1, 1, {[](scripted& s) { s.close(0); }, [](scripted& s) { s.leave(); }}));
}

BOOST_AUTO_TEST_CASE(last_leave_vs_two_closes)
{
    report("last_leave_vs_two_closes", explore(1, 2,
                                               {[](scripted& s) {
                                                    s.close(0);
                                                    s.close(1);
                                                },
                                                [](scripted& s) { s.leave(); }}));
}

// An entry racing the close: it gets in before the close and is waited for, or is refused.
BOOST_AUTO_TEST_CASE(entry_vs_close_vs_last_leave)
{
    report("entry_vs_close_vs_last_leave",
           explore(1, 1,
                   {[](scripted& s) { s.close(0); }, [](scripted& s) { s.enter_and_leave(); },
                    [](scripted& s) { s.leave(); }}));
}

BOOST_AUTO_TEST_CASE(close_of_an_empty_gate_vs_an_entry)
{
    report("close_of_an_empty_gate_vs_an_entry",
           explore(0, 1, {[](scripted& s) { s.close(0); }, [](scripted& s) { s.enter_and_leave(); }}));
}

// A cancellation racing the last leave: exactly one outcome, success or operation_aborted.
BOOST_AUTO_TEST_CASE(cancel_vs_last_leave)
{
    report("cancel_vs_last_leave", explore(1, 1,
                                           {[](scripted& s) {
                                                s.close(0);
                                                s.cancel(0);
                                            },
                                            [](scripted& s) { s.leave(); }}));
}

// A stoppable entry racing the stop request: it gets in before the request closes the gate and is
// signalled, unless it left before, or it is refused.
BOOST_AUTO_TEST_CASE(stoppable_entry_vs_stop_request)
{
    report("stoppable_entry_vs_stop_request", explore_stop(0, {[](stop_scripted& s) { s.enter_and_leave(); },
                                                               [](stop_scripted& s) { s.request_stop(); }}));
}

// A stoppable entry that stays, racing the stop request: it gets in before the request closes the
// gate and is signalled, or it is refused. An entry between the emission's snapshot and the close
// would be in and never signalled.
BOOST_AUTO_TEST_CASE(stoppable_entry_that_stays_vs_stop_request)
{
    report("stoppable_entry_that_stays_vs_stop_request",
           explore_stop(0, {[](stop_scripted& s) { s.enter_and_stay(); },
                            [](stop_scripted& s) { s.request_stop(); }}));
}

// A stoppable guard leaving while the request takes its snapshot and emits, beside one that stays:
// each signalled at most once. The request emits on the older guard first; the newer one leaves
// in the middle of that emission, and its entry must outlive the emission on it.
BOOST_AUTO_TEST_CASE(stoppable_leave_vs_stop_request)
{
    report("stoppable_leave_vs_stop_request", explore_stop(2, {[](stop_scripted& s) { s.leave(1); },
                                                               [](stop_scripted& s) { s.request_stop(); }}));
}

// Two stop requests: only the first emits.
BOOST_AUTO_TEST_CASE(two_stop_requests)
{
    report("two_stop_requests", explore_stop(1, {[](stop_scripted& s) { s.request_stop(); },
                                                 [](stop_scripted& s) { s.request_stop(); }}));
}

BOOST_AUTO_TEST_SUITE_END()
