// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_TEST_SUPPORT_IO_STEPS_HPP
#define ASIO_SYNC_TEST_SUPPORT_IO_STEPS_HPP

// Running an io_context on the test's own thread, one step at a time.

#include <boost/asio/io_context.hpp>
#include <boost/test/unit_test.hpp>

#include <chrono>

namespace asio_sync::test {

// Runs the handlers that are ready now, without waiting for anything.
inline void poll(boost::asio::io_context& io)
{
    io.restart();
    io.poll();
}

// Runs `io` until it has no work left; fails the test if that takes longer than a minute, which
// only turns a hang into a failure (no outcome depends on it). A timed wait whose timer was not
// cancelled after it completed would keep the context busy.
inline void run(boost::asio::io_context& io)
{
    io.restart();
    io.run_for(std::chrono::seconds(60));
    BOOST_REQUIRE_MESSAGE(io.stopped(), "the io_context still had work when the time limit expired");
}

} // namespace asio_sync::test

#endif // ASIO_SYNC_TEST_SUPPORT_IO_STEPS_HPP
