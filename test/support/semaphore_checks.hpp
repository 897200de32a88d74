// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_TEST_SUPPORT_SEMAPHORE_CHECKS_HPP
#define ASIO_SYNC_TEST_SUPPORT_SEMAPHORE_CHECKS_HPP

// The fixture and the checks that the tests of asio_sync::semaphore share.

#include "support/handler.hpp"

#include <asio_sync/semaphore.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/system/error_code.hpp>
#include <boost/system/system_error.hpp>
#include <boost/test/unit_test.hpp>

#include <cstddef>
#include <memory>
#include <utility>

namespace asio_sync::test {

// A semaphore with `Permits` free permits, on an io_context of its own.
template <std::size_t Permits>
struct semaphore_with
{
    boost::asio::io_context io;
    asio_sync::semaphore sem{io, Permits};
};

// Checks how many permits `sem` has free and how many acquires wait on it.
inline void check_counts(const asio_sync::semaphore& sem, std::size_t available, std::size_t waiting)
{
    BOOST_TEST(sem.available() == available);
    BOOST_TEST(sem.waiting() == waiting);
}

// Starts `sem.async_acquire(n..., handler)` with a handler that records its completion, and
// returns where it records it.
template <class... N>
std::shared_ptr<outcome> record_acquire(asio_sync::semaphore& sem, N... n)
{
    auto [out, handler] = make_record();
    sem.async_acquire(static_cast<std::size_t>(n)..., handler);
    return out;
}

// Checks that `f()` throws a system_error carrying `expected`.
template <class F>
void check_throws_code(F&& f, const boost::system::error_code& expected)
{
    try
    {
        std::forward<F>(f)();
        BOOST_ERROR("no exception was thrown");
    }
    catch (const boost::system::system_error& e)
    {
        BOOST_TEST(e.code() == expected);
    }
}

} // namespace asio_sync::test

#endif // ASIO_SYNC_TEST_SUPPORT_SEMAPHORE_CHECKS_HPP
