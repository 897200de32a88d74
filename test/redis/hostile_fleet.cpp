// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#define BOOST_TEST_MODULE redis_hostile_fleet

// Sentinel discovery, durable grants and fenced writes used as a hostile user would, on real
// processes (redis-server, sentinels, a proxy; a scripted peer where a sentinel must misbehave),
// judged by their documented promises only. Outcomes are counted exactly: every operation
// completes once, with the outcome the documentation gives; no duration is a pass criterion.

#include <asio_sync/redis/fenced_set.hpp>
#include <asio_sync/redis/semaphore.hpp>

#include "support/io_threads.hpp"
#include "support/redis_client.hpp"
#include "support/redis_sentinel.hpp"
#include "support/redis_server.hpp"
#include "support/semaphore_fleet.hpp"
#include "support/semaphore_timeline.hpp"
#include "support/tcp_proxy.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/asio/write.hpp>
#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

BOOST_AUTO_TEST_SUITE(redis_hostile_fleet)

namespace {

namespace asio = boost::asio;
namespace redis = asio_sync::redis;
using asio_sync::test::eventually;
using asio_sync::test::is_ready;
using asio_sync::test::options_for;
using asio_sync::test::redis_sentinel_set;
using asio_sync::test::redis_server;
using asio_sync::test::tcp_proxy;
using asio_sync::test::wait;
using namespace std::chrono_literals;

// An acquire's outcome: its error and the permits it holds.
struct granted
{
    boost::system::error_code ec;
    std::size_t count = 0;
};

auto as_granted()
{
    return asio::use_future([](boost::system::error_code ec, redis::semaphore::permit p) {
        return granted{ec, p.count()};
    });
}

// An io_context run by threads of its own, kept busy until the fixture goes.
struct context
{
    explicit context(int threads = 1) : work(asio::make_work_guard(io)), runners(io, threads) {}

    ~context() { work.reset(); }

    asio::io_context io;
    asio::executor_work_guard<asio::io_context::executor_type> work;
    asio_sync::test::io_threads runners;
};

redis::semaphore_options lease_of(std::chrono::milliseconds lease, unsigned durable_replicas)
{
    redis::semaphore_options o;
    o.lease_duration = lease;
    o.durable_replicas = durable_replicas;
    return o;
}

// Whether the fleet-wide semaphore of `sem` holds no permit and queues nobody, as Redis says now.
bool idle(redis::semaphore& sem)
{
    auto status = sem.async_status(asio::use_future);
    const redis::semaphore_status st = wait(status);
    return st.held == 0 && st.queued == 0;
}

// A replica of `primary`, started and in sync.
std::unique_ptr<redis_server> replica_of(const redis_server& primary)
{
    redis_server::options o;
    o.extra_args = {"--replicaof", "127.0.0.1", std::to_string(primary.port())};
    auto replica = std::make_unique<redis_server>(o);
    eventually([&] {
        return replica->command({"INFO", "replication"}).find("master_link_status:up") != std::string::npos;
    });
    return replica;
}

// `step` run again and again on a thread of its own until the end of the scope (or stop()).
class background_loop
{
public:
    template <class Step>
    explicit background_loop(Step step)
        : thread_([this, step]() mutable {
              while (on_.load())
                  step();
          })
    {
    }

    background_loop(const background_loop&) = delete;
    background_loop& operator=(const background_loop&) = delete;

    ~background_loop() { stop(); }

    void stop()
    {
        on_ = false;
        if (thread_.joinable())
            thread_.join();
    }

private:
    std::atomic<bool> on_{true};
    std::thread thread_;
};

// A command's outcome: its error and its reply's text.
struct executed
{
    boost::system::error_code ec;
    std::string text;
};

auto as_executed()
{
    return asio::use_future([](boost::system::error_code ec, redis::reply r) {
        return executed{ec, r.text};
    });
}

// A number of INFO `section` on `server`: the value of `field`.
long info_number(const redis_server& server, const std::string& section, const std::string& field)
{
    const std::string info = server.command({"INFO", section});
    const std::size_t at = info.find(field);
    return at == std::string::npos ? 0L : std::stol(info.substr(at + field.size()));
}

// How many times `server` has run `command` (lower case), from INFO commandstats.
long calls_of(const redis_server& server, const std::string& command)
{
    return info_number(server, "commandstats", "cmdstat_" + command + ":calls=");
}

// SENTINEL GET-MASTER-ADDR-BY-NAME's answer naming `host`:`port`, as RESP.
std::string address_reply(const std::string& host, const std::string& port)
{
    return "*2\r\n$" + std::to_string(host.size()) + "\r\n" + host + "\r\n$" + std::to_string(port.size()) +
           "\r\n" + port + "\r\n";
}

// A loopback port where nothing listens: a socket bound to it and never listening, held for the
// object's life, so that no other process (a server another test starts) can take the port
// meanwhile; a connection to it is refused.
class refused_port
{
public:
    refused_port() : socket_(io_)
    {
        socket_.open(asio::ip::tcp::v4());
        socket_.bind({asio::ip::make_address_v4("127.0.0.1"), 0});
    }

    std::uint16_t number() const { return socket_.local_endpoint().port(); }

private:
    asio::io_context io_;
    asio::ip::tcp::socket socket_;
};

// A peer that plays a sentinel that misbehaves: every connection it accepts gets, after the
// first bytes it sends, the answer set at that moment (any bytes), then is read until it hangs
// up. It counts the questions for the primary's address it answered (not the connection's
// subscriptions to +switch-master). Runs on a thread of its own.
class scripted_sentinel
{
public:
    scripted_sentinel() : acceptor_(io_, {asio::ip::make_address_v4("127.0.0.1"), 0})
    {
        accept();
        thread_ = std::thread([this] { io_.run(); });
    }

    scripted_sentinel(const scripted_sentinel&) = delete;
    scripted_sentinel& operator=(const scripted_sentinel&) = delete;

    ~scripted_sentinel()
    {
        io_.stop();
        thread_.join();
    }

    std::uint16_t port() const { return acceptor_.local_endpoint().port(); }

    void answer(std::string bytes)
    {
        const std::lock_guard lock(mutex_);
        answer_ = std::move(bytes);
    }

    std::size_t asked() const { return asked_.load(); }

private:
    using tcp = asio::ip::tcp;
    using buffer_type = std::array<char, 1024>;

    void accept()
    {
        acceptor_.async_accept([this](boost::system::error_code ec, tcp::socket socket) {
            if (ec)
                return;
            serve(std::make_shared<tcp::socket>(std::move(socket)));
            accept();
        });
    }

