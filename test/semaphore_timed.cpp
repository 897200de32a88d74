// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#define BOOST_TEST_MODULE semaphore_timed
#include <asio_sync/semaphore.hpp>

#include <support/counting_allocator.hpp>
#include <support/deadline_checks.hpp>
#include <support/handler.hpp>
#include <support/io_steps.hpp>
#include <support/semaphore_checks.hpp>
#include <support/spawned.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_allocator.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/system/error_code.hpp>
#include <boost/system/system_error.hpp>
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <future>
#include <limits>
#include <memory>
#include <optional>
#include <ratio>
#include <thread>
#include <utility>
#include <vector>

namespace {

namespace asio = boost::asio;
namespace test = asio_sync::test;
using asio_sync::test::check_completed;
using asio_sync::test::check_counts;
using asio_sync::test::poll;
using asio_sync::test::record_acquire;
using asio_sync::test::run;
using asio_sync::test::semaphore_with;
using boost::system::error_code;
using permit = asio_sync::semaphore::permit;
using namespace std::chrono_literals;

// How long any single wait may take before the test gives up. It only turns a hang into a
// failure; no outcome depends on it. A timeout that must never expire within a test is far
// longer than this, so that a timer left running shows up as a context that does not stop.
constexpr std::chrono::seconds limit(60);
constexpr std::chrono::hours never(24);

const error_code success{};
const error_code aborted = asio::error::operation_aborted;
const error_code closed = asio_sync::error::closed;
const error_code timed_out = asio_sync::error::timed_out;
const error_code too_many = asio_sync::error::too_many_permits;

template <class Duration>
std::shared_ptr<test::outcome> record_timed(asio_sync::semaphore& sem, std::size_t n, Duration timeout)
{
    auto [out, handler] = test::make_record();
    sem.async_acquire_for(n, timeout, handler);
    return out;
}

// Where a timed permit acquire lands.
struct permit_outcome
{
    int calls = 0;
    std::optional<error_code> ec;
    std::optional<permit> held;
};

template <class Duration>
std::shared_ptr<permit_outcome> record_timed_permit(asio_sync::semaphore& sem, std::size_t n,
                                                    Duration timeout)
{
    auto out = std::make_shared<permit_outcome>();
    sem.async_acquire_permit_for(n, timeout, [out](error_code ec, permit p) {
        ++out->calls;
        out->ec = ec;
        out->held.emplace(std::move(p));
    });
    return out;
}

void check_permit(const permit_outcome& out, const error_code& expected, std::size_t count)
{
    BOOST_TEST(out.calls == 1);
    BOOST_TEST_REQUIRE(out.ec.has_value());
    BOOST_TEST(*out.ec == expected);
    BOOST_TEST_REQUIRE(out.held.has_value());
    BOOST_TEST(out.held->count() == count);
}

// Runs `io` until a timer of `delay`, started now on it, has expired, then runs whatever is
// ready. Timers expire in the order of their expiry times, so a timed acquire whose deadline had
// been computed as already passed (an overflow) has completed by then.
void run_past(asio::io_context& io, std::chrono::steady_clock::duration delay)
{
    asio::steady_timer reference(io, delay);
    bool expired = false;
    reference.async_wait([&](error_code) { expired = true; });
    io.restart();
    const auto give_up = std::chrono::steady_clock::now() + limit;
    while (!expired && std::chrono::steady_clock::now() < give_up)
        io.run_one_for(limit);
    BOOST_REQUIRE(expired);
    poll(io);
}

// The timed acquires of one permit, for the table of test/support/deadline_checks.hpp that every
// timed wait of the family goes through.
struct timed_acquire
{
    static constexpr const char* name = "semaphore.async_acquire_for/until";

    struct object : asio_sync::semaphore
    {
        explicit object(asio::io_context& io) : asio_sync::semaphore(io, 1) {}
    };

    static void block(object& sem) { BOOST_TEST_REQUIRE(sem.try_acquire()); }
    static void grant(object& sem) { sem.release(); }
    static void release(object& sem) { sem.release(); }
    static bool idle(object& sem) { return sem.available() == 1 && sem.waiting() == 0; }

    template <class Duration, class Token>
    static auto wait_for(object& sem, Duration d, Token&& token)
    {
        return sem.async_acquire_for(1, d, std::forward<Token>(token));
    }

    template <class TimePoint, class Token>
    static auto wait_until(object& sem, TimePoint t, Token&& token)
    {
        return sem.async_acquire_until(1, t, std::forward<Token>(token));
    }
};

} // namespace

