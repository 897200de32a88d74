// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#define BOOST_TEST_MODULE semaphore_core
#include <boost/test/unit_test.hpp>

#include <asio_sync/detail/access.hpp>
#include <asio_sync/detail/semaphore_core.hpp>

#include "support/dsched.hpp"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

// The exhaustive interleaving checker: the semaphore's algorithm, instantiated with the
// deterministic scheduler's atomic and mutex, run through every interleaving of small scenarios.
//
// The permits are accounted for as
//     counter + collected by queued waiters + held by the threads + held by permit objects
//         == permits that exist + debt
// where the threads' permits came from plain acquires (out of circulation), the permit objects'
// from permit acquires (in circulation), and the permits that exist are the initial ones plus
// those released without being held and those added, minus those forgotten (forget_permits,
// permit::forget) and reduced. After every step: the left side never exceeds the right (permits
// in transit are on neither side), no permit sits in the counter while a waiter is queued or a
// debt is open, no waiter is served while a debt is open, only the head of the queue holds
// collected permits, no try_acquire overtakes a queued waiter or an open debt, grants follow
// queue order, nobody completes twice, closed is never cleared, and on a bounded core neither the
// circulation (counter + collected + held by permit objects - debt) nor the circulation plus the
// room the core keeps for plain releases exceeds the bound. At the end: the accounting and the
// room are exact, no lost wake-up, every acquire completed once or still queued, refused releases
// changed nothing, plus each scenario's own expectations.

namespace dsched = asio_sync::test::dsched;
using asio_sync::detail::access;
using asio_sync::detail::semaphore_waiter;
using asio_sync::detail::waiter_list;
using asio_sync::detail::waiter_outcome;

namespace {

using checked_core = asio_sync::detail::semaphore_core<dsched::atomic, dsched::mutex>;

// The debt, the room a bounded core keeps for plain releases, and a check of the core's own
// bookkeeping (null when consistent): the debt and the word are private state of the real core,
// read through detail::access. The broken variants below provide the first two as members.
template <class Core>
struct probe
{
    static std::size_t debt(const Core& c) { return c.debt(); }
    static std::size_t room(const Core& c) { return c.room(); }
    static const char* inconsistency(const Core&) { return nullptr; }
};

template <>
struct probe<checked_core>
{
    static std::size_t debt(const checked_core& c) { return access::debt(c); }
    static std::size_t room(const checked_core& c) { return c.room(); }

    static const char* inconsistency(const checked_core& c)
    {
        const std::size_t state = access::state(c).load();
        const bool flagged = state & access::divert_flag<checked_core>();
        const bool diverting = c.waiting() != 0 || debt(c) != 0;
        if (diverting && !flagged)
            return "a waiter is queued or a debt is open, but divert_flag is clear";
        if (flagged && c.available() != 0)
            return "permits in the counter while divert_flag is set";
        // Under the mutex the queue may have just emptied or the debt been paid, the flag not yet
        // cleared.
        if (flagged && !diverting && !access::mutex(c).locked())
            return "divert_flag set with nothing to divert, outside the mutex";
        return nullptr;
    }
};

struct waiter : semaphore_waiter
{
    std::size_t n = 0;
    semaphore_waiter* handle = nullptr; // what a cancellation slot holds
    int completions = 0;
    bool pending = false; // queued, not yet completed
    long ticket = -1;     // queue position, in order of queueing; -1 while being queued
    waiter_outcome result = waiter_outcome::pending;
    std::size_t seen_collected = 0; // `collected` at the previous step

    bool granted() const { return completions == 1 && result == waiter_outcome::granted; }
};

struct config
{
    std::size_t initial = 0; // permits in the counter
    std::size_t waiters = 0;
    std::size_t held = 0;  // more permits the threads hold, from plain acquires
    std::size_t bound = 0; // 0: an unbounded core
};

// The harness: the operations a logical thread performs, with their bookkeeping and checks.
// Completions are collected from the core's `done` lists, where the Asio layer would post them.
template <class Core>
class harness : public dsched::scenario
{
public:
    explicit harness(const config& cfg)
        : core_(make_core(cfg)), total_(cfg.initial + cfg.held), held_(cfg.held), waiters_(cfg.waiters)
    {
    }

    waiter& w(std::size_t i) { return waiters_[i]; }
    Core& core() { return core_; }
    std::size_t held() const { return held_; }
    std::size_t permits() const { return permits_; }
    std::size_t debt() const { return probe<Core>::debt(core_); }
    std::size_t forgotten() const { return forgotten_; }
    std::size_t refused() const { return refused_; }

    // What basic_semaphore::async_acquire (to_permit: async_acquire_permit) does: the capacity
    // check, the lock-free attempt, then the slow path.
    void acquire(waiter& x, std::size_t n, bool to_permit = false)
    {
        x.n = n;
        x.to_permit = to_permit;
        x.handle = &x;
        x.cancel_ref = &x.handle;
        if (n > core_.capacity())
            return complete(x, waiter_outcome::too_many);
        if (attempt(n, to_permit))
            return complete(x, waiter_outcome::granted);
        const waiter_outcome decided = core_.enqueue(x, n);
        if (decided != waiter_outcome::pending)
            return complete(x, decided);
        x.pending = true;
        x.ticket = next_ticket_++;
    }

    void acquire_permit(waiter& x, std::size_t n) { acquire(x, n, true); }

    bool try_acquire(std::size_t n)
    {
        if (!attempt(n, false))
            return false;
        held_ += n;
        return true;
    }

    bool try_acquire_permit(std::size_t n)
    {
        if (!attempt(n, true))
            return false;
        permits_ += n;
        return true;
    }

    // A plain release of n permits the caller holds from a plain acquire.
    bool release(std::size_t n)
    {
        held_ -= n;
        const bool released = plain_release(n);
        if (!released)
            held_ += n;
        return released;
    }

    // A plain release of n permits nobody held: they come into existence.
    bool give(std::size_t n)
    {
        total_ += n;
        const bool released = plain_release(n);
        if (!released)
            total_ -= n;
        return released;
    }

    // Permit objects return n permits.
    void give_back(std::size_t n)
    {
        permits_ -= n;
        waiter_list done;
        core_.give_back(n, done);
        finish(done);
    }

    // permit::forget on n permits a permit object holds.
    void forget_permit(std::size_t n)
    {
        permits_ -= n;
        total_ -= n;
        core_.forget_permit(n);
    }

    bool add(std::size_t n)
    {
        total_ += n;
        waiter_list done;
        const bool added = core_.add(n, done);
        if (!added)
            total_ -= n;
        finish(done);
        return added;
    }

    std::size_t forget(std::size_t n)
    {
        const std::size_t taken = core_.forget(n);
        total_ -= taken;
        forgotten_ += taken;
        return taken;
    }

    void reduce(std::size_t n)
    {
        waiter_list done;
        core_.reduce(n, done);
        total_ -= n;
        finish(done);
    }

    // What a leased share does when it shrinks (redis/detail/share_engine.hpp): the head gives
    // back what it collected, up to the debt.
    std::size_t pay_debt_with_collected() { return core_.pay_debt_with_collected(); }

    // Per-operation cancellation: the slot holds the waiter until it leaves the queue.
    void cancel(waiter& x)
    {
        waiter_list done;
        core_.cancel(&x.handle, waiter_outcome::aborted, done);
        finish(done);
    }

    // What timed_acquire_op::expire does: the timer holds a pointer to its own operation, which
    // nobody clears, so only the core's check under its mutex tells a grant that came first.
    void time_out(waiter& x)
    {
        if (!x.queued.load())
            return;
        semaphore_waiter* self = &x;
        waiter_list done;
        core_.cancel(&self, waiter_outcome::timed_out, done);
        finish(done);
    }

    void cancel_all()
    {
        waiter_list done;
        core_.abort_all(waiter_outcome::aborted, false, done);
        finish(done);
    }

    void close()
    {
        waiter_list done;
        core_.abort_all(waiter_outcome::closed, true, done);
        finish(done);
    }

