// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#define BOOST_TEST_MODULE shared_mutex
#include <support/deadline_checks.hpp>
#include <support/lock_checks.hpp> // the mutexes, Asio, Boost.Test, the standard headers, helpers

#include <boost/asio/thread_pool.hpp>

#include <stdexcept>
#include <string_view>

namespace test = asio_sync::test;
namespace asio = boost::asio;

namespace {

// Steps through a queue of readers and writers: after `release` (the lock that was held is given
// back), exactly the handlers in `granted` have completed, and successfully.
struct grant_step
{
    void (*release)(asio_sync::shared_mutex&);
    std::vector<int> granted;
};

void unlock(asio_sync::shared_mutex& m)
{
    m.unlock();
}

void unlock_shared(asio_sync::shared_mutex& m)
{
    m.unlock_shared();
}

void downgrade(asio_sync::shared_mutex& m)
{
    m.downgrade();
}

// A shared mutex, and a log of the handlers of the locks queued on it.
template <std::size_t MaxReaders = asio_sync::shared_mutex::default_max_readers>
struct queue
{
    asio::io_context io;
    asio_sync::shared_mutex m{io, MaxReaders};
    test::completion_log log;

    // Starts a lock for each letter, 'r' a reader and 'w' a writer; their ids count from 1.
    void enqueue(std::string_view kinds)
    {
        for (char kind : kinds)
        {
            if (kind == 'w')
                m.async_lock(log.handler(next_id_++));
            else
                m.async_lock_shared(log.handler(next_id_++));
        }
    }

    void check_steps(const std::vector<grant_step>& steps)
    {
        std::vector<int> expected = log.ids();
        for (std::size_t i = 0; i < steps.size(); ++i)
        {
            BOOST_TEST_CONTEXT("step " << i)
            {
                steps[i].release(m);
                test::poll(io);
                expected.insert(expected.end(), steps[i].granted.begin(), steps[i].granted.end());
                BOOST_TEST(log.ids() == expected);
            }
        }
        for (const auto& entry : log.entries)
            BOOST_TEST(!entry.second);
    }

private:
    int next_id_ = 1;
};

#if defined(BOOST_ASIO_HAS_CO_AWAIT) // coroutines need C++20: the _cxx17 build leaves these out
// Who asked for the lock, in order, and when they got it. On one thread, grants complete in the
// order they are made, so the tick at which each coroutine resumes orders the grants.
class journal
{
public:
    // Takes the lock, keeps it while the other coroutines run once, and gives it back.
    asio::awaitable<void> hold(asio_sync::shared_mutex& m, bool writer)
    {
        const std::size_t i = entries_.size();
        entries_.push_back({writer, -1, active_[!writer]});
        ++active_[writer];
        if (writer)
            co_await m.async_lock(asio::use_awaitable);
        else
            co_await m.async_lock_shared(asio::use_awaitable);
        entries_[i].granted = clock_++;
        co_await asio::post(asio::use_awaitable);
        --active_[writer];
        if (writer)
            m.unlock();
        else
            m.unlock_shared();
    }

    // Fair: in every pair with a writer in it, whoever asked first got the lock first. And the
    // stream was real: every request of kind `contended` found the other kind holding or waiting.
    void check(bool contended) const
    {
        int unfair = 0;
        int uncontended = 0;
        for (std::size_t i = 0; i < entries_.size(); ++i)
        {
            const entry& first = entries_[i];
            BOOST_TEST_REQUIRE(first.granted >= 0);
            uncontended += first.writer == contended && first.others_active == 0 ? 1 : 0;
            for (std::size_t j = i + 1; j < entries_.size(); ++j)
                unfair += (first.writer || entries_[j].writer) && first.granted > entries_[j].granted ? 1 : 0;
        }
        BOOST_TEST(unfair == 0);
        BOOST_TEST(uncontended == 0);
        BOOST_TEST(entries_.size() > 20u);
    }

private:
    struct entry
    {
        bool writer;
        int granted;       // tick of the grant
        int others_active; // holders and waiters of the other kind when this one asked
    };

