// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#define BOOST_TEST_MODULE semaphore_capacity
#include <asio_sync/semaphore.hpp>

#include <support/handler.hpp>
#include <support/io_steps.hpp>
#include <support/semaphore_checks.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/system/error_code.hpp>
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cstddef>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <utility>
#include <vector>

namespace {

namespace asio = boost::asio;
namespace test = asio_sync::test;
using asio_sync::test::check_completed;
using asio_sync::test::poll;
using asio_sync::test::record_acquire;
using asio_sync::test::run;
using boost::system::error_code;
using permit = asio_sync::semaphore::permit;

constexpr std::size_t max_permits = asio_sync::semaphore::max_permits;
constexpr std::size_t max_bound = asio_sync::semaphore::max_bound;

const error_code success{};
const error_code aborted = asio::error::operation_aborted;
const error_code closed = asio_sync::error::closed;
const error_code too_many = asio_sync::error::too_many_permits;

struct fixture
{
    asio::io_context io;
};

// Checks what the semaphore reports: permits in the counter, queued acquires, capacity.
void check_state(const asio_sync::semaphore& sem, std::size_t available, std::size_t waiting,
                 std::size_t capacity)
{
    BOOST_TEST(sem.available() == available);
    BOOST_TEST(sem.waiting() == waiting);
    BOOST_TEST(sem.capacity() == capacity);
}

// Takes `n` permits as a permit object; fails the test if that is not possible at once.
permit take_permit(asio_sync::semaphore& sem, std::size_t n)
{
    std::optional<permit> p = sem.try_acquire_permit(n);
    BOOST_TEST_REQUIRE(p.has_value());
    return std::move(*p);
}

// A semaphore that is closed stays closed, whatever happened to its capacity: nothing can be
// acquired, and an acquire completes with `closed`.
void check_still_closed(asio::io_context& io, asio_sync::semaphore& sem)
{
    BOOST_TEST(sem.is_closed());
    BOOST_TEST(!sem.try_acquire(1));
    BOOST_TEST(!sem.try_acquire(0));
    BOOST_TEST(!sem.try_acquire_permit(1).has_value());
    auto out = record_acquire(sem, 1);
    BOOST_TEST(sem.waiting() == 0u);
    run(io);
    check_completed(*out, closed);
}

} // namespace

BOOST_AUTO_TEST_SUITE(semaphore_capacity)

// ---------------------------------------------------------------------------------------------
// Bounded semaphores.
// ---------------------------------------------------------------------------------------------

BOOST_FIXTURE_TEST_CASE(bounded_construction_checks_its_arguments, fixture)
{
    // The counter and the room share a word: a bound takes at most half of it.
    static_assert(max_bound == (std::size_t(1) << (std::numeric_limits<std::size_t>::digits - 2) / 2) - 1);
    BOOST_CHECK_THROW(asio_sync::semaphore(io, 0, max_bound + 1), std::invalid_argument);
    BOOST_CHECK_THROW(asio_sync::semaphore(io.get_executor(), 0, max_bound + 1), std::invalid_argument);
    BOOST_CHECK_THROW(asio_sync::semaphore(io, 0, max_permits), std::invalid_argument);
    BOOST_CHECK_THROW(asio_sync::semaphore(io, 4, 3), std::invalid_argument);
    BOOST_CHECK_THROW(asio_sync::semaphore(io.get_executor(), 1, 0), std::invalid_argument);
    BOOST_CHECK_THROW(asio_sync::semaphore(io, max_bound + 1, max_bound), std::invalid_argument);

    asio_sync::semaphore full(io, 3, 3);
    check_state(full, 3, 0, 3);
    asio_sync::semaphore partly(io.get_executor(), 1, 5);
    check_state(partly, 1, 0, 5);
    asio_sync::semaphore empty(io, 0, 0);
    check_state(empty, 0, 0, 0);
    asio_sync::semaphore largest(io, max_bound, max_bound);
    check_state(largest, max_bound, 0, max_bound);
    // The whole bound moves through the counter and the room, neither spilling into the other.
    BOOST_TEST(largest.try_acquire(max_bound));
    check_state(largest, 0, 0, max_bound);
    BOOST_TEST(!largest.try_release(max_bound + 1));
    largest.release(max_bound);
    check_state(largest, max_bound, 0, max_bound);
    BOOST_TEST(!largest.try_release(1));

    asio_sync::semaphore unbounded(io, 3);
    check_state(unbounded, 3, 0, max_permits);
}

