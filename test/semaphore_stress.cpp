// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#define BOOST_TEST_MODULE semaphore_stress
#include <boost/test/unit_test.hpp>

#include <asio_sync/semaphore.hpp>

#include "support/racing_calls.hpp"
#include "support/sanitizers.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

// Durations and loop counts can be raised for a long soak:
//   ASIO_SYNC_STRESS_SECONDS=600 ASIO_SYNC_RACE_ITERATIONS=10000000 ASIO_SYNC_RACE_SECONDS=0
//   ./test_semaphore_stress

namespace asio = boost::asio;
using boost::system::error_code;
using namespace std::chrono_literals;
using asio_sync::test::under_tsan;

namespace {

long env_or(const char* name, long fallback)
{
    const char* value = std::getenv(name);
    return value ? std::stol(value) : fallback;
}

// How many rounds a spin race plays: ASIO_SYNC_RACE_ITERATIONS (a default per race), within
// ASIO_SYNC_RACE_SECONDS (8 by default, 0 for no limit), which keeps each race of the default run
// short on a slow or loaded machine. A bug it exists for shows within a few thousand rounds
// (docs/testing.md); the full tier plays every round.
class race_budget
{
public:
    explicit race_budget(long default_iterations)
        : iterations_(env_or("ASIO_SYNC_RACE_ITERATIONS", default_iterations)),
          limit_(std::chrono::seconds(env_or("ASIO_SYNC_RACE_SECONDS", 8)))
    {
    }

    // Whether a race begun at `start` that played `played` rounds plays another.
    bool another_round(long played, std::chrono::steady_clock::time_point start) const
    {
        if (played >= iterations_)
            return false;
        // The clock is read every 256 rounds: a round lasts about a microsecond.
        return limit_.count() == 0 || played % 256 != 0 || std::chrono::steady_clock::now() - start < limit_;
    }

private:
    long iterations_;
    std::chrono::seconds limit_;
};

// Counts permits held by the code under test and remembers the most ever held at once.
struct holders
{
    std::atomic<long> now{0};
    std::atomic<long> peak{0};

    void enter(long n)
    {
        const long held = now.fetch_add(n) + n;
        long seen = peak.load();
        while (held > seen && !peak.compare_exchange_weak(seen, held))
        {
        }
    }

    void leave(long n) { now.fetch_sub(n); }
};

// Fails the test instead of hanging: waits until `finished` is set or the deadline passes.
bool wait_until(const std::atomic<bool>& finished, std::chrono::seconds deadline)
{
    const auto end = std::chrono::steady_clock::now() + deadline;
    while (!finished.load())
    {
        if (std::chrono::steady_clock::now() > end)
            return false;
        std::this_thread::sleep_for(1ms);
    }
    return true;
}

asio::awaitable<void> hold_and_release(asio_sync::semaphore& sem, holders& held, std::size_t permits,
                                       int rounds, std::atomic<long>& grants, unsigned seed)
{
    std::minstd_rand rng(seed);
    for (int i = 0; i < rounds; ++i)
    {
        const std::size_t n = 1 + rng() % permits;
        co_await sem.async_acquire(n, asio::use_awaitable);
        held.enter(long(n));
        grants.fetch_add(1);
        if (rng() % 2)
            co_await asio::post(asio::use_awaitable); // hold across a suspension
        held.leave(long(n));
        sem.release(n);
    }
}

} // namespace

BOOST_AUTO_TEST_SUITE(semaphore_stress)

// Thousands of coroutines over a few permits on a multi-threaded io_context: never more permits
// held than exist, every acquire completes, and every permit is back at the end.
BOOST_AUTO_TEST_CASE(coroutines_never_exceed_the_permits)
{
    for (unsigned threads : {2u, 4u, 8u})
    {
        for (std::size_t permits : {std::size_t(1), std::size_t(3)})
        {
            constexpr int coroutines = 2000;
            constexpr int rounds = 10;
            asio::io_context ctx{int(threads)};
            asio_sync::semaphore sem(ctx, permits);
            holders held;
            std::atomic<long> grants{0};
            for (int c = 0; c < coroutines; ++c)
                asio::co_spawn(ctx, hold_and_release(sem, held, permits, rounds, grants, unsigned(c)),
                               asio::detached);

            std::atomic<bool> finished{false};
            std::atomic<unsigned> running{threads};
            std::vector<std::thread> pool;
            for (unsigned t = 0; t < threads; ++t)
                pool.emplace_back([&] {
                    ctx.run();
                    if (--running == 0)
                        finished = true;
                });
            const bool in_time = wait_until(finished, 120s);
            ctx.stop();
            for (auto& thread : pool)
                thread.join();

            BOOST_TEST_CONTEXT("threads " << threads << ", permits " << permits)
            {
                BOOST_REQUIRE_MESSAGE(in_time, "watchdog: the stress run hung");
                BOOST_TEST(grants.load() == long(coroutines) * rounds);
                BOOST_TEST(held.peak.load() <= long(permits));
                BOOST_TEST(held.peak.load() >= 1);
                BOOST_TEST(held.now.load() == 0);
                BOOST_TEST(sem.available() == permits);
                BOOST_TEST(sem.waiting() == 0u);
            }
        }
    }
}

