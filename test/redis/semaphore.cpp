// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#define BOOST_TEST_MODULE redis_semaphore

// The fleet-wide semaphore on a real server: every completion token, FIFO across connections,
// fencing, try, cancellation and timeouts that remove the remote waiter, lease renewal and loss,
// and the errors of a mismatched capacity, too many permits and a key of another type; an acquire
// whose reply was lost with the link, a waiter whose lease lapsed while its client stalled, and the
// handler's allocator for the operation. Resizing: a larger capacity serving the queue in order, a
// smaller one waiting for the holders (or not), a waiter larger than the new capacity, processes
// started before and after a resize (one that missed its message, one that adopts), racing
// resizes, bad input, cancellation, close and destruction.

#include <asio_sync/redis/semaphore.hpp>

#include "support/counting_allocator.hpp"
#include "support/io_threads.hpp"
#include "support/redis_client.hpp"
#include "support/redis_server.hpp"
#include "support/semaphore_keys.hpp"
#include "support/tcp_proxy.hpp"

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

#include <atomic>
#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

BOOST_AUTO_TEST_SUITE(redis_semaphore)

namespace {

namespace asio = boost::asio;
namespace redis = asio_sync::redis;
using asio_sync::test::allocation_counts;
using asio_sync::test::counting_allocator;
using asio_sync::test::emit;
using asio_sync::test::eventually;
using asio_sync::test::is_ready;
using asio_sync::test::options_for;
using asio_sync::test::queue_length;
using asio_sync::test::redis_server;
using asio_sync::test::tcp_proxy;
using asio_sync::test::wait;
using namespace std::chrono_literals;
using permit = redis::semaphore::permit;
using script = redis::detail::semaphore_script;

constexpr std::chrono::seconds limit = asio_sync::test::redis_wait_limit;
constexpr std::chrono::milliseconds lease{500};
// Longer than the limit: a waiter left behind in Redis stays queued for the whole test.
constexpr std::chrono::milliseconds long_lease{120000};

boost::system::error_code code(boost::system::error_code ec)
{
    return ec;
}

struct acquired
{
    boost::system::error_code ec;
    permit p;
};

// A handler that hands the completion to a future.
class to_future
{
public:
    to_future() : promise_(std::make_shared<std::promise<acquired>>()) {}

    std::future<acquired> get_future() { return promise_->get_future(); }

    void operator()(boost::system::error_code ec, permit p) { promise_->set_value({ec, std::move(p)}); }

private:
    std::shared_ptr<std::promise<acquired>> promise_;
};

// A server, an io_context run by one thread, and connections declared after it (so closed
// before the thread stops).
struct fixture
{
    explicit fixture(redis_server::options opts = {})
        : server(std::move(opts)), work(asio::make_work_guard(io)), thread([this] { io.run(); }),
          first(io, options_for(server.port())), second(io, options_for(server.port()))
    {
    }

    ~fixture()
    {
        first.close();
        second.close();
        work.reset();
        io.stop();
        thread.join();
    }

    std::future<acquired> acquire(redis::semaphore& sem, std::size_t n)
    {
        to_future handler;
        auto f = handler.get_future();
        sem.async_acquire_permit(n, std::move(handler));
        return f;
    }

    // Acquires `n` permits that the test needs granted.
    acquired hold(redis::semaphore& sem, std::size_t n)
    {
        auto f = acquire(sem, n);
        acquired a = wait(f);
        BOOST_REQUIRE(!a.ec);
        return a;
    }

    std::future<acquired> try_acquire(redis::semaphore& sem, std::size_t n)
    {
        to_future handler;
        auto f = handler.get_future();
        sem.async_try_acquire_permit(n, std::move(handler));
        return f;
    }

    std::string redis_command(std::vector<std::string> args) { return server.command(args); }

    // The invariant check of the library: "ok <used> <holders> <queued>".
    std::string check(const std::string& name) { return server.execute(script(name).check()).to_text(); }

    std::string last_fence(const std::string& name)
    {
        return server.command({"HGET", script(name).key(redis::detail::semaphore_key::meta), "seq"});
    }

    // Waits until Redis queues `length` waiters, while `waiting` is not completed: an error must not
    // wait for the limit.
    void expect_queued(const std::string& name, const std::string& length, std::future<acquired>& waiting)
    {
        eventually([&] { return queue_length(server, name) == length || is_ready(waiting); });
        BOOST_TEST(!is_ready(waiting));
    }

    // Releases `held` and returns the grant that `waiting` then receives, checked to be later.
    acquired served_after_release(acquired& held, std::future<acquired>& waiting)
    {
        const std::uint64_t fence = held.p.fencing_token();
        held.p = permit();
        acquired served = wait(waiting);
        BOOST_REQUIRE(!served.ec);
        BOOST_TEST(served.p.fencing_token() > fence);
        return served;
    }

    redis_server server;
    asio::io_context io;
    asio::executor_work_guard<asio::io_context::executor_type> work;
    std::thread thread;
    redis::connection first;
    redis::connection second;
};

struct append_only_fixture : fixture
{
    append_only_fixture() : fixture(redis_server::options{true, {}, {}, {}}) {}
};

// The completion of a resize, counted: a second one fails the test.
class resize_handler
{
public:
    resize_handler() : state_(std::make_shared<state>()) {}

    std::future<boost::system::error_code> get_future() { return state_->promise.get_future(); }
    int calls() const { return state_->calls.load(); }

    void operator()(boost::system::error_code ec)
    {
        if (state_->calls.fetch_add(1) == 0)
            state_->promise.set_value(ec);
    }

private:
    struct state
    {
        std::promise<boost::system::error_code> promise;
        std::atomic<int> calls{0};
    };
    std::shared_ptr<state> state_;
};

struct resizing
{
    std::future<boost::system::error_code> done;
    resize_handler handler;
};

resizing resize(redis::semaphore& sem, std::size_t n,
                redis::set_capacity_mode mode = redis::set_capacity_mode::wait_for_holders)
{
    resizing r;
    r.done = r.handler.get_future();
    sem.async_set_capacity(n, mode, r.handler);
    return r;
}

// The capacity stored in Redis, as async_status reads it.
std::size_t stored_capacity(redis::semaphore& sem)
{
    auto f = sem.async_status(asio::use_future);
    return wait(f).capacity;
}

} // namespace

BOOST_AUTO_TEST_CASE(the_permit_is_the_public_basic_permit)
{
    static_assert(std::is_same_v<permit, redis::basic_permit<>>);
    static_assert(!std::is_copy_constructible_v<permit> && std::is_nothrow_move_constructible_v<permit>);
    static_assert(std::is_same_v<permit::rebind_executor<asio::io_context::executor_type>::other,
                                 redis::basic_permit<asio::io_context::executor_type>>);
    static_assert(std::is_same_v<redis::semaphore::rebind_executor<asio::io_context::executor_type>::other,
                                 redis::basic_semaphore<asio::io_context::executor_type>>);
    static_assert(
        std::is_nothrow_default_constructible_v<redis::basic_permit<asio::io_context::executor_type>>);
    const redis::basic_permit<> empty;
    BOOST_TEST(empty.count() == 0u);
    BOOST_TEST(empty.fencing_token() == 0u);
    BOOST_TEST(!empty.lost_slot().is_connected());
    BOOST_TEST((empty.expires_at() == std::chrono::steady_clock::time_point::min()));
    BOOST_TEST((empty.valid_for() == std::chrono::steady_clock::duration::zero()));
}

