// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#define BOOST_TEST_MODULE semaphore_permit
#include <asio_sync/semaphore.hpp>

#include <support/handler.hpp>
#include <support/io_steps.hpp>
#include <support/semaphore_checks.hpp>
#include <support/spawned.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/system/error_code.hpp>
#include <boost/system/system_error.hpp>
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <exception>
#include <future>
#include <memory>
#include <optional>
#include <stdexcept>
#include <thread>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace {

namespace asio = boost::asio;
namespace test = asio_sync::test;
using asio_sync::test::check_counts;
using asio_sync::test::check_throws_code;
using asio_sync::test::poll;
using asio_sync::test::run;
using asio_sync::test::semaphore_with;
using boost::system::error_code;
using permit = asio_sync::semaphore::permit;

// How long any single wait may take before the test gives up. It only turns a hang into a
// failure; no outcome depends on it.
constexpr std::chrono::seconds limit(60);

const error_code success{};
const error_code aborted = asio::error::operation_aborted;
const error_code closed = asio_sync::error::closed;
const error_code too_many = asio_sync::error::too_many_permits;

static_assert(!std::is_default_constructible_v<permit>);
static_assert(!std::is_copy_constructible_v<permit>);
static_assert(!std::is_copy_assignable_v<permit>);
static_assert(std::is_nothrow_move_constructible_v<permit>);
static_assert(std::is_nothrow_move_assignable_v<permit>);
static_assert(!std::is_convertible_v<permit, bool>); // explicit operator bool

// Where a permit acquire lands: the error code, the permit, and how often the handler ran.
struct permit_outcome
{
    int calls = 0;
    std::optional<error_code> ec;
    std::optional<permit> held;

    bool done() const { return calls > 0; }
};

// A handler that keeps the permit it receives in a `permit_outcome` and fails the test if it is
// invoked more than once.
class permit_record
{
public:
    explicit permit_record(std::shared_ptr<permit_outcome> out) : out_(std::move(out)) {}

    void operator()(error_code ec, permit p)
    {
        BOOST_REQUIRE_MESSAGE(out_, "a moved-from handler was invoked");
        BOOST_CHECK_MESSAGE(out_->calls == 0, "handler invoked more than once");
        ++out_->calls;
        out_->ec = ec;
        out_->held.emplace(std::move(p));
    }

private:
    std::shared_ptr<permit_outcome> out_;
};

std::pair<std::shared_ptr<permit_outcome>, permit_record> make_permit_record()
{
    auto out = std::make_shared<permit_outcome>();
    return {out, permit_record(out)};
}

std::shared_ptr<permit_outcome> record_permit_acquire(asio_sync::semaphore& sem, std::size_t n)
{
    auto [out, handler] = make_permit_record();
    sem.async_acquire_permit(n, handler);
    return out;
}

// Checks that the handler ran once with `expected`, and that its permit names `sem` and holds
// `count` permits (nothing on error).
void check_permit(const permit_outcome& out, const error_code& expected, const asio_sync::semaphore& sem,
                  std::size_t count)
{
    BOOST_TEST(out.calls == 1);
    BOOST_TEST_REQUIRE(out.ec.has_value());
    BOOST_TEST(*out.ec == expected);
    BOOST_TEST_REQUIRE(out.held.has_value());
    BOOST_TEST(out.held->count() == count);
    BOOST_TEST(static_cast<bool>(*out.held) == (count != 0));
    BOOST_TEST(&out.held->semaphore() == &sem);
}


} // namespace

BOOST_AUTO_TEST_SUITE(semaphore_permit)

// ---------------------------------------------------------------------------------------------
// The permit object.
// ---------------------------------------------------------------------------------------------

BOOST_FIXTURE_TEST_CASE(observers_and_release, semaphore_with<5>)
{
    std::optional<permit> p = sem.try_acquire_permit(3);
    BOOST_TEST_REQUIRE(p.has_value());
    BOOST_TEST(p->count() == 3u);
    BOOST_TEST(static_cast<bool>(*p));
    BOOST_TEST(&p->semaphore() == &sem);
    BOOST_TEST(sem.available() == 2u);

    p->release();
    BOOST_TEST(p->count() == 0u);
    BOOST_TEST(!*p);
    BOOST_TEST(&p->semaphore() == &sem); // still names its semaphore
    BOOST_TEST(sem.available() == 5u);

    p->release(); // holds nothing: gives nothing
    BOOST_TEST(sem.available() == 5u);
    p.reset(); // nor does the destructor
    BOOST_TEST(sem.available() == 5u);
}

