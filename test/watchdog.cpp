// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#define BOOST_TEST_MODULE watchdog
#include <boost/test/unit_test.hpp>

#include "support/watchdog.hpp"

#include <chrono>
#include <future>
#include <iostream>
#include <string>

// The watchdog every test program carries (support/watchdog.cpp). The hang it reports is
// a_hang_is_reported, disabled: the ctest entry watchdog_reports_a_hang runs it alone, with a
// deadline of one second, and passes if the output holds the failed check, the line the test wrote and the
// report.

namespace {

namespace test = asio_sync::test;

std::string waiting_for_now()
{
    return test::watchdog_report::instance().get(&test::watchdog_report::waiting_for);
}

} // namespace

BOOST_AUTO_TEST_SUITE(watchdog)

BOOST_AUTO_TEST_CASE(a_wait_is_named_while_it_lasts_and_the_one_before_comes_back)
{
    const std::string before = waiting_for_now();
    {
        const test::waiting_for outer("the outer wait");
        BOOST_TEST(waiting_for_now().rfind("the outer wait (", 0) == 0);
        BOOST_TEST(waiting_for_now().find("watchdog.cpp:") != std::string::npos);
        {
            const test::waiting_for inner("the inner wait");
            BOOST_TEST(waiting_for_now().rfind("the inner wait (", 0) == 0);
        }
        BOOST_TEST(waiting_for_now().rfind("the outer wait (", 0) == 0);
    }
    BOOST_TEST(waiting_for_now() == before);
    const std::string running = test::watchdog_report::instance().get(&test::watchdog_report::test_case);
    BOOST_TEST(running == "watchdog/a_wait_is_named_while_it_lasts_and_the_one_before_comes_back");
}

// Hangs on purpose after a failed check; run only when named (ctest watchdog_reports_a_hang).
BOOST_AUTO_TEST_CASE(a_hang_is_reported, *boost::unit_test::disabled())
{
    BOOST_ERROR("a failed check before the hang");
    std::cout << "a line written before the hang, not flushed\n";
    std::promise<void> nobody_keeps;
    const test::waiting_for waiting("a promise nobody keeps");
    // Bounded all the same: without the watchdog the test fails after a minute.
    const bool kept =
        nobody_keeps.get_future().wait_for(std::chrono::seconds(60)) == std::future_status::ready;
    BOOST_ERROR("the watchdog did not abort the program (promise kept: " << kept << ")");
}

BOOST_AUTO_TEST_SUITE_END()