BOOST_FIXTURE_TEST_CASE(a_permit_tells_how_long_its_lease_is_valid, fixture)
{
    redis::semaphore sem(first, "jobs", 1, long_lease);
    BOOST_TEST((sem.get_executor() == first.get_executor()));
    BOOST_TEST(sem.capacity() == 1u);
    const auto before = std::chrono::steady_clock::now();
    acquired a = hold(sem, 1);
    BOOST_TEST((a.p.get_executor() == first.get_executor()));
    // Dated from when the acquire was sent, a margin early: within a lease of `before`.
    BOOST_TEST((a.p.expires_at() > before));
    BOOST_TEST((a.p.expires_at() <= before + long_lease));
    BOOST_TEST((a.p.valid_for() > std::chrono::steady_clock::duration::zero()));
    BOOST_TEST((a.p.valid_for() <= long_lease));

    auto released = a.p.async_release(asio::use_future);
    wait(released);
    BOOST_TEST((a.p.valid_for() == std::chrono::steady_clock::duration::zero()));
}

BOOST_FIXTURE_TEST_CASE(close_fails_queued_and_later_acquires_but_keeps_permits, fixture)
{
    redis::semaphore a(first, "jobs", 1, long_lease);
    redis::semaphore b(second, "jobs", 1, long_lease);
    acquired held = hold(a, 1);
    auto waiting = acquire(a, 1);
    expect_queued("jobs", "1", waiting);

    a.close();
    BOOST_TEST(wait(waiting).ec == code(asio_sync::error::closed));
    eventually([&] { return queue_length(server, "jobs") == "0"; }); // its remote waiter left
    auto later = acquire(a, 1);
    BOOST_TEST(wait(later).ec == code(asio_sync::error::closed));
    auto none = acquire(a, 0);
    BOOST_TEST(wait(none).ec == code(asio_sync::error::closed));
    a.close(); // again: nothing

    // The permit granted before the close still renews and releases as before.
    auto next = acquire(b, 1);
    expect_queued("jobs", "1", next);
    auto released = held.p.async_release(asio::use_future);
    BOOST_CHECK_NO_THROW(wait(released));
    BOOST_TEST(!wait(next).ec);
}

// Every initiating function takes its default token from the executor, as Asio's I/O objects do:
// here use_awaitable, so no token is written.
BOOST_FIXTURE_TEST_CASE(default_completion_tokens_come_from_the_executor, fixture)
{
    using awaitable_executor = asio::use_awaitable_t<>::executor_with_default<asio::any_io_executor>;
    redis::basic_connection<awaitable_executor> conn(awaitable_executor(io.get_executor()),
                                                     options_for(server.port()));
    {
        redis::basic_semaphore<awaitable_executor> sem(conn, "jobs", 2, long_lease);
        auto run = asio::co_spawn(
            io,
            [&]() -> asio::awaitable<std::size_t> {
                redis::basic_permit<awaitable_executor> p = co_await sem.async_acquire_permit(1);
                redis::basic_permit<awaitable_executor> q = co_await sem.async_acquire_permit_for(1, 10s);
                const redis::semaphore_status status = co_await sem.async_status();
                co_await q.async_release();
                auto r = co_await sem.async_try_acquire_permit(1);
                co_await r.async_release();
                co_await p.async_release();
                co_await sem.async_set_capacity(3);
                co_await sem.async_set_capacity(4, redis::set_capacity_mode::at_once);
                co_return status.held + sem.capacity();
            },
            asio::use_future);
        BOOST_TEST(wait(run) == 2u + 4u);
    }
    conn.close();
}

BOOST_FIXTURE_TEST_CASE(acquires_and_releases_through_a_callback, fixture)
{
    redis::semaphore sem(first, "jobs", 2, lease);
    auto f = acquire(sem, 2);
    acquired a = wait(f);
    BOOST_TEST(!a.ec);
    BOOST_TEST(a.p.count() == 2u);
    BOOST_TEST(a.p.fencing_token() > 0u);
    BOOST_TEST(check("jobs") == "ok\n2\n1\n0");

    std::promise<boost::system::error_code> released;
    a.p.async_release([&](boost::system::error_code ec) { released.set_value(ec); });
    auto r = released.get_future();
    BOOST_TEST(!wait(r));
    BOOST_TEST(a.p.count() == 0u);
    BOOST_TEST(check("jobs") == "ok\n0\n0\n0");
}

BOOST_FIXTURE_TEST_CASE(zero_permits_complete_at_once_and_too_many_fail, fixture)
{
    redis::semaphore sem(first, "jobs", 2, lease);
    auto zero = acquire(sem, 0);
    acquired a = wait(zero);
    BOOST_TEST(!a.ec);
    BOOST_TEST(a.p.count() == 0u);

    auto many = acquire(sem, 3);
    acquired b = wait(many);
    BOOST_TEST(b.ec == code(asio_sync::error::too_many_permits));
    BOOST_TEST(b.p.count() == 0u);
}

BOOST_FIXTURE_TEST_CASE(works_with_every_token, fixture)
{
    redis::semaphore sem(first, "jobs", 1, lease);

    auto fut = sem.async_acquire_permit(1, asio::use_future);
    BOOST_REQUIRE(fut.wait_for(limit) == std::future_status::ready);
    permit p = fut.get();
    BOOST_TEST(p.count() == 1u);
    p = permit();

    auto deferred = sem.async_acquire_permit(1, asio::deferred);
    auto via_deferred = std::move(deferred)(asio::use_future);
    BOOST_REQUIRE(via_deferred.wait_for(limit) == std::future_status::ready);
    permit q = via_deferred.get();
    BOOST_TEST(q.count() == 1u);
    q = permit();

    auto coro = asio::co_spawn(
        io,
        [&]() -> asio::awaitable<std::size_t> {
            permit r = co_await sem.async_acquire_permit(1, asio::use_awaitable);
            co_return r.count();
        },
        asio::use_future);
    BOOST_REQUIRE(coro.wait_for(limit) == std::future_status::ready);
    BOOST_TEST(coro.get() == 1u);
}

BOOST_FIXTURE_TEST_CASE(serves_two_connections_in_fifo_order_with_increasing_fences, fixture)
{
    redis::semaphore a(first, "jobs", 2, lease);
    redis::semaphore b(second, "jobs", 2, lease);

    acquired h = hold(a, 2);

    auto big = acquire(b, 2);
    eventually([&] { return queue_length(server, "jobs") == "1"; });
    auto small = acquire(a, 1);
    eventually([&] { return queue_length(server, "jobs") == "2"; });
    BOOST_TEST(!is_ready(big));
    BOOST_TEST(!is_ready(small));

    h.p = permit(); // released in the background
    acquired first_served = wait(big);
    BOOST_REQUIRE(!first_served.ec);
    BOOST_TEST(first_served.p.count() == 2u);
    BOOST_TEST(first_served.p.fencing_token() > h.p.fencing_token());
    BOOST_TEST(!is_ready(small)); // strict FIFO: the second waiter waits behind the first
    const std::uint64_t fence = first_served.p.fencing_token();
    first_served.p = permit();

    acquired second_served = wait(small);
    BOOST_REQUIRE(!second_served.ec);
    BOOST_TEST(second_served.p.fencing_token() > fence);
}

