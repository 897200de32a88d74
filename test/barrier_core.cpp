// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

// The engine of barrier under the interleaving checker: every interleaving of its shared-memory
// steps, with arrivals, drops and cancellations on separate threads. No arrival is lost or
// counted twice: a cancelled one is withdrawn from its phase, or was granted with it.

#define BOOST_TEST_MODULE barrier_core
#include <boost/test/unit_test.hpp>

#include <asio_sync/detail/barrier_core.hpp>
#include <asio_sync/detail/waiter_list.hpp>

#include "support/dsched.hpp"
#include "support/dsched_scripted.hpp"

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace dsched = asio_sync::test::dsched;
using asio_sync::detail::arrival;
using asio_sync::detail::semaphore_waiter;
using asio_sync::detail::waiter_list;
using asio_sync::detail::waiter_outcome;
using asio_sync::test::dsched::report;
using checked_core = asio_sync::detail::barrier_core<dsched::mutex>;

namespace {

// A waiting arrival and what became of it.
struct waiter : semaphore_waiter
{
    semaphore_waiter* handle = nullptr; // what the cancellation handler holds
    int completions = 0;
    waiter_outcome result = waiter_outcome::pending;
    std::size_t phase = 0;
};

// Scripted threads on one engine of `expected` participants. After every step: no waiter
// completes twice. At the end, the arrivals that count (granted, still queued, drops) are exactly
// the completed phases' and the current phase's, and each completed phase granted its waiters.
class scripted : public dsched::scripted_scenario<scripted>
{
public:
    scripted(std::size_t expected, std::size_t waiters, std::vector<script> scripts)
        : scripted_scenario(std::move(scripts)), core_(expected), expected_(expected), waiters_(waiters)
    {
    }

    // What start_barrier_arrival does, the completion function aside.
    void wait(std::size_t i)
    {
        waiter& x = waiters_[i];
        x.handle = &x;
        x.cancel_ref = &x.handle;
        waiter_list released;
        const arrival arrived = core_.arrive_and_wait(x, released);
        if (arrived == arrival::refused)
            return fail("an arrival was refused");
        if (arrived == arrival::completed_phase)
        {
            ++completed_phases_;
            complete(x, waiter_outcome::granted);
            finish(released);
        }
    }

    // What a coroutine's arrival does: the last one goes on without a waiter, any other waits.
    void await_arrival(std::size_t i)
    {
        waiter& x = waiters_[i];
        waiter_list released;
        std::size_t phase = 0;
        const arrival arrived = core_.try_arrive_last(phase, released);
        if (arrived == arrival::refused)
            return fail("an arrival was refused");
        if (arrived == arrival::would_wait)
            return wait(i);
        ++completed_phases_;
        x.missing = phase;
        complete(x, waiter_outcome::granted);
        finish(released);
    }

    void drop()
    {
        waiter_list released;
        const arrival arrived = core_.arrive_and_drop(released);
        if (arrived == arrival::refused)
            return fail("a drop was refused");
        ++drops_;
        if (arrived == arrival::completed_phase)
            ++completed_phases_;
        finish(released);
    }

    void cancel(std::size_t i)
    {
        waiter_list done;
        core_.cancel(&waiters_[i].handle, waiter_outcome::aborted, done);
        finish(done);
    }

    void check_step() override
    {
        for (const waiter& x : waiters_)
            if (x.completions > 1)
                fail("a waiter completed twice");
    }

