// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#include <asio_sync.hpp>

#include <boost/asio/io_context.hpp>

int main()
{
    boost::asio::io_context ctx;
    asio_sync::semaphore sem(ctx, 1);
    return sem.try_acquire() ? 0 : 1;
}
