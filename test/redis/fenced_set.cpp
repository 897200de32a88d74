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

#include "support/counting_allocator.hpp"
#include "support/io_threads.hpp"
#include "support/recording_executor.hpp"
#include "support/redis_client.hpp"
#include "support/redis_server.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_allocator.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

BOOST_AUTO_TEST_SUITE(redis_fenced_set)

namespace {

namespace asio = boost::asio;
namespace redis = asio_sync::redis;
using asio_sync::test::allocation_counts;
using asio_sync::test::counting_allocator;
using asio_sync::test::emit;
using asio_sync::test::eventually;
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

// use_future with both arguments.
const auto as_outcome = asio::use_future([](boost::system::error_code ec, std::uint64_t largest) {
    return outcome{ec, largest};
});

// A write whose cancellation slot is `signal`'s.
std::future<outcome> cancellable_write(redis::connection& link, std::uint64_t fence, const std::string& value,
                                       asio::cancellation_signal& signal)
{
    return redis::async_fenced_set(link, key, fence_key, fence, value,
                                   asio::bind_cancellation_slot(signal.slot(), as_outcome));
}

// What cancelling_allocator emits, and whether it has.
struct cancellation_hook
{
    cancellation_hook(asio::io_context& i, asio::cancellation_signal& s, asio::cancellation_type t)
        : io(i), signal(s), type(t)
    {
    }

    asio::io_context& io;
    asio::cancellation_signal& signal;
    asio::cancellation_type type;
    std::atomic<bool> fired{false};
};

// An allocator that, the first time memory goes back to it, posts the emission of a cancellation
// to the thread that runs `io`. Given to a write, it fires when the first command's reply has
// arrived, before the next command is started: its operation is freed first.
template <class T>
class cancelling_allocator
{
public:
    using value_type = T;

    explicit cancelling_allocator(std::shared_ptr<cancellation_hook> h) noexcept : hook_(std::move(h)) {}

    template <class U>
    cancelling_allocator(const cancelling_allocator<U>& other) noexcept : hook_(other.get_hook())
    {
    }

    T* allocate(std::size_t n) { return std::allocator<T>().allocate(n); }

    void deallocate(T* p, std::size_t n)
    {
        std::allocator<T>().deallocate(p, n);
        if (!hook_->fired.exchange(true))
            asio::post(hook_->io, [h = hook_] { h->signal.emit(h->type); });
    }

    const std::shared_ptr<cancellation_hook>& get_hook() const noexcept { return hook_; }

    template <class U>
    bool operator==(const cancelling_allocator<U>& other) const noexcept
    {
        return hook_ == other.get_hook();
    }

