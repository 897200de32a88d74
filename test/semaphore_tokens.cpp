// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#define BOOST_TEST_MODULE semaphore_tokens
#include <asio_sync/semaphore.hpp>

#include <support/counting_allocator.hpp>
#include <support/handler.hpp>
#include <support/io_steps.hpp>
#include <support/io_threads.hpp>
#include <support/semaphore_checks.hpp>
#include <support/spawned.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_allocator.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/system/error_code.hpp>
#include <boost/system/system_error.hpp>
#include <boost/test/unit_test.hpp>

// Boost 1.81: promise.hpp must come before use_promise.hpp.
#include <boost/asio/experimental/promise.hpp>
#include <boost/asio/experimental/use_promise.hpp>

#if defined(BOOST_ASIO_HAS_CO_AWAIT)
#include <boost/asio/experimental/awaitable_operators.hpp>
#endif

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <thread>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace {

namespace asio = boost::asio;
namespace asx = boost::asio::experimental;
namespace test = asio_sync::test;
using asio_sync::test::check_completed;
using asio_sync::test::check_counts;
using asio_sync::test::check_throws_code;
using asio_sync::test::poll;
using asio_sync::test::record_acquire;
using asio_sync::test::run;
using asio_sync::test::semaphore_with;
using boost::system::error_code;

// How long any single wait may take before the test gives up and fails. Generous on purpose: it
// only exists so that a bug fails the test instead of hanging it; no outcome depends on it.
constexpr std::chrono::seconds limit(60);

const error_code success{};
const error_code closed = asio_sync::error::closed;
const error_code aborted = asio::error::operation_aborted;

// Checks that a completion was recorded, with `expected`.
void check_result(const std::optional<error_code>& result, const error_code& expected)
{
    BOOST_TEST_REQUIRE(result.has_value());
    BOOST_TEST(*result == expected);
}

// The same, with the handler bound to the slot of `signal`.
template <class... N>
std::shared_ptr<test::outcome> record_cancellable_acquire(asio_sync::semaphore& sem,
                                                          asio::cancellation_signal& signal, N... n)
{
    auto [out, handler] = test::make_record();
    sem.async_acquire(static_cast<std::size_t>(n)..., asio::bind_cancellation_slot(signal.slot(), handler));
    return out;
}

#if defined(BOOST_ASIO_HAS_CO_AWAIT) // coroutines need C++20: the _cxx17 build leaves these out
// Checks that `results` holds exactly `expected`, in that order.
void check_results(const std::vector<error_code>& results, const std::vector<error_code>& expected)
{
    BOOST_TEST_REQUIRE(results.size() == expected.size());
    for (std::size_t i = 0; i < expected.size(); ++i)
    {
        BOOST_TEST_INFO("result " << i);
        BOOST_TEST(results[i] == expected[i]);
    }
}

// Runs what is ready, then checks that `count` results are in and one acquire waits again.
void check_progress(asio::io_context& io, const asio_sync::semaphore& sem,
                    const std::vector<error_code>& results, std::size_t count)
{
    poll(io);
    BOOST_TEST(results.size() == count);
    BOOST_TEST(sem.waiting() == 1u);
}

// Awaits an acquire of one permit and returns the code of the system_error it throws, if any.
asio::awaitable<std::optional<error_code>> code_thrown_by_acquire(asio_sync::semaphore& sem)
{
    try
    {
        co_await sem.async_acquire(asio::use_awaitable);
    }
    catch (const boost::system::system_error& e)
    {
        co_return e.code();
    }
    co_return std::nullopt;
}

// Races an acquire of `n` permits against a timer that expires after `timeout`, in a coroutine
// of its own, and records which of the two completed first: 0 for the acquire, 1 for the timer.
struct acquire_or_timeout
{
    std::optional<std::size_t> winner;
    test::spawned coro;

    acquire_or_timeout(asio::io_context& io, asio_sync::semaphore& sem, std::size_t n,
                       std::chrono::steady_clock::duration timeout)
        : coro(io, [this, &io, &sem, n, timeout]() -> asio::awaitable<void> {
              using namespace asio::experimental::awaitable_operators;
              asio::steady_timer timer(io, timeout);
              auto result = co_await (sem.async_acquire(n, asio::use_awaitable) ||
                                      timer.async_wait(asio::use_awaitable));
              winner = result.index();
          })
    {
    }

    // Checks that the coroutine finished and that operation `index` won the race.
    void check_won_by(std::size_t index) const
    {
        coro.check_finished();
        BOOST_TEST_REQUIRE(winner.has_value());
        BOOST_TEST(*winner == index);
    }
};
#endif

// What a parallel group of two acquires completed with.
struct group_outcome
{
    int calls = 0;
    std::array<std::size_t, 2> order{};
    error_code ec0 = asio::error::fault;
    error_code ec1 = asio::error::fault;

    // The handler for async_wait: records into this.
    auto handler()
    {
        return [this](std::array<std::size_t, 2> o, error_code e0, error_code e1) {
            ++calls;
            order = o;
            ec0 = e0;
            ec1 = e1;
        };
    }

    // Checks that the group completed once, operation `first` before the other, with these codes.
    void check(std::size_t first, const error_code& expected0, const error_code& expected1) const
    {
        BOOST_TEST(calls == 1);
        BOOST_TEST(order[0] == first);
        BOOST_TEST(ec0 == expected0);
        BOOST_TEST(ec1 == expected1);
    }
};

// Runs `f` on a thread of its own and waits for it to return.
template <class F>
void on_another_thread(F f)
{
    std::thread t(std::move(f));
    t.join();
}

// Fails the test unless `future` becomes ready within `limit`.
template <class Future>
void require_ready(const Future& future)
{
    BOOST_REQUIRE(future.wait_for(limit) == std::future_status::ready);
}

// Counts where the handlers bound to a strand ran, and how many completed with an error.
struct strand_tally
{
    std::atomic<int> in_strand{0};
    std::atomic<int> outside_strand{0};
    std::atomic<int> failed{0};

    void count(const asio::strand<asio::io_context::executor_type>& strand, error_code ec)
    {
        (strand.running_in_this_thread() ? in_strand : outside_strand).fetch_add(1);
        if (ec)
            failed.fetch_add(1);
    }

    // Checks that all `expected` handlers ran in the strand, and none failed.
    void check(int expected) const
    {
        BOOST_TEST(in_strand.load() == expected);
        BOOST_TEST(outside_strand.load() == 0);
        BOOST_TEST(failed.load() == 0);
    }
};

// Checks that everything allocated through `counts` has been deallocated again.
void check_all_deallocated(const test::allocation_counts& counts)
{
    BOOST_TEST(counts.allocations.load() == counts.deallocations.load());
}

// A handler that can only be moved: it owns its recorder through a unique_ptr.
class move_only_handler
{
public:
    explicit move_only_handler(std::shared_ptr<test::outcome> out)
        : record_(std::make_unique<test::record>(std::move(out)))
    {
    }

    move_only_handler(move_only_handler&&) = default;
    move_only_handler& operator=(move_only_handler&&) = default;

    void operator()(error_code ec)
    {
        BOOST_REQUIRE_MESSAGE(record_, "a moved-from handler was invoked");
        (*record_)(ec);
    }

private:
    std::unique_ptr<test::record> record_;
};

static_assert(!std::is_copy_constructible_v<move_only_handler>);
static_assert(std::is_nothrow_move_constructible_v<move_only_handler>);

} // namespace

