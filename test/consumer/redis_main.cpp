// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

// Takes a permit of a fleet-wide semaphore from the Redis server at 127.0.0.1:PORT and gives it
// back: a program built against asio_sync::redis that links hiredis and talks to a real server.
// Usage: consumer_redis PORT

#include <asio_sync/redis/semaphore.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>

namespace asio = boost::asio;
namespace redis = asio_sync::redis;

asio::awaitable<void> take_and_give_back(redis::connection& conn)
{
    redis::semaphore sem(conn, "asio_sync_consumer", 1, std::chrono::seconds(10));
    auto permit = co_await sem.async_acquire_permit(1, asio::use_awaitable);
    std::printf("consumer_redis: granted, fencing token %llu\n",
                static_cast<unsigned long long>(permit.fencing_token()));
    co_await permit.async_release(asio::use_awaitable);
}

int main(int argc, char* argv[])
{
    if (argc != 2)
    {
        std::fputs("usage: consumer_redis PORT\n", stderr);
        return 2;
    }
    asio::io_context io;
    redis::connection_options options;
    options.host = "127.0.0.1";
    options.port = static_cast<std::uint16_t>(std::atoi(argv[1]));
    redis::connection conn(io, options);
    int status = 1;
    asio::co_spawn(io, take_and_give_back(conn), [&](std::exception_ptr e) {
        status = e ? 1 : 0;
        conn.close();
    });
    io.run();
    return status;
}
