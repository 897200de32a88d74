// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#define BOOST_TEST_MODULE redis_connection

// asio_sync::redis::basic_connection against real redis-server processes: commands and replies,
// pipelining from many threads, every completion token, credentials, databases, unix sockets,
// and the faults a fleet meets (a server down, killed, restarted; a link killed; a reply that
// cannot be parsed; a server that hangs), plus cancellation, close and destruction.

#include <asio_sync/redis/connection.hpp>

#include "support/counting_allocator.hpp"
#include "support/handler.hpp"
#include "support/redis_client.hpp"
#include "support/redis_printing.hpp"
#include "support/redis_server.hpp"
#include "support/tcp_proxy.hpp"

#include <boost/asio/bind_allocator.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/test/unit_test.hpp>

#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <future>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <type_traits>
#include <vector>

BOOST_AUTO_TEST_SUITE(redis_connection)

namespace {

namespace asio = boost::asio;
namespace redis = asio_sync::redis;
using asio_sync::test::emit;
using asio_sync::test::is_ready;
using asio_sync::test::options_for;
using asio_sync::test::redis_server;
using asio_sync::test::tcp_proxy;
using asio_sync::test::wait;
using namespace std::chrono_literals;

// Bounds every wait, so that a bug fails the test instead of hanging it; no outcome depends on it.
constexpr std::chrono::seconds limit{20};

struct result
{
    boost::system::error_code ec;
    redis::reply reply;
};

// An io_context run by one thread for the whole test. The connections of a test are declared
// after it, so they are destroyed (closed) before the thread is stopped.
class io_thread
{
public:
    io_thread() : work_(asio::make_work_guard(io)), thread_([this] { io.run(); }) {}

    io_thread(const io_thread&) = delete;
    io_thread& operator=(const io_thread&) = delete;

    ~io_thread()
    {
        io.stop();
        thread_.join();
    }

    asio::io_context io;

private:
    asio::executor_work_guard<asio::io_context::executor_type> work_;
    std::thread thread_;
};

// A handler that hands the completion to a future.
class to_future
{
public:
    to_future() : promise_(std::make_shared<std::promise<result>>()) {}

    std::future<result> get_future() { return promise_->get_future(); }

    void operator()(boost::system::error_code ec, redis::reply reply)
    {
        promise_->set_value({ec, std::move(reply)});
    }

private:
    std::shared_ptr<std::promise<result>> promise_;
};

template <class Args>
std::future<result> start(redis::connection& conn, const Args& args)
{
    to_future handler;
    auto f = handler.get_future();
    conn.async_execute(args, std::move(handler));
    return f;
}

std::future<result> start(redis::connection& conn, std::initializer_list<std::string_view> args)
{
    return start<std::initializer_list<std::string_view>>(conn, args);
}

// Starts a command whose handler is bound to `signal`.
std::future<result> start(redis::connection& conn, std::initializer_list<std::string_view> args,
                          asio::cancellation_signal& signal)
{
    to_future handler;
    auto f = handler.get_future();
    conn.async_execute(args, asio::bind_cancellation_slot(signal.slot(), std::move(handler)));
    return f;
}

result finish(std::future<result>& f)
{
    return wait(f);
}

result execute(redis::connection& conn, std::initializer_list<std::string_view> args)
{
    auto f = start(conn, args);
    return finish(f);
}

// Polls `condition` until it holds, failing the test at the limit.
void wait_until(const std::function<bool()>& condition, const char* what)
{
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!condition())
    {
        BOOST_REQUIRE_MESSAGE(std::chrono::steady_clock::now() < deadline, what);
        std::this_thread::sleep_for(5ms);
    }
}

// Runs a command until it does not fail with `passing`, an error the connection is expected to
// get past: connection_lost on a link the server has just closed (until the connection notices,
// a command may still be written to the old link and be lost with it), or auth_failed until
// the server takes the password.
result execute_past(redis::connection& conn, std::initializer_list<std::string_view> args,
                    boost::system::error_code passing)
{
    std::optional<result> r;
    wait_until(
        [&] {
            r = execute(conn, args);
            return r->ec != passing;
        },
        "the connection never got past the error");
    return *r;
}

// A server that requires `password`.
redis_server::options requiring(std::string password)
{
    redis_server::options options;
    options.password = std::move(password);
    return options;
}

std::string client_id(redis::connection& conn)
{
    const result r = execute(conn, {"CLIENT", "ID"});
    BOOST_REQUIRE(!r.ec);
    return std::to_string(r.reply.integer);
}