BOOST_AUTO_TEST_SUITE(semaphore_timed)

BOOST_DATA_TEST_CASE(every_timed_acquire,
                     boost::unit_test::data::make(test::deadline_checks<timed_acquire>::all()), check)
{
    check.run();
}

// A permit acquire with a deadline: a permit holding n on success, an empty one on timed_out,
// for a steady_clock and a system_clock deadline alike.
BOOST_FIXTURE_TEST_CASE(a_permit_acquire_until_a_deadline, semaphore_with<0>)
{
    std::vector<std::pair<error_code, std::size_t>> got;
    const auto record_permit = [&got](error_code ec, permit p) { got.emplace_back(ec, p.count()); };
    sem.async_acquire_permit_until(2, std::chrono::steady_clock::now() + 1ms, record_permit);
    sem.async_acquire_permit_until(1, std::chrono::system_clock::now() - 1h, record_permit);
    run(io);
    BOOST_TEST_REQUIRE(got.size() == 2u);
    for (const auto& [ec, count] : got)
    {
        BOOST_TEST(ec == timed_out);
        BOOST_TEST(count == 0u);
    }
    got.clear();
    sem.async_acquire_permit_until(2, std::chrono::system_clock::now() + never, record_permit);
    poll(io);
    sem.release(2);
    run(io);
    BOOST_TEST_REQUIRE(got.size() == 1u);
    BOOST_TEST(!got[0].first);
    BOOST_TEST(got[0].second == 2u);
    check_counts(sem, 2, 0); // the permit gave them back
}

BOOST_FIXTURE_TEST_CASE(times_out_with_timed_out_and_holds_nothing, semaphore_with<0>)
{
    auto out = record_timed(sem, 1, 1ms);
    check_counts(sem, 0, 1);
    run(io);
    check_completed(*out, timed_out);
    BOOST_TEST(*out->ec != aborted);
    BOOST_TEST(&out->ec->category() == &asio_sync::error_category());
    check_counts(sem, 0, 0);
    sem.release(1); // nobody waits for it any more
    check_counts(sem, 1, 0);

    auto permit_out = record_timed_permit(sem, 2, 1ms); // collects 1
    check_counts(sem, 0, 1);
    run(io);
    check_permit(*permit_out, timed_out, 0);
    check_counts(sem, 1, 0); // the collected permit came back
    permit_out->held.reset();
    BOOST_TEST(sem.available() == 1u);
}

BOOST_FIXTURE_TEST_CASE(a_timed_out_head_hands_its_permits_to_the_waiters_behind, semaphore_with<2>)
{
    auto head = record_timed(sem, 3, 1ms); // collects 2
    auto next = record_acquire(sem, 1);
    check_counts(sem, 0, 2);
    run(io);
    check_completed(*head, timed_out);
    check_completed(*next, success);
    check_counts(sem, 1, 0); // 1 to the next waiter, 1 to the counter

    // Behind a timed-out head that collected too little for the next: it keeps collecting.
    sem.release(1);
    auto head2 = record_timed(sem, 4, 1ms); // collects 2
    auto next2 = record_acquire(sem, 3);
    run_past(io, 2ms);
    BOOST_TEST(head2->done());
    check_completed(*head2, timed_out);
    BOOST_TEST(!next2->done());
    check_counts(sem, 0, 1);
    sem.release(1);
    run(io);
    check_completed(*next2, success);
    check_counts(sem, 0, 0);
}

BOOST_FIXTURE_TEST_CASE(a_timed_out_waiter_in_the_middle_leaves_the_queue_in_order, semaphore_with<0>)
{
    auto first = record_acquire(sem, 1);
    auto middle = record_timed(sem, 1, 1ms);
    auto last = record_acquire(sem, 1);
    run_past(io, 2ms);
    check_completed(*middle, timed_out);
    BOOST_TEST(!first->done());
    check_counts(sem, 0, 2);
    sem.release(1);
    poll(io);
    check_completed(*first, success);
    BOOST_TEST(!last->done());
    sem.release(1);
    run(io);
    check_completed(*last, success);
}

BOOST_FIXTURE_TEST_CASE(succeeds_before_the_deadline_and_cancels_the_timer, semaphore_with<1>)
{
    auto out = record_timed(sem, 2, never); // collects 1
    poll(io);
    BOOST_TEST(!out->done());
    sem.release(1);
    BOOST_TEST(!out->done()); // posted, not invoked inside release
    run(io);                  // returns at once: the timer was cancelled
    check_completed(*out, success);
    check_counts(sem, 0, 0);

    auto permit_out = record_timed_permit(sem, 1, never);
    sem.release(1);
    run(io);
    check_permit(*permit_out, success, 1);
    check_counts(sem, 0, 0);
    permit_out->held.reset();
    BOOST_TEST(sem.available() == 1u);
}

