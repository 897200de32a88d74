// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#define BOOST_TEST_MODULE semaphore_faults
#include <boost/test/unit_test.hpp>

#include <asio_sync/mutex.hpp>
#include <asio_sync/semaphore.hpp>
#include <asio_sync/shared_mutex.hpp>

#include "support/fault_injection.hpp"
#include "support/replaced_new.hpp"

#include <boost/asio/bind_allocator.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/io_context.hpp>

#include <array>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <shared_mutex>
#include <vector>

// Out-of-memory testing, the way SQLite does it: every scenario runs once for each k, with the
// k-th allocation failing (or, persistently, every allocation from the k-th on), until a run
// reaches no k-th allocation. After each run: every operation completed exactly once or had its
// handler destroyed, and not a permit was lost or made up.
//
// Allocations fail either in the handlers' associated allocator (every build) or in the global
// operator new (not under sanitizers, whose runtimes replace operator new themselves).

namespace asio = boost::asio;
using asio_sync::test::failing_allocator;
using asio_sync::test::fault_plan;
using asio_sync::test::op_record;
using asio_sync::test::tracked_handler;
using boost::system::error_code;
using namespace std::chrono_literals;

namespace {

fault_plan* operator_new_plan = nullptr;

bool fail_as_planned() noexcept
{
    return operator_new_plan && operator_new_plan->fail_next();
}

const asio_sync::test::operator_new_hook failing_operator_new(&fail_as_planned);

} // namespace

namespace {

constexpr std::size_t max_ops = 8;
using records = std::array<op_record, max_ops>;

// One run of a scenario: its io_context, the plan and the records of its operations.
// `InHandlerAllocator` says where allocations fail: in the handlers' allocator, or in operator new.
template <bool InHandlerAllocator>
class fault_run
{
public:
    fault_run(fault_plan& plan, records& ops) : plan_(plan), ops_(ops) {}

    fault_run(const fault_run&) = delete;
    fault_run& operator=(const fault_run&) = delete;

    ~fault_run() { disarm(); }

    asio::io_context ctx{1};

    // From here on, allocations count and may fail.
    void arm()
    {
        plan_.armed = true;
        if constexpr (!InHandlerAllocator)
            operator_new_plan = &plan_;
    }

    void disarm()
    {
        plan_.armed = false;
        operator_new_plan = nullptr;
    }

    // Starts one operation: `initiate` receives a handler that records the completion and then
    // calls `body` with it. An initiation that throws std::bad_alloc is recorded as not started.
    template <class Initiate, class Body>
    void start(Initiate initiate, Body body)
    {
        op_record& record = ops_.at(used_++);
        record.used = true;
        try
        {
            initiate(make_handler(record, std::move(body)));
            record.started = true;
        }
        catch (const std::bad_alloc&)
        {
        }
    }

    // Runs what is ready; waiters still queued keep the context from running out of work.
    void run()
    {
        ctx.restart();
        while (ctx.poll() != 0)
        {
        }
    }

private:
    template <class Body>
    auto make_handler(op_record& record, Body body)
    {
        if constexpr (InHandlerAllocator)
            return asio::bind_allocator(failing_allocator<void>(plan_),
                                        tracked_handler<Body>(record, std::move(body)));
        else
            return tracked_handler<Body>(record, std::move(body));
    }

    fault_plan& plan_;
    records& ops_;
    std::size_t used_ = 0;
};

// Handler bodies: what a successful completion hands over is kept until the scenario gives it back.
struct count_permits
{
    std::size_t* held;
    std::size_t n;

    void operator()(error_code ec) const
    {
        if (!ec)
            *held += n;
    }
};

template <class Guard>
struct keep
{
    std::vector<Guard>* kept;