BOOST_FIXTURE_TEST_CASE(bounded_plain_acquire_and_release_always_work, fixture)
{
    asio_sync::semaphore sem(io, 3, 3);
    BOOST_TEST(sem.try_acquire(2));
    sem.release(2);
    check_state(sem, 3, 0, 3);

    auto now = record_acquire(sem, 3);
    run(io);
    check_completed(*now, success);
    BOOST_TEST(sem.available() == 0u);
    BOOST_TEST(sem.try_release(1));
    sem.release(2);
    check_state(sem, 3, 0, 3);

    // A plain acquire that waited, granted by a permit object coming back.
    permit p = take_permit(sem, 2);
    auto later = record_acquire(sem, 3); // collects 1
    BOOST_TEST(sem.waiting() == 1u);
    p.release();
    run(io);
    check_completed(*later, success);
    check_state(sem, 0, 0, 3);
    sem.release(3);
    check_state(sem, 3, 0, 3);
}

BOOST_FIXTURE_TEST_CASE(unpaired_release_throws_and_try_release_fails_changing_nothing, fixture)
{
    asio_sync::semaphore sem(io, 3, 3);
    BOOST_CHECK_THROW(sem.release(1), std::overflow_error);
    BOOST_TEST(!sem.try_release(1));
    check_state(sem, 3, 0, 3);
    BOOST_TEST(sem.try_release(0)); // nothing to add is never too much
    BOOST_CHECK_NO_THROW(sem.release(0));

    BOOST_TEST(sem.try_acquire(2));
    BOOST_CHECK_THROW(sem.release(3), std::overflow_error);
    BOOST_TEST(!sem.try_release(3));
    check_state(sem, 1, 0, 3);
    sem.release(2);
    check_state(sem, 3, 0, 3);

    // With a waiter queued, a failed release serves nobody.
    BOOST_TEST(sem.try_acquire(1));
    auto waiter = record_acquire(sem, 3); // collects 2
    BOOST_CHECK_THROW(sem.release(2), std::overflow_error);
    BOOST_TEST(!sem.try_release(2));
    check_state(sem, 0, 1, 3);
    poll(io);
    BOOST_TEST(!waiter->done());
    sem.release(1);
    run(io);
    check_completed(*waiter, success);
    sem.release(3);
    check_state(sem, 3, 0, 3);
}

BOOST_FIXTURE_TEST_CASE(a_partly_full_bounded_semaphore_takes_releases_up_to_the_bound, fixture)
{
    asio_sync::semaphore sem(io, 1, 3);
    BOOST_CHECK_THROW(sem.release(3), std::overflow_error);
    sem.release(2);
    check_state(sem, 3, 0, 3);
    BOOST_TEST(!sem.try_release(1));
}

// rsevents-extra: a bounded semaphore that checked `available + n <= bound` on release let a
// free-standing release through while permits were out, and then more holders than the bound in.
// The bound counts the permits held too.
BOOST_FIXTURE_TEST_CASE(regression_release_checks_the_permits_held_not_only_the_available_ones, fixture)
{
    asio_sync::semaphore sem(io, 2, 2);
    permit first = take_permit(sem, 1);
    permit second = take_permit(sem, 1);
    check_state(sem, 0, 0, 2);

    BOOST_TEST(!sem.try_release(1)); // available 0 + 1 <= 2, yet two holders are out
    BOOST_CHECK_THROW(sem.release(1), std::overflow_error);
    BOOST_CHECK_THROW(sem.release(2), std::overflow_error);
    check_state(sem, 0, 0, 2);

    // Had it succeeded, this acquire would have been a third holder.
    auto third = record_acquire(sem, 1);
    poll(io);
    BOOST_TEST(!third->done());
    BOOST_TEST(sem.waiting() == 1u);

    first.release(); // serves the waiter
    run(io);
    check_completed(*third, success);
    second.release();
    sem.release(1); // the third holder's, plain
    check_state(sem, 2, 0, 2);
    BOOST_TEST(!sem.try_release(1));
}

