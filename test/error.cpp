// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#define BOOST_TEST_MODULE error
#include <asio_sync/error.hpp>

#include <boost/asio/error.hpp>
#include <boost/system/error_code.hpp>
#include <boost/test/unit_test.hpp>

#include <cstring>
#include <set>
#include <string>
#include <type_traits>

namespace {

constexpr asio_sync::error all_errors[] = {asio_sync::error::closed, asio_sync::error::too_many_permits,
                                           asio_sync::error::timed_out, asio_sync::error::no_upgrade_lock};

} // namespace

BOOST_AUTO_TEST_SUITE(error)

static_assert(boost::system::is_error_code_enum<asio_sync::error>::value);
static_assert(std::is_convertible_v<asio_sync::error, boost::system::error_code>);

BOOST_AUTO_TEST_CASE(converts_to_error_code_through_adl)
{
    boost::system::error_code implicit = asio_sync::error::closed;
    BOOST_TEST(implicit.value() == static_cast<int>(asio_sync::error::closed));
    BOOST_TEST(&implicit.category() == &asio_sync::error_category());
    BOOST_TEST(implicit.failed());

    // Unqualified: found only by argument-dependent lookup.
    const boost::system::error_code found = make_error_code(asio_sync::error::too_many_permits);
    BOOST_TEST(found.value() == static_cast<int>(asio_sync::error::too_many_permits));
    BOOST_TEST(&found.category() == &asio_sync::error_category());

    BOOST_TEST((implicit == asio_sync::error::closed));
    BOOST_TEST((implicit != asio_sync::error::too_many_permits));
    BOOST_TEST((found == asio_sync::error::too_many_permits));
}

BOOST_AUTO_TEST_CASE(category_is_named_asio_sync)
{
    BOOST_TEST(std::strcmp(asio_sync::error_category().name(), "asio_sync") == 0);
    const boost::system::error_code ec = asio_sync::error::closed;
    BOOST_TEST(std::strcmp(ec.category().name(), "asio_sync") == 0);
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
        BOOST_TEST(asio_sync::error_category().message(ec.value(), buffer, sizeof buffer) == message);
    }
    BOOST_TEST(messages.size() == std::size(all_errors));
}

BOOST_AUTO_TEST_CASE(copies_compare_equal)
{
    const boost::system::error_code original = asio_sync::error::closed;
    const boost::system::error_code copy = original;
    BOOST_TEST(copy == original);
    BOOST_TEST(!(copy != original));
    BOOST_TEST(copy.message() == original.message());

    // A second instance of the category, as another shared library would hold, is the same category.
    const asio_sync::detail::error_category_impl other_instance;
    BOOST_TEST((other_instance == asio_sync::error_category()));
    const boost::system::error_code from_other(static_cast<int>(asio_sync::error::closed), other_instance);
    BOOST_TEST(from_other == original);
    BOOST_TEST((from_other == asio_sync::error::closed));
}

BOOST_AUTO_TEST_CASE(values_start_at_one)
{
    BOOST_TEST(static_cast<int>(asio_sync::error::closed) == 1);
    BOOST_TEST(static_cast<int>(asio_sync::error::too_many_permits) == 2);

    const boost::system::error_code success;
    for (const auto e : all_errors)
    {
        BOOST_TEST((success != e));
    }
}

BOOST_AUTO_TEST_CASE(differs_from_asio_errors)
{
    const boost::system::error_code closed = asio_sync::error::closed;
    const boost::system::error_code aborted = boost::asio::error::operation_aborted;
    BOOST_TEST(closed != aborted);
    BOOST_TEST((closed.category() != aborted.category()));
    // A timeout is not a cancellation, and not the system's ETIMEDOUT either.
    const boost::system::error_code timed_out = asio_sync::error::timed_out;
    BOOST_TEST(timed_out != aborted);
    BOOST_TEST(timed_out != boost::system::error_code(boost::asio::error::timed_out));
}

BOOST_AUTO_TEST_CASE(unknown_value_has_a_generic_message)
{
    const boost::system::error_code zero(0, asio_sync::error_category());
    const boost::system::error_code unknown(99, asio_sync::error_category());
    BOOST_TEST(unknown.message() == "unknown asio_sync error");
    BOOST_TEST(zero.message() == "unknown asio_sync error");
    for (const auto e : all_errors)
    {
        const boost::system::error_code known = e;
        BOOST_TEST(known.message() != unknown.message());
    }
}

BOOST_AUTO_TEST_SUITE_END()
