// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_TEST_SUPPORT_LOCK_CHECKS_HPP
#define ASIO_SYNC_TEST_SUPPORT_LOCK_CHECKS_HPP

// What the mutex and shared_mutex tests share: the helpers, and one table of checks (every
// completion token, the scoped locks, abandoned guards, contention) run for each way of taking a
// lock, so that mutex.async_lock, shared_mutex.async_lock and shared_mutex.async_lock_shared are
// held to the same scenarios instead of three copies of them.

#include <asio_sync/mutex.hpp>
#include <asio_sync/shared_mutex.hpp>

#include <support/counting_allocator.hpp>
#include <support/handler.hpp>
#include <support/io_threads.hpp>

#include <boost/asio/bind_allocator.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/system/error_code.hpp>
#include <boost/system/system_error.hpp>
#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

// Coroutines need C++20: the _cxx17 builds leave out the checks using them.
#if defined(BOOST_ASIO_HAS_CO_AWAIT)
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

// Boost 1.81: promise.hpp must come before use_promise.hpp.
#include <boost/asio/experimental/promise.hpp>
#include <boost/asio/experimental/use_promise.hpp>
#endif

#include <atomic>
#include <chrono>
#include <cstddef>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <shared_mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace asio_sync::test {

namespace asio = boost::asio;
using boost::system::error_code;

// How long any single wait may take before the test gives up. Generous on purpose: it only turns
// a hang into a failure; no outcome depends on it.
constexpr std::chrono::seconds limit(60);

const error_code aborted = asio::error::operation_aborted;

// Runs the handlers that are ready now, without waiting for anything.
inline void poll(asio::io_context& io)
{
    io.restart();
    io.poll();
}

// Runs `io` until it runs out of work; fails the test if that takes longer than `limit`.
inline void run(asio::io_context& io)
{
    io.restart();
    io.run_for(limit);
    BOOST_REQUIRE_MESSAGE(io.stopped(), "the io_context still had work when the time limit expired");
}

// A co_spawn completion that lets an exception escaping the coroutine (a failed BOOST_TEST_REQUIRE
// included) propagate out of run() or poll() on the main thread, where the test reports it.
inline constexpr auto rethrow = [](std::exception_ptr e) {
    if (e)
        std::rethrow_exception(e);
};

// Whether nobody holds `m` and nobody waits for it: an exclusive try_lock succeeds (and is undone).
template <class Mutex>
bool unlocked_now(Mutex& m)
{
    if (!m.try_lock())
        return false;
    m.unlock();
    return true;
}

// Nobody holds `m` and nobody waits for it: an exclusive try_lock succeeds.
template <class Mutex>
void check_unlocked(Mutex& m)
{
    BOOST_TEST_REQUIRE(m.try_lock());
    m.unlock();
}

// Handlers that log their id and error code in completion order.
struct completion_log
{
    std::vector<std::pair<int, error_code>> entries;

    auto handler(int id)
    {
        return [this, id](error_code ec) { entries.emplace_back(id, ec); };
    }

    std::vector<int> ids() const
    {
        std::vector<int> result;
        for (const auto& entry : entries)
            result.push_back(entry.first);
        return result;
    }
};

// Lets the main thread wait, for at most `limit`, until `count` coroutines have finished, and
// counts those that ended with an exception. Worker threads only touch atomics and the promise.
class finish_line
{
public:
    explicit finish_line(int count) : left_(count) {}

    auto handler()
    {
        return [this](std::exception_ptr e) {
            if (e)
                failed_.fetch_add(1);
            if (left_.fetch_sub(1) == 1)
                all_.set_value();
        };
    }

    bool wait() { return done_.wait_for(limit) == std::future_status::ready; }
    int failed() const { return failed_.load(); }

private:
    std::atomic<int> left_;
    std::atomic<int> failed_{0};
    std::promise<void> all_;
    std::future<void> done_ = all_.get_future();
};