BOOST_FIXTURE_TEST_CASE(bounded_permit_return_never_fails, fixture)
{
    asio_sync::semaphore sem(io, 1, 2);
    permit p = take_permit(sem, 1);
    sem.release(1); // the one permit missing from the start: the bound is reached
    check_state(sem, 1, 0, 2);
    BOOST_TEST(!sem.try_release(1));

    BOOST_CHECK_NO_THROW(p.release()); // in circulation all along
    check_state(sem, 2, 0, 2);
    BOOST_TEST(!sem.try_release(1));

    // Also through the destructor and move assignment, with a waiter queued.
    std::optional<permit> a = sem.try_acquire_permit(1);
    std::optional<permit> b = sem.try_acquire_permit(1);
    BOOST_TEST_REQUIRE(a.has_value());
    BOOST_TEST_REQUIRE(b.has_value());
    auto waiter = record_acquire(sem, 2);
    *a = std::move(*b);
    a.reset();
    run(io);
    check_completed(*waiter, success);
    check_state(sem, 0, 0, 2);
    sem.release(2);
    check_state(sem, 2, 0, 2);
}

BOOST_FIXTURE_TEST_CASE(permit_forget_makes_room_for_a_plain_release, fixture)
{
    asio_sync::semaphore sem(io, 3, 3);
    permit p = take_permit(sem, 2);
    BOOST_TEST(!sem.try_release(1));
    p.forget();
    BOOST_TEST(p.count() == 0u);
    check_state(sem, 1, 0, 3);
    p.release();
    BOOST_TEST(sem.available() == 1u); // forgotten: not given back

    sem.release(2);
    check_state(sem, 3, 0, 3);
    BOOST_TEST(!sem.try_release(1));
    BOOST_CHECK_THROW(sem.release(1), std::overflow_error);
}

BOOST_FIXTURE_TEST_CASE(acquiring_more_than_the_capacity_completes_with_too_many_permits, fixture)
{
    asio_sync::semaphore sem(io, 3, 3);
    auto plain = record_acquire(sem, 4);
    std::optional<error_code> permit_ec;
    std::optional<std::size_t> permit_count;
    sem.async_acquire_permit(4, [&](error_code ec, permit p) {
        permit_ec = ec;
        permit_count = p.count();
    });
    check_state(sem, 3, 0, 3); // nothing queued, nothing taken
    BOOST_TEST(!sem.try_acquire(4));
    BOOST_TEST(!sem.try_acquire_permit(4).has_value());
    run(io);
    check_completed(*plain, too_many);
    BOOST_TEST_REQUIRE(permit_ec.has_value());
    BOOST_TEST(*permit_ec == too_many);
    BOOST_TEST(*permit_count == 0u);

    // Even when the capacity could be reached later, the check is made at initiation.
    asio_sync::semaphore empty(io, 0, 2);
    auto beyond = record_acquire(empty, 3);
    auto within = record_acquire(empty, 2);
    BOOST_TEST(empty.waiting() == 1u);
    empty.add_permits(2);
    run(io);
    check_completed(*beyond, too_many);
    check_completed(*within, success);

    // A raised capacity admits what it now covers.
    sem.add_permits(1);
    auto four = record_acquire(sem, 4);
    run(io);
    check_completed(*four, success);
    check_state(sem, 0, 0, 4);
}

BOOST_FIXTURE_TEST_CASE(a_plain_waiter_cancelled_after_collecting_leaves_the_bound_unchanged, fixture)
{
    asio_sync::semaphore sem(io, 2, 3);
    asio::cancellation_signal signal;
    auto [out, handler] = test::make_record();
    sem.async_acquire(3, asio::bind_cancellation_slot(signal.slot(), handler)); // collects 2
    signal.emit(asio::cancellation_type::terminal);
    run(io);
    check_completed(*out, aborted);
    check_state(sem, 2, 0, 3);
    sem.release(1); // the one permit missing from the start
    BOOST_TEST(!sem.try_release(1));
    check_state(sem, 3, 0, 3);
}

