// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_REDIS_DETAIL_SENTINEL_RESOLVER_HPP
#define ASIO_SYNC_REDIS_DETAIL_SENTINEL_RESOLVER_HPP

// Finding the primary through the sentinels, without I/O: which sentinel a link's attempt asks
// next, what each answer or failure means, when the attempt gives up and with which error, and
// which sentinel the next attempt (and the watch link) starts from. The driver
// (link_driver.hpp) connects to the sentinel a step names, writes its question (the attempt's
// query), feeds it the replies, and connects to the primary once a step says so; it tells the
// resolver what the server it reached turned out to be.

#include <asio_sync/redis/connection_options.hpp>
#include <asio_sync/redis/detail/sentinel_query.hpp>
#include <asio_sync/redis/error.hpp>
#include <asio_sync/redis/reply.hpp>

#include <boost/system/error_code.hpp>

#include <cstddef>
#include <optional>

namespace asio_sync::redis::detail {

class sentinel_resolver
{
public:
    // One attempt of a link to reach the primary.
    struct attempt
    {
        std::optional<sentinel_query> query; // the question to the sentinel being asked
        std::size_t sentinel = 0;            // the sentinel being asked, then the one that named `primary`
        std::size_t tried = 0;               // the sentinels that failed this attempt
        std::size_t refusals = 0;            // those that refused AUTH
        std::size_t unknowns = 0;            // those that do not know the primary
        reply refusal;                       // the last refusal's reply
        primary_address primary;             // where the sentinels sent it (port 0: nowhere yet)
        bool ran = false;                    // the link got up on `primary`
    };

    // The next thing for the driver to do in an attempt.
    struct step
    {
        enum class kind
        {
            pending, // read on: the sentinel owes more replies
            ask,     // connect to `sentinel`, write the attempt's query, read its replies
            connect, // hang up, and connect to the attempt's primary
            fail,    // the attempt failed; the commands queued fail with `error` if it is set
        };
        kind what = kind::pending;
        std::size_t sentinel = 0;
        boost::system::error_code error;
    };

    explicit sentinel_resolver(const connection_options& options) : options_(options) {}

    // A new attempt: it asks the sentinels in turn, from the one that answered last.
    step begin(attempt& a) const
    {
        a = attempt();
        return next(a);
    }

    // The sentinel being asked answered `r`.
    step on_reply(attempt& a, const reply& r)
    {
        const sentinel_query::result answer = a.query->on_reply(r);
        switch (answer)
        {
        case sentinel_query::result::pending:
            return {};
        case sentinel_query::result::found:
            first_ = a.sentinel;
            a.primary = {a.query->host(), a.query->port()};
            a.query.reset();
            return {step::kind::connect, a.sentinel, {}};
        case sentinel_query::result::refused:
            ++a.refusals;
            a.refusal = a.query->refusal();
            break;
        case sentinel_query::result::unknown:
            ++a.unknowns;
            break;
        case sentinel_query::result::failed:
            break;
        }
        return on_failure(a);
    }

    // The sentinel being asked could not be reached, or hung up, or its time ran out.
    step on_failure(attempt& a) const
    {
        a.query.reset();
        ++a.tried;
        return next(a);
    }

    // Whether `a` is still asking the sentinel it asked as its `tried`-th (a timer armed then is
    // not stale).
    static bool asking(const attempt& a, std::size_t tried) noexcept { return a.query && a.tried == tried; }

    // How long one sentinel may take: a sentinel that accepts and never answers (paused,
    // overloaded) must leave time for the others and for the primary, each an equal share of the
    // attempt's time.
    template <class Duration>
    Duration ask_timeout(Duration attempt_timeout) const noexcept
    {
        return attempt_timeout / static_cast<int>(options_.sentinels.size() + 1);
    }

    // The sentinel the watch link listens to next: each attempt the next one, from the one that
    // answered last.
    std::size_t next_watched() noexcept { return (first_ + watch_attempts_++) % options_.sentinels.size(); }

    // The server the sentinels named is not the primary (ROLE says otherwise, or it refused a
    // write with READONLY): the next attempt starts from the sentinel after the one that named it,
    // so that a sentinel whose view is stale cannot pin the links to a replica.
    void on_not_primary() noexcept { first_ = (first_ + 1) % options_.sentinels.size(); }

    // The session of `a` ended. One that never got up on the server a sentinel named: the next
    // attempt starts from the sentinel after it, so that one naming a dead or hung server cannot
    // pin the link.
    void on_end(const attempt& a) noexcept
    {
        if (a.primary.port != 0 && !a.ran && first_ == a.sentinel)
            on_not_primary();
    }

    // The sentinel `watched` announced that the primary moved to `to`: the next attempts start from
    // it. Whether the link of attempt `a` must start again (it is not on `to`).
    void on_switch(std::size_t watched) noexcept { first_ = watched; }
    static bool elsewhere(const attempt& a, const primary_address& to) noexcept
    {
        return a.primary.host != to.host || a.primary.port != to.port;
    }

private:
    step next(attempt& a) const
    {
        const std::size_t count = options_.sentinels.size();
        if (a.tried == count)
        {
            // Every sentinel refused the credentials: as with a refused AUTH to the server, the
            // commands queued meanwhile fail with auth_failed; or none knows the primary, and they
            // fail with unknown_master. The link tries again.
            step failed{step::kind::fail, 0, {}};
            if (a.refusals == count)
                failed.error = error::auth_failed;
            else if (a.unknowns == count)
                failed.error = error::unknown_master;
            return failed;
        }
        a.sentinel = (first_ + a.tried) % count;
        a.query.emplace(options_);
        return {step::kind::ask, a.sentinel, {}};
    }

    connection_options options_;     // the sentinels, and what to ask them
    std::size_t first_ = 0;          // the sentinel that answered last
    std::size_t watch_attempts_ = 0; // the watch link's connection attempts
};

} // namespace asio_sync::redis::detail

#endif // ASIO_SYNC_REDIS_DETAIL_SENTINEL_RESOLVER_HPP