BOOST_FIXTURE_TEST_CASE(destructor_gives_the_permits_back, semaphore_with<4>)
{
    {
        std::optional<permit> a = sem.try_acquire_permit(1);
        std::optional<permit> b = sem.try_acquire_permit(2);
        BOOST_TEST_REQUIRE(a.has_value());
        BOOST_TEST_REQUIRE(b.has_value());
        BOOST_TEST(sem.available() == 1u);
        b.reset();
        BOOST_TEST(sem.available() == 3u);
    }
    BOOST_TEST(sem.available() == 4u);
}

BOOST_FIXTURE_TEST_CASE(destructor_serves_queued_waiters_through_the_context, semaphore_with<2>)
{
    auto p = std::make_unique<permit>(*sem.try_acquire_permit(2));
    BOOST_TEST(p->count() == 2u);
    auto first = test::make_record();
    auto second = test::make_record();
    sem.async_acquire(1, first.second);
    sem.async_acquire(2, second.second);
    check_counts(sem, 0, 2);

    p.reset();                        // 1 to the first waiter, 1 collected by the second
    BOOST_TEST(!first.first->done()); // posted, not invoked inside the destructor
    check_counts(sem, 0, 1);
    poll(io);
    BOOST_TEST(first.first->calls == 1);
    BOOST_TEST(*first.first->ec == success);
    BOOST_TEST(!second.first->done()); // one of two is not enough

    sem.release(1);
    run(io);
    BOOST_TEST(second.first->calls == 1);
    BOOST_TEST(*second.first->ec == success);
    check_counts(sem, 0, 0);
}

BOOST_FIXTURE_TEST_CASE(release_serves_queued_waiters_through_the_context, semaphore_with<3>)
{
    std::optional<permit> p = sem.try_acquire_permit(3);
    BOOST_TEST_REQUIRE(p.has_value());
    auto waiter = record_permit_acquire(sem, 2);
    check_counts(sem, 0, 1);
    p->release();
    BOOST_TEST(!waiter->done());
    check_counts(sem, 1, 0); // 2 to the waiter, the surplus to the counter
    run(io);
    check_permit(*waiter, success, sem, 2);
    waiter->held.reset();
    BOOST_TEST(sem.available() == 3u);
}

BOOST_FIXTURE_TEST_CASE(forget_keeps_the_permits_out_for_good, semaphore_with<3>)
{
    std::optional<permit> p = sem.try_acquire_permit(2);
    BOOST_TEST_REQUIRE(p.has_value());
    p->forget();
    BOOST_TEST(p->count() == 0u);
    BOOST_TEST(!*p);
    BOOST_TEST(&p->semaphore() == &sem);
    BOOST_TEST(sem.available() == 1u);
    p->release();
    p.reset();
    BOOST_TEST(sem.available() == 1u);

    // A waiter does not get forgotten permits either.
    auto waiter = test::make_record();
    sem.async_acquire(2, waiter.second);
    {
        std::optional<permit> none = sem.try_acquire_permit(1);
        BOOST_TEST(!none.has_value()); // the waiter collected the last one
    }
    poll(io);
    BOOST_TEST(!waiter.first->done());
    sem.release(1);
    run(io);
    BOOST_TEST(*waiter.first->ec == success);
}

BOOST_FIXTURE_TEST_CASE(split_moves_permits_into_a_new_permit, semaphore_with<5>)
{
    std::optional<permit> p = sem.try_acquire_permit(5);
    BOOST_TEST_REQUIRE(p.has_value());

    permit part = p->split(2);
    BOOST_TEST(part.count() == 2u);
    BOOST_TEST(p->count() == 3u);
    BOOST_TEST(&part.semaphore() == &sem);
    BOOST_TEST(sem.available() == 0u); // nothing given back by splitting

    permit nothing = p->split(0);
    BOOST_TEST(nothing.count() == 0u);
    BOOST_TEST(!nothing);
    BOOST_TEST(&nothing.semaphore() == &sem);
    BOOST_TEST(p->count() == 3u);

    part.release();
    BOOST_TEST(sem.available() == 2u);

    permit rest = p->split(3); // all of them
    BOOST_TEST(rest.count() == 3u);
    BOOST_TEST(p->count() == 0u);
    BOOST_TEST(!*p);
    p.reset();
    BOOST_TEST(sem.available() == 2u);
    {
        permit moved = std::move(rest);
    }
    BOOST_TEST(sem.available() == 5u);
}