// ---------------------------------------------------------------------------------------------
// add_permits.
// ---------------------------------------------------------------------------------------------

BOOST_FIXTURE_TEST_CASE(add_permits_serves_waiters_first_then_the_counter, fixture)
{
    for (const bool bounded : {false, true})
    {
        BOOST_TEST_CONTEXT((bounded ? "bounded" : "unbounded"))
        {
            std::unique_ptr<asio_sync::semaphore> sem = bounded
                                                            ? std::make_unique<asio_sync::semaphore>(io, 1, 2)
                                                            : std::make_unique<asio_sync::semaphore>(io, 1);
            const std::size_t capacity = sem->capacity();
            auto first = record_acquire(*sem, 2); // collects 1
            auto second = record_acquire(*sem, 1);
            sem->add_permits(1);        // the head only
            BOOST_TEST(!first->done()); // posted, not invoked inside add_permits
            BOOST_TEST(sem->waiting() == 1u);
            sem->add_permits(3); // the second, and 2 to the counter
            BOOST_TEST(sem->waiting() == 0u);
            BOOST_TEST(sem->available() == 2u);
            BOOST_TEST(sem->capacity() == (bounded ? capacity + 4 : max_permits));
            run(io);
            check_completed(*first, success);
            check_completed(*second, success);
            sem->add_permits(0);
            BOOST_TEST(sem->available() == 2u);
            BOOST_TEST(sem->capacity() == (bounded ? capacity + 4 : max_permits));
        }
    }
}

BOOST_FIXTURE_TEST_CASE(add_permits_on_a_bounded_semaphore_does_not_admit_unpaired_releases, fixture)
{
    asio_sync::semaphore sem(io, 2, 2);
    sem.add_permits(1);
    check_state(sem, 3, 0, 3);
    BOOST_TEST(!sem.try_release(1)); // the new permit is in circulation already
    BOOST_TEST(sem.try_acquire(3));
    sem.release(3);
    check_state(sem, 3, 0, 3);
    BOOST_TEST(!sem.try_release(1));
}

BOOST_FIXTURE_TEST_CASE(add_permits_overflow_throws_and_changes_nothing, fixture)
{
    asio_sync::semaphore unbounded(io, max_permits - 1);
    BOOST_CHECK_THROW(unbounded.add_permits(2), std::overflow_error);
    check_state(unbounded, max_permits - 1, 0, max_permits);
    unbounded.add_permits(1);
    BOOST_TEST(unbounded.available() == max_permits);
    BOOST_CHECK_THROW(unbounded.add_permits(1), std::overflow_error);
    BOOST_TEST(unbounded.available() == max_permits);

    asio_sync::semaphore bounded(io, 0, max_bound - 1);
    auto waiter = record_acquire(bounded, 1);
    BOOST_CHECK_THROW(bounded.add_permits(2), std::overflow_error);
    check_state(bounded, 0, 1, max_bound - 1); // the waiter was not served
    poll(io);
    BOOST_TEST(!waiter->done());
    bounded.add_permits(1);
    check_state(bounded, 0, 0, max_bound);
    run(io);
    check_completed(*waiter, success);

    asio_sync::semaphore queued(io, 0);
    auto queued_waiter = record_acquire(queued, 1);
    BOOST_CHECK_THROW(queued.add_permits(max_permits + 1), std::overflow_error);
    check_state(queued, 0, 1, max_permits);
    queued.add_permits(1);
    run(io);
    check_completed(*queued_waiter, success);
}

// ---------------------------------------------------------------------------------------------
// forget_permits.
// ---------------------------------------------------------------------------------------------

