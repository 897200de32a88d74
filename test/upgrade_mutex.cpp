// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#define BOOST_TEST_MODULE upgrade_mutex
#include <asio_sync/upgrade_mutex.hpp>

#include <support/deadline_checks.hpp>
#include <support/lock_checks.hpp> // Asio, Boost.Test, the standard headers, helpers

#include <boost/asio/thread_pool.hpp>

namespace asio = boost::asio;
namespace test = asio_sync::test;
using asio_sync::upgrade_mutex;
using boost::system::error_code;

namespace {

// The three modes behind the interface of test/support/lock_checks.hpp and
// test/support/deadline_checks.hpp.
enum class mode
{
    exclusive,
    shared,
    upgrade,
};

template <mode Mode>
struct upgrade_mutex_lock
{
    using mutex_type = upgrade_mutex;
    using object = upgrade_mutex;
    using guard_type =
        std::conditional_t<Mode == mode::exclusive, std::unique_lock<upgrade_mutex>,
                           std::conditional_t<Mode == mode::shared, std::shared_lock<upgrade_mutex>,
                                              asio_sync::upgrade_lock<upgrade_mutex>>>;
    static constexpr bool exclusive = Mode == mode::exclusive;
    static constexpr const char* name = Mode == mode::exclusive ? "upgrade_mutex.async_lock"
                                        : Mode == mode::shared  ? "upgrade_mutex.async_lock_shared"
                                                                : "upgrade_mutex.async_lock_upgrade";

    template <class Token>
    static auto async_lock(upgrade_mutex& m, Token&& token)
    {
        if constexpr (Mode == mode::exclusive)
            return m.async_lock(std::forward<Token>(token));
        else if constexpr (Mode == mode::shared)
            return m.async_lock_shared(std::forward<Token>(token));
        else
            return m.async_lock_upgrade(std::forward<Token>(token));
    }

    template <class Token>
    static auto async_scoped_lock(upgrade_mutex& m, Token&& token)
    {
        if constexpr (Mode == mode::exclusive)
            return m.async_scoped_lock(std::forward<Token>(token));
        else if constexpr (Mode == mode::shared)
            return m.async_scoped_lock_shared(std::forward<Token>(token));
        else
            return m.async_scoped_lock_upgrade(std::forward<Token>(token));
    }

    static void unlock(upgrade_mutex& m)
    {
        if constexpr (Mode == mode::exclusive)
            m.unlock();
        else if constexpr (Mode == mode::shared)
            m.unlock_shared();
        else
            m.unlock_upgrade();
    }

    // For the deadline table: a writer blocks every mode.
    static void block(upgrade_mutex& m) { BOOST_TEST_REQUIRE(m.try_lock()); }
    static void grant(upgrade_mutex& m) { m.unlock(); }
    static void release(upgrade_mutex& m) { unlock(m); }
    static bool idle(upgrade_mutex& m) { return test::unlocked_now(m); }

    template <class Duration, class Token>
    static auto wait_for(upgrade_mutex& m, Duration d, Token&& token)
    {
        if constexpr (Mode == mode::exclusive)
            return m.async_lock_for(d, std::forward<Token>(token));
        else if constexpr (Mode == mode::shared)
            return m.async_lock_shared_for(d, std::forward<Token>(token));
        else if constexpr (std::is_invocable_v<Token, error_code>)
            return m.async_scoped_lock_upgrade_for(d, test::take_guard(std::forward<Token>(token)));
        else
            return m.async_lock_upgrade_for(d, std::forward<Token>(token));
    }

