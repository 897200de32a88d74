// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_REDIS_DETAIL_DURABLE_CONFIRMATION_HPP
#define ASIO_SYNC_REDIS_DETAIL_DURABLE_CONFIRMATION_HPP

// What a call of the semaphore's library made with durable grants
// (semaphore_options::durable_replicas) answers, without I/O. The call is followed, in one step,
// by a WAIT that names it, on the same link (a redirection takes the WAIT along, see
// request_pipeline::on_reply; it covers every earlier write of the link, so also a grant that
// another process's call made before this one). An answer that reports state the server keeps
// (granted, queued, resized) stands only if WAIT confirms the replicas wanted; otherwise the
// caller hears connection_lost: the outcome is unknown, and the call is sent again under the same
// id. Every other answer needs no confirmation and stands as it is: a failure (an error reply, a
// closed connection, refused credentials) or an answer that stores nothing (busy, lost). The
// driver (semaphore_engine.hpp) feeds both replies, in the order they arrive, and hands on the
// answer once the second has.

#include <asio_sync/redis/detail/semaphore_reply.hpp>
#include <asio_sync/redis/error.hpp>
#include <asio_sync/redis/reply.hpp>

#include <boost/system/error_code.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace asio_sync::redis::detail {

class durable_confirmation
{
public:
    explicit durable_confirmation(unsigned replicas) noexcept : replicas_(replicas) {}

    // The timeout of a durable call's WAIT: a tenth of the lease, and at most half the health
    // check's interval, so that one WAIT that confirms too few replicas never silences the link
    // for long enough to look dead. At least 1 ms (0 would wait for ever).
    static std::chrono::milliseconds wait_timeout(std::chrono::milliseconds lease,
                                                  std::chrono::milliseconds health_interval) noexcept
    {
        std::chrono::milliseconds t = lease / 10;
        if (health_interval > std::chrono::milliseconds::zero())
            t = std::min(t, health_interval / 2);
        return std::max(t, std::chrono::milliseconds(1));
    }

    // The WAIT that follows each durable call.
    static std::vector<std::string> wait_command(unsigned replicas, std::chrono::milliseconds timeout)
    {
        return {"WAIT", std::to_string(replicas), std::to_string(timeout.count())};
    }

    // The call answered `answer`: the answer to hand on, if WAIT's reply came first.
    std::optional<semaphore_reply> on_call(const semaphore_reply& answer)
    {
        answer_ = answer;
        return arrived();
    }

    // WAIT answered `acks` (with `ec`): the answer to hand on, if the call's reply came first. It
    // confirms the call if it counts the replicas wanted; refused itself (an ACL without WAIT), it
    // fails the call with no_permission, which no replay would change.
    std::optional<semaphore_reply> on_wait(boost::system::error_code ec, const reply& acks)
    {
        confirmed_ =
            !ec && acks.kind == reply_kind::integer && acks.integer >= static_cast<std::int64_t>(replicas_);
        if (decode_semaphore_reply(ec, acks).error == redis::error::no_permission)
            wait_refused_ = redis::error::no_permission;
        return arrived();
    }

private:
    std::optional<semaphore_reply> arrived()
    {
        if (++count_ != 2)
            return std::nullopt;
        using outcome = semaphore_reply::outcome;
        if (confirmed_ || (answer_.what != outcome::granted && answer_.what != outcome::queued &&
                           answer_.what != outcome::resized))
            return answer_;
        // Not confirmed: the outcome is unknown, and the call is sent again; unless WAIT was
        // refused: then the call failed, having stored its state, which must be given back.
        semaphore_reply unconfirmed;
        unconfirmed.what = wait_refused_ ? outcome::failed : outcome::connection_lost;
        unconfirmed.error = wait_refused_;
        unconfirmed.stored = static_cast<bool>(wait_refused_);
        return unconfirmed;
    }

    unsigned replicas_;
    int count_ = 0; // replies arrived
    semaphore_reply answer_;
    bool confirmed_ = false;
    boost::system::error_code wait_refused_;
};

} // namespace asio_sync::redis::detail

#endif // ASIO_SYNC_REDIS_DETAIL_DURABLE_CONFIRMATION_HPP