// An observer that releases one permit when told a wait is queued: it runs after the waiter is
// queued and before the initiator starts the timer, so the grant lands first.
struct releases_when_queued final : asio_sync::wait_observer
{
    asio_sync::semaphore& sem;
    int queued = 0;
    int finished = 0;

    explicit releases_when_queued(asio_sync::semaphore& s) : sem(s) {}

    void on_queued() override
    {
        ++queued;
        sem.release(1);
    }
    void on_finished(asio_sync::wait_outcome, clock::duration) override { ++finished; }
};

// Runs what is ready until nothing is; the context then stops only if no work is left (no timer).
void drain(asio::io_context& io)
{
    io.restart();
    while (io.poll() != 0)
    {
    }
}

// The initiator, coming second, cancels the timer it has just started: nothing is left pending.
BOOST_FIXTURE_TEST_CASE(a_grant_before_the_timer_starts_cancels_the_timer, semaphore_with<0>)
{
    releases_when_queued observer(sem);
    sem.set_observer(&observer);
    auto out = record_timed(sem, 1, never);
    auto permit_out = record_timed_permit(sem, 1, never);
    BOOST_TEST(observer.queued == 2);
    BOOST_TEST(observer.finished == 2); // both granted before their initiations returned
    drain(io);
    BOOST_TEST(io.stopped(), "a timer of a day is still pending");
    check_completed(*out, success);
    check_permit(*permit_out, success, 1);
    sem.set_observer(nullptr);
    permit_out->held.reset();
    check_counts(sem, 1, 0);
}

// The grant is decided in release(); an expiry that comes after it finds nothing to time out.
BOOST_FIXTURE_TEST_CASE(a_grant_before_the_expiry_handler_runs_wins, semaphore_with<0>)
{
    auto out = record_timed(sem, 1, 0s);
    sem.release(1);
    run(io);
    check_completed(*out, success);
    check_counts(sem, 0, 0); // the permit is the caller's

    auto permit_out = record_timed_permit(sem, 1, 0s);
    sem.release(1);
    run(io);
    check_permit(*permit_out, success, 1);
    permit_out->held.reset();
    check_counts(sem, 1, 0);
}

BOOST_AUTO_TEST_CASE(an_acquire_satisfied_at_once_starts_no_timer)
{
    // A concrete executor type honours the allocator property: every allocation of the operation
    // is counted. A grant at once allocates only the completion's submission, exactly as an
    // untimed acquire does; a queued timed acquire allocates its operation and its timer's wait.
    asio::io_context io;
    asio_sync::basic_semaphore<asio::io_context::executor_type> sem(io.get_executor(), 3);

    test::allocation_counts plain_counts;
    test::allocation_counts timed_counts;
    test::allocation_counts permit_counts;
    int completed = 0;
    sem.async_acquire(1, asio::bind_allocator(test::counting_allocator<void>(plain_counts),
                                              [&](error_code ec) { completed += !ec; }));
    sem.async_acquire_for(1, never,
                          asio::bind_allocator(test::counting_allocator<void>(timed_counts),
                                               [&](error_code ec) { completed += !ec; }));
    sem.async_acquire_permit_for(1, never,
                                 asio::bind_allocator(test::counting_allocator<void>(permit_counts),
                                                      [&](error_code ec, auto) { completed += !ec; }));
    BOOST_TEST(plain_counts.allocations.load() == 1u);
    BOOST_TEST(timed_counts.allocations.load() == plain_counts.allocations.load());
    BOOST_TEST(permit_counts.allocations.load() == plain_counts.allocations.load());
    run(io); // a timer of a day would keep it running
    BOOST_TEST(completed == 3);
    BOOST_TEST(timed_counts.deallocations.load() == timed_counts.allocations.load());

    // Control: the same acquire when it has to wait allocates more through the same allocator.
    test::allocation_counts waiting_counts;
    std::optional<error_code> waited;
    BOOST_TEST(sem.available() == 1u); // the permit object's came back
    sem.async_acquire_for(3, never,
                          asio::bind_allocator(test::counting_allocator<void>(waiting_counts),
                                               [&](error_code ec) { waited = ec; }));
    BOOST_TEST(waiting_counts.allocations.load() >= 2u);
    BOOST_TEST(sem.waiting() == 1u);
    sem.release(2);
    run(io);
    BOOST_TEST_REQUIRE(waited.has_value());
    BOOST_TEST(*waited == success);
    BOOST_TEST(waiting_counts.deallocations.load() == waiting_counts.allocations.load());
}