BOOST_FIXTURE_TEST_CASE(try_never_queues, fixture)
{
    redis::semaphore sem(first, "jobs", 1, lease);
    auto held = try_acquire(sem, 1);
    acquired h = wait(held);
    BOOST_REQUIRE(!h.ec);
    BOOST_TEST(h.p.count() == 1u);

    auto busy = try_acquire(sem, 1);
    acquired b = wait(busy);
    BOOST_TEST(b.ec == code(asio::error::would_block));
    BOOST_TEST(b.p.count() == 0u);
    BOOST_TEST(queue_length(server, "jobs") == "0");
}

BOOST_FIXTURE_TEST_CASE(cancellation_removes_the_remote_waiter_and_serves_the_next, fixture)
{
    redis::semaphore a(first, "jobs", 1, long_lease);
    redis::semaphore b(second, "jobs", 1, long_lease);
    acquired h = hold(a, 1);

    asio::cancellation_signal signal;
    to_future handler;
    auto cancelled = handler.get_future();
    asio::post(io, [&] {
        a.async_acquire_permit(1, asio::bind_cancellation_slot(signal.slot(), std::move(handler)));
    });
    eventually([&] { return queue_length(server, "jobs") == "1"; });
    auto next = acquire(b, 1);
    eventually([&] { return queue_length(server, "jobs") == "2"; });

    asio::post(io, [&] { signal.emit(asio::cancellation_type::terminal); });
    acquired c = wait(cancelled);
    BOOST_TEST(c.ec == code(asio::error::operation_aborted));
    BOOST_TEST(c.p.count() == 0u);
    eventually([&] { return queue_length(server, "jobs") == "1"; });

    h.p = permit();
    acquired n = wait(next);
    BOOST_TEST(!n.ec);
    BOOST_TEST(n.p.count() == 1u);
}

BOOST_FIXTURE_TEST_CASE(cancel_gives_up_every_pending_acquire_and_its_remote_waiter, fixture)
{
    redis::semaphore a(first, "jobs", 1, long_lease);
    redis::semaphore b(second, "jobs", 1, long_lease);
    acquired h = hold(b, 1);
    auto first_waiting = acquire(a, 1);
    expect_queued("jobs", "1", first_waiting);
    auto second_waiting = acquire(a, 1);
    expect_queued("jobs", "2", second_waiting);
    auto next = acquire(b, 1);
    expect_queued("jobs", "3", next);

    a.cancel();
    BOOST_TEST(wait(first_waiting).ec == code(asio::error::operation_aborted));
    BOOST_TEST(wait(second_waiting).ec == code(asio::error::operation_aborted));
    eventually([&] { return queue_length(server, "jobs") == "1"; });
    acquired served = served_after_release(h, next);

    // The semaphore still works after a cancel().
    auto later = acquire(a, 1);
    expect_queued("jobs", "1", later);
}

BOOST_FIXTURE_TEST_CASE(closing_the_connection_completes_an_acquire_queued_in_redis, fixture)
{
    redis::semaphore a(first, "jobs", 1, long_lease);
    redis::semaphore b(second, "jobs", 1, long_lease);
    acquired h = hold(b, 1);
    auto waiting = acquire(a, 1);
    expect_queued("jobs", "1", waiting);

    first.close();
    BOOST_TEST(wait(waiting).ec == code(asio_sync::error::closed));
    auto after_close = acquire(a, 1);
    BOOST_TEST(wait(after_close).ec == code(asio_sync::error::closed));
}

BOOST_FIXTURE_TEST_CASE(a_lease_out_of_range_is_refused, fixture)
{
    BOOST_CHECK_THROW(redis::semaphore(first, "jobs", 1, 0ms), std::invalid_argument);
    BOOST_CHECK_THROW(redis::semaphore(first, "jobs", 1, redis::semaphore::min_lease_duration - 1ms),
                      std::invalid_argument);
    BOOST_CHECK_THROW(redis::semaphore(first, "jobs", 1, redis::semaphore::max_lease_duration + 1ms),
                      std::invalid_argument);

    for (const auto bound : {redis::semaphore::min_lease_duration, redis::semaphore::max_lease_duration})
    {
        redis::semaphore sem(first, "bounds", 1, bound);
        acquired a = hold(sem, 1);
        BOOST_TEST(a.p.count() == 1u);
    }
}

BOOST_FIXTURE_TEST_CASE(a_function_flush_is_recovered_by_loading_the_library_again, fixture)
{
    redis::semaphore sem(first, "jobs", 2, long_lease);
    acquired h = hold(sem, 1);
    redis_command({"FUNCTION", "FLUSH"});

    acquired after_flush = hold(sem, 1);
    BOOST_TEST(after_flush.p.count() == 1u);
    redis_command({"FUNCTION", "FLUSH"});
    auto released = std::make_shared<std::promise<boost::system::error_code>>();
    auto released_future = released->get_future();
    h.p.async_release([released](boost::system::error_code ec) { released->set_value(ec); });
    BOOST_TEST(wait(released_future) == code({}));
    BOOST_TEST(check("jobs") == "ok\n1\n1\n0");
}

BOOST_FIXTURE_TEST_CASE(a_refused_function_load_uses_the_loaded_library_or_reports_no_permission, fixture)
{
    redis::semaphore loader(first, "jobs", 1, long_lease);
    hold(loader, 1);
    redis_command({"ACL", "SETUSER", "limited", "on", ">secret", "~*", "&*", "+@all", "-function|load"});
    redis::connection_options opts = options_for(server.port());
    opts.user = "limited";
    opts.password = "secret";
    redis::connection limited(io, opts);
    {
        redis::semaphore sem(limited, "jobs", 1, long_lease);
        acquired a = hold(sem, 1);
        BOOST_TEST(a.p.count() == 1u);

        a.p = permit();
        redis_command({"FUNCTION", "FLUSH"});
        auto refused = acquire(sem, 1);
        BOOST_TEST(wait(refused).ec == code(redis::error::no_permission));
    }
    limited.close();
}

BOOST_FIXTURE_TEST_CASE(common_server_errors_have_their_own_codes, fixture)
{
    redis::semaphore huge(first, "huge", 10000000000000000, lease); // over the library's 15 digits
    auto malformed = acquire(huge, 1);
    BOOST_TEST(wait(malformed).ec == code(redis::error::invalid_argument));

    redis::semaphore sem(first, "jobs", 2, lease);
    hold(sem, 1);
    redis_command({"CONFIG", "SET", "maxmemory", "1"});
    auto no_memory = acquire(sem, 1);
    BOOST_TEST(wait(no_memory).ec == code(redis::error::out_of_memory));
    redis_command({"CONFIG", "SET", "maxmemory", "0"});

    redis_command({"REPLICAOF", "127.0.0.1", "1"}); // a primary that never answers: the data stays
    auto replica = acquire(sem, 1);
    BOOST_TEST(wait(replica).ec == code(redis::error::read_only));
    redis_command({"REPLICAOF", "NO", "ONE"});
}