BOOST_AUTO_TEST_SUITE(semaphore_tokens)

// ---------------------------------------------------------------------------------------------
// 1. Plain callbacks.
// ---------------------------------------------------------------------------------------------

BOOST_FIXTURE_TEST_CASE(callback_completes_at_once_when_a_permit_is_free, semaphore_with<2>)
{
    std::optional<error_code> result;
    int calls = 0;
    sem.async_acquire([&](error_code ec) {
        ++calls;
        result = ec;
    });
    // The permit is taken at initiation even though the handler has not run yet.
    check_counts(sem, 1, 0);

    run(io);
    BOOST_TEST(calls == 1);
    check_result(result, success);
    BOOST_TEST(sem.available() == 1u);

    // The recording helper too, for n > 1.
    sem.release(1);
    auto out = record_acquire(sem, 2);
    BOOST_TEST(sem.available() == 0u);
    run(io);
    check_completed(*out, success);
    check_counts(sem, 0, 0);
}

BOOST_FIXTURE_TEST_CASE(callback_is_never_invoked_inline, semaphore_with<1>)
{
    // A free permit: still the handler waits for the io_context.
    bool invoked = false;
    sem.async_acquire([&](error_code ec) {
        BOOST_TEST(ec == success);
        invoked = true;
    });
    BOOST_TEST(!invoked);
    BOOST_TEST(sem.available() == 0u);
    run(io);
    BOOST_TEST(invoked);

    // n == 0 succeeds at once, and is not invoked inline either.
    auto zero = record_acquire(sem, 0);
    BOOST_TEST(!zero->done());

    // Nor from inside release(), cancel() or close().
    auto by_release = record_acquire(sem);
    BOOST_TEST(sem.waiting() == 1u);
    sem.release(1);
    BOOST_TEST(!by_release->done());
    auto by_cancel = record_acquire(sem);
    BOOST_TEST(sem.cancel() == 1u);
    BOOST_TEST(!by_cancel->done());
    auto by_close = record_acquire(sem);
    sem.close();
    BOOST_TEST(!by_close->done());

    run(io);
    check_completed(*zero, success);
    check_completed(*by_release, success);
    check_completed(*by_cancel, aborted);
    check_completed(*by_close, closed);
}

BOOST_FIXTURE_TEST_CASE(callback_waits_for_release, semaphore_with<0>)
{
    auto out = record_acquire(sem);
    poll(io);
    BOOST_TEST(!out->done());
    BOOST_TEST(sem.waiting() == 1u);
    BOOST_TEST(!io.stopped()); // the waiting acquire keeps the context's work outstanding

    sem.release(1);
    check_counts(sem, 0, 0); // the released permit went to the waiter
    run(io);
    check_completed(*out, success);
    BOOST_TEST(sem.available() == 0u);

    // A waiter for several permits collects them as they are released, a few at a time.
    auto many = record_acquire(sem, 3);
    sem.release(1);
    sem.release(1);
    poll(io);
    BOOST_TEST(!many->done());
    BOOST_TEST(sem.waiting() == 1u);
    sem.release(2);
    run(io);
    check_completed(*many, success);
    BOOST_TEST(sem.available() == 1u); // the surplus went to the counter
}

BOOST_FIXTURE_TEST_CASE(callback_errors, semaphore_with<1>)
{
    // More than can ever be granted: reported, nothing queued, nothing taken.
    auto too_many = record_acquire(sem, asio_sync::semaphore::max_permits + 1);
    check_counts(sem, 1, 0);

    // cancel() aborts a waiter; its collected permits return to the counter.
    auto cancelled = record_acquire(sem, 3);
    check_counts(sem, 0, 1);
    BOOST_TEST(sem.cancel() == 1u);
    check_counts(sem, 1, 0);

    // close() completes a waiter with closed, and every later acquire too.
    auto closed_waiter = record_acquire(sem, 2);
    sem.close();
    BOOST_TEST(sem.is_closed());
    check_counts(sem, 1, 0);
    auto closed_later = record_acquire(sem);
    auto closed_zero = record_acquire(sem, 0);
    BOOST_TEST(sem.available() == 1u);

    run(io);
    check_completed(*too_many, asio_sync::error::too_many_permits);
    check_completed(*cancelled, aborted);
    check_completed(*closed_waiter, closed);
    check_completed(*closed_later, closed);
    check_completed(*closed_zero, closed);
}

