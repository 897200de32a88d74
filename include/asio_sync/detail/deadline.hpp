// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_DETAIL_DEADLINE_HPP
#define ASIO_SYNC_DETAIL_DEADLINE_HPP

#include <chrono>
#include <type_traits>

namespace asio_sync::detail {

// Every timed wait of the family ends at a point on one clock, the one its timer runs on.
using deadline_clock = std::chrono::steady_clock;
using deadline_type = deadline_clock::time_point;

// What a wait without a time limit passes where a timed one passes its deadline_type.
struct no_deadline
{
};

// A time limit counted from the moment the wait queues: a `_for` wait passes this rather than a
// deadline, so that one decided at once never reads the clock.
struct timeout
{
    deadline_clock::duration duration;
};

// `d` rounded up to the clock's tick, saturated to [0, max]. Zero, negative or not a number (a
// floating-point NaN): the wait gives up unless it can be decided without waiting.
template <class Rep, class Period>
timeout deadline_after(const std::chrono::duration<Rep, Period>& d)
{
    using tick = deadline_clock::duration;
    if (!(d > d.zero()))
        return {tick::zero()};
    if (std::chrono::duration<double>(d) >= std::chrono::duration<double>(tick::max()))
        return {tick::max()};
    return {std::chrono::ceil<tick>(d)};
}

// Where a time limit ends, read when the wait queues: now plus the limit, saturated.
inline deadline_type deadline_of(timeout t) noexcept
{
    const deadline_type now = deadline_clock::now();
    return t.duration >= deadline_type::max() - now ? deadline_type::max() : now + t.duration;
}

inline deadline_type deadline_of(deadline_type t) noexcept
{
    return t;
}

// A time point of any clock as a deadline. A steady_clock time point is taken as it is (rounded
// up, saturated); another clock's is converted once, at the call, as the time left until it, so
// a later jump of that clock (a system_clock set back) does not move the deadline.
template <class Clock, class Duration>
deadline_type deadline_at(const std::chrono::time_point<Clock, Duration>& t)
{
    if constexpr (std::is_same_v<Clock, deadline_clock>)
    {
        using tick = deadline_clock::duration;
        const std::chrono::duration<double> since = t.time_since_epoch();
        if (!(since > std::chrono::duration<double>(tick::min()))) // or not a number
            return deadline_type::min();
        if (since >= std::chrono::duration<double>(tick::max()))
            return deadline_type::max();
        return deadline_type(std::chrono::ceil<tick>(t.time_since_epoch()));
    }
    else
    {
        // Compared with the clock's time in their common duration, which may not hold the time
        // point (`hours::max()` in nanoseconds): one beyond its range is taken as never, or past;
        // one that is not a number, as past.
        using common = std::common_type_t<Duration, typename Clock::duration>;
        const std::chrono::duration<double> since = t.time_since_epoch();
        if (!(since > std::chrono::duration<double>(common::min())))
            return deadline_clock::now();
        if (since >= std::chrono::duration<double>(common::max()))
            return deadline_type::max();
        const auto now = Clock::now();
        if (t <= now)
            return deadline_clock::now();
        return deadline_of(deadline_after(t - now));
    }
}

} // namespace asio_sync::detail

#endif // ASIO_SYNC_DETAIL_DEADLINE_HPP