    void check_step() override
    {
        const std::size_t debt = this->debt();
        const std::size_t available = core_.available();
        const tally t = count();
        if (core_.waiting() > 0 && available > 0)
            fail("permits in the counter while a waiter is queued");
        if (debt > 0 && available > 0)
            fail("permits in the counter while a debt is open");
        if (core_.waiting() != t.queued)
            fail("waiting() disagrees with the queued waiters");
        if (t.behind_head_collected)
            fail("a waiter behind the head holds collected permits");
        if (available + t.collected + t.granted + held_ + permits_ > total_ + debt)
            fail("more permits held than exist");
        for (waiter& x : waiters_)
        {
            if (x.collected > x.seen_collected && debt > 0)
                fail("a waiter was served while a debt is open");
            x.seen_collected = x.collected;
        }
        if (core_.bounded())
        {
            const std::size_t bound = core_.capacity();
            // Circulation + debt; permit returns in transit are left out, which only lowers it.
            const std::size_t in = available + t.collected + t.granted_to_permits + permits_;
            if (in > bound + debt)
                fail("the circulation exceeds the bound");
            else if (in + probe<Core>::room(core_) > bound + debt)
                fail("the room for plain releases is overstated");
            if (t.largest_queued > bound)
                fail("a queued waiter asks for more than the capacity");
        }
        if (closed_ && !core_.is_closed())
            fail("closed was cleared (tokio-rs/tokio#8020)");
        closed_ = core_.is_closed();
        if (last_debt_ != 0 && debt == 0)
            ++debts_settled_;
        last_debt_ = debt;
        if (const char* what = probe<Core>::inconsistency(core_))
            fail(what);
    }

    void check_end() override
    {
        std::size_t pending = 0;
        for (const waiter& x : waiters_)
        {
            if (x.pending)
            {
                ++pending;
                if (x.completions != 0)
                    fail("a queued waiter has completed");
                if (!x.queued.load())
                    fail("a waiter left the queue without completing");
            }
            else if (x.n != 0 && x.completions != 1)
                fail("an acquire neither completed nor queued");
        }
        const std::size_t debt = this->debt();
        const tally t = count();
        const std::size_t available = core_.available();
        if (available + t.collected + held_ + permits_ != total_ + debt)
            fail("permits not conserved: available " + std::to_string(available) + " + collected " +
                 std::to_string(t.collected) + " + held " + std::to_string(held_) + " + permit objects " +
                 std::to_string(permits_) + " != " + std::to_string(total_) + " + debt " +
                 std::to_string(debt));
        if (core_.waiting() != pending)
            fail("waiting() disagrees with the queued waiters");
        for (const waiter& x : waiters_)
            if (x.pending && x.collected + x.missing != x.n)
                fail("a queued waiter's collected and missing permits do not make its request");
        if (pending > 0 && available > 0)
            fail("lost wake-up: a waiter is queued while permits sit in the counter");
        if (debt > 0 && available > 0)
            fail("permits in the counter while a debt is open");
        if (core_.is_closed() && pending > 0)
            fail("a waiter is queued on a closed semaphore");
        if (core_.bounded() &&
            available + t.collected + permits_ + probe<Core>::room(core_) != core_.capacity() + debt)
            fail("the room for plain releases is not exact at rest");
        if (const char* what = probe<Core>::inconsistency(core_))
            fail(what);
        expect_end();
    }

    // Each scenario's own expectations at quiescence.
    virtual void expect_end() {}

protected:
    // The state before the first step, once the scenario's setup has run.
    void baseline()
    {
        for (waiter& x : waiters_)
            x.seen_collected = x.collected;
        last_debt_ = debt();
        closed_ = core_.is_closed();
    }

private:
    struct tally
    {
        std::size_t collected = 0;          // by queued waiters
        std::size_t granted = 0;            // granted by the core, completion not yet delivered
        std::size_t granted_to_permits = 0; // the part of `granted` going to permit objects
        std::size_t queued = 0;
        std::size_t largest_queued = 0; // the largest request in the queue
        bool behind_head_collected = false;
    };

    static Core make_core(const config& cfg)
    {
        if (cfg.bound != 0)
            return Core(cfg.initial, cfg.bound);
        return Core(cfg.initial);
    }

    // A waiter the core has queued but whose enqueue has not returned yet is the newest.
    static long position(const waiter& x) { return x.ticket == -1 ? LONG_MAX : x.ticket; }

    tally count() const
    {
        tally t;
        long head = LONG_MAX;
        for (const waiter& x : waiters_)
            if (x.queued.load())
            {
                t.collected += x.collected;
                ++t.queued;
                t.largest_queued = std::max(t.largest_queued, x.n);
                head = std::min(head, position(x));
            }
            else if (x.pending && x.outcome == waiter_outcome::granted)
            {
                t.granted += x.n;
                if (x.to_permit)
                    t.granted_to_permits += x.n;
            }
        for (const waiter& x : waiters_)
            if (x.queued.load() && x.collected != 0 && position(x) != head)
                t.behind_head_collected = true;
        return t;
    }

    std::uint64_t queued_mask() const
    {
        std::uint64_t mask = 0;
        for (std::size_t i = 0; i < waiters_.size(); ++i)
            if (waiters_[i].queued.load())
                mask |= std::uint64_t(1) << i;
        return mask;
    }

    // The lock-free attempt. It must not succeed while a waiter that was queued before it began
    // is still queued, nor while a debt that was open before it began is still open.
    bool attempt(std::size_t n, bool to_permit)
    {
        const std::uint64_t queued_before = queued_mask();
        const bool in_debt = debt() != 0;
        const std::size_t settled = debts_settled_;
        if (!core_.try_acquire(n, to_permit))
            return false;
        if (queued_mask() & queued_before)
            fail("try_acquire took permits while a waiter was queued (barging)");
        if (in_debt && debt() != 0 && debts_settled_ == settled)
            fail("try_acquire took permits while a debt was open");
        return true;
    }

    bool plain_release(std::size_t n)
    {
        waiter_list done;
        const bool released = core_.release(n, done);
        if (!released)
        {
            ++refused_;
            if (!done.empty())
                fail("a refused release completed waiters");
        }
        finish(done);
        return released;
    }

    void finish(waiter_list& done)
    {
        while (semaphore_waiter* p = done.pop_front())
            complete(static_cast<waiter&>(*p), p->outcome);
    }

    void complete(waiter& x, waiter_outcome outcome)
    {
        x.handle = nullptr; // as the Asio layer clears the slot: a later cancel finds nothing
        if (++x.completions > 1)
            fail("a waiter completed twice");
        if (outcome == waiter_outcome::granted)
        {
            if (x.pending)
                for (const waiter& other : waiters_)
                    if (other.queued.load() && position(other) < x.ticket)
                        fail("grant out of FIFO order: an older waiter is still queued");
            (x.to_permit ? permits_ : held_) += x.n;
        }
        else if (x.pending && x.collected != 0)
        {
            // The core hands collected permits on before completing; nothing may remain here.
            fail("a waiter that was not granted still holds collected permits");
        }
        x.pending = false;
        x.result = outcome;
    }

    Core core_;
    std::size_t total_;       // permits that exist, net of the debt
    std::size_t held_;        // held by the threads, from plain acquires
    std::size_t permits_ = 0; // held by permit objects
    std::size_t forgotten_ = 0;
    std::size_t refused_ = 0; // plain releases that failed
    long next_ticket_ = 0;
    std::deque<waiter> waiters_;
    // History for the step checks.
    std::size_t last_debt_ = 0;
    std::size_t debts_settled_ = 0; // times the debt went back to 0
    bool closed_ = false;
};

// A scenario built from lambdas: an optional setup run before the threads start (no scheduling
// points, so it costs no interleavings), the threads, and the expectations at the end.
template <class Core>
class scripted : public harness<Core>
{
public:
    using step = std::function<void(harness<Core>&)>;

    scripted(const config& cfg, std::vector<step> bodies, step expect = {}, step setup = {})
        : harness<Core>(cfg), bodies_(std::move(bodies)), expect_(std::move(expect)), setup_(std::move(setup))
    {
    }

    std::vector<std::function<void()>> threads() override
    {
        if (setup_)
            setup_(*this);
        this->baseline();
        std::vector<std::function<void()>> result;
        result.reserve(bodies_.size());
        for (auto& body : bodies_)
            result.push_back([this, &body] { body(*this); });
        return result;
    }