BOOST_FIXTURE_TEST_CASE(callback_move_only_handler, semaphore_with<1>)
{
    // At once.
    auto now = std::make_shared<test::outcome>();
    sem.async_acquire(move_only_handler(now));
    BOOST_TEST(!now->done());
    run(io);
    check_completed(*now, success);

    // After waiting.
    auto later = std::make_shared<test::outcome>();
    sem.async_acquire(move_only_handler(later));
    poll(io);
    BOOST_TEST(sem.waiting() == 1u);
    BOOST_TEST(!later->done());
    sem.release(1);
    run(io);
    check_completed(*later, success);

    // A move-only lambda, completed by close().
    std::optional<error_code> result;
    int value = 0;
    sem.async_acquire([p = std::make_unique<int>(42), &result, &value](error_code ec) {
        value = *p;
        result = ec;
    });
    BOOST_TEST(sem.waiting() == 1u);
    sem.close();
    run(io);
    BOOST_TEST(value == 42);
    check_result(result, closed);
}

// ---------------------------------------------------------------------------------------------
// 2. use_awaitable.
// ---------------------------------------------------------------------------------------------

#if defined(BOOST_ASIO_HAS_CO_AWAIT)
BOOST_FIXTURE_TEST_CASE(use_awaitable_at_once_and_after_waiting, semaphore_with<1>)
{
    int step = 0;

    test::spawned coro(io, [&]() -> asio::awaitable<void> {
        co_await sem.async_acquire(asio::use_awaitable);
        step = 1;
        co_await sem.async_acquire(2, asio::use_awaitable);
        step = 2;
    });

    poll(io);
    BOOST_TEST(step == 1);
    BOOST_TEST(sem.waiting() == 1u);
    BOOST_TEST(coro.calls == 0);

    sem.release(1);
    poll(io);
    BOOST_TEST(step == 1); // one of the two permits is not enough
    sem.release(1);
    run(io);
    BOOST_TEST(step == 2);
    coro.check_finished();
    check_counts(sem, 0, 0);
}

BOOST_FIXTURE_TEST_CASE(use_awaitable_throws_system_error_on_error, semaphore_with<0>)
{
    // Caught inside the coroutine: cancel() -> operation_aborted, close() -> closed, and closed
    // again for an acquire started once the semaphore is closed.
    std::array<std::optional<error_code>, 3> codes;
    test::spawned caught(io, [&]() -> asio::awaitable<void> {
        for (std::optional<error_code>& code : codes)
            code = co_await code_thrown_by_acquire(sem);
    });

    poll(io);
    BOOST_TEST(sem.waiting() == 1u);
    BOOST_TEST(sem.cancel() == 1u);
    poll(io);
    check_result(codes[0], aborted);
    BOOST_TEST(sem.waiting() == 1u);
    sem.close();
    run(io);
    check_result(codes[1], closed);
    check_result(codes[2], closed);
    caught.check_finished();

    // Not caught: the system_error reaches co_spawn's completion handler.
    asio::io_context io2;
    asio_sync::semaphore sem2(io2, 0);
    bool after = false;
    test::spawned escaped(io2, [&]() -> asio::awaitable<void> {
        co_await sem2.async_acquire(asio::use_awaitable);
        after = true;
    });
    poll(io2);
    BOOST_TEST(sem2.waiting() == 1u);
    sem2.cancel();
    run(io2);
    BOOST_TEST(!after);
    BOOST_TEST(escaped.calls == 1);
    BOOST_TEST_REQUIRE(static_cast<bool>(escaped.error));
    check_throws_code([&] { std::rethrow_exception(escaped.error); }, aborted);
}

// A free permit is taken without suspending the coroutine, with use_awaitable and with
// as_tuple(use_awaitable): a handler posted before the acquire has not run after it. The permit,
// timed and lock forms share the path; an acquire that must wait, or that fails, still suspends.
BOOST_FIXTURE_TEST_CASE(use_awaitable_takes_free_permits_without_suspending, semaphore_with<3>)
{
    bool posted_ran = false;
    std::vector<bool> ran_before;
    test::spawned coro(io, [&]() -> asio::awaitable<void> {
        asio::post(io, [&] { posted_ran = true; });
        co_await sem.async_acquire(asio::use_awaitable);
        ran_before.push_back(posted_ran);
        auto permit = co_await sem.async_acquire_permit(2, asio::use_awaitable);
        ran_before.push_back(posted_ran);
        BOOST_TEST(permit.count() == 2u);
        BOOST_TEST(sem.available() == 0u);
        permit.release();
        co_await sem.async_acquire_for(2, std::chrono::hours(1), asio::use_awaitable);
        ran_before.push_back(posted_ran);
        BOOST_TEST(sem.available() == 0u);
        sem.release(2);
        auto [ec, tuple_permit] = co_await sem.async_acquire_permit(2, asio::as_tuple(asio::use_awaitable));
        ran_before.push_back(posted_ran);
        BOOST_TEST(ec == success);
        BOOST_TEST(tuple_permit.count() == 2u);
        tuple_permit.release();
        sem.release(1);
        // More than the capacity: fails, through the executor.
        asio_sync::semaphore bounded(io, 1, 1);
        std::optional<error_code> code;
        try
        {
            co_await bounded.async_acquire(2, asio::use_awaitable);
        }
        catch (const boost::system::system_error& e)
        {
            code = e.code();
        }
        check_result(code, asio_sync::error::too_many_permits);
        ran_before.push_back(posted_ran);
        auto [tuple_code] = co_await bounded.async_acquire(2, asio::as_tuple(asio::use_awaitable));
        BOOST_TEST(tuple_code == asio_sync::error::too_many_permits);
    });
    // On a new thread, whose budget of acquires without suspension is whole.
    std::thread([&] { run(io); }).join();
    coro.check_finished();
    BOOST_TEST(ran_before == (std::vector<bool>{false, false, false, false, true}),
               boost::test_tools::per_element());
    check_counts(sem, 3, 0);
}

