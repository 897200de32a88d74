// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#define BOOST_TEST_MODULE redis_error
#include <asio_sync/error.hpp>
#include <asio_sync/redis/error.hpp>

#include <boost/system/error_code.hpp>
#include <boost/test/unit_test.hpp>

#include <cstring>
#include <set>
#include <string>
#include <type_traits>

namespace {

namespace redis = asio_sync::redis;

constexpr redis::error all_errors[] = {
    redis::error::connection_lost,     redis::error::server_error,      redis::error::auth_failed,
    redis::error::unsupported_command, redis::error::capacity_mismatch, redis::error::wrong_type,
    redis::error::lease_lost,          redis::error::no_permission,     redis::error::read_only,
    redis::error::out_of_memory,       redis::error::cluster_redirect,  redis::error::invalid_argument,
    redis::error::state_lost,          redis::error::eviction_policy,   redis::error::stale_fence,
    redis::error::unknown_master,      redis::error::no_replicas,       redis::error::replica_policy,
    redis::error::too_many_redirections, redis::error::cluster_disabled};

} // namespace

BOOST_AUTO_TEST_SUITE(redis_error)

static_assert(boost::system::is_error_code_enum<redis::error>::value);
static_assert(std::is_convertible_v<redis::error, boost::system::error_code>);

BOOST_AUTO_TEST_CASE(converts_to_error_code_through_adl)
{
    const boost::system::error_code implicit = redis::error::connection_lost;
    BOOST_TEST(implicit.value() == 1);
    BOOST_TEST(&implicit.category() == &redis::error_category());
    BOOST_TEST(implicit.failed());

    // Unqualified: found only by argument-dependent lookup.
    const boost::system::error_code found = make_error_code(redis::error::server_error);
    BOOST_TEST((found == redis::error::server_error));
    BOOST_TEST((found != redis::error::connection_lost));
}

BOOST_AUTO_TEST_CASE(category_is_named_and_apart_from_the_core_one)
{
    BOOST_TEST(std::strcmp(redis::error_category().name(), "asio_sync.redis") == 0);
    // The same value in the core's category is another error.
    const boost::system::error_code core = asio_sync::error::closed;
    const boost::system::error_code here = redis::error::connection_lost;
    BOOST_TEST(core.value() == here.value());
    BOOST_TEST((core != here));
}

BOOST_AUTO_TEST_CASE(messages_are_distinct_and_not_empty)
{
    std::set<std::string> messages;
    for (const auto e : all_errors)
    {
        const boost::system::error_code ec = e;
        const std::string message = ec.message();
        BOOST_TEST(!message.empty());
        BOOST_TEST(messages.insert(message).second, "duplicate message: " << message);
        char buffer[8];
        BOOST_TEST(redis::error_category().message(ec.value(), buffer, sizeof buffer) == message);
    }
    BOOST_TEST(redis::error_category().message(0) == "unknown asio_sync.redis error");
}

BOOST_AUTO_TEST_CASE(a_second_instance_is_the_same_category)
{
    const redis::detail::error_category_impl other_instance;
    BOOST_TEST((other_instance == redis::error_category()));
    const boost::system::error_code a(1, other_instance);
    const boost::system::error_code b = redis::error::connection_lost;
    BOOST_TEST((a == b));
}

BOOST_AUTO_TEST_SUITE_END()