// The three ways to take a lock behind one interface: exclusive on either mutex, or shared.
template <class Mutex, bool Exclusive = true>
struct lock_kind
{
    using mutex_type = Mutex;
    using guard_type = std::conditional_t<Exclusive, std::unique_lock<Mutex>, std::shared_lock<Mutex>>;
    static constexpr bool exclusive = Exclusive;
    static constexpr const char* name = !Exclusive ? "shared_mutex.async_lock_shared"
                                        : std::is_same_v<Mutex, asio_sync::mutex> ? "mutex.async_lock"
                                                                                  : "shared_mutex.async_lock";

    template <class Token>
    static auto async_lock(Mutex& m, Token&& token)
    {
        if constexpr (Exclusive)
            return m.async_lock(std::forward<Token>(token));
        else
            return m.async_lock_shared(std::forward<Token>(token));
    }

    template <class Token>
    static auto async_scoped_lock(Mutex& m, Token&& token)
    {
        if constexpr (Exclusive)
            return m.async_scoped_lock(std::forward<Token>(token));
        else
            return m.async_scoped_lock_shared(std::forward<Token>(token));
    }

    static void unlock(Mutex& m)
    {
        if constexpr (Exclusive)
            m.unlock();
        else
            m.unlock_shared();
    }
};

using mutex_lock = lock_kind<asio_sync::mutex>;
using writer_lock = lock_kind<asio_sync::shared_mutex>;
using reader_lock = lock_kind<asio_sync::shared_mutex, false>;

// One entry of the table: a name for the log and the check itself.
struct lock_check
{
    std::string name;
    std::function<void()> run;
};

inline std::ostream& operator<<(std::ostream& os, const lock_check& check)
{
    return os << check.name;
}

// The checks every kind of lock goes through; `all()` lists them for BOOST_DATA_TEST_CASE.
template <class Kind>
class lock_checks
{
public:
    static std::vector<lock_check> all()
    {
        std::vector<lock_check> checks{
            {"callbacks", [] { scenario(&start_callback); }},
            {"deferred", [] { scenario(&start_deferred); }},
            {"deferred starts nothing until invoked", &deferred_is_lazy},
            {"use_future, unlocked from another thread", &future_unlocked_elsewhere},
            {"bind_cancellation_slot", &cancellation_slot},
            {"bind_executor with a strand", &strand_executor},
            {"bind_allocator", &counted_allocator},
            {"scoped: callbacks", [] { scenario(&start_scoped_callback); }},
            {"scoped: a guard destroyed unused unlocks", &abandoned_guards},
        };
#if defined(BOOST_ASIO_HAS_CO_AWAIT)
        checks.insert(checks.end(),
                      {
                          {"use_awaitable", [] { scenario(&spawn_awaiting<&await_plain>); }},
                          {"as_tuple", [] { scenario(&spawn_awaiting<&await_tuple>); }},
                          {"redirect_error", [] { scenario(&spawn_awaiting<&await_redirected>); }},
                          {"use_promise", [] { scenario(&spawn_awaiting<&await_promise>); }},
                          {"|| steady_timer", [] { race_with_timer(&lock_or_timer); }},
                          {"make_parallel_group with a steady_timer",
                           [] { race_with_timer(&parallel_lock_and_timer); }},
                          {"scoped: use_awaitable", [] { scenario(&spawn_awaiting<&await_scoped>); }},
                          {"scoped: as_tuple", [] { scenario(&spawn_awaiting<&await_scoped_tuple>); }},
                      });
        if constexpr (Kind::exclusive)
            checks.push_back({"contended increments of a plain int", &contended_increments});
#endif
        for (lock_check& check : checks)
            check.name = std::string(Kind::name) + ": " + check.name;
        return checks;
    }

private:
    using mutex_type = typename Kind::mutex_type;
    using guard_type = typename Kind::guard_type;
    using result = std::pair<error_code, guard_type>;
    using report = std::function<void(result)>;
    using duration = std::chrono::steady_clock::duration;