    void serve(std::shared_ptr<tcp::socket> socket)
    {
        auto buffer = std::make_shared<buffer_type>();
        socket->async_read_some(asio::buffer(*buffer), [this, socket, buffer](boost::system::error_code ec,
                                                                              std::size_t n) {
            if (ec)
                return;
            std::shared_ptr<const std::string> text;
            {
                const std::lock_guard lock(mutex_);
                text = std::make_shared<const std::string>(answer_);
            }
            if (std::string_view(buffer->data(), n).find("GET-MASTER-ADDR-BY-NAME") != std::string_view::npos)
                ++asked_;
            asio::async_write(
                *socket, asio::buffer(*text),
                [socket, buffer, text](boost::system::error_code, std::size_t) { drain(socket, buffer); });
        });
    }

    static void drain(std::shared_ptr<tcp::socket> socket, std::shared_ptr<buffer_type> buffer)
    {
        socket->async_read_some(asio::buffer(*buffer),
                                [socket, buffer](boost::system::error_code ec, std::size_t) {
                                    if (!ec)
                                        drain(socket, buffer);
                                });
    }

    asio::io_context io_;
    tcp::acceptor acceptor_;
    std::thread thread_;
    std::mutex mutex_;
    std::string answer_ = "*-1\r\n";
    std::atomic<std::size_t> asked_{0};
};

} // namespace

// ---- durable grants: errors are errors

// An acquire on a closed connection completes with `closed` ("the connection was closed before the
// acquire was decided"), with durable grants as without: a call that failed needs no WAIT.
BOOST_AUTO_TEST_CASE(an_acquire_on_a_closed_connection_fails_with_closed_in_either_mode)
{
    redis_server server;
    for (const unsigned durable : {0u, 1u})
    {
        BOOST_TEST_CONTEXT("durable_replicas " << durable)
        {
            context ctx;
            redis::connection conn(ctx.io, options_for(server.port()));
            redis::semaphore sem(conn, "closed-" + std::to_string(durable), 1, lease_of(1000ms, durable));
            conn.close();
            // Once a command issued after the close has completed, the close has run.
            auto after = conn.async_execute(
                {"PING"}, asio::use_future([](boost::system::error_code ec, redis::reply) { return ec; }));
            BOOST_TEST((wait(after) == asio_sync::error::closed));
            auto waiting = sem.async_acquire_permit(1, as_granted());
            auto trying = sem.async_try_acquire_permit(1, as_granted());
            const granted w = wait(waiting);
            const granted t = wait(trying);
            BOOST_TEST((w.ec == asio_sync::error::closed));
            BOOST_TEST((t.ec == asio_sync::error::closed));
            BOOST_TEST(w.count + t.count == 0u);
        }
    }
}

// A wrong password fails an acquire with auth_failed, with durable grants as without.
BOOST_AUTO_TEST_CASE(an_acquire_with_a_wrong_password_fails_with_auth_failed_in_either_mode)
{
    redis_server::options o;
    o.password = "right";
    redis_server server(o);
    for (const unsigned durable : {0u, 1u})
    {
        BOOST_TEST_CONTEXT("durable_replicas " << durable)
        {
            context ctx;
            redis::connection_options options = options_for(server.port());
            options.password = "wrong";
            redis::connection conn(ctx.io, options);
            redis::semaphore sem(conn, "auth", 1, lease_of(1000ms, durable));
            auto f = sem.async_acquire_permit(1, as_granted());
            const granted g = wait(f);
            BOOST_TEST((g.ec == redis::error::auth_failed));
            BOOST_TEST(g.count == 0u);
            conn.close();
        }
    }
}

// A try that finds no room stores nothing, so there is nothing for the replicas to confirm: with
// too few replicas it still completes, with would_block ("in one round trip; it never queues").
// One that finds room is a grant, which waits for the replicas; cancelled, it completes once and
// gives back what the primary granted.
BOOST_AUTO_TEST_CASE(a_durable_try_without_room_completes_with_too_few_replicas)
{
    redis_server server; // no replica: WAIT 1 never confirms
    context ctx;
    asio::cancellation_signal cancel; // outlives the acquire whose slot it holds
    redis::connection plain(ctx.io, options_for(server.port()));
    redis::connection durable(ctx.io, options_for(server.port()));
    redis::semaphore holder_side(plain, "full", 1, lease_of(2000ms, 0));
    redis::semaphore durable_side(durable, "full", 1, lease_of(2000ms, 1));

    auto held = holder_side.async_acquire_permit(1, asio::use_future);
    redis::semaphore::permit permit = wait(held);
    auto refused = durable_side.async_try_acquire_permit(1, as_granted());
    const granted r = wait(refused);
    BOOST_TEST((r.ec == asio::error::would_block));
    BOOST_TEST(r.count == 0u);

    permit = {};
    eventually([&] { return idle(holder_side); });
    // Cancelled once the primary has granted it and a WAIT has come back short.
    const long waits = calls_of(server, "wait");
    auto unconfirmed =
        durable_side.async_try_acquire_permit(1, asio::bind_cancellation_slot(cancel.slot(), as_granted()));
    eventually([&] { return calls_of(server, "wait") > waits; });
    asio::post(ctx.io, [&] { cancel.emit(asio::cancellation_type::terminal); });
    const granted u = wait(unconfirmed);
    BOOST_TEST((u.ec == asio::error::operation_aborted));
    BOOST_TEST(u.count == 0u);
    eventually([&] { return idle(holder_side); });
    plain.close();
    durable.close();
}

// ---- fenced writes: bad input

// The value key and the fence key are one key: the write would store the fence over the value and
// report it written. Refused with invalid_argument, nothing changed.
BOOST_AUTO_TEST_CASE(a_fenced_write_whose_value_key_is_its_fence_key_is_refused)
{
    redis_server server;
    context ctx;
    redis::connection conn(ctx.io, options_for(server.port()));
    const auto write = [&](const char* k, const char* f, std::uint64_t fence, const char* value) {
        auto done = redis::async_fenced_set(
            conn, k, f, fence, value,
            asio::use_future([](boost::system::error_code ec, std::uint64_t) { return ec; }));
        return wait(done);
    };
    BOOST_TEST((write("{r}:same", "{r}:same", 7, "value") == redis::error::invalid_argument));
    BOOST_TEST(server.command({"EXISTS", "{r}:same"}) == "0");
    server.command({"SET", "{r}:same", "5"}); // looks like a fence
    BOOST_TEST((write("{r}:same", "{r}:same", 7, "value") == redis::error::invalid_argument));
    BOOST_TEST(server.command({"GET", "{r}:same"}) == "5");
    conn.close();
}

// ---- Sentinel: a sentinel that names no usable primary

