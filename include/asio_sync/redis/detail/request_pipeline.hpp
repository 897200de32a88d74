// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_REDIS_DETAIL_REQUEST_PIPELINE_HPP
#define ASIO_SYNC_REDIS_DETAIL_REQUEST_PIPELINE_HPP

// The command link's requests, without I/O: the callers' commands waiting to be written, and the
// replies the server owes, in the order of the commands written (set-up commands, callers'
// commands, health checks). Each session of the link starts with its set-up; the callers'
// commands are written once it has succeeded. The driver (link_driver.hpp) moves the bytes it
// returns to the socket and feeds it the replies it reads.

#include <asio_sync/error.hpp>
#include <asio_sync/redis/detail/command_op.hpp>
#include <asio_sync/redis/error.hpp>
#include <asio_sync/redis/reply.hpp>

#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/error.hpp>
#include <boost/core/no_exceptions_support.hpp>
#include <boost/system/error_code.hpp>

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace asio_sync::redis::detail {

// A command that runs at the start of every session, before the callers' commands.
struct setup_command
{
    std::string bytes;
    bool best_effort = false;   // its error reply is ignored
    bool credentials = false;   // AUTH: an error reply means auth_failed
    bool primary_check = false; // ROLE: a server that is not a primary fails the set-up (not_primary)
    bool cluster_check = false; // CLUSTER MYID: a server without cluster support fails the set-up,
                                // and the set-up commands after it are written once it passed
};

// What a reply answered.
enum class reply_answer
{
    command,     // a caller's command (completed), or one given up (its reply dropped)
    setup,       // a set-up command; the set-up goes on
    set_up,      // the last set-up command: the session is set up (see setup_error)
    checked,     // the cluster check passed: the set-up commands after it, to write (take_held_setup)
    health,      // a health check, or the ASKING before a command sent after an ASK
    not_primary, // a caller's command refused with READONLY, put back at the head of the queue
    redirected,  // in a cluster: a caller's command not run here (see take_redirect)
    slots,       // the reply of a slots_query (see take_slots)
    unexpected   // nothing was awaited: the stream can no longer be trusted
};

// Whether `r` says that the server is a primary: ROLE's reply starts with "master".
inline bool is_primary_role(const reply& r) noexcept
{
    return r.kind == reply_kind::array && !r.elements.empty() && r.elements[0].kind == reply_kind::string &&
           r.elements[0].text == "master";
}

inline bool is_read_only_error(const reply& r) noexcept
{
    return r.kind == reply_kind::error && std::string_view(r.text).substr(0, 9) == "READONLY ";
}

// What a reply means for the command it answers: an error reply is a server error, or an
// authentication failure when it says that credentials are missing or wrong.
inline boost::system::error_code reply_error(const reply& r) noexcept
{
    if (r.kind != reply_kind::error)
        return {};
    const std::string_view text = r.text;
    if (text.substr(0, 7) == "NOAUTH " || text.substr(0, 10) == "WRONGPASS ")
        return error::auth_failed;
    return error::server_error;
}

// A Redis Cluster node's answer that a command did not run there: another node owns its slot
// (MOVED, for good; ASK, for this command, during a migration), or the slot cannot serve it now
// (TRYAGAIN during a migration, CLUSTERDOWN during a failover): to send again later.
struct redirect
{
    enum class kind
    {
        moved,
        ask,
        retry,
    };

    kind what = kind::retry;
    int slot = -1;
    std::string host; // empty: the node that answered
    std::uint16_t port = 0;
    command_op_base* op = nullptr;
    command_op_base* wait = nullptr; // the WAIT that confirms `op`: written after it, where it goes
};

// Whether `text` is a decimal number of at most `max`, and nothing else; if so, it is in `value`.
inline bool decimal(std::string_view text, unsigned max, unsigned& value) noexcept
{
    const char* const end = text.data() + text.size();
    const auto [last, ec] = std::from_chars(text.data(), end, value);
    return ec == std::errc() && last == end && value <= max;
}

// The redirection that `r` orders, if it is one: "MOVED <slot> <host>:<port>", "ASK ...",
// "TRYAGAIN ...", "CLUSTERDOWN ...".
inline bool parse_redirect(const reply& r, redirect& out)
{
    if (r.kind != reply_kind::error)
        return false;
    const std::string_view text = r.text;
    if (text.substr(0, 9) == "TRYAGAIN " || text.substr(0, 12) == "CLUSTERDOWN ")
    {
        out.what = redirect::kind::retry;
        return true;
    }
    const bool moved = text.substr(0, 6) == "MOVED ";
    if (!moved && text.substr(0, 4) != "ASK ")
        return false;
    const std::string_view rest = text.substr(moved ? 6 : 4);
    const std::size_t space = rest.find(' ');
    const std::size_t colon = rest.rfind(':');
    unsigned slot = 0;
    unsigned port = 0;
    if (space == std::string_view::npos || colon == std::string_view::npos || colon < space ||
        !decimal(rest.substr(0, space), 16383, slot) || !decimal(rest.substr(colon + 1), 65535, port))
        return false;
    out.what = moved ? redirect::kind::moved : redirect::kind::ask;
    out.slot = static_cast<int>(slot);
    out.host = std::string(rest.substr(space + 1, colon - space - 1));
    out.port = static_cast<std::uint16_t>(port);
    return true;
}

// Whether `r`, the answer to a CLUSTER command (the set-up's cluster check, CLUSTER SLOTS), says
// that the server is not a cluster node: it must not serve a connection made for a cluster as if
// it were one.
inline bool is_cluster_disabled(const reply& r) noexcept
{
    return r.kind == reply_kind::error &&
           std::string_view(r.text).find("cluster support disabled") != std::string_view::npos;
}

// Completes `op`; a handler that cannot be submitted (its executor or allocator threw) is gone,
// with nobody left to tell.
inline void complete_command(command_op_base* op, boost::system::error_code ec, reply r) noexcept
{
    BOOST_TRY
    {
        op->complete(ec, std::move(r));
    }
    BOOST_CATCH(...)
    {
    }
    BOOST_CATCH_END
}

class request_pipeline
{
public:
    request_pipeline() = default;
    request_pipeline(const request_pipeline&) = delete;
    request_pipeline& operator=(const request_pipeline&) = delete;

    // Destroys, without invoking them, the handlers still held: only after the execution context
    // shut down without the connection closing.
    ~request_pipeline()
    {
        for (const queued_command& q : queued_)
            q.op->destroy();
        for (const pending& p : pending_)
            if (p.op)
                p.op->destroy();
    }

    // ---- callers' commands

    // Takes a caller's command; after close(), completes it with asio_sync::error::closed. With
    // `asking`, it is written after ASKING (it follows an ASK redirection).
    void add(command_op_ptr op, bool asking = false)
    {
        if (closed_)
            return complete_command(op.release(), asio_sync::error::closed, {});
        queued_.push_back({op.get(), asking});
        op.release();
    }

    // Hands back the commands waiting to be written for which `keep(slot)` is false, oldest
    // first, without their ASKING: those that belong to another node now.
    template <class Keep>
    std::vector<command_op_base*> take_queued_unless(Keep keep)
    {
        std::vector<command_op_base*> taken;
        const auto kept = std::stable_partition(queued_.begin(), queued_.end(), [&](const queued_command& q) {
            return keep(q.op->command().slot());
        });
        for (auto it = kept; it != queued_.end(); ++it)
            taken.push_back(it->op);
        queued_.erase(kept, queued_.end());
        return taken;
    }

    // Gives up the command `id` if it waits to be written (every cancellation type), or awaits its
    // reply (terminal and partial: it may have run, so its reply is dropped when it comes).
    void cancel(std::uint64_t id, boost::asio::cancellation_type_t type)
    {
        using boost::asio::cancellation_type;
        const auto queued = std::find_if(queued_.begin(), queued_.end(),
                                         [id](const queued_command& q) { return q.op->id() == id; });
        if (queued != queued_.end())
        {
            if (!(type &
                  (cancellation_type::terminal | cancellation_type::partial | cancellation_type::total)))
                return;
            command_op_base* op = queued->op;
            queued_.erase(queued);
            return complete_command(op, boost::asio::error::operation_aborted, {});
        }
        if (!(type & (cancellation_type::terminal | cancellation_type::partial)))
            return;
        for (pending& p : pending_)
            if (p.op && p.op->id() == id)
                return complete_command(std::exchange(p.op, nullptr), boost::asio::error::operation_aborted,
                                        {});
    }

    // ---- a session

    // The link connected: its set-up commands, to write first (up to a cluster check: the others
    // once it passed). Nothing is written after them until they are all answered.
    std::string start_session(const std::vector<setup_command>& setup)
    {
        std::string bytes;
        setup_left_ = 0;
        setup_error_ = {};
        setup_reply_ = {};
        held_setup_.clear();
        checking_ = false;
        for (const setup_command& command : setup)
            bytes += add_setup(command);
        return bytes;
    }

    // A set-up command added while the session is up: written at once (or, while a cluster check
    // awaits its reply, once it passed), before the callers' commands written after it.
    std::string add_setup(const setup_command& command)
    {
        ++setup_left_;
        if (checking_)
        {
            held_setup_.push_back(command);
            return {};
        }
        checking_ = command.cluster_check;
        pending_.push_back({command.credentials     ? awaited::credentials
                            : command.primary_check ? awaited::primary_check
                            : command.cluster_check ? awaited::cluster_check
                            : command.best_effort   ? awaited::best_effort_setup
                                                    : awaited::setup,
                            nullptr});
        return command.bytes;
    }

    // After `checked`: the set-up commands held behind the cluster check, to write.
    std::string take_held_setup()
    {
        std::string bytes;
        for (const setup_command& command : std::exchange(held_setup_, {}))
        {
            --setup_left_; // counted again
            bytes += add_setup(command);
        }
        return bytes;
    }

    bool setting_up() const noexcept { return setup_left_ > 0; }

    // The first set-up command that failed, and its reply; no error once they all succeeded.
    // A primary check that found another role fails it with error::read_only; a cluster check
    // answered by a server without cluster support, with error::cluster_disabled.
    boost::system::error_code setup_error() const noexcept { return setup_error_; }
    const reply& setup_reply() const noexcept { return setup_reply_; }

    // The session is set up: the commands queued, to write, now awaiting their replies.
    std::string take_commands()
    {
        std::string bytes;
        for (const queued_command& q : queued_)
        {
            if (q.asking)
            {
                pending_.push_back({awaited::asking, nullptr});
                bytes += asking_bytes;
            }
            pending_.push_back({awaited::command, q.op});
            bytes += q.op->command().bytes();
            if (!requeue_read_only_ && !follow_redirects_) // else kept, to be written again
                q.op->command().release();
        }
        queued_.clear();
        return bytes;
    }

    // A health check to write: a PING whose reply proves the link alive.
    std::string health_check()
    {
        pending_.push_back({awaited::health, nullptr});
        return std::string(ping_bytes);
    }

    // CLUSTER SLOTS, to write: its reply is answered `slots`.
    std::string slots_query()
    {
        pending_.push_back({awaited::slots, nullptr});
        return std::string(slots_bytes);
    }

    // The next reply of the session.
    reply_answer on_reply(reply&& r)
    {
        if (pending_.empty())
            return reply_answer::unexpected;
        const pending p = pending_.front();
        pending_.pop_front();
        switch (p.what)
        {
        case awaited::command:
            if (requeue_read_only_ && is_read_only_error(r) && !(p.op && p.op->command().requeued()))
            {
                // Not run: it waits for the primary, ahead of the commands queued after it. Refused
                // so again by a server that answered ROLE as a primary, it is the command's own
                // error (a script's error reply), and completes with it.
                if (p.op)
                {
                    p.op->command().mark_requeued();
                    queued_.push_front({p.op, false});
                }
                return reply_answer::not_primary;
            }
            if (follow_redirects_ && p.op && parse_redirect(r, redirect_))
            {
                // Not run here. The WAIT that confirms it follows it, to be written after it on the
                // link of the node that runs it, and its reply here is dropped: the one that names
                // it (as the semaphore's engine sends one with each durable call), or else an
                // unnamed WAIT of its slot written right after it. Any other WAIT written after it
                // for its slot would count the replicas of writes that are not its: it says
                // nothing. (A WAIT named for another command never follows this one, even right
                // after it: it would confirm on the target a command that ran here.)
                const int slot = p.op->command().slot();
                auto next = std::find_if(pending_.begin(), pending_.end(), [&](const pending& later) {
                    return later.op && later.op->command().confirms() == p.op->id();
                });
                if (next == pending_.end())
                {
                    next = std::find_if(pending_.begin(), pending_.end(),
                                        [](const pending& later) { return later.what == awaited::command; });
                    if (next != pending_.end() && next->op && next->op->command().confirms() != 0)
                        next = pending_.end();
                }
                command_op_base* follower = nullptr;
                if (slot >= 0 && next != pending_.end() && next->op && next->op->command().waits() &&
                    next->op->command().slot() == slot)
                    follower = std::exchange(next->op, nullptr);
                for (pending& later : pending_)
                    if (later.op && later.op->command().waits() &&
                        (later.op->command().slot() == slot || later.op->command().slot() < 0))
                        later.unconfirmed = true;
                // MOVED and ASK followed at once are bounded: nodes whose maps disagree would send
                // it back and forth for ever. TRYAGAIN and CLUSTERDOWN make it wait (bounded by its
                // caller's deadline), and it counts again from there.
                if (redirect_.what == redirect::kind::retry)
                    p.op->command().reset_redirections();
                else if (p.op->command().count_redirection() > redirect_limit_)
                {
                    redirect_ = {};
                    if (follower)
                        complete_command(follower, error::too_many_redirections, {});
                    complete_command(p.op, error::too_many_redirections, {});
                    return reply_answer::command;
                }
                redirect_.op = p.op;
                redirect_.wait = follower;
                return reply_answer::redirected;
            }
            if (p.op && p.unconfirmed)
                complete_command(p.op, error::connection_lost, {});
            else if (p.op)
            {
                const boost::system::error_code ec = reply_error(r);
                complete_command(p.op, ec, std::move(r));
            }
            return reply_answer::command;
        case awaited::health:
        case awaited::asking:
            return reply_answer::health;
        case awaited::slots:
            slots_ = std::move(r);
            return reply_answer::slots;
        default:
            break;
        }
        if (p.what == awaited::primary_check && !setup_error_ && !is_primary_role(r))
        {
            setup_error_ = r.kind == reply_kind::error ? reply_error(r) : error::read_only;
            setup_reply_ = std::move(r);
        }
        else if (r.kind == reply_kind::error && !setup_error_ && p.what != awaited::best_effort_setup)
        {
            setup_error_ = p.what == awaited::credentials ? error::auth_failed
                           : p.what == awaited::cluster_check && is_cluster_disabled(r)
                               ? error::cluster_disabled
                               : reply_error(r);
            setup_reply_ = std::move(r);
        }
        if (p.what == awaited::cluster_check)
        {
            // Passed, it lets the set-up commands held behind it go; failed, it fails the set-up
            // now, and they are never written.
            checking_ = false;
            if (setup_error_)
                setup_left_ -= std::exchange(held_setup_, {}).size();
            else if (!held_setup_.empty())
            {
                --setup_left_;
                return reply_answer::checked;
            }
        }
        return --setup_left_ == 0 ? reply_answer::set_up : reply_answer::setup;
    }

    // The redirection answered `redirected`; the caller takes its command.
    redirect take_redirect() noexcept { return std::exchange(redirect_, {}); }

    // The reply answered `slots`.
    reply take_slots() noexcept { return std::exchange(slots_, {}); }

    // The session ended: the commands written complete with `ec` (connection_lost: they may have
    // run), the set-up with it.
    void end_session(boost::system::error_code ec)
    {
        std::deque<pending> ended = std::move(pending_);
        pending_.clear();
        setup_left_ = 0;
        held_setup_.clear();
        checking_ = false;
        for (const pending& p : ended)
            if (p.op)
                complete_command(p.op, ec, {});
    }

    // The commands waiting to be written fail with `ec` and `r` (a failed set-up's reply).
    void fail_queued(boost::system::error_code ec, const reply& r)
    {
        std::deque<queued_command> failed = std::move(queued_);
        queued_.clear();
        for (const queued_command& q : failed)
            complete_command(q.op, ec, r);
    }

    // For good: every command held completes with operation_aborted; later ones with closed.
    void close()
    {
        closed_ = true;
        end_session(boost::asio::error::operation_aborted);
        fail_queued(boost::asio::error::operation_aborted, {});
    }

    bool has_queued() const noexcept { return !queued_.empty(); }

    // Whether a caller's command for `slot` waits to be written.
    bool holds_slot(int slot) const noexcept
    {
        return std::any_of(queued_.begin(), queued_.end(),
                           [slot](const queued_command& q) { return q.op->command().slot() == slot; });
    }

    // Whether a caller's command for `slot` was written and awaits its reply.
    bool awaits_slot(int slot) const noexcept
    {
        return std::any_of(pending_.begin(), pending_.end(),
                           [slot](const pending& p) { return p.op && p.op->command().slot() == slot; });
    }

    // With Sentinel: a caller's command refused with READONLY did not run, and is put back at the
    // head of the queue (on_reply answers not_primary) instead of completing with the error.
    void requeue_read_only(bool on) noexcept { requeue_read_only_ = on; }

    // In a cluster: a caller's command answered with a redirection (see parse_redirect) is handed
    // back (on_reply answers redirected) instead of completing with the error; one answered with
    // MOVED or ASK more than `limit` times in a row (without waiting in between: TRYAGAIN,
    // CLUSTERDOWN) completes with error::too_many_redirections.
    void follow_redirects(bool on, std::size_t limit = 16) noexcept
    {
        follow_redirects_ = on;
        redirect_limit_ = limit;
    }

    static constexpr std::string_view ping_bytes = "*1\r\n$4\r\nPING\r\n";
    static constexpr std::string_view asking_bytes = "*1\r\n$6\r\nASKING\r\n";
    static constexpr std::string_view slots_bytes = "*2\r\n$7\r\nCLUSTER\r\n$5\r\nSLOTS\r\n";

private:
    enum class awaited
    {
        command, // a caller's command; `op` is null once it was given up (its reply is dropped)
        credentials,
        primary_check,
        cluster_check,
        setup,
        best_effort_setup,
        health,
        asking, // before a command sent after an ASK
        slots,  // CLUSTER SLOTS
    };

    struct pending
    {
        awaited what;
        command_op_base* op;
        bool unconfirmed = false; // a WAIT after a redirected command of its slot: connection_lost
    };

    struct queued_command
    {
        command_op_base* op;
        bool asking; // written after ASKING
    };

    std::deque<queued_command> queued_;     // not yet written, oldest first
    std::deque<pending> pending_;           // written, in order
    std::size_t setup_left_ = 0;            // written or held
    std::vector<setup_command> held_setup_; // behind the cluster check
    bool checking_ = false;                 // a cluster check awaits its reply
    boost::system::error_code setup_error_;
    reply setup_reply_;
    bool closed_ = false;
    bool requeue_read_only_ = false;
    bool follow_redirects_ = false;
    std::size_t redirect_limit_ = 16;
    redirect redirect_;
    reply slots_;
};

} // namespace asio_sync::redis::detail

#endif // ASIO_SYNC_REDIS_DETAIL_REQUEST_PIPELINE_HPP