BOOST_FIXTURE_TEST_CASE(forget_permits_takes_only_what_is_available, fixture)
{
    for (const bool bounded : {false, true})
    {
        BOOST_TEST_CONTEXT((bounded ? "bounded" : "unbounded"))
        {
            std::unique_ptr<asio_sync::semaphore> sem = bounded
                                                            ? std::make_unique<asio_sync::semaphore>(io, 5, 5)
                                                            : std::make_unique<asio_sync::semaphore>(io, 5);
            const auto capacity_after = [&](std::size_t forgotten) {
                return bounded ? 5 - forgotten : max_permits;
            };
            BOOST_TEST(sem->forget_permits(0) == 0u);
            BOOST_TEST(sem->forget_permits(2) == 2u);
            check_state(*sem, 3, 0, capacity_after(2));
            BOOST_TEST(sem->try_acquire(1));
            BOOST_TEST(sem->forget_permits(10) == 2u);
            check_state(*sem, 0, 0, capacity_after(4));
            BOOST_TEST(sem->forget_permits(1) == 0u);
            check_state(*sem, 0, 0, capacity_after(4));
            sem->release(1); // the plain holder's permit comes back
            check_state(*sem, 1, 0, capacity_after(4));
            if (bounded)
                BOOST_TEST(!sem->try_release(1));
        }
    }
}

BOOST_FIXTURE_TEST_CASE(forget_permits_returns_zero_while_anyone_waits, fixture)
{
    asio_sync::semaphore sem(io, 2, 4);
    auto waiter = record_acquire(sem, 3); // collects 2
    BOOST_TEST(sem.forget_permits(5) == 0u);
    check_state(sem, 0, 1, 4);
    sem.add_permits(1);
    run(io);
    check_completed(*waiter, success);
    check_state(sem, 0, 0, 5);
    BOOST_TEST(sem.forget_permits(1) == 0u);
    sem.release(3);
    BOOST_TEST(sem.forget_permits(1) == 1u);
    check_state(sem, 2, 0, 4);
}

BOOST_FIXTURE_TEST_CASE(forget_permits_while_plain_holders_are_out, fixture)
{
    asio_sync::semaphore sem(io, 4, 4);
    BOOST_TEST(sem.try_acquire(2));
    BOOST_TEST(sem.forget_permits(2) == 2u);
    check_state(sem, 0, 0, 2);
    sem.release(2); // the holder's permits come back: within the lowered bound
    check_state(sem, 2, 0, 2);
    BOOST_TEST(!sem.try_release(1));
}

// ---------------------------------------------------------------------------------------------
// reduce_permits.
// ---------------------------------------------------------------------------------------------

BOOST_FIXTURE_TEST_CASE(reduce_permits_takes_available_permits_at_once, fixture)
{
    asio_sync::semaphore unbounded(io, 5);
    unbounded.reduce_permits(2);
    check_state(unbounded, 3, 0, max_permits);
    unbounded.reduce_permits(0);
    check_state(unbounded, 3, 0, max_permits);
    unbounded.reduce_permits(3);
    check_state(unbounded, 0, 0, max_permits);
    unbounded.release(1); // no debt: straight to the counter
    BOOST_TEST(unbounded.available() == 1u);

    asio_sync::semaphore bounded(io, 5, 5);
    bounded.reduce_permits(2);
    check_state(bounded, 3, 0, 3);
    BOOST_TEST(!bounded.try_release(1));
    bounded.reduce_permits(3);
    check_state(bounded, 0, 0, 0);
    BOOST_CHECK_THROW(bounded.reduce_permits(1), std::invalid_argument);
}

BOOST_FIXTURE_TEST_CASE(reduce_permits_leaves_a_debt_that_releases_pay_first, fixture)
{
    asio_sync::semaphore sem(io, 3, 3);
    BOOST_TEST(sem.try_acquire(3));
    sem.reduce_permits(2);
    check_state(sem, 0, 0, 1);

    // While in debt: nothing available, try_acquire fails (but for 0), acquires queue.
    BOOST_TEST(!sem.try_acquire(1));
    BOOST_TEST(sem.try_acquire(0));
    BOOST_TEST(!sem.try_acquire_permit(1).has_value());
    BOOST_TEST(sem.forget_permits(1) == 0u);
    auto waiter = record_acquire(sem, 1);
    BOOST_TEST(sem.waiting() == 1u);

    sem.release(1); // pays the debt
    check_state(sem, 0, 1, 1);
    sem.release(1); // pays the rest of it
    check_state(sem, 0, 1, 1);
    poll(io);
    BOOST_TEST(!waiter->done());
    sem.release(1); // now the waiter
    check_state(sem, 0, 0, 1);
    run(io);
    check_completed(*waiter, success);
    sem.release(1);
    check_state(sem, 1, 0, 1);
    BOOST_TEST(!sem.try_release(1));
}

