// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_TEST_SUPPORT_SEMAPHORE_HISTORY_HPP
#define ASIO_SYNC_TEST_SUPPORT_SEMAPHORE_HISTORY_HPP

// The history of one fleet-wide semaphore as the server ran it, rebuilt from the lines of a
// MONITOR connection. The server runs one command at a time and shows each to MONITOR in that
// order, a call before the commands its function runs (lines "[db lua]"), so the index of a
// line is a clock shared by every process, without skew. From the lines of the semaphore's keys
// (layout in redis/detail/semaphore_library.lua) it records, per remote id: its arrival (the first
// time the server stored it: its ZADD to the queue, or its grant if it was granted at once; a call
// refused with an error stores nothing and is no arrival), its grant (the HSET of its field "#<id>"
// in meta to "<n>:<fence>") and the end of its hold (the HDEL of that field: a release or an
// expiry); and every
// change of the capacity in force (the HSET of the field "capacity" in meta: a declaration or a
// resize). Lines of other commands are passed back to the caller, e.g. markers a test sends with
// ECHO.

#include <asio_sync/redis/detail/semaphore_script.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace asio_sync::test {

// One line of MONITOR: who ran the command, and its arguments with the escapes undone.
struct monitor_line
{
    bool from_script = false;
    std::vector<std::string> args;
};

// Parses `<time> [<db> <client>] "arg" "arg" ...`; nullopt for anything else.
inline std::optional<monitor_line> parse_monitor_line(std::string_view text)
{
    const auto open = text.find('[');
    const auto close = text.find("] ", open);
    if (open == std::string_view::npos || close == std::string_view::npos)
        return std::nullopt;
    monitor_line line;
    line.from_script = text.substr(open, close - open).ends_with(" lua");
    std::size_t i = close + 2;
    while (i < text.size())
    {
        if (text[i] != '"')
            return std::nullopt;
        std::string arg;
        for (++i; i < text.size() && text[i] != '"'; ++i)
        {
            if (text[i] != '\\' || i + 1 == text.size())
            {
                arg += text[i];
                continue;
            }
            const char escaped = text[++i];
            switch (escaped)
            {
            case 'n':
                arg += '\n';
                break;
            case 'r':
                arg += '\r';
                break;
            case 't':
                arg += '\t';
                break;
            case 'a':
                arg += '\a';
                break;
            case 'b':
                arg += '\b';
                break;
            case 'x':
                if (i + 2 >= text.size())
                    return std::nullopt;
                arg += static_cast<char>(std::stoi(std::string(text.substr(i + 1, 2)), nullptr, 16));
                i += 2;
                break;
            default:
                arg += escaped;
            }
        }
        if (i == text.size())
            return std::nullopt;
        line.args.push_back(std::move(arg));
        i += 2; // the closing quote and the space
    }
    return line;
}

// One grant as the server recorded it; positions are line indexes, counted from 1, 0 if unseen.
struct remote_hold
{
    std::string id;
    std::size_t n = 0;
    std::uint64_t fence = 0;
    std::size_t arrival = 0;
    std::size_t grant = 0;
    std::size_t end = 0;
};

// The capacity in force from a line on (a grant on the same line is made under it).
struct capacity_change
{
    std::size_t position = 0;
    std::size_t capacity = 0;
};

class semaphore_history
{
public:
    explicit semaphore_history(std::string_view name) : script_(name) {}

    // Takes the next line of MONITOR. Returns it parsed when it is not a command on the
    // semaphore's keys, for the caller to read.
    std::optional<monitor_line> add(std::string_view text)
    {
        const std::size_t position = ++lines_;
        std::optional<monitor_line> line = parse_monitor_line(text);
        if (!line || line->args.empty())
            return std::nullopt;
        const std::vector<std::string>& args = line->args;
        if (line->from_script && args.size() >= 4 && args[0] == "ZADD" &&
            args[1] == script_.key(redis::detail::semaphore_key::queue))
        {
            for (std::size_t i = 3; i < args.size(); i += 2)
                arrivals_.try_emplace(args[i], position);
            return std::nullopt;
        }
        if (line->from_script && args.size() >= 3 && args[1] == meta())
        {
            if (args[0] == "HSET")
            {
                for (std::size_t i = 2; i + 1 < args.size(); i += 2)
                {
                    if (args[i].starts_with('#') && args[i + 1].find(':') != std::string::npos)
                        record_grant(args[i].substr(1), args[i + 1], position);
                    else if (args[i] == "capacity")
                        capacities_.push_back({position, static_cast<std::size_t>(std::stoull(args[i + 1]))});
                }
            }
            else if (args[0] == "HDEL")
            {
                for (std::size_t i = 2; i < args.size(); ++i)
                    if (args[i].starts_with('#'))
                        record_end(args[i].substr(1), position);
            }
            return std::nullopt;
        }
        if (line->from_script)
            return std::nullopt;
        return line;
    }

    // The position of the line added last.
    std::size_t position() const noexcept { return lines_; }

    // Every grant seen (an id granted twice twice), in grant order.
    const std::vector<remote_hold>& holds() const noexcept { return holds_; }

    // Every change of the capacity in force, in order.
    const std::vector<capacity_change>& capacities() const noexcept { return capacities_; }

private:
    const std::string& meta() const { return script_.key(redis::detail::semaphore_key::meta); }

    void record_grant(const std::string& id, const std::string& value, std::size_t position)
    {
        const auto colon = value.find(':');
        remote_hold hold;
        hold.id = id;
        hold.n = std::stoull(value.substr(0, colon));
        hold.fence = std::stoull(value.substr(colon + 1));
        // Granted at once: it arrived with its grant.
        hold.arrival = arrivals_.try_emplace(id, position).first->second;
        hold.grant = position;
        hold_by_id_[id] = holds_.size();
        holds_.push_back(std::move(hold));
    }

    void record_end(const std::string& id, std::size_t position)
    {
        const auto found = hold_by_id_.find(id);
        if (found != hold_by_id_.end() && holds_[found->second].end == 0)
            holds_[found->second].end = position;
    }

    redis::detail::semaphore_script script_;
    std::size_t lines_ = 0;
    std::map<std::string, std::size_t> arrivals_;
    std::map<std::string, std::size_t> hold_by_id_;
    std::vector<remote_hold> holds_;
    std::vector<capacity_change> capacities_;
};

} // namespace asio_sync::test

#endif // ASIO_SYNC_TEST_SUPPORT_SEMAPHORE_HISTORY_HPP