BOOST_FIXTURE_TEST_CASE(zero_and_negative_durations_time_out_unless_granted_at_once, semaphore_with<0>)
{
    std::vector<std::shared_ptr<test::outcome>> outs{
        record_timed(sem, 1, 0s),
        record_timed(sem, 1, -1s),
        record_timed(sem, 1, std::chrono::nanoseconds(-1)),
        record_timed(sem, 1, std::chrono::milliseconds::min()),
        record_timed(sem, 1, std::chrono::hours::min()),
        record_timed(sem, 1, std::chrono::duration<double>(-0.5)),
        record_timed(sem, 1, std::chrono::duration<double>(-std::numeric_limits<double>::infinity())),
    };
    BOOST_TEST(sem.waiting() == outs.size());
    run(io);
    for (std::size_t i = 0; i < outs.size(); ++i)
    {
        BOOST_TEST_CONTEXT("duration " << i)
        check_completed(*outs[i], timed_out);
    }
    check_counts(sem, 0, 0);

    // What can be had without waiting for a release is had.
    sem.release(3);
    auto now = record_timed(sem, 2, 0s);
    auto negative = record_timed(sem, 1, -1h);
    auto nothing = record_timed(sem, 0, -1s);
    check_counts(sem, 0, 0);
    run(io);
    check_completed(*now, success);
    check_completed(*negative, success);
    check_completed(*nothing, success);

    // A partial collection times out and comes back.
    sem.release(1);
    auto partial = record_timed(sem, 2, 0s);
    check_counts(sem, 0, 1);
    run(io);
    check_completed(*partial, timed_out);
    check_counts(sem, 1, 0);
}

BOOST_FIXTURE_TEST_CASE(huge_durations_do_not_overflow, semaphore_with<0>)
{
    using ull_nanoseconds = std::chrono::duration<unsigned long long, std::nano>;
    std::vector<std::shared_ptr<test::outcome>> outs{
        record_timed(sem, 1, std::chrono::hours::max()),
        record_timed(sem, 1, std::chrono::nanoseconds::max()),
        record_timed(sem, 1, std::chrono::seconds::max()),
        record_timed(sem, 1, std::chrono::steady_clock::duration::max()),
        record_timed(sem, 1, std::chrono::steady_clock::duration::max() - 1ns),
        record_timed(sem, 1, std::chrono::duration<std::int64_t, std::ratio<3600 * 24 * 365>>::max()),
        record_timed(sem, 1, std::chrono::duration<double>(1e300)),
        record_timed(sem, 1, std::chrono::duration<double>(std::numeric_limits<double>::infinity())),
        record_timed(sem, 1, ull_nanoseconds::max()),
        record_timed(sem, 1, std::chrono::hours(2562047)), // just below nanoseconds::max()
    };
    BOOST_TEST(sem.waiting() == outs.size());
    // An expiry computed as passed (an overflow wrapped to the past) would have fired by now.
    run_past(io, 5ms);
    for (std::size_t i = 0; i < outs.size(); ++i)
    {
        BOOST_TEST_CONTEXT("duration " << i)
        BOOST_TEST(!outs[i]->done());
    }
    BOOST_TEST(sem.waiting() == outs.size());
    sem.release(outs.size());
    run(io); // every timer is cancelled by the grant
    for (std::size_t i = 0; i < outs.size(); ++i)
    {
        BOOST_TEST_CONTEXT("duration " << i)
        check_completed(*outs[i], success);
    }
    check_counts(sem, 0, 0);
}