    // The scenarios drop only in the first phase: it expects `expected_` arrivals, drops
    // included, and every later phase `expected_ - drops_`.
    void check_end() override
    {
        const std::size_t phase = core_.phase();
        std::size_t granted = 0;
        std::size_t queued = 0;
        std::vector<std::size_t> per_phase(phase, 0);
        for (const waiter& x : waiters_)
        {
            if (x.completions == 0 && x.queued.load())
                ++queued;
            else if (x.completions == 0)
                fail("a waiter neither completed nor queued");
            else if (x.result == waiter_outcome::granted && x.missing >= phase)
                fail("a waiter was granted with a phase that has not completed");
            else if (x.result == waiter_outcome::granted)
            {
                ++granted;
                ++per_phase[x.missing];
            }
        }
        if (phase != completed_phases_)
            fail("the phase number does not count the completed phases");
        for (std::size_t k = 0; k < phase; ++k)
            if (per_phase[k] != expected_ - (k == 0 ? drops_ : 0))
                fail("a completed phase did not grant each of its waiters once");
        const std::size_t in_current = core_.expected() - core_.missing();
        if (queued != in_current)
            fail("the queued arrivals are not the ones the current phase counts");
        const std::size_t counted = granted + queued + drops_;
        if (counted != phase * expected_ + in_current + (phase == 0 ? drops_ : 0))
            fail("an arrival was lost or counted twice");
    }

private:
    void finish(waiter_list& done)
    {
        while (semaphore_waiter* x = done.pop_front())
            complete(static_cast<waiter&>(*x), x->outcome);
    }

    void complete(waiter& x, waiter_outcome why)
    {
        ++x.completions;
        x.result = why;
    }

    checked_core core_;
    std::size_t expected_;
    std::size_t completed_phases_ = 0;
    std::size_t drops_ = 0;
    std::vector<waiter> waiters_;
};

dsched::exploration explore(std::size_t expected, std::size_t waiters, std::vector<scripted::script> scripts)
{
    return dsched::explore([&] { return std::make_unique<scripted>(expected, waiters, scripts); });
}

} // namespace

BOOST_AUTO_TEST_SUITE(barrier_core)

// Four arrivals of two phases of two, in any order: each phase grants two.
BOOST_AUTO_TEST_CASE(arrivals_of_two_phases)
{
    report("arrivals_of_two_phases",
           explore(2, 4,
                   {[](scripted& s) { s.wait(0); }, [](scripted& s) { s.wait(1); },
                    [](scripted& s) { s.wait(2); }, [](scripted& s) { s.wait(3); }}));
}

// A cancellation racing the last arrival: the cancelled arrival is withdrawn (and the other one
// waits alone) or the phase completed with it; never both, never neither.
BOOST_AUTO_TEST_CASE(cancel_vs_last_arrival)
{
    report("cancel_vs_last_arrival", explore(2, 2,
                                             {[](scripted& s) {
                                                  s.wait(0);
                                                  s.cancel(0);
                                              },
                                              [](scripted& s) { s.wait(1); }}));
}

BOOST_AUTO_TEST_CASE(cancel_vs_arrivals_of_three)
{
    report("cancel_vs_arrivals_of_three",
           explore(3, 3,
                   {[](scripted& s) {
                        s.wait(0);
                        s.cancel(0);
                    },
                    [](scripted& s) { s.wait(1); }, [](scripted& s) { s.wait(2); }}));
}

// Coroutine arrivals, which first ask whether they are the last, racing each other and a
// cancellation: whether an arrival goes on without waiting or waits, each phase counts it once.
BOOST_AUTO_TEST_CASE(awaited_arrivals_vs_cancel)
{
    report("awaited_arrivals_vs_cancel",
           explore(2, 3,
                   {[](scripted& s) {
                        s.wait(0);
                        s.cancel(0);
                    },
                    [](scripted& s) { s.await_arrival(1); }, [](scripted& s) { s.await_arrival(2); }}));
}

// A drop racing a cancellation: the drop completes the phase only if the cancelled arrival was
// still counted.
BOOST_AUTO_TEST_CASE(cancel_vs_drop)
{
    report("cancel_vs_drop", explore(2, 1,
                                     {[](scripted& s) {
                                          s.wait(0);
                                          s.cancel(0);
                                      },
                                      [](scripted& s) { s.drop(); }}));
}

BOOST_AUTO_TEST_SUITE_END()
