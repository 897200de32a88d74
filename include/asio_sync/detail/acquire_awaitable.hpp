#ifndef ASIO_SYNC_DETAIL_ACQUIRE_AWAITABLE_HPP
#define ASIO_SYNC_DETAIL_ACQUIRE_AWAITABLE_HPP

#include <boost/asio/async_result.hpp>

#if defined(BOOST_ASIO_HAS_CO_AWAIT)
#include <boost/asio/awaitable.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/error_code.hpp>

#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>
#endif

namespace asio_sync::detail {

#if defined(BOOST_ASIO_HAS_CO_AWAIT)

// The coroutine executor of a use_awaitable token; void for any other token.
template <class Token>
struct use_awaitable_executor
{
    using type = void;
};

template <class Executor>
struct use_awaitable_executor<boost::asio::use_awaitable_t<Executor>>
{
    using type = Executor;
};

template <class Token>
using use_awaitable_executor_t = typename use_awaitable_executor<std::decay_t<Token>>::type;

// How many acquires one thread may complete without suspending their coroutines before it
// suspends one (posts its completion), so that a loop of acquires that never wait still lets the
// other handlers of its thread run. Tokio's cooperative budget plays the same role.
inline constexpr unsigned immediate_acquire_budget = 64;

inline bool spend_immediate_acquire_budget() noexcept
{
    thread_local unsigned spent = 0;
    if (++spent < immediate_acquire_budget)
        return true;
    spent = 0;
    return false;
}

// What `co_await` yields for a completion signature: void(error_code) -> void,
// void(error_code, T) -> T; the error code becomes an exception, as with use_awaitable.
template <class Signature>
struct awaitable_value;

template <class... Values>
struct awaitable_value<void(boost::system::error_code, Values...)>
{
    static_assert(sizeof...(Values) <= 1);
    using type = std::tuple_element_t<0, std::tuple<Values..., void>>;
};

template <class Signature>
using awaitable_value_t = typename awaitable_value<Signature>::type;

// `co_await semaphore.async_acquire(use_awaitable)` when the permits are free: the coroutine takes
// them and goes on without suspending, so nothing is posted. Otherwise (and when the budget is
// spent) the ordinary initiation runs, with the coroutine suspended first as use_awaitable does.
template <class Signature, class Executor, class Core, class Grant, class Initiation>
boost::asio::awaitable<awaitable_value_t<Signature>, Executor>
acquire_awaitable(Core& core, std::size_t n, Grant grant, Initiation initiation)
{
    if (spend_immediate_acquire_budget() && core.try_acquire(n, Grant::to_permit))
    {
        if constexpr (std::is_void_v<awaitable_value_t<Signature>>)
            co_return;
        else
            co_return std::get<1>(grant(boost::system::error_code()));
    }
    co_return co_await boost::asio::async_initiate<const boost::asio::deferred_t&, Signature>(
        std::move(initiation), boost::asio::deferred, n);
}

#endif // defined(BOOST_ASIO_HAS_CO_AWAIT)

} // namespace asio_sync::detail

#endif // ASIO_SYNC_DETAIL_ACQUIRE_AWAITABLE_HPP