BOOST_FIXTURE_TEST_CASE(status_reports_the_capacity_the_permits_held_and_the_waiters_queued, fixture)
{
    redis::semaphore a(first, "jobs", 3, long_lease);
    redis::semaphore b(second, "jobs", 3, long_lease);
    auto status = [&] {
        auto f = a.async_status(asio::use_future);
        BOOST_REQUIRE(f.wait_for(limit) == std::future_status::ready);
        return f.get();
    };
    redis::semaphore_status before = status();
    BOOST_TEST(before.capacity == 0u);

    acquired h = hold(a, 2);
    auto waiting = acquire(b, 2);
    expect_queued("jobs", "1", waiting);
    const redis::semaphore_status s = status();
    BOOST_TEST(s.capacity == 3u);
    BOOST_TEST(s.held == 2u);
    BOOST_TEST(s.queued == 1u);
    BOOST_TEST(s.available() == 1u);
}

BOOST_FIXTURE_TEST_CASE(timeout_removes_the_remote_waiter, fixture)
{
    redis::semaphore sem(first, "jobs", 1, long_lease);
    acquired h = hold(sem, 1);

    to_future handler;
    auto timed = handler.get_future();
    sem.async_acquire_permit_for(1, 50ms, std::move(handler));
    acquired t = wait(timed);
    BOOST_TEST(t.ec == code(asio_sync::error::timed_out));
    eventually([&] { return queue_length(server, "jobs") == "0"; });
    BOOST_TEST(check("jobs") == "ok\n1\n1\n0");
}

BOOST_FIXTURE_TEST_CASE(a_grant_racing_a_cancellation_is_given_back, fixture)
{
    redis::semaphore sem(first, "jobs", 1, lease);
    for (int round = 0; round < 20; ++round)
    {
        asio::cancellation_signal signal;
        to_future handler;
        auto f = handler.get_future();
        // Cancelled in the same turn as the acquire was started: its FCALL is already queued and
        // will be granted; the release sent after it gives the grant back.
        asio::post(io, [&] {
            sem.async_acquire_permit(1, asio::bind_cancellation_slot(signal.slot(), std::move(handler)));
            signal.emit(asio::cancellation_type::terminal);
        });
        acquired a = wait(f);
        BOOST_TEST(a.ec == code(asio::error::operation_aborted));
        eventually([&] { return check("jobs").rfind("ok\n0\n", 0) == 0; });
    }
    auto last = acquire(sem, 1);
    BOOST_TEST(!wait(last).ec);
}

// A holder that never renews stands for a dead process. The waiter's own lease is long: its
// heartbeat would renew it (and so serve it) only after the test's limit. It is served because
// it watches the earliest holder deadline, after the lease lapsed: the holder is gone.
BOOST_FIXTURE_TEST_CASE(a_waiter_is_served_when_a_dead_holders_lease_lapses, fixture)
{
    const auto jobs = script("jobs");
    redis_command(script::load_command());
    const std::string dead =
        server.execute(jobs.acquire("dead:1", 1, 1, 500ms, redis::detail::acquire_mode::wait)).to_text();
    BOOST_REQUIRE(dead.rfind("granted\n", 0) == 0);

    redis::semaphore sem(first, "jobs", 1, long_lease);
    auto waiting = acquire(sem, 1);
    acquired a = wait(waiting);
    BOOST_REQUIRE(!a.ec);
    BOOST_TEST(a.p.fencing_token() > std::stoull(dead.substr(dead.find('\n') + 1)));
    BOOST_TEST(server.execute(jobs.status("dead:1")).to_text() == "lost");
}

BOOST_FIXTURE_TEST_CASE(renewal_keeps_a_permit_past_several_leases, fixture)
{
    redis::semaphore a(first, "jobs", 1, 300ms);
    redis::semaphore b(second, "jobs", 1, 300ms);
    acquired h = hold(a, 1);
    std::this_thread::sleep_for(1500ms); // five leases
    auto other = try_acquire(b, 1);
    BOOST_TEST(wait(other).ec == code(asio::error::would_block));
    BOOST_TEST(check("jobs") == "ok\n1\n1\n0");
}

BOOST_FIXTURE_TEST_CASE(a_holder_that_cannot_renew_reports_lost_and_its_fence_is_older, fixture)
{
    redis::semaphore a(first, "jobs", 1, 300ms);
    acquired h = hold(a, 1);
    // Shared: if the test fails first, the permit's release completes the wait after this scope.
    auto lost = std::make_shared<std::promise<boost::system::error_code>>();
    h.p.async_wait_lost([lost](boost::system::error_code ec) { lost->set_value(ec); });
    bool slot_emitted = false;
    // Assigned on the connection's thread, which emits the signal.
    std::promise<void> assigned;
    asio::post(io, [&] {
        h.p.lost_slot().assign([&](asio::cancellation_type) { slot_emitted = true; });
        assigned.set_value();
    });
    auto assigned_future = assigned.get_future();
    wait(assigned_future);

    server.pause();
    auto l = lost->get_future();
    const boost::system::error_code ec = wait(l);
    server.resume();
    BOOST_TEST(ec == code(redis::error::lease_lost));

    redis::semaphore b(second, "jobs", 1, 300ms);
    auto next = acquire(b, 1);
    acquired n = wait(next);
    BOOST_REQUIRE(!n.ec);
    BOOST_TEST(n.p.fencing_token() > h.p.fencing_token());
    std::promise<bool> emitted;
    asio::post(io, [&] { emitted.set_value(slot_emitted); });
    auto e = emitted.get_future();
    BOOST_TEST(wait(e));
}

BOOST_FIXTURE_TEST_CASE(a_capacity_mismatch_is_refused, fixture)
{
    redis::semaphore a(first, "jobs", 2, lease);
    redis::semaphore b(second, "jobs", 3, lease);
    auto held = acquire(a, 1);
    BOOST_REQUIRE(!wait(held).ec);
    auto other = acquire(b, 1);
    BOOST_TEST(wait(other).ec == code(redis::error::capacity_mismatch));
}

BOOST_FIXTURE_TEST_CASE(a_key_of_another_type_is_refused, fixture)
{
    redis_command({"SET", script("jobs").key(redis::detail::semaphore_key::meta), "x"});
    redis::semaphore sem(first, "jobs", 2, lease);
    auto f = acquire(sem, 1);
    BOOST_TEST(wait(f).ec == code(redis::error::wrong_type));
}

BOOST_FIXTURE_TEST_CASE(survives_a_server_restart_without_granting_twice, append_only_fixture)
{
    redis::semaphore a(first, "jobs", 2, long_lease);
    redis::semaphore b(second, "jobs", 2, long_lease);
    acquired h = hold(a, 1);

    server.stop();
    auto queued = acquire(b, 2); // started while Redis is down: waits for it
    server.start();
    expect_queued("jobs", "1", queued);

    acquired q = served_after_release(h, queued);
    BOOST_TEST(q.p.count() == 2u);
    BOOST_TEST(check("jobs") == "ok\n2\n1\n0");
}