    void expect_end() override
    {
        if (expect_)
            expect_(*this);
    }

private:
    std::vector<step> bodies_;
    step expect_;
    step setup_;
};

void report(const char* name, const dsched::exploration& e)
{
    BOOST_TEST_MESSAGE(name << ": " << e.schedules << " schedules, up to " << e.max_steps << " steps"
                            << (e.complete ? ", all explored" : ""));
    BOOST_TEST(e.failure.empty(), name << ": " << e.failure);
    BOOST_TEST(e.schedules > 1u);
}

template <class Core>
using bodies = std::vector<typename scripted<Core>::step>;

// ---- Scenarios, generic over the core so the broken variants below run the same ones. ----

template <class Core>
std::unique_ptr<scripted<Core>> acquire_vs_release_on_empty()
{
    using h = harness<Core>;
    return std::make_unique<scripted<Core>>(
        config{.waiters = 1}, bodies<Core>{[](h& s) { s.acquire(s.w(0), 1); }, [](h& s) { s.give(1); }},
        [](h& s) {
            if (!s.w(0).granted())
                s.fail("the acquire was not granted the released permit");
        });
}

template <class Core>
std::unique_ptr<scripted<Core>> two_acquirers_one_releaser()
{
    using h = harness<Core>;
    return std::make_unique<scripted<Core>>(config{.waiters = 2},
                                            bodies<Core>{[](h& s) { s.acquire(s.w(0), 1); },
                                                         [](h& s) { s.acquire(s.w(1), 1); },
                                                         [](h& s) { s.give(1); }},
                                            [](h& s) {
                                                if (s.w(0).granted() + s.w(1).granted() != 1)
                                                    s.fail("exactly one acquirer should hold the permit");
                                            });
}

template <class Core>
std::unique_ptr<scripted<Core>> batch_vs_singles()
{
    using h = harness<Core>;
    return std::make_unique<scripted<Core>>(config{.waiters = 3},
                                            bodies<Core>{[](h& s) { s.acquire(s.w(0), 2); },
                                                         [](h& s) {
                                                             s.acquire(s.w(1), 1);
                                                             s.acquire(s.w(2), 1);
                                                         },
                                                         [](h& s) { s.give(2); }});
}

template <class Core>
std::unique_ptr<scripted<Core>> cancel_vs_grant()
{
    using h = harness<Core>;
    return std::make_unique<scripted<Core>>(
        config{.waiters = 1},
        bodies<Core>{[](h& s) {
                         s.acquire(s.w(0), 1);
                         s.cancel(s.w(0));
                     },
                     [](h& s) { s.give(1); }},
        [](h& s) {
            const bool granted = s.w(0).granted();
            if (granted ? s.core().available() != 0 : s.core().available() != 1)
                s.fail("cancel racing a grant: the permit is neither held nor back in the counter");
        });
}

template <class Core>
std::unique_ptr<scripted<Core>> cancel_partial_head_vs_release()
{
    using h = harness<Core>;
    return std::make_unique<scripted<Core>>(
        config{.initial = 1, .waiters = 2},
        bodies<Core>{[](h& s) {
                         s.acquire(s.w(0), 3);
                         s.cancel(s.w(0));
                     },
                     [](h& s) { s.acquire(s.w(1), 1); }, [](h& s) { s.give(1); }},
        [](h& s) {
            // 2 permits exist; the head wanted 3 and was cancelled, so it cannot have been granted.
            if (s.w(0).result != waiter_outcome::aborted)
                s.fail("the cancelled head should have been aborted");
            if (!s.w(1).granted())
                s.fail("the waiter behind a cancelled head should have its permit");
        });
}

template <class Core>
std::unique_ptr<scripted<Core>> close_vs_acquire_vs_release()
{
    using h = harness<Core>;
    return std::make_unique<scripted<Core>>(config{.initial = 1, .waiters = 2},
                                            bodies<Core>{[](h& s) {
                                                             s.acquire(s.w(0), 2);
                                                             s.acquire(s.w(1), 1);
                                                         },
                                                         [](h& s) { s.close(); }, [](h& s) { s.give(1); }},
                                            [](h& s) {
                                                for (std::size_t i = 0; i < 2; ++i)
                                                    if (s.w(i).pending)
                                                        s.fail("a waiter is still queued after close()");
                                                if (!s.core().is_closed())
                                                    s.fail("not closed");
                                            });
}

template <class Core>
std::unique_ptr<scripted<Core>> try_acquire_vs_queued_waiter()
{
    using h = harness<Core>;
    return std::make_unique<scripted<Core>>(config{.waiters = 1},
                                            bodies<Core>{[](h& s) { s.acquire(s.w(0), 1); },
                                                         [](h& s) {
                                                             s.give(1);
                                                             if (s.try_acquire(1))
                                                                 s.release(1);
                                                         },
                                                         [](h& s) {
                                                             if (s.try_acquire(1))
                                                                 s.release(1);
                                                         }},
                                            [](h& s) {
                                                if (!s.w(0).granted())
                                                    s.fail("the acquire should end up with the permit");
                                            });
}

template <class Core>
std::unique_ptr<scripted<Core>> two_releases_fill_a_batch()
{
    using h = harness<Core>;
    return std::make_unique<scripted<Core>>(
        config{.waiters = 1},
        bodies<Core>{[](h& s) { s.acquire(s.w(0), 2); }, [](h& s) { s.give(1); }, [](h& s) { s.give(1); }},
        [](h& s) {
            if (!s.w(0).granted())
                s.fail("two releases of 1 should complete an acquire of 2");
        });
}

template <class Core>
std::unique_ptr<scripted<Core>> cancel_all_vs_enqueue_vs_release()
{
    using h = harness<Core>;
    return std::make_unique<scripted<Core>>(config{.initial = 1, .waiters = 2},
                                            bodies<Core>{[](h& s) { s.acquire(s.w(0), 2); },
                                                         [](h& s) { s.cancel_all(); },
                                                         [](h& s) {
                                                             s.give(1);
                                                             s.acquire(s.w(1), 1);
                                                         }});
}

// The shared mutex is a semaphore of max_readers permits (3 here): a writer takes all of them and
// downgrade() gives back all but one. A writer queued behind the downgrading holder must stay
// blocked until the last share is released; the conservation check catches any overlap.
template <class Core>
std::unique_ptr<scripted<Core>> downgrade_vs_queued_writer()
{
    using h = harness<Core>;
    return std::make_unique<scripted<Core>>(
        config{.waiters = 2, .held = 3},
        bodies<Core>{[](h& s) {
                         s.release(2); // downgrade
                         s.release(1); // unlock_shared
                     },
                     [](h& s) { s.acquire(s.w(0), 3); }, [](h& s) { s.acquire(s.w(1), 1); }},
        [](h& s) {
            // Whoever queued first holds the lock; the other waits behind or beside it.
            const bool writer = s.w(0).granted();
            const bool reader = s.w(1).granted();
            if (writer == reader)
                s.fail("exactly one of the writer and the reader should hold the lock at the end");
        });
}

// reduce_permits against a release and a queued acquire: whenever the counter cannot cover the
// reduction, the first permit released pays the debt and only the second reaches the waiter.
template <class Core>
std::unique_ptr<scripted<Core>> reduce_vs_release_vs_queued_acquire()
{
    using h = harness<Core>;
    return std::make_unique<scripted<Core>>(config{.waiters = 1, .held = 2},
                                            bodies<Core>{[](h& s) { s.reduce(1); },
                                                         [](h& s) { s.acquire(s.w(0), 1); },
                                                         [](h& s) {
                                                             s.release(1);
                                                             s.release(1);
                                                         }},
                                            [](h& s) {
                                                if (!s.w(0).granted())
                                                    s.fail("the waiter should have the permit left "
                                                           "after the debt");
                                                if (s.debt() != 0 || s.core().available() != 0)
                                                    s.fail("the debt should be paid and nothing left over");
                                            });
}

// try_acquire never takes a permit while a debt is open (the step checks); in the end the two
// permits released pay the reduction of 2.
template <class Core>
std::unique_ptr<scripted<Core>> reduce_vs_try_acquire_vs_release()
{
    using h = harness<Core>;
    return std::make_unique<scripted<Core>>(config{.initial = 1, .held = 1},
                                            bodies<Core>{[](h& s) { s.reduce(2); },
                                                         [](h& s) {
                                                             if (s.try_acquire(1))
                                                                 s.release(1);
                                                         },
                                                         [](h& s) { s.release(1); }},
                                            [](h& s) {
                                                if (s.debt() != 0 || s.core().available() != 0)
                                                    s.fail("the debt should be paid and nothing left over");
                                            });
}

// forget_permits takes only what the counter holds, never what a queued waiter collected: the
// waiter is granted exactly when nothing was forgotten.
template <class Core>
std::unique_ptr<scripted<Core>> forget_vs_enqueue_vs_release()
{
    using h = harness<Core>;
    return std::make_unique<scripted<Core>>(
        config{.initial = 1, .waiters = 1},
        bodies<Core>{[](h& s) { s.forget(2); }, [](h& s) { s.acquire(s.w(0), 2); }, [](h& s) { s.give(1); }},
        [](h& s) {
            if (s.w(0).granted() != (s.forgotten() == 0))
                s.fail("the waiter should be granted exactly when nothing was forgotten");
        });
}

// A head that collected 1 of 2 and a debt of 1: add_permits pays the debt, the cancelled head's
// permit goes to the waiter behind (or pays the debt, if it comes first). The head can never be
// granted: the only permit added pays the debt.
template <class Core>
std::unique_ptr<scripted<Core>> add_vs_cancel_of_a_partial_head_in_debt()
{
    using h = harness<Core>;
    return std::make_unique<scripted<Core>>(
        config{.initial = 1, .waiters = 2},
        bodies<Core>{[](h& s) { s.cancel(s.w(0)); }, [](h& s) { s.add(1); },
                     [](h& s) { s.acquire(s.w(1), 1); }},
        [](h& s) {
            if (s.w(0).result != waiter_outcome::aborted)
                s.fail("the cancelled head should have been aborted");
            if (!s.w(1).granted())
                s.fail("the waiter behind should have the permit left after the debt");
            if (s.debt() != 0)
                s.fail("the debt should be paid");
        },
        [](h& s) {
            s.acquire(s.w(0), 2);
            s.reduce(1);
        });
}

// The set-up of the two scenarios below: the head has collected the 2 permits there were of the 4
// it asks for, and a reduction of 2 left a debt of 2.
template <class Core>
void head_with_2_of_4_in_a_debt_of_2(harness<Core>& s)
{
    s.acquire(s.w(0), 4);
    s.reduce(2);
}

// A leased share shrunk below what its head collected: the head (2 of 4 collected) pays the debt
// of 2 with them, racing a holder's release, its own cancellation and a newer acquire. Whatever
// the order, the debt is paid exactly once, the head is never granted (1 permit is left) and the
// newer acquire ends with that permit.
template <class Core>
std::unique_ptr<scripted<Core>> pay_debt_with_collected_vs_release_vs_cancel()
{
    using h = harness<Core>;
    return std::make_unique<scripted<Core>>(
        config{.initial = 2, .waiters = 2, .held = 1},
        bodies<Core>{[](h& s) {
                         s.pay_debt_with_collected();
                         s.cancel(s.w(0));
                     },
                     [](h& s) { s.release(1); }, [](h& s) { s.acquire(s.w(1), 1); }},
        [](h& s) {
            if (s.w(0).result != waiter_outcome::aborted)
                s.fail("the cancelled head should have been aborted");
            if (!s.w(1).granted())
                s.fail("the newer acquire should have the permit left after the debt");
            if (s.debt() != 0 || s.core().available() != 0)
                s.fail("the debt should be paid and nothing left over");
        },
        &head_with_2_of_4_in_a_debt_of_2<Core>);
}

// The same without the cancellation: the head stays queued, still owed what it gave back.
template <class Core>
std::unique_ptr<scripted<Core>> pay_debt_with_collected_vs_release_vs_acquire()
{
    using h = harness<Core>;
    return std::make_unique<scripted<Core>>(
        config{.initial = 2, .waiters = 2, .held = 1},
        bodies<Core>{[](h& s) { s.pay_debt_with_collected(); }, [](h& s) { s.release(1); },
                     [](h& s) { s.acquire(s.w(1), 1); }},
        [](h& s) {
            if (!s.w(0).pending || s.w(0).collected != 1)
                s.fail("the head should wait with the one permit left after the debt");
            if (!s.w(1).pending)
                s.fail("the newer acquire should wait behind the head");
            if (s.debt() != 0)
                s.fail("the debt should be paid");
        },
        &head_with_2_of_4_in_a_debt_of_2<Core>);
}

// cancel() hands the aborted waiters' collected permits to the debt first, like any release.
template <class Core>
std::unique_ptr<scripted<Core>> cancel_all_vs_release_in_debt()
{
    using h = harness<Core>;
    return std::make_unique<scripted<Core>>(
        config{.initial = 1, .waiters = 1},
        bodies<Core>{[](h& s) { s.cancel_all(); }, [](h& s) { s.give(1); }, [](h& s) { s.try_acquire(1); }},
        [](h& s) {
            if (s.w(0).result != waiter_outcome::aborted)
                s.fail("the waiter should have been aborted");
            if (s.debt() != 0 || s.core().available() + s.held() != 1)
                s.fail("the debt should be paid and one permit left");
        },
        [](h& s) {
            s.acquire(s.w(0), 2);
            s.reduce(1);
        });
}

// A bounded semaphore at its bound, a permit object out: a plain acquire and release, the permit's
// return and a permit try_acquire of the whole capacity. The bound holds at every step, and the
// plain release after the plain acquire always fits.
template <class Core>
std::unique_ptr<scripted<Core>> bounded_acquire_release_vs_permit_return()
{
    using h = harness<Core>;
    return std::make_unique<scripted<Core>>(
        config{.initial = 2, .bound = 2},
        bodies<Core>{[](h& s) {
                         if (s.try_acquire(1) && !s.release(1))
                             s.fail("a plain release after a plain acquire did not fit");
                     },
                     [](h& s) { s.give_back(1); }, [](h& s) { s.try_acquire_permit(2); }},
        [](h& s) {
            if (s.core().available() + s.permits() != 2)
                s.fail("both permits should be in the counter or with a permit object");
        },
        [](h& s) { s.try_acquire_permit(1); });
}

// Two plain releases with room for one, while a permit object forgets its permit (which makes
// room for the other). Refused releases change nothing (the end checks are exact).
template <class Core>
std::unique_ptr<scripted<Core>> bounded_releases_vs_permit_forget()
{
    using h = harness<Core>;
    return std::make_unique<scripted<Core>>(
        config{.initial = 1, .bound = 2},
        bodies<Core>{[](h& s) { s.give(1); }, [](h& s) { s.give(1); }, [](h& s) { s.forget_permit(1); }},
        [](h& s) {
            if (s.refused() > 1 || s.core().available() != 2 - s.refused())
                s.fail("one release should always fit, both when the forget came first");
        },
        [](h& s) { s.try_acquire_permit(1); });
}

// add_permits and reduce_permits move the bound and the circulation together: the room for plain
// releases stays 1 throughout, so the plain release always fits, whatever the order.
template <class Core>
std::unique_ptr<scripted<Core>> bounded_capacity_changes_keep_the_room()
{
    using h = harness<Core>;
    return std::make_unique<scripted<Core>>(
        config{.initial = 1, .bound = 2},
        bodies<Core>{[](h& s) { s.add(1); }, [](h& s) { s.reduce(2); },
                     [](h& s) {
                         s.give_back(1);
                         if (!s.give(1))
                             s.fail("the plain release should fit");
                     }},
        [](h& s) {
            if (s.core().capacity() != 1 || s.core().available() != 1 || s.debt() != 0)
                s.fail("capacity 1, one permit in the counter, no debt");
        },
        [](h& s) { s.try_acquire_permit(1); });
}

// Permit objects holding the whole capacity return their permits one by one while a plain acquire
// waits and a reduction opens a debt: the first permit back pays the debt, the second reaches the
// waiter (or, if both come back before the reduction, the waiter has one and the reduction takes
// the other from the counter).
template <class Core>
std::unique_ptr<scripted<Core>> bounded_permit_returns_vs_reduce_vs_queued_acquire()
{
    using h = harness<Core>;
    return std::make_unique<scripted<Core>>(
        config{.initial = 2, .waiters = 1, .bound = 2},
        bodies<Core>{[](h& s) { s.reduce(1); }, [](h& s) { s.give_back(1); }, [](h& s) { s.give_back(1); }},
        [](h& s) {
            if (!s.w(0).granted())
                s.fail("the waiter should have the permit left after the debt");
            if (s.debt() != 0 || s.core().available() != 0 || s.core().capacity() != 1)
                s.fail("capacity 1, held by the waiter, no debt");
        },
        [](h& s) {
            s.try_acquire_permit(2);
            s.acquire(s.w(0), 1);
        });
}

// An acquire of 2 on a bounded semaphore of 2 racing a reduction to 1 and a plain release: it is
// granted if the release comes first and both permits reach it before the reduction, else it
// fails with too_many, whether the reduction comes before the capacity check, between it and the
// enqueue (the core checks again under its mutex) or while it waits (what it collected then pays
// the debt first). It never stays queued asking for more than the capacity.
template <class Core>
std::unique_ptr<scripted<Core>> bounded_reduce_vs_oversized_acquire()
{
    using h = harness<Core>;
    return std::make_unique<scripted<Core>>(
        config{.initial = 1, .waiters = 1, .bound = 2},
        bodies<Core>{[](h& s) { s.acquire(s.w(0), 2); }, [](h& s) { s.reduce(1); }, [](h& s) { s.give(1); }},
        [](h& s) {
            if (!s.w(0).granted() && s.w(0).result != waiter_outcome::too_many)
                s.fail("the acquire of 2 should be granted or fail with too_many");
        });
}

// An auto_reset_event with two waits queued: a semaphore bounded at 1 that holds nothing, two plain
// acquires of 1 queued.
template <class Core>
void two_waits_queued(harness<Core>& s)
{
    s.acquire(s.w(0), 1);
    s.acquire(s.w(1), 1);
}

// Two sets of that event (plain releases of permits nobody held) racing. Neither is refused: each
// hands its permit to a waiter, which takes it out of circulation again, and neither decides while
// the other's hand-off has yet to give that room back.
template <class Core>
std::unique_ptr<scripted<Core>> bounded_two_releases_vs_two_queued_acquires()
{
    using h = harness<Core>;
    return std::make_unique<scripted<Core>>(
        config{.waiters = 2, .bound = 1}, bodies<Core>{[](h& s) { s.give(1); }, [](h& s) { s.give(1); }},
        [](h& s) {
            if (s.refused() != 0)
                s.fail("a release was refused although a waiter was queued for it");
            if (!s.w(0).granted() || !s.w(1).granted())
                s.fail("each release should complete one waiter");
        },
        &two_waits_queued<Core>);
}

// The same while the first waiter is cancelled: a set is never refused, the second waiter gets one
// and a set the cancelled waiter did not take stays in the counter.
template <class Core>
std::unique_ptr<scripted<Core>> bounded_two_releases_vs_a_cancelled_queued_acquire()
{
    using h = harness<Core>;
    return std::make_unique<scripted<Core>>(
        config{.waiters = 2, .bound = 1},
        bodies<Core>{[](h& s) { s.give(1); }, [](h& s) { s.give(1); }, [](h& s) { s.cancel(s.w(0)); }},
        [](h& s) {
            if (s.refused() != 0 || !s.w(1).granted())
                s.fail("no release should be refused, and the second waiter should have a permit");
            if (s.core().available() != (s.w(0).granted() ? 0u : 1u))
                s.fail("the permit the cancelled waiter did not take should be in the counter");
        },
        &two_waits_queued<Core>);
}

// The same with a permit acquire queued first: the permit it receives stays in circulation, so of
// two releases racing exactly one fits, whichever comes first.
template <class Core>
std::unique_ptr<scripted<Core>> bounded_two_releases_vs_a_queued_permit_acquire()
{
    using h = harness<Core>;
    return std::make_unique<scripted<Core>>(
        config{.waiters = 1, .bound = 1}, bodies<Core>{[](h& s) { s.give(1); }, [](h& s) { s.give(1); }},
        [](h& s) {
            if (s.refused() != 1 || !s.w(0).granted())
                s.fail("one release should reach the permit acquire, the other be refused");
        },
        [](h& s) { s.acquire_permit(s.w(0), 1); });
}

// A plain acquire of 2 on a bounded semaphore of 2 with nothing in the counter, racing two plain
// releases of permits nobody held. A release that comes before the acquire drained the counter
// puts its permit there lock-free (the room and the counter in one step), and the acquire drains
// it; one that comes after finds the flag and hands its permit off under the mutex. Neither is
// refused, and the acquire gets both.
template <class Core>
std::unique_ptr<scripted<Core>> bounded_releases_vs_a_draining_acquire()
{
    using h = harness<Core>;
    return std::make_unique<scripted<Core>>(
        config{.waiters = 1, .bound = 2},
        bodies<Core>{[](h& s) { s.acquire(s.w(0), 2); }, [](h& s) { s.give(1); }, [](h& s) { s.give(1); }},
        [](h& s) {
            if (s.refused() != 0 || !s.w(0).granted() || s.core().available() != 0)
                s.fail("both releases should reach the acquire of 2");
        });
}

// One queued plain acquire on a semaphore bounded at 1 (an auto_reset_event with one wait), two
// plain releases, and a plain try_acquire + release pair. Whichever release serves the waiter,
// the waiter's permit leaves circulation under the mutex, so the other release fits: lock-free if
// the hand-off has cleared the flag, under the mutex if not. The try pair either finds that
// permit in the counter, and its release fits, or finds nothing.
template <class Core>
std::unique_ptr<scripted<Core>> bounded_releases_vs_hand_off_vs_try_pair()
{
    using h = harness<Core>;
    return std::make_unique<scripted<Core>>(
        config{.waiters = 1, .bound = 1},
        bodies<Core>{[](h& s) { s.give(1); }, [](h& s) { s.give(1); },
                     [](h& s) {
                         if (s.try_acquire(1) && !s.release(1))
                             s.fail("a plain release after a plain acquire did not fit");
                     }},
        [](h& s) {
            if (s.refused() != 0 || !s.w(0).granted() || s.core().available() != 1)
                s.fail("one release should serve the waiter, the other end in the counter");
        },
        [](h& s) { s.acquire(s.w(0), 1); });
}

// A permit object forgets its permit (raising the room, lock-free) while a plain release serves
// the only waiter and clears the flag: the step that publishes the surplus keeps the room the
// forget added, whichever comes first.
template <class Core>
std::unique_ptr<scripted<Core>> bounded_permit_forget_vs_hand_off()
{
    using h = harness<Core>;
    return std::make_unique<scripted<Core>>(
        config{.initial = 1, .waiters = 1, .bound = 2},
        bodies<Core>{[](h& s) { s.give(1); }, [](h& s) { s.forget_permit(1); }},
        [](h& s) {
            if (s.refused() != 0 || !s.w(0).granted())
                s.fail("the release should serve the waiter");
        },
        [](h& s) {
            s.try_acquire_permit(1);
            s.acquire(s.w(0), 1);
        });
}

// Time limits expiring as the permits arrive, on a bounded semaphore: a permit acquire of 2 that
// collected 1, a plain acquire of 1 behind it, a plain release of 1. Each timed waiter has exactly
// one outcome; a timed-out head's permit goes to the waiter behind (the step and end checks
// account for every permit and the room).
template <class Core>
std::unique_ptr<scripted<Core>> timeout_vs_grant()
{
    using h = harness<Core>;
    return std::make_unique<scripted<Core>>(
        config{.initial = 1, .waiters = 2, .bound = 2},
        bodies<Core>{[](h& s) { s.time_out(s.w(0)); }, [](h& s) { s.give(1); },
                     [](h& s) { s.time_out(s.w(1)); }},
        [](h& s) {
            for (std::size_t i = 0; i < 2; ++i)
                if (!s.w(i).granted() && s.w(i).result != waiter_outcome::timed_out)
                    s.fail("a timed waiter should be granted or time out");
            if (s.w(0).granted() && s.w(1).granted())
                s.fail("two permits cannot serve 3");
        },
        [](h& s) {
            s.acquire_permit(s.w(0), 2);
            s.acquire(s.w(1), 1);
        });
}

// None of forget_permits and reduce_permits re-opens a closed semaphore (tokio-rs/tokio#8020), and
// release still works after close. With one permit, the reduction may find the counter empty and
// open a debt, which close must keep and the release after it pays.
template <class Core>
std::unique_ptr<scripted<Core>> close_vs_forget_vs_reduce()
{
    using h = harness<Core>;
    return std::make_unique<scripted<Core>>(
        config{.initial = 1},
        bodies<Core>{[](h& s) {
                         s.close();
                         s.give(1);
                     },
                     [](h& s) { s.forget(1); }, [](h& s) { s.reduce(1); }},
        [](h& s) {
            if (!s.core().is_closed())
                s.fail("not closed");
            if (s.core().available() != 1 - s.forgotten() || s.debt() != 0)
                s.fail("the permit left, unless forgotten, and no debt");
        });
}

// Larger mixes for seeded random schedules: four threads, several operations each.
template <class Core>
std::unique_ptr<scripted<Core>> random_mix()
{
    using h = harness<Core>;
    return std::make_unique<scripted<Core>>(config{.initial = 2, .waiters = 6},
                                            bodies<Core>{[](h& s) {
                                                             s.acquire(s.w(0), 2);
                                                             s.acquire(s.w(1), 1);
                                                             s.cancel(s.w(1));
                                                         },
                                                         [](h& s) {
                                                             s.acquire(s.w(2), 3);
                                                             if (s.try_acquire(1))
                                                                 s.release(1);
                                                             s.cancel(s.w(2));
                                                         },
                                                         [](h& s) {
                                                             s.give(2);
                                                             s.acquire(s.w(3), 1);
                                                             s.give(1);
                                                         },
                                                         [](h& s) {
                                                             s.acquire(s.w(4), 1);
                                                             s.cancel_all();
                                                             s.acquire(s.w(5), 2);
                                                         }});
}

template <class Core>
std::unique_ptr<scripted<Core>> random_bounded_mix()
{
    using h = harness<Core>;
    return std::make_unique<scripted<Core>>(config{.initial = 2, .waiters = 6, .bound = 3},
                                            bodies<Core>{[](h& s) {
                                                             s.acquire_permit(s.w(0), 2);
                                                             if (s.try_acquire(1))
                                                                 s.release(1);
                                                             s.time_out(s.w(0));
                                                             if (s.w(0).granted())
                                                                 s.give_back(2);
                                                         },
                                                         [](h& s) {
                                                             s.reduce(1);
                                                             s.acquire(s.w(1), 1);
                                                             s.cancel(s.w(1));
                                                             s.add(1);
                                                         },
                                                         [](h& s) {
                                                             s.give(1);
                                                             s.acquire(s.w(2), 2);
                                                             s.forget(1);
                                                             s.time_out(s.w(2));
                                                         },
                                                         [](h& s) {
                                                             s.acquire_permit(s.w(3), 1);
                                                             s.acquire(s.w(4), 3);
                                                             if (s.w(3).granted())
                                                                 s.forget_permit(1);
                                                             s.cancel_all();
                                                             s.acquire(s.w(5), 1);
                                                         }});
}

// ---- Deliberately broken variants: the checker must catch each. ----

enum class bug
{
    separate_waiters_flag,       // the seeds' "has waiters" boolean beside the counter: lost wake-up
    leak_on_cancel,              // a cancelled waiter keeps what it collected
    add_then_serve,              // release adds to the counter, then serves waiters under the lock: barging
    serve_before_debt,           // permits flowing back serve the waiters first, the debt with what is left
    forget_drops_closed,         // forget_permits writes a word computed from the count alone: no closed flag
    timeout_trusts_waiter,       // cancel does not check that the waiter is still queued: a timeout racing a
                                 // grant completes it again and hands its permits on a second time
    room_read_then_written,      // release reads the room under the bound, then writes it back lowered
                                 // (not one atomic step): two releases both pass the check
    room_taken_before_the_mutex, // release takes its room lock-free, then hands its permits off under
                                 // the mutex: a second release in between finds the room the first
                                 // one's plain acquires have not given back yet (an auto_reset_event's
                                 // lost set)
};

// A semaphore with the same interface as semaphore_core, written the naive way, plus one bug. The
// word holds the permits and the closed flag; a separate flag says the permits are diverted (a
// waiter is queued or a debt is open); everything else is under the mutex.
template <bug Bug>
class broken_core
{
public:
    explicit broken_core(std::size_t initial) : broken_core(initial, checked_core::max_permits, false) {}
    broken_core(std::size_t initial, std::size_t bound) : broken_core(initial, bound, true) {}

