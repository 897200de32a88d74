// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

// The watchdog of every Boost.Test program (linked in by asio_sync_add_watchdog in
// test/CMakeLists.txt): a thread that, if the program still runs at its deadline, prints the test
// case running and the last wait begun (watchdog.hpp), flushes what the program wrote, and
// aborts. Killed by ctest at its TIMEOUT instead, a hung program would not say where it hung, and
// what it wrote to stdout without a flush would be lost.
//
// The deadline: ASIO_SYNC_TEST_WATCHDOG_SECONDS in the environment (0: no watchdog), else
// ASIO_SYNC_TEST_WATCHDOG_DEFAULT_SECONDS, which the build sets below the ctest TIMEOUT.

#include "support/watchdog.hpp"

#include <boost/test/tree/global_fixture.hpp>
#include <boost/test/tree/test_unit.hpp>

#include <pthread.h>

#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <thread>

#ifndef ASIO_SYNC_TEST_WATCHDOG_DEFAULT_SECONDS
#define ASIO_SYNC_TEST_WATCHDOG_DEFAULT_SECONDS 840
#endif

namespace {

using asio_sync::test::watchdog_report;

// A Boost.Test observer, registered when constructed (as a global configuration is), whose thread
// runs from the start of the tests to their end. The thread is stopped across each fork and started
// again in the parent, towards the same deadline: a process forked with a second thread cannot
// start threads under ThreadSanitizer (test/adaptive_mutex.cpp's children do), and no child needs
// it (each has a deadline of its parent's).
class watchdog final : public boost::unit_test::global_configuration
{
public:
    watchdog() = default;
    ~watchdog() override { finish(); }

    void test_start(boost::unit_test::counter_t, boost::unit_test::test_unit_id) override
    {
        seconds_ = deadline_seconds();
        if (seconds_ <= 0 || deadline_)
            return;
        deadline_ = std::chrono::steady_clock::now() + std::chrono::seconds(seconds_);
        static watchdog* const self = this;
        ::pthread_atfork([] { self->halt(); }, [] { self->start(); }, nullptr);
        start();
    }

    void test_finish() override { finish(); }

    void test_unit_start(const boost::unit_test::test_unit& tu) override
    {
        if (tu.p_type == boost::unit_test::TUT_CASE)
            watchdog_report::instance().set(&watchdog_report::test_case, tu.full_name());
    }

    void test_unit_finish(const boost::unit_test::test_unit& tu, unsigned long) override
    {
        if (tu.p_type == boost::unit_test::TUT_CASE)
            watchdog_report::instance().set(&watchdog_report::test_case,
                                            "(between test cases, after " + tu.full_name() + ")");
    }

private:
    static long deadline_seconds()
    {
        const char* text = std::getenv("ASIO_SYNC_TEST_WATCHDOG_SECONDS");
        return text ? std::strtol(text, nullptr, 10) : ASIO_SYNC_TEST_WATCHDOG_DEFAULT_SECONDS;
    }

    void start()
    {
        if (!deadline_ || finished_)
            return;
        stopping_ = false;
        thread_ = std::thread([this] { watch(); });
    }

    void watch()
    {
        std::unique_lock<std::mutex> lock(mutex_);
        if (stopped_.wait_until(lock, *deadline_, [this] { return stopping_; }))
            return;
        watchdog_report& r = watchdog_report::instance();
        // What the program wrote to std::cout (synchronised with stdio: it sits in stdout's
        // buffer, whole blocks of it when stdout is a pipe), then the report.
        std::fflush(stdout);
        std::fprintf(stderr,
                     "watchdog: the program still runs after %ld s; aborting it.\n"
                     "watchdog: test case: %s\n"
                     "watchdog: waiting for: %s\n",
                     seconds_, r.get(&watchdog_report::test_case).c_str(),
                     r.get(&watchdog_report::waiting_for).c_str());
        std::fflush(stderr);
        // Boost.Test's handler of SIGABRT would jump from this thread into the main one's stack.
        std::signal(SIGABRT, SIG_DFL);
        std::abort();
    }

    void halt()
    {
        {
            const std::lock_guard<std::mutex> lock(mutex_);
            stopping_ = true;
        }
        stopped_.notify_all();
        if (thread_.joinable())
            thread_.join();
    }

    void finish()
    {
        finished_ = true;
        halt();
    }

    long seconds_ = 0;
    std::optional<std::chrono::steady_clock::time_point> deadline_;
    bool finished_ = false;
    std::mutex mutex_;
    std::condition_variable stopped_;
    bool stopping_ = false;
    std::thread thread_;
};

watchdog the_watchdog;

} // namespace
