// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

// The engine of upgrade_mutex under the interleaving checker: every interleaving of its
// shared-memory steps, with an upgrade racing arriving writers, readers leaving, cancellation and
// a timeout, and the modes taken, downgraded and given back on separate threads.

#define BOOST_TEST_MODULE upgrade_core
#include <boost/test/unit_test.hpp>

#include <asio_sync/detail/upgrade_core.hpp>
#include <asio_sync/detail/waiter_list.hpp>

#include "support/dsched_scripted.hpp"
#include "support/scripted_waiter.hpp"

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace dsched = asio_sync::test::dsched;
using asio_sync::detail::lock_mode;
using asio_sync::detail::waiter_list;
using asio_sync::detail::waiter_outcome;
using asio_sync::test::dsched::report;
using checked_core = asio_sync::detail::upgrade_core<dsched::atomic, dsched::mutex>;

namespace {

struct waiter : asio_sync::test::scripted_waiter
{
    std::size_t mode = 0;
    long ticket = -1; // queue order, for the end check; -1 unless queued
};

// Scripted threads on one engine, with the modes held counted as they are granted and given back.
// After every step: at most one writer, and then nobody else; at most one upgrade holder; nobody
// completes twice. At the end: the counts agree with the engine's state, every waiter completed
// once or is still waiting, and whatever still waits cannot be granted in the final state (no lost
// wake-up): a pending upgrade still has readers to wait for, and the oldest queued waiter is
// excluded by a mode held or by the pending upgrade.
class scripted : public dsched::scripted_scenario<scripted>
{
public:
    // Held at the start, taken before the threads run: plain readers, an upgrade holder, a writer.
    scripted(std::size_t waiters, std::vector<script> scripts, int readers, bool upgrade, bool writer)
        : scripted_scenario(std::move(scripts)), waiters_(waiters)
    {
        for (int i = 0; i < readers; ++i)
            take(lock_mode::shared_mode);
        if (upgrade)
            take(lock_mode::upgrade_mode);
        if (writer)
            take(lock_mode::exclusive_mode);
    }

    // What start_acquire does: the lock-free attempt, then the queue.
    void lock(std::size_t i, std::size_t mode)
    {
        waiter& x = waiters_[i];
        x.mode = mode;
        x.arm();
        if (core_.try_acquire(mode))
            return granted(x);
        const waiter_outcome decided = core_.enqueue(x, mode);
        if (decided == waiter_outcome::pending)
        {
            if (mode != lock_mode::upgrading_mode)
                x.ticket = next_ticket_++;
            return;
        }
        if (decided == waiter_outcome::granted)
            granted(x);
        else
            x.complete(decided);
    }

    void upgrade(std::size_t i) { lock(i, lock_mode::upgrading_mode); }

    // A holder of `mode` gives it back.
    void unlock(std::size_t mode)
    {
        count(mode) -= 1;
        finish([&](waiter_list& done) { core_.release(mode, done); });
    }

    // The writer becomes a reader or the upgrade holder.
    void downgrade(std::size_t to)
    {
        writers_ -= 1;
        count(to) += 1;
        finish([&](waiter_list& done) { core_.downgrade(to, done); });
    }

    void cancel(std::size_t i)
    {
        finish([&](waiter_list& done) { core_.cancel(&waiters_[i].handle, waiter_outcome::aborted, done); });
    }

    // A timed upgrade's timer expiring.
    void time_out(std::size_t i)
    {
        asio_sync::test::time_out(core_, waiters_[i],
                                  [this](asio_sync::test::scripted_waiter& x, waiter_outcome why) {
                                      finished(static_cast<waiter&>(x), why);
                                  });
    }

    void check_step() override
    {
        for (const waiter& x : waiters_)
            if (x.completions > 1)
                fail("a waiter completed twice");
        if (writers_ > 1)
            fail("two writers");
        if (writers_ == 1 && (readers_ != 0 || upgraders_ != 0))
            fail("a writer alongside readers or the upgrade holder");
        if (upgraders_ > 1)
            fail("two upgrade holders");
    }