BOOST_AUTO_TEST_CASE(per_operation_cancellation_aborts_a_timed_acquire)
{
    for (auto type : {asio::cancellation_type::terminal, asio::cancellation_type::partial,
                      asio::cancellation_type::total})
    {
        BOOST_TEST_CONTEXT("cancellation type " << static_cast<unsigned>(type))
        {
            asio::io_context io;
            asio_sync::semaphore sem(io, 1);
            asio::cancellation_signal signal;
            auto [out, handler] = test::make_record();
            sem.async_acquire_for(2, never, asio::bind_cancellation_slot(signal.slot(), handler)); // 1
            auto next = record_acquire(sem, 1);
            check_counts(sem, 0, 2);
            signal.emit(type);
            BOOST_TEST(!out->done()); // posted, not invoked inside emit
            run(io);                  // the timer went with the operation
            check_completed(*out, aborted);
            check_completed(*next, success); // handed the collected permit
            check_counts(sem, 0, 0);
            signal.emit(type); // the slot was cleared: nothing happens
            BOOST_TEST(out->calls == 1);
        }
    }

    // A cancellation after the timeout does nothing; a timeout after the cancellation neither.
    asio::io_context io;
    asio_sync::semaphore sem(io, 0);
    asio::cancellation_signal late;
    auto [out, handler] = test::make_record();
    sem.async_acquire_for(1, 1ms, asio::bind_cancellation_slot(late.slot(), handler));
    run(io);
    check_completed(*out, timed_out);
    late.emit(asio::cancellation_type::terminal);
    BOOST_TEST(out->calls == 1);

    asio::cancellation_signal early;
    auto permit_out = std::make_shared<permit_outcome>();
    sem.async_acquire_permit_for(
        1, 0s, asio::bind_cancellation_slot(early.slot(), [permit_out](error_code ec, permit p) {
            ++permit_out->calls;
            permit_out->ec = ec;
            permit_out->held.emplace(std::move(p));
        }));
    early.emit(asio::cancellation_type::terminal);
    run(io);
    check_permit(*permit_out, aborted, 0);
    permit_out->held.reset();
    check_counts(sem, 0, 0);
}

BOOST_FIXTURE_TEST_CASE(cancel_and_close_complete_timed_acquires, semaphore_with<1>)
{
    auto cancelled = record_timed(sem, 2, never); // collects 1
    auto cancelled_permit = record_timed_permit(sem, 1, never);
    BOOST_TEST(sem.cancel() == 2u);
    check_counts(sem, 1, 0);
    run(io); // both timers went with their operations
    check_completed(*cancelled, aborted);
    check_permit(*cancelled_permit, aborted, 0);
    cancelled_permit->held.reset();

    auto closed_waiter = record_timed(sem, 3, never);
    sem.close();
    auto closed_later = record_timed(sem, 1, never);
    auto closed_zero = record_timed(sem, 0, 0s);
    run(io);
    check_completed(*closed_waiter, closed);
    check_completed(*closed_later, closed);
    check_completed(*closed_zero, closed);
    check_counts(sem, 1, 0);
}

BOOST_AUTO_TEST_CASE(too_many_permits_is_decided_at_initiation_without_a_timer)
{
    asio::io_context io;
    asio_sync::semaphore sem(io, 2, 2);
    auto plain = record_timed(sem, 3, never);
    auto as_permit = record_timed_permit(sem, 3, never);
    auto beyond_max = record_timed(sem, asio_sync::semaphore::max_permits + 1, never);
    check_counts(sem, 2, 0);
    run(io); // no timer was started
    check_completed(*plain, too_many);
    check_completed(*beyond_max, too_many);
    check_permit(*as_permit, too_many, 0);
    as_permit->held.reset();
    check_counts(sem, 2, 0);
}

// reduce_permits lowering a bounded semaphore's capacity below what a timed acquire asks for
// fails it with too_many_permits, and its timer goes with it.
BOOST_AUTO_TEST_CASE(a_timed_waiter_beyond_a_reduced_bound_fails_with_too_many_permits)
{
    asio::io_context io;
    asio_sync::semaphore sem(io, 1, 4);
    auto big = record_timed(sem, 3, never); // collects 1
    auto small = record_timed(sem, 1, never);
    sem.reduce_permits(2); // bound 2, owes 2: `big` can never be served; its permit pays 1
    check_counts(sem, 0, 1);
    BOOST_TEST(sem.capacity() == 2u);
    sem.release(2); // 1 pays the rest of the debt, 1 to `small`
    run(io);
    check_completed(*big, too_many);
    check_completed(*small, success);
    check_counts(sem, 0, 0);
}

BOOST_FIXTURE_TEST_CASE(the_timer_runs_on_the_semaphores_executor_the_handler_on_its_own, semaphore_with<0>)
{
    asio::io_context handler_io;
    int calls = 0;
    bool in_handler_io = false;
    std::optional<error_code> result;
    sem.async_acquire_for(1, 1ms, asio::bind_executor(handler_io, [&](error_code ec) {
                              ++calls;
                              in_handler_io = handler_io.get_executor().running_in_this_thread();
                              result = ec;
                          }));
    poll(handler_io);
    BOOST_TEST(calls == 0);
    run(io); // the timer expires here; the completion goes to handler_io
    BOOST_TEST(calls == 0);
    check_counts(sem, 0, 0);
    run(handler_io);
    BOOST_TEST(calls == 1);
    BOOST_TEST(in_handler_io);
    BOOST_TEST_REQUIRE(result.has_value());
    BOOST_TEST(*result == timed_out);
}