// The sentinel answers, in turn, an error, bytes that are not RESP, malformed addresses, a port
// where nothing listens, and a replica's address. The command waits through all of them and runs
// nowhere (not even a read on the replica: ROLE comes first); once the sentinel names the primary,
// it runs there, once. (That it knows no such primary fails the command: see
// a_master_name_no_sentinel_knows_fails_the_commands.)
BOOST_AUTO_TEST_CASE(a_sentinel_that_names_no_usable_primary_is_never_used)
{
    redis_server primary;
    primary.command({"SET", "k", "from the primary"});
    const std::unique_ptr<redis_server> replica_server = replica_of(primary);
    redis_server& replica = *replica_server;
    BOOST_TEST(replica.command({"GET", "k"}) == "from the primary"); // a read would succeed there
    const long replica_reads = calls_of(replica, "get");

    scripted_sentinel sentinel;
    context ctx;
    redis::connection_options o = options_for(0);
    o.sentinels = {{"127.0.0.1", sentinel.port()}};
    o.master_name = "primary";
    const std::string replica_port = std::to_string(replica.port());
    const refused_port nothing_listens;
    const std::vector<std::pair<const char*, std::string>> answers = {
        {"an error", "-ERR No such master with that name\r\n"},
        {"bytes that are not RESP", "hello\r\n"},
        {"a blob error that is not one", "!garbage\r\n"},
        {"one element", "*1\r\n$9\r\n127.0.0.1\r\n"},
        {"an empty host", address_reply("", replica_port)},
        {"port 0", address_reply("127.0.0.1", "0")},
        {"port 70000", address_reply("127.0.0.1", "70000")},
        {"a port that is not a number", address_reply("127.0.0.1", "63 79")},
        {"a host that does not resolve", address_reply("no-such-host.invalid", replica_port)},
        {"a port where nothing listens",
         address_reply("127.0.0.1", std::to_string(nothing_listens.number()))},
        {"a replica's address", address_reply("127.0.0.1", replica_port)},
    };
    sentinel.answer(answers.front().second);
    redis::connection conn(ctx.io, o);
    auto read = conn.async_execute({"GET", "k"}, as_executed());
    for (const auto& [what, bytes] : answers)
    {
        BOOST_TEST_CONTEXT(what)
        {
            sentinel.answer(bytes);
            const std::size_t asked = sentinel.asked();
            eventually([&] { return sentinel.asked() >= asked + 2; }); // a whole attempt with it
            BOOST_TEST(!is_ready(read));
        }
    }
    eventually([&] { return calls_of(replica, "role") >= 1; });
    BOOST_TEST(calls_of(replica, "get") == replica_reads);
    BOOST_TEST(!is_ready(read));

    sentinel.answer(address_reply("127.0.0.1", std::to_string(primary.port())));
    const executed e = wait(read);
    BOOST_TEST(!e.ec);
    BOOST_TEST(e.text == "from the primary");
    BOOST_TEST(calls_of(primary, "get") == 1);
    conn.close();
}

namespace {

// Options of a real sentinel that watches `primary` under the name "primary", quorum 1.
redis_server::options sentinel_of(const redis_server& primary)
{
    redis_server::options o;
    o.sentinel_config = "sentinel monitor primary 127.0.0.1 " + std::to_string(primary.port()) + " 1\n";
    return o;
}

// A stale sentinel that names the server on `named`, listed before a real one that watches
// `primary`: an INCR through the connection runs on the primary, once, after the stale sentinel
// was asked.
void expect_the_stale_sentinel_passed_over(const redis_server& primary, std::uint16_t named,
                                           std::chrono::milliseconds connect_timeout)
{
    redis_server good(sentinel_of(primary));
    scripted_sentinel stale;
    stale.answer(address_reply("127.0.0.1", std::to_string(named)));
    context ctx;
    redis::connection_options o = options_for(0);
    o.sentinels = {{"127.0.0.1", stale.port()}, {"127.0.0.1", good.port()}};
    o.master_name = "primary";
    o.connect_timeout = connect_timeout;
    redis::connection conn(ctx.io, o);
    auto f = conn.async_execute({"INCR", "k"}, as_executed());
    BOOST_TEST(!wait(f).ec);
    BOOST_TEST(primary.command({"GET", "k"}) == "1");
    BOOST_TEST(stale.asked() >= 1u);
    conn.close();
}

} // namespace

// A sentinel whose view is stale keeps naming a replica. The attempt after the replica's ROLE
// refused starts from the next sentinel, which names the primary (before the fix every attempt
// began again with the stale one, and the command waited for ever).
BOOST_AUTO_TEST_CASE(a_sentinel_that_names_a_replica_does_not_pin_the_connection)
{
    redis_server primary;
    const std::unique_ptr<redis_server> replica = replica_of(primary);
    expect_the_stale_sentinel_passed_over(primary, replica->port(),
                                          redis::connection_options().connect_timeout);
}

// A sentinel whose view is stale names a server that is dead, or hung (SIGSTOP). The attempt that
// never got up there makes the next one start from the next sentinel, which names the primary
// (before the fix every attempt began again with the stale one, and the command waited for ever).
BOOST_AUTO_TEST_CASE(a_sentinel_that_names_a_dead_or_hung_server_does_not_pin_the_connection)
{
    for (const bool hung : {false, true})
    {
        BOOST_TEST_CONTEXT((hung ? "hung" : "dead"))
        {
            redis_server primary;
            redis_server old_primary;
            if (hung)
                old_primary.pause();
            else
                old_primary.kill();
            // The connect timeout bounds the attempt on the hung server.
            expect_the_stale_sentinel_passed_over(primary, old_primary.port(), 500ms);
        }
    }
}

// Sentinels that do not know the name given (misspelt): the command fails with unknown_master
// instead of waiting for ever, and runs nowhere; so does one that says so with a nil string.
BOOST_AUTO_TEST_CASE(a_master_name_no_sentinel_knows_fails_the_commands)
{
    {
        scripted_sentinel nil_string;
        nil_string.answer("$-1\r\n");
        context ctx;
        redis::connection_options o = options_for(0);
        o.sentinels = {{"127.0.0.1", nil_string.port()}};
        o.master_name = "primary";
        redis::connection conn(ctx.io, o);
        auto f = conn.async_execute({"INCR", "k"}, as_executed());
        BOOST_TEST((wait(f).ec == redis::error::unknown_master));
        conn.close();
    }
    redis_server primary;
    redis_server first(sentinel_of(primary));
    redis_server second(sentinel_of(primary));
    context ctx;
    redis::connection_options o = options_for(0);
    o.sentinels = {{"127.0.0.1", first.port()}, {"127.0.0.1", second.port()}};
    o.master_name = "primray";
    redis::connection conn(ctx.io, o);
    auto f = conn.async_execute({"INCR", "k"}, as_executed());
    BOOST_TEST((wait(f).ec == redis::error::unknown_master));
    BOOST_TEST(primary.command({"GET", "k"}) == "(nil)");
    conn.close();
}