    struct fixture
    {
        asio::io_context io;
        mutex_type mtx{io};

        // Takes the lock exclusively, so that a lock of any kind has to wait.
        void hold() { BOOST_TEST_REQUIRE(mtx.try_lock()); }

        // Kind's lock is held (no writer gets in): gives it back and checks nothing is left.
        void check_held_then_unlock()
        {
            BOOST_TEST_REQUIRE(!mtx.try_lock());
            Kind::unlock(mtx);
            check_unlocked(mtx);
        }
    };

    // A plain lock's outcome as a guard, so that plain and scoped locks share one scenario.
    static result adopt(mutex_type& m, error_code ec)
    {
        if (ec)
            return {ec, guard_type()};
        return {ec, guard_type(m, std::adopt_lock)};
    }

    // The scenario for every token: granted at once, granted when the holder unlocks, cancelled
    // while waiting. `start` takes one lock through the token under test and reports its outcome.
    static void scenario(void (*start)(fixture&, const report&))
    {
        fixture f;
        std::vector<result> got;
        const report record = [&got](result r) { got.push_back(std::move(r)); };
        // On success the guard owns the lock and gives it back when destroyed; on error it owns
        // nothing and nothing is left locked.
        const auto check_got = [&](const error_code& expected) {
            BOOST_TEST_REQUIRE(got.size() == 1u);
            BOOST_TEST(got[0].first == expected);
            BOOST_TEST(got[0].second.owns_lock() == !expected);
            if (!expected)
            {
                BOOST_TEST(got[0].second.mutex() == &f.mtx);
                BOOST_TEST(!f.mtx.try_lock());
            }
            got.clear();
            check_unlocked(f.mtx);
        };

        start(f, record);
        BOOST_TEST(got.empty()); // granted at initiation, yet completed through the context
        run(f.io);
        check_got({});

        f.hold();
        start(f, record);
        poll(f.io);
        BOOST_TEST(got.empty());
        f.mtx.unlock();
        BOOST_TEST(got.empty()); // the hand-off posts the completion, never runs it inline
        run(f.io);
        check_got({});

        f.hold();
        start(f, record);
        poll(f.io);
        BOOST_TEST(f.mtx.cancel() == 1u);
        BOOST_TEST(got.empty());
        run(f.io);
        f.mtx.unlock();
        check_got(aborted);
    }

    static void start_callback(fixture& f, const report& r)
    {
        Kind::async_lock(f.mtx, [&m = f.mtx, r](error_code ec) { r(adopt(m, ec)); });
    }

    static void start_deferred(fixture& f, const report& r)
    {
        auto op = Kind::async_lock(f.mtx, asio::deferred);
        std::move(op)([&m = f.mtx, r](error_code ec) { r(adopt(m, ec)); });
    }

    static void start_scoped_callback(fixture& f, const report& r)
    {
        Kind::async_scoped_lock(f.mtx, [r](error_code ec, guard_type guard) { r({ec, std::move(guard)}); });
    }

#if defined(BOOST_ASIO_HAS_CO_AWAIT)
    // Starts a coroutine that takes the lock through `Await` and reports how it went.
    template <asio::awaitable<result> (*Await)(mutex_type&)>
    static void spawn_awaiting(fixture& f, const report& r)
    {
        asio::co_spawn(
            f.io, [&m = f.mtx, r]() -> asio::awaitable<void> { r(co_await Await(m)); }, rethrow);
    }

    static asio::awaitable<result> await_plain(mutex_type& m)
    {
        try
        {
            co_await Kind::async_lock(m, asio::use_awaitable);
        }
        catch (const boost::system::system_error& e)
        {
            co_return result{e.code(), guard_type()};
        }
        co_return adopt(m, {});
    }