// Timed acquires bound to a strand, on a context run by two threads, some granted and some timed
// out: every handler runs in the strand.
BOOST_AUTO_TEST_CASE(handlers_bound_to_a_strand_run_in_it)
{
    constexpr int count = 200;
    asio::io_context io(2);
    asio_sync::semaphore sem(io, 1);
    auto strand = asio::make_strand(io);
    std::atomic<int> in_strand{0};
    std::atomic<int> unexpected{0};
    int granted = 0; // touched only in the strand: a data race if a handler ran outside it
    int expired = 0;
    for (int i = 0; i < count; ++i)
    {
        const auto timeout = i % 3 == 0
                                 ? std::chrono::steady_clock::duration(never)
                                 : std::chrono::steady_clock::duration(std::chrono::microseconds(i % 50));
        sem.async_acquire_for(1, timeout, asio::bind_executor(strand, [&](error_code ec) {
                                  in_strand.fetch_add(strand.running_in_this_thread() ? 1 : 0);
                                  if (!ec)
                                  {
                                      ++granted;
                                      sem.release(1);
                                  }
                                  else if (ec == timed_out)
                                      ++expired;
                                  else
                                      unexpected.fetch_add(1);
                              }));
    }
    std::vector<std::thread> threads;
    for (int t = 0; t < 2; ++t)
        threads.emplace_back([&io] { io.run_for(limit); });
    for (std::thread& t : threads)
        t.join();
    BOOST_TEST(io.stopped());
    BOOST_TEST(in_strand.load() == count);
    BOOST_TEST(unexpected.load() == 0);
    BOOST_TEST(granted + expired == count);
    BOOST_TEST(granted >= count / 3); // those without a real time limit are all granted
    check_counts(sem, 1, 0);
}

#if defined(BOOST_ASIO_HAS_CO_AWAIT)
BOOST_FIXTURE_TEST_CASE(use_awaitable_throws_timed_out_and_returns_permits, semaphore_with<0>)
{
    std::optional<error_code> thrown;
    std::size_t granted_count = 0;
    error_code tuple_ec;
    std::size_t tuple_count = 99;
    test::spawned coro(io, [&]() -> asio::awaitable<void> {
        try
        {
            co_await sem.async_acquire_for(1, 1ms, asio::use_awaitable);
        }
        catch (const boost::system::system_error& e)
        {
            thrown = e.code();
        }
        permit p = co_await sem.async_acquire_permit_for(2, never, asio::use_awaitable);
        granted_count = p.count();
        auto [ec, q] = co_await sem.async_acquire_permit_for(1, 1ms, asio::as_tuple(asio::use_awaitable));
        tuple_ec = ec;
        tuple_count = q.count();
    });
    poll(io); // the coroutine starts its first acquire, and with it the timer
    run_past(io, 2ms);
    BOOST_TEST_REQUIRE(thrown.has_value());
    BOOST_TEST(*thrown == timed_out);
    BOOST_TEST(sem.waiting() == 1u);
    sem.release(2);
    run(io);
    coro.check_finished();
    BOOST_TEST(granted_count == 2u);
    BOOST_TEST(tuple_ec == timed_out);
    BOOST_TEST(tuple_count == 0u);
    check_counts(sem, 2, 0); // the permit came back when the coroutine ended
}
#endif

BOOST_FIXTURE_TEST_CASE(use_future_and_deferred, semaphore_with<0>)
{
    // use_future completes through Asio's system executor: the future is waited for. A shared
    // future keeps the stored exception referenced from this thread until the check is done.
    std::shared_future<void> expiring = sem.async_acquire_for(1, 1ms, asio::use_future).share();
    run(io);
    BOOST_TEST_REQUIRE((expiring.wait_for(limit) == std::future_status::ready));
    try
    {
        expiring.get();
        BOOST_ERROR("no exception was thrown");
    }
    catch (const boost::system::system_error& e)
    {
        BOOST_TEST(e.code() == timed_out);
    }

    auto op = sem.async_acquire_permit_for(1, 1ms, asio::deferred);
    run(io);
    BOOST_TEST(sem.waiting() == 0u); // nothing started before the invocation
    sem.release(1);
    auto [out, handler] = test::make_record();
    std::move(op)([h = handler](error_code ec, permit p) mutable {
        BOOST_TEST(p.count() == (ec ? 0u : 1u));
        h(ec);
    });
    BOOST_TEST(sem.available() == 0u);
    run(io);
    check_completed(*out, success);
    BOOST_TEST(sem.available() == 1u); // the permit was dropped by the handler
}