// ---- Sentinel: AUTH to the sentinels

// A sentinel with requirepass: the right password (with and without the user `default`) finds the
// primary; a wrong one, none, or an unknown user never does, and the command fails with
// auth_failed, as with a data node that refuses the credentials, and runs nowhere (before the fix
// it waited, unanswered, until cancelled).
BOOST_AUTO_TEST_CASE(sentinel_auth_right_and_wrong)
{
    redis_server primary;
    redis_server::options sentinel_options = sentinel_of(primary);
    sentinel_options.password = "sentinel-secret";
    redis_server sentinel(sentinel_options);

    struct row
    {
        const char* what;
        std::string user;
        std::string password;
        bool finds_the_primary;
    };
    const row rows[] = {
        {"the right password", "", "sentinel-secret", true},
        {"the user default and the right password", "default", "sentinel-secret", true},
        {"a wrong password", "", "wrong", false},
        {"no password", "", "", false},
        {"an unknown user", "nobody", "sentinel-secret", false},
    };
    long ran = 0;
    for (const row& r : rows)
    {
        BOOST_TEST_CONTEXT(r.what)
        {
            context ctx;
            redis::connection_options o = options_for(0);
            o.sentinels = {{"127.0.0.1", sentinel.port()}};
            o.master_name = "primary";
            o.sentinel_user = r.user;
            o.sentinel_password = r.password;
            redis::connection conn(ctx.io, o);
            auto f = conn.async_execute({"INCR", "k"}, as_executed());
            const executed e = wait(f);
            if (r.finds_the_primary)
            {
                BOOST_TEST(!e.ec);
                ++ran;
            }
            else
                BOOST_TEST((e.ec == redis::error::auth_failed));
            conn.close();
        }
    }
    BOOST_TEST(primary.command({"GET", "k"}) == std::to_string(ran));
}

// ---- Sentinel: closed or destroyed in the middle of discovery

// A connection closed, or destroyed, while it asks a sentinel that never answers, or while it sets
// up on a primary that never answers: every command issued from a pool of threads completes
// exactly once, with operation_aborted, never inside close() or the destructor.
BOOST_AUTO_TEST_CASE(a_connection_closed_or_destroyed_during_discovery_completes_every_command_once)
{
    redis_server primary;
    tcp_proxy silent_sentinel(primary.port(), {}, tcp_proxy::mode::silent);
    tcp_proxy silent_primary(primary.port(), {}, tcp_proxy::mode::silent);
    scripted_sentinel naming_the_silent_primary;
    naming_the_silent_primary.answer(address_reply("127.0.0.1", std::to_string(silent_primary.port())));

    constexpr int commands = 100;
    for (const bool destroy : {false, true})
    {
        for (const bool asking : {true, false})
        {
            BOOST_TEST_CONTEXT((destroy ? "destroyed" : "closed")
                               << (asking ? " while asking a sentinel" : " while setting up on the primary"))
            {
                std::atomic<int> issued{0}, completed{0}, aborted{0}, inside{0};
                std::atomic<bool> ending{false};
                context ctx(4);
                redis::connection_options o = options_for(0);
                o.sentinels = {
                    {"127.0.0.1", asking ? silent_sentinel.port() : naming_the_silent_primary.port()}};
                o.master_name = "primary";
                o.connect_timeout = 60s; // the attempt is still under way when the connection goes
                auto conn = std::make_unique<redis::connection>(ctx.io, o);
                const std::thread::id ender = std::this_thread::get_id();
                for (int i = 0; i < commands; ++i)
                    asio::post(ctx.io, [&, c = conn.get()] {
                        c->async_execute({"INCR", "k"}, [&](boost::system::error_code ec, redis::reply) {
                            if (ending.load() && std::this_thread::get_id() == ender)
                                ++inside;
                            aborted += ec == asio::error::operation_aborted ? 1 : 0;
                            ++completed;
                        });
                        ++issued;
                    });
                eventually([&] { return issued.load() == commands; });
                if (asking)
                    eventually([&] { return silent_sentinel.accepted() >= 1; });
                else
                    eventually([&] { return silent_primary.accepted() >= 1; });
                ending = true;
                if (destroy)
                    conn.reset();
                else
                    conn->close();
                ending = false;
                eventually([&] { return completed.load() >= commands; });
                BOOST_TEST(completed.load() == commands);
                BOOST_TEST(aborted.load() == commands);
                BOOST_TEST(inside.load() == 0);
            }
        }
    }
    BOOST_TEST(primary.command({"GET", "k"}) == "(nil)");
}

// ---- durable grants: the semaphore or its connection gone while WAIT is pending

// A durable semaphore on a server without replicas (every WAIT waits its whole time): acquires of
// each kind issued from a pool of threads, then the semaphore destroyed, or its connection
// closed, while a WAIT is pending. Every acquire completes exactly once, granted never; then the
// fleet-wide semaphore holds nothing and queues nobody (given back at once after a destruction,
// lapsing within a lease after a close).
BOOST_AUTO_TEST_CASE(a_durable_semaphore_destroyed_or_closed_while_wait_is_pending)
{
    redis_server server;
    for (const bool close_connection : {false, true})
    {
        BOOST_TEST_CONTEXT((close_connection ? "the connection closed" : "the semaphore destroyed"))
        {
            const std::string name = close_connection ? "durable-closed" : "durable-destroyed";
            constexpr int acquires = 30;
            std::atomic<int> issued{0}, completed{0}, expected{0}, would_block{0}, permits{0};
            context ctx(4);
            redis::connection conn(ctx.io, options_for(server.port()));
            redis::connection observer_link(ctx.io, options_for(server.port()));
            redis::semaphore observer(observer_link, name, 2, lease_of(1500ms, 0));
            auto sem = std::make_unique<redis::semaphore>(conn, name, 2, lease_of(1500ms, 1));
            const boost::system::error_code why = close_connection
                                                      ? boost::system::error_code(asio_sync::error::closed)
                                                      : asio::error::operation_aborted;
            const auto handler = [&](boost::system::error_code ec, redis::semaphore::permit p) {
                permits += static_cast<int>(p.count());
                expected += ec == why ? 1 : 0;
                would_block += ec == asio::error::would_block ? 1 : 0;
                ++completed;
            };
            for (int i = 0; i < acquires; ++i)
                asio::post(ctx.io, [&, i, s = sem.get()] {
                    if (i % 3 == 0)
                        s->async_acquire_permit(1, handler);
                    else if (i % 3 == 1)
                        s->async_acquire_permit_for(1, 60s, handler);
                    else
                        s->async_try_acquire_permit(1, handler);
                    ++issued;
                });
            eventually([&] { return issued.load() == acquires; });
            eventually([&] {
                return server.command({"INFO", "clients"}).find("blocked_clients:1") != std::string::npos;
            });
            if (close_connection)
                conn.close();
            else
                sem.reset();
            eventually([&] { return completed.load() >= acquires; });
            BOOST_TEST(completed.load() == acquires);
            BOOST_TEST(permits.load() == 0);
            BOOST_TEST(expected.load() + would_block.load() == acquires);
            BOOST_TEST_MESSAGE(expected.load() << " completed with " << why.message() << ", "
                                               << would_block.load() << " tries with would_block");
            eventually([&] { return idle(observer); });
            sem.reset();
            observer_link.close();
            conn.close();
        }
    }
}

