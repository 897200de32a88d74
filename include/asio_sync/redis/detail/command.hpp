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
        return format_views(views);
    }

    // Why the command may not be sent; no error if it may.
    boost::system::error_code rejection() const noexcept { return rejection_; }

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
};

} // namespace asio_sync::redis::detail

#endif // ASIO_SYNC_REDIS_DETAIL_COMMAND_HPP