BOOST_FIXTURE_TEST_CASE(an_acquire_whose_reply_was_lost_is_replayed_and_granted_once, fixture)
{
    tcp_proxy proxy(server.port());
    redis::connection proxied(io, options_for(proxy.port()));
    {
        redis::semaphore sem(proxied, "jobs", 2, long_lease);
        acquired warm_up = hold(sem, 1); // the links are up and set up
        std::promise<boost::system::error_code> released;
        warm_up.p.async_release([&](boost::system::error_code ec) { released.set_value(ec); });
        auto r = released.get_future();
        BOOST_REQUIRE(!wait(r));

        proxy.drop_replies();
        auto f = acquire(sem, 1);
        eventually([&] { return check("jobs") == "ok\n1\n1\n0"; }); // granted in Redis, never answered
        proxy.cut();
        acquired a = wait(f);
        BOOST_REQUIRE(!a.ec);
        BOOST_TEST(a.p.count() == 1u);
        BOOST_TEST(std::to_string(a.p.fencing_token()) == last_fence("jobs"));
        BOOST_TEST(check("jobs") == "ok\n1\n1\n0"); // one holder: the replay did not acquire again
    }
    proxied.close();
}

BOOST_FIXTURE_TEST_CASE(a_waiter_whose_lease_lapsed_while_its_client_stalled_is_queued_again_and_served,
                        fixture)
{
    tcp_proxy proxy(server.port());
    redis::connection proxied(io, options_for(proxy.port()));
    {
        // The holder renews every third of a lease: its renewals remove the stalled waiter.
        redis::semaphore holding(second, "jobs", 1, lease);
        redis::semaphore stalled(proxied, "jobs", 1, lease);
        acquired h = hold(holding, 1);
        auto f = acquire(stalled, 1);
        eventually([&] { return queue_length(server, "jobs") == "1"; });

        proxy.hold();
        eventually([&] { return queue_length(server, "jobs") == "0"; });
        proxy.release(); // the held renewals answer lost
        expect_queued("jobs", "1", f);

        acquired a = served_after_release(h, f);
        BOOST_TEST(a.p.count() == 1u);
    }
    proxied.close();
}

// A permit inside a completion handler that the context's shutdown destroys, after the semaphore
// and the connection (which must go before their context): its release must touch neither, and
// is not sent (the lease lapses on the server). It went through the connection object, freed by
// then: AddressSanitizer reports the use after its scope, and ThreadSanitizer saw a use after free
// at a fixture's teardown.
BOOST_AUTO_TEST_CASE(a_permit_destroyed_at_context_shutdown_after_its_connection_touches_neither)
{
    redis_server server;
    {
        asio::io_context io;
        {
            redis::connection conn(io, options_for(server.port()));
            redis::semaphore sem(conn, "shutdown", 1, lease);
            std::optional<permit> held;
            sem.async_acquire_permit(1, [&](boost::system::error_code ec, permit p) {
                BOOST_TEST(!ec);
                held.emplace(std::move(p));
            });
            while (!held)
                io.run_one();
            asio::post(io, [p = std::move(*held)] {});
        }
    }
}

// A status read whose handler runs on another context, and destroys the semaphore, the connection
// and their context: once the handler is called, the operation holds nothing of them. Built on
// async_compose, it kept the context's work, and the semaphore's engine, until it was destroyed
// after the handler returned: a use after free under AddressSanitizer; with use_future, the
// system executor's thread racing the caller's teardown (seen once under ThreadSanitizer).
BOOST_AUTO_TEST_CASE(a_status_handler_may_destroy_the_semaphore_its_connection_and_their_context)
{
    redis_server server;
    asio::io_context handlers;
    auto io = std::make_unique<asio::io_context>();
    auto conn = std::make_unique<redis::connection>(*io, options_for(server.port()));
    auto sem = std::make_unique<redis::semaphore>(*conn, "status", 1, lease);
    bool called = false;
    sem->async_status(
        asio::bind_executor(handlers, [&](boost::system::error_code ec, redis::semaphore_status) {
            BOOST_TEST(!ec);
            sem.reset();
            conn.reset();
            io.reset();
            called = true;
        }));
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!called && std::chrono::steady_clock::now() < deadline)
    {
        io->run_one_for(10ms);
        handlers.poll();
    }
    BOOST_TEST(called);
}

BOOST_FIXTURE_TEST_CASE(a_queued_acquire_is_allocated_with_the_handlers_allocator, fixture)
{
    redis::semaphore sem(first, "jobs", 1, long_lease);
    acquired h = hold(sem, 1);

    allocation_counts counts;
    to_future handler;
    auto f = handler.get_future();
    sem.async_acquire_permit(1, asio::bind_allocator(counting_allocator<void>(counts), std::move(handler)));
    eventually([&] { return queue_length(server, "jobs") == "1"; });
    BOOST_TEST(counts.allocations.load() == 1u); // the operation, alive while it waits
    BOOST_TEST(counts.deallocations.load() == 0u);

    h.p = permit();
    acquired a = wait(f);
    BOOST_TEST(!a.ec);
    BOOST_TEST(counts.allocations.load() >= 1u);
    BOOST_TEST(counts.deallocations.load() == counts.allocations.load());
}

// ---- resizing

BOOST_FIXTURE_TEST_CASE(a_larger_capacity_serves_the_queue_at_once_in_fifo_order, fixture)
{
    redis::semaphore a(first, "jobs", 2, long_lease);
    redis::semaphore b(second, "jobs", 2, long_lease);
    acquired held = hold(a, 2);
    auto w1 = acquire(b, 2);
    expect_queued("jobs", "1", w1);
    auto w2 = acquire(b, 1);
    expect_queued("jobs", "2", w2);
    auto w3 = acquire(b, 1);
    expect_queued("jobs", "3", w3);

    resizing r = resize(a, 5);
    BOOST_TEST(!wait(r.done));
    const acquired g1 = wait(w1);
    const acquired g2 = wait(w2);
    BOOST_TEST(!g1.ec);
    BOOST_TEST(!g2.ec);
    BOOST_TEST(g1.p.fencing_token() < g2.p.fencing_token()); // the head first
    BOOST_TEST(!is_ready(w3)); // 2 + 2 + 1 held: it does not fit, and nothing was released
    BOOST_TEST(check("jobs") == "ok\n5\n3\n1");
    BOOST_TEST(a.capacity() == 5u);
    eventually([&] { return b.capacity() == 5u; }); // from the channel
    BOOST_TEST(stored_capacity(b) == 5u);
    BOOST_TEST(r.handler.calls() == 1);
}

BOOST_FIXTURE_TEST_CASE(a_shrink_waits_for_the_holders_and_grants_nothing_beyond_the_new_capacity, fixture)
{
    redis::semaphore a(first, "jobs", 3, long_lease);
    redis::semaphore b(second, "jobs", 3, long_lease);
    acquired p1 = hold(a, 1);
    acquired p2 = hold(a, 1);
    acquired p3 = hold(a, 1);

    resizing r = resize(b, 1);
    eventually([&] { return stored_capacity(a) == 1u; });
    auto w = acquire(b, 1);
    expect_queued("jobs", "1", w);
    BOOST_TEST(check("jobs") == "ok\n3\n3\n1"); // more held than the capacity, while the shrink waits
    BOOST_TEST(!is_ready(r.done));

    auto released = p1.p.async_release(asio::use_future);
    wait(released);
    BOOST_TEST(check("jobs") == "ok\n2\n2\n1");
    BOOST_TEST(!is_ready(r.done)); // 2 held: nothing can complete it
    BOOST_TEST(!is_ready(w));

    released = p2.p.async_release(asio::use_future);
    wait(released);
    BOOST_TEST(!wait(r.done));                                                    // 1 held
    BOOST_TEST(!is_ready(w));                                                     // 1 + 1 > 1
    BOOST_TEST((p3.p.valid_for() > std::chrono::steady_clock::duration::zero())); // never revoked
    released = p3.p.async_release(asio::use_future);
    wait(released);
    BOOST_TEST(!wait(w).ec);
    BOOST_TEST(r.handler.calls() == 1);
}