// Waits until the server shows the client `id` blocked in BLPOP: the command was written.
void wait_until_blocked(const redis_server& server, const std::string& id)
{
    wait_until(
        [&] {
            const std::string list = server.command({"CLIENT", "LIST", "ID", id});
            return list.find("cmd=blpop") != std::string::npos;
        },
        "the command never reached the server");
}

// Starts a BLPOP of a list nobody fills, on the link `id` of `conn`; returns once it was written.
std::future<result> start_blocked(redis::connection& conn, const redis_server& server, const std::string& id)
{
    auto blocked = start(conn, {"BLPOP", "never", "0"});
    wait_until_blocked(server, id);
    return blocked;
}

} // namespace

BOOST_AUTO_TEST_CASE(answers_every_kind_of_reply)
{
    redis_server server;
    io_thread io;
    redis::connection conn(io.io, options_for(server.port()));

    result r = execute(conn, {"PING"});
    BOOST_TEST(!r.ec);
    BOOST_TEST((r.reply.kind == redis::reply_kind::status));
    BOOST_TEST(r.reply.text == "PONG");

    const std::string binary("a\0b\r\nc", 6);
    BOOST_TEST(execute(conn, {"SET", "key", binary}).reply.text == "OK");
    r = execute(conn, {"GET", "key"});
    BOOST_TEST((r.reply.kind == redis::reply_kind::string));
    BOOST_TEST(r.reply.text == binary);

    r = execute(conn, {"GET", "missing"});
    BOOST_TEST(!r.ec);
    BOOST_TEST((r.reply.kind == redis::reply_kind::nil));

    r = execute(conn, {"INCRBY", "counter", "41"});
    BOOST_TEST((r.reply.kind == redis::reply_kind::integer));
    BOOST_TEST(r.reply.integer == 41);

    execute(conn, {"RPUSH", "list", "x", "y"});
    r = execute(conn, {"LRANGE", "list", "0", "-1"});
    BOOST_TEST((r.reply.kind == redis::reply_kind::array));
    BOOST_REQUIRE(r.reply.elements.size() == 2u);
    BOOST_TEST(r.reply.elements[0].text == "x");
    BOOST_TEST(r.reply.elements[1].text == "y");

    // A range of std::string works as well as a braced list.
    const std::vector<std::string> args{"ECHO", "from a vector"};
    auto f = start(conn, args);
    BOOST_TEST(finish(f).reply.text == "from a vector");

    // An error reply fails its command only; the link goes on.
    r = execute(conn, {"LPUSH", "key", "x"});
    BOOST_TEST(r.ec == redis::error::server_error);
    BOOST_TEST((r.reply.kind == redis::reply_kind::error));
    BOOST_TEST(r.reply.text.rfind("WRONGTYPE", 0) == 0u);
    r = execute(conn, {"NO-SUCH-COMMAND"});
    BOOST_TEST(r.ec == redis::error::server_error);
    BOOST_TEST(r.reply.text.rfind("ERR unknown command", 0) == 0u);
    BOOST_TEST(execute(conn, {"PING"}).reply.text == "PONG");
}

BOOST_AUTO_TEST_CASE(refuses_what_cannot_be_pipelined)
{
    redis_server server;
    io_thread io;
    redis::connection conn(io.io, options_for(server.port()));

    const std::vector<std::string> empty;
    auto f = start(conn, empty);
    BOOST_TEST(finish(f).ec == asio::error::invalid_argument);
    for (const auto& args : std::vector<std::vector<std::string>>{{"SUBSCRIBE", "c"},
                                                                  {"psubscribe", "c*"},
                                                                  {"SSUBSCRIBE", "c"},
                                                                  {"unsubscribe"},
                                                                  {"MONITOR"},
                                                                  {"client", "reply", "off"}})
    {
        auto g = start(conn, args);
        const result r = finish(g);
        BOOST_TEST(r.ec == redis::error::unsupported_command, args[0]);
        BOOST_TEST((r.reply.kind == redis::reply_kind::nil));
    }
    // Nothing was sent: the replies are still matched to their commands.
    BOOST_TEST(execute(conn, {"ECHO", "in step"}).reply.text == "in step");
}