// A loop of acquires that never wait still lets the other handlers of its thread run: at most
// immediate_acquire_budget of them complete in a row without suspending. The coroutine yields
// before it takes the permits of the next acquire, so it holds none of them while the other
// handlers run: when the posted handler runs, exactly the permits of the completed acquires are
// gone.
BOOST_FIXTURE_TEST_CASE(use_awaitable_loop_of_free_acquires_still_yields, semaphore_with<1000>)
{
    std::size_t completed = 0;
    std::optional<std::size_t> completed_when_posted_ran;
    std::optional<std::size_t> available_when_posted_ran;
    test::spawned coro(io, [&]() -> asio::awaitable<void> {
        asio::post(io, [&] {
            completed_when_posted_ran = completed;
            available_when_posted_ran = sem.available();
        });
        while (completed < 1000 && !completed_when_posted_ran)
        {
            co_await sem.async_acquire(asio::use_awaitable);
            ++completed;
        }
        sem.release(completed);
    });
    run(io);
    coro.check_finished();
    BOOST_TEST_REQUIRE(completed_when_posted_ran.has_value());
    BOOST_TEST(*completed_when_posted_ran <= asio_sync::detail::immediate_acquire_budget);
    BOOST_TEST(*available_when_posted_ran == 1000u - *completed_when_posted_ran);
    check_counts(sem, 1000, 0);
}

// Spawns `body` on a fresh io_context and runs it, on a thread of its own (whose budget of acquires
// without suspension is whole), until it has no work left. Returns how many handlers ran.
template <class Body>
std::size_t handlers_run_by(Body body)
{
    asio::io_context io;
    test::spawned coro(io, std::move(body));
    std::size_t handlers = 0;
    std::thread([&] { handlers = io.run_for(limit); }).join();
    BOOST_REQUIRE_MESSAGE(io.stopped(), "the io_context still had work when the time limit expired");
    coro.check_finished();
    return handlers;
}

// 100 acquires of a free permit, then a wait for a permit that a handler posted by the coroutine
// gives back, then 64 more acquires of a free permit. With `awaited`, the free permits are taken by
// co_await async_acquire, under the budget; otherwise by try_acquire, which has none.
asio::awaitable<void> free_acquires_around_a_wait(bool awaited)
{
    const auto ex = co_await asio::this_coro::executor;
    asio_sync::semaphore sem(ex, 1);
    const auto take_free_permit = [&](int times) -> asio::awaitable<void> {
        for (int i = 0; i < times; ++i)
        {
            if (awaited)
                co_await sem.async_acquire(asio::use_awaitable);
            else
                BOOST_TEST_REQUIRE(sem.try_acquire());
            sem.release();
        }
    };
    co_await take_free_permit(100);
    BOOST_TEST_REQUIRE(sem.try_acquire());
    asio::post(ex, [&] { sem.release(); });
    co_await sem.async_acquire(asio::use_awaitable);
    sem.release();
    co_await take_free_permit(64);
}

// The budget starts again after the yield it forces, and after an acquire that suspended because
// its permits were not free. Counted in handlers, the awaited acquires cost exactly one yield: the
// 65th of the first 100 yields first; the 64 after the wait do not, since the wait started the
// count again.
BOOST_AUTO_TEST_CASE(use_awaitable_budget_starts_again_after_a_yield_and_after_a_wait)
{
    static_assert(asio_sync::detail::immediate_acquire_budget == 64);
    const std::size_t without_budget = handlers_run_by([] { return free_acquires_around_a_wait(false); });
    const std::size_t with_budget = handlers_run_by([] { return free_acquires_around_a_wait(true); });
    BOOST_TEST(with_budget == without_budget + 1);
}

// The usual case of a handler with an executor of its own: a coroutine of another context waits on
// the semaphore, and the semaphore's context keeps running meanwhile (poll() would stop it if it
// had no work left).
BOOST_AUTO_TEST_CASE(use_awaitable_waiter_of_another_context_keeps_the_semaphores_running)
{
    asio::io_context a;
    asio::io_context b;
    asio_sync::semaphore sem(a, 0);
    test::spawned coro(b, [&]() -> asio::awaitable<void> { co_await sem.async_acquire(asio::use_awaitable); });
    poll(b);
    BOOST_TEST(sem.waiting() == 1u);
    poll(a);
    BOOST_TEST(!a.stopped());

    sem.release(1);
    run(b);
    coro.check_finished();
    poll(a);
    BOOST_TEST(a.stopped());
}
#endif

// ---------------------------------------------------------------------------------------------
// 3. use_future, with the io_context on one thread and the release on another.
// ---------------------------------------------------------------------------------------------

