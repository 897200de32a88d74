// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

// Start-up ordering with a manual_reset_event: request handlers must not run before the
// configuration is loaded, however early they start.
//
// A "loader" coroutine takes a while to load the configuration, then sets the event. Handlers
// started before that wait on the event; handlers started after it pass at once, because the event
// stays set. No handler blocks a thread while it waits, and none reads the configuration before it
// is there: the set() happens-before every wait it lets through.
//
// The program checks that every handler saw the loaded configuration, and exits non-zero if not.
//
//   startup_order [HANDLERS]    (default: 8)

#include <asio_sync/manual_reset_event.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

struct configuration
{
    std::string greeting;
};

asio::awaitable<void> load(configuration& config, asio_sync::manual_reset_event& ready)
{
    asio::steady_timer slow_disk(co_await asio::this_coro::executor, 20ms);
    co_await slow_disk.async_wait(asio::use_awaitable);
    config.greeting = "hello";
    std::printf("configuration loaded\n");
    ready.set();
}

asio::awaitable<void> handle(int id, const configuration& config, asio_sync::manual_reset_event& ready,
                             int& served)
{
    co_await ready.async_wait(asio::use_awaitable);
    std::printf("request %d: %s\n", id, config.greeting.c_str());
    served += config.greeting == "hello";
}

} // namespace

int main(int argc, char** argv)
{
    const int handlers = argc > 1 ? std::atoi(argv[1]) : 8;
    asio::io_context ctx;
    asio_sync::manual_reset_event ready(ctx);
    configuration config;
    int served = 0;
    for (int id = 0; id < handlers / 2; ++id) // before the loader: they wait
        asio::co_spawn(ctx, handle(id, config, ready, served), asio::detached);
    asio::co_spawn(ctx, load(config, ready), asio::detached);
    asio::steady_timer later(ctx, 40ms); // after the load: they pass at once
    later.async_wait([&](boost::system::error_code) {
        for (int id = handlers / 2; id < handlers; ++id)
            asio::co_spawn(ctx, handle(id, config, ready, served), asio::detached);
    });
    ctx.run();
    std::printf("%d of %d requests served with the configuration\n", served, handlers);
    return served == handlers ? EXIT_SUCCESS : EXIT_FAILURE;
}
