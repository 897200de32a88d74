// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#define BOOST_TEST_MODULE redis_semaphore_engine

// The semaphore's engine driven through a scripted semaphore_link, without a server: what it
// registers at its start, the calls an acquire sends (the check of the server first) and what
// their replies complete, a permit's release, a durable call sent again until its WAIT confirms
// it, and the connection's close failing a pending acquire.

#include <asio_sync/redis/detail/semaphore_engine.hpp>
#include <asio_sync/redis/permit.hpp>

#include "support/redis_replies.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

BOOST_AUTO_TEST_SUITE(redis_semaphore_engine)

namespace {

namespace redis = asio_sync::redis;
using asio_sync::test::array_reply;
using asio_sync::test::integer_reply;
using asio_sync::test::text_reply;
using redis::detail::formatted_command;
using redis::detail::semaphore_link;
using executor_type = boost::asio::any_io_executor;
using engine_type = redis::detail::semaphore_engine<executor_type>;
using permit_type = redis::basic_permit<executor_type>;
using namespace std::chrono_literals;

// A link that records what the engine sends, for the test to answer.
struct scripted_link final : semaphore_link
{
    struct call
    {
        std::string bytes;
        reply_handler handler;
        std::string wait; // the WAIT sent with it, if any
        reply_handler wait_handler;
    };

    void execute(formatted_command command, reply_handler handler) override
    {
        calls.push_back({std::string(command.bytes()), std::move(handler), {}, {}});
    }

    void execute_confirmed(formatted_command command, reply_handler handler, formatted_command wait,
                           reply_handler wait_handler) override
    {
        calls.push_back({std::string(command.bytes()), std::move(handler), std::string(wait.bytes()),
                         std::move(wait_handler)});
    }

    void add_setup_command(formatted_command command) override { setup.emplace_back(command.bytes()); }

    std::uint64_t start(std::string name, redis::detail::message_callback, redis::detail::event_callback,
                        redis::detail::event_callback, redis::detail::event_callback closed) override
    {
        channel = std::move(name);
        on_closed = std::move(closed);
        return 7;
    }

    void stop(std::uint64_t id) override { stopped = id; }

    std::chrono::milliseconds health_check_interval() const override { return 1000ms; }
    bool uses_sentinels() const override { return false; }

    // The function of the library that the call `i` runs ("acquire", "release", ...), or "".
    std::string function(std::size_t i) const
    {
        for (const std::string_view name : redis::detail::semaphore_library::function_names)
            if (calls.at(i).bytes.find(name) != std::string::npos)
                return std::string(name.substr(name.rfind('_') + 1));
        return {};
    }

    std::vector<call> calls;
    std::vector<std::string> setup;
    std::string channel;
    redis::detail::event_callback on_closed;
    std::uint64_t stopped = 0;
};

redis::reply granted(std::int64_t fence, std::int64_t n)
{
    return array_reply({text_reply(redis::reply_kind::string, "granted"), integer_reply(fence),
                        integer_reply(n), integer_reply(3000)});
}

redis::reply released(std::int64_t n)
{
    return array_reply({text_reply(redis::reply_kind::string, "released"), integer_reply(n)});
}

struct fixture
{
    explicit fixture(unsigned durable_replicas = 0)
        : engine(std::make_shared<engine_type>(
              link, io.get_executor(), "s", 2,
              redis::detail::checked_semaphore_options({3000ms, std::nullopt, false, durable_replicas}, 10ms,
                                                       3000ms)))
    {
        engine->start();
    }

    // The calls left unanswered (a permit still held sends its release) are dropped, as a closed
    // connection drops them: their handlers hold the engine, which holds the link.
    ~fixture()
    {
        permit = permit_type();
        engine->stop();
        link->calls.clear();
    }