BOOST_FIXTURE_TEST_CASE(a_shrink_at_once_completes_when_stored_and_grants_nothing_beyond_it, fixture)
{
    redis::semaphore a(first, "jobs", 3, long_lease);
    redis::semaphore b(second, "jobs", 3, long_lease);
    acquired p1 = hold(a, 1);
    acquired p2 = hold(a, 1);
    acquired p3 = hold(a, 1);

    resizing r = resize(b, 1, redis::set_capacity_mode::at_once);
    BOOST_TEST(!wait(r.done));
    BOOST_TEST(b.capacity() == 1u);
    for (acquired* held : {&p1, &p2, &p3})
    {
        auto tried = try_acquire(b, 1);
        BOOST_TEST(wait(tried).ec == code(asio::error::would_block)); // 3, 2, then 1 held
        auto released = held->p.async_release(asio::use_future);
        wait(released);
    }
    auto tried = try_acquire(b, 1);
    BOOST_TEST(!wait(tried).ec);
    BOOST_TEST(r.handler.calls() == 1);
}

BOOST_FIXTURE_TEST_CASE(a_waiter_larger_than_a_smaller_capacity_fails_and_nothing_is_lost, fixture)
{
    redis::semaphore a(first, "jobs", 4, long_lease);
    redis::semaphore b(second, "jobs", 4, long_lease);
    acquired held = hold(a, 1);
    auto big = acquire(b, 4);
    expect_queued("jobs", "1", big);
    auto small = acquire(b, 1);
    expect_queued("jobs", "2", small);

    resizing r = resize(a, 2);
    BOOST_TEST(!wait(r.done));
    const acquired refused = wait(big);
    BOOST_TEST(refused.ec == code(asio_sync::error::too_many_permits));
    BOOST_TEST(refused.p.count() == 0u);
    const acquired granted = wait(small); // the head left: 1 + 1 fit in 2
    BOOST_TEST(!granted.ec);
    BOOST_TEST(check("jobs") == "ok\n2\n2\n0");
    auto again = acquire(b, 4);
    BOOST_TEST(wait(again).ec == code(asio_sync::error::too_many_permits));
    BOOST_TEST(check("jobs") == "ok\n2\n2\n0");
}

// A process started after a resize with the capacity of its old configuration is refused, and keeps
// reporting its own; one that adopts the capacity in force works with it.
BOOST_FIXTURE_TEST_CASE(a_process_started_after_a_resize_with_the_old_capacity_is_refused_unless_it_adopts,
                        fixture)
{
    redis::semaphore a(first, "jobs", 2, long_lease);
    acquired declared = hold(a, 1);
    resizing r = resize(a, 3);
    BOOST_TEST(!wait(r.done));
    {
        redis::semaphore late(second, "jobs", 2, long_lease);
        auto refused = acquire(late, 1);
        BOOST_TEST(wait(refused).ec == code(redis::error::capacity_mismatch));
        auto refused_again = acquire(late, 1); // also once it has read the capacity
        BOOST_TEST(wait(refused_again).ec == code(redis::error::capacity_mismatch));
        BOOST_TEST(late.capacity() == 2u);
    }
    redis::semaphore_options adopt;
    adopt.lease_duration = long_lease;
    adopt.adopt_capacity = true;
    redis::semaphore adopting(second, "jobs", 2, adopt);
    auto two = acquire(adopting, 2);
    const acquired adopted = wait(two);
    BOOST_TEST(adopted.ec.message() == "Success");
    BOOST_TEST(adopting.capacity() == 3u);
    BOOST_TEST(check("jobs") == "ok\n3\n2\n0");
}

// A process that existed before a resize takes it: from the channel, and, when it missed the
// message (its links dropped the reply), from the refusal of its next acquire, sent again at once.
BOOST_FIXTURE_TEST_CASE(a_process_started_before_a_resize_learns_it_and_is_never_refused, fixture)
{
    tcp_proxy proxy(server.port());
    redis::connection proxied(io, options_for(proxy.port()));
    {
        redis::semaphore a(first, "jobs", 2, long_lease);
        redis::semaphore b(second, "jobs", 2, long_lease);
        redis::semaphore c(proxied, "jobs", 2, long_lease);
        acquired declared = hold(a, 1);
        hold(c, 1); // granted, and released: c existed then
        resizing r = resize(a, 3);
        BOOST_TEST(!wait(r.done));
        eventually([&] { return b.capacity() == 3u && c.capacity() == 3u; });
        acquired three = hold(b, 2);
        three.p = permit();

        // c's links drop every reply, the resize's message among them, then are cut.
        proxy.drop_replies();
        resizing r2 = resize(a, 4);
        BOOST_TEST(!wait(r2.done));
        proxy.cut();
        acquired four = hold(c, 3);
        BOOST_TEST(c.capacity() == 4u);
        BOOST_TEST(check("jobs") == "ok\n4\n2\n0");
    }
    proxied.close();
}

BOOST_FIXTURE_TEST_CASE(a_shrink_replaced_by_a_later_resize_completes_with_the_capacity_then_in_force,
                        fixture)
{
    redis::semaphore a(first, "jobs", 4, long_lease);
    redis::semaphore b(second, "jobs", 4, long_lease);
    acquired p1 = hold(a, 1);
    acquired p2 = hold(a, 1);
    acquired p3 = hold(a, 1);

    // Replaced by a larger capacity: it completes at once.
    resizing shrink = resize(a, 1);
    eventually([&] { return stored_capacity(a) == 1u; });
    BOOST_TEST(!is_ready(shrink.done));
    resizing grow = resize(b, 6);
    BOOST_TEST(!wait(grow.done));
    BOOST_TEST(!wait(shrink.done));

    // Replaced by a smaller one: it waits for that one, although its own capacity fits first.
    resizing to_two = resize(a, 2);
    eventually([&] { return stored_capacity(a) == 2u; });
    resizing to_one = resize(b, 1);
    eventually([&] { return stored_capacity(a) == 1u; });
    auto released = p1.p.async_release(asio::use_future);
    wait(released);
    BOOST_TEST(check("jobs") == "ok\n2\n2\n0"); // 2 held: to_two's capacity, no longer in force
    BOOST_TEST(!is_ready(to_two.done));
    BOOST_TEST(!is_ready(to_one.done));
    released = p2.p.async_release(asio::use_future);
    wait(released);
    BOOST_TEST(!wait(to_two.done));
    BOOST_TEST(!wait(to_one.done));
    for (const resizing* r : {&shrink, &grow, &to_two, &to_one})
        BOOST_TEST(r->handler.calls() == 1);
}

