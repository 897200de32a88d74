// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_TEST_SUPPORT_REDIS_LIBRARY_HPP
#define ASIO_SYNC_TEST_SUPPORT_REDIS_LIBRARY_HPP

// What the tests of asio_sync::redis' function libraries share: a library with its server clock
// set by the test, and the fences it hands out named in the order they appear.

#include "redis_server.hpp"

#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>

namespace asio_sync::test {

// The library `source` with its server clock replaced, as only a test builds it: server_time (the
// function between the library's "server clock" marker lines) reads the microseconds that
// asio_sync_test_set_clock stored, so that a test places a call at an instant it chose (a deadline,
// a fence) instead of racing the clock. One server holds one such library at a time.
inline std::string library_with_a_set_clock(std::string_view source)
{
    const std::string_view begin = "-- BEGIN server clock", end = "-- END server clock";
    const std::size_t from = source.find(begin), to = source.find(end);
    if (from == std::string_view::npos || to == std::string_view::npos)
        throw std::logic_error("library_with_a_set_clock: no server clock in the library");
    return std::string(source.substr(0, from)) + R"lua(
local set_clock_us = 0
local function server_time()
    return math.floor(set_clock_us / 1000000), set_clock_us % 1000000
end
redis.register_function('asio_sync_test_set_clock', function(_, args)
    set_clock_us = tonumber(args[1])
    return 'ok'
end)
)lua" + std::string(source.substr(to + end.size()));
}

// Sets the clock of the library that library_with_a_set_clock built, in microseconds.
inline void set_server_clock(redis_server::client& client, std::uint64_t us)
{
    BOOST_TEST_REQUIRE(client.command({"FCALL", "asio_sync_test_set_clock", "0", std::to_string(us)}) ==
                       "ok");
}

// Fences are the server's clock in microseconds (or just above the last one): a test names them
// F1, F2, ... in the order it first sees them, and checks that each new one is greater than all
// those seen before, so that a test that reads its grants in grant order also proves that fences
// grow.
class fence_names
{
public:
    std::string name(const std::string& fence)
    {
        const std::uint64_t value = std::stoull(fence);
        const auto [it, added] = names_.emplace(value, "F" + std::to_string(names_.size() + 1));
        if (added)
        {
            BOOST_TEST(value > last_, "fence " << value << " is not above the last new one, " << last_);
            last_ = value;
        }
        return it->second;
    }

private:
    std::map<std::uint64_t, std::string> names_;
    std::uint64_t last_ = 0;
};

} // namespace asio_sync::test

#endif // ASIO_SYNC_TEST_SUPPORT_REDIS_LIBRARY_HPP
