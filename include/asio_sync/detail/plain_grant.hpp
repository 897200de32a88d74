// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_DETAIL_PLAIN_GRANT_HPP
#define ASIO_SYNC_DETAIL_PLAIN_GRANT_HPP

#include <asio_sync/detail/acquire_op.hpp>
#include <asio_sync/detail/semaphore_core.hpp>
#include <asio_sync/detail/submit.hpp>
#include <asio_sync/detail/waiter_list.hpp>

#include <boost/system/error_code.hpp>

#include <cstddef>
#include <tuple>

namespace asio_sync::detail {

// The grant (see grant.hpp) of async_acquire: the handler receives only the error code, and the
// permits leave circulation until the caller releases them.
struct plain_grant
{
    static constexpr bool to_permit = false;

    semaphore_core<>* core;

    std::tuple<boost::system::error_code> operator()(boost::system::error_code ec) const noexcept
    {
        return std::tuple<boost::system::error_code>(ec);
    }

    // Nothing owns the permits of a completion that could not be delivered: release them, as a
    // cancelled waiter's are handed on.
    void undelivered(std::size_t n) const noexcept
    {
        waiter_list done;
        core->release(n, done); // cannot fail: the permits came from circulation
        complete_all(done, relation::continuation);
    }
};

} // namespace asio_sync::detail

#endif // ASIO_SYNC_DETAIL_PLAIN_GRANT_HPP