BOOST_AUTO_TEST_CASE(pipelines_commands_from_many_threads_in_order)
{
    redis_server server;
    asio::thread_pool pool(2);
    redis::connection conn(pool, options_for(server.port()));

    constexpr std::size_t callers = 4;
    constexpr std::size_t commands = 300;
    std::mutex mutex;
    std::vector<std::vector<std::string>> echoed(callers, std::vector<std::string>(commands));
    std::vector<std::vector<long long>> lengths(callers, std::vector<long long>(commands));
    std::atomic<int> failures{0};
    std::atomic<std::size_t> left{callers * commands * 2};
    std::promise<void> all_done;
    const auto one_done = [&] {
        if (--left == 0)
            all_done.set_value();
    };

    std::vector<std::thread> threads;
    for (std::size_t caller = 0; caller < callers; ++caller)
    {
        threads.emplace_back([&, caller] {
            const std::string list = "list" + std::to_string(caller);
            for (std::size_t i = 0; i < commands; ++i)
            {
                // Issued back to back, without waiting for replies.
                conn.async_execute({"RPUSH", list, std::to_string(i)},
                                   [&, caller, i](auto ec, redis::reply r) {
                                       failures += ec ? 1 : 0;
                                       {
                                           std::lock_guard<std::mutex> lock(mutex);
                                           lengths[caller][i] = r.integer;
                                       }
                                       one_done();
                                   });
                const std::string payload = std::to_string(caller) + ":" + std::to_string(i);
                conn.async_execute({"ECHO", payload}, [&, caller, i](auto ec, redis::reply r) {
                    failures += ec ? 1 : 0;
                    {
                        std::lock_guard<std::mutex> lock(mutex);
                        echoed[caller][i] = std::move(r.text);
                    }
                    one_done();
                });
            }
        });
    }
    for (std::thread& t : threads)
        t.join();
    auto done = all_done.get_future();
    wait(done);

    BOOST_TEST(failures == 0);
    std::lock_guard<std::mutex> lock(mutex);
    for (std::size_t caller = 0; caller < callers; ++caller)
    {
        for (std::size_t i = 0; i < commands; ++i)
        {
            // The i-th RPUSH of a caller made its list i + 1 long: sent in the caller's order.
            BOOST_TEST(lengths[caller][i] == static_cast<long long>(i + 1));
            BOOST_TEST(echoed[caller][i] == std::to_string(caller) + ":" + std::to_string(i));
        }
    }
}

BOOST_AUTO_TEST_CASE(completes_with_every_token)
{
    redis_server server;
    io_thread io;
    redis::connection conn(io.io, options_for(server.port()));

    std::promise<std::string> by_callback;
    conn.async_execute({"ECHO", "callback"}, [&](boost::system::error_code ec, redis::reply r) {
        by_callback.set_value(ec ? "" : r.text);
    });
    auto callback_result = by_callback.get_future();
    BOOST_TEST(wait(callback_result) == "callback");

    auto by_future = conn.async_execute({"ECHO", "future"}, asio::use_future);
    BOOST_TEST(wait(by_future).text == "future");

    // use_future reports an error by throwing it.
    auto failing = conn.async_execute({"NO-SUCH-COMMAND"}, asio::use_future);
    BOOST_REQUIRE(failing.wait_for(limit) == std::future_status::ready);
    try
    {
        failing.get();
        BOOST_FAIL("no exception");
    }
    catch (const boost::system::system_error& e)
    {
        BOOST_TEST(e.code() == redis::error::server_error);
    }

    auto by_coroutine = asio::co_spawn(
        io.io,
        [&]() -> asio::awaitable<std::string> {
            // A named range: g++ 12 cannot keep a braced list alive across co_await.
            const std::array<std::string_view, 2> args{"ECHO", "awaitable"};
            const redis::reply r = co_await conn.async_execute(args, asio::use_awaitable);
            co_return r.text;
        },
        asio::use_future);
    BOOST_TEST(wait(by_coroutine) == "awaitable");

    auto deferred = conn.async_execute({"ECHO", "deferred"}, asio::deferred);
    std::promise<std::string> by_deferred;
    std::move(deferred)(
        [&](boost::system::error_code ec, redis::reply r) { by_deferred.set_value(ec ? "" : r.text); });
    auto deferred_result = by_deferred.get_future();
    BOOST_TEST(wait(deferred_result) == "deferred");
}

