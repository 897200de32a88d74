// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_REDIS_DETAIL_SENTINEL_QUERY_HPP
#define ASIO_SYNC_REDIS_DETAIL_SENTINEL_QUERY_HPP

// Asking one sentinel where the primary is, without I/O: the bytes to write to it, and what its
// replies say. The driver (link_driver.hpp) connects to the sentinel, writes request(), feeds
// the replies to on_reply() until it stops saying `pending`, and hangs up. And what a sentinel
// announces on its pub/sub when it switches a primary: switched_primary().

#include <asio_sync/redis/connection_options.hpp>
#include <asio_sync/redis/detail/command.hpp>
#include <asio_sync/redis/reply.hpp>

#include <array>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <optional>
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
        refused, // AUTH refused, or needed and not given; refusal() is the reply
        failed,  // a reply that is not an address
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
        {
            if (r.kind != reply_kind::error)
                return result::pending;
            left_ = 0;
            refusal_ = r;
            return result::refused;
        }
        if (r.kind == reply_kind::nil)
            return result::unknown;
        if (r.kind == reply_kind::error && r.text.rfind("NOAUTH", 0) == 0) // credentials needed, none given
        {
            refusal_ = r;
            return result::refused;
        }
        if (r.kind != reply_kind::array || r.elements.size() != 2 ||
            r.elements[0].kind != reply_kind::string || r.elements[1].kind != reply_kind::string ||
            r.elements[0].text.empty())
            return result::failed;
        const std::optional<std::uint16_t> port = parse_port(r.elements[1].text);
        if (!port)
            return result::failed;
        host_ = r.elements[0].text;
        port_ = *port;
        return result::found;
    }

    // The reply that refused the credentials, after `refused`.
    const reply& refusal() const noexcept { return refusal_; }
    const std::string& host() const noexcept { return host_; }
    std::uint16_t port() const noexcept { return port_; }

    // Parses a port: a decimal number from 1 to 65535, and nothing else.
    static std::optional<std::uint16_t> parse_port(std::string_view text) noexcept
    {
        unsigned value = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (ec != std::errc() || end != text.data() + text.size() || value == 0 || value > 65535)
            return std::nullopt;
        return static_cast<std::uint16_t>(value);
    }

private:
    void add(std::initializer_list<std::string_view> args)
    {
        request_ += formatted_command::format(args).bytes();
        ++left_;
    }

    std::string request_;
    unsigned left_ = 0; // replies still owed
    std::string host_;
    std::uint16_t port_ = 0;
    reply refusal_;
};

// Where a primary moved.
struct primary_address
{
    std::string host;
    std::uint16_t port = 0;
};

// The channel on which sentinels announce the end of a failover.
inline constexpr std::string_view switch_master_channel = "+switch-master";

// A push read from a sentinel subscribed to switch_master_channel: the primary's new address if
// it is the message `<name> <old ip> <old port> <new ip> <new port>` about `master_name`, nothing
// for anything else (the subscription's confirmation, another name, malformed text).
inline std::optional<primary_address> switched_primary(const reply& r, std::string_view master_name)
{
    if (r.kind != reply_kind::array || r.elements.size() != 3 || r.elements[0].text != "message" ||
        r.elements[1].text != switch_master_channel)
        return std::nullopt;
    std::string_view text = r.elements[2].text;
    std::array<std::string_view, 5> words;
    for (std::size_t i = 0; i < words.size(); ++i)
    {
        const std::size_t end = i + 1 < words.size() ? text.find(' ') : text.size();
        if (end == std::string_view::npos || end == 0)
            return std::nullopt;
        words[i] = text.substr(0, end);
        text.remove_prefix(i + 1 < words.size() ? end + 1 : end);
    }
    if (words[0] != master_name)
        return std::nullopt;
    const std::optional<std::uint16_t> port = sentinel_query::parse_port(words[4]);
    if (!port)
        return std::nullopt;
    return primary_address{std::string(words[3]), *port};
}

} // namespace asio_sync::redis::detail

#endif // ASIO_SYNC_REDIS_DETAIL_SENTINEL_QUERY_HPP