    void operator()(error_code, Guard guard) const { kept->push_back(std::move(guard)); }
};

template <class Guard>
std::vector<Guard> room_for_guards()
{
    std::vector<Guard> kept;
    kept.reserve(max_ops);
    return kept;
}

using permit = asio_sync::semaphore::permit;

// Stops injecting faults, aborts the waiters left, lets the completions already submitted run and
// gives back everything handlers received: then every permit put in must be available again.
template <class Run>
long long settle(Run& r, asio_sync::semaphore& sem, std::size_t& held, std::vector<permit>& permits,
                 std::size_t put_in)
{
    r.disarm();
    sem.cancel();
    r.run();
    sem.release(std::exchange(held, 0));
    permits.clear();
    return static_cast<long long>(sem.available()) - static_cast<long long>(put_in);
}

std::size_t held_by(const std::vector<permit>& permits)
{
    std::size_t n = 0;
    for (const permit& p : permits)
        n += p.count();
    return n;
}

// Each scenario returns the permits it finds minus those it put in, after giving back everything
// its handlers received: 0 when none was lost or made up.
template <class Run>
long long release_serves_every_grant_kind(Run& r)
{
    asio_sync::semaphore sem(r.ctx, 0);
    std::size_t held = 0;
    auto permits = room_for_guards<permit>();
    r.arm();
    r.start([&](auto h) { sem.async_acquire(1, std::move(h)); }, count_permits{&held, 1});
    r.start([&](auto h) { sem.async_acquire_permit(2, std::move(h)); }, keep<permit>{&permits});
    r.start([&](auto h) { sem.async_acquire_for(1, 1h, std::move(h)); }, count_permits{&held, 1});
    r.start([&](auto h) { sem.async_acquire_permit_for(1, 1h, std::move(h)); }, keep<permit>{&permits});
    r.start([&](auto h) { sem.async_acquire(1, std::move(h)); }, count_permits{&held, 1});
    sem.release(6);
    r.run();
    return settle(r, sem, held, permits, 6);
}

template <class Run>
long long try_release_serves_waiters(Run& r)
{
    asio_sync::semaphore sem(r.ctx, 0);
    std::size_t held = 0;
    auto permits = room_for_guards<permit>();
    r.arm();
    r.start([&](auto h) { sem.async_acquire(1, std::move(h)); }, count_permits{&held, 1});
    r.start([&](auto h) { sem.async_acquire_permit(1, std::move(h)); }, keep<permit>{&permits});
    r.start([&](auto h) { sem.async_acquire(1, std::move(h)); }, count_permits{&held, 1});
    const bool released = sem.try_release(3);
    r.run();
    return settle(r, sem, held, permits, (released ? 3 : 0));
}

template <class Run>
long long permits_given_back_serve_waiters(Run& r)
{
    asio_sync::semaphore sem(r.ctx, 3);
    std::optional<permit> rest = sem.try_acquire_permit(3);
    std::optional<permit> one = rest->split(1);
    std::size_t held = 0;
    auto permits = room_for_guards<permit>();
    r.arm();
    r.start([&](auto h) { sem.async_acquire(2, std::move(h)); }, count_permits{&held, 2});
    r.start([&](auto h) { sem.async_acquire_permit(1, std::move(h)); }, keep<permit>{&permits});
    *rest = std::move(*one); // gives back 2 (noexcept), keeps 1
    rest.reset();            // gives back 1
    r.run();
    return settle(r, sem, held, permits, 3);
}

template <class Run>
long long grants_at_initiation(Run& r)
{
    asio_sync::semaphore sem(r.ctx, 4);
    std::size_t held = 0;
    auto permits = room_for_guards<permit>();
    r.arm();
    r.start([&](auto h) { sem.async_acquire(1, std::move(h)); }, count_permits{&held, 1});
    r.start([&](auto h) { sem.async_acquire_permit(1, std::move(h)); }, keep<permit>{&permits});
    r.start([&](auto h) { sem.async_acquire_for(1, 1h, std::move(h)); }, count_permits{&held, 1});
    r.start([&](auto h) { sem.async_acquire_permit_for(1, 1h, std::move(h)); }, keep<permit>{&permits});
    r.start([&](auto h) { sem.async_acquire(5, std::move(h)); }, count_permits{&held, 5});
    r.run();
    return settle(r, sem, held, permits, 4);
}

template <class Run>
long long shared_mutex_unlock_serves_readers_and_writers(Run& r)
{
    asio_sync::shared_mutex mutex(r.ctx, 8);
    BOOST_REQUIRE(mutex.try_lock());
    std::size_t shared_held = 0;
    std::size_t exclusive_held = 0;
    auto readers = room_for_guards<std::shared_lock<asio_sync::shared_mutex>>();
    auto writers = room_for_guards<std::unique_lock<asio_sync::shared_mutex>>();
    r.arm();
    r.start([&](auto h) { mutex.async_scoped_lock_shared(std::move(h)); },
            keep<std::shared_lock<asio_sync::shared_mutex>>{&readers});
    r.start([&](auto h) { mutex.async_lock_shared(std::move(h)); }, count_permits{&shared_held, 1});
    r.start([&](auto h) { mutex.async_scoped_lock_shared(std::move(h)); },
            keep<std::shared_lock<asio_sync::shared_mutex>>{&readers});
    r.start([&](auto h) { mutex.async_scoped_lock(std::move(h)); },
            keep<std::unique_lock<asio_sync::shared_mutex>>{&writers});
    r.start([&](auto h) { mutex.async_lock(std::move(h)); }, count_permits{&exclusive_held, 1});
    r.start([&](auto h) { mutex.async_lock_shared(std::move(h)); }, count_permits{&shared_held, 1});
    mutex.unlock();
    // Everyone lets go as soon as served, with faults still being injected.
    for (std::size_t round = 0; round != max_ops; ++round)
    {
        r.run();
        readers.clear();
        writers.clear();
        for (; shared_held != 0; --shared_held)
            mutex.unlock_shared();
        for (; exclusive_held != 0; --exclusive_held)
            mutex.unlock();
    }
    r.disarm();
    if (!mutex.try_lock())
        return -1;
    mutex.unlock();
    return 0;
}

template <class Run>
long long mutex_unlock_hands_on(Run& r)
{
    asio_sync::mutex mutex(r.ctx);
    BOOST_REQUIRE(mutex.try_lock());
    std::size_t held = 0;
    auto guards = room_for_guards<std::unique_lock<asio_sync::mutex>>();
    r.arm();
    r.start([&](auto h) { mutex.async_scoped_lock(std::move(h)); },
            keep<std::unique_lock<asio_sync::mutex>>{&guards});
    r.start([&](auto h) { mutex.async_lock(std::move(h)); }, count_permits{&held, 1});
    r.start([&](auto h) { mutex.async_scoped_lock(std::move(h)); },
            keep<std::unique_lock<asio_sync::mutex>>{&guards});
    mutex.unlock();
    for (std::size_t round = 0; round != max_ops; ++round)
    {
        r.run();
        guards.clear();
        for (; held != 0; --held)
            mutex.unlock();
    }
    r.disarm();
    if (!mutex.try_lock())
        return -1;
    mutex.unlock();
    return 0;
}

template <class Run>
long long cancel_and_close_hand_back(Run& r)
{
    asio_sync::semaphore sem(r.ctx, 0);
    asio::cancellation_signal first;
    asio::cancellation_signal second;
    std::size_t held = 0;
    auto permits = room_for_guards<permit>();
    r.arm();
    r.start([&](auto h) { sem.async_acquire(3, std::move(h)); }, count_permits{&held, 3});
    r.start(
        [&](auto h) {
            sem.async_acquire_permit(2, asio::bind_cancellation_slot(first.slot(), std::move(h)));
        },
        keep<permit>{&permits});
    r.start([&](auto h) { sem.async_acquire(1, asio::bind_cancellation_slot(second.slot(), std::move(h))); },
            count_permits{&held, 1});
    sem.release(2); // the head collects them
    first.emit(asio::cancellation_type::terminal);
    sem.cancel(); // the head gives its 2 back
    second.emit(asio::cancellation_type::partial);
    r.start([&](auto h) { sem.async_acquire(3, std::move(h)); }, count_permits{&held, 3});
    r.start([&](auto h) { sem.async_acquire_permit(1, std::move(h)); }, keep<permit>{&permits});
    sem.close();
    r.run();
    return settle(r, sem, held, permits, 2);
}

template <class Run>
long long timeouts_hand_back(Run& r)
{
    asio_sync::semaphore sem(r.ctx, 0);
    std::size_t held = 0;
    auto permits = room_for_guards<permit>();
    r.arm();
    r.start([&](auto h) { sem.async_acquire_for(2, 0s, std::move(h)); }, count_permits{&held, 2});
    r.start([&](auto h) { sem.async_acquire_permit_for(1, 1h, std::move(h)); }, keep<permit>{&permits});
    r.start([&](auto h) { sem.async_acquire_for(1, 0s, std::move(h)); }, count_permits{&held, 1});
    sem.release(1); // the head collects it, then times out and hands it on
    r.run();
    return settle(r, sem, held, permits, 1);
}

template <class Run>
long long reduced_capacity_hands_back(Run& r)
{
    asio_sync::semaphore sem(r.ctx, 0, 4);
    std::size_t held = 0;
    auto permits = room_for_guards<permit>();
    r.arm();
    r.start([&](auto h) { sem.async_acquire(4, std::move(h)); }, count_permits{&held, 4});
    r.start([&](auto h) { sem.async_acquire_permit(1, std::move(h)); }, keep<permit>{&permits});
    r.start([&](auto h) { sem.async_acquire(1, std::move(h)); }, count_permits{&held, 1});
    sem.release(2);
    // Owed by the empty counter, 1 leaves with the next permit to flow back. The head can never
    // be served any more: too_many_permits, and its 2 pay the debt and serve the next waiter.
    sem.reduce_permits(1);
    r.run();
    return settle(r, sem, held, permits, 1);
}

template <class Run>
long long destruction_aborts_waiters(Run& r)
{
    auto sem = std::make_unique<asio_sync::semaphore>(r.ctx, 0);
    std::size_t held = 0;
    auto permits = room_for_guards<permit>();
    r.arm();
    r.start([&](auto h) { sem->async_acquire(2, std::move(h)); }, count_permits{&held, 2});
    r.start([&](auto h) { sem->async_acquire_permit(2, std::move(h)); }, keep<permit>{&permits});
    r.start([&](auto h) { sem->async_acquire_for(2, 1h, std::move(h)); }, count_permits{&held, 2});
    sem->release(1); // the head collects it
    sem.reset();
    r.run();
    r.disarm();
    // Every waiter was aborted: none may have received a permit.
    return static_cast<long long>(held + held_by(permits));
}

template <class Run>
long long context_shutdown_destroys_waiters(Run& r)
{
    std::optional<asio::io_context> ctx(std::in_place, 1);
    asio_sync::semaphore sem(*ctx, 0);
    std::size_t held = 0;
    auto permits = room_for_guards<permit>();
    r.arm();
    r.start([&](auto h) { sem.async_acquire_permit(1, std::move(h)); }, keep<permit>{&permits});
    r.start([&](auto h) { sem.async_acquire(3, std::move(h)); }, count_permits{&held, 3});
    r.start([&](auto h) { sem.async_acquire_permit_for(1, 1h, std::move(h)); }, keep<permit>{&permits});
    sem.release(2); // the first is granted and its completion posted; the second collects the rest
    ctx.reset();    // destroys the queued waiters and the posted completion, whose permit goes back
    r.disarm();
    return static_cast<long long>(sem.available() + held + held_by(permits)) - 2;
}

template <class Run>
using scenario = long long (*)(Run&);

template <class Run>
struct named_scenario
{
    const char* name;
    scenario<Run> run;
};

template <class Run>
const std::array<named_scenario<Run>, 11> scenarios{{
    {"release_serves_every_grant_kind", &release_serves_every_grant_kind<Run>},
    {"try_release_serves_waiters", &try_release_serves_waiters<Run>},
    {"permits_given_back_serve_waiters", &permits_given_back_serve_waiters<Run>},
    {"grants_at_initiation", &grants_at_initiation<Run>},
    {"shared_mutex_unlock_serves_readers_and_writers", &shared_mutex_unlock_serves_readers_and_writers<Run>},
    {"mutex_unlock_hands_on", &mutex_unlock_hands_on<Run>},
    {"cancel_and_close_hand_back", &cancel_and_close_hand_back<Run>},
    {"timeouts_hand_back", &timeouts_hand_back<Run>},
    {"reduced_capacity_hands_back", &reduced_capacity_hands_back<Run>},
    {"destruction_aborts_waiters", &destruction_aborts_waiters<Run>},
    {"context_shutdown_destroys_waiters", &context_shutdown_destroys_waiters<Run>},
}};

struct walk_totals
{
    std::size_t injection_points = 0;
    long long permits_lost = 0;
};

// Runs `s` with the k-th allocation failing, for k = 1, 2, ... until a run injects no failure.
template <bool InHandlerAllocator>
void walk(const named_scenario<fault_run<InHandlerAllocator>>& s, bool persistent, walk_totals& totals)
{
    for (std::size_t k = 1;; ++k)
    {
        fault_plan plan;
        plan.fail_at = k;
        plan.persistent = persistent;
        records ops{};
        long long discrepancy = 0;
        {
            fault_run<InHandlerAllocator> run(plan, ops);
            discrepancy = s.run(run);
        }
        BOOST_TEST_CONTEXT(s.name << (persistent ? ", every allocation from #" : ", allocation #") << k
                                  << " failing")
        {
            BOOST_TEST(discrepancy == 0);
            for (const op_record& op : ops)
            {
                if (!op.used)
                    continue;
                BOOST_TEST(op.exactly_once());
                if (!op.started)
                    BOOST_TEST(op.calls == 0);
            }
        }
        totals.permits_lost += discrepancy < 0 ? -discrepancy : discrepancy;
        if (plan.failures == 0)
            return;
        ++totals.injection_points;
    }
}

template <bool InHandlerAllocator>
void walk_all(const char* source)
{
    walk_totals totals;
    for (const auto& s : scenarios<fault_run<InHandlerAllocator>>)
        for (bool persistent : {false, true})
            walk(s, persistent, totals);
    BOOST_TEST_MESSAGE("failing " << source << ": walked " << totals.injection_points
                                  << " injection points in "
                                  << scenarios<fault_run<InHandlerAllocator>>.size() << " scenarios, "
                                  << totals.permits_lost << " permits lost or made up");
    BOOST_TEST(totals.injection_points > 0u);
    BOOST_TEST(totals.permits_lost == 0);
}

} // namespace

