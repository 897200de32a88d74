// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#include <asio_sync.hpp>
#include <boost/asio.hpp>
#include <cstdlib>
#include <iostream>
namespace asio = boost::asio;
using asio::ip::tcp;

constexpr std::size_t max_sessions = 2; // more clients wait their turn, in the order they came

asio::awaitable<void> echo(tcp::socket socket) // until the client hangs up: then the read throws
{
    for (char data[1024];;)
    {
        std::size_t n = co_await socket.async_read_some(asio::buffer(data), asio::use_awaitable);
        co_await asio::async_write(socket, asio::buffer(data, n), asio::use_awaitable);
    }
}

asio::awaitable<void> serve(tcp::acceptor& acceptor, asio_sync::semaphore& limit, int connections)
{
    for (int i = 0; i != connections; ++i)
    {
        co_await limit.async_acquire(asio::use_awaitable); // no thread blocks while it waits
        asio::co_spawn(acceptor.get_executor(), echo(co_await acceptor.async_accept(asio::use_awaitable)),
                       [&limit](std::exception_ptr) { limit.release(); });
    }
    co_await limit.async_acquire(max_sessions, asio::use_awaitable); // every session has ended
}

int main(int argc, char* argv[]) // echo_server [PORT [N]]: serves N connections (default 10), then exits
{
    asio::io_context ctx;
    auto port = static_cast<asio::ip::port_type>(argc > 1 ? std::atoi(argv[1]) : 5555); // 0: any free port
    tcp::acceptor acceptor(ctx, {tcp::v4(), port});
    std::cout << "listening on port " << acceptor.local_endpoint().port() << std::endl;
    asio_sync::semaphore limit(ctx, max_sessions);
    asio::signal_set signals(ctx, SIGINT);
    signals.async_wait([&](auto, int) { ctx.stop(); }); // Ctrl-C
    int status = 0;
    asio::co_spawn(ctx, serve(acceptor, limit, argc > 2 ? std::atoi(argv[2]) : 10),
                   [&](std::exception_ptr e) {
                       status = e ? 1 : 0;
                       ctx.stop();
                   });
    ctx.run();
    return status;
}