BOOST_AUTO_TEST_CASE(completes_through_the_handler_executor_never_inline)
{
    redis_server server;
    asio::io_context io;
    // An executor type of its own, not any_io_executor.
    using io_connection = redis::basic_connection<asio::io_context::executor_type>;
    static_assert(std::is_same_v<redis::connection::rebind_executor<asio::io_context::executor_type>::other,
                                 io_connection>);
    io_connection conn(io, options_for(server.port()));
    io_thread other;

    std::atomic<int> invoked{0};
    std::atomic<bool> on_other{false};
    conn.async_execute({"PING"}, [&](auto, redis::reply) { ++invoked; });
    conn.async_execute(std::vector<std::string>(), [&](auto, redis::reply) { ++invoked; }); // refused at once
    conn.async_execute({"PING"}, asio::bind_executor(other.io, [&](auto ec, redis::reply) {
                           on_other = !ec && other.io.get_executor().running_in_this_thread();
                           ++invoked;
                       }));
    BOOST_TEST(invoked == 0); // nothing ran inside async_execute

    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (invoked < 3 && std::chrono::steady_clock::now() < deadline)
        io.run_for(10ms);
    BOOST_TEST(invoked == 3);
    BOOST_TEST(on_other);
    conn.close();
    io.run_for(limit); // returns once the connection has wound down
    BOOST_TEST(io.stopped());
}

BOOST_AUTO_TEST_CASE(allocates_with_the_handler_allocator)
{
    redis_server server;
    io_thread io;
    redis::connection conn(io.io, options_for(server.port()));
    BOOST_TEST(execute(conn, {"PING"}).reply.text == "PONG"); // connected

    asio_sync::test::allocation_counts counts;
    std::promise<void> done;
    conn.async_execute({"PING"}, asio::bind_allocator(asio_sync::test::counting_allocator<void>(counts),
                                                      [&](auto, redis::reply) { done.set_value(); }));
    auto f = done.get_future();
    wait(f);
    BOOST_TEST(counts.allocations.load() >= 1u);
    BOOST_TEST(counts.deallocations.load() == counts.allocations.load());
}

BOOST_AUTO_TEST_CASE(authenticates_as_an_acl_user)
{
    redis_server server;
    server.command({"ACL", "SETUSER", "alice", "on", ">secret", "~*", "&*", "+@all"});
    io_thread io;

    redis::connection_options options = options_for(server.port());
    options.user = "alice";
    options.password = "secret";
    redis::connection conn(io.io, options);
    BOOST_TEST(execute(conn, {"ACL", "WHOAMI"}).reply.text == "alice");

    options.password = "wrong";
    redis::connection refused(io.io, options);
    const result r = execute(refused, {"ACL", "WHOAMI"});
    BOOST_TEST(r.ec == redis::error::auth_failed);
    BOOST_TEST(r.reply.text.rfind("WRONGPASS", 0) == 0u);
}

BOOST_AUTO_TEST_CASE(authenticates_with_requirepass_and_recovers_once_it_matches)
{
    redis_server server(requiring("secret"));
    io_thread io;

    redis::connection_options options = options_for(server.port());
    options.password = "secret";
    redis::connection conn(io.io, options);
    BOOST_TEST(execute(conn, {"PING"}).reply.text == "PONG");

    // Without credentials, the server's NOAUTH is an authentication failure too.
    redis::connection anonymous(io.io, options_for(server.port()));
    const result noauth = execute(anonymous, {"PING"});
    BOOST_TEST(noauth.ec == redis::error::auth_failed, noauth.reply.text);

    options.password = "other";
    redis::connection refused(io.io, options);
    BOOST_TEST(execute(refused, {"PING"}).ec == redis::error::auth_failed);
    // The connection keeps trying: once the server takes the password, commands go through.
    server.command({"CONFIG", "SET", "requirepass", "other"});
    const result r = execute_past(refused, {"PING"}, redis::error::auth_failed);
    BOOST_TEST(!r.ec);
    BOOST_TEST(r.reply.text == "PONG");
}

BOOST_AUTO_TEST_CASE(a_refused_password_waits_for_the_reconnect_delay)
{
    redis_server server(requiring("secret"));
    io_thread io;

    redis::connection_options options = options_for(server.port());
    options.password = "wrong";
    options.reconnect_delay_min = options.reconnect_delay_max = std::chrono::hours(1);
    redis::connection conn(io.io, options);
    BOOST_TEST(execute(conn, {"PING"}).ec == redis::error::auth_failed);

    // No new attempt before the delay: the connection does not hammer the server.
    const auto connections = [&] {
        const std::string stats = server.command({"INFO", "stats"});
        const auto at = stats.find("total_connections_received:");
        return std::stol(stats.substr(at + 27));
    };
    const long before = connections();
    auto waiting = start(conn, {"PING"});
    std::this_thread::sleep_for(300ms);
    BOOST_TEST(connections() == before + 1); // our own INFO
    BOOST_TEST(!is_ready(waiting));
    conn.close();
    BOOST_TEST(finish(waiting).ec == asio::error::operation_aborted);
}