    std::size_t available() const { return word_.load() >> 1; }
    std::size_t waiting() const { return waiting_; }
    bool is_closed() const { return word_.load() & closed; }
    bool bounded() const { return bounded_; }
    std::size_t capacity() const { return bound_; }
    std::size_t debt() const { return debt_; }
    std::size_t room() const { return room_.load(); }

    bool try_acquire(std::size_t n, bool to_permit = false)
    {
        if (Bug != bug::add_then_serve && diverting_.load())
            return false;
        std::size_t s = word_.load();
        while (!(s & closed) && (s >> 1) >= n)
            if (word_.compare_exchange_weak(s, s - (n << 1)))
            {
                if (bounded_ && !to_permit)
                    room_.fetch_add(n);
                return true;
            }
        return false;
    }

    waiter_outcome enqueue(semaphore_waiter& w, std::size_t n)
    {
        std::lock_guard<dsched::mutex> lock(mutex_);
        std::size_t s = word_.load();
        if (s & closed)
            return waiter_outcome::closed;
        if (n > bound_)
            return waiter_outcome::too_many;
        std::size_t drained = 0;
        if (!diverting_.load())
            for (;;)
            {
                if ((s >> 1) >= n)
                {
                    if (!word_.compare_exchange_weak(s, s - (n << 1)))
                        continue;
                    if (bounded_ && !w.to_permit)
                        room_.fetch_add(n);
                    return waiter_outcome::granted;
                }
                if (word_.compare_exchange_weak(s, 0))
                {
                    drained = s >> 1;
                    break;
                }
            }
        w.collected = drained;
        w.missing = n - drained;
        queue_.push_back(w);
        w.queued.store(true);
        ++waiting_;
        diverting_.store(true);
        return waiter_outcome::pending;
    }

