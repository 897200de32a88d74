// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

// A coroutine crawler that keeps at most K connections open at once.
//
// A crawler discovers work faster than it should do it: every page fetched yields links to more
// pages, and starting a connection for each at once would flood the server (and run out of file
// descriptors). Here every fetch first takes a permit of an asio_sync::semaphore holding K, as a
// `permit` object, and keeps it while its connection is open; the rest wait their turn in FIFO
// order, without blocking the thread.
//
// To be self-contained, the program starts a tiny HTTP-like server on 127.0.0.1 (an ephemeral
// port) in the same io_context. Page i links to pages 2i+1 and 2i+2, up to N pages; the server
// takes a few milliseconds per page and counts how many connections it has open. The crawler
// starts at page 0 and follows every link once. At the end the program checks that every page was
// fetched and that the server never saw more than K connections at once, and exits non-zero if not.
//
//   crawler [PAGES [K]]    (defaults: 63 pages, K = 4)

#include <asio_sync/semaphore.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/system/system_error.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <set>
#include <string>
#include <string_view>

namespace asio = boost::asio;
using asio::use_awaitable;
using asio::ip::tcp;

namespace {

// Shared by the server and the crawler. Everything runs on the io_context's one thread, so plain
// variables suffice.
struct crawl_state
{
    crawl_state(asio::io_context& ctx, int page_count, std::size_t limit)
        : pages(page_count), k(limit), connections(ctx, limit),
          acceptor(ctx, tcp::endpoint(asio::ip::address_v4::loopback(), 0))
    {
    }

    int pages;
    std::size_t k;
    asio_sync::semaphore connections; // K permits: one per open connection
    tcp::acceptor acceptor;           // the server's
    std::set<int> seen;               // pages found so far; each is fetched once
    int fetched = 0;                  // pages fetched with the expected content
    int crawling = 0;                 // fetches started and not yet finished
    int open = 0;                     // connections the server has open now
    int most_open = 0;                // the most it ever had at once
    bool failed = false;              // a coroutine threw
};

// The server: one coroutine per connection. Reads "GET /page/<i>", waits a little, replies with
// the page, whose body lists its links, then closes.
asio::awaitable<void> serve_page(tcp::socket socket, crawl_state& state)
{
    state.most_open = std::max(state.most_open, ++state.open);
    std::string request;
    co_await asio::async_read_until(socket, asio::dynamic_buffer(request), "\r\n\r\n", use_awaitable);
    const int page = std::atoi(request.c_str() + request.find("/page/") + 6);

    asio::steady_timer think(socket.get_executor(), std::chrono::milliseconds(5));
    co_await think.async_wait(use_awaitable);

    std::string body = "page " + std::to_string(page) + "\n";
    for (int link : {2 * page + 1, 2 * page + 2})
        if (link < state.pages)
            body += "link /page/" + std::to_string(link) + "\n";
    const std::string reply =
        "HTTP/1.0 200 OK\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    --state.open; // before the reply: the client may reconnect as soon as it has it
    co_await asio::async_write(socket, asio::buffer(reply), use_awaitable);
}

asio::awaitable<void> run_server(crawl_state& state)
{
    for (;;)
    {
        tcp::socket socket = co_await state.acceptor.async_accept(use_awaitable); // throws once closed
        asio::co_spawn(socket.get_executor(), serve_page(std::move(socket), state), asio::detached);
    }
}

asio::awaitable<void> crawl(int page, crawl_state& state);

// Starts a fetch of `page`; the last fetch to finish stops the server, which ends the program.
void spawn_crawl(int page, crawl_state& state)
{
    ++state.crawling;
    asio::co_spawn(state.acceptor.get_executor(), crawl(page, state), [&state](std::exception_ptr e) {
        state.failed = state.failed || e;
        if (--state.crawling == 0)
            state.acceptor.close();
    });
}

// The crawler: fetches one page under a permit, then spawns a fetch for every new link.
asio::awaitable<void> crawl(int page, crawl_state& state)
{
    std::string reply;
    {
        // Held until the end of this block, that is until the connection is closed.
        auto permit = co_await state.connections.async_acquire_permit(1, use_awaitable);
        tcp::socket socket(co_await asio::this_coro::executor);
        co_await socket.async_connect(state.acceptor.local_endpoint(), use_awaitable);
        const std::string request = "GET /page/" + std::to_string(page) + " HTTP/1.0\r\n\r\n";
        co_await asio::async_write(socket, asio::buffer(request), use_awaitable);
        auto [ec, n] = co_await asio::async_read(socket, asio::dynamic_buffer(reply),
                                                 asio::as_tuple(use_awaitable)); // to end of stream
        if (ec != asio::error::eof)
            throw boost::system::system_error(ec);
    }

    const std::string expected = "\npage " + std::to_string(page) + "\n";
    if (reply.starts_with("HTTP/1.0 200") && reply.find(expected) != std::string::npos)
        ++state.fetched;
    constexpr std::string_view link_prefix = "link /page/";
    for (auto at = reply.find(link_prefix); at != std::string::npos; at = reply.find(link_prefix, at + 1))
    {
        const int link = std::atoi(reply.c_str() + at + link_prefix.size());
        if (state.seen.insert(link).second)
            spawn_crawl(link, state);
    }
}

} // namespace

int main(int argc, char** argv)
{
    const int pages = argc > 1 ? std::clamp(std::atoi(argv[1]), 1, 10000) : 63;
    const auto k = static_cast<std::size_t>(argc > 2 ? std::clamp(std::atoi(argv[2]), 1, 1000) : 4);

    asio::io_context ctx;
    crawl_state state(ctx, pages, k);
    asio::co_spawn(ctx, run_server(state), asio::detached);
    state.seen.insert(0);
    spawn_crawl(0, state);
    ctx.run();

    const bool ok = !state.failed && state.fetched == pages && state.most_open <= static_cast<int>(k) &&
                    state.connections.available() == k;
    std::printf(
        "crawled %d of %d pages with at most %zu connections: the server saw at most %d at once\n%s\n",
        state.fetched, pages, k, state.most_open, ok ? "OK" : "FAILED");
    return ok ? 0 : 1;
}