BOOST_FIXTURE_TEST_CASE(use_future_released_from_another_thread, semaphore_with<1>)
{
    auto guard = asio::make_work_guard(io);
    test::io_threads io_thread(io, 1);

    // At once.
    std::future<void> now = sem.async_acquire(asio::use_future);
    require_ready(now);
    BOOST_CHECK_NO_THROW(now.get());
    BOOST_TEST(sem.available() == 0u);

    // After waiting for a release made by a third thread.
    std::future<void> later = sem.async_acquire(asio::use_future);
    BOOST_TEST(sem.waiting() == 1u);
    BOOST_TEST((later.wait_for(std::chrono::seconds(0)) == std::future_status::timeout));
    on_another_thread([&] { sem.release(1); });
    require_ready(later);
    BOOST_CHECK_NO_THROW(later.get());
    check_counts(sem, 0, 0);

    // Errors arrive as system_error from get(): cancel() and close() from a third thread. Shared
    // futures keep the shared state (and with it the stored exception) referenced from this thread
    // until after the check: std::future::get() would drop it before the catch block reads the
    // exception, leaving the last release to the completing thread through libstdc++'s exception
    // reference count, which ThreadSanitizer cannot see.
    std::vector<std::shared_future<void>> failing;
    auto check_fails_when = [&](auto act, const error_code& expected) {
        const std::shared_future<void>& future = failing.emplace_back(sem.async_acquire(asio::use_future));
        on_another_thread(act);
        require_ready(future);
        check_throws_code([&] { future.get(); }, expected);
    };
    check_fails_when([&] { sem.cancel(); }, aborted);
    check_fails_when([&] { sem.close(); }, closed);

    guard.reset();
    io_thread.join();
    BOOST_TEST(io.stopped());
}

// ---------------------------------------------------------------------------------------------
// 4. deferred.
// ---------------------------------------------------------------------------------------------

BOOST_FIXTURE_TEST_CASE(deferred_does_nothing_until_invoked, semaphore_with<1>)
{
    // A permit is free, but the deferred operation does not take it before it is invoked.
    auto now = sem.async_acquire(asio::deferred);
    check_counts(sem, 1, 0);
    poll(io);
    BOOST_TEST(sem.available() == 1u);
    auto [now_out, now_handler] = test::make_record();
    std::move(now)(now_handler);
    BOOST_TEST(sem.available() == 0u);
    BOOST_TEST(!now_out->done());
    run(io);
    check_completed(*now_out, success);

    // None free: it is queued only once invoked, then waits for release().
    auto later = sem.async_acquire(2, asio::deferred);
    BOOST_TEST(sem.waiting() == 0u);
    auto [later_out, later_handler] = test::make_record();
    std::move(later)(later_handler);
    BOOST_TEST(sem.waiting() == 1u);
    poll(io);
    BOOST_TEST(!later_out->done());
    sem.release(2);
    run(io);
    check_completed(*later_out, success);

#if defined(BOOST_ASIO_HAS_CO_AWAIT)
    // Composed with a continuation, and awaited from a coroutine.
    int value = 0;
    test::spawned coro(io, [&]() -> asio::awaitable<void> {
        auto op =
            sem.async_acquire(asio::deferred([](error_code ec) { return asio::deferred.values(ec, 7); }));
        auto [ec, v] = co_await std::move(op)(asio::as_tuple(asio::use_awaitable));
        BOOST_TEST(ec == success);
        value = v;
    });
    poll(io);
    BOOST_TEST(sem.waiting() == 1u);
    BOOST_TEST(value == 0);
    sem.release(1);
    run(io);
    coro.check_finished();
    BOOST_TEST(value == 7);
#endif

    // Closed between creation and invocation: the state at invocation decides.
    auto after_close = sem.async_acquire(asio::deferred);
    sem.release(1);
    sem.close();
    auto [closed_out, closed_handler] = test::make_record();
    std::move(after_close)(closed_handler);
    run(io);
    check_completed(*closed_out, closed);
    BOOST_TEST(sem.available() == 1u);
}

// ---------------------------------------------------------------------------------------------
// 5. as_tuple.
// ---------------------------------------------------------------------------------------------

#if defined(BOOST_ASIO_HAS_CO_AWAIT)
BOOST_FIXTURE_TEST_CASE(as_tuple_use_awaitable, semaphore_with<1>)
{
    std::vector<error_code> results;

    test::spawned coro(io, [&]() -> asio::awaitable<void> {
        // The third completes with an error: a value here, not an exception.
        for (int i = 0; i < 3; ++i)
        {
            auto [ec] = co_await sem.async_acquire(asio::as_tuple(asio::use_awaitable));
            results.push_back(ec);
        }
    });

    check_progress(io, sem, results, 1);
    sem.release(1);
    check_progress(io, sem, results, 2);
    sem.close();
    run(io);
    coro.check_finished();
    check_results(results, {success, success, closed});
}
#endif

BOOST_FIXTURE_TEST_CASE(as_tuple_callback, semaphore_with<1>)
{
    std::vector<error_code> results;
    auto handler = asio::as_tuple([&](std::tuple<error_code> t) { results.push_back(std::get<0>(t)); });

    sem.async_acquire(handler);
    BOOST_TEST(results.empty());
    run(io);
    BOOST_TEST_REQUIRE(results.size() == 1u);
    BOOST_TEST(results[0] == success);

    sem.async_acquire(handler);
    poll(io);
    BOOST_TEST(results.size() == 1u);
    sem.release(1);
    run(io);
    BOOST_TEST_REQUIRE(results.size() == 2u);
    BOOST_TEST(results[1] == success);

    sem.async_acquire(handler);
    sem.cancel();
    run(io);
    BOOST_TEST_REQUIRE(results.size() == 3u);
    BOOST_TEST(results[2] == aborted);
}

// ---------------------------------------------------------------------------------------------
// 6. redirect_error.
// ---------------------------------------------------------------------------------------------