BOOST_AUTO_TEST_CASE(selects_the_database_on_every_connect)
{
    redis_server server;
    io_thread io;
    redis::connection_options options = options_for(server.port());
    options.database = 3;
    redis::connection conn(io.io, options);

    BOOST_TEST(execute(conn, {"SET", "key", "in three"}).reply.text == "OK");
    BOOST_TEST(server.command({"EVAL", "redis.call('SELECT', 3) return redis.call('GET', 'key')", "0"}) ==
               "in three");
    BOOST_TEST(server.command({"EXISTS", "key"}) == "0"); // not in database 0

    const std::string id = client_id(conn);
    server.command({"CLIENT", "KILL", "ID", id});
    const result r = execute_past(conn, {"CLIENT", "INFO"}, redis::error::connection_lost);
    BOOST_TEST(r.reply.text.find(" db=3 ") != std::string::npos);
    BOOST_TEST(r.reply.text.find("id=" + id + " ") == std::string::npos); // a new link
}

BOOST_AUTO_TEST_CASE(connects_through_a_unix_socket)
{
    const std::string path =
        (std::filesystem::temp_directory_path() / ("asio_sync_redis_" + std::to_string(::getpid()) + ".sock"))
            .string();
    redis_server::options server_options;
    server_options.extra_args = {"--unixsocket", path, "--unixsocketperm", "700"};
    redis_server server(server_options);
    io_thread io;

    redis::connection_options options;
    options.unix_socket = path;
    options.host = "unused.invalid";
    redis::connection conn(io.io, options);
    const result r = execute(conn, {"CLIENT", "INFO"});
    BOOST_TEST(!r.ec);
    BOOST_TEST(r.reply.text.find("addr=" + path) != std::string::npos);

    // A path longer than a unix socket address can hold is refused at construction.
    options.unix_socket = "/tmp/" + std::string(200, 'x');
    BOOST_CHECK_THROW(redis::connection(io.io, options), boost::system::system_error);
}

BOOST_AUTO_TEST_CASE(connects_over_ipv6)
{
    redis_server::options server_options;
    server_options.extra_args = {"--bind", "127.0.0.1", "::1"};
    redis_server server(server_options);
    io_thread io;

    redis::connection_options options = options_for(server.port());
    options.host = "::1";
    redis::connection conn(io.io, options);
    const result r = execute(conn, {"CLIENT", "INFO"});
    BOOST_TEST(!r.ec);
    BOOST_TEST(r.reply.text.find("laddr=[::1]:") != std::string::npos);

    options.host = "localhost"; // a name, resolved
    redis::connection by_name(io.io, options);
    BOOST_TEST(execute(by_name, {"PING"}).reply.text == "PONG");
}

BOOST_AUTO_TEST_CASE(a_command_waits_for_an_unreachable_server)
{
    redis_server server;
    server.stop();
    io_thread io;
    redis::connection conn(io.io, options_for(server.port()));

    auto waiting = start(conn, {"SET", "key", "late"});
    std::this_thread::sleep_for(200ms); // several refused attempts
    BOOST_TEST(!is_ready(waiting));
    server.start();
    const result r = finish(waiting);
    BOOST_TEST(!r.ec);
    BOOST_TEST(server.command({"GET", "key"}) == "late");
}

BOOST_AUTO_TEST_CASE(a_killed_link_fails_written_commands_and_reconnects)
{
    redis_server server;
    io_thread io;
    redis::connection conn(io.io, options_for(server.port()));
    const std::string id = client_id(conn);

    auto blocked = start(conn, {"BLPOP", "never", "0"});
    // Queued before the BLPOP reaches the server, so written before the kill is noticed.
    auto behind = start(conn, {"PING"});
    wait_until_blocked(server, id);
    server.command({"CLIENT", "KILL", "ID", id});
    BOOST_TEST(finish(blocked).ec == redis::error::connection_lost);
    BOOST_TEST(finish(behind).ec == redis::error::connection_lost);

    BOOST_TEST(execute(conn, {"PING"}).reply.text == "PONG");
    BOOST_TEST(client_id(conn) != id);
}

BOOST_AUTO_TEST_CASE(survives_a_server_restart)
{
    redis_server server;
    io_thread io;
    redis::connection conn(io.io, options_for(server.port()));
    const std::string id = client_id(conn);

    auto blocked = start_blocked(conn, server, id);
    server.kill();
    BOOST_TEST(finish(blocked).ec == redis::error::connection_lost);

    auto waiting = start(conn, {"SET", "key", "after"});
    std::this_thread::sleep_for(100ms);
    BOOST_TEST(!is_ready(waiting));
    server.start();
    BOOST_TEST(!finish(waiting).ec);
    BOOST_TEST(execute(conn, {"GET", "key"}).reply.text == "after");
}