    std::vector<entry> entries_; // in the order asked
    int clock_ = 0;
    int active_[2] = {0, 0}; // readers, writers holding or waiting
};

// Gives the other coroutines on the thread a few turns.
asio::awaitable<void> let_others_run()
{
    for (int i = 0; i < 10; ++i)
        co_await asio::post(asio::use_awaitable);
}

// `streaming` coroutines of one kind take the lock over and over, each re-asking as soon as it
// unlocks, until `arriving` coroutines of the other kind, asking among them, have taken it five
// times each. Starved arrivals would keep the stream going until the time limit.
void check_fair_among_a_stream(bool stream_of_writers, int streaming, int arriving)
{
    journal log;
    asio::io_context io;
    asio_sync::shared_mutex m(io);
    int arrivals_left = arriving;
    for (int i = 0; i < streaming; ++i)
    {
        asio::co_spawn(
            io,
            [&]() -> asio::awaitable<void> {
                while (arrivals_left > 0)
                    co_await log.hold(m, stream_of_writers);
            },
            test::rethrow);
    }
    for (int i = 0; i < arriving; ++i)
    {
        asio::co_spawn(
            io,
            [&]() -> asio::awaitable<void> {
                for (int round = 0; round < 5; ++round)
                {
                    co_await let_others_run();
                    co_await log.hold(m, !stream_of_writers);
                }
                --arrivals_left;
            },
            test::rethrow);
    }
    test::run(io);
    BOOST_TEST(arrivals_left == 0);
    log.check(!stream_of_writers);
    test::check_unlocked(m);
}

// Shared state of the thread pool test: plain ints written only under the exclusive lock, and
// atomics recording what the coroutines saw (the main thread asserts, the workers only count).
struct pool_state
{
    static constexpr std::size_t max_readers = 3;
    int a = 0;
    int b = 0; // a writer keeps a == b, but increments them one at a time
    std::atomic<int> readers_in{0};
    std::atomic<int> writers_in{0};
    std::atomic<int> torn{0};
    std::atomic<int> overlaps{0};
    std::atomic<int> too_many_readers{0};
};

asio::awaitable<void> read_loop(asio_sync::shared_mutex& m, pool_state& s, int rounds)
{
    for (int i = 0; i < rounds; ++i)
    {
        co_await m.async_lock_shared(asio::use_awaitable);
        const int readers = s.readers_in.fetch_add(1) + 1;
        s.too_many_readers.fetch_add(readers > int(pool_state::max_readers) ? 1 : 0);
        s.overlaps.fetch_add(s.writers_in.load() != 0 ? 1 : 0);
        s.torn.fetch_add(s.a != s.b ? 1 : 0);
        co_await asio::post(asio::use_awaitable);
        s.readers_in.fetch_sub(1);
        m.unlock_shared();
    }
}

asio::awaitable<void> write_loop(asio_sync::shared_mutex& m, pool_state& s, int rounds)
{
    for (int i = 0; i < rounds; ++i)
    {
        co_await m.async_lock(asio::use_awaitable);
        s.overlaps.fetch_add(s.writers_in.fetch_add(1) != 0 || s.readers_in.load() != 0 ? 1 : 0);
        ++s.a;
        co_await asio::post(asio::use_awaitable); // others run while the invariant is broken
        ++s.b;
        s.writers_in.fetch_sub(1);
        m.unlock();
    }
}
#endif

// The timed locks, for the table of test/support/deadline_checks.hpp: exclusive and shared, plain
// and scoped. A blocked exclusive lock waits for a reader; a blocked shared one for a writer.
enum class timed_mode
{
    exclusive,
    scoped_exclusive,
    shared,
    scoped_shared,
};

template <timed_mode Mode>
struct timed_lock
{
    static constexpr bool exclusive = Mode == timed_mode::exclusive || Mode == timed_mode::scoped_exclusive;
    static constexpr bool scoped = Mode == timed_mode::scoped_exclusive || Mode == timed_mode::scoped_shared;
    static constexpr const char* name =
        Mode == timed_mode::exclusive          ? "shared_mutex.async_lock_for/until"
        : Mode == timed_mode::scoped_exclusive ? "shared_mutex.async_scoped_lock_for/until"
        : Mode == timed_mode::shared           ? "shared_mutex.async_lock_shared_for/until"
                                               : "shared_mutex.async_scoped_lock_shared_for/until";

    using object = asio_sync::shared_mutex;

    static void block(object& m)
    {
        if constexpr (exclusive)
            BOOST_TEST_REQUIRE(m.try_lock_shared());
        else
            BOOST_TEST_REQUIRE(m.try_lock());
    }

    static void grant(object& m)
    {
        if constexpr (exclusive)
            m.unlock_shared();
        else
            m.unlock();
    }

    static void release(object& m)
    {
        if constexpr (exclusive)
            m.unlock();
        else
            m.unlock_shared();
    }

    static bool idle(object& m) { return test::unlocked_now(m); }

    template <class Duration, class Token>
    static auto wait_for(object& m, Duration d, Token&& token)
    {
        constexpr bool adapt = scoped && std::is_invocable_v<Token, boost::system::error_code>;
        if constexpr (exclusive && adapt)
            return m.async_scoped_lock_for(d, test::take_guard(std::forward<Token>(token)));
        else if constexpr (exclusive)
            return m.async_lock_for(d, std::forward<Token>(token));
        else if constexpr (adapt)
            return m.async_scoped_lock_shared_for(d, test::take_guard(std::forward<Token>(token)));
        else
            return m.async_lock_shared_for(d, std::forward<Token>(token));
    }

