// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#define BOOST_TEST_MODULE mutex
#include <support/deadline_checks.hpp>
#include <support/lock_checks.hpp> // the mutexes, Asio, Boost.Test, the standard headers, helpers

#include <boost/asio/any_io_executor.hpp>

namespace asio = boost::asio;
namespace test = asio_sync::test;
using boost::system::error_code;

namespace {

// A locked mutex, and a log of the handlers of the locks queued behind it.
struct locked
{
    asio::io_context io;
    asio_sync::mutex mtx{io};
    test::completion_log log;

    locked() { BOOST_TEST_REQUIRE(mtx.try_lock()); }
};

// The timed locks, for the table of test/support/deadline_checks.hpp: plain, and scoped (the
// guard the handler receives is taken over, so that release() gives it back like a plain lock).
template <bool Scoped>
struct timed_lock
{
    static constexpr const char* name =
        Scoped ? "mutex.async_scoped_lock_for/until" : "mutex.async_lock_for/until";

    using object = asio_sync::mutex;

    static void block(object& m) { BOOST_TEST_REQUIRE(m.try_lock()); }
    static void grant(object& m) { m.unlock(); }
    static void release(object& m) { m.unlock(); }

    static bool idle(object& m) { return test::unlocked_now(m); }

    template <class Duration, class Token>
    static auto wait_for(object& m, Duration d, Token&& token)
    {
        if constexpr (Scoped && std::is_invocable_v<Token, error_code>)
            return m.async_scoped_lock_for(d, test::take_guard(std::forward<Token>(token)));
        else
            return m.async_lock_for(d, std::forward<Token>(token));
    }

    template <class TimePoint, class Token>
    static auto wait_until(object& m, TimePoint t, Token&& token)
    {
        if constexpr (Scoped && std::is_invocable_v<Token, error_code>)
            return m.async_scoped_lock_until(t, test::take_guard(std::forward<Token>(token)));
        else
            return m.async_lock_until(t, std::forward<Token>(token));
    }
};

} // namespace

BOOST_AUTO_TEST_SUITE(mutex)

BOOST_DATA_TEST_CASE(every_timed_lock,
                     boost::unit_test::data::make(test::deadline_checks<timed_lock<false>>::all()) +
                         boost::unit_test::data::make(test::deadline_checks<timed_lock<true>>::all()),
                     check)
{
    check.run();
}

// One test case per entry of the shared table, so that each token and scenario fails on its own.
BOOST_DATA_TEST_CASE(every_token_and_scoped_lock,
                     boost::unit_test::data::make(test::lock_checks<test::mutex_lock>::all()), check)
{
    check.run();
}

BOOST_AUTO_TEST_CASE(construction_observers_and_try_lock)
{
    static_assert(!std::is_copy_constructible_v<asio_sync::mutex>);
    static_assert(!std::is_move_constructible_v<asio_sync::mutex>);
    static_assert(std::is_same_v<asio_sync::mutex::rebind_executor<asio::io_context::executor_type>::other,
                                 asio_sync::basic_mutex<asio::io_context::executor_type>>);

    asio::io_context io;
    asio_sync::mutex mtx(io);
    BOOST_TEST((mtx.get_executor() == asio::any_io_executor(io.get_executor())));
    BOOST_TEST(mtx.try_lock());
    BOOST_TEST(!mtx.try_lock()); // not recursive
    mtx.unlock();
    test::check_unlocked(mtx);

    // A concrete executor type behaves the same.
    asio_sync::basic_mutex<asio::io_context::executor_type> concrete(io.get_executor());
    auto [out, handler] = test::make_record();
    concrete.async_lock(handler);
    test::run(io);
    BOOST_TEST(out->calls == 1);
    BOOST_TEST(!*out->ec);
    BOOST_TEST(!concrete.try_lock()); // the handler holds it
    concrete.unlock();
    test::check_unlocked(concrete);
}

BOOST_FIXTURE_TEST_CASE(pending_locks_are_granted_in_fifo_order_one_per_unlock, locked)
{
    for (int i = 0; i < 5; ++i)
        mtx.async_lock(log.handler(i));
    std::vector<int> expected;
    for (int i = 0; i < 5; ++i)
    {
        mtx.unlock(); // passes the lock to the oldest waiter
        test::poll(io);
        expected.push_back(i);
        BOOST_TEST(log.ids() == expected);
    }
    for (const auto& entry : log.entries)
        BOOST_TEST(!entry.second);
    mtx.unlock();
    test::check_unlocked(mtx);
}

BOOST_FIXTURE_TEST_CASE(try_lock_fails_while_locked_and_while_anyone_waits, locked)
{
    BOOST_TEST(!mtx.try_lock());
    auto [out, handler] = test::make_record();
    mtx.async_lock(handler);
    BOOST_TEST(!mtx.try_lock());
    // The unlock hands the lock to the waiter directly: there is no moment, not even before its
    // handler runs, in which a try_lock could take it first.
    mtx.unlock();
    BOOST_TEST(!out->done());
    BOOST_TEST(!mtx.try_lock());
    test::run(io);
    BOOST_TEST(out->calls == 1);
    BOOST_TEST(!*out->ec);
    BOOST_TEST(!mtx.try_lock());
    mtx.unlock();
    test::check_unlocked(mtx);
}

BOOST_FIXTURE_TEST_CASE(cancelled_pending_locks_leave_the_queue_and_the_next_waiter_gets_the_lock, locked)
{
    asio::cancellation_signal head;
    asio::cancellation_signal middle;
    mtx.async_lock(asio::bind_cancellation_slot(head.slot(), log.handler(0)));
    mtx.async_lock(log.handler(1));
    mtx.async_lock(asio::bind_cancellation_slot(middle.slot(), log.handler(2)));
    mtx.async_lock(log.handler(3));
    head.emit(asio::cancellation_type::terminal);
    middle.emit(asio::cancellation_type::partial);
    BOOST_TEST(log.entries.empty()); // never invoked inside emit()
    test::poll(io);
    BOOST_TEST(log.ids() == (std::vector<int>{0, 2}));

    mtx.unlock();
    test::poll(io);
    BOOST_TEST(log.ids() == (std::vector<int>{0, 2, 1}));
    mtx.unlock();
    test::run(io); // nothing waits any more
    BOOST_TEST(log.ids() == (std::vector<int>{0, 2, 1, 3}));
    const std::vector<error_code> codes{test::aborted, test::aborted, {}, {}};
    for (std::size_t i = 0; i < codes.size(); ++i)
        BOOST_TEST(log.entries[i].second == codes[i]);
    mtx.unlock();
    test::check_unlocked(mtx);
}

BOOST_FIXTURE_TEST_CASE(cancel_and_destruction_abort_every_pending_lock, locked)
{
    mtx.async_lock(log.handler(0));
    mtx.async_lock(log.handler(1));
    BOOST_TEST(mtx.cancel() == 2u);
    BOOST_TEST(mtx.cancel() == 0u);
    BOOST_TEST(log.entries.empty()); // never invoked inside cancel()
    mtx.unlock();
    test::check_unlocked(mtx); // the cancelled locks took nothing with them
    {
        asio_sync::mutex doomed(io);
        BOOST_TEST_REQUIRE(doomed.try_lock());
        doomed.async_lock(log.handler(2));
    }
    test::run(io);
    BOOST_TEST(log.ids() == (std::vector<int>{0, 1, 2}));
    for (const auto& entry : log.entries)
        BOOST_TEST(entry.second == test::aborted);
}

BOOST_AUTO_TEST_SUITE_END()