    bool release(std::size_t n, waiter_list& done)
    {
        if (bounded_ && Bug == bug::room_read_then_written)
        {
            const std::size_t room = room_.load();
            if (room < n)
                return false;
            room_.store(room - n);
        }
        else if (bounded_ && Bug == bug::room_taken_before_the_mutex)
        {
            if (!take_room(n))
                return false;
        }
        else if (bounded_)
        {
            std::lock_guard<dsched::mutex> lock(mutex_);
            if (!take_room(n))
                return false;
            serve(n, done);
            return true;
        }
        deposit(n, done);
        return true;
    }

    void give_back(std::size_t n, waiter_list& done) { deposit(n, done); }

    void forget_permit(std::size_t n)
    {
        if (bounded_)
            room_.fetch_add(n);
    }

    bool add(std::size_t n, waiter_list& done)
    {
        std::lock_guard<dsched::mutex> lock(mutex_);
        if (bounded_)
            bound_ += n;
        serve(n, done);
        return true;
    }

    std::size_t forget(std::size_t n)
    {
        std::lock_guard<dsched::mutex> lock(mutex_);
        std::size_t s = word_.load();
        for (;;)
        {
            const std::size_t taken = (s >> 1) < n ? (s >> 1) : n;
            if (taken == 0)
                return 0;
            const std::size_t next =
                Bug == bug::forget_drops_closed ? ((s >> 1) - taken) << 1 : s - (taken << 1);
            if (!word_.compare_exchange_weak(s, next))
                continue;
            if (bounded_)
                bound_ -= taken;
            return taken;
        }
    }