    static asio::awaitable<result> await_tuple(mutex_type& m)
    {
        auto [ec] = co_await Kind::async_lock(m, asio::as_tuple(asio::use_awaitable));
        co_return adopt(m, ec);
    }

    static asio::awaitable<result> await_redirected(mutex_type& m)
    {
        error_code ec = asio::error::fault; // overwritten by the completion
        co_await Kind::async_lock(m, asio::redirect_error(asio::use_awaitable, ec));
        co_return adopt(m, ec);
    }

    static asio::awaitable<result> await_promise(mutex_type& m)
    {
        auto promise = Kind::async_lock(m, asio::experimental::use_promise);
        auto [ec] = co_await promise(asio::as_tuple(asio::use_awaitable));
        co_return adopt(m, ec);
    }

    static asio::awaitable<result> await_scoped(mutex_type& m)
    {
        try
        {
            co_return result{error_code(), co_await Kind::async_scoped_lock(m, asio::use_awaitable)};
        }
        catch (const boost::system::system_error& e)
        {
            co_return result{e.code(), guard_type()};
        }
    }

    static asio::awaitable<result> await_scoped_tuple(mutex_type& m)
    {
        auto [ec, guard] = co_await Kind::async_scoped_lock(m, asio::as_tuple(asio::use_awaitable));
        co_return result{ec, std::move(guard)};
    }
#endif

    static void deferred_is_lazy()
    {
        fixture f;
        auto op = Kind::async_lock(f.mtx, asio::deferred);
        check_unlocked(f.mtx); // not taken before the operation is invoked
        auto [out, handler] = make_record();
        std::move(op)(handler);
        BOOST_TEST(!f.mtx.try_lock()); // taken by the invocation
        run(f.io);
        BOOST_TEST(out->calls == 1);
        BOOST_TEST(!*out->ec);
        f.check_held_then_unlock();
    }

    static void future_unlocked_elsewhere()
    {
        fixture f;
        f.hold();
        // Started before the thread: the waiting lock is the work that keeps the context running.
        std::future<void> locked = Kind::async_lock(f.mtx, asio::use_future);
        io_threads io_thread(f.io, 1);
        BOOST_TEST((locked.wait_for(std::chrono::seconds(0)) == std::future_status::timeout));
        std::thread([&f] { f.mtx.unlock(); }).join();
        BOOST_TEST_REQUIRE((locked.wait_for(limit) == std::future_status::ready));
        BOOST_CHECK_NO_THROW(locked.get());
        io_thread.join();
        f.check_held_then_unlock();
    }

    static void cancellation_slot()
    {
        for (auto type : {asio::cancellation_type::terminal, asio::cancellation_type::partial,
                          asio::cancellation_type::total})
        {
            BOOST_TEST_CONTEXT("cancellation type " << static_cast<unsigned>(type))
            {
                fixture f;
                asio::cancellation_signal signal;
                f.hold();
                auto [out, handler] = make_record();
                Kind::async_lock(f.mtx, asio::bind_cancellation_slot(signal.slot(), handler));
                signal.emit(type);
                BOOST_TEST(!out->done()); // completed through the context, not inside emit()
                run(f.io);
                BOOST_TEST(out->calls == 1);
                BOOST_TEST(*out->ec == aborted);
                f.mtx.unlock();
                check_unlocked(f.mtx); // the aborted lock left the queue: nobody took the lock
            }
        }

        // Emitted after the grant, before the handler ran: too late, the lock is the handler's.
        fixture f;
        asio::cancellation_signal signal;
        f.hold();
        auto [out, handler] = make_record();
        Kind::async_lock(f.mtx, asio::bind_cancellation_slot(signal.slot(), handler));
        f.mtx.unlock();
        signal.emit(asio::cancellation_type::terminal);
        run(f.io);
        BOOST_TEST(out->calls == 1);
        BOOST_TEST(!*out->ec);
        f.check_held_then_unlock();
    }