// Two resizes started at once on two connections, from the same stamp: Redis stores them one after
// the other (the second refused once for its stamp, then sent again), the last stored wins, and
// every object learns it. Each operation completes once, with success.
BOOST_FIXTURE_TEST_CASE(two_resizes_racing_both_complete_and_the_last_stored_wins, fixture)
{
    redis::semaphore a(first, "jobs", 2, long_lease);
    redis::semaphore b(second, "jobs", 2, long_lease);
    acquired declared = hold(a, 1);
    const std::string capacity_key = script("jobs").key(redis::detail::semaphore_key::capacity);
    int a_won = 0;
    int b_won = 0;
    for (std::size_t round = 0; round < 20; ++round)
    {
        const std::size_t to_a = 2 + 2 * round;
        const std::size_t to_b = 3 + 2 * round;
        resizing ra = resize(a, to_a, redis::set_capacity_mode::at_once);
        resizing rb = resize(b, to_b);
        BOOST_TEST(!wait(ra.done));
        BOOST_TEST(!wait(rb.done));
        BOOST_TEST(ra.handler.calls() == 1);
        BOOST_TEST(rb.handler.calls() == 1);
        const std::string stored = redis_command({"GET", capacity_key}); // "<capacity> <stamp> <id>"
        const std::size_t winner = std::stoul(stored.substr(0, stored.find(' ')));
        BOOST_TEST_REQUIRE((winner == to_a || winner == to_b), stored);
        (winner == to_a ? a_won : b_won) += 1;
        BOOST_TEST(stored_capacity(a) == winner);
        eventually([&] { return a.capacity() == winner && b.capacity() == winner; });
    }
    BOOST_TEST_MESSAGE("racing resizes: a stored last " << a_won << " times, b " << b_won << " times");
    BOOST_TEST(a_won + b_won == 20);
}

BOOST_FIXTURE_TEST_CASE(a_resize_out_of_range_fails_at_once_and_changes_nothing, fixture)
{
    redis::semaphore sem(first, "jobs", 2, long_lease);
    acquired declared = hold(sem, 1);
    for (const std::size_t n : {std::size_t(0), static_cast<std::size_t>(redis::semaphore::max_capacity + 1)})
    {
        // Completed through its own executor, never inside the call: a context nobody runs yet.
        asio::io_context elsewhere;
        int calls = 0;
        boost::system::error_code result;
        sem.async_set_capacity(n, asio::bind_executor(elsewhere, [&](boost::system::error_code ec) {
                                   ++calls;
                                   result = ec;
                               }));
        BOOST_TEST(calls == 0);
        elsewhere.run();
        BOOST_TEST(calls == 1);
        BOOST_TEST(result == code(redis::error::invalid_argument));
    }
    BOOST_TEST(stored_capacity(sem) == 2u);
    BOOST_TEST(redis_command({"GET", script("jobs").key(redis::detail::semaphore_key::capacity)}) ==
               "-"); // never resized
}

BOOST_FIXTURE_TEST_CASE(a_waiting_resize_is_cancelled_closed_or_aborted_once_and_stays_stored, fixture)
{
    redis::semaphore a(first, "jobs", 3, long_lease);
    acquired held = hold(a, 3);

    // Terminal cancellation ends the wait; total is not supported and changes nothing.
    {
        redis::semaphore b(second, "jobs", 3, long_lease);
        asio::cancellation_signal signal;
        resizing r;
        r.done = r.handler.get_future();
        b.async_set_capacity(2, asio::bind_cancellation_slot(signal.slot(), r.handler));
        eventually([&] { return stored_capacity(a) == 2u; });
        asio::post(io, [&] { signal.emit(asio::cancellation_type::total); });
        asio::post(io, [&] { signal.emit(asio::cancellation_type::terminal); });
        BOOST_TEST(wait(r.done) == code(asio::error::operation_aborted));
        BOOST_TEST(stored_capacity(a) == 2u); // not undone
        BOOST_TEST(r.handler.calls() == 1);
    }
    // close() completes a waiting resize, and fails every later one.
    {
        redis::semaphore b(second, "jobs", 2, long_lease);
        resizing r = resize(b, 1);
        eventually([&] { return stored_capacity(a) == 1u; });
        b.close();
        BOOST_TEST(wait(r.done) == code(asio_sync::error::closed));
        resizing later = resize(b, 3);
        BOOST_TEST(wait(later.done) == code(asio_sync::error::closed));
        BOOST_TEST(stored_capacity(a) == 1u);
    }
    // cancel(), and the destruction of the semaphore, complete it with operation_aborted.
    resizing destroyed;
    {
        redis::semaphore b(second, "jobs", 1, long_lease);
        resizing cancelled = resize(b, 2);
        eventually([&] { return stored_capacity(a) == 2u; });
        b.cancel();
        BOOST_TEST(wait(cancelled.done) == code(asio::error::operation_aborted));
        destroyed = resize(b, 1);
        eventually([&] { return stored_capacity(a) == 1u; });
    }
    BOOST_TEST(wait(destroyed.done) == code(asio::error::operation_aborted));
    BOOST_TEST(destroyed.handler.calls() == 1);
}

BOOST_FIXTURE_TEST_CASE(a_resize_works_with_every_token_and_its_allocator, fixture)
{
    redis::semaphore sem(first, "jobs", 2, long_lease);
    auto fut = sem.async_set_capacity(3, asio::use_future);
    wait(fut);
    auto deferred = sem.async_set_capacity(4, redis::set_capacity_mode::at_once, asio::deferred);
    auto from_deferred = std::move(deferred)(asio::use_future);
    wait(from_deferred);
    auto run = asio::co_spawn(
        io,
        [&]() -> asio::awaitable<std::size_t> {
            co_await sem.async_set_capacity(5, asio::use_awaitable);
            co_return sem.capacity();
        },
        asio::use_future);
    BOOST_TEST(wait(run) == 5u);

    // A resize that waits allocates its operation with the handler's allocator, and frees it.
    acquired held = hold(sem, 5);
    allocation_counts counts;
    resizing r;
    r.done = r.handler.get_future();
    sem.async_set_capacity(1, asio::bind_allocator(counting_allocator<void>(counts), r.handler));
    eventually([&] { return stored_capacity(sem) == 1u; });
    BOOST_TEST(counts.allocations.load() == 1u);
    BOOST_TEST(counts.deallocations.load() == 0u);
    held.p = permit();
    BOOST_TEST(!wait(r.done));
    BOOST_TEST(counts.deallocations.load() == counts.allocations.load());
}

// ---- reading the status

namespace {

using status_outcome = std::tuple<boost::system::error_code, redis::semaphore_status>;

// use_future with both arguments.
const auto as_status_outcome = asio::use_future([](boost::system::error_code ec, redis::semaphore_status s) {
    return status_outcome{ec, s};
});

// A status read whose cancellation slot is `signal`'s.
std::future<status_outcome> cancellable_status(redis::semaphore& sem, asio::cancellation_signal& signal)
{
    return sem.async_status(asio::bind_cancellation_slot(signal.slot(), as_status_outcome));
}

// The FCALL_RO calls the server has run since it started: the status reads it was sent.
std::string status_reads(const redis_server& server)
{
    const std::string stats = server.command({"INFO", "commandstats"});
    const std::string name = "cmdstat_fcall_ro:calls=";
    const std::size_t at = stats.find(name);
    if (at == std::string::npos)
        return "0";
    const std::size_t from = at + name.size();
    return stats.substr(from, stats.find(',', from) - from);
}

// Waits until the paused `server` holds more unread bytes than `before`: a command was written.
void wait_until_written(const redis_server& server, std::size_t before)
{
    eventually([&] { return server.unread_bytes() > before; });
}

} // namespace