BOOST_FIXTURE_TEST_CASE(split_of_more_than_held_throws_and_changes_nothing, semaphore_with<4>)
{
    std::optional<permit> p = sem.try_acquire_permit(2);
    BOOST_TEST_REQUIRE(p.has_value());
    BOOST_CHECK_THROW(p->split(3), std::invalid_argument);
    BOOST_TEST(p->count() == 2u);
    BOOST_CHECK_THROW(p->split(asio_sync::semaphore::max_permits), std::invalid_argument);
    BOOST_TEST(p->count() == 2u);
    BOOST_TEST(sem.available() == 2u);

    p->release();
    BOOST_CHECK_THROW(p->split(1), std::invalid_argument);
    BOOST_TEST(p->count() == 0u);
    BOOST_TEST(sem.available() == 4u);
}

BOOST_FIXTURE_TEST_CASE(merge_takes_over_the_other_permits, semaphore_with<5>)
{
    std::optional<permit> a = sem.try_acquire_permit(2);
    std::optional<permit> b = sem.try_acquire_permit(3);
    BOOST_TEST_REQUIRE(a.has_value());
    BOOST_TEST_REQUIRE(b.has_value());

    a->merge(std::move(*b));
    BOOST_TEST(a->count() == 5u);
    BOOST_TEST(b->count() == 0u);
    BOOST_TEST(&b->semaphore() == &sem);
    b.reset();
    BOOST_TEST(sem.available() == 0u); // the emptied permit gave nothing back

    permit empty = a->split(0);
    a->merge(std::move(empty));
    BOOST_TEST(a->count() == 5u);

    // Merging with itself changes nothing: neither doubled nor emptied.
    permit& alias = *a;
    a->merge(std::move(alias));
    BOOST_TEST(a->count() == 5u);

    a.reset();
    BOOST_TEST(sem.available() == 5u);
}

BOOST_FIXTURE_TEST_CASE(merge_with_another_semaphore_throws_and_changes_nothing, semaphore_with<3>)
{
    asio_sync::semaphore other(io, 3);
    std::optional<permit> mine = sem.try_acquire_permit(1);
    std::optional<permit> theirs = other.try_acquire_permit(2);
    BOOST_TEST_REQUIRE(mine.has_value());
    BOOST_TEST_REQUIRE(theirs.has_value());

    BOOST_CHECK_THROW(mine->merge(std::move(*theirs)), std::invalid_argument);
    BOOST_TEST(mine->count() == 1u);
    BOOST_TEST(theirs->count() == 2u);
    BOOST_TEST(&mine->semaphore() == &sem);
    BOOST_TEST(&theirs->semaphore() == &other);

    // Even an empty permit of another semaphore is refused.
    permit empty = theirs->split(0);
    BOOST_CHECK_THROW(mine->merge(std::move(empty)), std::invalid_argument);
    BOOST_TEST(mine->count() == 1u);

    mine.reset();
    theirs.reset();
    BOOST_TEST(sem.available() == 3u);
    BOOST_TEST(other.available() == 3u);
}

BOOST_FIXTURE_TEST_CASE(move_construction_transfers_the_permits, semaphore_with<3>)
{
    std::optional<permit> p = sem.try_acquire_permit(2);
    BOOST_TEST_REQUIRE(p.has_value());
    {
        permit q(std::move(*p));
        BOOST_TEST(q.count() == 2u);
        BOOST_TEST(&q.semaphore() == &sem);
        BOOST_TEST(p->count() == 0u);
        BOOST_TEST(!*p);
        BOOST_TEST(&p->semaphore() == &sem); // moved-from still names its semaphore
        p.reset();
        BOOST_TEST(sem.available() == 1u); // the moved-from gave nothing back
    }
    BOOST_TEST(sem.available() == 3u);
}