    // Starts an acquire of `n`, whose outcome lands in `result`, and answers the check of the
    // server's configuration that goes first: nothing to object to.
    void acquire(std::size_t n)
    {
        engine->acquire(n, redis::detail::acquire_mode::wait, std::nullopt,
                        [this](boost::system::error_code ec, permit_type p) {
                            result = ec;
                            permit = std::move(p);
                        });
        run();
        BOOST_TEST_REQUIRE(link->calls.size() == 1u);
        BOOST_TEST_REQUIRE(link->calls[0].bytes.find("CONFIG") != std::string::npos);
        link->calls[0].handler({}, array_reply({}));
        run();
    }

    void run()
    {
        io.restart();
        io.poll();
    }

    boost::asio::io_context io;
    std::shared_ptr<scripted_link> link = std::make_shared<scripted_link>();
    std::shared_ptr<engine_type> engine;
    std::optional<boost::system::error_code> result;
    permit_type permit;
};

} // namespace

BOOST_AUTO_TEST_CASE(it_registers_its_library_and_its_channel_and_undoes_it)
{
    std::uint64_t stopped = 0;
    {
        fixture f;
        BOOST_TEST_REQUIRE(f.link->setup.size() == 1u);
        BOOST_TEST(f.link->setup[0].find("FUNCTION") != std::string::npos);
        BOOST_TEST(f.link->channel == f.engine->script().channel());
        f.engine->stop();
        stopped = f.link->stopped;
    }
    BOOST_TEST(stopped == 7u);
}

BOOST_AUTO_TEST_CASE(an_acquire_is_granted_by_its_reply_and_its_permit_released)
{
    fixture f;
    f.acquire(1);
    BOOST_TEST_REQUIRE(f.link->calls.size() == 2u);
    BOOST_TEST(f.link->function(1) == "acquire");
    BOOST_TEST(f.link->calls[1].wait.empty()); // not durable: no WAIT
    f.link->calls[1].handler({}, granted(9, 1));
    f.run();
    BOOST_TEST_REQUIRE(f.result.has_value());
    BOOST_TEST(!*f.result);
    BOOST_TEST(f.permit.count() == 1u);
    BOOST_TEST(f.permit.fencing_token() == 9u);
    f.permit = permit_type(); // released on destruction
    f.run();
    BOOST_TEST_REQUIRE(f.link->calls.size() >= 3u);
    BOOST_TEST(f.link->function(f.link->calls.size() - 1) == "release");
    f.link->calls.back().handler({}, released(1));
    f.run();
}

// With durable grants an acquire goes with a WAIT; a grant that WAIT does not confirm is an
// unknown outcome, and the call is sent again, under the same id, until one is confirmed.
BOOST_AUTO_TEST_CASE(a_durable_grant_counts_once_its_wait_confirms_it)
{
    fixture f(2);
    f.acquire(1);
    BOOST_TEST_REQUIRE(f.link->calls.size() == 2u);
    BOOST_TEST(f.link->calls[1].wait.find("WAIT") != std::string::npos);
    f.link->calls[1].handler({}, granted(9, 1));
    f.link->calls[1].wait_handler({}, integer_reply(1)); // one replica of two
    f.run();
    BOOST_TEST(!f.result.has_value());
    BOOST_TEST_REQUIRE(f.link->calls.size() == 3u);
    BOOST_TEST(f.link->function(2) == "acquire");
    BOOST_TEST(f.link->calls[2].bytes == f.link->calls[1].bytes); // the same id
    f.link->calls[2].wait_handler({}, integer_reply(2));          // WAIT's reply first, then the call's
    f.run();
    BOOST_TEST(!f.result.has_value());
    f.link->calls[2].handler({}, granted(9, 1));
    f.run();
    BOOST_TEST_REQUIRE(f.result.has_value());
    BOOST_TEST(!*f.result);
    BOOST_TEST(f.permit.fencing_token() == 9u);
}

BOOST_AUTO_TEST_CASE(the_close_of_the_connection_fails_a_pending_acquire)
{
    fixture f;
    f.acquire(1);
    f.link->on_closed();
    f.run();
    BOOST_TEST_REQUIRE(f.result.has_value());
    BOOST_TEST((*f.result == asio_sync::error::closed));
}

BOOST_AUTO_TEST_SUITE_END()
