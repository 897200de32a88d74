// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#define BOOST_TEST_MODULE redis_fenced_set

// async_fenced_set on a real server: a write carrying a smaller fence than the largest that has
// written the key is refused and changes nothing; equal and larger fences write; the time to live
// covers both keys; bad input and keys of another type are refused with nothing changed; the
// library is loaded when the server lacks it; racing writers leave the value of the largest fence;
// and a holder whose lease ended cannot overwrite what the next holder of the semaphore wrote.

#include <asio_sync/redis/fenced_set.hpp>
#include <asio_sync/redis/semaphore.hpp>

#include "support/io_threads.hpp"
#include "support/recording_executor.hpp"
#include "support/redis_client.hpp"
#include "support/redis_server.hpp"

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

BOOST_AUTO_TEST_SUITE(redis_fenced_set)

namespace {

namespace asio = boost::asio;
namespace redis = asio_sync::redis;
using asio_sync::test::options_for;
using asio_sync::test::redis_server;
using asio_sync::test::wait;
using namespace std::chrono_literals;

constexpr const char* key = "{report}:value";
constexpr const char* fence_key = "{report}:fence";

struct outcome
{
    boost::system::error_code ec;
    std::uint64_t largest = 0;
};

struct fixture
{
    fixture() : work(asio::make_work_guard(io)), threads(io, 1), link(io, options_for(server.port())) {}

    ~fixture()
    {
        link.close();
        work.reset();
    }

    outcome write(std::uint64_t fence, const std::string& value, std::chrono::milliseconds ttl = 0ms)
    {
        auto f = redis::async_fenced_set(
            link, key, fence_key, fence, value, ttl,
            asio::use_future([](boost::system::error_code ec, std::uint64_t largest) {
                return outcome{ec, largest};
            }));
        return wait(f);
    }

    std::string get(const char* k) const { return server.command({"GET", k}); }

    redis_server server;
    asio::io_context io;
    asio::executor_work_guard<asio::io_context::executor_type> work;
    asio_sync::test::io_threads threads;
    redis::connection link;
};

} // namespace

BOOST_FIXTURE_TEST_CASE(the_first_write_loads_the_library_and_records_its_fence, fixture)
{
    const outcome first = write(100, "a");
    BOOST_TEST(!first.ec);
    BOOST_TEST(first.largest == 100u);
    BOOST_TEST(get(key) == "a");
    BOOST_TEST(get(fence_key) == "100");
    BOOST_TEST(server.command({"PTTL", key}) == "-1");
    BOOST_TEST(server.command({"PTTL", fence_key}) == "-1");
    BOOST_TEST(server.command({"FUNCTION", "LIST", "LIBRARYNAME", "asio_sync_fence_v1"}) != "");
}

BOOST_FIXTURE_TEST_CASE(a_smaller_fence_is_refused_and_changes_nothing, fixture)
{
    BOOST_TEST(!write(100, "a").ec);
    const outcome late = write(99, "stale");
    BOOST_TEST((late.ec == redis::error::stale_fence));
    BOOST_TEST(late.largest == 100u);
    BOOST_TEST(get(key) == "a");
    BOOST_TEST(get(fence_key) == "100");

    // The same fence writes again (one holder, two writes); a larger one moves the record.
    const outcome again = write(100, "b");
    BOOST_TEST(!again.ec);
    BOOST_TEST(get(key) == "b");
    const outcome newer = write(250, "c");
    BOOST_TEST(!newer.ec);
    BOOST_TEST(newer.largest == 250u);
    BOOST_TEST(get(key) == "c");
    BOOST_TEST(get(fence_key) == "250");
    BOOST_TEST((write(249, "d").ec == redis::error::stale_fence));
    BOOST_TEST(get(key) == "c");
}