    static void strand_executor()
    {
        constexpr int count = 16;
        asio::io_context io(2);
        mutex_type mtx(io);
        auto strand = asio::make_strand(io);
        std::atomic<int> in_strand{0};
        std::atomic<int> failed{0};
        int completed = 0; // touched only by the handlers: a data race unless they all run in the strand

        BOOST_TEST_REQUIRE(mtx.try_lock());
        for (int i = 0; i < count; ++i)
        {
            Kind::async_lock(mtx, asio::bind_executor(strand, [&](error_code ec) {
                                 in_strand.fetch_add(strand.running_in_this_thread());
                                 failed.fetch_add(ec ? 1 : 0);
                                 ++completed;
                                 if (!ec)
                                     Kind::unlock(mtx);
                             }));
        }
        {
            io_threads threads(io, 2);
            mtx.unlock(); // from the main thread while two threads run the context
            threads.join();
        }
        BOOST_TEST(io.stopped());
        BOOST_TEST(in_strand.load() == count);
        BOOST_TEST(failed.load() == 0);
        BOOST_TEST(completed == count);
        check_unlocked(mtx);
    }

    static void counted_allocator()
    {
        allocation_counts counts;
        {
            fixture f;
            f.hold();
            auto [out, handler] = make_record();
            Kind::async_lock(f.mtx, asio::bind_allocator(counting_allocator<void>(counts), handler));
            BOOST_TEST(counts.allocations.load() > counts.deallocations.load()); // the waiting operation
            f.mtx.unlock();
            run(f.io);
            BOOST_TEST(out->calls == 1);
            BOOST_TEST(!*out->ec);
            f.check_held_then_unlock();
        }
        BOOST_TEST(counts.allocations.load() > 0u);
        BOOST_TEST(counts.allocations.load() == counts.deallocations.load());
    }

#if defined(BOOST_ASIO_HAS_CO_AWAIT)
    // Races the lock against a timer; returns the winner's index: 0 for the lock, 1 for the timer.
    static asio::awaitable<std::size_t> lock_or_timer(mutex_type& m, duration timeout)
    {
        using namespace asio::experimental::awaitable_operators;
        asio::steady_timer timer(co_await asio::this_coro::executor, timeout);
        auto winner =
            co_await (Kind::async_lock(m, asio::use_awaitable) || timer.async_wait(asio::use_awaitable));
        co_return winner.index();
    }

    static asio::awaitable<std::size_t> parallel_lock_and_timer(mutex_type& m, duration timeout)
    {
        asio::steady_timer timer(co_await asio::this_coro::executor, timeout);
        auto [order, lock_ec, timer_ec] =
            co_await asio::experimental::make_parallel_group(Kind::async_lock(m, asio::deferred),
                                                             timer.async_wait(asio::deferred))
                .async_wait(asio::experimental::wait_for_one(), asio::use_awaitable);
        BOOST_TEST(!(order[0] == 0 ? lock_ec : timer_ec));           // the winner succeeded
        BOOST_TEST((order[0] == 0 ? timer_ec : lock_ec) == aborted); // the loser was cancelled
        co_return order[0];
    }

    // Whoever wins, no lock is lost: a lock that lost left the queue, a lock that won is held.
    static void race_with_timer(asio::awaitable<std::size_t> (*race)(mutex_type&, duration))
    {
        enum class when
        {
            timer_first,
            lock_at_once,
            lock_after_waiting
        };
        for (when w : {when::timer_first, when::lock_at_once, when::lock_after_waiting})
        {
            BOOST_TEST_CONTEXT("case " << static_cast<int>(w))
            {
                fixture f;
                if (w != when::lock_at_once)
                    f.hold();
                // The long timeout never expires within the test: only the lock can win then.
                const duration timeout = w == when::timer_first ? duration(std::chrono::milliseconds(1))
                                                                : duration(std::chrono::hours(24));
                std::optional<std::size_t> winner;
                asio::co_spawn(
                    f.io, [&]() -> asio::awaitable<void> { winner = co_await race(f.mtx, timeout); },
                    rethrow);
                poll(f.io);
                if (w == when::lock_after_waiting)
                    f.mtx.unlock();
                run(f.io);
                BOOST_TEST_REQUIRE(winner.has_value());
                BOOST_TEST(*winner == (w == when::timer_first ? 1u : 0u));
                if (w == when::timer_first)
                {
                    f.mtx.unlock();
                    check_unlocked(f.mtx);
                }
                else
                    f.check_held_then_unlock();
            }
        }
    }
#endif