    void check_end() override
    {
        if (core_.readers() != static_cast<std::size_t>(readers_) ||
            core_.upgrade_held() != (upgraders_ == 1) || core_.writer_held() != (writers_ == 1))
            fail("the engine's state disagrees with the modes held");
        const waiter* oldest = nullptr;
        for (const waiter& x : waiters_)
        {
            if (x.completions == 1)
                continue;
            if (!x.queued.load())
                fail("a waiter neither completed nor queued");
            else if (x.mode == lock_mode::upgrading_mode)
            {
                if (readers_ == 0)
                    fail("an upgrade still waits with no reader left: lost wake-up");
            }
            else if (!oldest || x.ticket < oldest->ticket)
                oldest = &x;
        }
        if (oldest && !upgrade_pending() && grantable(oldest->mode))
            fail("the oldest queued waiter could be granted: lost wake-up");
        if (core_.waiting() != pending())
            fail("waiting() disagrees with the waiters still queued");
    }

private:
    int& count(std::size_t mode)
    {
        return mode == lock_mode::shared_mode    ? readers_
               : mode == lock_mode::upgrade_mode ? upgraders_
                                                 : writers_;
    }

    void take(std::size_t mode)
    {
        if (!core_.try_acquire(mode))
            fail("could not take a mode at the start");
        count(mode) += 1;
    }

    void granted(waiter& x)
    {
        if (x.mode == lock_mode::upgrading_mode)
            upgraders_ -= 1;
        count(x.mode == lock_mode::upgrading_mode ? lock_mode::exclusive_mode : x.mode) += 1;
        x.complete(waiter_outcome::granted);
    }

    void finished(waiter& x, waiter_outcome why)
    {
        if (why == waiter_outcome::granted)
            granted(x);
        else
            x.complete(why);
    }

    template <class Step>
    void finish(Step step)
    {
        asio_sync::test::finish(step, [this](asio_sync::test::scripted_waiter& x, waiter_outcome why) {
            finished(static_cast<waiter&>(x), why);
        });
    }

    bool upgrade_pending() const
    {
        for (const waiter& x : waiters_)
            if (x.mode == lock_mode::upgrading_mode && x.completions == 0 && x.queued.load())
                return true;
        return false;
    }

    std::size_t pending() const
    {
        std::size_t n = 0;
        for (const waiter& x : waiters_)
            n += x.completions == 0 && x.queued.load();
        return n;
    }

    bool grantable(std::size_t mode) const
    {
        switch (mode)
        {
        case lock_mode::shared_mode:
            return writers_ == 0;
        case lock_mode::upgrade_mode:
            return writers_ == 0 && upgraders_ == 0;
        default:
            return writers_ == 0 && upgraders_ == 0 && readers_ == 0;
        }
    }

    checked_core core_;
    std::vector<waiter> waiters_;
    int readers_ = 0;   // plain readers
    int upgraders_ = 0; // upgrade holders
    int writers_ = 0;
    long next_ticket_ = 0;
};

dsched::exploration explore(std::size_t waiters, std::vector<scripted::script> scripts, int readers,
                            bool upgrade, bool writer = false)
{
    return dsched::explore(
        [&] { return std::make_unique<scripted>(waiters, scripts, readers, upgrade, writer); });
}

constexpr std::size_t shared = lock_mode::shared_mode;
constexpr std::size_t upgrade_lock = lock_mode::upgrade_mode;
constexpr std::size_t exclusive = lock_mode::exclusive_mode;

} // namespace

BOOST_AUTO_TEST_SUITE(upgrade_core)

// The upgrade holder upgrades while a writer arrives and the last other reader leaves: the upgrade
// is granted (whichever came first), and the writer, even one queued before the upgrade, waits for
// it. A writer ahead of an upgrade it waits for would be the deadlock of tokio-rs/tokio#7282.
BOOST_AUTO_TEST_CASE(upgrade_vs_an_arriving_writer_and_the_last_reader_leaving)
{
    report("upgrade_vs_an_arriving_writer_and_the_last_reader_leaving",
           explore(2,
                   {[](scripted& s) { s.upgrade(0); }, [](scripted& s) { s.lock(1, exclusive); },
                    [](scripted& s) { s.unlock(shared); }},
                   1, true));
}