// scylladb/seastar#1465: moving semaphore units into an object that already held units dropped
// the target's units without returning them. Move assignment gives them back first.
BOOST_FIXTURE_TEST_CASE(regression_move_assignment_gives_back_the_targets_permits_first, semaphore_with<3>)
{
    std::optional<permit> target = sem.try_acquire_permit(2);
    std::optional<permit> source = sem.try_acquire_permit(1);
    BOOST_TEST_REQUIRE(target.has_value());
    BOOST_TEST_REQUIRE(source.has_value());
    BOOST_TEST(sem.available() == 0u);

    *target = std::move(*source);
    BOOST_TEST(target->count() == 1u);
    BOOST_TEST(source->count() == 0u);
    BOOST_TEST(sem.available() == 2u); // the target's two came back

    source.reset();
    BOOST_TEST(sem.available() == 2u);
    target.reset();
    BOOST_TEST(sem.available() == 3u);

    // The target's permits go to a queued waiter, through the context.
    std::optional<permit> holder = sem.try_acquire_permit(3);
    BOOST_TEST_REQUIRE(holder.has_value());
    auto waiter = record_permit_acquire(sem, 3);
    check_counts(sem, 0, 1);
    *holder = holder->split(0);
    BOOST_TEST(holder->count() == 0u);
    check_counts(sem, 0, 0);
    BOOST_TEST(!waiter->done());
    run(io);
    check_permit(*waiter, success, sem, 3);
    waiter->held.reset();
    BOOST_TEST(sem.available() == 3u);
}

BOOST_FIXTURE_TEST_CASE(move_assignment_across_semaphores, semaphore_with<2>)
{
    asio_sync::semaphore other(io, 4);
    std::optional<permit> p = sem.try_acquire_permit(2);
    std::optional<permit> q = other.try_acquire_permit(3);
    BOOST_TEST_REQUIRE(p.has_value());
    BOOST_TEST_REQUIRE(q.has_value());

    *p = std::move(*q);
    BOOST_TEST(sem.available() == 2u); // given back to its own semaphore
    BOOST_TEST(other.available() == 1u);
    BOOST_TEST(&p->semaphore() == &other);
    BOOST_TEST(p->count() == 3u);
    BOOST_TEST(&q->semaphore() == &other);
    BOOST_TEST(q->count() == 0u);

    p.reset();
    q.reset();
    BOOST_TEST(sem.available() == 2u);
    BOOST_TEST(other.available() == 4u);
}

BOOST_FIXTURE_TEST_CASE(self_move_assignment_keeps_the_permits, semaphore_with<3>)
{
    std::optional<permit> p = sem.try_acquire_permit(2);
    BOOST_TEST_REQUIRE(p.has_value());
    permit& alias = *p;
    *p = std::move(alias);
    BOOST_TEST(p->count() == 2u);
    BOOST_TEST(&p->semaphore() == &sem);
    BOOST_TEST(sem.available() == 1u); // nothing given back, nothing lost
    p.reset();
    BOOST_TEST(sem.available() == 3u);
}

// An unbounded counter at max_permits cannot take more; a permit coming back must not fail
// (its destructor is noexcept) nor push the counter past max_permits.
BOOST_AUTO_TEST_CASE(permit_return_never_throws_on_a_full_unbounded_counter)
{
    asio::io_context io;
    asio_sync::semaphore sem(io, asio_sync::semaphore::max_permits);
    std::optional<permit> p = sem.try_acquire_permit(2);
    BOOST_TEST_REQUIRE(p.has_value());
    sem.release(2);
    BOOST_TEST(sem.available() == asio_sync::semaphore::max_permits);
    BOOST_CHECK_NO_THROW(p->release());
    BOOST_TEST(p->count() == 0u);
    BOOST_TEST(sem.available() == asio_sync::semaphore::max_permits);
}

// ---------------------------------------------------------------------------------------------
// try_acquire_permit.
// ---------------------------------------------------------------------------------------------

BOOST_FIXTURE_TEST_CASE(try_acquire_permit_success_and_failure, semaphore_with<3>)
{
    std::optional<permit> two = sem.try_acquire_permit(2);
    BOOST_TEST_REQUIRE(two.has_value());
    BOOST_TEST(two->count() == 2u);
    BOOST_TEST(sem.available() == 1u);

    BOOST_TEST(!sem.try_acquire_permit(2).has_value());
    BOOST_TEST(sem.available() == 1u); // a failure takes nothing

    std::optional<permit> one = sem.try_acquire_permit();
    BOOST_TEST_REQUIRE(one.has_value());
    BOOST_TEST(one->count() == 1u);
    BOOST_TEST(!sem.try_acquire_permit().has_value());

    std::optional<permit> zero = sem.try_acquire_permit(0);
    BOOST_TEST_REQUIRE(zero.has_value());
    BOOST_TEST(zero->count() == 0u);
    BOOST_TEST(!*zero);

    BOOST_TEST(!sem.try_acquire_permit(asio_sync::semaphore::max_permits + 1).has_value());
    one.reset();
    two.reset();
    BOOST_TEST(sem.available() == 3u);
}