BOOST_FIXTURE_TEST_CASE(reduce_debt_with_a_partial_counter, fixture)
{
    asio_sync::semaphore sem(io, 2);
    BOOST_TEST(sem.try_acquire(1)); // 1 left in the counter
    sem.reduce_permits(3);          // takes 1, owes 2
    check_state(sem, 0, 0, max_permits);
    sem.release(1);
    BOOST_TEST(sem.available() == 0u);
    sem.release(2); // 1 pays the rest, 1 to the counter
    BOOST_TEST(sem.available() == 1u);
    BOOST_TEST(sem.try_acquire(1));
}

BOOST_FIXTURE_TEST_CASE(reduce_debt_is_paid_by_permits_coming_back, fixture)
{
    asio_sync::semaphore sem(io, 3, 3);
    permit p = take_permit(sem, 3);
    sem.reduce_permits(1);
    check_state(sem, 0, 0, 2);
    auto waiter = record_acquire(sem, 2);
    permit part = p.split(1);
    part.release(); // pays the debt
    check_state(sem, 0, 1, 2);
    p.release(); // 2 to the waiter
    check_state(sem, 0, 0, 2);
    run(io);
    check_completed(*waiter, success);
    sem.release(2);
    check_state(sem, 2, 0, 2);
    BOOST_TEST(!sem.try_release(1));
}

BOOST_FIXTURE_TEST_CASE(reduce_debt_is_paid_by_a_cancelled_waiters_collected_permits, fixture)
{
    asio_sync::semaphore sem(io, 3);
    asio::cancellation_signal signal;
    auto [head, head_handler] = test::make_record();
    sem.async_acquire(4, asio::bind_cancellation_slot(signal.slot(), head_handler)); // collects 3
    auto next = record_acquire(sem, 2);
    sem.reduce_permits(2); // the counter is empty: all owed
    check_state(sem, 0, 2, max_permits);

    signal.emit(asio::cancellation_type::terminal); // 3 collected: 2 pay the debt, 1 to `next`
    check_state(sem, 0, 1, max_permits);
    poll(io);
    check_completed(*head, aborted);
    BOOST_TEST(!next->done());
    sem.release(1);
    run(io);
    check_completed(*next, success);
    BOOST_TEST(sem.available() == 0u);
}

BOOST_FIXTURE_TEST_CASE(reduce_debt_is_paid_by_what_cancel_and_close_return, fixture)
{
    for (const bool closing : {false, true})
    {
        BOOST_TEST_CONTEXT((closing ? "close()" : "cancel()"))
        {
            asio_sync::semaphore sem(io, 3, 6);
            auto first = record_acquire(sem, 4); // collects 3
            auto second = record_acquire(sem, 1);
            sem.reduce_permits(2); // owes 2; both still fit under the new bound of 4
            check_state(sem, 0, 2, 4);
            if (closing)
                sem.close();
            else
                BOOST_TEST(sem.cancel() == 2u);
            check_state(sem, 1, 0, 4); // 3 returned: 2 paid the debt
            BOOST_TEST(sem.is_closed() == closing);
            run(io);
            check_completed(*first, closing ? closed : aborted);
            check_completed(*second, closing ? closed : aborted);
            sem.release(3); // the three missing from the start
            check_state(sem, 4, 0, 4);
            BOOST_TEST(!sem.try_release(1));

            // A debt the returned permits cannot pay stays open.
            asio_sync::semaphore short_of_it(io, 1);
            auto waiter = record_acquire(short_of_it, 2); // collects 1
            short_of_it.reduce_permits(3);                // owes 3
            if (closing)
                short_of_it.close();
            else
                BOOST_TEST(short_of_it.cancel() == 1u);
            check_state(short_of_it, 0, 0, max_permits); // 1 of 3 paid
            BOOST_TEST(short_of_it.try_acquire(0) == !closing);
            BOOST_TEST(!short_of_it.try_acquire(1));
            short_of_it.release(2); // pays the rest
            BOOST_TEST(short_of_it.available() == 0u);
            short_of_it.release(1);
            BOOST_TEST(short_of_it.available() == 1u);
            BOOST_TEST(short_of_it.is_closed() == closing);
            run(io);
            check_completed(*waiter, closing ? closed : aborted);
        }
    }
}

