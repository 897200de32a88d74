// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_TEST_SUPPORT_REDIS_PRINTING_HPP
#define ASIO_SYNC_TEST_SUPPORT_REDIS_PRINTING_HPP

#include <asio_sync/redis/error.hpp>

#include <ostream>

namespace asio_sync::redis {

// Lets BOOST_TEST print an asio_sync::redis::error when a comparison fails.
inline std::ostream& boost_test_print_type(std::ostream& os, error e)
{
    return os << make_error_code(e);
}

} // namespace asio_sync::redis

#endif // ASIO_SYNC_TEST_SUPPORT_REDIS_PRINTING_HPP
