// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

// The broadcast engine of manual_reset_event under the interleaving checker: every interleaving
// of its shared-memory steps, with waits, sets, resets and cancellations on separate threads.

#define BOOST_TEST_MODULE event_core
#include <boost/test/unit_test.hpp>

#include <asio_sync/detail/event_core.hpp>
#include <asio_sync/detail/waiter_list.hpp>

#include "support/dsched.hpp"

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace dsched = asio_sync::test::dsched;
using asio_sync::detail::semaphore_waiter;
using asio_sync::detail::waiter_list;
using asio_sync::detail::waiter_outcome;
using checked_core = asio_sync::detail::event_core<dsched::atomic, dsched::mutex>;

namespace {

// A waiter and what became of it.
struct waiter : semaphore_waiter
{
    semaphore_waiter* handle = nullptr; // what the cancellation handler holds
    int completions = 0;
    waiter_outcome result = waiter_outcome::pending;
};

// Scripted threads on one engine. After every step: no waiter completes twice. At the end:
// every waiter completed once, except one still queued while the event is clear; none is queued
// while the event is set (a lost wake-up).
class scripted : public dsched::scenario
{
public:
    using script = std::function<void(scripted&)>;

    scripted(bool initially_set, std::size_t waiters, std::vector<script> scripts)
        : core_(initially_set), waiters_(waiters), scripts_(std::move(scripts))
    {
    }

    std::vector<std::function<void()>> threads() override
    {
        std::vector<std::function<void()>> bodies;
        for (auto& s : scripts_)
            bodies.push_back([this, &s] { s(*this); });
        return bodies;
    }

    // What start_acquire does: the lock-free attempt, then the queue.
    void wait(std::size_t i)
    {
        waiter& x = waiters_[i];
        x.handle = &x;
        x.cancel_ref = &x.handle;
        if (core_.try_acquire(1, false))
            return complete(x, waiter_outcome::granted);
        const waiter_outcome decided = core_.enqueue(x, 1);
        if (decided != waiter_outcome::pending)
            complete(x, decided);
    }

    void set()
    {
        finish([&](waiter_list& done) { core_.set(done); });
    }
    void reset() { core_.reset(); }
    void cancel(std::size_t i)
    {
        finish([&](waiter_list& done) { core_.cancel(&waiters_[i].handle, waiter_outcome::aborted, done); });
    }

    void check_step() override
    {
        for (const waiter& x : waiters_)
            if (x.completions > 1)
                fail("a waiter completed twice");
    }

    void check_end() override
    {
        for (const waiter& x : waiters_)
        {
            if (x.completions == 1)
                continue;
            if (!x.queued.load())
                fail("a waiter neither completed nor queued");
            else if (core_.is_set())
                fail("a waiter is queued on a set event: lost wake-up");
        }
    }

    const waiter& w(std::size_t i) const { return waiters_[i]; }
    bool is_set() const { return core_.is_set(); }

private:
    template <class Step>
    void finish(Step step)
    {
        waiter_list done;
        step(done);
        while (semaphore_waiter* x = done.pop_front())
            complete(static_cast<waiter&>(*x), x->outcome);
    }

    void complete(waiter& x, waiter_outcome why)
    {
        ++x.completions;
        x.result = why;
    }

    checked_core core_;
    std::vector<waiter> waiters_;
    std::vector<script> scripts_;
};

dsched::exploration explore(bool initially_set, std::size_t waiters, std::vector<scripted::script> scripts)
{
    return dsched::explore([&] { return std::make_unique<scripted>(initially_set, waiters, scripts); });
}

void report(const char* name, const dsched::exploration& e)
{
    BOOST_TEST_MESSAGE(name << ": " << e.schedules << " schedules" << (e.complete ? ", all explored" : ""));
    BOOST_TEST(e.failure.empty(), name << ": " << e.failure);
    BOOST_TEST(e.complete);
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

BOOST_AUTO_TEST_CASE(reset_vs_wait_on_a_set_event)
{
    report("reset_vs_wait_on_a_set_event",
           explore(true, 1, {[](scripted& s) { s.wait(0); }, [](scripted& s) { s.reset(); }}));
}

BOOST_AUTO_TEST_SUITE_END()
