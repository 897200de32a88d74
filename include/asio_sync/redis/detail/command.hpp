// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_REDIS_DETAIL_COMMAND_HPP
#define ASIO_SYNC_REDIS_DETAIL_COMMAND_HPP

#include <asio_sync/redis/error.hpp>

#include <boost/asio/error.hpp>
#include <boost/system/error_code.hpp>
#include <boost/throw_exception.hpp>

#include <hiredis/hiredis.h>

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <new>
#include <string_view>
#include <vector>

namespace asio_sync::redis::detail {

inline bool equals_ignoring_case(std::string_view a, std::string_view b) noexcept
{
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               return std::toupper(static_cast<unsigned char>(x)) ==
                      std::toupper(static_cast<unsigned char>(y));
           });
}

// Why a command must not be sent on a pipelined connection, if it must not: replies are matched
// to commands in order, so a command the server answers with no reply or with several would
// hand every later reply to the wrong caller.
inline boost::system::error_code rejection(const std::vector<std::string_view>& args) noexcept
{
    if (args.empty())
        return boost::asio::error::invalid_argument; // the server answers an empty command with nothing
    static constexpr std::string_view streaming[] = {
        "SUBSCRIBE", "PSUBSCRIBE", "SSUBSCRIBE", "UNSUBSCRIBE", "PUNSUBSCRIBE", "SUNSUBSCRIBE", "MONITOR"};
    for (std::string_view name : streaming)
    {
        if (equals_ignoring_case(args[0], name))
            return error::unsupported_command;
    }
    if (args.size() > 1 && equals_ignoring_case(args[0], "CLIENT") && equals_ignoring_case(args[1], "REPLY"))
        return error::unsupported_command;
    return {};
}

// The Redis Cluster hash slot of `key`: CRC16 (XMODEM) of its hash tag (the bytes between the
// first `{` and the first `}` after it, if not empty) or of the whole key, modulo 16384.
inline int key_slot(std::string_view key) noexcept
{
    const std::size_t open = key.find('{');
    if (open != std::string_view::npos)
    {
        const std::size_t close = key.find('}', open + 1);
        if (close != std::string_view::npos && close != open + 1)
            key = key.substr(open + 1, close - open - 1);
    }
    std::uint16_t crc = 0;
    for (const char c : key)
    {
        crc ^= static_cast<std::uint16_t>(static_cast<unsigned char>(c) << 8);
        for (int bit = 0; bit < 8; ++bit)
            crc = static_cast<std::uint16_t>((crc & 0x8000) ? (crc << 1) ^ 0x1021 : crc << 1);
    }
    return crc & 16383;
}

// The slot a command is sent for in a Redis Cluster (-1: any node will do): that of its first key,
// which is the argument after numkeys for the scripting calls and the first argument for the
// commands with keys. Keyless commands go anywhere. A guess that misses costs a redirection.
inline int command_slot(const std::vector<std::string_view>& args) noexcept
{
    static constexpr std::string_view keyless[] = {
        "ACL",     "AUTH",     "CLIENT", "CLUSTER", "COMMAND", "CONFIG", "DBSIZE",
        "ECHO",    "FUNCTION", "HELLO",  "INFO",    "LATENCY", "MEMORY", "PING",
        "PUBLISH", "ROLE",     "SCRIPT", "SELECT",  "SLOWLOG", "TIME",   "WAIT"};
    if (args.size() < 2)
        return -1;
    for (std::string_view name : {"FCALL", "FCALL_RO", "EVAL", "EVALSHA", "EVAL_RO", "EVALSHA_RO"})
        if (equals_ignoring_case(args[0], name))
            return args.size() > 3 && args[2] != "0" ? key_slot(args[3]) : -1;
    for (std::string_view name : keyless)
        if (equals_ignoring_case(args[0], name))
            return -1;
    return key_slot(args[1]);
}

