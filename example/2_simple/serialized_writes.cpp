// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

// Many coroutines writing to one socket, serialized by asio_sync::mutex.
//
// A socket allows one write at a time: two async_write calls in flight on the same socket may
// interleave their bytes, and a message written in several pieces (a header, then a body) may be
// split by another writer's message even when each write runs alone. Holding an asynchronous
// mutex from the first piece to the last makes each message one unit on the wire. The lock is
// held across co_await, which a std::mutex could not do without blocking a thread. Where the
// io_context runs on several threads, the lock also keeps two threads from using the socket at once.
//
// Here W writer coroutines, on an io_context run by two threads, each send M messages over one
// loopback connection. Each message is a header line "<writer> <sequence> <length>" followed by a
// body of <length> copies of the writer's letter, written with two async_write calls and a pause
// in between, to give other writers every chance to cut in. The receiving side reads the stream
// and checks that every body belongs to its header and that each writer's messages arrive in
// order; the program exits non-zero if any message is torn, missing or out of order.
//
//   serialized_writes [WRITERS [MESSAGES]]    (defaults: 8 writers, 200 messages each)

#include <asio_sync/mutex.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/system/system_error.hpp>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace asio = boost::asio;
using asio::use_awaitable;
using asio::ip::tcp;

namespace {

// Writer w's letter, and the length of its message number s: varied, up to a few kilobytes.
char letter(int writer)
{
    return static_cast<char>('a' + writer % 26);
}

std::size_t body_length(int writer, int sequence)
{
    return 1 + (static_cast<std::size_t>(writer) * 7919 + static_cast<std::size_t>(sequence) * 104729) % 4000;
}

asio::awaitable<void> writer(tcp::socket& socket, asio_sync::mutex& write_lock, int id, int messages)
{
    for (int sequence = 0; sequence < messages; ++sequence)
    {
        const std::string header = std::to_string(id) + " " + std::to_string(sequence) + " " +
                                   std::to_string(body_length(id, sequence)) + "\n";
        const std::string body(body_length(id, sequence), letter(id));

        // The lock is released when `lock` goes out of scope, after the body is written.
        std::unique_lock<asio_sync::mutex> lock = co_await write_lock.async_scoped_lock(use_awaitable);
        co_await asio::async_write(socket, asio::buffer(header), use_awaitable);
        co_await asio::post(co_await asio::this_coro::executor, use_awaitable); // invite others to cut in
        co_await asio::async_write(socket, asio::buffer(body), use_awaitable);
    }
}

// Reads messages until the writers' side closes the connection; returns how many were intact.
asio::awaitable<int> receiver(tcp::socket socket, int writers)
{
    std::vector<int> next_sequence(static_cast<std::size_t>(writers), 0);
    std::string buffer;
    int intact = 0;
    for (;;)
    {
        auto [ec, header_size] = co_await asio::async_read_until(socket, asio::dynamic_buffer(buffer), '\n',
                                                                 asio::as_tuple(use_awaitable));
        if (ec == asio::error::eof)
            co_return intact;
        if (ec)
            throw boost::system::system_error(ec);
        int id = -1;
        int sequence = -1;
        std::size_t length = 0;
        std::istringstream(buffer.substr(0, header_size)) >> id >> sequence >> length;
        buffer.erase(0, header_size);
        if (id < 0 || id >= writers || length == 0 || length > 4000)
            throw std::runtime_error("torn header");
        if (buffer.size() < length)
            co_await asio::async_read(socket, asio::dynamic_buffer(buffer),
                                      asio::transfer_exactly(length - buffer.size()), use_awaitable);
        const bool body_ok = std::all_of(buffer.begin(), buffer.begin() + static_cast<std::ptrdiff_t>(length),
                                         [id](char c) { return c == letter(id); });
        buffer.erase(0, length);
        if (!body_ok || sequence != next_sequence[static_cast<std::size_t>(id)]++)
            throw std::runtime_error("message " + std::to_string(id) + "." + std::to_string(sequence) +
                                     " is torn or out of order");
        ++intact;
    }
}

} // namespace

int main(int argc, char** argv)
{
    const int writers = argc > 1 ? std::clamp(std::atoi(argv[1]), 1, 1000) : 8;
    const int messages = argc > 2 ? std::clamp(std::atoi(argv[2]), 1, 100000) : 200;

    asio::io_context ctx;
    tcp::acceptor acceptor(ctx, tcp::endpoint(asio::ip::address_v4::loopback(), 0));
    tcp::socket sending(ctx);
    sending.connect(acceptor.local_endpoint());
    tcp::socket receiving = acceptor.accept();

    // The receiver's result, or the reason it failed; set by the receiver's completion only.
    int intact = 0;
    std::string failure;
    asio::co_spawn(ctx, receiver(std::move(receiving), writers), [&](std::exception_ptr e, int n) {
        intact = n;
        try
        {
            if (e)
                std::rethrow_exception(e);
        }
        catch (const std::exception& ex)
        {
            failure = ex.what();
        }
    });

    asio_sync::mutex write_lock(ctx);
    std::atomic<int> writers_left{writers};
    std::atomic<bool> writer_failed{false};
    for (int id = 0; id < writers; ++id)
    {
        asio::co_spawn(ctx, writer(sending, write_lock, id, messages), [&](std::exception_ptr e) {
            if (e)
                writer_failed = true;
            // The last writer closes the connection, which ends the receiver.
            if (--writers_left == 0)
                sending.shutdown(tcp::socket::shutdown_send);
        });
    }

    std::thread second_thread([&ctx] { ctx.run(); });
    ctx.run();
    second_thread.join();

    if (writer_failed && failure.empty())
        failure = "a writer failed";
    const bool ok = failure.empty() && intact == writers * messages;
    std::printf("%d writers x %d messages on one socket: %d arrived intact and in order%s%s\n%s\n", writers,
                messages, intact, failure.empty() ? "" : "; ", failure.c_str(), ok ? "OK" : "FAILED");
    return ok ? 0 : 1;
}
