// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_DETAIL_ACQUIRE_AWAITABLE_HPP
#define ASIO_SYNC_DETAIL_ACQUIRE_AWAITABLE_HPP

#include <asio_sync/call_site.hpp>
#include <asio_sync/detail/holder_records.hpp>
#include <asio_sync/detail/semaphore_service.hpp>
#include <asio_sync/detail/upgrade_core.hpp>

#include <boost/asio/async_result.hpp>

#if defined(BOOST_ASIO_HAS_CO_AWAIT)
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/errc.hpp>
#include <boost/system/error_code.hpp>
#include <boost/system/system_error.hpp>
#include <boost/throw_exception.hpp>

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

    // A failure decided without an operation, as the operation would report it.
    template <class Result>
    static auto fail(Result&& result) -> decltype(value(std::move(result)))
    {
        boost::throw_exception(boost::system::system_error(std::get<0>(result)));
    }

    template <class Result>
    static bool succeeded(const Result&) noexcept
    {
        return true; // a failure was thrown
    }
};

// as_tuple(use_awaitable): the whole tuple, error code first.
template <class Executor>
struct awaitable_token<boost::asio::as_tuple_t<boost::asio::use_awaitable_t<Executor>>>
{
    using executor = Executor;

    template <class Result>
    static Result fail(Result&& result)
    {
        return std::move(result);
    }

    template <class Result>
    static bool succeeded(const Result& result) noexcept
    {
        return !std::get<0>(result);
    }

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

// Whether a holder of `held` that asks an Engine for `requested` waits for itself: an engine with
// modes says so; of a lock of `lock_permits` permits, a holder asking for more than the others
// could give.
template <class Engine, class = void>
struct has_modes : std::false_type
{
};

template <class Engine>
struct has_modes<Engine, std::void_t<decltype(Engine::excludes(std::size_t(), std::size_t()))>>
    : std::true_type
{
};

template <class Engine>
bool excludes_itself(std::size_t lock_permits, std::size_t held, std::size_t requested)
{
    if constexpr (has_modes<Engine>::value)
        return Engine::excludes(held, requested);
    else
        return held + requested > lock_permits;
}

// What the holder registry (ASIO_SYNC_ENABLE_HOLDER_REGISTRY) knows of one coroutine wait: it is
// recorded as waiting from the start, as holding once granted by a lock that records its holders,
// and forgotten otherwise.
class recorded_wait
{
public:
    recorded_wait(service_entry& entry, const void* task, std::size_t mode, const call_site& where)
        : entry_(&entry), mode_(mode),
          record_(holder_records::instance().wait(&entry, entry.names.object, entry.names.address, task, mode,
                                                  where.file(), where.line()))
    {
    }

    recorded_wait(const recorded_wait&) = delete;
    recorded_wait& operator=(const recorded_wait&) = delete;

    ~recorded_wait()
    {
        if (!held_)
            holder_records::instance().forget(record_);
    }

    // An upgrade (an upgrade mutex's upgrading mode) gives up the upgrade mode for the exclusive.
    void granted()
    {
        if (entry_->lock_permits == 0)
            return;
        const bool upgrade = mode_ == upgrading_mode;
        holder_records::instance().hold(record_, upgrade ? std::size_t(exclusive_mode) : mode_,
                                        upgrade ? std::size_t(upgrade_mode) : 0);
        held_ = true;
    }

private:
    service_entry* entry_;
    std::size_t mode_;
    holder_records::iterator record_;
    bool held_ = false;
};

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
acquire_awaitable(std::size_t n, Initiation initiation, [[maybe_unused]] call_site where)
{
    using Grant = typename Initiation::grant_type;
#if defined(ASIO_SYNC_ENABLE_HOLDER_REGISTRY)
    // The coroutine's identity: the flag its Asio coroutine thread keeps, one per co_spawn.
    const void* task = &(co_await boost::asio::detail::awaitable_thread_has_context_switched{});
    service_entry& entry = initiation.entry();
    if (holder_records::instance().holds_excluding(
            &entry, task, n, [&](std::size_t held, std::size_t requested) {
                return excludes_itself<std::decay_t<decltype(initiation.core())>>(entry.lock_permits, held,
                                                                                  requested);
            }))
        co_return awaitable_token<Token>::fail(
            initiation.grant()(make_error_code(boost::system::errc::resource_deadlock_would_occur)));
    recorded_wait recorded(entry, task, n, where);
#endif
    if (immediate_acquires_in_a_row() >= immediate_acquire_budget)
    {
        immediate_acquires_in_a_row() = 0;
        co_await boost::asio::post(co_await boost::asio::this_coro::executor, boost::asio::deferred);
    }
    if (initiation.core().try_acquire(n, Grant::to_permit))
    {
        ++immediate_acquires_in_a_row();
#if defined(ASIO_SYNC_ENABLE_HOLDER_REGISTRY)
        recorded.granted();
#endif
        co_return awaitable_token<Token>::value(initiation.grant()(boost::system::error_code()));
    }
    immediate_acquires_in_a_row() = 0; // the acquire below suspends
    auto deferred = awaitable_token<Token>::deferred();
#if defined(ASIO_SYNC_ENABLE_HOLDER_REGISTRY)
    if constexpr (std::is_void_v<awaitable_value_t<Token, Grant>>)
    {
        co_await boost::asio::async_initiate<decltype(deferred), Signature>(std::move(initiation), deferred,
                                                                            n);
        recorded.granted(); // a failure was thrown
    }
    else
    {
        auto result = co_await boost::asio::async_initiate<decltype(deferred), Signature>(
            std::move(initiation), deferred, n);
        if (awaitable_token<Token>::succeeded(result))
            recorded.granted();
        co_return result;
    }
#else
    co_return co_await boost::asio::async_initiate<decltype(deferred), Signature>(std::move(initiation),
                                                                                  deferred, n);
#endif
}

#endif // defined(BOOST_ASIO_HAS_CO_AWAIT)

} // namespace asio_sync::detail

#endif // ASIO_SYNC_DETAIL_ACQUIRE_AWAITABLE_HPP
