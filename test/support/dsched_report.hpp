// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_TEST_SUPPORT_DSCHED_REPORT_HPP
#define ASIO_SYNC_TEST_SUPPORT_DSCHED_REPORT_HPP

#include "support/dsched.hpp"

#include <boost/test/unit_test.hpp>

namespace asio_sync::test::dsched {

// Checks an exhaustive exploration: no invariant failed, and every interleaving was explored.
inline void report(const char* name, const exploration& e)
{
    BOOST_TEST_MESSAGE(name << ": " << e.schedules << " schedules" << (e.complete ? ", all explored" : ""));
    BOOST_TEST(e.failure.empty(), name << ": " << e.failure);
    BOOST_TEST(e.complete);
}

} // namespace asio_sync::test::dsched

#endif // ASIO_SYNC_TEST_SUPPORT_DSCHED_REPORT_HPP