BOOST_FIXTURE_TEST_CASE(try_acquire_permit_never_overtakes_a_waiter, semaphore_with<1>)
{
    auto waiter = test::make_record();
    sem.async_acquire(2, waiter.second); // collects the one permit
    BOOST_TEST(!sem.try_acquire_permit(1).has_value());
    sem.release(2); // one to the waiter, one to the counter
    std::optional<permit> p = sem.try_acquire_permit(1);
    BOOST_TEST_REQUIRE(p.has_value());
    run(io);
    BOOST_TEST(*waiter.first->ec == success);
}

BOOST_FIXTURE_TEST_CASE(try_acquire_permit_fails_once_closed, semaphore_with<2>)
{
    sem.close();
    BOOST_TEST(!sem.try_acquire_permit(1).has_value());
    BOOST_TEST(!sem.try_acquire_permit(0).has_value());
    BOOST_TEST(sem.available() == 2u);
}

BOOST_FIXTURE_TEST_CASE(permits_taken_before_close_come_back_after_it, semaphore_with<2>)
{
    std::optional<permit> p = sem.try_acquire_permit(2);
    BOOST_TEST_REQUIRE(p.has_value());
    sem.close();
    p.reset();
    BOOST_TEST(sem.available() == 2u);
    BOOST_TEST(sem.is_closed());
    BOOST_TEST(!sem.try_acquire(1));
}

// ---------------------------------------------------------------------------------------------
// async_acquire_permit through each completion token.
// ---------------------------------------------------------------------------------------------

BOOST_FIXTURE_TEST_CASE(callback_at_once_and_after_waiting, semaphore_with<3>)
{
    auto now = record_permit_acquire(sem, 2);
    BOOST_TEST(!now->done()); // posted, even when granted at once
    BOOST_TEST(sem.available() == 1u);
    run(io);
    check_permit(*now, success, sem, 2);
    BOOST_TEST(sem.available() == 1u); // held by the permit the handler kept

    auto later = record_permit_acquire(sem, 3); // collects 1
    check_counts(sem, 0, 1);
    now->held.reset(); // 2 more: the waiter has its 3
    BOOST_TEST(!later->done());
    check_counts(sem, 0, 0);
    run(io);
    check_permit(*later, success, sem, 3);
    later->held.reset();
    BOOST_TEST(sem.available() == 3u);
}

BOOST_FIXTURE_TEST_CASE(a_permit_dropped_by_the_handler_comes_back, semaphore_with<2>)
{
    int calls = 0;
    std::size_t seen = 0;
    std::size_t available_inside = 99;
    sem.async_acquire_permit(2, [&](error_code ec, permit p) {
        ++calls;
        BOOST_TEST(!ec);
        seen = p.count();
        available_inside = sem.available();
    });
    run(io);
    BOOST_TEST(calls == 1);
    BOOST_TEST(seen == 2u);
    BOOST_TEST(available_inside == 0u);
    BOOST_TEST(sem.available() == 2u);
}

BOOST_FIXTURE_TEST_CASE(errors_complete_with_an_empty_permit, semaphore_with<1>)
{
    auto too_many_permits = record_permit_acquire(sem, asio_sync::semaphore::max_permits + 1);
    check_counts(sem, 1, 0);

    auto cancelled = record_permit_acquire(sem, 3); // collects 1
    BOOST_TEST(sem.cancel() == 1u);
    check_counts(sem, 1, 0);

    asio::cancellation_signal signal;
    auto [per_op, per_op_handler] = make_permit_record();
    sem.async_acquire_permit(2, asio::bind_cancellation_slot(signal.slot(), per_op_handler));
    check_counts(sem, 0, 1);
    signal.emit(asio::cancellation_type::terminal);
    check_counts(sem, 1, 0);

    auto closed_waiter = record_permit_acquire(sem, 2);
    sem.close();
    auto closed_later = record_permit_acquire(sem, 1);
    auto closed_zero = record_permit_acquire(sem, 0);

    run(io);
    check_permit(*too_many_permits, too_many, sem, 0);
    check_permit(*cancelled, aborted, sem, 0);
    check_permit(*per_op, aborted, sem, 0);
    check_permit(*closed_waiter, closed, sem, 0);
    check_permit(*closed_later, closed, sem, 0);
    check_permit(*closed_zero, closed, sem, 0);
    BOOST_TEST(sem.available() == 1u);
    for (auto* out : {&too_many_permits, &cancelled, &per_op, &closed_waiter, &closed_later, &closed_zero})
        (*out)->held.reset();
    BOOST_TEST(sem.available() == 1u); // the empty permits gave nothing back
}