    void reduce(std::size_t n, waiter_list& done)
    {
        std::lock_guard<dsched::mutex> lock(mutex_);
        if (n > bound_)
            throw std::invalid_argument("reduce exceeds the capacity");
        std::size_t s = word_.load();
        std::size_t taken;
        do
        {
            taken = (s >> 1) < n ? (s >> 1) : n;
        } while (!word_.compare_exchange_weak(s, s - (taken << 1)));
        debt_ += n - taken;
        if (debt_ != 0)
            diverting_.store(true);
        if (!bounded_)
            return;
        bound_ -= n;
        std::size_t returned = 0;
        for (semaphore_waiter* w = queue_.front(); w;)
        {
            semaphore_waiter* next = w->next;
            if (w->missing + w->collected > bound_)
            {
                returned += w->collected;
                unlink(*w, waiter_outcome::too_many, done);
            }
            w = next;
        }
        serve(returned, done);
    }

    bool cancel(semaphore_waiter* const* ref, waiter_outcome why, waiter_list& done)
    {
        std::lock_guard<dsched::mutex> lock(mutex_);
        semaphore_waiter* w = *ref;
        if (!w || (Bug != bug::timeout_trusts_waiter && !w->queued.load()))
            return false;
        const std::size_t collected = Bug == bug::leak_on_cancel ? 0 : w->collected;
        unlink(*w, why, done);
        serve(collected, done);
        return true;
    }