// ---------------------------------------------------------------------------------------------
// Lifetimes: the semaphore or the context goes away while timed acquires wait.
// ---------------------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(destroying_the_semaphore_aborts_timed_acquires)
{
    asio::io_context io;
    auto sem = std::make_unique<asio_sync::semaphore>(io, 1);
    auto partial = record_timed(*sem, 2, never); // collects 1
    auto plain = record_timed(*sem, 1, never);
    auto soon = record_timed(*sem, 1, 1ms);
    auto zero = record_timed(*sem, 1, 0s);
    auto as_permit = record_timed_permit(*sem, 1, never);
    BOOST_TEST(sem->waiting() == 5u);
    sem.reset();
    run(io); // every timer was cancelled, and none touched the destroyed semaphore
    for (auto* out : {&partial, &plain, &soon, &zero})
        check_completed(**out, aborted);
    check_permit(*as_permit, aborted, 0);
    as_permit->held.reset();
}

// The destroying handler and the timers' expiries are queued together; whichever runs first,
// each acquire completes once, and an expiry that runs after the semaphore is gone leaves it be.
BOOST_AUTO_TEST_CASE(the_semaphore_destroyed_while_its_timers_expire)
{
    for (int round = 0; round < 20; ++round)
    {
        asio::io_context io;
        auto sem = std::make_unique<asio_sync::semaphore>(io, 0);
        std::vector<std::shared_ptr<test::outcome>> outs;
        for (int i = 0; i < 4; ++i)
            outs.push_back(record_timed(*sem, 1, std::chrono::microseconds(i * 20)));
        asio::post(io, [&sem] { sem.reset(); });
        run(io);
        BOOST_TEST(!sem);
        for (const auto& out : outs)
        {
            BOOST_TEST(out->calls == 1);
            BOOST_TEST_REQUIRE(out->ec.has_value());
            BOOST_TEST((*out->ec == timed_out || *out->ec == aborted));
        }
    }
}

// The semaphore's executor is a strand, held by the handler that destroys the semaphore: an
// expiry that fires meanwhile is queued behind it, and runs once the semaphore is gone.
BOOST_AUTO_TEST_CASE(an_expiry_queued_behind_the_semaphores_destruction_leaves_it_be)
{
    using strand_type = asio::strand<asio::io_context::executor_type>;
    for (int round = 0; round < 5; ++round)
    {
        asio::io_context io(2);
        const strand_type strand = asio::make_strand(io);
        std::atomic<int> calls{0};
        std::atomic<int> unexpected{0};
        asio::post(strand, [&] {
            auto sem = std::make_unique<asio_sync::basic_semaphore<strand_type>>(strand, 0);
            for (int i = 0; i < 3; ++i)
            {
                sem->async_acquire_for(1, 0s, [&](error_code ec) {
                    calls.fetch_add(1);
                    if (ec != aborted && ec != timed_out)
                        unexpected.fetch_add(1);
                });
            }
            // The other thread runs the reactor meanwhile; the expiries wait for this strand.
            std::this_thread::sleep_for(10ms);
            sem.reset();
        });
        std::vector<std::thread> threads;
        for (int t = 0; t < 2; ++t)
            threads.emplace_back([&io] { io.run_for(limit); });
        for (std::thread& t : threads)
            t.join();
        BOOST_TEST(io.stopped());
        BOOST_TEST(calls.load() == 3);
        BOOST_TEST(unexpected.load() == 0);
    }
}

