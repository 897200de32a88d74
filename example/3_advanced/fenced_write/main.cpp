// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

// A fenced write: take the one permit of a fleet-wide semaphore, then write a value to Redis with
// the permit's fencing token through asio_sync::redis::async_fenced_set. A holder that was paused
// after it checked its permit, long enough for its lease to run out and for the next holder to
// write, has its late write refused: the resource is never overwritten by an older holder.
//
// With --pause the process stops itself (SIGSTOP) between checking its permit and writing, as a
// process paused by the scheduler, a swap storm, a stop-the-world collector or a debugger would
// be; SIGCONT resumes it. scripts/fleet-demo runs one paused writer and one that comes next.
// A write whose connection is lost after it was sent (its outcome unknown) is written again with
// the same fence, a few times at most.
//
// Exit status: 0 written, 3 refused (a newer fence wrote the resource), 1 any other failure.

#include <asio_sync/redis/fenced_set.hpp>
#include <asio_sync/redis/semaphore.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <tuple>

#include <unistd.h>

namespace {

namespace asio = boost::asio;
namespace redis = asio_sync::redis;
using std::chrono::milliseconds;

constexpr auto as_result = asio::as_tuple(asio::use_awaitable);

constexpr const char* usage =
    "usage: fenced_write --redis HOST:PORT|MASTER@SENTINEL,... --name NAME --key KEY [--value TEXT]\n"
    "                    [--lease MS] [--pause]\n"
    "  --redis HOST:PORT  the Redis server; MASTER@HOST:PORT,HOST:PORT: the primary named MASTER,\n"
    "                     found through these Redis Sentinels\n"
    "  --name NAME        the fleet-wide semaphore (capacity 1) whose permit guards the resource\n"
    "  --key KEY          the resource: the value goes to {KEY}:value, its fence to {KEY}:fence\n"
    "  --value TEXT       what to write (default: the process id)\n"
    "  --lease MS         the permit's lease, in milliseconds (default 500)\n"
    "  --pause            stop this process (SIGSTOP) after checking the permit, before writing\n";

struct options
{
    redis::connection_options link;
    std::string name;
    std::string key;
    std::string value = std::to_string(static_cast<long long>(::getpid()));
    milliseconds lease{500};
    bool pause = false;
};

bool parse(int argc, char** argv, options& out)
{
    bool seen_redis = false;
    for (int i = 1; i < argc; ++i)
    {
        const std::string_view arg = argv[i];
        if (arg == "--pause")
        {
            out.pause = true;
            continue;
        }
        if (i + 1 == argc)
            return false;
        const std::string value = argv[++i];
        if (arg == "--redis")
        {
            seen_redis = true;
            const auto address = [](const std::string& text, std::string& host, std::uint16_t& port) {
                const std::size_t colon = text.rfind(':');
                const long number =
                    colon == std::string::npos ? 0 : std::strtol(text.c_str() + colon + 1, nullptr, 10);
                if (colon == 0 || number < 1 || number > 65535)
                    return false;
                host = text.substr(0, colon);
                port = static_cast<std::uint16_t>(number);
                return true;
            };
            const std::size_t at = value.find('@');
            if (at == std::string::npos)
            {
                if (!address(value, out.link.host, out.link.port))
                    return false;
                continue;
            }
            out.link.master_name = value.substr(0, at);
            for (std::size_t from = at + 1; from <= value.size();)
            {
                const std::size_t comma = std::min(value.find(',', from), value.size());
                redis::connection_options::sentinel_address sentinel;
                if (!address(value.substr(from, comma - from), sentinel.host, sentinel.port))
                    return false;
                out.link.sentinels.push_back(sentinel);
                from = comma + 1;
            }
            if (out.link.master_name.empty())
                return false;
        }
        else if (arg == "--name")
            out.name = value;
        else if (arg == "--key")
            out.key = value;
        else if (arg == "--value")
            out.value = value;
        else if (arg == "--lease")
        {
            const long ms = std::strtol(value.c_str(), nullptr, 10);
            if (ms < 10 || ms > 3600000)
                return false;
            out.lease = milliseconds(ms);
        }
        else
            return false;
    }
    const bool linked = !out.link.sentinels.empty() || seen_redis;
    return linked && !out.name.empty() && !out.key.empty();
}

long long ms_of(std::chrono::steady_clock::duration d)
{
    return std::chrono::duration_cast<milliseconds>(d).count();
}

asio::awaitable<int> fenced_write(redis::connection& conn, const options& opts)
{
    redis::semaphore guard(conn, opts.name, 1, opts.lease);
    auto [acquired, permit] = co_await guard.async_acquire_permit(1, as_result);
    if (acquired)
    {
        std::printf("fenced_write: acquire failed: %s\n", acquired.message().c_str());
        co_return 1;
    }
    const std::uint64_t fence = permit.fencing_token();
    // The check a careful holder makes before it writes. The pause comes after it.
    std::printf("granted fence %llu, valid for %lld ms\n", static_cast<unsigned long long>(fence),
                ms_of(permit.valid_for()));
    if (opts.pause)
    {
        std::printf("pausing (SIGSTOP) before the write\n");
        std::fflush(stdout);
        std::raise(SIGSTOP);
        std::printf("resumed: the permit is valid for %lld ms; writing anyway, as a holder that checked "
                    "before the pause would\n",
                    ms_of(permit.valid_for()));
    }
    const std::string value_key = "{" + opts.key + "}:value";
    const std::string fence_key = "{" + opts.key + "}:fence";
    // A connection lost after the write was sent (a failover, a dropped link) leaves its outcome
    // unknown. Writing the same value with the same fence again is safe: it either writes what
    // the first attempt may have written or is refused, as the first would have been.
    constexpr int attempts = 5;
    boost::system::error_code wrote;
    std::uint64_t largest = 0;
    for (int attempt = 1; attempt <= attempts; ++attempt)
    {
        std::tie(wrote, largest) =
            co_await redis::async_fenced_set(conn, value_key, fence_key, fence, opts.value, as_result);
        if (wrote != redis::error::connection_lost || attempt == attempts)
            break;
        std::printf("%s: writing again with the same fence\n", wrote.message().c_str());
    }
    int status = 0;
    if (!wrote)
        std::printf("written with fence %llu\n", static_cast<unsigned long long>(fence));
    else if (wrote == redis::error::stale_fence)
    {
        std::printf("refused: fence %llu, but fence %llu has written %s since\n",
                    static_cast<unsigned long long>(fence), static_cast<unsigned long long>(largest),
                    value_key.c_str());
        status = 3;
    }
    else
    {
        std::printf("fenced_write: write failed: %s\n", wrote.message().c_str());
        status = 1;
    }
    // A lost lease makes the release fail with lease_lost: nothing is left to give back then.
    co_await permit.async_release(as_result);
    co_return status;
}

} // namespace

int main(int argc, char** argv)
{
    options opts;
    if (!parse(argc, argv, opts))
    {
        std::fputs(usage, stderr);
        return 2;
    }
    asio::io_context io;
    redis::connection conn(io, opts.link);
    int status = 1;
    asio::co_spawn(io, fenced_write(conn, opts), [&](std::exception_ptr e, int result) {
        status = e ? 1 : result;
        conn.close();
    });
    io.run();
    std::fflush(stdout);
    return status;
}