// ---- durable grants: a busy fleet on a thread pool across a failover, long holders renewing

namespace fleet {

using clock_type = std::chrono::steady_clock;
using key = redis::detail::semaphore_key;

constexpr auto as_result = asio::as_tuple(asio::use_awaitable);
constexpr std::size_t capacity = 3;

using asio_sync::test::hold;

struct record
{
    std::mutex mutex;
    std::vector<hold> holds;
    std::size_t started = 0, completed = 0, failed = 0;
    std::vector<std::shared_ptr<redis::semaphore::permit>> long_permits;
};

// When the loss of a permit was reported, if it was: set by its loss handler, read from any thread.
class loss_time
{
public:
    explicit loss_time(redis::semaphore::permit& p)
    {
        p.async_wait_lost([at = at_](boost::system::error_code lost) {
            if (lost != asio::error::operation_aborted)
                at->store(clock_type::now().time_since_epoch().count());
        });
    }

    std::optional<clock_type::time_point> get() const
    {
        const clock_type::rep at = at_->load();
        return at == 0 ? std::nullopt : std::optional(clock_type::time_point(clock_type::duration(at)));
    }

    // Ends `h` now, or when the loss was reported if that came first.
    void end(hold& h) const
    {
        h.ended = clock_type::now();
        if (const auto lost = get())
        {
            h.ended = std::min(h.ended, *lost);
            h.lost = true;
        }
    }

private:
    std::shared_ptr<std::atomic<clock_type::rep>> at_ = std::make_shared<std::atomic<clock_type::rep>>(0);
};

// Ends the hold `h` at its release, or at the loss if that was reported first, and records it.
asio::awaitable<void> end_hold(redis::semaphore::permit& p, hold h, const loss_time& lost, record& log)
{
    lost.end(h);
    auto [released] = co_await p.async_release(as_result);
    h.lost = h.lost || released;
    const std::lock_guard lock(log.mutex);
    log.holds.push_back(h);
}

// Acquires, holds for `hold_for` (or, with `until`, until it is set), releases; again until `stop`.
asio::awaitable<void> worker(redis::semaphore& sem, record& log, const std::atomic<bool>& stop,
                             clock_type::duration hold_for, const std::atomic<bool>* until)
{
    asio::steady_timer timer(co_await asio::this_coro::executor);
    while (!stop.load())
    {
        {
            const std::lock_guard lock(log.mutex);
            ++log.started;
        }
        auto [ec, permit] = co_await sem.async_acquire_permit_for(1, 30s, as_result);
        const auto granted = clock_type::now();
        {
            const std::lock_guard lock(log.mutex);
            ++log.completed;
            log.failed += ec ? 1u : 0u;
        }
        if (ec)
        {
            timer.expires_after(20ms);
            co_await timer.async_wait(as_result);
            continue;
        }
        const loss_time lost(permit);
        auto shared = std::make_shared<redis::semaphore::permit>(std::move(permit));
        if (until)
        {
            const std::lock_guard lock(log.mutex);
            log.long_permits.push_back(shared);
        }
        do
        {
            timer.expires_after(hold_for);
            co_await timer.async_wait(as_result);
        } while (until && !until->load() && !lost.get());
        co_await end_hold(*shared, hold{granted, {}, shared->fencing_token(), false}, lost, log);
    }
}

// KEYS: meta, deadlines. ARGV: a fence. {"live", deadline - now} for the holder of that fence, on
// the server's clock; {"gone", 0} when the server has no holder with it.
constexpr const char* lease_probe_lua = R"(
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
    if string.sub(all[i], 1, 1) == '#' and string.match(all[i + 1], ':(%d+)$') == ARGV[1] then
        local d = redis.call('ZSCORE', KEYS[2], string.sub(all[i], 2))
        if d then
            return {'live', tonumber(d) - now}
        end
    end
end
return {'gone', 0}
)";

// Whether `p`, while it claims validity, claims it beyond the end of its lease on `primary`: its
// expires_at() read before the probe is later than the latest instant the server's deadline can
// be on this clock (the reply's arrival plus the time left, the server's clock read in whole
// milliseconds). A permit that claims nothing is not checked.
bool beyond_the_server(redis_server& primary, const std::string& name, const redis::semaphore::permit& p)
{
    if (p.valid_for() == clock_type::duration::zero())
        return false;
    const clock_type::time_point expires = p.expires_at();
    const redis::detail::semaphore_script s(name);
    const redis_server::reply r = primary.execute({"EVAL", lease_probe_lua, "2", s.key(key::meta),
                                                   s.key(key::deadlines), std::to_string(p.fencing_token())});
    const clock_type::time_point arrived = clock_type::now();
    BOOST_REQUIRE(r.type == redis_server::reply::kind::array);
    const clock_type::time_point latest_end =
        r.elements.at(0).text == "live" ? arrived + std::chrono::milliseconds(r.elements.at(1).integer + 1)
                                        : arrived;
    if (expires <= latest_end)
        return false;
    const double by = std::chrono::duration<double, std::milli>(expires - latest_end).count();
    BOOST_TEST_MESSAGE("fence " << p.fencing_token() << ": expires_at is " << by
                                << " ms beyond the server's lease (" << r.elements.at(0).text << ")");
    return true;
}

} // namespace fleet