// The semaphore destroyed on one thread while its timers expire on the threads of a pool. Each
// acquire completes once: granted (a plain acquire handed the one permit by a timed-out head),
// timed out, or aborted by the destruction. The permit acquire asks for more than exists.
BOOST_AUTO_TEST_CASE(the_semaphore_destroyed_while_timers_expire_on_a_thread_pool)
{
    constexpr int rounds = 300;
    constexpr int per_round = 4;
    asio::thread_pool pool(2);
    std::atomic<int> calls{0};
    std::atomic<int> granted{0};
    std::atomic<int> expired{0};
    std::atomic<int> aborted_count{0};
    std::atomic<int> unexpected{0};
    bool in_time = true;
    for (int round = 0; round < rounds && in_time; ++round)
    {
        auto sem = std::make_unique<asio_sync::semaphore>(pool.get_executor(), 1);
        std::atomic<int> left{per_round};
        // The last thing a handler does is to count down: the main thread may go on at once.
        const auto handler = [&](error_code ec, bool may_succeed) {
            if (!ec)
                (may_succeed ? granted : unexpected).fetch_add(1);
            else if (ec == timed_out)
                expired.fetch_add(1);
            else if (ec == aborted)
                aborted_count.fetch_add(1);
            else
                unexpected.fetch_add(1);
            calls.fetch_add(1);
            left.fetch_sub(1);
        };
        sem->async_acquire_for(2, std::chrono::microseconds(round % 30),
                               [handler](error_code ec) { handler(ec, false); });
        sem->async_acquire_for(1, 0s, [handler](error_code ec) { handler(ec, true); });
        sem->async_acquire_permit_for(
            2, std::chrono::microseconds(round % 7),
            [handler](error_code ec, permit p) { handler(p.count() == 0 ? ec : asio::error::fault, false); });
        sem->async_acquire_for(1, never, [handler](error_code ec) { handler(ec, true); });
        if (round % 2)
            std::this_thread::yield();
        sem.reset();
        const auto give_up = std::chrono::steady_clock::now() + limit;
        while (left.load() != 0 && (in_time = std::chrono::steady_clock::now() < give_up))
            std::this_thread::yield();
    }
    pool.join();
    BOOST_REQUIRE_MESSAGE(in_time, "an acquire never completed");
    BOOST_TEST(calls.load() == rounds * per_round);
    BOOST_TEST(unexpected.load() == 0);
    BOOST_TEST(granted.load() + expired.load() + aborted_count.load() == rounds * per_round);
    BOOST_TEST(granted.load() <= rounds);                        // one permit per round
    BOOST_TEST(granted.load() + aborted_count.load() >= rounds); // those of a day are not timed out
}

// The context is destroyed with timed acquires queued (their timers pending) and with a granted
// timed permit acquire's completion queued: handlers are destroyed without running, memory is
// released, the permits come back. Whether the timers' service came before the semaphore's in
// the context matters for the order of shutdown, so both are tried.
BOOST_AUTO_TEST_CASE(the_context_destroyed_with_timed_acquires_pending)
{
    for (const bool timer_service_first : {false, true})
    {
        BOOST_TEST_CONTEXT((timer_service_first ? "timer service first" : "semaphore service first"))
        {
            test::allocation_counts counts;
            const test::counting_allocator<void> alloc(counts);
            auto io = std::make_unique<asio::io_context>();
            std::optional<asio::steady_timer> early_timer;
            if (timer_service_first)
                early_timer.emplace(*io, never);
            asio_sync::semaphore sem(*io, 0);
            auto token = std::make_shared<int>(0);
            bool invoked = false;
            sem.async_acquire_permit_for(
                1, never,
                asio::bind_allocator(alloc, [&invoked, token](error_code, permit) { invoked = true; }));
            sem.async_acquire_for(
                3, never, asio::bind_allocator(alloc, [&invoked, token](error_code) { invoked = true; }));
            sem.async_acquire_for(
                1, 1ms, asio::bind_allocator(alloc, [&invoked, token](error_code) { invoked = true; }));
            sem.release(2); // the permit acquire is granted, the next collects 1
            check_counts(sem, 0, 2);
            BOOST_TEST(token.use_count() == 4);
            BOOST_TEST(counts.allocations.load() > counts.deallocations.load());
            early_timer.reset();
            io.reset();
            BOOST_TEST(!invoked);
            BOOST_TEST(token.use_count() == 1);
            BOOST_TEST(counts.allocations.load() == counts.deallocations.load());
            check_counts(sem, 2, 0); // the permit object's 1 and the collected 1
        }
    }

    // The semaphore goes first, then the context with the aborted completions still queued.
    test::allocation_counts counts;
    auto token = std::make_shared<int>(0);
    {
        asio::io_context io;
        asio_sync::semaphore sem(io, 1);
        sem.async_acquire_for(
            2, never, asio::bind_allocator(test::counting_allocator<void>(counts), [token](error_code) {}));
        sem.async_acquire_permit_for(
            1, never,
            asio::bind_allocator(test::counting_allocator<void>(counts), [token](error_code, permit) {}));
        BOOST_TEST(token.use_count() == 3);
    }
    BOOST_TEST(token.use_count() == 1);
    BOOST_TEST(counts.allocations.load() > 0u);
    BOOST_TEST(counts.allocations.load() == counts.deallocations.load());
}

BOOST_AUTO_TEST_SUITE_END()
