// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_TEST_SUPPORT_REDIS_CLIENT_HPP
#define ASIO_SYNC_TEST_SUPPORT_REDIS_CLIENT_HPP

// Client-side helpers of the Redis tests: connection options for a test server, bounded waits on
// the futures the tests complete, and a bounded poll of a condition.

#include "support/watchdog.hpp"

#include <asio_sync/redis/connection_options.hpp>

#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cstdint>
#include <future>
#include <thread>

namespace asio_sync::test {

// Bounds every wait, so that a bug fails the test instead of hanging it; no outcome depends on it.
inline constexpr std::chrono::seconds redis_wait_limit{30};

// Options for a test server: short reconnect delays, so that recoveries are quick.
inline redis::connection_options options_for(std::uint16_t port)
{
    using namespace std::chrono_literals;
    redis::connection_options options;
    options.port = port;
    options.reconnect_delay_min = 1ms;
    options.reconnect_delay_max = 50ms;
    return options;
}

// Named for the watchdog with where it was called from.
template <class T>
T wait(std::future<T>& f, const char* file = __builtin_FILE(), int line = __builtin_LINE())
{
    const waiting_for waiting("a completion (a future)", file, line);
    BOOST_REQUIRE_MESSAGE(f.wait_for(redis_wait_limit) == std::future_status::ready,
                          "no completion within the limit");
    return f.get();
}

template <class T>
bool is_ready(std::future<T>& f)
{
    return f.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
}

// Emits a cancellation on the thread that runs `io`, where the operation's handler runs, as Asio
// requires of a cancellation signal; returns once it has been emitted.
inline void emit(boost::asio::io_context& io, boost::asio::cancellation_signal& signal,
                 boost::asio::cancellation_type type)
{
    std::promise<void> emitted;
    boost::asio::post(io, [&] {
        signal.emit(type);
        emitted.set_value();
    });
    auto f = emitted.get_future();
    wait(f);
}

// Polls until `f` holds, every 5 ms; fails the test after the limit.
template <class Predicate>
void eventually(Predicate f, const char* file = __builtin_FILE(), int line = __builtin_LINE())
{
    const waiting_for waiting("a condition to hold", file, line);
    const auto deadline = std::chrono::steady_clock::now() + redis_wait_limit;
    while (!f())
    {
        BOOST_REQUIRE_MESSAGE(std::chrono::steady_clock::now() < deadline,
                              "condition not met within the limit");
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
}

} // namespace asio_sync::test

#endif // ASIO_SYNC_TEST_SUPPORT_REDIS_CLIENT_HPP
