// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_REDIS_FENCED_SET_HPP
#define ASIO_SYNC_REDIS_FENCED_SET_HPP

#include <asio_sync/redis/connection.hpp>
#include <asio_sync/redis/detail/access.hpp>
#include <asio_sync/redis/detail/composed_call.hpp>
#include <asio_sync/redis/detail/fence_library.hpp>
#include <asio_sync/redis/detail/semaphore_reply.hpp>
#include <asio_sync/redis/error.hpp>
#include <asio_sync/redis/reply.hpp>

#include <boost/asio/async_result.hpp>
#include <boost/asio/error.hpp>
#include <boost/system/error_code.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace asio_sync::redis {

namespace detail {

// Calls the fenced writes' function; if the server does not have the library (never loaded, a
// FUNCTION FLUSH, a restart without its data), loads it and calls once more. A composed call
// (detail/composed_call.hpp): the handler may destroy the connection and its context.
template <class Executor>
class fenced_set_op
{
public:
    fenced_set_op(basic_connection<Executor>& conn, std::vector<std::string> call)
        : conn_(conn), call_(std::move(call))
    {
    }

    template <class Self>
    void operator()(Self& self)
    {
        conn_.async_execute(call_, std::move(self));
    }

    template <class Self>
    void operator()(Self& self, boost::system::error_code ec, const reply& r)
    {
        if (loading_)
        {
            loading_ = false;
            if (ec)
                return self.complete(decoded_error(ec, r), 0);
            if (self.cancelled())
                return self.complete(boost::asio::error::operation_aborted, 0);
            return conn_.async_execute(call_, std::move(self));
        }
        if (ec == redis::error::server_error && !loaded_ &&
            reply_decoding::from_error(r).what == semaphore_reply::outcome::library_missing)
        {
            if (self.cancelled())
                return self.complete(boost::asio::error::operation_aborted, 0);
            loading_ = loaded_ = true;
            // Loaded on the node that has the key, in a cluster.
            const std::string_view args[] = {"FUNCTION", "LOAD", "REPLACE", fence_library::source};
            formatted_command load = formatted_command::format_for_pipeline(args);
            load.route_to(formatted_command::format_for_pipeline(call_).slot());
            return start_command(access::shared_impl(conn_), conn_.get_executor(), std::move(self),
                                 std::move(load));
        }
        if (ec)
            return self.complete(decoded_error(ec, r), 0);
        std::uint64_t largest = 0;
        if (r.kind != reply_kind::array || r.elements.size() != 2 ||
            r.elements[0].kind != reply_kind::string || !reply_decoding::number(r.elements[1], largest))
            return self.complete(redis::error::server_error, 0);
        if (r.elements[0].text == "written")
            return self.complete({}, largest);
        if (r.elements[0].text == "stale")
            return self.complete(redis::error::stale_fence, largest);
        self.complete(redis::error::server_error, 0);
    }

private:
    // An error reply as the precise code where there is one (WRONGTYPE, NOPERM, READONLY, ...).
    static boost::system::error_code decoded_error(boost::system::error_code ec, const reply& r)
    {
        if (ec != redis::error::server_error)
            return ec;
        const semaphore_reply decoded = reply_decoding::from_error(r);
        return decoded.error ? decoded.error : ec;
    }

    basic_connection<Executor>& conn_;
    std::vector<std::string> call_;
    bool loaded_ = false;  // the library was loaded for this write once
    bool loading_ = false; // the reply awaited is FUNCTION LOAD's
};

} // namespace detail

