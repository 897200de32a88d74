// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_BENCH_SUPPORT_REDIS_BENCH_HPP
#define ASIO_SYNC_BENCH_SUPPORT_REDIS_BENCH_HPP

// What the benchmarks against a real Redis share (redis.cpp, shares.cpp): the server of the run,
// the options of a connection to it, and the check that turns an error into an exception.

#include <asio_sync/redis/connection_options.hpp>

#include <boost/system/error_code.hpp>
#include <boost/system/system_error.hpp>
#include <boost/throw_exception.hpp>

#include <cstdint>

#include "test/support/redis_server.hpp"

namespace asio_sync::bench {

// One server for the whole run, started by the first benchmark on the main thread (the fixture
// ties the server's life to the thread that started it) and stopped at exit.
inline test::redis_server& server()
{
    static test::redis_server instance;
    return instance;
}

inline redis::connection_options options_for(std::uint16_t port)
{
    redis::connection_options options;
    options.port = port;
    return options;
}

inline void check(boost::system::error_code ec, const char* what)
{
    if (ec)
        boost::throw_exception(boost::system::system_error(ec, what));
}

} // namespace asio_sync::bench

#endif // ASIO_SYNC_BENCH_SUPPORT_REDIS_BENCH_HPP