// The semaphore is destroyed with a permit acquire queued: the handler gets an empty permit,
// which names the dead semaphore and must not touch it when destroyed.
BOOST_AUTO_TEST_CASE(destroying_the_semaphore_completes_with_an_empty_permit)
{
    asio::io_context io;
    auto sem = std::make_unique<asio_sync::semaphore>(io, 1);
    auto out = record_permit_acquire(*sem, 2);
    sem.reset();
    run(io);
    BOOST_TEST(out->calls == 1);
    BOOST_TEST(*out->ec == aborted);
    BOOST_TEST_REQUIRE(out->held.has_value());
    BOOST_TEST(out->held->count() == 0u);
    out->held.reset();
}

#if defined(BOOST_ASIO_HAS_CO_AWAIT)
BOOST_FIXTURE_TEST_CASE(use_awaitable_returns_the_permit, semaphore_with<2>)
{
    std::size_t first_count = 0;
    std::size_t second_count = 0;
    std::size_t available_while_held = 99;
    test::spawned coro(io, [&]() -> asio::awaitable<void> {
        permit first = co_await sem.async_acquire_permit(2, asio::use_awaitable);
        first_count = first.count();
        permit second = co_await sem.async_acquire_permit(1, asio::use_awaitable); // waits
        second_count = second.count();
        available_while_held = sem.available();
    });
    poll(io);
    BOOST_TEST(first_count == 2u);
    check_counts(sem, 0, 1);
    BOOST_TEST(coro.calls == 0);
    sem.release(1); // a plain release on an unbounded semaphore: a third permit enters
    run(io);
    coro.check_finished();
    BOOST_TEST(second_count == 1u);
    BOOST_TEST(available_while_held == 0u);
    BOOST_TEST(sem.available() == 3u); // both permits were returned when the coroutine ended
}

BOOST_FIXTURE_TEST_CASE(use_awaitable_throws_on_error, semaphore_with<0>)
{
    std::optional<error_code> caught;
    bool after = false;
    test::spawned coro(io, [&]() -> asio::awaitable<void> {
        try
        {
            permit p = co_await sem.async_acquire_permit(1, asio::use_awaitable);
            after = true;
        }
        catch (const boost::system::system_error& e)
        {
            caught = e.code();
        }
    });
    poll(io);
    BOOST_TEST(sem.waiting() == 1u);
    sem.close();
    run(io);
    coro.check_finished();
    BOOST_TEST(!after);
    BOOST_TEST_REQUIRE(caught.has_value());
    BOOST_TEST(*caught == closed);
    BOOST_TEST(sem.available() == 0u);
}

BOOST_FIXTURE_TEST_CASE(as_tuple_use_awaitable_and_callback, semaphore_with<1>)
{
    std::vector<std::pair<error_code, std::size_t>> results;
    test::spawned coro(io, [&]() -> asio::awaitable<void> {
        for (int i = 0; i < 2; ++i)
        {
            auto [ec, p] = co_await sem.async_acquire_permit(1, asio::as_tuple(asio::use_awaitable));
            results.emplace_back(ec, p.count());
            if (!ec)
                p.forget(); // keep it away, so that the next acquire has to wait
        }
    });
    poll(io);
    BOOST_TEST_REQUIRE(results.size() == 1u);
    BOOST_TEST(results[0].first == success);
    BOOST_TEST(results[0].second == 1u);
    BOOST_TEST(sem.waiting() == 1u);
    sem.cancel();
    run(io);
    coro.check_finished();
    BOOST_TEST_REQUIRE(results.size() == 2u);
    BOOST_TEST(results[1].first == aborted);
    BOOST_TEST(results[1].second == 0u);
    BOOST_TEST(sem.available() == 0u);

    sem.release(2);
    std::optional<std::tuple<error_code, std::size_t>> got;
    sem.async_acquire_permit(2, asio::as_tuple([&](std::tuple<error_code, permit> t) {
                                 got.emplace(std::get<0>(t), std::get<1>(t).count());
                             }));
    BOOST_TEST(!got.has_value());
    run(io);
    BOOST_TEST_REQUIRE(got.has_value());
    BOOST_TEST(std::get<0>(*got) == success);
    BOOST_TEST(std::get<1>(*got) == 2u);
    BOOST_TEST(sem.available() == 2u);
}
#endif