BOOST_AUTO_TEST_CASE(setup_commands_run_first_on_every_connect)
{
    redis_server server;
    io_thread io;
    redis::connection conn(io.io, options_for(server.port()));
    auto& impl = redis::detail::access::impl(conn);

    std::atomic<int> connects{0};
    impl.add_connect_listener(impl.new_id(),
                              redis::detail::make_event_callback([&] { ++connects; }, io.io.get_executor()));
    impl.add_setup_command(redis::detail::formatted_command::format({"INCR", "setups"}));
    impl.add_setup_command(redis::detail::formatted_command::format({"INCR", "setups"})); // once only
    BOOST_TEST(execute(conn, {"GET", "setups"}).reply.text == "1");
    wait_until([&] { return connects == 1; }, "no connect announced");

    // Registered while the link is up: it runs before the commands queued after it.
    impl.add_setup_command(redis::detail::formatted_command::format({"SET", "later", "set"}));
    BOOST_TEST(execute(conn, {"GET", "later"}).reply.text == "set");
    BOOST_TEST(connects == 1);

    server.command({"CLIENT", "KILL", "ID", client_id(conn)});
    BOOST_TEST(execute_past(conn, {"GET", "setups"}, redis::error::connection_lost).reply.text == "2");
    wait_until([&] { return connects == 2; }, "no reconnect announced");
}

BOOST_AUTO_TEST_CASE(a_failing_setup_command_fails_the_queued_commands)
{
    redis_server server;
    io_thread io;
    redis::connection_options options = options_for(server.port());
    redis::connection conn(io.io, options);
    BOOST_TEST(execute(conn, {"PING"}).reply.text == "PONG");

    redis::detail::access::impl(conn).add_setup_command(
        redis::detail::formatted_command::format({"FUNCTION", "LOAD", "not a library"}));
    const result r = execute(conn, {"PING"});
    BOOST_TEST(r.ec == redis::error::server_error);
    BOOST_TEST((r.reply.kind == redis::reply_kind::error));
    BOOST_TEST(r.reply.text.rfind("ERR", 0) == 0u);
}

BOOST_AUTO_TEST_CASE(a_reply_that_cannot_be_parsed_drops_the_link)
{
    redis_server server;
    tcp_proxy proxy(server.port(), {tcp_proxy::mode::garbage});
    io_thread io;
    redis::connection conn(io.io, options_for(proxy.port()));

    BOOST_TEST(execute(conn, {"PING"}).ec == redis::error::connection_lost);
    BOOST_TEST(execute(conn, {"PING"}).reply.text == "PONG"); // on a new link
    BOOST_TEST(proxy.accepted() == 2u);
}

// A link whose TCP connection stays open but that answers nothing (a stuck proxy, a half-open
// connection) is found dead by its health check, dropped and connected again: the command written
// on it completes with connection_lost, the next goes through, and the subscriber link subscribes
// again. Without a health check, the command would wait for ever.
BOOST_AUTO_TEST_CASE(a_link_that_answers_nothing_is_replaced_after_its_health_check)
{
    redis_server server;
    tcp_proxy proxy(server.port());
    io_thread io;
    redis::connection_options options = options_for(proxy.port());
    options.health_check_interval = 100ms;
    redis::connection conn(io.io, options);
    std::atomic<int> subscribed{0};
    std::atomic<int> heard{0};
    const auto id = conn.subscribe(
        "news", [&](std::string) { ++heard; }, [&] { ++subscribed; });
    wait_until([&] { return subscribed == 1; }, "never subscribed");
    BOOST_TEST(execute(conn, {"PING"}).reply.text == "PONG");
    BOOST_TEST(proxy.accepted() == 2u);

    proxy.freeze();
    BOOST_TEST(execute(conn, {"SET", "frozen", "x"}).ec == redis::error::connection_lost);
    BOOST_TEST(execute(conn, {"PING"}).reply.text == "PONG");
    wait_until([&] { return subscribed == 2; }, "never subscribed again");
    BOOST_TEST(server.command({"PUBLISH", "news", "after"}) == "1");
    wait_until([&] { return heard == 1; }, "no message after the health check");
    BOOST_TEST(server.command({"EXISTS", "frozen"}) == "0"); // the frozen link never delivered it
    BOOST_TEST(proxy.accepted() == 4u);
    conn.unsubscribe(id);
}

