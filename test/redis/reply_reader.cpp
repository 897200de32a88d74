// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#define BOOST_TEST_MODULE redis_reply_reader

// The reply parser: hiredis' reader fed the bytes a server sends, each reply copied out whole.

#include <asio_sync/redis/detail/reply_reader.hpp>

#include <boost/test/unit_test.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace {

namespace redis = asio_sync::redis;
using namespace std::string_view_literals;
using reader = redis::detail::reply_reader;

// Feeds `bytes` and takes every complete reply.
std::vector<redis::reply> parse(reader& r, std::string_view bytes)
{
    BOOST_REQUIRE(r.feed(bytes.data(), bytes.size()));
    std::vector<redis::reply> replies;
    redis::reply one;
    while (r.next(one) == reader::result::reply)
        replies.push_back(one);
    return replies;
}

} // namespace

BOOST_AUTO_TEST_SUITE(redis_reply_reader)

BOOST_AUTO_TEST_CASE(copies_every_kind_of_reply)
{
    reader r;
    const auto replies = parse(r, "+OK\r\n-ERR bad\r\n:-42\r\n$5\r\na\0b\r\n\r\n$-1\r\n*-1\r\n"
                                  "*2\r\n$1\r\nx\r\n*1\r\n:7\r\n"
                                  "*0\r\n"sv);
    BOOST_REQUIRE(replies.size() == 8u);
    BOOST_TEST((replies[0].kind == redis::reply_kind::status));
    BOOST_TEST(replies[0].text == "OK");
    BOOST_TEST((replies[1].kind == redis::reply_kind::error));
    BOOST_TEST(replies[1].text == "ERR bad");
    BOOST_TEST((replies[2].kind == redis::reply_kind::integer));
    BOOST_TEST(replies[2].integer == -42);
    BOOST_TEST((replies[3].kind == redis::reply_kind::string));
    BOOST_TEST(replies[3].text == std::string("a\0b\r\n", 5));
    BOOST_TEST((replies[4].kind == redis::reply_kind::nil)); // null bulk string
    BOOST_TEST((replies[5].kind == redis::reply_kind::nil)); // null array
    BOOST_TEST((replies[6].kind == redis::reply_kind::array));
    BOOST_REQUIRE(replies[6].elements.size() == 2u);
    BOOST_TEST(replies[6].elements[0].text == "x");
    BOOST_REQUIRE(replies[6].elements[1].elements.size() == 1u);
    BOOST_TEST(replies[6].elements[1].elements[0].integer == 7);
    BOOST_TEST((replies[7].kind == redis::reply_kind::array));
    BOOST_TEST(replies[7].elements.empty());
    const auto empty = parse(r, "");
    BOOST_TEST(empty.empty());
}

BOOST_AUTO_TEST_CASE(waits_for_the_rest_of_a_reply)
{
    reader r;
    const std::string_view bytes = "*2\r\n$3\r\nabc\r\n:12\r\n";
    for (std::size_t i = 0; i + 1 < bytes.size(); ++i)
        BOOST_TEST(parse(r, bytes.substr(i, 1)).empty());
    const auto replies = parse(r, bytes.substr(bytes.size() - 1));
    BOOST_REQUIRE(replies.size() == 1u);
    BOOST_TEST(replies[0].elements[0].text == "abc");
    BOOST_TEST(replies[0].elements[1].integer == 12);
}

BOOST_AUTO_TEST_CASE(reports_bytes_that_are_not_resp)
{
    reader r;
    BOOST_REQUIRE(r.feed("!garbage\r\n", 10));
    redis::reply one;
    BOOST_TEST((r.next(one) == reader::result::error));
}

BOOST_AUTO_TEST_SUITE_END()