#if defined(BOOST_ASIO_HAS_CO_AWAIT)
BOOST_FIXTURE_TEST_CASE(redirect_error_use_awaitable, semaphore_with<1>)
{
    std::vector<error_code> results;

    test::spawned coro(io, [&]() -> asio::awaitable<void> {
        // The third and fourth complete with an error: stored in `ec`, not thrown.
        for (int i = 0; i < 4; ++i)
        {
            error_code ec = asio::error::fault; // overwritten by each completion
            co_await sem.async_acquire(asio::redirect_error(asio::use_awaitable, ec));
            results.push_back(ec);
        }
    });

    check_progress(io, sem, results, 1);
    sem.release(1);
    check_progress(io, sem, results, 2);
    BOOST_TEST(sem.cancel() == 1u);
    check_progress(io, sem, results, 3);
    sem.close();
    run(io);
    coro.check_finished();
    check_results(results, {success, success, aborted, closed});
}
#endif

// ---------------------------------------------------------------------------------------------
// 7. experimental::use_promise.
// ---------------------------------------------------------------------------------------------

BOOST_FIXTURE_TEST_CASE(use_promise, semaphore_with<1>)
{
    // At once: the promise starts the operation eagerly, but completes only through the context.
    {
        auto p = sem.async_acquire(asx::use_promise);
        BOOST_TEST(sem.available() == 0u);
        BOOST_TEST(!p.completed());
        poll(io);
        BOOST_TEST(p.completed());
        auto [out, handler] = test::make_record();
        p(handler);
        run(io);
        check_completed(*out, success);
    }

    // After waiting.
    {
        auto p = sem.async_acquire(asx::use_promise);
        BOOST_TEST(sem.waiting() == 1u);
        auto [out, handler] = test::make_record();
        p(handler);
        poll(io);
        BOOST_TEST(!p.completed());
        BOOST_TEST(!out->done());
        sem.release(1);
        run(io);
        check_completed(*out, success);
        BOOST_TEST(sem.available() == 0u);
    }

    // promise::cancel() aborts a waiter holding part of its permits; they come back.
    {
        sem.release(2);
        auto p = sem.async_acquire(3, asx::use_promise);
        check_counts(sem, 0, 1);
        auto [out, handler] = test::make_record();
        p(handler);
        p.cancel();
        run(io);
        check_completed(*out, aborted);
        check_counts(sem, 2, 0);
    }

    // Destroying a pending promise cancels the acquire: no permit is lost to it.
    {
        BOOST_TEST_REQUIRE(sem.try_acquire(2));
        {
            auto p = sem.async_acquire(asx::use_promise);
            BOOST_TEST(sem.waiting() == 1u);
        }
        run(io);
        BOOST_TEST(sem.waiting() == 0u);
        sem.release(1);
        BOOST_TEST(sem.available() == 1u);
    }

#if defined(BOOST_ASIO_HAS_CO_AWAIT)
    // Awaited from a coroutine; an error arrives as the error code.
    {
        std::optional<error_code> result;
        test::spawned coro(io, [&]() -> asio::awaitable<void> {
            auto p = sem.async_acquire(2, asx::use_promise);
            auto [ec] = co_await p(asio::as_tuple(asio::use_awaitable));
            result = ec;
        });
        poll(io);
        BOOST_TEST(sem.waiting() == 1u);
        sem.close();
        run(io);
        coro.check_finished();
        check_result(result, closed);
        BOOST_TEST(sem.available() == 1u);
    }
#endif
}

// ---------------------------------------------------------------------------------------------
// 8. bind_cancellation_slot.
// ---------------------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(cancellation_slot_aborts_a_waiter_for_each_type)
{
    const std::pair<asio::cancellation_type_t, const char*> types[] = {
        {asio::cancellation_type::terminal, "terminal"},
        {asio::cancellation_type::partial, "partial"},
        {asio::cancellation_type::total, "total"},
        {asio::cancellation_type::all, "all"},
    };
    for (const auto& [type, name] : types)
    {
        BOOST_TEST_CONTEXT("cancellation type " << name)
        {
            asio::io_context io;
            asio_sync::semaphore sem(io, 0);
            asio::cancellation_signal signal;

            auto out = record_cancellable_acquire(sem, signal);
            poll(io);
            BOOST_TEST(sem.waiting() == 1u);
            BOOST_TEST(!out->done());

            signal.emit(type);
            BOOST_TEST(!out->done()); // completed through the context, not inside emit()
            poll(io);
            BOOST_TEST_REQUIRE(out->done()); // else the waiter ignored this type and still waits
            run(io);
            check_completed(*out, aborted);
            check_counts(sem, 0, 0);

            // The cancelled waiter is really gone: a released permit stays in the counter.
            sem.release(1);
            BOOST_TEST(sem.available() == 1u);
            // And the slot is free again: emitting once more does nothing.
            signal.emit(type);
            run(io);
            BOOST_TEST(out->calls == 1);
            BOOST_TEST(sem.available() == 1u);
        }
    }
}

BOOST_FIXTURE_TEST_CASE(cancellation_after_grant_does_nothing, semaphore_with<0>)
{
    // Granted by release(), cancelled before the handler has run: the grant stands.
    asio::cancellation_signal signal;
    auto out = record_cancellable_acquire(sem, signal);
    poll(io);
    BOOST_TEST(sem.waiting() == 1u);
    sem.release(1);
    signal.emit(asio::cancellation_type::terminal);
    run(io);
    check_completed(*out, success);
    check_counts(sem, 0, 0);                        // the permit is the handler's
    signal.emit(asio::cancellation_type::terminal); // after completion: nothing at all
    run(io);
    BOOST_TEST(out->calls == 1);
    sem.release(1);
    BOOST_TEST(sem.available() == 1u);

    // Granted at once, cancelled before the handler has run: the grant stands too.
    asio::cancellation_signal signal2;
    auto now = record_cancellable_acquire(sem, signal2);
    signal2.emit(asio::cancellation_type::all);
    run(io);
    check_completed(*now, success);
    check_counts(sem, 0, 0);
}