BOOST_AUTO_TEST_CASE(an_attempt_that_outlasts_the_connect_timeout_is_abandoned)
{
    redis_server server;
    tcp_proxy proxy(server.port(), {tcp_proxy::mode::silent});
    io_thread io;
    redis::connection_options options = options_for(proxy.port());
    options.database = 1; // a set-up command, whose reply never comes from the silent proxy
    options.connect_timeout = 100ms;
    redis::connection conn(io.io, options);

    BOOST_TEST(execute(conn, {"PING"}).reply.text == "PONG"); // on the second attempt
    BOOST_TEST(proxy.accepted() == 2u);
}

BOOST_AUTO_TEST_CASE(reconnect_delays_grow_while_attempts_fail)
{
    redis_server server;
    tcp_proxy proxy(server.port(), {}, tcp_proxy::mode::reject);
    io_thread io;
    redis::connection_options options = options_for(proxy.port());
    options.reconnect_delay_min = 1ms;
    options.reconnect_delay_max = std::chrono::hours(1);
    options.reconnect_jitter = 0;
    redis::connection conn(io.io, options);

    // Delays of 1, 2, 4, ... ms: about 10 attempts in a second (20 only after 9 minutes), where a
    // fixed delay would make hundreds.
    std::this_thread::sleep_for(1s);
    BOOST_TEST(proxy.accepted() >= 2u);
    BOOST_TEST(proxy.accepted() <= 20u);
}

BOOST_AUTO_TEST_CASE(subscribers_hear_messages_and_resubscribe_after_a_kill)
{
    redis_server server;
    io_thread io;
    redis::connection conn(io.io, options_for(server.port()));

    std::mutex mutex;
    std::vector<std::string> messages;
    std::atomic<int> subscribed{0};
    const auto id = conn.subscribe(
        "news",
        [&](std::string message) {
            std::lock_guard<std::mutex> lock(mutex);
            messages.push_back(std::move(message));
        },
        [&] { ++subscribed; });
    wait_until([&] { return subscribed == 1; }, "never subscribed");
    const auto heard = [&](std::size_t n) {
        return [&, n] {
            std::lock_guard<std::mutex> lock(mutex);
            return messages.size() == n;
        };
    };
    BOOST_TEST(server.command({"PUBLISH", "news", "one"}) == "1");
    wait_until(heard(1), "no message");

    // A second subscription to an active channel is active at once.
    std::atomic<int> second_subscribed{0};
    const auto second = conn.subscribe(
        "news", [](std::string) {}, [&] { ++second_subscribed; });
    wait_until([&] { return second_subscribed == 1; }, "the second subscription never became active");
    conn.unsubscribe(second);

    server.command({"CLIENT", "KILL", "TYPE", "pubsub"});
    wait_until([&] { return subscribed == 2; }, "never subscribed again");
    BOOST_TEST(server.command({"PUBLISH", "news", "two"}) == "1");
    wait_until(heard(2), "no message after the reconnect");
    {
        std::lock_guard<std::mutex> lock(mutex);
        BOOST_TEST(messages[0] == "one");
        BOOST_TEST(messages[1] == "two");
    }
    BOOST_TEST(second_subscribed == 1); // ended before the kill

    conn.unsubscribe(id);
    wait_until(
        [&] {
            return server.command({"PUBSUB", "NUMSUB", "news"}) == "news\n0";
        },
        "never unsubscribed");
}

// The server is stopped before the connection starts, so that every command waits in the queue:
// stopped after a first command, it could be gone before the connection had read the end of its
// link, and a command written then completed with connection_lost (seen under ThreadSanitizer).
BOOST_AUTO_TEST_CASE(cancels_a_queued_command_of_any_cancellation_type)
{
    redis_server server;
    server.stop();
    io_thread io;
    redis::connection conn(io.io, options_for(server.port()));

    for (const auto type : {asio::cancellation_type::terminal, asio::cancellation_type::partial,
                            asio::cancellation_type::total})
    {
        asio::cancellation_signal signal;
        auto f = start(conn, {"SET", "cancelled", "sent"}, signal);
        emit(io.io, signal, type);
        BOOST_TEST(finish(f).ec == asio::error::operation_aborted);
    }
    server.start();
    BOOST_TEST(execute(conn, {"PING"}).reply.text == "PONG");
    BOOST_TEST(server.command({"EXISTS", "cancelled"}) == "0"); // never sent
}