/// Writes `value` to the string key `key` unless a larger fence has written it before: a check
/// and a set in one server-side function, so that a holder whose permit ended (a paused process,
/// a lost lease) cannot overwrite what a newer holder wrote.
///
/// `fence_key` keeps the largest fence that has written `key`. The write succeeds when `fence` is
/// at least that fence (the same holder may write twice) or when there is none yet; it sets
/// `value` and the new fence together. Otherwise it completes with `error::stale_fence` and the
/// largest fence, and changes nothing. Pass the fencing token of the permit under which the value
/// was computed (`permit::fencing_token()`): fences of one semaphore grow strictly, across
/// restarts and lost state too (see "Fencing tokens" in docs/cluster/how-it-works.md).
///
/// The function `asio_sync_v1_fenced_set` of the library `asio_sync_fence_v1` does the work; it
/// is loaded (`FUNCTION LOAD REPLACE`) when the server does not have it. Programs in other
/// languages call it with `FCALL asio_sync_v1_fenced_set 2 <key> <fence_key> <fence> <value>
/// <ttl_ms>`. In a Redis Cluster both keys must share a slot: give them one hash tag, such as
/// `{report}:value` and `{report}:fence`.
///
/// @par Completion signature
/// `void(boost::system::error_code, std::uint64_t largest)`: `largest` is `fence` on success,
/// the larger fence that refused the write with `error::stale_fence`, and 0 with other errors.
///
/// @par Per-operation cancellation
/// As `basic_connection::async_execute`: a write not yet sent is never sent; one already sent
/// may have run. When the server lacks the library, the call is sent again once the library is
/// loaded: a cancellation of any type that arrives before then completes the write with
/// `operation_aborted`, and the call is not sent again.
///
/// @par Executor
/// The handler is never invoked from within this function; it is submitted to its associated
/// executor (default: the connection's) as if by `boost::asio::post`.
///
/// @par Errors
/// - `error::stale_fence`: refused, see above.
/// - `error::invalid_argument`: `fence` is 0 or not below 2^53, `key` and `fence_key` are the
///   same key, or `fence_key` holds something other than a fence.
/// - `error::wrong_type`: a key holds another type than a string.
/// - `error::no_permission`, `error::read_only`, `error::out_of_memory`, `error::cluster_redirect`,
///   `error::auth_failed`, `error::server_error`: as for the fleet-wide semaphore.
/// - Those of `basic_connection::async_execute`: `error::connection_lost` (the write may have
///   run: writing the same value with the same fence again is safe),
///   `boost::asio::error::operation_aborted`, `asio_sync::error::closed`.
///
/// @par Object lifetimes
/// The connection must exist until the handler is invoked; the handler may destroy it and its
/// execution context. The keys and the value are copied.
///
/// @param conn The connection to the server that holds the resource.
/// @param key The key written: a string key.
/// @param fence_key The key that keeps the largest fence that has written `key`.
/// @param fence The writer's fencing token.
/// @param value The value to write.
/// @param ttl With a positive duration, both keys expire after it (rounded down to milliseconds),
/// so that the record of fences lives as long as the value; with zero, neither expires. A write
/// made after the keys expired finds no fence and succeeds.
/// @param token The completion token.
template <class Executor, class Token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(Executor)>
auto async_fenced_set(basic_connection<Executor>& conn, std::string_view key, std::string_view fence_key,
                      std::uint64_t fence, std::string_view value, std::chrono::milliseconds ttl,
                      Token&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(Executor))
{
    std::vector<std::string> call{"FCALL",
                                  std::string(detail::fence_library::fenced_set),
                                  "2",
                                  std::string(key),
                                  std::string(fence_key),
                                  std::to_string(fence),
                                  std::string(value),
                                  std::to_string(ttl.count() > 0 ? ttl.count() : 0)};
    return boost::asio::async_initiate<Token, void(boost::system::error_code, std::uint64_t)>(
        [&conn](auto handler, std::vector<std::string> args) {
            detail::start_composed_call<void(boost::system::error_code, std::uint64_t)>(
                std::move(handler), conn.get_executor(),
                detail::fenced_set_op<Executor>(conn, std::move(args)));
        },
        token, std::move(call));
}

/// Writes `value` to `key` unless a larger fence has written it before; neither key expires.
///
/// As the overload with a time to live, given zero.
///
/// @param conn The connection to the server that holds the resource.
/// @param key The key written: a string key.
/// @param fence_key The key that keeps the largest fence that has written `key`.
/// @param fence The writer's fencing token.
/// @param value The value to write.
/// @param token The completion token.
template <class Executor, class Token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(Executor)>
auto async_fenced_set(basic_connection<Executor>& conn, std::string_view key, std::string_view fence_key,
                      std::uint64_t fence, std::string_view value,
                      Token&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(Executor))
{
    return async_fenced_set(conn, key, fence_key, fence, value, std::chrono::milliseconds(0),
                            std::forward<Token>(token));
}

} // namespace asio_sync::redis

#endif // ASIO_SYNC_REDIS_FENCED_SET_HPP