    template <class TimePoint, class Token>
    static auto wait_until(object& m, TimePoint t, Token&& token)
    {
        constexpr bool adapt = scoped && std::is_invocable_v<Token, boost::system::error_code>;
        if constexpr (exclusive && adapt)
            return m.async_scoped_lock_until(t, test::take_guard(std::forward<Token>(token)));
        else if constexpr (exclusive)
            return m.async_lock_until(t, std::forward<Token>(token));
        else if constexpr (adapt)
            return m.async_scoped_lock_shared_until(t, test::take_guard(std::forward<Token>(token)));
        else
            return m.async_lock_shared_until(t, std::forward<Token>(token));
    }
};

} // namespace

BOOST_AUTO_TEST_SUITE(shared_mutex)

BOOST_DATA_TEST_CASE(
    every_timed_lock,
    boost::unit_test::data::make(test::deadline_checks<timed_lock<timed_mode::exclusive>>::all()) +
        boost::unit_test::data::make(test::deadline_checks<timed_lock<timed_mode::scoped_exclusive>>::all()) +
        boost::unit_test::data::make(test::deadline_checks<timed_lock<timed_mode::shared>>::all()) +
        boost::unit_test::data::make(test::deadline_checks<timed_lock<timed_mode::scoped_shared>>::all()),
    check)
{
    check.run();
}

// A writer that times out after readers left before it passes what it collected on: the readers
// queued behind it, which it was blocking, proceed at once.
BOOST_AUTO_TEST_CASE(a_timed_out_writer_lets_the_readers_behind_it_through)
{
    asio::io_context io;
    asio_sync::shared_mutex m(io, 3);
    BOOST_TEST_REQUIRE(m.try_lock_shared());
    BOOST_TEST_REQUIRE(m.try_lock_shared());
    auto [writer, writer_handler] = test::make_record();
    auto [reader, reader_handler] = test::make_record();
    m.async_lock_for(std::chrono::milliseconds(1), writer_handler);
    m.async_lock_shared(reader_handler); // behind the writer, although a share is free
    m.unlock_shared();                   // collected by the writer
    test::poll(io);
    BOOST_TEST(!reader->done());
    io.restart();
    while (!writer->done())
        io.run_one_for(test::limit);
    test::poll(io);
    BOOST_TEST(*writer->ec == asio_sync::error::timed_out);
    BOOST_TEST_REQUIRE(reader->calls == 1);
    BOOST_TEST(!*reader->ec);
    m.unlock_shared();
    m.unlock_shared();
    test::check_unlocked(m);
}

// One test case per entry of the shared table, so that each token and scenario fails on its own.
BOOST_DATA_TEST_CASE(every_token_and_scoped_lock,
                     boost::unit_test::data::make(test::lock_checks<test::writer_lock>::all()) +
                         boost::unit_test::data::make(test::lock_checks<test::reader_lock>::all()),
                     check)
{
    check.run();
}

BOOST_AUTO_TEST_CASE(construction_checks_max_readers)
{
    static_assert(!std::is_copy_constructible_v<asio_sync::shared_mutex>);
    static_assert(!std::is_move_constructible_v<asio_sync::shared_mutex>);
    static_assert(asio_sync::shared_mutex::default_max_readers == asio_sync::semaphore::max_permits);

    asio::io_context io;
    BOOST_CHECK_THROW(asio_sync::shared_mutex(io, 0), std::invalid_argument);
    BOOST_CHECK_THROW(asio_sync::shared_mutex(io.get_executor(), asio_sync::semaphore::max_permits + 1),
                      std::invalid_argument);

    asio_sync::shared_mutex unlimited(io);
    BOOST_TEST(unlimited.max_readers() == asio_sync::shared_mutex::default_max_readers);
    asio_sync::shared_mutex largest(io, asio_sync::semaphore::max_permits);
    BOOST_TEST(largest.try_lock()); // a writer takes every one of the max_permits shares
    BOOST_TEST(!largest.try_lock_shared());
    largest.unlock();
    BOOST_TEST(largest.try_lock_shared());
    BOOST_TEST(!largest.try_lock());
    largest.unlock_shared();
    test::check_unlocked(largest);
}

BOOST_FIXTURE_TEST_CASE(max_readers_hold_at_once_and_the_next_reader_waits, queue<3>)
{
    BOOST_TEST(m.max_readers() == 3u);
    enqueue("rrrr");
    test::poll(io);
    BOOST_TEST(log.ids() == (std::vector<int>{1, 2, 3}));
    BOOST_TEST(!m.try_lock_shared());
    check_steps({{&unlock_shared, {4}}, {&unlock_shared, {}}, {&unlock_shared, {}}});
    BOOST_TEST(m.try_lock_shared());
    BOOST_TEST(!m.try_lock()); // the fourth reader and this one still hold it
    m.unlock_shared();
    m.unlock_shared();
    test::check_unlocked(m);
}