namespace {

struct mix_stats
{
    holders held;
    std::atomic<long> started{0};
    std::atomic<long> completed{0};
    std::atomic<long> granted{0};
    std::atomic<long> aborted{0};
    std::atomic<long> closed{0};
    std::atomic<long> try_granted{0};
    std::atomic<long> unexpected{0};
};

// One worker: a coroutine on its own strand doing a random mix of operations until the
// semaphore is closed. Per-operation cancellation is emitted from the worker's strand by a timer.
asio::awaitable<void> mix_worker(asio_sync::semaphore& sem, std::size_t permits, mix_stats& stats,
                                 unsigned seed)
{
    std::minstd_rand rng(seed);
    auto ex = co_await asio::this_coro::executor;
    asio::steady_timer timer(ex);
    for (;;)
    {
        const std::size_t n = 1 + rng() % permits;
        const auto choice = rng() % 10;
        if (choice < 2)
        {
            if (sem.try_acquire(n))
            {
                stats.held.enter(long(n));
                stats.try_granted.fetch_add(1);
                stats.held.leave(long(n));
                sem.release(n);
            }
            else if (sem.is_closed())
                co_return;
            co_await asio::post(ex, asio::use_awaitable);
            continue;
        }
        if (choice == 2 && rng() % 50 == 0)
            sem.cancel(); // aborts everybody else's waits too

        auto signal = std::make_shared<asio::cancellation_signal>();
        const bool cancel_this = choice < 6;
        if (cancel_this)
        {
            timer.expires_after(std::chrono::microseconds(rng() % 200));
            timer.async_wait([signal](error_code ec) {
                if (!ec)
                    signal->emit(asio::cancellation_type::terminal);
            });
        }
        stats.started.fetch_add(1);
        auto [ec] = co_await sem.async_acquire(
            n, asio::bind_cancellation_slot(signal->slot(), asio::as_tuple(asio::use_awaitable)));
        stats.completed.fetch_add(1);
        if (cancel_this)
            timer.cancel();
        if (!ec)
        {
            stats.held.enter(long(n));
            stats.granted.fetch_add(1);
            if (rng() % 2)
                co_await asio::post(ex, asio::use_awaitable);
            stats.held.leave(long(n));
            sem.release(n);
        }
        else if (ec == asio::error::operation_aborted)
            stats.aborted.fetch_add(1);
        else if (ec == asio_sync::error::closed)
        {
            stats.closed.fetch_add(1);
            co_return;
        }
        else
            stats.unexpected.fetch_add(1);
    }
}

} // namespace

// Random mixes of acquire(n), try_acquire, release, per-operation cancellation, cancel() and
// finally close(), on a thread_pool. Every started acquire completes exactly once, the permits
// held never exceed the count, and all of them are back at the end.
BOOST_AUTO_TEST_CASE(random_mix_on_a_thread_pool)
{
    const auto duration = std::chrono::milliseconds(long(1000 * env_or("ASIO_SYNC_STRESS_SECONDS", 1)));
    for (std::size_t permits : {std::size_t(1), std::size_t(4)})
    {
        constexpr int workers = 16;
        asio::thread_pool pool(4);
        asio_sync::semaphore sem(pool.get_executor(), permits);
        mix_stats stats;
        std::atomic<int> finished_workers{0};
        for (int w = 0; w < workers; ++w)
            asio::co_spawn(asio::make_strand(pool), mix_worker(sem, permits, stats, unsigned(w) * 7919u),
                           [&](std::exception_ptr e) {
                               if (e)
                                   stats.unexpected.fetch_add(1);
                               finished_workers.fetch_add(1);
                           });
        std::this_thread::sleep_for(duration);
        sem.close();

        std::atomic<bool> all_done{false};
        std::thread watcher([&] {
            while (finished_workers.load() < workers)
                std::this_thread::sleep_for(1ms);
            all_done = true;
        });
        const bool in_time = wait_until(all_done, 60s);
        if (!in_time)
            pool.stop();
        pool.join();
        all_done = true;
        finished_workers = workers;
        watcher.join();

        BOOST_TEST_CONTEXT("permits " << permits)
        {
            BOOST_REQUIRE_MESSAGE(in_time, "watchdog: a worker never finished after close()");
            BOOST_TEST(stats.unexpected.load() == 0);
            BOOST_TEST(stats.started.load() == stats.completed.load());
            BOOST_TEST(stats.started.load() ==
                       stats.granted.load() + stats.aborted.load() + stats.closed.load());
            BOOST_TEST(stats.granted.load() > 0);
            BOOST_TEST(stats.held.peak.load() <= long(permits));
            BOOST_TEST(stats.held.now.load() == 0);
            BOOST_TEST(sem.available() == permits);
            BOOST_TEST(sem.waiting() == 0u);
            BOOST_TEST_MESSAGE("permits " << permits << ": " << stats.granted << " granted, " << stats.aborted
                                          << " aborted, " << stats.closed << " closed, " << stats.try_granted
                                          << " try_acquire");
        }
    }
}