// One command in the wire format (RESP2), made by hiredis' formatter, or the reason it may not
// be sent.
class formatted_command
{
public:
    // Formats `args`, a range of elements convertible to std::string_view: the command's name and
    // arguments, each sent as bytes. Throws std::bad_alloc if memory runs out.
    template <class Args>
    static formatted_command format(const Args& args)
    {
        return format_views(views_of(args));
    }

    static formatted_command format(std::initializer_list<std::string_view> args)
    {
        return format<std::initializer_list<std::string_view>>(args);
    }

    // Formats a caller's command for the pipelined command link, or records why it may not go
    // there.
    template <class Args>
    static formatted_command format_for_pipeline(const Args& args)
    {
        const std::vector<std::string_view> views = views_of(args);
        if (const boost::system::error_code refused = detail::rejection(views))
        {
            formatted_command command;
            command.rejection_ = refused;
            return command;
        }
        formatted_command command = format_views(views);
        command.slot_ = command_slot(views);
        command.waits_ = equals_ignoring_case(views[0], "WAIT");
        return command;
    }

    // Why the command may not be sent; no error if it may.
    boost::system::error_code rejection() const noexcept { return rejection_; }

    // The cluster slot the command is sent for; -1: any node.
    int slot() const noexcept { return slot_; }

    // Sends the command for `slot`: a keyless command that must reach the node of some key (WAIT
    // after a write, FUNCTION LOAD before a call).
    void route_to(int slot) noexcept { slot_ = slot; }

    // WAIT: its reply counts the replicas that have the writes made before it on its link.
    bool waits() const noexcept { return waits_; }

    // A WAIT sent to confirm the command `id` (written right before it, in one step): wherever a
    // redirection sends that command, this WAIT goes with it, and with no other. 0: none named.
    void confirm(std::uint64_t id) noexcept { confirms_ = id; }
    std::uint64_t confirms() const noexcept { return confirms_; }

    // In a cluster: one more MOVED or ASK met; how many since the command last waited.
    std::size_t count_redirection() noexcept { return ++redirections_; }

    // It waits to be sent again (TRYAGAIN, CLUSTERDOWN, or behind earlier commands of its slot):
    // a wait bounds the pace of its redirections, which count again from there.
    void reset_redirections() noexcept { redirections_ = 0; }

    // With Sentinel: refused once with READONLY, and queued again for the primary.
    bool requeued() const noexcept { return requeued_; }
    void mark_requeued() noexcept { requeued_ = true; }

    std::string_view bytes() const noexcept { return {data_.get(), size_}; }

    // Frees the bytes once they have been copied to the connection's output.
    void release() noexcept
    {
        data_.reset();
        size_ = 0;
    }

private:
    template <class Args>
    static std::vector<std::string_view> views_of(const Args& args)
    {
        std::vector<std::string_view> views;
        for (const auto& arg : args)
            views.emplace_back(arg);
        return views;
    }

    static formatted_command format_views(const std::vector<std::string_view>& views)
    {
        std::vector<const char*> argv;
        std::vector<std::size_t> lengths;
        argv.reserve(views.size());
        lengths.reserve(views.size());
        for (std::string_view view : views)
        {
            argv.push_back(view.data());
            lengths.push_back(view.size());
        }
        char* target = nullptr;
        const int size =
            redisFormatCommandArgv(&target, static_cast<int>(argv.size()), argv.data(), lengths.data());
        if (size < 0)
            boost::throw_exception(std::bad_alloc());
        formatted_command command;
        command.data_.reset(target);
        command.size_ = static_cast<std::size_t>(size);
        return command;
    }

    struct free_command
    {
        void operator()(char* p) const noexcept { redisFreeCommand(p); }
    };

    std::unique_ptr<char, free_command> data_;
    std::size_t size_ = 0;
    boost::system::error_code rejection_;
    int slot_ = -1;
    bool waits_ = false;
    std::uint64_t confirms_ = 0;
    bool requeued_ = false;
    std::size_t redirections_ = 0;
};

} // namespace asio_sync::redis::detail

#endif // ASIO_SYNC_REDIS_DETAIL_COMMAND_HPP