    template <class TimePoint, class Token>
    static auto wait_until(upgrade_mutex& m, TimePoint t, Token&& token)
    {
        if constexpr (Mode == mode::exclusive)
            return m.async_lock_until(t, std::forward<Token>(token));
        else if constexpr (Mode == mode::shared)
            return m.async_lock_shared_until(t, std::forward<Token>(token));
        else if constexpr (std::is_invocable_v<Token, error_code>)
            return m.async_scoped_lock_upgrade_until(t, test::take_guard(std::forward<Token>(token)));
        else
            return m.async_lock_upgrade_until(t, std::forward<Token>(token));
    }
};

using writer = upgrade_mutex_lock<mode::exclusive>;
using reader = upgrade_mutex_lock<mode::shared>;
using upgrader = upgrade_mutex_lock<mode::upgrade>;

// An upgrade mutex whose upgrade lock the test holds, next to one reader: an upgrade has to wait
// for that reader.
struct upgrade_held
{
    asio::io_context io;
    upgrade_mutex m{io};
    test::completion_log log;

    upgrade_held()
    {
        BOOST_TEST_REQUIRE(m.try_lock_upgrade());
        BOOST_TEST_REQUIRE(m.try_lock_shared());
    }
};

} // namespace

BOOST_AUTO_TEST_SUITE(upgrade_mutex_suite)

BOOST_DATA_TEST_CASE(every_token_and_scoped_lock,
                     boost::unit_test::data::make(test::lock_checks<writer>::all()) +
                         boost::unit_test::data::make(test::lock_checks<reader>::all()) +
                         boost::unit_test::data::make(test::lock_checks<upgrader>::all()),
                     check)
{
    check.run();
}

BOOST_DATA_TEST_CASE(every_timed_lock,
                     boost::unit_test::data::make(test::deadline_checks<writer>::all()) +
                         boost::unit_test::data::make(test::deadline_checks<reader>::all()) +
                         boost::unit_test::data::make(test::deadline_checks<upgrader>::all()),
                     check)
{
    check.run();
}

BOOST_AUTO_TEST_CASE(modes_and_try_functions)
{
    static_assert(!std::is_copy_constructible_v<upgrade_mutex>);
    static_assert(std::is_same_v<upgrade_mutex::rebind_executor<asio::io_context::executor_type>::other,
                                 asio_sync::basic_upgrade_mutex<asio::io_context::executor_type>>);
    asio::io_context io;
    upgrade_mutex m(io);
    BOOST_TEST((m.get_executor() == asio::any_io_executor(io.get_executor())));
    BOOST_TEST(!m.try_upgrade()); // nobody holds the upgrade lock
    BOOST_TEST(m.try_lock_upgrade());
    BOOST_TEST(!m.try_lock_upgrade()); // one upgrade holder at a time
    BOOST_TEST(m.try_lock_shared());   // alongside readers
    BOOST_TEST(!m.try_lock());
    BOOST_TEST(!m.try_upgrade()); // a reader is left
    m.unlock_shared();
    BOOST_TEST(m.try_upgrade());
    BOOST_TEST(!m.try_lock_shared());
    BOOST_TEST(m.try_lock_upgrade() == false);
    m.downgrade_to_upgrade();
    BOOST_TEST(m.try_lock_shared());
    m.unlock_shared();
    m.unlock_upgrade_and_lock_shared();
    BOOST_TEST(m.try_lock_upgrade()); // the former holder is a plain reader now
    m.unlock_upgrade();
    m.unlock_shared();
    BOOST_TEST(m.try_lock());
    m.downgrade();
    BOOST_TEST(m.try_lock_shared());
    m.unlock_shared();
    m.unlock_shared();
    test::check_unlocked(m);
}

// The upgrade waits for the reader only: it goes before the writer queued earlier, and the reader
// that arrives during the upgrade waits behind it. Then FIFO: the writer, then the reader.
BOOST_FIXTURE_TEST_CASE(an_upgrade_waits_for_the_readers_only_and_goes_first, upgrade_held)
{
    m.async_lock(log.handler(0));        // a writer, queued before the upgrade
    m.async_upgrade(log.handler(1));     // waits for the reader
    m.async_lock_shared(log.handler(2)); // arrives during the upgrade: waits behind it
    BOOST_TEST(m.waiting() == 3u);
    test::poll(io);
    BOOST_TEST(log.entries.empty());
    m.unlock_shared();               // the last reader leaves
    BOOST_TEST(log.entries.empty()); // posted, never inline
    test::poll(io);
    BOOST_TEST(log.ids() == (std::vector<int>{1}));
    BOOST_TEST(!m.try_lock_shared()); // the upgrader is a writer now
    m.unlock();
    test::poll(io);
    BOOST_TEST(log.ids() == (std::vector<int>{1, 0}));
    m.unlock();
    test::poll(io);
    BOOST_TEST(log.ids() == (std::vector<int>{1, 0, 2}));
    for (const auto& entry : log.entries)
        BOOST_TEST(!entry.second);
    m.unlock_shared();
    test::check_unlocked(m);
}