BOOST_AUTO_TEST_CASE(cancels_a_written_command_and_drops_its_reply)
{
    redis_server server;
    io_thread io;
    redis::connection conn(io.io, options_for(server.port()));
    const std::string id = client_id(conn);

    for (const auto type : {asio::cancellation_type::terminal, asio::cancellation_type::partial})
    {
        asio::cancellation_signal signal;
        auto blocked = start(conn, {"BLPOP", "queue", "0"}, signal);
        wait_until_blocked(server, id);
        emit(io.io, signal, type);
        BOOST_TEST(finish(blocked).ec == asio::error::operation_aborted);
        server.command({"RPUSH", "queue", "x"}); // the BLPOP takes it; its reply is dropped
        BOOST_TEST(execute(conn, {"ECHO", "next"}).reply.text == "next");
        BOOST_TEST(server.command({"LLEN", "queue"}) == "0");
    }

    // Total cancellation cannot take back a command that was sent: it is ignored.
    asio::cancellation_signal signal;
    auto blocked = start(conn, {"BLPOP", "queue", "0"}, signal);
    wait_until_blocked(server, id);
    emit(io.io, signal, asio::cancellation_type::total);
    server.command({"RPUSH", "queue", "y"});
    const result r = finish(blocked);
    BOOST_TEST(!r.ec);
    BOOST_REQUIRE(r.reply.elements.size() == 2u);
    BOOST_TEST(r.reply.elements[1].text == "y");
}

BOOST_AUTO_TEST_CASE(close_aborts_pending_commands)
{
    redis_server server;
    io_thread io;
    redis::connection conn(io.io, options_for(server.port()));
    const std::string id = client_id(conn);

    auto blocked = start_blocked(conn, server, id);
    auto behind = start(conn, {"PING"});
    conn.close();
    BOOST_TEST(finish(blocked).ec == asio::error::operation_aborted);
    BOOST_TEST(finish(behind).ec == asio::error::operation_aborted);
    BOOST_TEST(execute(conn, {"PING"}).ec == asio_sync::error::closed);
    conn.close(); // again: nothing happens
    wait_until([&] { return server.command({"CLIENT", "LIST", "ID", id}).empty(); }, "the link stayed open");
}

BOOST_AUTO_TEST_CASE(close_aborts_commands_waiting_for_a_connection)
{
    redis_server server;
    server.stop();
    io_thread io;
    redis::connection conn(io.io, options_for(server.port()));
    auto waiting = start(conn, {"PING"});
    conn.close();
    BOOST_TEST(finish(waiting).ec == asio::error::operation_aborted);
}

BOOST_AUTO_TEST_CASE(destruction_aborts_pending_commands)
{
    redis_server server;
    io_thread io;
    std::future<result> blocked, waiting;
    {
        redis::connection conn(io.io, options_for(server.port()));
        const std::string id = client_id(conn);
        blocked = start_blocked(conn, server, id);
    }
    BOOST_TEST(finish(blocked).ec == asio::error::operation_aborted);

    server.stop();
    {
        redis::connection conn(io.io, options_for(server.port()));
        waiting = start(conn, {"PING"});
    }
    BOOST_TEST(finish(waiting).ec == asio::error::operation_aborted);
}

BOOST_AUTO_TEST_CASE(context_shutdown_destroys_pending_handlers)
{
    redis_server server;
    server.stop(); // the commands wait
    int invoked = 0;
    bool destroyed = false;
    {
        asio::io_context io;
        redis::connection conn(io, options_for(server.port()));
        auto guard = std::make_shared<asio_sync::test::on_destroy>([&] { destroyed = true; });
        conn.async_execute({"PING"}, [&invoked, guard](auto, redis::reply) { ++invoked; });
        guard.reset();
        io.run_for(20ms); // the command is queued, attempts fail
        conn.async_execute({"PING"},
                           [&invoked](auto, redis::reply) { ++invoked; }); // never reaches the queue
    } // the connection, then the context, without running again
    BOOST_TEST(invoked == 0);
    BOOST_TEST(destroyed);

    // A command written, awaiting its reply.
    server.start();
    destroyed = false;
    {
        asio::io_context io;
        redis::connection conn(io, options_for(server.port()));
        std::thread runner;
        {
            auto work = asio::make_work_guard(io);
            runner = std::thread([&] { io.run(); });
            const std::string id = client_id(conn);
            auto guard = std::make_shared<asio_sync::test::on_destroy>([&] { destroyed = true; });
            conn.async_execute({"BLPOP", "never", "0"}, [&invoked, guard](auto, redis::reply) { ++invoked; });
            guard.reset();
            wait_until_blocked(server, id);
        }
        io.stop();
        runner.join();
    }
    BOOST_TEST(invoked == 0);
    BOOST_TEST(destroyed);
}

BOOST_AUTO_TEST_SUITE_END()