BOOST_AUTO_TEST_SUITE(semaphore_faults)

// The cases the walks below found first, each with the one allocation that fails named: a
// queued acquire allocates its operation (#1), then its completion when it is granted (#2).

BOOST_AUTO_TEST_CASE(a_reader_that_cannot_be_completed_does_not_keep_the_others_or_the_writers_out)
{
    asio::io_context ctx;
    asio_sync::shared_mutex mutex(ctx, 8);
    BOOST_REQUIRE(mutex.try_lock());
    fault_plan plan;
    plan.fail_at = 2;
    plan.armed = true;
    int first = 0;
    std::optional<std::shared_lock<asio_sync::shared_mutex>> second;
    mutex.async_scoped_lock_shared(
        asio::bind_allocator(failing_allocator<void>(plan), [&](error_code, auto) { ++first; }));
    mutex.async_scoped_lock_shared([&](error_code ec, auto lock) {
        BOOST_TEST(!ec);
        second.emplace(std::move(lock));
    });
    BOOST_CHECK_NO_THROW(mutex.unlock());
    BOOST_TEST(plan.failures == 1u);
    ctx.run();
    BOOST_TEST(first == 0);
    BOOST_TEST(second.has_value());
    second.reset();
    BOOST_TEST(mutex.try_lock()); // the first reader's share came back
}