// The lost wake-up the seeds describe: an acquire deciding to wait while a release lands. After
// both calls return, the permit must belong to the acquirer (granted) and never sit in the counter
// beside a queued waiter.
BOOST_AUTO_TEST_CASE(release_racing_an_acquirers_enqueue_never_loses_the_wake_up)
{
    // ThreadSanitizer slows each round about twentyfold; it still sees every racing access.
    const race_budget budget(under_tsan ? 100000 : 300000);
    for (std::size_t batch : {std::size_t(1), std::size_t(2)})
    {
        asio::io_context ctx(1);
        asio_sync::semaphore sem(ctx, 0);
        std::atomic<long> go{0}; // the round the releaser may play; -1 once there is none
        std::atomic<long> released{0};
        std::thread releaser([&] {
            for (long i = 1;; ++i)
            {
                long round;
                while ((round = go.load(std::memory_order_acquire)) >= 0 && round < i)
                {
                }
                if (round < 0)
                    return;
                for (std::size_t k = 0; k < batch; ++k)
                    sem.release(1);
                released.store(i, std::memory_order_release);
            }
        });
        const auto start = std::chrono::steady_clock::now();
        long rounds = 0;
        long granted = 0;
        long lost = 0;
        while (budget.another_round(rounds, start))
        {
            const long i = ++rounds;
            go.store(i, std::memory_order_release);
            sem.async_acquire(batch, [&granted](error_code ec) { granted += !ec; });
            while (released.load(std::memory_order_acquire) < i)
            {
            }
            if (sem.waiting() != 0 || sem.available() != 0)
            {
                ++lost;
                break;
            }
            ctx.restart();
            ctx.poll();
        }
        go.store(-1, std::memory_order_release);
        releaser.join();
        BOOST_TEST_MESSAGE("batch " << batch << ": " << rounds << " rounds");
        BOOST_TEST_CONTEXT("batch " << batch)
        {
            BOOST_TEST(lost == 0);
            BOOST_TEST(granted == rounds);
        }
    }
}

namespace {

using permit = asio_sync::semaphore::permit;

// What the racing workers below saw. Only atomics: Boost.Test is checked on the main thread.
struct race_stats
{
    holders held;
    std::atomic<long> started{0};
    std::atomic<long> completed{0};
    std::atomic<long> duplicates{0}; // an acquire completed more than once
    std::atomic<long> granted{0};
    std::atomic<long> timed_out{0};
    std::atomic<long> aborted{0};
    std::atomic<long> try_granted{0};
    std::atomic<long> unexpected{0};     // an error code the configuration cannot produce
    std::atomic<long> wrong_count{0};    // a permit holding other than n on success, 0 on error
    std::atomic<long> release_failed{0}; // a paired plain release that was refused
    std::atomic<int> finished_workers{0};
};

// Which operations a worker mixes.
struct race_config
{
    std::size_t max_n = 1;
    int rounds = 100;
    bool plain = true;               // async_acquire / try_acquire, then release
    bool permits = true;             // async_acquire_permit / try_acquire_permit, then the permit returns
    bool forget_then_release = true; // a permit forgotten, then as many plainly released
    bool try_ops = true;
    bool timed = false;  // async acquires have a time limit (often short, sometimes a day)
    bool cancel = false; // some async acquires are cancelled per operation, from the worker's strand
};

// One worker: an object on a strand of the pool running `rounds` operations one after the other,
// each chosen at random among those the configuration allows. Every acquire completes on the
// strand; every permit acquired is held for a moment (sometimes across a suspension), then given
// back the way it came.
class race_worker : public std::enable_shared_from_this<race_worker>
{
public:
    race_worker(asio::thread_pool& pool, asio_sync::semaphore& sem, race_stats& stats,
                const race_config& config, unsigned seed)
        : strand_(asio::make_strand(pool)), timer_(strand_), sem_(sem), stats_(stats), config_(config),
          rng_(seed), left_(config.rounds)
    {
    }