// Three connections on a pool of four threads, through the sentinels, with durable grants: two
// long holders that renew across the failover and a dozen short ones, while the primary is killed,
// or frozen (SIGSTOP) until the sentinels promote a replica and then resumed (it comes back as a
// replica).
// Every acquire completes exactly once; at no instant do more than `capacity` holders believe they
// hold a permit; fences are unique; and no permit that claims validity claims it beyond its lease
// on the primary that decides: the first before the failover, the promoted replica after it.
BOOST_TEST_DECORATOR(*boost::unit_test::label("long"))
BOOST_DATA_TEST_CASE(a_durable_fleet_on_a_thread_pool_across_a_failover,
                     boost::unit_test::data::make({false, true}), kill_primary)
{
    using namespace fleet;
    BOOST_TEST_MESSAGE("the primary " << (kill_primary ? "killed" : "frozen"));
    redis_sentinel_set set;
    record log;
    std::atomic<bool> stop{false}, end_long_holds{false};
    context ctx(4);
    const std::string name = "fleet";
    std::vector<std::unique_ptr<redis::connection>> conns;
    std::vector<std::unique_ptr<redis::semaphore>> sems;
    for (int i = 0; i < 3; ++i)
    {
        conns.push_back(std::make_unique<redis::connection>(ctx.io, set.options()));
        sems.push_back(
            std::make_unique<redis::semaphore>(*conns.back(), name, capacity, lease_of(4000ms, 1)));
    }
    std::vector<std::future<void>> done;
    for (std::size_t i = 0; i < 2; ++i)
        done.push_back(
            asio::co_spawn(ctx.io, worker(*sems[i], log, stop, 50ms, &end_long_holds), asio::use_future));
    for (std::size_t i = 0; i < 12; ++i)
        done.push_back(
            asio::co_spawn(ctx.io, worker(*sems[i % 3], log, stop, 20ms, nullptr), asio::use_future));
    const auto count_holds = [&] {
        const std::lock_guard lock(log.mutex);
        return log.holds.size();
    };
    const auto long_permits = [&] {
        const std::lock_guard lock(log.mutex);
        return log.long_permits;
    };
    std::size_t beyond = 0, probes = 0;
    const auto probe = [&](redis_server& primary) {
        for (const auto& p : long_permits())
        {
            ++probes;
            beyond += beyond_the_server(primary, name, *p) ? 1u : 0u;
        }
    };

    eventually([&] { return count_holds() >= 30 && long_permits().size() == 2; });
    const std::uint16_t old_port = set.primary_port();
    redis_server& old_primary = set.server(set.index_of(old_port));
    for (int i = 0; i < 20; ++i)
        probe(old_primary);
    if (kill_primary)
        old_primary.kill();
    else
        old_primary.pause();
    set.wait_for_failover_from(old_port);
    redis_server& new_primary = set.server(set.index_of(set.primary_port()));
    for (int i = 0; i < 40; ++i)
        probe(new_primary);
    if (!kill_primary)
        old_primary.resume(); // the sentinels turn it into a replica of the new primary
    const std::size_t before = count_holds();
    eventually([&] { return count_holds() >= before + 30; });
    for (int i = 0; i < 20; ++i)
        probe(new_primary);
    end_long_holds = true;
    stop = true;
    for (auto& f : done)
        wait(f);
    log.long_permits.clear();
    sems.clear();
    for (auto& c : conns)
        c->close();

    const std::lock_guard lock(log.mutex);
    BOOST_TEST(log.started == log.completed);
    const std::size_t lost = asio_sync::test::check_unique_fences(log.holds);
    BOOST_TEST(asio_sync::test::peak(log.holds) <= capacity);
    BOOST_TEST(beyond == 0u);
    BOOST_TEST_MESSAGE(log.holds.size() << " holds (" << lost << " lost), " << log.failed
                                        << " acquires failed, " << probes << " lease probes");
}

// ---- durable grants: lost replies and a dead link, through the sentinels

// The sentinel names a proxy in front of the primary. Durable acquires issued from a pool of
// threads while the proxy drops every reply (the calls run; the link is then found dead), and
// while it freezes the link: each completes exactly once, granted, and the server holds exactly
// the permits granted: a replay never grants twice.
BOOST_AUTO_TEST_CASE(durable_acquires_replayed_after_lost_replies_and_a_dead_link_are_granted_once)
{
    redis_server primary;
    const std::unique_ptr<redis_server> replica = replica_of(primary);
    tcp_proxy proxy(primary.port());
    scripted_sentinel sentinel;
    sentinel.answer(address_reply("127.0.0.1", std::to_string(proxy.port())));
    std::mutex mutex;
    std::vector<redis::semaphore::permit> permits;
    std::atomic<int> completed{0}, failed{0};
    context ctx(4);
    redis::connection_options o = options_for(0);
    o.sentinels = {{"127.0.0.1", sentinel.port()}};
    o.master_name = "primary";
    o.health_check_interval = 200ms;
    o.connect_timeout = 2000ms;
    redis::connection conn(ctx.io, o);
    redis::connection observer_link(ctx.io, options_for(primary.port()));
    const std::string name = "replayed";
    redis::semaphore sem(conn, name, 100, lease_of(4000ms, 1));
    redis::semaphore observer(observer_link, name, 100, lease_of(4000ms, 0));
    const auto held_on_the_server = [&] {
        auto status = observer.async_status(asio::use_future);
        return wait(status).held;
    };

    const auto acquire_batch = [&](int count) {
        for (int i = 0; i < count; ++i)
            asio::post(ctx.io, [&] {
                sem.async_acquire_permit(1, [&](boost::system::error_code ec, redis::semaphore::permit p) {
                    failed += ec ? 1 : 0;
                    {
                        const std::lock_guard lock(mutex);
                        permits.push_back(std::move(p));
                    }
                    ++completed;
                });
            });
    };
    // One acquire first: the link is up, the library loaded, the eviction policy checked.
    acquire_batch(1);
    eventually([&] { return completed.load() == 1; });

    const long sent_before_drop = calls_of(primary, "fcall");
    proxy.drop_replies();
    acquire_batch(20);
    eventually([&] { return calls_of(primary, "fcall") >= sent_before_drop + 20; });
    proxy.cut(); // relays normally again
    eventually([&] { return completed.load() >= 21; });

    const long sent_before_freeze = calls_of(primary, "fcall");
    proxy.freeze();
    acquire_batch(20);
    eventually([&] { return completed.load() >= 41; });

    BOOST_TEST(completed.load() == 41);
    BOOST_TEST(failed.load() == 0);
    BOOST_TEST(held_on_the_server() == 41u);
    BOOST_TEST_MESSAGE("calls of the library: "
                       << sent_before_freeze - sent_before_drop << " while replies were dropped, "
                       << calls_of(primary, "fcall") - sent_before_freeze << " around the frozen link");
    {
        const std::lock_guard lock(mutex);
        permits.clear();
    }
    eventually([&] { return held_on_the_server() == 0u; });
    observer_link.close();
    conn.close();
}

