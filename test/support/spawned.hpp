// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_TEST_SUPPORT_SPAWNED_HPP
#define ASIO_SYNC_TEST_SUPPORT_SPAWNED_HPP

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/test/unit_test.hpp>

#include <exception>
#include <utility>

#if defined(BOOST_ASIO_HAS_CO_AWAIT) // coroutines need C++20: the _cxx17 builds leave this out

namespace asio_sync::test {

// A coroutine co_spawned on `io`, and where it ends: how often its completion ran and what
// escaped it.
struct spawned
{
    int calls = 0;
    std::exception_ptr error;

    template <class F>
    spawned(boost::asio::io_context& io, F f)
    {
        boost::asio::co_spawn(io, std::move(f), [this](std::exception_ptr e) {
            ++calls;
            error = e;
        });
    }

    spawned(const spawned&) = delete;
    spawned& operator=(const spawned&) = delete;

    // Checks that the coroutine finished exactly once without an exception escaping it, and
    // names the exception that did.
    void check_finished() const
    {
        BOOST_TEST(calls == 1);
        if (error)
        {
            try
            {
                std::rethrow_exception(error);
            }
            catch (const std::exception& e)
            {
                BOOST_ERROR("the coroutine threw: " << e.what());
            }
            catch (...)
            {
                BOOST_ERROR("the coroutine threw a non-std exception");
            }
        }
    }
};

} // namespace asio_sync::test

#endif

#endif // ASIO_SYNC_TEST_SUPPORT_SPAWNED_HPP