    std::size_t abort_all(waiter_outcome why, bool close, waiter_list& done)
    {
        std::lock_guard<dsched::mutex> lock(mutex_);
        std::size_t returned = 0;
        std::size_t count = 0;
        while (semaphore_waiter* w = queue_.front())
        {
            returned += w->collected;
            unlink(*w, why, done);
            ++count;
        }
        returned = pay_debt(returned);
        std::size_t s = word_.load();
        while (!word_.compare_exchange_weak(s, (s + (returned << 1)) | (close ? closed : 0)))
        {
        }
        diverting_.store(debt_ != 0);
        return count;
    }

private:
    static constexpr std::size_t closed = 1;

    broken_core(std::size_t initial, std::size_t bound, bool bounded)
        : word_(initial << 1), bound_(bound), bounded_(bounded), room_(bound - initial)
    {
    }

    bool take_room(std::size_t n)
    {
        std::size_t room = room_.load();
        do
        {
            if (room < n)
                return false;
        } while (!room_.compare_exchange_weak(room, room - n));
        return true;
    }

    void deposit(std::size_t n, waiter_list& done)
    {
        if (Bug == bug::separate_waiters_flag && !diverting_.load())
        {
            word_.fetch_add(n << 1);
            return;
        }
        if (Bug == bug::add_then_serve)
        {
            word_.fetch_add(n << 1);
            std::lock_guard<dsched::mutex> lock(mutex_);
            std::size_t s = word_.load();
            while (!word_.compare_exchange_weak(s, s & closed))
            {
            }
            serve(s >> 1, done);
            return;
        }
        std::lock_guard<dsched::mutex> lock(mutex_);
        serve(n, done);
    }

    std::size_t pay_debt(std::size_t n)
    {
        const std::size_t paid = n < debt_ ? n : debt_;
        debt_ -= paid;
        return n - paid;
    }

    // Under the mutex: the debt first, then the oldest waiters, then the counter.
    void serve(std::size_t n, waiter_list& done)
    {
        if (Bug != bug::serve_before_debt)
            n = pay_debt(n);
        while (n != 0 && queue_.front())
        {
            semaphore_waiter* head = queue_.front();
            const std::size_t take = n < head->missing ? n : head->missing;
            head->missing -= take;
            head->collected += take;
            n -= take;
            if (head->missing != 0)
                break;
            unlink(*head, waiter_outcome::granted, done);
        }
        if (Bug == bug::serve_before_debt)
            n = pay_debt(n);
        if (queue_.empty() && debt_ == 0)
            diverting_.store(false);
        if (n != 0)
            word_.fetch_add(n << 1);
    }

    void unlink(semaphore_waiter& w, waiter_outcome why, waiter_list& done)
    {
        if (w.queued.load()) // not so after a grant, for timeout_trusts_waiter
        {
            queue_.erase(w);
            w.queued.store(false);
            --waiting_;
        }
        if (w.cancel_ref)
            *w.cancel_ref = nullptr;
        w.outcome = why;
        if (why != waiter_outcome::granted)
            w.collected = 0;
        else if (bounded_ && !w.to_permit)
            room_.fetch_add(w.collected);
        done.push_back(w);
    }

    dsched::atomic<std::size_t> word_; // permits << 1 | closed
    dsched::atomic<bool> diverting_{false};
    std::size_t bound_;
    const bool bounded_;
    dsched::atomic<std::size_t> room_;
    dsched::mutex mutex_;
    waiter_list queue_;
    std::size_t waiting_ = 0;
    std::size_t debt_ = 0;
};

// Sanitizer builds run each scenario on a bounded prefix of its schedules: they look for memory
// errors, which do not need every interleaving; the plain builds explore them all.
#if defined(__SANITIZE_ADDRESS__)
constexpr std::size_t schedule_limit = 100000;
#elif defined(__has_feature)
constexpr std::size_t schedule_limit = __has_feature(address_sanitizer) ? 100000 : 0;
#else
constexpr std::size_t schedule_limit = 0;
#endif

template <class Core>
dsched::exploration run(std::unique_ptr<scripted<Core>> (*make)())
{
    return schedule_limit ? dsched::explore([make] { return make(); }, schedule_limit)
                          : dsched::explore([make] { return make(); });
}

// Runs a scenario against a broken variant; the checker must report a failure.
template <bug Bug>
void expect_caught(const char* name, std::unique_ptr<scripted<broken_core<Bug>>> (*make)())
{
    const auto e = run<broken_core<Bug>>(make);
    BOOST_TEST_MESSAGE(name << ": " << e.failure);
    BOOST_TEST(!e.failure.empty(), name << " went unnoticed");
}

// Runs a scenario that does not exercise a broken variant's bug; every schedule must pass.
template <bug Bug>
void expect_pass(const char* name, std::unique_ptr<scripted<broken_core<Bug>>> (*make)())
{
    const auto e = run<broken_core<Bug>>(make);
    report(name, e);
    BOOST_TEST((e.complete || schedule_limit != 0));
}

} // namespace

BOOST_AUTO_TEST_SUITE(semaphore_core)