    void start()
    {
        asio::post(strand_, [self = shared_from_this()] { self->next(); });
    }

private:
    enum class kind
    {
        plain,
        with_permit,
        try_plain,
        try_permit,
        forget_then_release,
    };

    kind choose()
    {
        for (;;)
        {
            switch (rng_() % 5)
            {
            case 0:
                if (config_.plain)
                    return kind::plain;
                break;
            case 1:
                if (config_.permits)
                    return kind::with_permit;
                break;
            case 2:
                if (config_.try_ops && config_.plain)
                    return kind::try_plain;
                break;
            case 3:
                if (config_.try_ops && config_.permits)
                    return kind::try_permit;
                break;
            default:
                if (config_.forget_then_release)
                    return kind::forget_then_release;
                break;
            }
        }
    }

    void next()
    {
        if (left_-- == 0)
        {
            stats_.finished_workers.fetch_add(1);
            return;
        }
        const std::size_t n = 1 + rng_() % config_.max_n;
        switch (choose())
        {
        case kind::try_plain:
            if (sem_.try_acquire(n))
            {
                stats_.try_granted.fetch_add(1);
                return hold(n, std::nullopt, false);
            }
            break;
        case kind::try_permit:
            if (std::optional<permit> p = sem_.try_acquire_permit(n))
            {
                stats_.try_granted.fetch_add(1);
                if (p->count() != n)
                    stats_.wrong_count.fetch_add(1);
                return hold(n, std::move(p), false);
            }
            break;
        case kind::plain:
            return acquire(n, false, false);
        case kind::with_permit:
            return acquire(n, true, false);
        case kind::forget_then_release:
            return acquire(n, true, true);
        }
        asio::post(strand_, [self = shared_from_this()] { self->next(); });
    }

    void acquire(std::size_t n, bool as_permit, bool forget)
    {
        const bool cancellable = config_.cancel && rng_() % 3 == 0;
        const std::chrono::steady_clock::duration timeout =
            rng_() % 4 == 0 ? std::chrono::steady_clock::duration(std::chrono::hours(24))
                            : std::chrono::steady_clock::duration(std::chrono::microseconds(rng_() % 100));
        auto signal = std::make_shared<asio::cancellation_signal>();
        if (cancellable)
        {
            // Re-arming cancels the previous round's wait, if it is still pending.
            timer_.expires_after(std::chrono::microseconds(rng_() % 100));
            timer_.async_wait(asio::bind_executor(strand_, [signal](error_code ec) {
                if (!ec)
                    signal->emit(asio::cancellation_type::terminal);
            }));
        }
        auto calls = std::make_shared<std::atomic<int>>(0);
        stats_.started.fetch_add(1);
        auto self = shared_from_this();
        const auto launch = [&](auto handler) {
            auto bound = asio::bind_executor(strand_, std::move(handler));
            if (cancellable)
                initiate(n, timeout, asio::bind_cancellation_slot(signal->slot(), std::move(bound)));
            else
                initiate(n, timeout, std::move(bound));
        };
        if (as_permit)
            launch([self, n, calls, signal, cancellable, forget](error_code ec, permit p) {
                self->completed(ec, n, *calls, cancellable, std::optional<permit>(std::move(p)), forget);
            });
        else
            launch([self, n, calls, signal, cancellable](error_code ec) {
                self->completed(ec, n, *calls, cancellable, std::nullopt, false);
            });
    }

    template <class Handler>
    void initiate(std::size_t n, std::chrono::steady_clock::duration timeout, Handler&& handler)
    {
        if constexpr (std::is_invocable_v<Handler, error_code, permit>)
        {
            if (config_.timed)
                sem_.async_acquire_permit_for(n, timeout, std::forward<Handler>(handler));
            else
                sem_.async_acquire_permit(n, std::forward<Handler>(handler));
        }
        else
        {
            if (config_.timed)
                sem_.async_acquire_for(n, timeout, std::forward<Handler>(handler));
            else
                sem_.async_acquire(n, std::forward<Handler>(handler));
        }
    }