BOOST_AUTO_TEST_CASE(cancellation_of_a_partly_served_waiter_returns_its_permits)
{
    // Nobody behind it: the two collected permits return to the counter.
    {
        asio::io_context io;
        asio_sync::semaphore sem(io, 2);
        asio::cancellation_signal signal;
        auto out = record_cancellable_acquire(sem, signal, 3);
        poll(io);
        check_counts(sem, 0, 1);
        signal.emit(asio::cancellation_type::terminal);
        run(io);
        check_completed(*out, aborted);
        check_counts(sem, 2, 0);
    }

    // A waiter behind it: the two permits go to it.
    {
        asio::io_context io;
        asio_sync::semaphore sem(io, 2);
        asio::cancellation_signal signal;
        auto first = record_cancellable_acquire(sem, signal, 3);
        auto second = record_acquire(sem, 2);
        poll(io);
        check_counts(sem, 0, 2);
        signal.emit(asio::cancellation_type::partial);
        poll(io);
        BOOST_TEST_REQUIRE(first->done());
        run(io);
        check_completed(*first, aborted);
        check_completed(*second, success);
        check_counts(sem, 0, 0);
        sem.release(2);
        BOOST_TEST(sem.available() == 2u);
    }

    // A waiter behind it that needs more: it collects the two and keeps waiting.
    {
        asio::io_context io;
        asio_sync::semaphore sem(io, 2);
        asio::cancellation_signal signal;
        auto first = record_cancellable_acquire(sem, signal, 3);
        auto second = record_acquire(sem, 3);
        signal.emit(asio::cancellation_type::total);
        poll(io);
        check_completed(*first, aborted);
        BOOST_TEST(!second->done());
        check_counts(sem, 0, 1);
        sem.release(1);
        run(io);
        check_completed(*second, success);
        BOOST_TEST(sem.available() == 0u);
    }

    // A cancelled waiter in the middle of the queue: the others keep their order.
    {
        asio::io_context io;
        asio_sync::semaphore sem(io, 0);
        asio::cancellation_signal signal;
        auto a = record_acquire(sem);
        auto b = record_cancellable_acquire(sem, signal);
        auto c = record_acquire(sem);
        BOOST_TEST(sem.waiting() == 3u);
        signal.emit(asio::cancellation_type::terminal);
        poll(io);
        BOOST_TEST(sem.waiting() == 2u);
        sem.release(1);
        poll(io);
        check_completed(*a, success);
        check_completed(*b, aborted);
        BOOST_TEST(!c->done());
        sem.release(1);
        run(io);
        check_completed(*c, success);
        BOOST_TEST(sem.available() == 0u);
    }
}

// ---------------------------------------------------------------------------------------------
// 9. bind_executor with a strand, the io_context run by two threads.
// ---------------------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(bind_executor_runs_handler_in_strand)
{
    asio::io_context io(2);
    asio_sync::semaphore sem(io, 4);
    auto strand = asio::make_strand(io);

    constexpr int chains = 8;  // concurrent acquirers: 4 complete at once, 4 wait
    constexpr int total = 400; // completions in all
    strand_tally tally;
    int started = 0;   // touched only in the strand (or before the threads start)
    int completed = 0; // touched only in the strand: a data race if a handler ran outside it

    std::function<void()> start_one;
    start_one = [&] {
        ++started;
        sem.async_acquire(asio::bind_executor(strand, [&](error_code ec) {
            tally.count(strand, ec);
            ++completed;
            if (started < total)
                start_one(); // queued behind the others, or granted at once
            sem.release(1);
        }));
    };
    for (int i = 0; i < chains; ++i)
        start_one();
    BOOST_TEST(sem.waiting() == 4u);

    // Control: a handler without a bound executor does not run in the strand.
    std::atomic<int> control_in_strand{0};
    std::atomic<int> control_calls{0};
    sem.async_acquire(0, [&](error_code) {
        control_calls.fetch_add(1);
        if (strand.running_in_this_thread())
            control_in_strand.fetch_add(1);
    });

    {
        test::io_threads threads(io, 2);
        threads.join();
    }
    BOOST_TEST(io.stopped());
    tally.check(total);
    BOOST_TEST(completed == total);
    BOOST_TEST(control_calls.load() == 1);
    BOOST_TEST(control_in_strand.load() == 0);
    check_counts(sem, 4, 0);
}

BOOST_AUTO_TEST_CASE(bind_executor_strand_with_release_from_main_thread)
{
    asio::io_context io(2);
    asio_sync::semaphore sem(io, 0);
    auto strand = asio::make_strand(io);
    auto guard = asio::make_work_guard(io);
    test::io_threads threads(io, 2);

    constexpr int count = 64;
    strand_tally tally;
    std::promise<void> all_done;
    std::future<void> all_done_future = all_done.get_future();
    int completed = 0; // touched only in the strand
    for (int i = 0; i < count; ++i)
    {
        sem.async_acquire(asio::bind_executor(strand, [&](error_code ec) {
            tally.count(strand, ec);
            if (++completed == count)
                all_done.set_value();
        }));
    }
    for (int i = 0; i < count; ++i)
        sem.release(1); // while two threads run the context
    require_ready(all_done_future);

    guard.reset();
    threads.join();
    BOOST_TEST(io.stopped());
    tally.check(count);
    check_counts(sem, 0, 0);
}

