// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_DETAIL_ACQUIRE_AWAITABLE_HPP
#define ASIO_SYNC_DETAIL_ACQUIRE_AWAITABLE_HPP

#include <boost/asio/async_result.hpp>

#if defined(BOOST_ASIO_HAS_CO_AWAIT)
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/error_code.hpp>

#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>
#endif

namespace asio_sync::detail {

#if defined(BOOST_ASIO_HAS_CO_AWAIT)

// How many acquires one thread may complete in a row without suspending their coroutines before
// one of them suspends first, so that a loop of acquires that never wait still lets the other
// handlers of its thread run. Tokio's cooperative budget plays the same role.
inline constexpr unsigned immediate_acquire_budget = 64;

// The acquires completed in a row on this thread without suspending. Read through this function
// each time, never kept across a suspension: the coroutine may resume on another thread.
inline unsigned& immediate_acquires_in_a_row() noexcept
{
    thread_local unsigned count = 0;
    return count;
}

// The awaitable tokens whose acquires may go on without suspending, and what `co_await` yields
// for a completion signature void(error_code, Values...). Other tokens: `executor` is void.
template <class Token>
struct awaitable_token
{
    using executor = void;
};

// use_awaitable: void or the value; an error code becomes an exception.
template <class Executor>
struct awaitable_token<boost::asio::use_awaitable_t<Executor>>
{
    using executor = Executor;

    template <class... Values>
    static std::tuple_element_t<0, std::tuple<Values..., void>>
    value(std::tuple<boost::system::error_code, Values...>&& result)
    {
        static_assert(sizeof...(Values) <= 1);
        if constexpr (sizeof...(Values) == 1)
            return std::get<1>(std::move(result));
    }

    static boost::asio::deferred_t deferred() noexcept { return boost::asio::deferred; }
};

// as_tuple(use_awaitable): the whole tuple, error code first.
template <class Executor>
struct awaitable_token<boost::asio::as_tuple_t<boost::asio::use_awaitable_t<Executor>>>
{
    using executor = Executor;

    template <class Result>
    static Result value(Result&& result)
    {
        return std::move(result);
    }

    static boost::asio::as_tuple_t<boost::asio::deferred_t> deferred() noexcept
    {
        return boost::asio::as_tuple(boost::asio::deferred);
    }
};

template <class Token>
using awaitable_executor_t = typename awaitable_token<std::decay_t<Token>>::executor;

template <class Token, class Grant>
using awaitable_value_t = decltype(awaitable_token<Token>::value(
    std::declval<std::invoke_result_t<const Grant&, boost::system::error_code>>()));

// `co_await semaphore.async_acquire(use_awaitable)` when the permits are free: the coroutine takes
// them and goes on without suspending, so nothing is posted. Otherwise the ordinary initiation
// runs as an async operation awaited in this frame, with the coroutine suspended first, as
// use_awaitable does. Once the budget is spent, the coroutine first yields (a plain post) and
// only then tries: it holds no permit while other handlers run, which would make the acquires of
// other coroutines queue behind it. The initiation carries the semaphore and the grant, so the
// frame holds each once.
template <class Signature, class Token, class Initiation>
boost::asio::awaitable<awaitable_value_t<Token, typename Initiation::grant_type>,
                       typename awaitable_token<Token>::executor>
acquire_awaitable(std::size_t n, Initiation initiation)
{
    using Grant = typename Initiation::grant_type;
    if (immediate_acquires_in_a_row() >= immediate_acquire_budget)
    {
        immediate_acquires_in_a_row() = 0;
        co_await boost::asio::post(co_await boost::asio::this_coro::executor, boost::asio::deferred);
    }
    if (initiation.core().try_acquire(n, Grant::to_permit))
    {
        ++immediate_acquires_in_a_row();
        co_return awaitable_token<Token>::value(initiation.grant()(boost::system::error_code()));
    }
    immediate_acquires_in_a_row() = 0; // the acquire below suspends
    auto deferred = awaitable_token<Token>::deferred();
    co_return co_await boost::asio::async_initiate<decltype(deferred), Signature>(std::move(initiation),
                                                                                  deferred, n);
}

#endif // defined(BOOST_ASIO_HAS_CO_AWAIT)

} // namespace asio_sync::detail

#endif // ASIO_SYNC_DETAIL_ACQUIRE_AWAITABLE_HPP