// A bounded semaphore's queued acquires that ask for more than the lowered bound can never be
// served: they fail with too_many_permits (posted), and what they collected is handed on like a
// cancelled acquire's, to the debt first.
BOOST_FIXTURE_TEST_CASE(reduce_fails_bounded_waiters_beyond_the_new_bound, fixture)
{
    asio_sync::semaphore sem(io, 2, 5);
    auto too_big = record_acquire(sem, 4); // collects 2
    auto fits = record_acquire(sem, 3);
    std::optional<error_code> permit_ec;
    std::optional<std::size_t> permit_count;
    sem.async_acquire_permit(5, [&](error_code ec, permit p) {
        permit_ec = ec;
        permit_count = p.count();
    });
    auto small = record_acquire(sem, 1);
    check_state(sem, 0, 4, 5);

    sem.reduce_permits(2);        // bound 3, owes 2: the 2 collected by `too_big` pay it
    BOOST_TEST(!too_big->done()); // posted, not invoked inside reduce_permits
    check_state(sem, 0, 2, 3);
    poll(io);
    check_completed(*too_big, too_many);
    BOOST_TEST_REQUIRE(permit_ec.has_value());
    BOOST_TEST(*permit_ec == too_many);
    BOOST_TEST(*permit_count == 0u);
    BOOST_TEST(!fits->done());
    BOOST_TEST(!small->done());

    sem.release(3); // the three missing from the start: the debt is paid, so `fits` gets them
    poll(io);
    check_completed(*fits, success);
    BOOST_TEST(!small->done());
    BOOST_TEST(sem.cancel() == 1u);
    run(io);
    check_completed(*small, aborted);
    sem.release(3); // `fits` gives its permits back
    check_state(sem, 3, 0, 3);
    BOOST_TEST(!sem.try_release(1));

    // Unbounded: the capacity stays max_permits, so nobody fails; the waiter waits for the debt.
    asio_sync::semaphore unbounded(io, 2);
    auto waiter = record_acquire(unbounded, 4); // collects 2
    unbounded.reduce_permits(3);                // owes 3
    check_state(unbounded, 0, 1, max_permits);
    unbounded.release(5); // 3 to the debt, 2 to the waiter
    run(io);
    check_completed(*waiter, success);
    BOOST_TEST(unbounded.available() == 0u);
}

BOOST_FIXTURE_TEST_CASE(reduce_debt_is_paid_by_add_permits, fixture)
{
    asio_sync::semaphore sem(io, 1);
    sem.reduce_permits(4); // takes 1, owes 3
    auto waiter = record_acquire(sem, 1);
    sem.add_permits(2);
    check_state(sem, 0, 1, max_permits);
    sem.add_permits(2); // 1 pays the rest, 1 to the waiter
    check_state(sem, 0, 0, max_permits);
    run(io);
    check_completed(*waiter, success);
    sem.add_permits(1);
    BOOST_TEST(sem.available() == 1u);

    asio_sync::semaphore bounded(io, 2, 2);
    BOOST_TEST(bounded.try_acquire(2));
    bounded.reduce_permits(2); // owes 2
    check_state(bounded, 0, 0, 0);
    bounded.add_permits(3); // 2 pay the debt
    check_state(bounded, 1, 0, 3);
    bounded.release(2); // the holder's
    check_state(bounded, 3, 0, 3);
    BOOST_TEST(!bounded.try_release(1));
}