// ---- durable grants: cancellation racing confirmation

// Sixty durable acquires from a pool of threads, each cancelled at a random moment (before it is
// sent, while its call or its WAIT is in flight, after its grant), while the only replica is
// frozen and resumed in turn so that some confirmations come late and some never. Each completes
// exactly once; at no instant do more than `capacity` believe they hold; and once all is given
// back, the server holds nothing and queues nobody.
BOOST_AUTO_TEST_CASE(durable_acquires_cancelled_at_random_moments_lose_nothing)
{
    using namespace fleet;
    redis_server primary;
    const std::unique_ptr<redis_server> replica_server = replica_of(primary);
    redis_server& replica = *replica_server;
    constexpr int acquires = 60;
    record log;
    std::atomic<int> completed{0}, granted_count{0}, aborted{0}, other{0};
    std::vector<std::unique_ptr<asio::cancellation_signal>> signals;
    for (int i = 0; i < acquires; ++i)
        signals.push_back(std::make_unique<asio::cancellation_signal>());
    context ctx(4);
    redis::connection conn(ctx.io, options_for(primary.port()));
    redis::connection observer_link(ctx.io, options_for(primary.port()));
    const std::string name = "cancelled";
    redis::semaphore sem(conn, name, capacity, lease_of(2000ms, 1));
    redis::semaphore observer(observer_link, name, capacity, lease_of(2000ms, 0));

    // The replica frozen and resumed in turn (scenario steps: outcomes are counted, not timed).
    std::optional<background_loop> toggler(std::in_place, [&replica, frozen = false]() mutable {
        if (frozen)
            replica.resume();
        else
            replica.pause();
        frozen = !frozen;
        std::this_thread::sleep_for(70ms);
    });
    std::mt19937 random(20261126);
    for (int i = 0; i < acquires; ++i)
    {
        // The acquire, its completion and its cancellation on one strand: a signal and its slot
        // are not thread-safe.
        asio::cancellation_signal& signal = *signals[static_cast<std::size_t>(i)];
        const auto strand = asio::make_strand(ctx.io);
        asio::post(strand, [&, strand] {
            sem.async_acquire_permit(
                1, asio::bind_cancellation_slot(
                       signal.slot(), asio::bind_executor(strand, [&](boost::system::error_code ec,
                                                                      redis::semaphore::permit p) {
                           const auto at = clock_type::now();
                           if (!ec)
                           {
                               ++granted_count;
                               // Held for 5 ms; the belief ends at the release, or at the loss.
                               const loss_time lost(p);
                               auto held = std::make_shared<redis::semaphore::permit>(std::move(p));
                               auto timer = std::make_shared<asio::steady_timer>(ctx.io, 5ms);
                               timer->async_wait([&log, timer, held, lost, at](boost::system::error_code) {
                                   hold h{at, {}, held->fencing_token(), false};
                                   lost.end(h);
                                   held->async_release([](boost::system::error_code) {});
                                   const std::lock_guard lock(log.mutex);
                                   log.holds.push_back(h);
                               });
                           }
                           aborted += ec == asio::error::operation_aborted ? 1 : 0;
                           other += ec && ec != asio::error::operation_aborted ? 1 : 0;
                           ++completed;
                       })));
        });
        const auto delay = std::chrono::milliseconds(std::uniform_int_distribution<int>(0, 40)(random));
        std::this_thread::sleep_for(delay); // a random moment of the acquire's life
        asio::post(strand, [&signal] { signal.emit(asio::cancellation_type::terminal); });
    }
    eventually([&] { return completed.load() >= acquires; });
    toggler.reset();
    replica.resume();
    BOOST_TEST(completed.load() == acquires);
    BOOST_TEST(granted_count.load() + aborted.load() == acquires);
    BOOST_TEST(other.load() == 0);
    BOOST_TEST_MESSAGE(granted_count.load() << " granted, " << aborted.load() << " cancelled");
    eventually([&] {
        const std::lock_guard lock(log.mutex);
        return log.holds.size() == static_cast<std::size_t>(granted_count.load());
    });
    {
        const std::lock_guard lock(log.mutex);
        BOOST_TEST(asio_sync::test::peak(log.holds) <= capacity);
    }
    eventually([&] { return idle(observer); });
    observer_link.close();
    conn.close();
}

// ---- fenced writes: racing writers while the library is flushed, and odd input

// Writers with distinct fences on two connections from a pool of threads, while another client
// flushes the function library again and again. Every write completes exactly once: written, stale,
// or (when the library vanished again after it was loaded for this write) server_error; whatever
// the order, the key holds the value of the largest fence that reported written, and its fence.
BOOST_AUTO_TEST_CASE(fenced_writes_racing_a_flushed_library_keep_the_largest_written_fence)
{
    redis_server server;
    context ctx(4);
    redis::connection a(ctx.io, options_for(server.port()));
    redis::connection b(ctx.io, options_for(server.port()));
    std::atomic<int> flushes{0};
    redis_server::client flushing_client(server);
    background_loop flusher([&] {
        flushing_client.execute({"FUNCTION", "FLUSH"});
        ++flushes;
    });
    constexpr std::uint64_t writes = 300;
    std::vector<std::uint64_t> fences(writes);
    for (std::uint64_t i = 0; i < writes; ++i)
        fences[i] = 5000 + i;
    std::shuffle(fences.begin(), fences.end(), std::mt19937(7));
    std::vector<std::future<std::pair<boost::system::error_code, std::uint64_t>>> results;
    for (std::uint64_t i = 0; i < writes; ++i)
        results.push_back(redis::async_fenced_set(
            i % 2 ? a : b, "{race}:value", "{race}:fence", fences[i], std::to_string(fences[i]),
            asio::use_future([](boost::system::error_code ec, std::uint64_t largest) {
                return std::make_pair(ec, largest);
            })));
    std::uint64_t largest_written = 0;
    std::size_t written = 0, stale = 0, failed = 0;
    for (std::uint64_t i = 0; i < writes; ++i)
    {
        const auto [ec, largest] = wait(results[i]);
        if (!ec)
        {
            ++written;
            BOOST_TEST(largest == fences[i]);
            largest_written = std::max(largest_written, fences[i]);
        }
        else if (ec == redis::error::stale_fence)
        {
            ++stale;
            BOOST_TEST(largest > fences[i]);
        }
        else
        {
            BOOST_TEST((ec == redis::error::server_error));
            ++failed;
        }
    }
    flusher.stop();
    BOOST_TEST_MESSAGE(written << " written, " << stale << " stale, " << failed << " failed; "
                               << flushes.load() << " flushes");
    BOOST_TEST(written + stale + failed == writes);
    BOOST_TEST(written >= 1u);
    BOOST_TEST(server.command({"GET", "{race}:value"}) == std::to_string(largest_written));
    BOOST_TEST(server.command({"GET", "{race}:fence"}) == std::to_string(largest_written));
    a.close();
    b.close();
}