BOOST_AUTO_TEST_CASE(a_plain_grant_that_cannot_be_completed_is_handed_on)
{
    asio::io_context ctx;
    asio_sync::semaphore sem(ctx, 0);
    fault_plan plan;
    plan.fail_at = 2;
    plan.armed = true;
    int plain = 0;
    std::optional<permit> kept;
    sem.async_acquire(1, asio::bind_allocator(failing_allocator<void>(plan), [&](error_code) { ++plain; }));
    sem.async_acquire_permit(1, [&](error_code ec, permit p) {
        BOOST_TEST(!ec);
        kept.emplace(std::move(p));
    });
    sem.async_acquire(1, [&](error_code ec) { BOOST_TEST(!ec); });
    BOOST_CHECK_NO_THROW(sem.release(2));
    ctx.run();
    BOOST_TEST(plain == 0);
    BOOST_TEST(kept.has_value());
    BOOST_TEST(sem.available() == 0u); // the last acquire took the permit the first could not
    BOOST_TEST(sem.waiting() == 0u);
}

// Each grant that cannot be completed gives its permit back, which grants the next waiter: the
// chain is finished by complete_each's loop, every failure decided in the same stack frame.
// Finished by recursion, each failure would sit at least a few frames below the one before.
BOOST_AUTO_TEST_CASE(a_long_chain_of_grants_that_cannot_be_completed_does_not_grow_the_stack)
{
    constexpr std::size_t chain = 3000;
    asio::io_context ctx;
    asio_sync::semaphore sem(ctx, 0);
    fault_plan plan;
    plan.persistent = true;
    plan.fail_at = chain + 1; // every operation is allocated, then every completion fails
    plan.armed = true;
    int calls = 0;
    for (std::size_t i = 0; i < chain; ++i)
        sem.async_acquire(1,
                          asio::bind_allocator(failing_allocator<void>(plan), [&](error_code) { ++calls; }));
    BOOST_TEST_REQUIRE(sem.waiting() == chain);
    BOOST_CHECK_NO_THROW(sem.release(1));
    BOOST_TEST(plan.failures == chain);
    BOOST_TEST(plan.failure_stack_span() < 4096u);
    ctx.run();
    BOOST_TEST(calls == 0);
    BOOST_TEST(sem.available() == 1u);
    BOOST_TEST(sem.waiting() == 0u);
}

