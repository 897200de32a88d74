// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_REDIS_DETAIL_CHECKED_SEMAPHORE_OPTIONS_HPP
#define ASIO_SYNC_REDIS_DETAIL_CHECKED_SEMAPHORE_OPTIONS_HPP

// A semaphore's options, checked once, at its construction, and then passed whole to every layer
// that reads them (the engine, the client state machine): the lease within its range, the safety
// margin resolved (its default) and within half the lease.

#include <asio_sync/redis/semaphore_options.hpp>

#include <boost/throw_exception.hpp>

#include <chrono>
#include <stdexcept>

namespace asio_sync::redis::detail {

class checked_semaphore_options
{
public:
    // Throws std::invalid_argument if the lease is not within [min_lease, max_lease], or the
    // safety margin not within [0, lease / 2].
    checked_semaphore_options(const semaphore_options& options, std::chrono::milliseconds min_lease,
                              std::chrono::milliseconds max_lease)
        : options_(options)
    {
        if (options_.lease_duration < min_lease || options_.lease_duration > max_lease)
            boost::throw_exception(
                std::invalid_argument("asio_sync::redis::basic_semaphore: lease_duration out of range"));
        const std::chrono::milliseconds margin = options_.safety_margin.value_or(
            semaphore_options::default_safety_margin(options_.lease_duration));
        if (margin.count() < 0 || margin > options_.lease_duration / 2)
            boost::throw_exception(
                std::invalid_argument("asio_sync::redis::basic_semaphore: safety_margin out of range"));
        options_.safety_margin = margin;
    }

    std::chrono::milliseconds lease() const noexcept { return options_.lease_duration; }
    std::chrono::milliseconds safety_margin() const noexcept { return *options_.safety_margin; }
    bool adopt_capacity() const noexcept { return options_.adopt_capacity; }
    unsigned durable_replicas() const noexcept { return options_.durable_replicas; }

    // Grants are confirmed by the replicas: a published grant is only a hint.
    bool durable() const noexcept { return options_.durable_replicas != 0; }

private:
    semaphore_options options_; // its safety margin set
};

} // namespace asio_sync::redis::detail

#endif // ASIO_SYNC_REDIS_DETAIL_CHECKED_SEMAPHORE_OPTIONS_HPP
