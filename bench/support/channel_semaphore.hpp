// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_BENCH_SUPPORT_CHANNEL_SEMAPHORE_HPP
#define ASIO_SYNC_BENCH_SUPPORT_CHANNEL_SEMAPHORE_HPP

// Asio's concurrent_channel used as a semaphore, with the semaphore's shape so that the callback
// and coroutine chains can run on it unchanged: a send takes a slot of the buffer (and completes
// at once while one is free), a receive frees one.

#include <boost/asio/experimental/concurrent_channel.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/system/error_code.hpp>

#include <cstddef>
#include <utility>

namespace asio_sync::bench {

class channel_semaphore
{
public:
    // A channel cannot have a capacity of 0 and still buffer sends, so 0 free permits is a
    // capacity of 1 with its slot taken.
    channel_semaphore(boost::asio::io_context& ctx, std::size_t permits)
        : channel_(ctx, permits == 0 ? 1 : permits), capacity_(permits == 0 ? 1 : permits)
    {
        for (std::size_t taken = permits; taken < capacity_; ++taken)
            channel_.try_send(boost::system::error_code());
    }

    template <class Token>
    auto async_acquire(Token&& token)
    {
        return channel_.async_send(boost::system::error_code(), std::forward<Token>(token));
    }

    // A release without a message in the buffer (a lost acquire) frees nothing, which the idle
    // check catches.
    void release()
    {
        channel_.try_receive([](boost::system::error_code) {});
    }

    // Whether every slot is free and nobody waits, asked when nothing is in flight. Only
    // `permits` == capacity can be checked without taking messages out.
    bool is_idle_now(std::size_t permits) const { return permits == capacity_ && !channel_.ready(); }

private:
    boost::asio::experimental::concurrent_channel<void(boost::system::error_code)> channel_;
    std::size_t capacity_;
};

} // namespace asio_sync::bench

#endif // ASIO_SYNC_BENCH_SUPPORT_CHANNEL_SEMAPHORE_HPP