// ---------------------------------------------------------------------------------------------
// 10. bind_allocator.
// ---------------------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(bind_allocator_allocates_a_waiting_operation_through_it)
{
    test::allocation_counts counts;
    {
        asio::io_context io;
        asio_sync::semaphore sem(io, 0);
        const test::counting_allocator<void> alloc(counts);

        // Has to wait: its operation comes from the handler's allocator and is still live.
        auto [later, later_handler] = test::make_record();
        sem.async_acquire(asio::bind_allocator(alloc, later_handler));
        BOOST_TEST(sem.waiting() == 1u);
        BOOST_TEST(counts.allocations.load() > 0u);
        BOOST_TEST(counts.allocations.load() > counts.deallocations.load());
        sem.release(1);
        run(io);
        check_completed(*later, success);
        check_all_deallocated(counts);

        // Cancelled while waiting: released all the same.
        const std::size_t before = counts.allocations.load();
        auto [cancelled, cancelled_handler] = test::make_record();
        sem.async_acquire(asio::bind_allocator(alloc, cancelled_handler));
        BOOST_TEST(counts.allocations.load() > before);
        sem.cancel();
        run(io);
        check_completed(*cancelled, aborted);
        check_all_deallocated(counts);

        // At once: whatever it allocates is released.
        sem.release(1);
        auto [now, now_handler] = test::make_record();
        sem.async_acquire(asio::bind_allocator(alloc, now_handler));
        run(io);
        check_completed(*now, success);
        check_all_deallocated(counts);
    }
    check_all_deallocated(counts);

    // Never completed: the semaphore and then the context are destroyed with the acquire queued.
    test::allocation_counts abandoned_counts;
    auto abandoned = std::make_shared<test::outcome>();
    {
        asio::io_context io;
        asio_sync::semaphore sem(io, 0);
        sem.async_acquire(
            asio::bind_allocator(test::counting_allocator<void>(abandoned_counts), test::record(abandoned)));
        BOOST_TEST(abandoned_counts.allocations.load() > 0u);
    }
    BOOST_TEST(!abandoned->done()); // destroyed with the context, never invoked
    BOOST_TEST(abandoned_counts.allocations.load() > 0u);
    check_all_deallocated(abandoned_counts);
}

// ---------------------------------------------------------------------------------------------
// 11. experimental::awaitable_operators: acquire || timer.
// ---------------------------------------------------------------------------------------------

#if defined(BOOST_ASIO_HAS_CO_AWAIT)
BOOST_FIXTURE_TEST_CASE(awaitable_operators_acquire_wins_over_timer, semaphore_with<0>)
{
    // The timer never expires within the test: only the release can decide the race.
    acquire_or_timeout race(io, sem, 1, std::chrono::hours(24));
    poll(io);
    BOOST_TEST(sem.waiting() == 1u);
    BOOST_TEST(!race.winner.has_value());
    sem.release(1);
    run(io); // also proves the timer was cancelled
    race.check_won_by(0);
    check_counts(sem, 0, 0); // the permit is the coroutine's
}

BOOST_AUTO_TEST_CASE(awaitable_operators_timer_wins_and_no_permit_is_lost)
{
    // Nothing collected: nothing to give back, and no waiter left behind.
    {
        asio::io_context io;
        asio_sync::semaphore sem(io, 0);
        acquire_or_timeout race(io, sem, 1, std::chrono::milliseconds(1));
        run(io);
        race.check_won_by(1);
        check_counts(sem, 0, 0);
        sem.release(1);
        BOOST_TEST(sem.available() == 1u);
    }

    // Two of three collected: both come back.
    {
        asio::io_context io;
        asio_sync::semaphore sem(io, 2);
        acquire_or_timeout race(io, sem, 3, std::chrono::milliseconds(1));
        run(io);
        race.check_won_by(1);
        check_counts(sem, 2, 0);
        BOOST_TEST(sem.try_acquire(2));
    }
}
#endif

// ---------------------------------------------------------------------------------------------
// 12. experimental::make_parallel_group.
// ---------------------------------------------------------------------------------------------

BOOST_FIXTURE_TEST_CASE(parallel_group_wait_for_all, semaphore_with<1>)
{
    group_outcome group;
    asx::make_parallel_group(sem.async_acquire(asio::deferred), sem.async_acquire(asio::deferred))
        .async_wait(asx::wait_for_all(), group.handler());

    // The first acquire took the free permit; the second waits.
    poll(io);
    BOOST_TEST(group.calls == 0);
    check_counts(sem, 0, 1);
    sem.release(1);
    run(io);
    group.check(0, success, success);
    BOOST_TEST(group.order[1] == 1u);
    check_counts(sem, 0, 0);
}

BOOST_AUTO_TEST_CASE(parallel_group_wait_for_one_cancels_the_other)
{
    // Same semaphore: the first wins at once, the queued second is cancelled.
    {
        asio::io_context io;
        asio_sync::semaphore sem(io, 1);
        group_outcome group;
        asx::make_parallel_group(sem.async_acquire(asio::deferred), sem.async_acquire(asio::deferred))
            .async_wait(asx::wait_for_one(), group.handler());
        run(io);
        group.check(0, success, aborted);
        check_counts(sem, 0, 0); // held by the winner
        sem.release(1);
        BOOST_TEST(sem.available() == 1u);
    }

    // Two semaphores: the loser had collected two of three permits; they come back.
    {
        asio::io_context io;
        asio_sync::semaphore a(io, 2);
        asio_sync::semaphore b(io, 0);
        group_outcome group;
        asx::make_parallel_group(a.async_acquire(3, asio::deferred), b.async_acquire(asio::deferred))
            .async_wait(asx::wait_for_one(), group.handler());
        poll(io);
        BOOST_TEST(group.calls == 0);
        check_counts(a, 0, 1);
        BOOST_TEST(b.waiting() == 1u);
        b.release(1);
        run(io);
        group.check(1, aborted, success);
        BOOST_TEST(group.order[1] == 0u);
        check_counts(a, 2, 0);
        check_counts(b, 0, 0);
    }
}

BOOST_AUTO_TEST_SUITE_END()
