// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#define BOOST_TEST_MODULE adaptive_mutex
#include <boost/test/unit_test.hpp>

#include <asio_sync/detail/adaptive_mutex.hpp>
#include <asio_sync/semaphore.hpp>

#include "support/sanitizers.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <optional>
#include <thread>
#include <vector>

// The semaphore's internal lock, under the conditions that break a lock which only spins and
// yields: real-time threads sharing a processor, and many more threads than processors. Every
// scenario runs in a child process whose deadline the parent keeps, so that the hang these tests
// look for fails the test instead of hanging the suite. The deadlines are hang detectors, far
// above what a scenario takes (well under a second here); no test measures time.

namespace asio = boost::asio;
using boost::system::error_code;
using namespace std::chrono_literals;
using asio_sync::test::under_tsan;

namespace {

// Runs `scenario` (returning an exit status, 0 for success) in a child process. Returns the
// child's exit status, 128 + the signal that ended it, or nothing if it did not end within
// `deadline` (it is killed then). A sanitizer's report in the child makes its status non-zero. The
// caller must have no other threads: the child is a copy of this one only.
template <class Scenario>
std::optional<int> exit_status_within(std::chrono::seconds deadline, Scenario scenario)
{
    const pid_t child = fork();
    BOOST_REQUIRE_MESSAGE(child != -1, "fork failed");
    if (child == 0)
    {
        int status = 1;
        try
        {
            status = scenario();
        }
        catch (...)
        {
            std::fputs("the scenario threw\n", stderr);
        }
        _exit(status); // skips the parent's test framework state, copied into the child
    }
    const auto end = std::chrono::steady_clock::now() + deadline;
    int status = 0;
    while (waitpid(child, &status, WNOHANG) == 0)
    {
        if (std::chrono::steady_clock::now() > end)
        {
            kill(child, SIGKILL);
            waitpid(child, &status, 0);
            return std::nullopt;
        }
        std::this_thread::sleep_for(10ms);
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Keeps the calling thread on the first `count` processors it may use (fewer if it may use fewer);
// threads it starts afterwards inherit the set. Returns false if the set could not be changed.
bool pin_to_processors(int count)
{
    cpu_set_t allowed;
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0)
        return false;
    cpu_set_t chosen;
    CPU_ZERO(&chosen);
    for (std::size_t cpu = 0; cpu < static_cast<std::size_t>(CPU_SETSIZE) && CPU_COUNT(&chosen) < count;
         ++cpu)
        if (CPU_ISSET(cpu, &allowed))
            CPU_SET(cpu, &chosen);
    return sched_setaffinity(0, sizeof chosen, &chosen) == 0;
}

// Sets the calling thread's policy; returns the error (EPERM where real-time scheduling is not
// allowed), or 0.
int set_scheduling(int policy, int priority)
{
    sched_param param{};
    param.sched_priority = priority;
    return pthread_setschedparam(pthread_self(), policy, &param);
}

// Both scenario threads are real-time; the parent, which keeps the deadline and kills the child,
// and the child's main thread, which starts them, are above both, so that neither can be starved
// by a scenario thread that spins.
constexpr int low_priority = 10;
constexpr int high_priority = 20;
constexpr int supervisor_priority = 30;

// Where this process may not run threads under SCHED_FIFO (it needs root or CAP_SYS_NICE, and a
// real-time budget in its control group), the test that needs it is skipped, saying why.
boost::test_tools::assertion_result real_time_scheduling_allowed(boost::unit_test::test_unit_id)
{
    boost::test_tools::assertion_result allowed(true);
    if (under_tsan)
    {
        allowed = false;
        allowed.message() << "ThreadSanitizer's runtime has spin locks that yield the way this test forbids";
        return allowed;
    }
    int refused = 0;
    std::thread([&refused] { refused = set_scheduling(SCHED_FIFO, low_priority); }).join();
    if (refused != 0)
    {
        allowed = false;
        allowed.message() << "SCHED_FIFO refused (" << std::strerror(refused)
                          << "): needs root or CAP_SYS_NICE";
    }
    return allowed;
}

} // namespace

BOOST_AUTO_TEST_SUITE(adaptive_mutex)

// A low-priority SCHED_FIFO thread takes the semaphore's lock in a loop (forget_permits and
// add_permits both take it); a high-priority one on the same processor wakes every 50
// microseconds and takes it too. When the high one wakes while the low one holds the lock, only
// the low one can release it, and it runs only once the high one sleeps. A lock that spins and
// calls sched_yield never lets it: sched_yield gives the processor to threads of the same
// priority only, so the high one spins for ever.
BOOST_AUTO_TEST_CASE(a_real_time_thread_does_not_livelock_behind_a_lower_priority_holder,
                     *boost::unit_test::precondition(real_time_scheduling_allowed))
{
    sched_param before{};
    int policy_before = 0;
    BOOST_REQUIRE(pthread_getschedparam(pthread_self(), &policy_before, &before) == 0);
    BOOST_REQUIRE(set_scheduling(SCHED_FIFO, supervisor_priority) == 0);

    constexpr int wake_ups = 2000;
    const std::optional<int> status = exit_status_within(30s, [] {
        if (!pin_to_processors(1))
            return 1;
        asio::io_context ctx;
        asio_sync::semaphore sem(ctx, 1, 1);
        std::atomic<bool> stop{false};
        std::atomic<int> refused{0};
        auto take_the_lock = [&sem] {
            if (sem.forget_permits(1) == 1)
                sem.add_permits(1);
        };
        std::thread low([&] {
            refused += set_scheduling(SCHED_FIFO, low_priority) != 0;
            while (!stop.load(std::memory_order_relaxed))
                take_the_lock();
            set_scheduling(SCHED_OTHER, 0);
        });
        std::thread high([&] {
            refused += set_scheduling(SCHED_FIFO, high_priority) != 0;
            timespec next{};
            clock_gettime(CLOCK_MONOTONIC, &next);
            for (int i = 0; i < wake_ups; ++i)
            {
                next.tv_nsec += 50'000;
                if (next.tv_nsec >= 1'000'000'000)
                {
                    next.tv_nsec -= 1'000'000'000;
                    ++next.tv_sec;
                }
                clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, nullptr);
                take_the_lock();
            }
            stop = true; // before leaving real time: the low thread would keep it off the processor
            set_scheduling(SCHED_OTHER, 0);
        });
        high.join();
        low.join();
        const bool conserved = sem.available() == 1 && sem.capacity() == 1;
        if (refused != 0 || !conserved)
            std::fprintf(stderr, "refused %d, available %zu, capacity %zu\n", refused.load(), sem.available(),
                         sem.capacity());
        return refused == 0 && conserved ? 0 : 1;
    });
    set_scheduling(policy_before, before.sched_priority);

    BOOST_REQUIRE_MESSAGE(status.has_value(),
                          "livelock: the high-priority thread did not get the lock within 30 s");
    BOOST_TEST(*status == 0);
}

// 32 threads on two processors, on a semaphore of 2 permits, each looping over the paths that
// take its lock: an acquire that queues while permits are short (its handler, run by whichever
// thread polls, releases and so serves the next waiter), reduce_permits (a debt while the counter
// is empty) with the add_permits that pays it, and forget_permits with the release that puts the
// permit back. Holders get preempted while others wait. Every acquire completes, and no permit is
// lost or made.
BOOST_AUTO_TEST_CASE(oversubscribed_threads_finish_and_conserve_permits)
{
    const std::optional<int> status = exit_status_within(120s, [] {
        if (!pin_to_processors(2))
            return 1;
        constexpr int threads = 32;
        const int rounds = under_tsan ? 1000 : 20000;
        asio::io_context ctx;
        asio_sync::semaphore sem(ctx, 2);
        std::atomic<long> acquires{0};
        std::atomic<long> grants{0};
        std::atomic<long> failures{0};
        auto issuing = asio::make_work_guard(ctx);
        std::atomic<int> still_issuing{threads};
        {
            std::vector<std::thread> team;
            for (int t = 0; t < threads; ++t)
                team.emplace_back([&] {
                    for (int i = 0; i < rounds; ++i)
                    {
                        switch (i % 3)
                        {
                        case 0:
                        {
                            const std::size_t n = 1 + std::size_t(i % 2);
                            ++acquires;
                            sem.async_acquire(n, [&sem, &grants, &failures, n](error_code ec) {
                                if (ec)
                                    ++failures;
                                else
                                {
                                    ++grants;
                                    sem.release(n);
                                }
                            });
                            break;
                        }
                        case 1:
                            sem.reduce_permits(1);
                            sem.add_permits(1);
                            break;
                        default:
                            sem.release(sem.forget_permits(1));
                        }
                        if (i % 16 == 0)
                            ctx.poll();
                    }
                    if (--still_issuing == 0)
                        issuing.reset();
                    ctx.run();
                });
            for (auto& thread : team)
                thread.join();
        }
        const bool complete = grants == acquires && failures == 0;
        const bool conserved = sem.available() == 2 && sem.waiting() == 0;
        if (!complete || !conserved)
            std::fprintf(stderr, "grants %ld of %ld, failures %ld, available %zu, waiting %zu\n",
                         grants.load(), acquires.load(), failures.load(), sem.available(), sem.waiting());
        return complete && conserved ? 0 : 1;
    });
    BOOST_REQUIRE_MESSAGE(status.has_value(), "the oversubscribed run did not finish within 120 s");
    BOOST_TEST(*status == 0);
}

// The lock itself: more threads than processors increment a plain counter under it, so that
// holders get preempted while others wait and waiters go to sleep; no increment is lost (and the
// ThreadSanitizer build sees no race), and nobody sleeps for ever.
BOOST_AUTO_TEST_CASE(the_lock_excludes_and_wakes_its_sleepers)
{
    const std::optional<int> status = exit_status_within(120s, [] {
        if (!pin_to_processors(2))
            return 1;
        asio_sync::detail::adaptive_mutex lock;
        long counter = 0;
        constexpr int threads = 16;
        const long per_thread = under_tsan ? 20000 : 100000;
        {
            std::vector<std::thread> team;
            for (int t = 0; t < threads; ++t)
                team.emplace_back([&] {
                    for (long i = 0; i < per_thread; ++i)
                    {
                        lock.lock();
                        ++counter;
                        if (i % 64 == 0)
                            std::this_thread::yield(); // as a preempted holder would
                        lock.unlock();
                    }
                });
            for (auto& thread : team)
                thread.join();
        }
        if (counter != threads * per_thread)
            std::fprintf(stderr, "counter %ld of %ld\n", counter, threads * per_thread);
        return counter == threads * per_thread ? 0 : 1;
    });
    BOOST_REQUIRE_MESSAGE(status.has_value(), "the lock's waiters did not finish within 120 s");
    BOOST_TEST(*status == 0);
}

BOOST_AUTO_TEST_SUITE_END()