BOOST_FIXTURE_TEST_CASE(the_time_to_live_covers_both_keys, fixture)
{
    BOOST_TEST(!write(7, "a", 60000ms).ec);
    for (const char* k : {key, fence_key})
    {
        const long left = std::stol(server.command({"PTTL", k}));
        BOOST_TEST(left > 0);
        BOOST_TEST(left <= 60000);
    }
    // A write without one makes both keys persistent again.
    BOOST_TEST(!write(8, "b").ec);
    BOOST_TEST(server.command({"PTTL", key}) == "-1");
    BOOST_TEST(server.command({"PTTL", fence_key}) == "-1");
    // A refused write leaves the expiry as it was.
    BOOST_TEST(!write(9, "c", 60000ms).ec);
    BOOST_TEST((write(1, "d").ec == redis::error::stale_fence));
    BOOST_TEST(std::stol(server.command({"PTTL", fence_key})) > 0);
}

BOOST_FIXTURE_TEST_CASE(bad_input_is_refused_with_nothing_changed, fixture)
{
    BOOST_TEST(!write(5, "a").ec);
    const std::uint64_t too_large = std::uint64_t(1) << 53;
    for (const std::uint64_t fence : {std::uint64_t(0), too_large})
    {
        const outcome refused = write(fence, "x");
        BOOST_TEST((refused.ec == redis::error::invalid_argument));
        BOOST_TEST(refused.largest == 0u);
    }
    BOOST_TEST(get(key) == "a");
    BOOST_TEST(get(fence_key) == "5");

    // A fence key that holds no fence.
    server.command({"SET", fence_key, "not a fence"});
    BOOST_TEST((write(6, "y").ec == redis::error::invalid_argument));
    BOOST_TEST(get(key) == "a");

    // Keys of another type: refused before anything is written.
    server.command({"DEL", fence_key});
    server.command({"DEL", key});
    server.command({"RPUSH", key, "element"});
    BOOST_TEST((write(7, "z").ec == redis::error::wrong_type));
    BOOST_TEST(server.command({"EXISTS", fence_key}) == "0");
    server.command({"DEL", key});
    server.command({"HSET", fence_key, "f", "1"});
    BOOST_TEST((write(7, "z").ec == redis::error::wrong_type));
    BOOST_TEST(server.command({"EXISTS", key}) == "0");
}

BOOST_FIXTURE_TEST_CASE(a_flushed_library_is_loaded_again, fixture)
{
    BOOST_TEST(!write(1, "a").ec);
    server.command({"FUNCTION", "FLUSH"});
    BOOST_TEST(!write(2, "b").ec);
    BOOST_TEST(get(key) == "b");
}

// A write whose handler runs on another context, and destroys the connection and its context. The
// library is loaded on the way (three commands), and only the handler is submitted to its
// executor: the commands before it complete on the connection's, so that none is started from
// the handler's executor (from use_future's system executor, one could still be returning from
// its start when another thread has completed the write and the caller has destroyed the
// connection: UndefinedBehaviorSanitizer saw that once in the racing writers' test). Once the
// handler is called, the operation holds nothing of the connection or its context: built on
// async_compose, it kept the context's work until after the handler returned, a use after free
// under AddressSanitizer.
BOOST_AUTO_TEST_CASE(only_the_handler_runs_on_its_executor_and_it_may_destroy_the_connection_and_its_context)
{
    redis_server server;
    asio::io_context handlers;
    std::vector<bool> submitted;
    const asio_sync::test::recording_executor<asio::io_context::executor_type> recording(
        handlers.get_executor(), submitted);
    auto io = std::make_unique<asio::io_context>();
    auto link = std::make_unique<redis::connection>(*io, options_for(server.port()));
    bool called = false;
    redis::async_fenced_set(
        *link, key, fence_key, 7, "a",
        asio::bind_executor(recording, [&](boost::system::error_code ec, std::uint64_t largest) {
            BOOST_TEST(!ec);
            BOOST_TEST(largest == 7u);
            link.reset();
            io.reset();
            called = true;
        }));
    const auto deadline = std::chrono::steady_clock::now() + asio_sync::test::redis_wait_limit;
    while (!called && std::chrono::steady_clock::now() < deadline)
    {
        io->run_one_for(10ms);
        handlers.poll();
    }
    BOOST_TEST(called);
    BOOST_TEST(submitted.size() == 1u);
    BOOST_TEST(server.command({"GET", key}) == "a");
}

