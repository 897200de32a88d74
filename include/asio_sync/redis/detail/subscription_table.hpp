// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_REDIS_DETAIL_SUBSCRIPTION_TABLE_HPP
#define ASIO_SYNC_REDIS_DETAIL_SUBSCRIPTION_TABLE_HPP

// The subscriber link's subscriptions, without I/O: which subscriptions listen to which channel,
// which channels the server confirmed, the commands that keep the server in step, and what each
// push of the server means. The driver (connection_impl.hpp) writes the commands it returns and
// feeds it what the link receives once set up.

#include <asio_sync/redis/detail/command.hpp>
#include <asio_sync/redis/detail/event_callback.hpp>
#include <asio_sync/redis/reply.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace asio_sync::redis::detail {

class subscription_table
{
public:
    // What the driver must do for a new subscription.
    enum class need
    {
        nothing, // the channel is subscribed or being subscribed; its callback ran if active
        link,    // the subscriber link is not started: start it (it subscribes every channel)
        write,   // write the command returned
    };

    // Adds the subscription `id`: when its channel is active already its on_subscribed runs; when
    // the channel is new and the link `ready`, `command` is the SUBSCRIBE to write.
    need add(std::uint64_t id, std::string name, message_callback on_message, event_callback on_subscribed,
             bool link_started, bool ready, std::string& command)
    {
        channel_state& channel = channels_[name];
        const bool first = channel.subscribers.empty();
        channel.subscribers.push_back(id);
        auto& s = subscriptions_[id] = subscription{name, std::move(on_message), std::move(on_subscribed)};
        if (channel.active)
        {
            s.on_subscribed();
            return need::nothing;
        }
        if (!link_started)
            return need::link;
        // Also after an UNSUBSCRIBE still in flight: it would undo an earlier SUBSCRIBE.
        if (!first || !ready)
            return need::nothing;
        ++channel.awaiting;
        command = std::string(formatted_command::format({"SUBSCRIBE", name}).bytes());
        return need::write;
    }

    // Ends the subscription `id`; returns the UNSUBSCRIBE to write when its channel has no
    // subscription left and the link is `ready`, else nothing.
    std::string remove(std::uint64_t id, bool ready)
    {
        const auto found = subscriptions_.find(id);
        if (found == subscriptions_.end())
            return {};
        const std::string name = std::move(found->second.channel);
        subscriptions_.erase(found);
        const auto channel = channels_.find(name);
        auto& ids = channel->second.subscribers;
        ids.erase(std::find(ids.begin(), ids.end(), id));
        if (!ids.empty())
            return {};
        channel->second.active = false;
        std::string command;
        if (ready)
            command = std::string(formatted_command::format({"UNSUBSCRIBE", name}).bytes());
        if (channel->second.awaiting == 0)
            channels_.erase(channel);
        return command;
    }

    // A new session of the link is set up: one SUBSCRIBE of every channel, or nothing.
    std::string on_link_up()
    {
        if (channels_.empty())
            return {};
        std::vector<std::string_view> command{"SUBSCRIBE"};
        for (auto& [name, channel] : channels_)
        {
            command.push_back(name);
            ++channel.awaiting;
        }
        return std::string(formatted_command::format(command).bytes());
    }

    // The session ended: no channel is active any more.
    void on_link_down()
    {
        for (auto it = channels_.begin(); it != channels_.end();)
        {
            it->second.active = false;
            it->second.awaiting = 0;
            it = it->second.subscribers.empty() ? channels_.erase(it) : std::next(it);
        }
    }

    // What a push of the set-up link means.
    enum class push
    {
        handled, // a message, a confirmation, or something to ignore
        health,  // the answer to a health check's PING
    };

    // A push: ["message", channel, payload], ["subscribe", channel, count], ["unsubscribe",
    // channel, count], or the answer to a PING (["pong", ""] while subscribed, "PONG" otherwise).
    push on_push(const reply& r)
    {
        if (r.kind == reply_kind::status && r.text == "PONG")
            return push::health;
        if (r.kind != reply_kind::array || r.elements.empty())
            return push::handled;
        const std::string& kind = r.elements[0].text;
        if (kind == "pong")
            return push::health;
        if (r.elements.size() != 3)
            return push::handled;
        const auto channel = channels_.find(r.elements[1].text);
        if (channel == channels_.end())
            return push::handled;
        channel_state& state = channel->second;
        if (kind == "message")
        {
            for (std::uint64_t id : state.subscribers)
                subscriptions_.find(id)->second.on_message(r.elements[2].text);
        }
        else if (kind == "subscribe" && state.awaiting > 0 && --state.awaiting == 0)
        {
            if (state.subscribers.empty())
                channels_.erase(channel);
            else if (!state.active)
            {
                state.active = true;
                for (std::uint64_t id : state.subscribers)
                    subscriptions_.find(id)->second.on_subscribed();
            }
        }
        return push::handled;
    }

    // For good: every subscription ends.
    void clear()
    {
        subscriptions_.clear();
        channels_.clear();
    }

    bool active(std::string_view name) const
    {
        const auto it = channels_.find(std::string(name));
        return it != channels_.end() && it->second.active;
    }

private:
    struct subscription
    {
        std::string channel;
        message_callback on_message;
        event_callback on_subscribed;
    };

    struct channel_state
    {
        std::vector<std::uint64_t> subscribers;
        unsigned awaiting = 0; // SUBSCRIBE confirmations still to come
        bool active = false;
    };

    std::map<std::string, channel_state> channels_;
    std::map<std::uint64_t, subscription> subscriptions_;
};

} // namespace asio_sync::redis::detail

#endif // ASIO_SYNC_REDIS_DETAIL_SUBSCRIPTION_TABLE_HPP