BOOST_FIXTURE_TEST_CASE(a_status_read_works_with_every_token_executor_and_allocator, fixture)
{
    redis::semaphore sem(first, "jobs", 2, long_lease);
    acquired h = hold(sem, 1);

    std::promise<status_outcome> called;
    sem.async_status([&](boost::system::error_code ec, redis::semaphore_status s) {
        called.set_value({ec, s});
    });
    auto via_callback = called.get_future();
    BOOST_TEST(std::get<1>(wait(via_callback)).held == 1u);

    auto fut = sem.async_status(asio::use_future);
    BOOST_TEST(wait(fut).held == 1u);

    auto deferred = sem.async_status(asio::deferred);
    auto from_deferred = std::move(deferred)(asio::use_future);
    BOOST_TEST(wait(from_deferred).held == 1u);

    auto coro = asio::co_spawn(
        io,
        [&]() -> asio::awaitable<std::size_t> {
            const auto [ec, s] = co_await sem.async_status(asio::as_tuple(asio::use_awaitable));
            const redis::semaphore_status again = co_await sem.async_status(asio::use_awaitable);
            co_return ec ? 0 : s.held + again.held;
        },
        asio::use_future);
    BOOST_TEST(wait(coro) == 2u);

    // On a strand of another context, which the pending read keeps busy until its handler ran.
    asio::io_context other;
    auto strand = asio::make_strand(other);
    bool on_strand = false;
    sem.async_status(
        asio::bind_executor(strand, [&](boost::system::error_code ec, redis::semaphore_status s) {
            on_strand = !ec && s.held == 1u && strand.running_in_this_thread();
        }));
    other.run_for(limit);
    BOOST_TEST(on_strand);

    // With an allocator of its own: used, and all given back.
    allocation_counts counts;
    auto allocated =
        sem.async_status(asio::bind_allocator(counting_allocator<void>(counts), asio::use_future));
    BOOST_TEST(wait(allocated).held == 1u);
    BOOST_TEST(counts.allocations.load() >= 1u);
    BOOST_TEST(counts.deallocations.load() == counts.allocations.load());
}

// The server is stopped before the connection starts, so that every read waits in its queue.
BOOST_AUTO_TEST_CASE(a_status_read_cancelled_before_it_is_written_is_never_sent)
{
    redis_server server;
    server.stop();
    asio::io_context io;
    auto work = asio::make_work_guard(io);
    asio_sync::test::io_threads threads(io, 1);
    redis::connection conn(io, options_for(server.port()));
    redis::semaphore sem(conn, "status", 1, lease);
    for (const auto type : {asio::cancellation_type::terminal, asio::cancellation_type::partial,
                            asio::cancellation_type::total})
    {
        asio::cancellation_signal signal;
        auto f = cancellable_status(sem, signal);
        emit(io, signal, type);
        BOOST_TEST(std::get<0>(wait(f)) == code(asio::error::operation_aborted));
    }
    server.start();
    auto read = sem.async_status(asio::use_future);
    BOOST_TEST(wait(read).capacity == 0u);
    // Ours and the engine's, once its subscription is active: a cancelled read sent on connecting
    // would have run before ours.
    BOOST_TEST(std::stoul(status_reads(server)) <= 2u);
    eventually([&] { return status_reads(server) == "2"; });
    conn.close();
    work.reset();
}

// The server is paused once the link is up: the reads are written and wait for their replies.
BOOST_FIXTURE_TEST_CASE(a_written_status_read_is_cancelled_at_once_by_terminal_and_partial_but_not_total,
                        fixture)
{
    redis::semaphore sem(first, "jobs", 2, long_lease);
    acquired h = hold(sem, 1);
    server.pause();
    for (const auto type : {asio::cancellation_type::terminal, asio::cancellation_type::partial})
    {
        asio::cancellation_signal signal;
        const std::size_t before = server.unread_bytes();
        auto f = cancellable_status(sem, signal);
        wait_until_written(server, before);
        emit(io, signal, type);
        BOOST_TEST(std::get<0>(wait(f)) == code(asio::error::operation_aborted)); // the server is paused
    }
    asio::cancellation_signal signal;
    const std::size_t before = server.unread_bytes();
    auto ignored = cancellable_status(sem, signal);
    wait_until_written(server, before);
    emit(io, signal, asio::cancellation_type::total);
    server.resume();
    const status_outcome read = wait(ignored);
    BOOST_TEST(!std::get<0>(read));
    BOOST_TEST(std::get<1>(read).held == 1u);
}

// The semaphore may go while its read is pending, not the connection: closing it aborts the read.
BOOST_FIXTURE_TEST_CASE(a_pending_status_read_outlives_its_semaphore_and_is_aborted_by_a_close, fixture)
{
    auto sem = std::make_unique<redis::semaphore>(first, "jobs", 2, long_lease);
    redis::semaphore other(second, "jobs", 2, long_lease);
    acquired h = hold(*sem, 1);
    server.pause();
    std::size_t before = server.unread_bytes();
    auto orphan = sem->async_status(asio::use_future);
    wait_until_written(server, before);
    sem.reset();
    before = server.unread_bytes();
    auto closed = other.async_status(as_status_outcome);
    wait_until_written(server, before);
    second.close();
    BOOST_TEST(std::get<0>(wait(closed)) == code(asio::error::operation_aborted)); // the server is paused
    server.resume();
    BOOST_TEST(wait(orphan).held == 1u);
}

// Reads started at once from several threads through use_future, whose handlers complete on the
// system executor's threads; the semaphore, the connection and the context go as soon as the last
// future is ready.
BOOST_AUTO_TEST_CASE(status_reads_from_a_thread_pool_then_an_immediate_teardown)
{
    redis_server server;
    for (int round = 0; round < 5; ++round)
    {
        auto io = std::make_unique<asio::io_context>();
        auto work =
            std::make_unique<asio::executor_work_guard<asio::io_context::executor_type>>(io->get_executor());
        auto threads = std::make_unique<asio_sync::test::io_threads>(*io, 2);
        auto conn = std::make_unique<redis::connection>(*io, options_for(server.port()));
        auto sem = std::make_unique<redis::semaphore>(*conn, "pool", 3, lease);
        constexpr std::size_t callers = 4, reads = 25;
        std::vector<std::vector<std::future<redis::semaphore_status>>> results(callers);
        std::vector<std::thread> pool;
        for (std::size_t c = 0; c < callers; ++c)
            pool.emplace_back([&, c] {
                for (std::size_t i = 0; i < reads; ++i)
                    results[c].push_back(sem->async_status(asio::use_future));
            });
        for (std::thread& t : pool)
            t.join();
        std::size_t read = 0;
        for (auto& of_one : results)
            for (auto& f : of_one)
                read += wait(f).capacity == 0u ? 1u : 0u;
        sem.reset();
        conn.reset();
        work.reset();
        threads.reset();
        io.reset();
        BOOST_TEST(read == callers * reads);
    }
}

BOOST_AUTO_TEST_SUITE_END()
