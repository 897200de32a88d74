// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_TEST_SUPPORT_IO_THREADS_HPP
#define ASIO_SYNC_TEST_SUPPORT_IO_THREADS_HPP

#include "support/watchdog.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include <chrono>
#include <thread>
#include <vector>

namespace asio_sync::test {

// Runs an io_context on threads of its own, each for at most `limit`. The destructor stops the
// context before the threads are joined, so a failed check never waits on them for long.
class io_threads
{
public:
    // Generous on purpose: it only turns a hang into a failure; no outcome depends on it.
    static constexpr std::chrono::seconds limit{60};

    io_threads(boost::asio::io_context& io, int count) : io_(io)
    {
        for (int i = 0; i < count; ++i)
            threads_.emplace_back([&io] { io.run_for(limit); });
    }

    io_threads(const io_threads&) = delete;
    io_threads& operator=(const io_threads&) = delete;

    ~io_threads()
    {
        io_.stop();
        join();
    }

    // Waits until every thread has returned: once the context ran out of work, or at the limit.
    void join()
    {
        const waiting_for waiting("the threads running an io_context to return");
        for (std::thread& t : threads_)
        {
            if (t.joinable())
                t.join();
        }
    }

private:
    boost::asio::io_context& io_;
    std::vector<std::thread> threads_; // not std::jthread: the tests also build as C++17
};

// An io_context kept running on threads of its own (two unless told) until destroyed.
struct running_io
{
    explicit running_io(int count = 2) : work(boost::asio::make_work_guard(io)), threads(io, count) {}
    ~running_io() { work.reset(); }

    boost::asio::io_context io;
    boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work;
    io_threads threads;
};

} // namespace asio_sync::test

#endif // ASIO_SYNC_TEST_SUPPORT_IO_THREADS_HPP