    void completed(error_code ec, std::size_t n, std::atomic<int>& calls, bool cancellable,
                   std::optional<permit> p, bool forget)
    {
        if (calls.fetch_add(1) != 0)
            stats_.duplicates.fetch_add(1);
        stats_.completed.fetch_add(1);
        if (!ec)
        {
            if (p && p->count() != n)
                stats_.wrong_count.fetch_add(1);
            stats_.granted.fetch_add(1);
            return hold(n, std::move(p), forget);
        }
        if (p && p->count() != 0)
            stats_.wrong_count.fetch_add(1);
        if (ec == asio_sync::error::timed_out && config_.timed)
            stats_.timed_out.fetch_add(1);
        else if (ec == asio::error::operation_aborted && cancellable)
            stats_.aborted.fetch_add(1);
        else
            stats_.unexpected.fetch_add(1);
        next();
    }

    void hold(std::size_t n, std::optional<permit> p, bool forget)
    {
        stats_.held.enter(long(n));
        if (rng_() % 2)
        {
            asio::post(strand_, [self = shared_from_this(), n, p = std::move(p), forget]() mutable {
                self->give_back(n, std::move(p), forget);
            });
            return;
        }
        give_back(n, std::move(p), forget);
    }

    // Leaves first, then gives back: the count of holders never runs ahead of the semaphore.
    void give_back(std::size_t n, std::optional<permit> p, bool forget)
    {
        stats_.held.leave(long(n));
        if (!p)
            release_plain(n);
        else if (forget)
        {
            p->forget();
            release_plain(n);
        }
        else
        {
            switch (rng_() % 3)
            {
            case 0:
                p->release();
                break;
            case 1:
            {
                permit part = p->split(n / 2);
                part.release();
                p.reset();
                break;
            }
            default:
            {
                permit sink = p->split(0);
                sink = std::move(*p);
                break;
            }
            }
        }
        next();
    }

    void release_plain(std::size_t n)
    {
        if (rng_() % 2)
        {
            if (!sem_.try_release(n))
                stats_.release_failed.fetch_add(1);
            return;
        }
        try
        {
            sem_.release(n);
        }
        catch (const std::overflow_error&)
        {
            stats_.release_failed.fetch_add(1);
        }
    }

    asio::strand<asio::thread_pool::executor_type> strand_;
    asio::steady_timer timer_;
    asio_sync::semaphore& sem_;
    race_stats& stats_;
    race_config config_;
    std::minstd_rand rng_;
    int left_;
};

// Starts `workers` workers on `pool`, calls `meanwhile()` on this thread until they have all
// finished (or the watchdog gives up), then joins the pool. Returns false on the watchdog.
template <class Meanwhile>
bool run_workers(asio::thread_pool& pool, asio_sync::semaphore& sem, race_stats& stats,
                 const race_config& config, int workers, Meanwhile meanwhile)
{
    for (int w = 0; w < workers; ++w)
        std::make_shared<race_worker>(pool, sem, stats, config, 1000u + unsigned(w) * 7919u)->start();
    const auto give_up = std::chrono::steady_clock::now() + 120s;
    bool in_time = true;
    while (stats.finished_workers.load() < workers)
    {
        if (std::chrono::steady_clock::now() > give_up)
        {
            in_time = false;
            pool.stop();
            break;
        }
        meanwhile();
    }
    pool.join();
    return in_time;
}

// The checks every race ends with: each acquire completed exactly once with an outcome its
// configuration allows, permits held never exceeded `most`, and nobody holds anything any more.
void check_race(const race_stats& stats, const race_config& config, long most)
{
    BOOST_TEST(stats.duplicates.load() == 0);
    BOOST_TEST(stats.started.load() == stats.completed.load());
    BOOST_TEST(stats.completed.load() == stats.granted.load() + stats.timed_out.load() +
                                             stats.aborted.load() + stats.unexpected.load());
    BOOST_TEST(stats.unexpected.load() == 0);
    BOOST_TEST(stats.wrong_count.load() == 0);
    BOOST_TEST(stats.release_failed.load() == 0);
    BOOST_TEST(stats.granted.load() > 0);
    if (!config.timed)
        BOOST_TEST(stats.timed_out.load() == 0);
    if (!config.cancel)
        BOOST_TEST(stats.aborted.load() == 0);
    BOOST_TEST(stats.held.peak.load() <= most);
    BOOST_TEST(stats.held.now.load() == 0);
    BOOST_TEST_MESSAGE(stats.granted << " granted, " << stats.try_granted << " try, " << stats.timed_out
                                     << " timed out, " << stats.aborted << " aborted, peak "
                                     << stats.held.peak);
}

int race_rounds(int fallback)
{
    return int(env_or("ASIO_SYNC_RACE_ROUNDS", under_tsan ? fallback / 2 : fallback));
}

} // namespace