    template <class U>
    bool operator!=(const cancelling_allocator<U>& other) const noexcept
    {
        return hook_ != other.get_hook();
    }

private:
    std::shared_ptr<cancellation_hook> hook_;
};

boost::system::error_code code(boost::system::error_code ec)
{
    return ec;
}

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
        auto f =
            redis::async_fenced_set(link, key, fence_key, fence, value, ttl,
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
        results.push_back(
            redis::async_fenced_set(link, key, fence_key, fences[i], std::to_string(fences[i]),
                                    asio::use_future([](boost::system::error_code ec, std::uint64_t largest) {
                                        return outcome{ec, largest};
                                    })));
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

BOOST_FIXTURE_TEST_CASE(works_with_every_token_executor_and_allocator, fixture)
{
    std::promise<outcome> called;
    redis::async_fenced_set(link, key, fence_key, 1, "callback",
                            [&](boost::system::error_code ec, std::uint64_t largest) {
                                called.set_value({ec, largest});
                            });
    auto via_callback = called.get_future();
    BOOST_TEST(wait(via_callback).largest == 1u);

    auto deferred = redis::async_fenced_set(link, key, fence_key, 2, "deferred", asio::deferred);
    auto from_deferred = std::move(deferred)(asio::use_future);
    BOOST_TEST(wait(from_deferred) == 2u);

    auto coro = asio::co_spawn(
        io,
        [&]() -> asio::awaitable<std::uint64_t> {
            const std::uint64_t written =
                co_await redis::async_fenced_set(link, key, fence_key, 3, "awaited", asio::use_awaitable);
            const auto [ec, largest] = co_await redis::async_fenced_set(link, key, fence_key, 2, "stale",
                                                                        asio::as_tuple(asio::use_awaitable));
            co_return ec == redis::error::stale_fence ? written + largest : 0;
        },
        asio::use_future);
    BOOST_TEST(wait(coro) == 6u);

    // From here the library is gone each time: three commands per write.
    // On a strand of another context, which the pending write keeps busy until its handler ran.
    server.command({"FUNCTION", "FLUSH"});
    asio::io_context other;
    auto strand = asio::make_strand(other);
    bool on_strand = false;
    redis::async_fenced_set(
        link, key, fence_key, 4, "strand",
        asio::bind_executor(strand, [&](boost::system::error_code ec, std::uint64_t largest) {
            on_strand = !ec && largest == 4u && strand.running_in_this_thread();
        }));
    other.run_for(asio_sync::test::redis_wait_limit);
    BOOST_TEST(on_strand);

    // With an allocator of its own: used, and all given back.
    server.command({"FUNCTION", "FLUSH"});
    allocation_counts counts;
    auto allocated =
        redis::async_fenced_set(link, key, fence_key, 5, "allocated",
                                asio::bind_allocator(counting_allocator<void>(counts), asio::use_future));
    BOOST_TEST(wait(allocated) == 5u);
    BOOST_TEST(counts.allocations.load() >= 3u); // one per command at least
    BOOST_TEST(counts.deallocations.load() == counts.allocations.load());
    BOOST_TEST(get(key) == "allocated");
}

// The server is stopped before the connection starts, so that every write waits in its queue.
BOOST_AUTO_TEST_CASE(a_write_cancelled_before_it_is_written_is_never_sent)
{
    redis_server server;
    server.stop();
    asio::io_context io;
    auto work = asio::make_work_guard(io);
    asio_sync::test::io_threads threads(io, 1);
    redis::connection link(io, options_for(server.port()));
    for (const auto type : {asio::cancellation_type::terminal, asio::cancellation_type::partial,
                            asio::cancellation_type::total})
    {
        asio::cancellation_signal signal;
        auto f = cancellable_write(link, 1, "cancelled", signal);
        emit(io, signal, type);
        BOOST_TEST(wait(f).ec == code(asio::error::operation_aborted));
    }
    server.start();
    auto ping = link.async_execute({"PING"}, asio::use_future);
    BOOST_TEST(wait(ping).text == "PONG");
    BOOST_TEST(server.command({"EXISTS", key}) == "0");
    BOOST_TEST(server.command({"FUNCTION", "LIST"}) == ""); // not even the library
    link.close();
    work.reset();
}

// The server is paused once the link is up: the writes are written and wait for their replies.
BOOST_FIXTURE_TEST_CASE(a_sent_write_is_cancelled_at_once_by_terminal_and_partial_but_not_total, fixture)
{
    BOOST_TEST(!write(1, "a").ec);
    server.pause();
    std::uint64_t fence = 10;
    for (const auto type : {asio::cancellation_type::terminal, asio::cancellation_type::partial})
    {
        asio::cancellation_signal signal;
        const std::size_t before = server.unread_bytes();
        auto f = cancellable_write(link, fence++, "cancelled", signal);
        eventually([&] { return server.unread_bytes() > before; });
        emit(io, signal, type);
        BOOST_TEST(wait(f).ec == code(asio::error::operation_aborted)); // the server is paused
    }
    asio::cancellation_signal signal;
    const std::size_t before = server.unread_bytes();
    auto ignored = cancellable_write(link, fence, "total", signal);
    eventually([&] { return server.unread_bytes() > before; });
    emit(io, signal, asio::cancellation_type::total);
    server.resume();
    const outcome w = wait(ignored);
    BOOST_TEST(!w.ec);
    BOOST_TEST(w.largest == fence);
    BOOST_TEST(get(key) == "total");
}

// The library is missing, and the write's second command, the library's load, is sent but held
// back in the server behind a blocking command of the same link. Cancelled then, the write is not
// called again: terminal and partial complete it at once; total, which takes back no command sent,
// once the load ran.
BOOST_FIXTURE_TEST_CASE(a_write_cancelled_while_loading_the_library_does_not_call_again, fixture)
{
    auto id_read = link.async_execute({"CLIENT", "ID"}, asio::use_future);
    const std::string id = std::to_string(wait(id_read).integer);
    // The link blocked in BLPOP, with or without commands written behind it.
    const auto blocked_with_unread = [&](bool unread) {
        const std::string client = server.command({"CLIENT", "LIST", "ID", id});
        return client.find("cmd=blpop") != std::string::npos &&
               (client.find(" qbuf=0 ") == std::string::npos) == unread;
    };
    std::uint64_t fence = 1;
    for (const auto type : {asio::cancellation_type::terminal, asio::cancellation_type::partial,
                            asio::cancellation_type::total})
    {
        server.command({"FUNCTION", "FLUSH"});
        auto first_gate = link.async_execute({"BLPOP", "first_gate", "0"}, asio::use_future);
        eventually([&] { return blocked_with_unread(false); });
        asio::cancellation_signal signal;
        auto f = cancellable_write(link, fence++, "loaded", signal);
        auto second_gate = link.async_execute({"BLPOP", "second_gate", "0"}, asio::use_future);
        eventually([&] { return blocked_with_unread(true); });
        server.command({"RPUSH", "first_gate", "x"}); // the call runs, fails, and the second gate blocks
        wait(first_gate);
        eventually([&] { return blocked_with_unread(true); }); // the load, written behind it
        emit(io, signal, type);
        if (type != asio::cancellation_type::total)
            BOOST_TEST(wait(f).ec == code(asio::error::operation_aborted)); // the load is held back
        server.command({"RPUSH", "second_gate", "x"});
        wait(second_gate);
        if (type == asio::cancellation_type::total)
            BOOST_TEST(wait(f).ec == code(asio::error::operation_aborted));
        auto ping = link.async_execute({"PING"}, asio::use_future);
        BOOST_TEST(wait(ping).text == "PONG");
        BOOST_TEST(server.command({"EXISTS", key}) == "0");
        BOOST_TEST(server.command({"FUNCTION", "LIST"}) != ""); // the load ran
    }
}

// Closing the connection aborts a write queued (the server stopped) or sent (the server paused).
BOOST_FIXTURE_TEST_CASE(closing_the_connection_aborts_a_pending_write, fixture)
{
    BOOST_TEST(!write(1, "a").ec);
    server.pause();
    const std::size_t before = server.unread_bytes();
    auto sent = redis::async_fenced_set(link, key, fence_key, 2, "b", as_outcome);
    eventually([&] { return server.unread_bytes() > before; });
    link.close();
    BOOST_TEST(wait(sent).ec == code(asio::error::operation_aborted)); // the server is paused
    server.resume();

    server.stop();
    redis::connection queued_on(io, options_for(server.port()));
    auto queued = redis::async_fenced_set(queued_on, key, fence_key, 3, "c", as_outcome);
    queued_on.close();
    BOOST_TEST(wait(queued).ec == code(asio::error::operation_aborted));
}

// Writes started at once from several threads through use_future while the library is missing
// (three commands each, until one has loaded it), whose handlers complete on the system executor's
// threads; the connection and the context go as soon as the last future is ready.
BOOST_AUTO_TEST_CASE(writes_from_a_thread_pool_without_the_library_then_an_immediate_teardown)
{
    redis_server server;
    for (int round = 0; round < 5; ++round)
    {
        server.command({"FUNCTION", "FLUSH"});
        server.command({"DEL", key, fence_key});
        auto io = std::make_unique<asio::io_context>();
        auto work =
            std::make_unique<asio::executor_work_guard<asio::io_context::executor_type>>(io->get_executor());
        auto threads = std::make_unique<asio_sync::test::io_threads>(*io, 2);
        auto link = std::make_unique<redis::connection>(*io, options_for(server.port()));
        constexpr std::uint64_t callers = 4, writes = 25;
        std::vector<std::vector<std::future<outcome>>> results(callers);
        std::vector<std::thread> pool;
        for (std::uint64_t c = 0; c < callers; ++c)
            pool.emplace_back([&, c] {
                for (std::uint64_t i = 0; i < writes; ++i)
                    results[c].push_back(
                        redis::async_fenced_set(*link, key, fence_key, 1 + c * writes + i, "v", as_outcome));
            });
        for (std::thread& t : pool)
            t.join();
        std::size_t written = 0, refused = 0;
        for (auto& of_one : results)
            for (auto& f : of_one)
            {
                const outcome o = wait(f);
                written += !o.ec ? 1u : 0u;
                refused += o.ec == redis::error::stale_fence ? 1u : 0u;
            }
        link.reset();
        work.reset();
        threads.reset();
        io.reset();
        BOOST_TEST(written + refused == callers * writes);
        BOOST_TEST(written >= 1u);
        BOOST_TEST(server.command({"GET", fence_key}) == std::to_string(callers * writes));
    }
}

// A cancellation emitted after the first command's reply (the library is missing) and before the
// next command is started: the write is not sent again, whatever the type, and completes with
// operation_aborted.
BOOST_FIXTURE_TEST_CASE(a_write_cancelled_between_its_commands_is_not_sent_again, fixture)
{
    for (const auto type : {asio::cancellation_type::terminal, asio::cancellation_type::partial,
                            asio::cancellation_type::total})
    {
        server.command({"FUNCTION", "FLUSH"});
        server.command({"DEL", key});
        asio::cancellation_signal signal;
        const auto hook = std::make_shared<cancellation_hook>(io, signal, type);
        auto f = redis::async_fenced_set(
            link, key, fence_key, 1, "cancelled",
            asio::bind_allocator(cancelling_allocator<void>(hook),
                                 asio::bind_cancellation_slot(signal.slot(), as_outcome)));
        BOOST_TEST(wait(f).ec == code(asio::error::operation_aborted));
        BOOST_TEST(hook->fired.load());
        BOOST_TEST(server.command({"EXISTS", key}) == "0");
    }
}

BOOST_AUTO_TEST_SUITE_END()