// While the upgrade waits for the two readers that hold the lock, a reader queued behind it is not
// let in when one of them leaves (it would keep the upgrade waiting: the starvation the rule
// prevents); it gets in once the upgraded writer has unlocked.
BOOST_FIXTURE_TEST_CASE(a_reader_behind_a_waiting_upgrade_is_not_let_in_when_another_reader_leaves,
                        upgrade_held)
{
    BOOST_TEST_REQUIRE(m.try_lock_shared()); // a second reader
    m.async_upgrade(log.handler(0));
    m.async_lock_shared(log.handler(1)); // behind the upgrade
    test::poll(io);
    BOOST_TEST(log.entries.empty());
    m.unlock_shared(); // one reader leaves, one stays
    test::poll(io);
    BOOST_TEST(log.entries.empty());
    BOOST_TEST(m.waiting() == 2u);
    m.unlock_shared(); // the last reader leaves
    test::poll(io);
    BOOST_TEST_REQUIRE(log.ids() == (std::vector<int>{0}));
    m.unlock();
    test::poll(io);
    BOOST_TEST(log.ids() == (std::vector<int>{0, 1}));
    for (const auto& entry : log.entries)
        BOOST_TEST(!entry.second);
    m.unlock_shared();
    test::check_unlocked(m);
}

// With no reader left, the upgrade is granted at once, even ahead of queued waiters.
BOOST_FIXTURE_TEST_CASE(an_upgrade_with_no_reader_left_is_granted_at_once, upgrade_held)
{
    m.unlock_shared();
    BOOST_TEST_REQUIRE(m.try_lock_shared());
    m.async_lock(log.handler(0)); // queued: a reader and the upgrade holder are in
    m.unlock_shared();
    m.async_upgrade(log.handler(1));
    test::poll(io);
    BOOST_TEST(log.ids() == (std::vector<int>{1}));
    m.unlock();
    test::poll(io);
    BOOST_TEST(log.ids() == (std::vector<int>{1, 0}));
    m.unlock();
    test::check_unlocked(m);
}

BOOST_AUTO_TEST_CASE(an_upgrade_without_the_upgrade_lock_fails_and_changes_nothing)
{
    asio::io_context io;
    upgrade_mutex m(io);
    test::completion_log log;
    m.async_upgrade(log.handler(0)); // nobody holds the upgrade lock
    BOOST_TEST_REQUIRE(m.try_lock_shared());
    m.async_upgrade(log.handler(1)); // a reader is not an upgrade holder
    test::poll(io);
    BOOST_TEST(log.ids() == (std::vector<int>{0, 1}));
    for (const auto& entry : log.entries)
        BOOST_TEST(entry.second == asio_sync::error::no_upgrade_lock);
    BOOST_TEST(m.waiting() == 0u);
    BOOST_TEST(m.try_lock_upgrade()); // nothing changed
    m.async_upgrade(log.handler(2));  // waits for the reader
    m.async_upgrade(log.handler(3));  // a second upgrade at once
    test::poll(io);
    BOOST_TEST(log.ids() == (std::vector<int>{0, 1, 3}));
    BOOST_TEST(log.entries[2].second == asio_sync::error::no_upgrade_lock);
    m.unlock_shared();
    test::poll(io);
    BOOST_TEST(log.ids() == (std::vector<int>{0, 1, 3, 2}));
    BOOST_TEST(!log.entries[3].second);
    m.unlock();
    test::check_unlocked(m);
}