// Timed acquires (plain and permit) racing the releases of the holders ahead of them, some also
// cancelled per operation: every acquire completes exactly once, with success (and gives its
// permits back) or timed_out (or operation_aborted when cancelled), holding nothing then; the
// holders never exceed the permits, and at the end every permit is back.
BOOST_AUTO_TEST_CASE(timeouts_racing_releases)
{
    struct setup
    {
        std::size_t permits;
        bool bounded;
        bool cancel;
    };
    for (const setup& s :
         {setup{1, false, false}, setup{3, true, false}, setup{3, false, true}, setup{2, true, true}})
    {
        BOOST_TEST_CONTEXT("permits " << s.permits << (s.bounded ? ", bounded" : ", unbounded")
                                      << (s.cancel ? ", with per-operation cancellation" : ""))
        {
            race_config config;
            config.max_n = s.permits;
            config.rounds = race_rounds(1000);
            config.timed = true;
            config.cancel = s.cancel;
            asio::thread_pool pool(3);
            asio_sync::semaphore sem = s.bounded
                                           ? asio_sync::semaphore(pool.get_executor(), s.permits, s.permits)
                                           : asio_sync::semaphore(pool.get_executor(), s.permits);
            race_stats stats;
            const bool in_time =
                run_workers(pool, sem, stats, config, 8, [] { std::this_thread::sleep_for(1ms); });
            BOOST_REQUIRE_MESSAGE(in_time, "watchdog: the race hung");
            check_race(stats, config, long(s.permits));
            BOOST_TEST(sem.available() == s.permits);
            BOOST_TEST(sem.waiting() == 0u);
            if (s.bounded)
                BOOST_TEST(!sem.try_release(1));
        }
    }
}

// One timed acquire against one release, on three threads: the context's thread runs the timer
// (and, some rounds, a per-operation cancellation), another releases, this one checks. Exactly
// one outcome: granted, and the permit is the acquirer's (the counter is empty), or timed out /
// aborted, and the permit is in the counter.
BOOST_AUTO_TEST_CASE(a_timed_acquire_against_a_release_has_exactly_one_outcome)
{
    const race_budget budget(under_tsan ? 3000 : 20000);
    asio::io_context io(1);
    asio_sync::semaphore sem(io, 0);
    auto guard = asio::make_work_guard(io);
    std::thread runner([&io] { io.run_for(120s); });
    std::atomic<long> go{0}; // the round the releaser may play; -1 once there is none
    std::atomic<long> released{0};
    std::thread releaser([&] {
        for (long i = 1;; ++i)
        {
            long round;
            while ((round = go.load(std::memory_order_acquire)) >= 0 && round < i)
                std::this_thread::yield(); // three busy threads on two cores would starve the context
            if (round < 0)
                return;
            for (long spin = i % 64; spin > 0; --spin)
                std::atomic_signal_fence(std::memory_order_seq_cst);
            sem.release(1);
            released.store(i, std::memory_order_release);
        }
    });

    std::atomic<long> calls{0};
    std::atomic<int> result{-1}; // 0 granted, 1 timed out, 2 aborted, 3 anything else
    std::optional<permit> received;
    long granted = 0;
    long expired = 0;
    long aborted = 0;
    long mismatches = 0;
    long wrong_codes = 0;
    bool in_time = true;
    const auto classify = [&](error_code ec) {
        result.store(!ec                                    ? 0
                     : ec == asio_sync::error::timed_out    ? 1
                     : ec == asio::error::operation_aborted ? 2
                                                            : 3,
                     std::memory_order_release);
        calls.fetch_add(1);
    };
    const auto start = std::chrono::steady_clock::now();
    long rounds = 0;
    while (in_time && budget.another_round(rounds, start))
    {
        const long i = ++rounds;
        result.store(-1);
        const bool as_permit = i % 2 == 0;
        const bool cancel = i % 3 == 0;
        const auto timeout = std::chrono::microseconds(i % 20);
        auto signal = std::make_shared<asio::cancellation_signal>();
        if (as_permit)
            sem.async_acquire_permit_for(
                1, timeout, asio::bind_cancellation_slot(signal->slot(), [&](error_code ec, permit p) {
                    received.emplace(std::move(p));
                    classify(ec);
                }));
        else
            sem.async_acquire_for(1, timeout, asio::bind_cancellation_slot(signal->slot(), classify));
        std::atomic<bool> emitted{!cancel};
        if (cancel)
            asio::post(io, [signal, &emitted] {
                signal->emit(asio::cancellation_type::terminal);
                emitted.store(true, std::memory_order_release);
            });
        go.store(i, std::memory_order_release);
        const auto give_up = std::chrono::steady_clock::now() + 60s;
        while (released.load(std::memory_order_acquire) < i || result.load(std::memory_order_acquire) < 0 ||
               !emitted.load(std::memory_order_acquire))
        {
            if (std::chrono::steady_clock::now() > give_up)
            {
                in_time = false;
                break;
            }
            std::this_thread::yield();
        }
        if (!in_time)
            break;
        const int r = result.load(std::memory_order_acquire);
        const std::size_t expected_available = r == 0 ? 0 : 1;
        if (sem.available() != expected_available || sem.waiting() != 0)
            ++mismatches;
        if (as_permit && (!received || received->count() != (r == 0 ? 1u : 0u)))
            ++mismatches;
        if (r == 0)
            ++granted;
        else if (r == 1)
            ++expired;
        else if (r == 2 && cancel)
            ++aborted;
        else
            ++wrong_codes;
        // Back to an empty counter for the next round.
        if (as_permit && r == 0)
            received->forget();
        received.reset();
        if (r != 0 && !sem.try_acquire(1))
            ++mismatches;
    }
    go.store(-1, std::memory_order_release);
    releaser.join();
    guard.reset();
    if (!in_time)
        io.stop();
    runner.join();
    BOOST_REQUIRE_MESSAGE(in_time, "watchdog: an acquire never completed");
    BOOST_TEST(mismatches == 0);
    BOOST_TEST(wrong_codes == 0);
    BOOST_TEST(calls.load() == rounds);
    BOOST_TEST(granted + expired + aborted == rounds);
    BOOST_TEST_MESSAGE(rounds << " rounds: " << granted << " granted, " << expired << " timed out, " << aborted << " aborted");
}

