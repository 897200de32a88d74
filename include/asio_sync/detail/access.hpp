// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_DETAIL_ACCESS_HPP
#define ASIO_SYNC_DETAIL_ACCESS_HPP

#include <cstddef>
#include <utility>

namespace asio_sync::detail {

// The one way into the private members of asio_sync's classes, for the library's other classes
// and for the tests: a class that has members to share befriends `access` and no one else, and
// each function here says what it reaches and for whom (as Boost.MySQL's detail::access does).
struct access
{
    // A permit made by its semaphore, with the constructor only the semaphore may call.
    template <class T, class... Args>
    static T construct(Args&&... args)
    {
        return T(std::forward<Args>(args)...);
    }

    // The acquire whose handler receives what `grant` makes of the outcome, with a deadline or
    // without (detail/deadline.hpp), on which the mutexes build their locks.
    template <class Signature, class Semaphore, class Grant, class Token, class Deadline, class CallSite>
    static auto async_acquire_as(Semaphore& semaphore, std::size_t n, const Grant& grant, Token&& token,
                                 Deadline expiry, CallSite where)
    {
        return semaphore.template async_acquire_as<Signature>(n, grant, std::forward<Token>(token), expiry,
                                                              where);
    }

    // The service entry of a semaphore, for the locks built on one: their names in Asio's handler
    // tracking, and their observer.
    template <class Semaphore>
    static auto& entry(Semaphore& semaphore) noexcept
    {
        return semaphore.impl_;
    }

    // The state of a semaphore_core that its interface does not show, which the interleaving
    // checker (test/semaphore_core.cpp) checks after every step.
    template <class Core>
    static const auto& state(const Core& core) noexcept
    {
        return core.state_;
    }

    template <class Core>
    static constexpr std::size_t divert_flag() noexcept
    {
        return Core::divert_flag;
    }

    template <class Core>
    static std::size_t debt(const Core& core) noexcept
    {
        return core.debt_;
    }

    template <class Core>
    static const auto& mutex(const Core& core) noexcept
    {
        return core.mutex_;
    }
};

} // namespace asio_sync::detail

#endif // ASIO_SYNC_DETAIL_ACCESS_HPP