#define ASIO_SYNC_EXHAUSTIVE(name)                                                                           \
    BOOST_AUTO_TEST_CASE(name)                                                                               \
    {                                                                                                        \
        const auto e = run<checked_core>(&::name<checked_core>);                                             \
        report(#name, e);                                                                                    \
        BOOST_TEST((e.complete || schedule_limit != 0));                                                     \
    }

ASIO_SYNC_EXHAUSTIVE(acquire_vs_release_on_empty)
ASIO_SYNC_EXHAUSTIVE(two_acquirers_one_releaser)
ASIO_SYNC_EXHAUSTIVE(batch_vs_singles)
ASIO_SYNC_EXHAUSTIVE(cancel_vs_grant)
ASIO_SYNC_EXHAUSTIVE(cancel_partial_head_vs_release)
ASIO_SYNC_EXHAUSTIVE(close_vs_acquire_vs_release)
ASIO_SYNC_EXHAUSTIVE(try_acquire_vs_queued_waiter)
ASIO_SYNC_EXHAUSTIVE(two_releases_fill_a_batch)
ASIO_SYNC_EXHAUSTIVE(cancel_all_vs_enqueue_vs_release)
ASIO_SYNC_EXHAUSTIVE(downgrade_vs_queued_writer)
ASIO_SYNC_EXHAUSTIVE(reduce_vs_release_vs_queued_acquire)
ASIO_SYNC_EXHAUSTIVE(reduce_vs_try_acquire_vs_release)
ASIO_SYNC_EXHAUSTIVE(forget_vs_enqueue_vs_release)
ASIO_SYNC_EXHAUSTIVE(add_vs_cancel_of_a_partial_head_in_debt)
ASIO_SYNC_EXHAUSTIVE(cancel_all_vs_release_in_debt)
ASIO_SYNC_EXHAUSTIVE(pay_debt_with_collected_vs_release_vs_cancel)
ASIO_SYNC_EXHAUSTIVE(pay_debt_with_collected_vs_release_vs_acquire)
ASIO_SYNC_EXHAUSTIVE(bounded_acquire_release_vs_permit_return)
ASIO_SYNC_EXHAUSTIVE(bounded_releases_vs_permit_forget)
ASIO_SYNC_EXHAUSTIVE(bounded_capacity_changes_keep_the_room)
ASIO_SYNC_EXHAUSTIVE(bounded_permit_returns_vs_reduce_vs_queued_acquire)
ASIO_SYNC_EXHAUSTIVE(bounded_reduce_vs_oversized_acquire)
ASIO_SYNC_EXHAUSTIVE(bounded_two_releases_vs_two_queued_acquires)
ASIO_SYNC_EXHAUSTIVE(bounded_two_releases_vs_a_cancelled_queued_acquire)
ASIO_SYNC_EXHAUSTIVE(bounded_two_releases_vs_a_queued_permit_acquire)
ASIO_SYNC_EXHAUSTIVE(bounded_releases_vs_a_draining_acquire)
ASIO_SYNC_EXHAUSTIVE(bounded_releases_vs_hand_off_vs_try_pair)
ASIO_SYNC_EXHAUSTIVE(bounded_permit_forget_vs_hand_off)
ASIO_SYNC_EXHAUSTIVE(timeout_vs_grant)
ASIO_SYNC_EXHAUSTIVE(close_vs_forget_vs_reduce)

BOOST_AUTO_TEST_CASE(random_schedules_of_a_larger_mix)
{
    const auto e = dsched::explore_random([] { return random_mix<checked_core>(); }, 20000, 20261122);
    report("random_mix", e);
}

BOOST_AUTO_TEST_CASE(random_schedules_of_a_larger_bounded_mix)
{
    const auto e = dsched::explore_random([] { return random_bounded_mix<checked_core>(); }, 20000, 20261123);
    report("random_bounded_mix", e);
}

// A mutex that counts how often it is taken, for the claims of the lock-free paths.
class counting_mutex
{
public:
    void lock()
    {
        mutex_.lock();
        ++locks_;
    }
    void unlock() { mutex_.unlock(); }
    std::size_t locks() const { return locks_; }

private:
    std::mutex mutex_;
    std::size_t locks_ = 0;
};

// A bounded core's plain try_acquire and release are each one CAS while nothing is diverted: the
// mutex is taken only by a release that finds someone queued, or that is refused.
BOOST_AUTO_TEST_CASE(bounded_plain_acquire_and_release_take_no_lock_while_nothing_is_diverted)
{
    using core_type = asio_sync::detail::semaphore_core<std::atomic, counting_mutex>;
    core_type core(1, 2);
    const counting_mutex& mutex = access::mutex(core);
    waiter_list done;
    BOOST_TEST(core.try_acquire(1));
    BOOST_TEST(core.release(1, done));
    BOOST_TEST(core.release(1, done)); // a permit nobody held: room for it
    BOOST_TEST(core.try_acquire(2));
    BOOST_TEST(core.release(2, done));
    BOOST_TEST(mutex.locks() == 0u);
    BOOST_TEST((core.available() == 2 && core.room() == 0));

    BOOST_TEST(!core.release(1, done)); // refused: decided under the mutex
    BOOST_TEST(mutex.locks() == 1u);

    BOOST_TEST(core.try_acquire(2));
    semaphore_waiter w;
    BOOST_TEST((core.enqueue(w, 1) == waiter_outcome::pending));
    BOOST_TEST(mutex.locks() == 2u);
    BOOST_TEST(core.release(1, done)); // the waiter is served under the mutex
    BOOST_TEST(mutex.locks() == 3u);
    BOOST_TEST((done.pop_front() == &w && w.outcome == waiter_outcome::granted));
    BOOST_TEST(core.release(1, done)); // the queue is empty again: lock-free
    BOOST_TEST(mutex.locks() == 3u);
    BOOST_TEST((core.available() == 1 && core.room() == 1));
}

// The checker must be able to fail: each broken variant is caught by the scenario that targets it.
BOOST_AUTO_TEST_CASE(checker_catches_the_lost_wake_up_of_a_separate_waiters_flag)
{
    expect_caught("separate waiters flag",
                  &::acquire_vs_release_on_empty<broken_core<bug::separate_waiters_flag>>);
}

BOOST_AUTO_TEST_CASE(checker_catches_permits_leaked_by_a_cancelled_waiter)
{
    expect_caught("leak on cancel", &::cancel_partial_head_vs_release<broken_core<bug::leak_on_cancel>>);
}

BOOST_AUTO_TEST_CASE(checker_catches_barging_past_a_queued_waiter)
{
    expect_caught("add then serve", &::try_acquire_vs_queued_waiter<broken_core<bug::add_then_serve>>);
}

BOOST_AUTO_TEST_CASE(checker_catches_waiters_served_before_the_debt)
{
    expect_caught("serve before debt",
                  &::reduce_vs_release_vs_queued_acquire<broken_core<bug::serve_before_debt>>);
    expect_caught("serve before debt, add_permits",
                  &::add_vs_cancel_of_a_partial_head_in_debt<broken_core<bug::serve_before_debt>>);
    expect_caught("serve before debt, permit returns",
                  &::bounded_permit_returns_vs_reduce_vs_queued_acquire<broken_core<bug::serve_before_debt>>);
}

BOOST_AUTO_TEST_CASE(checker_catches_forget_permits_reopening_a_closed_semaphore)
{
    expect_caught("forget drops closed", &::close_vs_forget_vs_reduce<broken_core<bug::forget_drops_closed>>);
}

BOOST_AUTO_TEST_CASE(checker_catches_a_timeout_completing_a_granted_waiter)
{
    expect_caught("timeout trusts waiter", &::timeout_vs_grant<broken_core<bug::timeout_trusts_waiter>>);
}

BOOST_AUTO_TEST_CASE(checker_catches_plain_releases_passing_the_bound_together)
{
    expect_caught("room read then written",
                  &::bounded_releases_vs_permit_forget<broken_core<bug::room_read_then_written>>);
}

BOOST_AUTO_TEST_CASE(checker_catches_a_release_refused_during_another_ones_hand_off)
{
    expect_caught(
        "room taken before the mutex",
        &::bounded_two_releases_vs_two_queued_acquires<broken_core<bug::room_taken_before_the_mutex>>);
}

// The broken variants are otherwise sound: without its bug the naive design passes a scenario
// that does not exercise it, so each failure above is the bug's and not the harness's.
BOOST_AUTO_TEST_CASE(broken_variants_pass_where_their_bug_is_not_exercised)
{
    expect_pass("leak_on_cancel, no cancel", &::two_releases_fill_a_batch<broken_core<bug::leak_on_cancel>>);
    expect_pass("serve_before_debt, no debt",
                &::two_releases_fill_a_batch<broken_core<bug::serve_before_debt>>);
    expect_pass("forget_drops_closed, no close",
                &::forget_vs_enqueue_vs_release<broken_core<bug::forget_drops_closed>>);
    expect_pass("timeout_trusts_waiter, per-operation cancel only",
                &::add_vs_cancel_of_a_partial_head_in_debt<broken_core<bug::timeout_trusts_waiter>>);
    expect_pass("room_read_then_written, one plain release",
                &::bounded_acquire_release_vs_permit_return<broken_core<bug::room_read_then_written>>);
    expect_pass(
        "room_taken_before_the_mutex, nothing leaves circulation",
        &::bounded_two_releases_vs_a_queued_permit_acquire<broken_core<bug::room_taken_before_the_mutex>>);
}

BOOST_AUTO_TEST_SUITE_END()