// A cancelled or timed-out upgrade leaves the caller with the upgrade lock, and the readers it was
// holding up proceed at once.
BOOST_FIXTURE_TEST_CASE(a_cancelled_or_timed_out_upgrade_keeps_the_upgrade_lock, upgrade_held)
{
    asio::cancellation_signal signal;
    m.async_upgrade(asio::bind_cancellation_slot(signal.slot(), log.handler(0)));
    m.async_lock_shared(log.handler(1)); // behind the upgrade
    test::poll(io);
    BOOST_TEST(log.entries.empty());
    signal.emit(asio::cancellation_type::partial);
    test::poll(io);
    BOOST_TEST(log.ids() == (std::vector<int>{0, 1}));
    BOOST_TEST(log.entries[0].second == asio::error::operation_aborted);
    BOOST_TEST(!log.entries[1].second);
    BOOST_TEST(!m.try_lock_upgrade()); // still held
    m.unlock_shared();

    m.async_upgrade_for(std::chrono::milliseconds(1), log.handler(2));
    m.async_lock_shared(log.handler(3));
    io.restart();
    while (log.entries.size() < 4 && io.run_one_for(test::limit) != 0)
    {
    }
    BOOST_TEST_REQUIRE(log.ids() == (std::vector<int>{0, 1, 2, 3}));
    BOOST_TEST(log.entries[2].second == asio_sync::error::timed_out);
    BOOST_TEST(!log.entries[3].second);
    m.unlock_shared();
    m.unlock_shared();
    // Still the upgrade holder, with no reader left: the upgrade is granted at once now.
    m.async_upgrade_until(std::chrono::steady_clock::now(), log.handler(4));
    test::run(io);
    BOOST_TEST(log.ids().back() == 4);
    BOOST_TEST(!log.entries.back().second);
    m.unlock();
    test::check_unlocked(m);
}

// cancel() aborts a pending upgrade too; destroying the mutex aborts it as well.
BOOST_FIXTURE_TEST_CASE(cancel_and_destruction_abort_a_pending_upgrade, upgrade_held)
{
    m.async_upgrade(log.handler(0));
    m.async_lock(log.handler(1));
    BOOST_TEST(m.cancel() == 2u);
    test::poll(io);
    BOOST_TEST(log.ids() == (std::vector<int>{0, 1}));
    m.unlock_shared();
    m.unlock_upgrade();
    test::check_unlocked(m);
    {
        upgrade_mutex doomed(io);
        BOOST_TEST_REQUIRE(doomed.try_lock_upgrade());
        BOOST_TEST_REQUIRE(doomed.try_lock_shared());
        doomed.async_upgrade(log.handler(2));
    }
    test::run(io);
    BOOST_TEST(log.ids() == (std::vector<int>{0, 1, 2}));
    for (const auto& entry : log.entries)
        BOOST_TEST(entry.second == asio::error::operation_aborted);
}

// One upgrade holder at a time: the second upgrade lock waits for the first to leave the mode, by
// unlocking it, or by becoming a plain reader or a writer and back.
BOOST_AUTO_TEST_CASE(one_upgrade_holder_at_a_time_and_the_downgrades)
{
    asio::io_context io;
    upgrade_mutex m(io);
    test::completion_log log;
    BOOST_TEST_REQUIRE(m.try_lock_upgrade());
    m.async_lock_upgrade(log.handler(0));
    m.async_lock_shared(log.handler(1)); // FIFO: behind the waiting upgrade lock
    test::poll(io);
    BOOST_TEST(log.entries.empty());
    m.unlock_upgrade_and_lock_shared(); // the first holder is a plain reader now
    test::poll(io);
    BOOST_TEST(log.ids() == (std::vector<int>{0, 1}));
    m.unlock_shared(); // the first holder
    m.unlock_shared(); // reader 1
    BOOST_TEST(m.try_upgrade());
    m.async_lock_shared(log.handler(2));
    m.async_lock_upgrade(log.handler(3));
    test::poll(io);
    BOOST_TEST(log.ids() == (std::vector<int>{0, 1}));
    m.downgrade_to_upgrade(); // readers through; the upgrade lock operation still waits
    test::poll(io);
    BOOST_TEST(log.ids() == (std::vector<int>{0, 1, 2}));
    m.unlock_upgrade();
    test::poll(io);
    BOOST_TEST(log.ids() == (std::vector<int>{0, 1, 2, 3}));
    m.unlock_upgrade();
    m.unlock_shared();
    test::check_unlocked(m);
}