// Two readers leave while the upgrade waits: the last one to leave grants it, whatever the order.
BOOST_AUTO_TEST_CASE(upgrade_vs_two_readers_leaving)
{
    report("upgrade_vs_two_readers_leaving",
           explore(1,
                   {[](scripted& s) { s.upgrade(0); }, [](scripted& s) { s.unlock(shared); },
                    [](scripted& s) { s.unlock(shared); }},
                   2, true));
}

// A cancellation racing the last reader's leaving: the upgrade is granted or aborted, once; if
// aborted, the reader that arrived behind it goes through at once (the upgrade holder is a reader).
BOOST_AUTO_TEST_CASE(upgrade_cancelled_vs_the_last_reader_leaving)
{
    report("upgrade_cancelled_vs_the_last_reader_leaving",
           explore(2,
                   {[](scripted& s) {
                        s.upgrade(0);
                        s.cancel(0);
                    },
                    [](scripted& s) { s.unlock(shared); }, [](scripted& s) { s.lock(1, shared); }},
                   1, true));
}

// A cancellation racing a reader that arrives behind the upgrade, while the other reader never
// leaves: whatever the order, the reader is in at the end, let in by the cancellation if it
// queued before it (nothing else would ever serve it).
BOOST_AUTO_TEST_CASE(upgrade_cancelled_vs_an_arriving_reader_while_another_stays)
{
    report("upgrade_cancelled_vs_an_arriving_reader_while_another_stays",
           explore(2,
                   {[](scripted& s) {
                        s.upgrade(0);
                        s.cancel(0);
                    },
                    [](scripted& s) { s.lock(1, shared); }},
                   1, true));
}

// The upgrade's deadline expiring as the last reader leaves, and a reader arriving just after it:
// the upgrade is granted or times out, once; if it timed out, the reader goes through.
BOOST_AUTO_TEST_CASE(upgrade_timed_out_vs_the_last_reader_leaving)
{
    report("upgrade_timed_out_vs_the_last_reader_leaving",
           explore(2,
                   {[](scripted& s) { s.upgrade(0); }, [](scripted& s) { s.time_out(0); },
                    [](scripted& s) {
                        s.unlock(shared);
                        s.lock(1, shared);
                    }},
                   1, true));
}

// Upgrade lock, writer and reader arriving together on a free mutex, then given back: one mode at
// a time where they exclude each other, and nothing stranded.
BOOST_AUTO_TEST_CASE(upgrade_lock_vs_writer_vs_reader)
{
    report("upgrade_lock_vs_writer_vs_reader",
           explore(3,
                   {[](scripted& s) { s.lock(0, upgrade_lock); }, [](scripted& s) { s.lock(1, exclusive); },
                    [](scripted& s) { s.lock(2, shared); }},
                   0, false));
}

// A writer downgrades to the upgrade lock while a reader and an upgrade lock operation arrive:
// the reader goes through, the second upgrade lock waits for the first.
BOOST_AUTO_TEST_CASE(downgrade_to_upgrade_vs_arriving_reader_and_upgrade_lock)
{
    report("downgrade_to_upgrade_vs_arriving_reader_and_upgrade_lock",
           explore(2,
                   {[](scripted& s) { s.downgrade(upgrade_lock); }, [](scripted& s) { s.lock(0, shared); },
                    [](scripted& s) { s.lock(1, upgrade_lock); }},
                   0, false, true));
}

// The upgrade holder leaves while another upgrade lock and a writer queue: each gets its turn.
BOOST_AUTO_TEST_CASE(unlock_upgrade_vs_queued_upgrade_lock_and_writer)
{
    report("unlock_upgrade_vs_queued_upgrade_lock_and_writer",
           explore(2,
                   {[](scripted& s) { s.unlock(upgrade_lock); }, [](scripted& s) { s.lock(0, upgrade_lock); },
                    [](scripted& s) { s.lock(1, exclusive); }},
                   0, true));
}

BOOST_AUTO_TEST_SUITE_END()