// use_future completes through its own executor (Asio's system executor), so the futures are
// waited for, not polled.
BOOST_FIXTURE_TEST_CASE(use_future_at_once_and_on_error, semaphore_with<2>)
{
    std::future<permit> now = sem.async_acquire_permit(2, asio::use_future);
    BOOST_TEST(sem.available() == 0u);
    run(io);
    BOOST_TEST_REQUIRE((now.wait_for(limit) == std::future_status::ready));
    {
        permit p = now.get();
        BOOST_TEST(p.count() == 2u);
        BOOST_TEST(&p.semaphore() == &sem);
        BOOST_TEST(sem.available() == 0u);
    }
    BOOST_TEST(sem.available() == 2u);

    // A shared future keeps the stored exception referenced from this thread until the check is
    // done (see semaphore_tokens.cpp: ThreadSanitizer cannot see the exception's reference count).
    std::shared_future<permit> failing = sem.async_acquire_permit(3, asio::use_future).share();
    BOOST_TEST(sem.waiting() == 1u);
    sem.cancel();
    run(io);
    BOOST_TEST_REQUIRE((failing.wait_for(limit) == std::future_status::ready));
    check_throws_code([&] { failing.get(); }, aborted);
    BOOST_TEST(sem.available() == 2u);
}

// The context runs on a thread of its own, the permits come back from a third one.
BOOST_FIXTURE_TEST_CASE(use_future_with_the_context_on_another_thread, semaphore_with<1>)
{
    auto guard = asio::make_work_guard(io);
    std::thread runner([this] { io.run_for(limit); });

    std::optional<permit> held = sem.try_acquire_permit(1);
    BOOST_TEST_REQUIRE(held.has_value());
    std::future<permit> later = sem.async_acquire_permit(1, asio::use_future);
    BOOST_TEST(sem.waiting() == 1u);
    std::thread([&held] { held.reset(); }).join();
    BOOST_TEST_REQUIRE((later.wait_for(limit) == std::future_status::ready));
    {
        permit p = later.get();
        BOOST_TEST(p.count() == 1u);
        check_counts(sem, 0, 0);
    }
    BOOST_TEST(sem.available() == 1u);

    guard.reset();
    runner.join();
    BOOST_TEST(io.stopped());
}

BOOST_FIXTURE_TEST_CASE(deferred_takes_nothing_until_invoked, semaphore_with<2>)
{
    auto op = sem.async_acquire_permit(2, asio::deferred);
    poll(io);
    check_counts(sem, 2, 0);
    auto [out, handler] = make_permit_record();
    std::move(op)(handler);
    BOOST_TEST(sem.available() == 0u);
    BOOST_TEST(!out->done());
    run(io);
    check_permit(*out, success, sem, 2);

    // Composed: the continuation sees the permit and passes on its count.
    std::optional<std::size_t> count;
    sem.async_acquire_permit(1, asio::deferred([](error_code ec, permit p) {
                                 return asio::deferred.values(ec, p.count());
                             }))([&](error_code ec, std::size_t n) {
        BOOST_TEST(ec == aborted);
        count = n;
    });
    BOOST_TEST(sem.waiting() == 1u);
    sem.cancel();
    run(io);
    BOOST_TEST_REQUIRE(count.has_value());
    BOOST_TEST(*count == 0u);
    out->held.reset();
    BOOST_TEST(sem.available() == 2u);
}

