// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_TEST_SUPPORT_WATCHDOG_HPP
#define ASIO_SYNC_TEST_SUPPORT_WATCHDOG_HPP

// What the watchdog of every Boost.Test program (watchdog.cpp, linked in by the CMake helpers)
// reports if the program still runs at its deadline: the test case running and the last wait
// begun. BOOST_TEST_CHECKPOINT is kept inside Boost.Test, out of the watchdog's reach: the
// blocking waits of test/support name themselves with `waiting_for` instead. No Boost.Test here:
// programs without it (the benchmarks) use these helpers too.

#include <mutex>
#include <string>
#include <utility>

namespace asio_sync::test {

// The watchdog's report, shared by every thread of the program.
struct watchdog_report
{
    std::mutex mutex;
    std::string test_case = "(none started)";
    std::string waiting_for = "(nothing named)";

    static watchdog_report& instance()
    {
        static watchdog_report report;
        return report;
    }

    void set(std::string watchdog_report::*field, std::string text)
    {
        const std::lock_guard<std::mutex> lock(mutex);
        this->*field = std::move(text);
    }

    std::string get(std::string watchdog_report::*field)
    {
        const std::lock_guard<std::mutex> lock(mutex);
        return this->*field;
    }
};

// Names a blocking wait, with where it was begun, in the watchdog's report while it lasts; the
// wait named before comes back when it ends (of waits on several threads, the last one begun).
class waiting_for
{
public:
    explicit waiting_for(const std::string& what, const char* file = __builtin_FILE(),
                         int line = __builtin_LINE())
        : text_(what + " (" + file + ":" + std::to_string(line) + ")")
    {
        watchdog_report& r = watchdog_report::instance();
        const std::lock_guard<std::mutex> lock(r.mutex);
        before_ = std::exchange(r.waiting_for, text_);
    }

    waiting_for(const waiting_for&) = delete;
    waiting_for& operator=(const waiting_for&) = delete;

    ~waiting_for()
    {
        watchdog_report& r = watchdog_report::instance();
        const std::lock_guard<std::mutex> lock(r.mutex);
        if (r.waiting_for == text_)
            r.waiting_for = std::move(before_);
    }

private:
    std::string text_;
    std::string before_;
};

} // namespace asio_sync::test

#endif // ASIO_SYNC_TEST_SUPPORT_WATCHDOG_HPP