// Writers race with distinct fences from a pool of threads: whatever the order, the value is the
// largest fence's, that write always succeeds, and every refused write saw a larger fence.
BOOST_AUTO_TEST_CASE(racing_writers_leave_the_largest_fences_value)
{
    redis_server server;
    asio::io_context io;
    auto work = asio::make_work_guard(io);
    asio_sync::test::io_threads threads(io, 4);
    redis::connection a(io, options_for(server.port()));
    redis::connection b(io, options_for(server.port()));

    constexpr std::uint64_t writes = 200;
    std::vector<std::uint64_t> fences(writes);
    std::iota(fences.begin(), fences.end(), std::uint64_t(1000));
    std::shuffle(fences.begin(), fences.end(), std::mt19937(20261126));
    std::vector<std::future<outcome>> results;
    for (std::uint64_t i = 0; i < writes; ++i)
    {
        redis::connection& link = i % 2 ? a : b;
        results.push_back(redis::async_fenced_set(
            link, key, fence_key, fences[i], std::to_string(fences[i]),
            asio::use_future(
                [](boost::system::error_code ec, std::uint64_t largest) { return outcome{ec, largest}; })));
    }
    const std::uint64_t largest = fences.empty() ? 0 : *std::max_element(fences.begin(), fences.end());
    std::size_t written = 0, refused = 0;
    for (std::uint64_t i = 0; i < writes; ++i)
    {
        const outcome o = wait(results[i]);
        if (!o.ec)
        {
            ++written;
            BOOST_TEST(o.largest == fences[i]);
        }
        else
        {
            BOOST_TEST((o.ec == redis::error::stale_fence));
            BOOST_TEST(o.largest > fences[i]);
            BOOST_TEST(fences[i] != largest);
            ++refused;
        }
    }
    BOOST_TEST(written + refused == writes);
    BOOST_TEST(written >= 1u);
    BOOST_TEST(server.command({"GET", key}) == std::to_string(largest));
    BOOST_TEST(server.command({"GET", fence_key}) == std::to_string(largest));
    a.close();
    b.close();
    work.reset();
}

// The classic: a holder computes a value under its permit, its lease ends (here: its link is
// closed, so its lease runs out on the server as that of a paused or partitioned process does),
// the next holder writes; the first holder's write, made late, is refused.
BOOST_FIXTURE_TEST_CASE(a_holder_whose_lease_ended_cannot_overwrite_the_next_holder, fixture)
{
    redis::connection cut_off(io, options_for(server.port()));
    redis::semaphore first(cut_off, "reports", 1, 300ms);
    redis::semaphore second(link, "reports", 1, 300ms);

    auto granted = first.async_acquire_permit(1, asio::use_future);
    const redis::semaphore::permit old_holder = wait(granted);
    const std::uint64_t old_fence = old_holder.fencing_token();
    cut_off.close();

    auto next = second.async_acquire_permit(1, asio::use_future);
    const redis::semaphore::permit new_holder = wait(next);
    BOOST_TEST(new_holder.fencing_token() > old_fence);
    BOOST_TEST(!write(new_holder.fencing_token(), "new").ec);

    const outcome late = write(old_fence, "old");
    BOOST_TEST((late.ec == redis::error::stale_fence));
    BOOST_TEST(late.largest == new_holder.fencing_token());
    BOOST_TEST(get(key) == "new");
}

BOOST_AUTO_TEST_SUITE_END()