BOOST_AUTO_TEST_CASE(try_release_and_permit_destructors_do_not_throw_when_a_completion_cannot_be_made)
{
    asio::io_context ctx;
    asio_sync::semaphore sem(ctx, 1);
    std::optional<permit> held = sem.try_acquire_permit(1);
    fault_plan plan;
    plan.persistent = true;
    plan.fail_at = 3; // both operations, then every completion
    plan.armed = true;
    int calls = 0;
    sem.async_acquire(1, asio::bind_allocator(failing_allocator<void>(plan), [&](error_code) { ++calls; }));
    sem.async_acquire(1, asio::bind_allocator(failing_allocator<void>(plan), [&](error_code) { ++calls; }));
    held.reset(); // noexcept path: ~permit serves both waiters in turn, and neither can be told
    BOOST_TEST(sem.try_release(1));
    ctx.run();
    BOOST_TEST(calls == 0);
    BOOST_TEST(sem.available() == 2u);
    BOOST_TEST(sem.waiting() == 0u);
}

BOOST_AUTO_TEST_CASE(an_acquire_that_cannot_post_its_immediate_completion_takes_no_permit)
{
    asio::io_context ctx;
    asio_sync::semaphore sem(ctx, 1);
    fault_plan plan;
    plan.fail_at = 1;
    plan.armed = true;
    int calls = 0;
    BOOST_CHECK_THROW(sem.async_acquire(1, asio::bind_allocator(failing_allocator<void>(plan),
                                                                [&](error_code) { ++calls; })),
                      std::bad_alloc);
    plan.fail_at = 2;
    BOOST_CHECK_THROW(sem.async_acquire_permit(1, asio::bind_allocator(failing_allocator<void>(plan),
                                                                       [&](error_code, permit) { ++calls; })),
                      std::bad_alloc);
    ctx.run();
    BOOST_TEST(calls == 0);
    BOOST_TEST(sem.available() == 1u);
}

BOOST_AUTO_TEST_CASE(every_allocation_of_the_handler_allocator_may_fail)
{
    walk_all<true>("the handler allocator");
}

#ifndef ASIO_SYNC_TEST_SANITIZED
BOOST_AUTO_TEST_CASE(every_operator_new_may_fail)
{
    walk_all<false>("operator new");
}
#endif

BOOST_AUTO_TEST_SUITE_END()
