// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_REDIS_DETAIL_SENTINEL_QUERY_HPP
#define ASIO_SYNC_REDIS_DETAIL_SENTINEL_QUERY_HPP

// Asking one sentinel where the primary is, without I/O: the bytes to write to it, and what its
// replies say. The driver (connection_impl.hpp) connects to the sentinel, writes request(), feeds
// the replies to on_reply() until it stops saying `pending`, and hangs up.

#include <asio_sync/redis/connection_options.hpp>
#include <asio_sync/redis/detail/command.hpp>
#include <asio_sync/redis/reply.hpp>

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>

namespace asio_sync::redis::detail {

class sentinel_query
{
public:
    enum class result
    {
        pending, // more replies to come
        found,   // the primary is at host():port()
        unknown, // this sentinel does not know the primary (a nil reply)
        failed,  // AUTH refused, or a reply that is not an address
    };

    explicit sentinel_query(const connection_options& options)
    {
        if (!options.sentinel_user.empty())
            add({"AUTH", options.sentinel_user, options.sentinel_password});
        else if (!options.sentinel_password.empty())
            add({"AUTH", options.sentinel_password});
        add({"SENTINEL", "GET-MASTER-ADDR-BY-NAME", options.master_name});
    }

    const std::string& request() const noexcept { return request_; }

    result on_reply(const reply& r)
    {
        if (left_ == 0)
            return result::failed;
        if (--left_ != 0) // AUTH's reply
            return r.kind == reply_kind::error ? fail() : result::pending;
        if (r.kind == reply_kind::nil)
            return result::unknown;
        if (r.kind != reply_kind::array || r.elements.size() != 2 ||
            r.elements[0].kind != reply_kind::string || r.elements[1].kind != reply_kind::string ||
            r.elements[0].text.empty())
            return result::failed;
        const std::string& port = r.elements[1].text;
        unsigned value = 0;
        const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
        if (ec != std::errc() || end != port.data() + port.size() || value == 0 || value > 65535)
            return result::failed;
        host_ = r.elements[0].text;
        port_ = static_cast<std::uint16_t>(value);
        return result::found;
    }

    const std::string& host() const noexcept { return host_; }
    std::uint16_t port() const noexcept { return port_; }

private:
    void add(std::initializer_list<std::string_view> args)
    {
        request_ += formatted_command::format(args).bytes();
        ++left_;
    }

    result fail() noexcept
    {
        left_ = 0;
        return result::failed;
    }

    std::string request_;
    unsigned left_ = 0; // replies still owed
    std::string host_;
    std::uint16_t port_ = 0;
};

} // namespace asio_sync::redis::detail

#endif // ASIO_SYNC_REDIS_DETAIL_SENTINEL_QUERY_HPP
