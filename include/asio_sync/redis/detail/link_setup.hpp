// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_REDIS_DETAIL_LINK_SETUP_HPP
#define ASIO_SYNC_REDIS_DETAIL_LINK_SETUP_HPP

// The commands each link of a connection runs at the start of every session, before anything
// else, from the options and the commands registered with add_setup_command, without I/O. The
// driver (link_driver.hpp) hands them to the link's request_pipeline.

#include <asio_sync/redis/connection_options.hpp>
#include <asio_sync/redis/detail/command.hpp>
#include <asio_sync/redis/detail/request_pipeline.hpp>

#include <algorithm>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace asio_sync::redis::detail {

enum class link_kind
{
    command,    // pipelined commands, replies matched in order
    subscriber, // pub/sub
    watch,      // with Sentinel: subscribed to a sentinel's +switch-master
};

class link_setup
{
public:
    explicit link_setup(const connection_options& options)
    {
        if (!options.user.empty() || !options.password.empty())
            credentials_ = auth(options.user, options.password);
        if (!options.cluster_nodes.empty())
        {
            // Every session of a node's command link proves first that the node is a cluster node:
            // one restarted as a standalone server on the same port must run nothing. (A cluster
            // has database 0 only.)
            cluster_check_ = {format({"CLUSTER", "MYID"}), false, false, false, true};
        }
        else if (options.database != 0)
            select_ = {format({"SELECT", std::to_string(options.database)})};
        if (!options.sentinels.empty())
        {
            primary_check_ = {format({"ROLE"}), false, false, true};
            if (!options.sentinel_user.empty() || !options.sentinel_password.empty())
                sentinel_credentials_ = auth(options.sentinel_user, options.sentinel_password);
        }
    }

    // The set-up of a session of a link of `kind`. The watch link needs only the sentinels'
    // credentials; the others the server's and, with Sentinel, the primary check; the command
    // link also the cluster check (the commands after it are written once it passed), SELECT and
    // the commands registered.
    std::vector<setup_command> commands(link_kind kind) const
    {
        std::vector<setup_command> setup;
        const auto add_if = [&](const setup_command& c) {
            if (!c.bytes.empty())
                setup.push_back(c);
        };
        if (kind == link_kind::watch)
        {
            add_if(sentinel_credentials_);
            return setup;
        }
        add_if(credentials_);
        add_if(primary_check_);
        if (kind == link_kind::subscriber)
            return setup;
        add_if(cluster_check_);
        add_if(select_);
        setup.insert(setup.end(), registered_.begin(), registered_.end());
        return setup;
    }

    // Registers a command for the command link's sessions: false if it is registered already
    // (it runs once).
    bool add(std::string command, bool best_effort)
    {
        if (std::any_of(registered_.begin(), registered_.end(),
                        [&](const setup_command& c) { return c.bytes == command; }))
            return false;
        registered_.push_back({std::move(command), best_effort});
        return true;
    }

    // The command registered last.
    const setup_command& last() const noexcept { return registered_.back(); }

private:
    static std::string format(std::initializer_list<std::string_view> args)
    {
        return std::string(formatted_command::format(args).bytes());
    }

    static setup_command auth(const std::string& user, const std::string& password)
    {
        return {user.empty() ? format({"AUTH", password}) : format({"AUTH", user, password}), false, true};
    }

    setup_command credentials_;          // empty: no AUTH
    setup_command primary_check_;        // ROLE, with Sentinel; empty otherwise
    setup_command cluster_check_;        // CLUSTER MYID, in a cluster; empty otherwise
    setup_command select_;               // empty: database 0
    setup_command sentinel_credentials_; // empty: no AUTH to the sentinels
    std::vector<setup_command> registered_;
};

} // namespace asio_sync::redis::detail

#endif // ASIO_SYNC_REDIS_DETAIL_LINK_SETUP_HPP