// Readers, writers and upgraders on a thread pool: every writer and every upgraded holder is alone
// (checked by counters), every upgrader's read-then-write increment lands (no update is lost
// between the read under the upgrade lock and the write after the upgrade), and the mutex ends
// free.
BOOST_AUTO_TEST_CASE(readers_writers_and_upgraders_on_a_thread_pool)
{
    constexpr int tasks_per_kind = 6;
    constexpr int rounds = 200;
    asio::thread_pool pool(2);
    upgrade_mutex m(pool);
    std::atomic<int> readers_in{0};
    std::atomic<int> writers_in{0};
    std::atomic<int> violations{0};
    long value = 0;
    std::atomic<int> left{3 * tasks_per_kind};
    std::promise<void> all_done;

    const auto done = [&] {
        if (left.fetch_sub(1) == 1)
            all_done.set_value();
    };
    const auto write_alone = [&](long next) {
        if (writers_in.fetch_add(1) != 0 || readers_in.load() != 0)
            violations.fetch_add(1);
        value = next;
        writers_in.fetch_sub(1);
    };
    // Each task's loop; the tasks refer to their own step by address, the vector owns them.
    struct step
    {
        std::function<void(int)> run;
    };
    std::vector<std::unique_ptr<step>> steps;
    for (int t = 0; t < tasks_per_kind; ++t)
    {
        auto r = std::make_unique<step>();
        r->run = [&, r = r.get()](int round) {
            if (round == rounds)
                return done();
            m.async_lock_shared([&, r, round](error_code ec) {
                if (ec)
                    violations.fetch_add(1);
                readers_in.fetch_add(1);
                if (writers_in.load() != 0)
                    violations.fetch_add(1);
                readers_in.fetch_sub(1);
                m.unlock_shared();
                r->run(round + 1);
            });
        };
        auto w = std::make_unique<step>();
        w->run = [&, w = w.get()](int round) {
            if (round == rounds)
                return done();
            m.async_lock([&, w, round](error_code ec) {
                if (ec)
                    violations.fetch_add(1);
                write_alone(value + 1);
                m.unlock();
                w->run(round + 1);
            });
        };
        auto u = std::make_unique<step>();
        u->run = [&, u = u.get()](int round) {
            if (round == rounds)
                return done();
            m.async_lock_upgrade([&, u, round](error_code ec) {
                if (ec)
                    violations.fetch_add(1);
                const long seen = value; // read under the upgrade lock
                m.async_upgrade([&, u, round, seen](error_code upgrade_ec) {
                    if (upgrade_ec)
                        violations.fetch_add(1);
                    write_alone(seen + 1);
                    if (round % 2)
                        m.unlock();
                    else
                    {
                        m.downgrade_to_upgrade();
                        m.unlock_upgrade();
                    }
                    u->run(round + 1);
                });
            });
        };
        steps.push_back(std::move(r));
        steps.push_back(std::move(w));
        steps.push_back(std::move(u));
    }
    for (auto& s : steps)
        asio::post(pool, [s = s.get()] { s->run(0); });
    BOOST_TEST_REQUIRE((all_done.get_future().wait_for(test::limit) == std::future_status::ready));
    pool.join();
    BOOST_TEST(violations.load() == 0);
    BOOST_TEST(value == 2L * tasks_per_kind * rounds);
    test::check_unlocked(m);
}

BOOST_AUTO_TEST_SUITE_END()
