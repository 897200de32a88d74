// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_IMPL_ADAPTIVE_LIMITER_HPP
#define ASIO_SYNC_IMPL_ADAPTIVE_LIMITER_HPP

#include <asio_sync/detail/access.hpp>
#include <asio_sync/limit_sample.hpp>

#include <boost/system/error_code.hpp>

#include <cstddef>
#include <mutex>
#include <optional>
#include <tuple>
#include <utility>

namespace asio_sync {

template <class Executor>
std::tuple<boost::system::error_code, typename basic_adaptive_limiter<Executor>::permit>
basic_adaptive_limiter<Executor>::permit_grant::operator()(boost::system::error_code ec) const
{
    if (ec)
        return {ec, detail::access::construct<permit>(limiter, std::size_t(0), std::size_t(0))};
    return {ec, detail::access::construct<permit>(limiter, n, limiter->in_flight_at_grant())};
}

template <class Executor>
template <class Token, class Deadline>
auto basic_adaptive_limiter<Executor>::acquire_until(std::size_t n, Token&& token, Deadline expiry,
                                                     call_site where)
{
    // More than the ceiling can never be granted: asking the unbounded semaphore for more than
    // it can count fails the same way, at once, through the token, with nothing queued.
    const std::size_t asked = n > max_limit() ? basic_semaphore<Executor>::max_permits + 1 : n;
    return detail::access::async_acquire_as<void(boost::system::error_code, permit)>(
        semaphore_, asked, permit_grant{this, n}, std::forward<Token>(token), expiry, where);
}

template <class Executor>
auto basic_adaptive_limiter<Executor>::try_acquire(std::size_t n) -> std::optional<permit>
{
    if (n > max_limit() || !semaphore_.try_acquire(n))
        return std::nullopt;
    return detail::access::construct<permit>(this, n, in_flight_at_grant());
}

// The permits held after this grant: the limit less those left. A snapshot that a concurrent
// change of the limit may skew by the size of the change; the algorithms use it only to tell
// whether the work fills the limit.
template <class Executor>
std::size_t basic_adaptive_limiter<Executor>::in_flight_at_grant() const noexcept
{
    const std::size_t current = limit();
    const std::size_t left = semaphore_.available();
    return current > left ? current - left : 0;
}

// The algorithm learns the sample and the semaphore's capacity follows it under the same lock, so
// that the capacity moves in the order of the algorithm's decisions. The semaphore posts the
// waiters it completes: no handler runs under the lock. The listener runs after it.
template <class Executor>
void basic_adaptive_limiter<Executor>::give_back(std::size_t n, const limit_sample* sample) noexcept
{
    std::size_t old_limit = 0;
    std::size_t new_limit = 0;
    if (sample)
    {
        std::lock_guard<std::mutex> lock(sample_mutex_);
        old_limit = limit_.load(std::memory_order_relaxed);
        algorithm_->on_sample(*sample);
        new_limit = algorithm_->limit();
        if (new_limit > old_limit)
            semaphore_.add_permits(new_limit - old_limit);
        else if (new_limit < old_limit)
            semaphore_.reduce_permits(old_limit - new_limit);
        limit_.store(new_limit, std::memory_order_relaxed);
    }
    semaphore_.release(n);
    if (new_limit != old_limit && listener_)
        listener_(old_limit, new_limit, sample->dropped ? limit_reason::dropped : limit_reason::success);
}

} // namespace asio_sync

#endif // ASIO_SYNC_IMPL_ADAPTIVE_LIMITER_HPP
