// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_REDIS_DETAIL_SEMAPHORE_SCRIPT_HPP
#define ASIO_SYNC_REDIS_DETAIL_SEMAPHORE_SCRIPT_HPP

// The server side of the fleet-wide semaphore as the client calls it: the key names and FCALL
// argument vectors of one semaphore, spelled here once. The function library itself is
// semaphore_library.lua (generated into semaphore_library.hpp with the facts both sides share).

#include <asio_sync/redis/detail/command.hpp>
#include <asio_sync/redis/detail/semaphore_library.hpp>

#include <boost/throw_exception.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace asio_sync::redis::detail {

// Keys of one semaphore, in the order the library's functions take them.
using semaphore_key = semaphore_library::key;

enum class acquire_mode
{
    wait,     // queue when it cannot be granted at once
    try_once, // granted at once or busy, never queued
};

// The prefix of a fleet-wide object's keys, "asio_sync:{<name>}:". Names are escaped so that the
// hash tag is the whole name: '%', '{' and '}' become %25, %7B and %7D (an injective mapping). An
// empty name would make an empty tag, which Redis ignores.
inline std::string key_prefix(std::string_view name)
{
    if (name.empty())
        boost::throw_exception(std::invalid_argument("asio_sync::redis: a name must not be empty"));
    std::string prefix = "asio_sync:{";
    for (const char c : name)
    {
        switch (c)
        {
        case '%':
            prefix += "%25";
            break;
        case '{':
            prefix += "%7B";
            break;
        case '}':
            prefix += "%7D";
            break;
        default:
            prefix += c;
        }
    }
    return prefix + "}:";
}

// 64 random bits in hex: a process's id before its ids in Redis (the semaphore's holders and
// waiters, a leased share's entry).
inline std::string random_id()
{
    std::random_device device;
    const std::uint64_t bits = (std::uint64_t(device()) << 32) ^ device();
    char text[17];
    std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(bits));
    return text;
}

class semaphore_script
{
public:
    static constexpr std::size_t key_count = semaphore_library::key_count;

    // FUNCTION LOAD REPLACE of the library: run on every connect, idempotent. Functions persist
    // across restarts and replicate, so no call fails with NOSCRIPT as one by SHA would.
    static std::vector<std::string> load_command()
    {
        return {"FUNCTION", "LOAD", "REPLACE", std::string(semaphore_library::source)};
    }

    explicit semaphore_script(std::string_view name)
    {
        const std::string prefix = key_prefix(name);
        keys_.reserve(key_count);
        for (const std::string_view suffix : semaphore_library::key_suffixes)
            keys_.push_back(prefix + std::string(suffix));
        channel_ = prefix + "grants";
    }

    const std::vector<std::string>& keys() const noexcept { return keys_; }

    // The cluster slot of every key (they share the hash tag): where the calls, and the commands
    // that go with them (WAIT, FUNCTION LOAD, CONFIG GET), are sent.
    int slot() const noexcept { return key_slot(keys_.front()); }
    const std::string& key(semaphore_key k) const noexcept { return keys_[static_cast<std::size_t>(k)]; }

    // The pub/sub channel on which grants and capacity changes are published ("granted <fence> <n>
    // <id>", "resized <capacity> <stamp> <calm>", "settled <capacity> <stamp>").
    const std::string& channel() const noexcept { return channel_; }

    std::vector<std::string> acquire(std::string_view id, std::size_t n, std::size_t capacity,
                                     std::chrono::milliseconds lease, acquire_mode mode) const
    {
        return fcall("FCALL", semaphore_library::function::acquire,
                     {channel_, id, std::to_string(n), std::to_string(capacity),
                      std::to_string(lease.count()), mode == acquire_mode::wait ? "wait" : "try"});
    }

    // `fence`: the holder's fence, or 0 for a waiter; a fence older than the state's epoch makes
    // an unknown id state_lost instead of lost.
    std::vector<std::string> renew(std::string_view id, std::chrono::milliseconds lease,
                                   std::uint64_t fence) const
    {
        return fcall("FCALL", semaphore_library::function::renew,
                     {channel_, id, std::to_string(lease.count()), std::to_string(fence)});
    }

    std::vector<std::string> release(std::string_view id, std::uint64_t fence) const
    {
        return fcall("FCALL", semaphore_library::function::release, {channel_, id, std::to_string(fence)});
    }

    // Stores `capacity` if the stamp in force is `base` (0: never resized); the id recognises a replay.
    std::vector<std::string> resize(std::string_view id, std::uint64_t capacity, std::uint64_t base) const
    {
        return fcall("FCALL", semaphore_library::function::resize,
                     {channel_, id, std::to_string(capacity), std::to_string(base)});
    }

    // Read-only, so FCALL_RO: a replica may answer it.
    std::vector<std::string> status(std::string_view id) const
    {
        return fcall("FCALL_RO", semaphore_library::function::status, {id});
    }

    std::vector<std::string> check() const
    {
        return fcall("FCALL_RO", semaphore_library::function::check, {});
    }

    std::vector<std::string> usage() const
    {
        return fcall("FCALL_RO", semaphore_library::function::usage, {});
    }

    // The time until a writing call may serve the queue: the earliest deadline, or the end of a
    // quiet period.
    std::vector<std::string> watch() const
    {
        return fcall("FCALL_RO", semaphore_library::function::watch, {});
    }

private:
    std::vector<std::string> fcall(std::string_view command, semaphore_library::function function,
                                   std::initializer_list<std::string_view> args) const
    {
        std::vector<std::string> argv;
        argv.reserve(3 + key_count + args.size());
        argv.emplace_back(command);
        argv.emplace_back(semaphore_library::function_names[static_cast<std::size_t>(function)]);
        argv.push_back(std::to_string(key_count));
        argv.insert(argv.end(), keys_.begin(), keys_.end());
        for (const std::string_view arg : args)
            argv.emplace_back(arg);
        return argv;
    }

    std::vector<std::string> keys_;
    std::string channel_;
};

} // namespace asio_sync::redis::detail

#endif // ASIO_SYNC_REDIS_DETAIL_SEMAPHORE_SCRIPT_HPP