BOOST_FIXTURE_TEST_CASE(reduce_permits_errors_change_nothing, fixture)
{
    asio_sync::semaphore bounded(io, 2, 3);
    BOOST_CHECK_THROW(bounded.reduce_permits(4), std::invalid_argument);
    check_state(bounded, 2, 0, 3);
    bounded.release(1); // no debt was opened: the counter takes it
    check_state(bounded, 3, 0, 3);

    asio_sync::semaphore unbounded(io, 2);
    BOOST_CHECK_THROW(unbounded.reduce_permits(max_permits + 1), std::invalid_argument);
    check_state(unbounded, 2, 0, max_permits);
    unbounded.reduce_permits(max_permits); // takes 2, owes max_permits - 2
    BOOST_TEST(unbounded.available() == 0u);
    BOOST_CHECK_THROW(unbounded.reduce_permits(3), std::overflow_error); // would owe max_permits + 1
    unbounded.reduce_permits(2);                                         // owes max_permits exactly
    BOOST_CHECK_THROW(unbounded.reduce_permits(1), std::overflow_error);
    unbounded.release(max_permits); // pays the whole debt
    BOOST_TEST(unbounded.available() == 0u);
    unbounded.release(1);
    BOOST_TEST(unbounded.available() == 1u);
}

BOOST_FIXTURE_TEST_CASE(reduce_permits_with_plain_holders_out_keeps_their_release_working, fixture)
{
    asio_sync::semaphore sem(io, 4, 4);
    BOOST_TEST(sem.try_acquire(4));
    sem.reduce_permits(3);
    check_state(sem, 0, 0, 1);
    BOOST_CHECK_NO_THROW(sem.release(4)); // 3 pay the debt
    check_state(sem, 1, 0, 1);
    BOOST_TEST(!sem.try_release(1));
    auto too_big = record_acquire(sem, 2);
    run(io);
    check_completed(*too_big, too_many);
}

// ---------------------------------------------------------------------------------------------
// Closed semaphores.
// ---------------------------------------------------------------------------------------------

// tokio-rs/tokio#8020: forget_permits on a closed semaphore cleared the closed bit and re-opened
// it. None of the capacity changes may do that, with or without a debt.
BOOST_FIXTURE_TEST_CASE(regression_capacity_changes_do_not_reopen_a_closed_semaphore, fixture)
{
    asio_sync::semaphore sem(io, 10);
    sem.close();
    BOOST_TEST(sem.forget_permits(4) == 4u);
    BOOST_TEST(sem.available() == 6u);
    check_still_closed(io, sem);

    sem.add_permits(2);
    BOOST_TEST(sem.available() == 8u);
    check_still_closed(io, sem);

    sem.reduce_permits(3); // at once
    BOOST_TEST(sem.available() == 5u);
    check_still_closed(io, sem);

    sem.reduce_permits(7); // owes 2
    BOOST_TEST(sem.available() == 0u);
    check_still_closed(io, sem);
    sem.release(3); // pays the debt, the rest to the counter
    BOOST_TEST(sem.available() == 1u);
    check_still_closed(io, sem);
    sem.add_permits(1);
    BOOST_TEST(sem.available() == 2u);
    check_still_closed(io, sem);

    asio_sync::semaphore bounded(io, 2, 4);
    auto waiter = record_acquire(bounded, 3); // collects 2
    bounded.reduce_permits(1);                // owes 1
    bounded.close();                          // 2 back: 1 pays the debt
    check_state(bounded, 1, 0, 3);
    check_still_closed(io, bounded);
    BOOST_TEST(bounded.forget_permits(1) == 1u);
    check_state(bounded, 0, 0, 2);
    check_still_closed(io, bounded);
    bounded.add_permits(1);
    check_state(bounded, 1, 0, 3);
    check_still_closed(io, bounded);
    bounded.release(2); // the two missing from the start
    check_state(bounded, 3, 0, 3);
    check_still_closed(io, bounded);
    check_completed(*waiter, closed);
}

BOOST_AUTO_TEST_SUITE_END()