// A value of 8 MiB and an empty one, an empty key, and keys in different cluster slots on a plain
// server (allowed there; a Cluster needs one hash tag): each written intact, with its fence.
BOOST_AUTO_TEST_CASE(fenced_writes_of_odd_but_valid_input)
{
    redis_server server;
    context ctx;
    redis::connection conn(ctx.io, options_for(server.port()));
    const auto write = [&](const std::string& k, const std::string& f, std::uint64_t fence,
                           const std::string& value) {
        auto done = redis::async_fenced_set(
            conn, k, f, fence, value,
            asio::use_future([](boost::system::error_code ec, std::uint64_t) { return ec; }));
        return wait(done);
    };
    std::string huge(8u << 20, 'x');
    huge[12345] = '\0';
    huge.back() = 'y';
    BOOST_TEST(!write("huge", "huge:fence", 1, huge));
    BOOST_TEST(server.command({"STRLEN", "huge"}) == std::to_string(huge.size()));
    BOOST_TEST(server.command({"GETRANGE", "huge", "-1", "-1"}) == "y");
    BOOST_TEST(!write("empty", "empty:fence", 1, ""));
    BOOST_TEST(server.command({"EXISTS", "empty"}) == "1");
    BOOST_TEST(server.command({"STRLEN", "empty"}) == "0");
    BOOST_TEST(!write("", "empty-key:fence", 3, "v"));
    BOOST_TEST(server.command({"GET", ""}) == "v");
    BOOST_TEST(!write("slot-a", "slot-b", 4, "w")); // slots 1154 and 13219
    BOOST_TEST(server.command({"GET", "slot-b"}) == "4");
    BOOST_TEST((write("slot-a", "slot-b", 3, "older") == redis::error::stale_fence));
    BOOST_TEST(server.command({"GET", "slot-a"}) == "w");
    conn.close();
}

// ---- durable grants: frozen replicas and the health check

// How unrelated commands, sent one after the other on `conn` while `go_on()`, completed.
struct unrelated_outcomes
{
    int ok = 0, lost = 0, other = 0; // lost: connection_lost, the link dropped as dead
};

template <class Predicate>
unrelated_outcomes run_unrelated_commands(redis::connection& conn, Predicate go_on)
{
    unrelated_outcomes n;
    while (go_on())
    {
        auto f = conn.async_execute({"INCR", "unrelated"}, as_executed());
        const executed e = wait(f);
        n.ok += !e.ec ? 1 : 0;
        n.lost += e.ec == redis::error::connection_lost ? 1 : 0;
        n.other += e.ec && e.ec != redis::error::connection_lost ? 1 : 0;
    }
    return n;
}

// With too few replicas answering, every renewal's WAIT waits its whole time (a tenth of the
// lease), and the renewals of all holders, pipelined on the command link, held the health check's
// PING back for the sum of their WAITs: more than the interval as soon as there were more holders
// than the interval holds WAITs. The health check dropped the live link as dead, over and over,
// and every command of the connection in flight then, the semaphore's or not, completed with
// connection_lost. Any reply now proves the link alive.
BOOST_AUTO_TEST_CASE(frozen_replicas_do_not_make_a_live_link_look_dead)
{
    redis_server primary;
    const std::unique_ptr<redis_server> replica_server = replica_of(primary);
    redis_server& replica = *replica_server;
    context ctx;
    redis::connection_options o = options_for(primary.port());
    o.health_check_interval = 400ms; // each WAIT waits 200 ms (half of it), four of them 800 ms
    redis::connection conn(ctx.io, o);
    redis::semaphore sem(conn, "frozen-replicas", 4, lease_of(3000ms, 1));
    std::vector<redis::semaphore::permit> held;
    for (int i = 0; i < 4; ++i)
    {
        auto f = sem.async_acquire_permit(1, asio::use_future);
        held.push_back(wait(f));
    }
    replica.pause();
    const long connections_before = info_number(primary, "stats", "total_connections_received:");
    // Commands one after the other, while the holders renew (until their renewals, never
    // confirmed, let their leases run out).
    const auto holding = [&] {
        return std::any_of(held.begin(), held.end(), [](const auto& p) { return p.valid_for() > 0s; });
    };
    const auto [ok, lost, other] = run_unrelated_commands(conn, holding);
    const long connections_after = info_number(primary, "stats", "total_connections_received:");
    replica.resume();
    BOOST_TEST_MESSAGE(ok << " ran, " << lost << " lost with the link; "
                          << connections_after - connections_before << " new connections meanwhile");
    BOOST_TEST(lost == 0);
    BOOST_TEST(other == 0);
    held.clear();
    conn.close();
}

// One WAIT longer than the health check's interval would silence the link for long enough to look
// dead: with a lease of 20 s a WAIT waited 2 s, five intervals of 400 ms. It waits at most half an
// interval, so acquires that no replica confirms leave the link and its other commands alone.
BOOST_AUTO_TEST_CASE(a_long_lease_does_not_make_a_live_link_look_dead)
{
    redis_server primary;
    const std::unique_ptr<redis_server> replica_server = replica_of(primary);
    redis_server& replica = *replica_server;
    context ctx;
    redis::connection_options o = options_for(primary.port());
    o.health_check_interval = 400ms;
    redis::connection conn(ctx.io, o);
    redis::semaphore sem(conn, "long-lease", 1, lease_of(20000ms, 1));
    auto up = conn.async_execute({"PING"}, as_executed());
    BOOST_TEST(!wait(up).ec);
    replica.pause();
    const long connections_before = info_number(primary, "stats", "total_connections_received:");
    auto acquire = sem.async_acquire_permit_for(
        1, 2000ms,
        asio::use_future([](boost::system::error_code ec, redis::semaphore::permit) { return ec; }));
    const auto [ok, lost, other] = run_unrelated_commands(conn, [&] { return !is_ready(acquire); });
    BOOST_TEST((wait(acquire) == asio_sync::error::timed_out));
    const long connections_after = info_number(primary, "stats", "total_connections_received:");
    replica.resume();
    BOOST_TEST_MESSAGE(ok << " ran, " << lost << " lost with the link; "
                          << connections_after - connections_before << " new connections meanwhile");
    BOOST_TEST(lost == 0);
    BOOST_TEST(other == 0);
    conn.close();
}

BOOST_AUTO_TEST_SUITE_END()