// add_permits, forget_permits and reduce_permits on this thread while workers acquire (plain,
// permit, timed, try) and give back on a pool. Only this thread changes the capacity, so it
// knows what the capacity must be; at the end every permit is back and the counter holds exactly
// that capacity (any debt was paid). No paired release is ever refused.
BOOST_AUTO_TEST_CASE(capacity_changes_racing_acquires_and_releases)
{
    for (const bool bounded : {false, true})
    {
        for (const bool timed : {false, true})
        {
            BOOST_TEST_CONTEXT((bounded ? "bounded" : "unbounded") << (timed ? ", timed acquires" : ""))
            {
                constexpr std::size_t initial = 4;
                constexpr std::size_t highest = 10;
                race_config config;
                config.max_n = 2;
                config.rounds = race_rounds(1000);
                config.timed = timed;
                asio::thread_pool pool(3);
                asio_sync::semaphore sem = bounded
                                               ? asio_sync::semaphore(pool.get_executor(), initial, initial)
                                               : asio_sync::semaphore(pool.get_executor(), initial);
                race_stats stats;
                std::minstd_rand rng(42);
                std::size_t capacity = initial;
                std::size_t peak_capacity = initial;
                long changes = 0;
                long capacity_mismatches = 0;
                long added = 0;
                long forgotten = 0;
                long reduced = 0;
                const bool in_time = run_workers(pool, sem, stats, config, 8, [&] {
                    const std::size_t k = 1 + rng() % 2;
                    switch (rng() % 3)
                    {
                    case 0:
                        if (capacity + k <= highest)
                        {
                            sem.add_permits(k);
                            capacity += k;
                            added += long(k);
                        }
                        break;
                    case 1:
                        if (capacity >= config.max_n + k)
                        {
                            const std::size_t got = sem.forget_permits(k);
                            capacity -= got;
                            forgotten += long(got);
                        }
                        break;
                    default:
                        if (capacity >= config.max_n + k)
                        {
                            sem.reduce_permits(k);
                            capacity -= k;
                            reduced += long(k);
                        }
                        break;
                    }
                    ++changes;
                    peak_capacity = std::max(peak_capacity, capacity);
                    if (sem.capacity() != (bounded ? capacity : asio_sync::semaphore::max_permits))
                        ++capacity_mismatches;
                    std::this_thread::sleep_for(std::chrono::microseconds(50));
                });
                BOOST_REQUIRE_MESSAGE(in_time, "watchdog: the race hung");
                check_race(stats, config, long(peak_capacity));
                BOOST_TEST(capacity_mismatches == 0);
                BOOST_TEST(changes > 0);
                BOOST_TEST(long(capacity) == long(initial) + added - forgotten - reduced);
                BOOST_TEST(sem.available() == capacity);
                BOOST_TEST(sem.waiting() == 0u);
                BOOST_TEST(sem.capacity() == (bounded ? capacity : asio_sync::semaphore::max_permits));
                if (bounded)
                    BOOST_TEST(!sem.try_release(1));
                BOOST_TEST_MESSAGE(changes << " capacity changes: +" << added << " -" << forgotten
                                           << " forgotten -" << reduced << " reduced");
            }
        }
    }
}