BOOST_FIXTURE_TEST_CASE(readers_and_writers_are_served_in_arrival_order, queue<>)
{
    BOOST_TEST_REQUIRE(m.try_lock());
    enqueue("rrwrrw");
    BOOST_TEST(!m.try_lock_shared());
    check_steps({{&unlock, {1, 2}},
                 {&unlock_shared, {}},
                 {&unlock_shared, {3}},
                 {&unlock, {4, 5}},
                 {&unlock_shared, {}},
                 {&unlock_shared, {6}},
                 {&unlock, {}}});
    test::check_unlocked(m);
}

BOOST_FIXTURE_TEST_CASE(a_queued_writer_blocks_later_readers_until_it_is_cancelled, queue<>)
{
    BOOST_TEST_REQUIRE(m.try_lock_shared());
    BOOST_TEST_REQUIRE(m.try_lock_shared());
    asio::cancellation_signal signal;
    auto [writer, writer_handler] = test::make_record();
    auto [reader, reader_handler] = test::make_record();
    m.async_lock(asio::bind_cancellation_slot(signal.slot(), writer_handler));
    BOOST_TEST(!m.try_lock_shared());
    m.async_lock_shared(reader_handler);
    m.unlock_shared(); // the writer collects this share and waits for the other
    test::poll(io);
    BOOST_TEST(!writer->done());
    BOOST_TEST(!reader->done());
    BOOST_TEST(!m.try_lock_shared());

    signal.emit(asio::cancellation_type::terminal);
    test::poll(io);
    BOOST_TEST(writer->calls == 1);
    BOOST_TEST(*writer->ec == test::aborted);
    BOOST_TEST(reader->calls == 1);
    BOOST_TEST(!*reader->ec);
    BOOST_TEST(m.try_lock_shared()); // nobody queued: readers are admitted again
    m.unlock_shared();
    m.unlock_shared();
    m.unlock_shared();
    test::check_unlocked(m); // the share the writer had collected came back too
}

BOOST_FIXTURE_TEST_CASE(downgrade_lets_queued_readers_in_and_keeps_a_queued_writer_waiting, queue<>)
{
    BOOST_TEST_REQUIRE(m.try_lock());
    enqueue("rrwr");
    check_steps({{&downgrade, {1, 2}}});
    BOOST_TEST(!m.try_lock()); // atomically: no writer got in between
    BOOST_TEST(!m.try_lock_shared());
    // The writer waits for the downgraded holder, not only for the readers it let in.
    check_steps({{&unlock_shared, {}},
                 {&unlock_shared, {}},
                 {&unlock_shared, {3}},
                 {&unlock, {4}},
                 {&unlock_shared, {}}});
    test::check_unlocked(m);
}

#if defined(BOOST_ASIO_HAS_CO_AWAIT)
// Four readers overlap, so that the lock is never free of readers while they run; a writer arriving
// among them must still get it, and readers arriving after it must wait for it.
BOOST_AUTO_TEST_CASE(writers_are_not_starved_by_a_stream_of_readers)
{
    check_fair_among_a_stream(false, 4, 1);
}

// Three writers take the lock in turns without a gap; readers arriving among them are not
// overtaken by the writers that arrive after them.
BOOST_AUTO_TEST_CASE(readers_queued_before_a_writer_are_not_overtaken_by_a_stream_of_writers)
{
    check_fair_among_a_stream(true, 3, 3);
}

BOOST_AUTO_TEST_CASE(readers_and_writers_on_a_thread_pool_never_see_a_torn_invariant)
{
    constexpr int readers = 8;
    constexpr int writers = 4;
    constexpr int rounds = 200;
    pool_state state;
    test::finish_line finished(readers + writers);
    asio::thread_pool pool(4);
    asio_sync::shared_mutex m(pool, pool_state::max_readers);
    for (int i = 0; i < readers + writers; ++i)
    {
        asio::co_spawn(pool, i < readers ? read_loop(m, state, rounds) : write_loop(m, state, rounds),
                       finished.handler());
    }
    const bool all_finished = finished.wait();
    pool.stop(); // no-op when everything finished; ends a hang otherwise
    pool.join();
    BOOST_TEST_REQUIRE(all_finished);
    BOOST_TEST(finished.failed() == 0);
    BOOST_TEST(state.torn.load() == 0);
    BOOST_TEST(state.overlaps.load() == 0);
    BOOST_TEST(state.too_many_readers.load() == 0);
    BOOST_TEST(state.a == writers * rounds);
    BOOST_TEST(state.b == writers * rounds);
    test::check_unlocked(m);
}
#endif

BOOST_AUTO_TEST_SUITE_END()