    // A scoped lock granted to a handler that is then destroyed without being invoked (its
    // context is destroyed, or it was bound to a context nobody runs) must not stay locked.
    static void abandoned_guards()
    {
        for (const bool waited : {false, true})
        {
            for (const bool own_executor : {false, true})
            {
                BOOST_TEST_CONTEXT((waited ? "granted after waiting" : "granted at once")
                                   << (own_executor ? ", handler bound to a context never run"
                                                    : ", context destroyed with the completion queued"))
                {
                    auto io = std::make_unique<asio::io_context>();
                    auto never_run = std::make_unique<asio::io_context>();
                    mutex_type mtx(*io); // outlives its context, as it may
                    bool invoked = false;
                    const auto handler = [&invoked](error_code, guard_type) { invoked = true; };
                    if (waited)
                        BOOST_TEST_REQUIRE(mtx.try_lock());
                    if (own_executor)
                        Kind::async_scoped_lock(mtx, asio::bind_executor(*never_run, handler));
                    else
                        Kind::async_scoped_lock(mtx, handler);
                    if (waited)
                        mtx.unlock(); // the grant: its completion, guard inside, is queued now
                    if (own_executor)
                        run(*io);                        // the mutex's own context has nothing left to do
                    BOOST_TEST_REQUIRE(!mtx.try_lock()); // the queued guard holds the lock
                    (own_executor ? never_run : io).reset();
                    BOOST_TEST(!invoked);
                    check_unlocked(mtx);
                }
            }
        }
    }

#if defined(BOOST_ASIO_HAS_CO_AWAIT)
    static asio::awaitable<void> increment(mutex_type& m, int& counter, int rounds, bool scoped)
    {
        for (int i = 0; i < rounds; ++i)
        {
            if (scoped)
            {
                auto [ec, guard] = co_await Kind::async_scoped_lock(m, asio::as_tuple(asio::use_awaitable));
                counter += ec ? 0 : 1;
            }
            else
            {
                co_await Kind::async_lock(m, asio::use_awaitable);
                ++counter;
                Kind::unlock(m);
            }
        }
    }

    // Strands on a multi-threaded io_context increment one plain int under the lock, half of them
    // through scoped locks: the total is exact, and ThreadSanitizer sees no race on the int.
    static void contended_increments()
    {
        constexpr int rounds = 500;
        for (const std::pair<int, int>& setup : {std::pair(2, 8), std::pair(4, 16)})
        {
            const int threads = setup.first;
            const int strands = setup.second;
            BOOST_TEST_CONTEXT(strands << " strands on " << threads << " threads")
            {
                asio::io_context io(threads);
                mutex_type mtx(io);
                int counter = 0;
                finish_line finished(strands);
                for (int s = 0; s < strands; ++s)
                {
                    asio::co_spawn(asio::make_strand(io), increment(mtx, counter, rounds, s % 2 == 1),
                                   finished.handler());
                }
                io_threads running(io, threads);
                BOOST_TEST_REQUIRE(finished.wait());
                running.join();
                BOOST_TEST(finished.failed() == 0);
                BOOST_TEST(counter == strands * rounds);
                check_unlocked(mtx);
            }
        }
    }
#endif
};

} // namespace asio_sync::test

#endif // ASIO_SYNC_TEST_SUPPORT_LOCK_CHECKS_HPP