// ---------------------------------------------------------------------------------------------
// Handlers destroyed without running still give their permits back.
// ---------------------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(abandoned_permit_grants_give_the_permits_back)
{
    for (const bool bounded : {false, true})
    {
        for (const bool waited : {false, true})
        {
            for (const bool own_executor : {false, true})
            {
                BOOST_TEST_CONTEXT((bounded ? "bounded" : "unbounded")
                                   << (waited ? ", granted after waiting" : ", granted at once")
                                   << (own_executor ? ", handler bound to a context never run"
                                                    : ", context destroyed with the completion queued"))
                {
                    auto io = std::make_unique<asio::io_context>();
                    auto never_run = std::make_unique<asio::io_context>();
                    std::unique_ptr<asio_sync::semaphore> sem =
                        bounded ? std::make_unique<asio_sync::semaphore>(*io, 3, 3)
                                : std::make_unique<asio_sync::semaphore>(*io, 3);
                    auto token = std::make_shared<int>(0);
                    bool invoked = false;
                    const auto make_handler = [&invoked, &token] {
                        return [&invoked, token](error_code, permit) { invoked = true; };
                    };
                    std::optional<permit> holder;
                    if (waited)
                        holder = sem->try_acquire_permit(2);
                    if (own_executor)
                        sem->async_acquire_permit(3, asio::bind_executor(*never_run, make_handler()));
                    else
                        sem->async_acquire_permit(3, make_handler());
                    BOOST_TEST(sem->waiting() == (waited ? 1u : 0u));
                    holder.reset(); // the grant: its completion, permit inside, is queued now
                    BOOST_TEST(sem->available() == 0u);
                    if (own_executor)
                        run(*io); // the semaphore's own context has nothing left to do
                    BOOST_TEST(token.use_count() == 2);
                    (own_executor ? never_run : io).reset();
                    BOOST_TEST(!invoked);
                    BOOST_TEST(token.use_count() == 1);
                    BOOST_TEST(sem->available() == 3u);
                    BOOST_TEST(sem->waiting() == 0u);
                    if (bounded)
                        BOOST_TEST(!sem->try_release(1)); // back in circulation, not beyond the bound
                }
            }
        }
    }
}

// A permit acquire still queued at context shutdown is destroyed without running; what it had
// collected returns.
BOOST_AUTO_TEST_CASE(a_queued_permit_acquire_destroyed_at_shutdown_returns_what_it_collected)
{
    auto io = std::make_unique<asio::io_context>();
    asio_sync::semaphore sem(*io, 2);
    auto token = std::make_shared<int>(0);
    bool invoked = false;
    sem.async_acquire_permit(3, [&invoked, token](error_code, permit) { invoked = true; });
    check_counts(sem, 0, 1);
    io.reset();
    BOOST_TEST(!invoked);
    BOOST_TEST(token.use_count() == 1);
    check_counts(sem, 2, 0);
}

// Distinct permits of one semaphore used on several threads at once, while a context on another
// thread serves permit acquires: every permit comes back.
BOOST_AUTO_TEST_CASE(permits_used_concurrently_on_several_threads)
{
    constexpr std::size_t permits = 8;
    constexpr int threads = 3;
    constexpr int rounds = 2000;
    asio::io_context io;
    asio_sync::semaphore sem(io, permits);
    std::atomic<int> taken{0};
    std::atomic<int> granted{0};
    std::atomic<int> failed{0};
    {
        auto guard = asio::make_work_guard(io);
        std::thread runner([&io] { io.run_for(limit); });
        std::vector<std::thread> workers;
        for (int t = 0; t < threads; ++t)
        {
            workers.emplace_back([&, t] {
                for (int i = 0; i < rounds;)
                {
                    std::optional<permit> p = sem.try_acquire_permit(2);
                    if (!p)
                    {
                        std::this_thread::yield(); // queued acquires go first
                        continue;
                    }
                    ++i;
                    taken.fetch_add(1);
                    permit half = p->split(1);
                    if ((i + t) % 2 == 0)
                        p->merge(std::move(half));
                    else
                        half.release();
                }
            });
        }
        // Async permit acquires completing on the context thread, their permits dropped there.
        std::promise<void> all_granted;
        std::atomic<int> left{rounds};
        for (int i = 0; i < rounds; ++i)
        {
            sem.async_acquire_permit(3, [&](error_code ec, permit p) {
                if (ec || p.count() != 3)
                    failed.fetch_add(1);
                granted.fetch_add(1);
                if (left.fetch_sub(1) == 1)
                    all_granted.set_value();
            });
        }
        for (std::thread& w : workers)
            w.join();
        BOOST_TEST_REQUIRE((all_granted.get_future().wait_for(limit) == std::future_status::ready));
        guard.reset();
        runner.join();
    }
    BOOST_TEST(granted.load() == rounds);
    BOOST_TEST(failed.load() == 0);
    BOOST_TEST(taken.load() == threads * rounds);
    check_counts(sem, permits, 0);
}

BOOST_AUTO_TEST_SUITE_END()