// A bounded semaphore used through plain acquires and permit objects at once, from a pool:
// never more holders than the bound. In a second run only permit objects are used, and a rogue
// thread keeps trying to release permits that were never acquired: every attempt fails, because
// the bound counts the permits the objects hold.
BOOST_AUTO_TEST_CASE(a_bounded_semaphore_never_exceeds_its_bound)
{
    for (const bool permits_only : {false, true})
    {
        BOOST_TEST_CONTEXT((permits_only ? "permit objects and a rogue releaser" : "plain and permit use"))
        {
            constexpr std::size_t bound = 3;
            race_config config;
            config.max_n = 2;
            config.rounds = race_rounds(1500);
            config.plain = !permits_only;
            config.forget_then_release = !permits_only;
            asio::thread_pool pool(3);
            asio_sync::semaphore sem(pool.get_executor(), bound, bound);
            race_stats stats;
            long rogue_attempts = 0;
            long rogue_successes = 0;
            const bool in_time = run_workers(pool, sem, stats, config, 8, [&] {
                if (!permits_only)
                    return std::this_thread::sleep_for(1ms);
                ++rogue_attempts;
                if (rogue_attempts % 2)
                    rogue_successes += sem.try_release(1) ? 1 : 0;
                else
                {
                    try
                    {
                        sem.release(1);
                        ++rogue_successes;
                    }
                    catch (const std::overflow_error&)
                    {
                    }
                }
                std::this_thread::yield();
            });
            BOOST_REQUIRE_MESSAGE(in_time, "watchdog: the race hung");
            check_race(stats, config, long(bound));
            BOOST_TEST(rogue_successes == 0);
            if (permits_only)
                BOOST_TEST(rogue_attempts > 0);
            BOOST_TEST(sem.available() == bound);
            BOOST_TEST(sem.capacity() == bound);
            BOOST_TEST(sem.waiting() == 0u);
            BOOST_TEST(!sem.try_release(1));
        }
    }
}

// A semaphore bounded at 1 as a binary signal: two try_release(1) at once, with 0, 1 or 2
// acquires queued. A release that reaches a queued acquire takes nothing into circulation, so with
// any acquire queued both releases succeed, even while the other one's hand-off is under way;
// with none, exactly one does. Counted every round.
BOOST_AUTO_TEST_CASE(two_releases_at_once_on_a_semaphore_bounded_at_one)
{
    const long rounds = under_tsan ? 1000 : 5000;
    for (int queued = 0; queued <= 2; ++queued)
    {
        asio::io_context ctx(1);
        asio_sync::semaphore sem(ctx, 0, 1);
        int granted = 0;
        std::atomic<int> released{0};
        long wrong = 0;
        asio_sync::test::race_calls(
            rounds,
            [&] {
                for (int i = 0; i < queued; ++i)
                    sem.async_acquire([&](error_code ec) { granted += !ec; });
            },
            [&] { released += sem.try_release(1); }, [&] { released += sem.try_release(1); },
            [&] {
                ctx.restart();
                ctx.poll();
                wrong += released.load() != (queued == 0 ? 1 : 2) || granted != std::min(queued, 2) ||
                         sem.available() != (queued < 2 ? 1u : 0u);
                // Back to no permit in circulation: the granted acquires keep theirs (out of
                // circulation), the counter's is taken.
                sem.cancel();
                sem.try_acquire(1);
                granted = 0;
                released = 0;
                ctx.restart();
                ctx.poll();
            });
        BOOST_TEST_CONTEXT(queued << " acquires queued")
        {
            BOOST_TEST(wrong == 0);
        }
    }
}

BOOST_AUTO_TEST_SUITE_END()
