// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#define BOOST_TEST_MODULE redis_request_pipeline

// The command link's requests without a socket: set-up first, the callers' commands after it,
// replies matched in order, health checks, failed set-ups, the primary check, the cluster check
// (a server without cluster support fails the set-up with cluster_disabled), a command refused
// with READONLY queued again, a session lost, cancellation of commands waiting or written, close,
// and in a cluster: redirections handed back (MOVED, ASK, TRYAGAIN, CLUSTERDOWN), ASKING written
// before a command, the WAIT sent right after a redirected command for its slot handed back with
// it (another WAIT after it answered connection_lost), a cancelled call or WAIT completed once
// through a redirection, MOVED and ASK bounded per command, a node
// without cluster support recognised, and the map's question.

#include <asio_sync/redis/detail/request_pipeline.hpp>

#include "support/redis_printing.hpp"
#include "support/redis_replies.hpp"

#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/error.hpp>
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

BOOST_AUTO_TEST_SUITE(redis_request_pipeline)

namespace {

namespace redis = asio_sync::redis;
using asio_sync::test::bytes;
using boost::system::error_code;
using redis::detail::command_op_base;
using redis::detail::command_op_ptr;
using redis::detail::formatted_command;
using redis::detail::redirect;
using redis::detail::reply_answer;
using redis::detail::request_pipeline;
using redis::detail::setup_command;
using cancellation_type = boost::asio::cancellation_type;

// A command that records how it ended in a log: "<id> <outcome>", the outcome being the reply's
// text, or the error's name.
class recorded_op final : public command_op_base
{
public:
    recorded_op(std::uint64_t id, std::initializer_list<std::string_view> args, std::vector<std::string>& log)
        : command_op_base(&do_func, id, formatted_command::format_for_pipeline(args)), log_(log)
    {
    }

private:
    static void do_func(command_op_base* base, action what, error_code ec, redis::reply* r)
    {
        auto* op = static_cast<recorded_op*>(base);
        std::string entry = std::to_string(op->id()) + " ";
        if (what == action::destroy)
            entry += "destroyed";
        else if (ec == redis::error::connection_lost)
            entry += "connection_lost";
        else if (ec == boost::asio::error::operation_aborted)
            entry += "aborted";
        else if (ec == asio_sync::error::closed)
            entry += "closed";
        else if (ec == redis::error::server_error)
            entry += "server_error " + r->text;
        else if (ec)
            entry += ec.message();
        else
            entry += r->text;
        op->log_.push_back(entry);
        delete op;
    }

    std::vector<std::string>& log_;
};

redis::reply status(std::string text)
{
    return asio_sync::test::text_reply(redis::reply_kind::status, std::move(text));
}

redis::reply error_reply(std::string text)
{
    return asio_sync::test::text_reply(redis::reply_kind::error, std::move(text));
}

struct fixture
{
    void add(std::uint64_t id, std::initializer_list<std::string_view> args)
    {
        pipeline.add(command_op_ptr(new recorded_op(id, args, log)));
    }

    std::vector<std::string> take_log() { return std::exchange(log, {}); }

    std::vector<std::string> log;
    request_pipeline pipeline;
};

const setup_command auth{bytes({"AUTH", "secret"}), false, true};
const setup_command select_db{bytes({"SELECT", "1"}), false, false};
const setup_command load{bytes({"FUNCTION", "LOAD", "x"}), true, false};
const setup_command role{bytes({"ROLE"}), false, false, true};
const setup_command myid{bytes({"CLUSTER", "MYID"}), false, false, false, true};

redis::reply role_reply(std::string name)
{
    return asio_sync::test::array_reply(
        {asio_sync::test::text_reply(redis::reply_kind::string, std::move(name))});
}

} // namespace

BOOST_FIXTURE_TEST_CASE(commands_wait_for_the_set_up_then_are_answered_in_order, fixture)
{
    add(1, {"GET", "a"});
    BOOST_TEST(pipeline.start_session({auth, select_db}) == auth.bytes + select_db.bytes);
    BOOST_TEST(pipeline.setting_up());
    add(2, {"GET", "b"});
    BOOST_TEST((pipeline.on_reply(status("OK")) == reply_answer::setup));
    BOOST_TEST((pipeline.on_reply(status("OK")) == reply_answer::set_up));
    BOOST_TEST(!pipeline.setup_error());
    BOOST_TEST(pipeline.take_commands() == bytes({"GET", "a"}) + bytes({"GET", "b"}));
    BOOST_TEST(pipeline.take_commands().empty());
    BOOST_TEST((pipeline.on_reply(status("A")) == reply_answer::command));
    BOOST_TEST((pipeline.on_reply(status("B")) == reply_answer::command));
    BOOST_TEST(take_log() == (std::vector<std::string>{"1 A", "2 B"}));
    BOOST_TEST((pipeline.on_reply(status("?")) == reply_answer::unexpected));
}

BOOST_FIXTURE_TEST_CASE(a_failed_set_up_keeps_its_first_error_and_reply, fixture)
{
    pipeline.start_session({select_db, load, auth});
    BOOST_TEST((pipeline.on_reply(error_reply("ERR DB index is out of range")) == reply_answer::setup));
    BOOST_TEST((pipeline.on_reply(error_reply("ERR ignored, best effort")) == reply_answer::setup));
    BOOST_TEST((pipeline.on_reply(error_reply("WRONGPASS invalid password")) == reply_answer::set_up));
    BOOST_TEST(pipeline.setup_error() == error_code(redis::error::server_error));
    BOOST_TEST(pipeline.setup_reply().text == "ERR DB index is out of range");
    add(1, {"PING"});
    pipeline.fail_queued(pipeline.setup_error(), pipeline.setup_reply());
    BOOST_TEST(take_log() == (std::vector<std::string>{"1 server_error ERR DB index is out of range"}));

    // Refused credentials are an authentication failure; a best-effort command's error is not one.
    pipeline.start_session({load, auth});
    BOOST_TEST((pipeline.on_reply(error_reply("NOPERM")) == reply_answer::setup));
    BOOST_TEST((pipeline.on_reply(error_reply("WRONGPASS invalid password")) == reply_answer::set_up));
    BOOST_TEST(pipeline.setup_error() == error_code(redis::error::auth_failed));
}

BOOST_FIXTURE_TEST_CASE(no_set_up_means_set_up_at_once, fixture)
{
    BOOST_TEST(pipeline.start_session({}).empty());
    BOOST_TEST(!pipeline.setting_up());
}

BOOST_FIXTURE_TEST_CASE(a_set_up_command_added_while_running_holds_back_later_commands, fixture)
{
    pipeline.start_session({});
    add(1, {"GET", "a"});
    BOOST_TEST(pipeline.take_commands() == bytes({"GET", "a"}));
    BOOST_TEST(pipeline.add_setup(load) == load.bytes);
    BOOST_TEST(pipeline.setting_up());
    add(2, {"GET", "b"});
    BOOST_TEST((pipeline.on_reply(status("A")) == reply_answer::command));
    BOOST_TEST((pipeline.on_reply(status("OK")) == reply_answer::set_up));
    BOOST_TEST(pipeline.take_commands() == bytes({"GET", "b"}));
}

BOOST_FIXTURE_TEST_CASE(a_health_check_is_answered_in_its_place, fixture)
{
    pipeline.start_session({});
    add(1, {"GET", "a"});
    pipeline.take_commands();
    BOOST_TEST(pipeline.health_check() == bytes({"PING"}));
    BOOST_TEST((pipeline.on_reply(status("A")) == reply_answer::command));
    BOOST_TEST((pipeline.on_reply(status("PONG")) == reply_answer::health));
}

BOOST_FIXTURE_TEST_CASE(a_lost_session_fails_what_was_written_and_keeps_what_waits, fixture)
{
    pipeline.start_session({});
    add(1, {"GET", "a"});
    pipeline.take_commands();
    add(2, {"GET", "b"});
    pipeline.end_session(redis::error::connection_lost);
    BOOST_TEST(take_log() == (std::vector<std::string>{"1 connection_lost"}));
    BOOST_TEST(pipeline.has_queued());
    pipeline.start_session({});
    BOOST_TEST(pipeline.take_commands() == bytes({"GET", "b"}));
    BOOST_TEST((pipeline.on_reply(status("B")) == reply_answer::command));
    BOOST_TEST(take_log() == (std::vector<std::string>{"2 B"}));
}

BOOST_FIXTURE_TEST_CASE(cancellation_takes_back_a_waiting_command_and_drops_a_written_ones_reply, fixture)
{
    pipeline.start_session({});
    for (const std::uint64_t id : {1u, 2u, 3u})
        add(id, {"GET", "x"});
    pipeline.cancel(1, cancellation_type::total);
    pipeline.cancel(2, cancellation_type::none); // not a cancellation type it honours
    BOOST_TEST(take_log() == (std::vector<std::string>{"1 aborted"}));
    pipeline.take_commands();                     // 2 and 3 written
    pipeline.cancel(2, cancellation_type::total); // cannot take back what was sent
    BOOST_TEST(take_log().empty());
    pipeline.cancel(2, cancellation_type::partial);
    pipeline.cancel(9, cancellation_type::terminal); // unknown: nothing
    BOOST_TEST(take_log() == (std::vector<std::string>{"2 aborted"}));
    BOOST_TEST((pipeline.on_reply(status("dropped")) == reply_answer::command));
    BOOST_TEST((pipeline.on_reply(status("C")) == reply_answer::command));
    BOOST_TEST(take_log() == (std::vector<std::string>{"3 C"}));
}

BOOST_FIXTURE_TEST_CASE(close_aborts_everything_and_refuses_later_commands, fixture)
{
    pipeline.start_session({});
    add(1, {"GET", "a"});
    pipeline.take_commands();
    add(2, {"GET", "b"});
    pipeline.close();
    BOOST_TEST(take_log() == (std::vector<std::string>{"1 aborted", "2 aborted"}));
    add(3, {"GET", "c"});
    BOOST_TEST(take_log() == (std::vector<std::string>{"3 closed"}));
}

BOOST_FIXTURE_TEST_CASE(a_primary_check_fails_the_set_up_on_another_role, fixture)
{
    pipeline.start_session({auth, role, select_db});
    pipeline.on_reply(status("OK"));
    BOOST_TEST((pipeline.on_reply(role_reply("slave")) == reply_answer::setup));
    BOOST_TEST((pipeline.on_reply(status("OK")) == reply_answer::set_up));
    BOOST_TEST(pipeline.setup_error() == error_code(redis::error::read_only));
    BOOST_TEST(pipeline.setup_reply().elements.size() == 1u);

    pipeline.start_session({role});
    BOOST_TEST((pipeline.on_reply(role_reply("master")) == reply_answer::set_up));
    BOOST_TEST(!pipeline.setup_error());

    // ROLE refused (an ACL without it) is that error, not a role.
    pipeline.start_session({role});
    BOOST_TEST(
        (pipeline.on_reply(error_reply("NOPERM this user has no permissions to run the 'role' command")) ==
         reply_answer::set_up));
    BOOST_TEST(pipeline.setup_error() == error_code(redis::error::server_error));
}

// In a cluster, every session proves first that the server is a cluster node: one without cluster
// support (a node restarted as a standalone server) fails the set-up with cluster_disabled, and
// neither the set-up commands after the check nor the callers' commands are written; any other
// error is that error. Passed, the check lets the set-up commands held behind it go.
BOOST_FIXTURE_TEST_CASE(a_cluster_check_fails_the_set_up_on_a_server_without_cluster_support, fixture)
{
    struct row
    {
        redis::reply answer; // to CLUSTER MYID
        error_code setup_error;
    };
    const row rows[] = {
        {asio_sync::test::text_reply(redis::reply_kind::string, "07c37dfeb235213a872192d90877d0cd55635b91"),
         {}},
        {error_reply("ERR This instance has cluster support disabled"), redis::error::cluster_disabled},
        {error_reply("NOPERM this user has no permissions to run the 'cluster|myid' command"),
         redis::error::server_error},
        {error_reply("NOAUTH Authentication required."), redis::error::auth_failed},
        {error_reply("LOADING Redis is loading the dataset in memory"), redis::error::server_error},
    };
    for (const row& r : rows)
    {
        BOOST_TEST_CONTEXT(r.answer.text)
        {
            add(1, {"GET", "a"});
            BOOST_TEST(pipeline.start_session({auth, myid, load}) == auth.bytes + myid.bytes);
            BOOST_TEST(pipeline.add_setup(select_db).empty()); // held too
            BOOST_TEST((pipeline.on_reply(status("OK")) == reply_answer::setup));
            if (!r.setup_error)
            {
                BOOST_TEST((pipeline.on_reply(redis::reply(r.answer)) == reply_answer::checked));
                BOOST_TEST(pipeline.take_held_setup() == load.bytes + select_db.bytes);
                BOOST_TEST((pipeline.on_reply(status("OK")) == reply_answer::setup));
                BOOST_TEST((pipeline.on_reply(status("OK")) == reply_answer::set_up));
            }
            else // what it held is never written
                BOOST_TEST((pipeline.on_reply(redis::reply(r.answer)) == reply_answer::set_up));
            BOOST_TEST(!pipeline.setting_up());
            BOOST_TEST(pipeline.take_held_setup().empty());
            BOOST_TEST(pipeline.setup_error() == r.setup_error);
            BOOST_TEST(pipeline.setup_reply().text == (r.setup_error ? r.answer.text : std::string()));
            pipeline.fail_queued(redis::error::connection_lost, {}); // the driver's part
            BOOST_TEST(take_log() == (std::vector<std::string>{"1 connection_lost"}));
        }
    }

    // Only the cluster check says so: another set-up command's error is a server error.
    pipeline.start_session({select_db});
    pipeline.on_reply(error_reply("ERR This instance has cluster support disabled"));
    BOOST_TEST(pipeline.setup_error() == error_code(redis::error::server_error));
}

// With Sentinel, a command refused with READONLY did not run: it goes back to the head of the
// queue, with its bytes, and is written again on the next session before those queued after it.
BOOST_FIXTURE_TEST_CASE(a_command_refused_as_read_only_is_queued_again_first, fixture)
{
    pipeline.requeue_read_only(true);
    pipeline.start_session({});
    add(1, {"GET", "a"});
    add(2, {"INCR", "b"});
    add(3, {"INCR", "c"});
    pipeline.take_commands();
    add(4, {"INCR", "d"});
    BOOST_TEST((pipeline.on_reply(status("A")) == reply_answer::command));
    BOOST_TEST((pipeline.on_reply(error_reply("READONLY You can't write against a read only replica.")) ==
                reply_answer::not_primary));
    pipeline.end_session(redis::error::connection_lost); // the driver drops the session
    BOOST_TEST(take_log() == (std::vector<std::string>{"1 A", "3 connection_lost"}));
    pipeline.start_session({});
    BOOST_TEST(pipeline.take_commands() == bytes({"INCR", "b"}) + bytes({"INCR", "d"}));
    BOOST_TEST((pipeline.on_reply(status("B")) == reply_answer::command));
    BOOST_TEST((pipeline.on_reply(status("D")) == reply_answer::command));
    BOOST_TEST(take_log() == (std::vector<std::string>{"2 B", "4 D"}));

    // Without Sentinel it is the command's answer.
    pipeline.requeue_read_only(false);
    add(5, {"INCR", "e"});
    pipeline.take_commands();
    BOOST_TEST((pipeline.on_reply(error_reply("READONLY no")) == reply_answer::command));
    BOOST_TEST(take_log() == (std::vector<std::string>{"5 server_error READONLY no"}));
}

// Refused with READONLY a second time, by a server whose ROLE said primary, the command completes
// with the reply: a script's own error reply must not drop the link again and again (before, it was
// queued again for ever, and the link reconnected at each try).
BOOST_FIXTURE_TEST_CASE(a_command_refused_as_read_only_twice_completes_with_the_error, fixture)
{
    pipeline.requeue_read_only(true);
    pipeline.start_session({});
    add(1, {"EVAL", "return redis.error_reply('READONLY mine')", "0"});
    pipeline.take_commands();
    BOOST_TEST((pipeline.on_reply(error_reply("READONLY mine")) == reply_answer::not_primary));
    pipeline.end_session(redis::error::connection_lost);
    pipeline.start_session({});
    pipeline.take_commands();
    BOOST_TEST((pipeline.on_reply(error_reply("READONLY mine")) == reply_answer::command));
    BOOST_TEST(take_log() == (std::vector<std::string>{"1 server_error READONLY mine"}));
}

BOOST_AUTO_TEST_CASE(destruction_destroys_the_handlers_still_held)
{
    std::vector<std::string> log;
    {
        request_pipeline pipeline;
        pipeline.start_session({});
        pipeline.add(command_op_ptr(new recorded_op(1, {"GET", "a"}, log)));
        pipeline.take_commands();
        pipeline.add(command_op_ptr(new recorded_op(2, {"GET", "b"}, log)));
    }
    BOOST_TEST(log == (std::vector<std::string>{"2 destroyed", "1 destroyed"}));
}

BOOST_AUTO_TEST_CASE(redirections_are_parsed)
{
    redirect r;
    BOOST_TEST(redis::detail::parse_redirect(error_reply("MOVED 3999 127.0.0.1:6381"), r));
    BOOST_TEST((r.what == redirect::kind::moved));
    BOOST_TEST(r.slot == 3999);
    BOOST_TEST(r.host == "127.0.0.1");
    BOOST_TEST(r.port == 6381);
    BOOST_TEST(redis::detail::parse_redirect(error_reply("ASK 0 [::1]:7000"), r));
    BOOST_TEST((r.what == redirect::kind::ask));
    BOOST_TEST(r.host == "[::1]");
    BOOST_TEST(redis::detail::parse_redirect(error_reply("MOVED 16383 :7001"), r)); // the same host
    BOOST_TEST(r.host.empty());
    BOOST_TEST(redis::detail::parse_redirect(
        error_reply("TRYAGAIN Multiple keys request during rehashing of slot"), r));
    BOOST_TEST((r.what == redirect::kind::retry));
    BOOST_TEST(redis::detail::parse_redirect(error_reply("CLUSTERDOWN The cluster is down"), r));
    for (const char* bad : {"MOVED 16384 h:1", "MOVED x h:1", "MOVED 1 h:", "MOVED 1 h:70000", "MOVED 1",
                            "ERR MOVED", "ASK  h:1"})
        BOOST_TEST(!redis::detail::parse_redirect(error_reply(bad), r), bad);
    BOOST_TEST(!redis::detail::parse_redirect(status("MOVED 1 h:1"), r));
}

BOOST_FIXTURE_TEST_CASE(a_redirected_command_is_handed_back_and_a_wait_after_it_says_nothing, fixture)
{
    pipeline.follow_redirects(true);
    pipeline.start_session({});
    add(1, {"SET", "a", "1"});
    add(2, {"WAIT", "1", "100"});
    add(3, {"SET", "b", "1"});
    // A WAIT sent for b's slot (as the semaphore's engine sends its WAITs for its slot).
    auto* wait_b = new recorded_op(4, {"WAIT", "1", "100"}, log);
    wait_b->command().route_to(redis::detail::key_slot("b"));
    pipeline.add(command_op_ptr(wait_b));
    pipeline.take_commands();
    BOOST_TEST((pipeline.on_reply(error_reply("MOVED 15495 127.0.0.1:7002")) == reply_answer::redirected));
    redirect r = pipeline.take_redirect();
    BOOST_TEST(r.op->id() == 1u);
    BOOST_TEST(r.op->command().bytes() == bytes({"SET", "a", "1"})); // kept, to be written again
    r.op->complete({}, status("moved on"));
    BOOST_TEST((pipeline.on_reply(status("2 replicas")) == reply_answer::command));
    BOOST_TEST((pipeline.on_reply(status("OK")) == reply_answer::command));
    BOOST_TEST((pipeline.on_reply(status("2 replicas")) == reply_answer::command));
    // A keyless WAIT, sent for any slot, says nothing; one for another slot counts its writes.
    BOOST_TEST(take_log() ==
               (std::vector<std::string>{"1 moved on", "2 connection_lost", "3 OK", "4 2 replicas"}));
}

// Table rows: the commands written (a WAIT given a key's slot is sent for it, as the semaphore's
// engine sends its WAITs), the first one answered with a redirection, then the others' replies.
// The WAIT that names it follows it, wherever it is; else an unnamed WAIT written right after it
// for its slot (handed back with it, its reply here dropped); any other WAIT after it for its slot,
// or keyless, says nothing.
BOOST_AUTO_TEST_CASE(the_wait_right_after_a_redirected_command_of_its_slot_follows_it)
{
    struct command
    {
        std::vector<std::string_view> args;
        const char* wait_for = nullptr; // a WAIT sent for this key's slot
        std::uint64_t confirms = 0;     // a WAIT naming the command with this id
    };
    struct row
    {
        const char* what;
        std::vector<command> commands; // ids 1, 2, ...
        const char* redirection;       // the reply to command 1
        std::uint64_t follower;        // the WAIT handed back with it; 0: none
        std::vector<std::string> log;  // once every other command had its reply ("R")
    };
    const command set_a{{"SET", "a", "1"}};
    const command wait_a{{"WAIT", "1", "100"}, "a"};
    const command wait_b{{"WAIT", "1", "100"}, "b"};
    const command wait_any{{"WAIT", "1", "100"}};
    const command get_a{{"GET", "a"}};
    const command set_b{{"SET", "b", "1"}};
    const command wait_a_for_1{{"WAIT", "1", "100"}, "a", 1};
    const command wait_a_for_7{{"WAIT", "1", "100"}, "a", 7};
    const row rows[] = {
        {"the WAIT that names it, past another command of its slot",
         {set_a, get_a, wait_a_for_1},
         "ASK 15495 :7002",
         3,
         {"2 R"}},
        {"not a WAIT that names another command, even right after it",
         {set_a, wait_a_for_7},
         "ASK 15495 :7002",
         0,
         {"2 connection_lost"}},
        {"after ASK", {set_a, wait_a}, "ASK 15495 127.0.0.1:7002", 2, {}},
        {"after MOVED", {set_a, wait_a}, "MOVED 15495 127.0.0.1:7002", 2, {}},
        {"into the wait after TRYAGAIN", {set_a, wait_a}, "TRYAGAIN slot migrating", 2, {}},
        {"with a health check between", {set_a, {{"PING"}}, wait_a}, "ASK 15495 127.0.0.1:7002", 3, {}},
        {"only the first WAIT", {set_a, wait_a, wait_a}, "ASK 15495 :7002", 2, {"3 connection_lost"}},
        {"not a keyless WAIT", {set_a, wait_any}, "ASK 15495 :7002", 0, {"2 connection_lost"}},
        {"not a WAIT of another slot", {set_a, wait_b}, "ASK 15495 :7002", 0, {"2 R"}},
        {"not after a command of another slot",
         {set_a, set_b, wait_a},
         "ASK 15495 :7002",
         0,
         {"2 R", "3 connection_lost"}},
        {"not after another command of its slot",
         {set_a, get_a, wait_a},
         "ASK 15495 :7002",
         0,
         {"2 R", "3 connection_lost"}},
    };
    for (const row& r : rows)
    {
        BOOST_TEST_CONTEXT(r.what)
        {
            std::vector<std::string> log;
            request_pipeline pipeline;
            pipeline.follow_redirects(true);
            pipeline.start_session({});
            std::uint64_t id = 0;
            for (const command& c : r.commands)
            {
                ++id;
                if (c.args[0] == "PING") // a health check
                {
                    pipeline.take_commands();
                    pipeline.health_check();
                    continue;
                }
                auto* op = new recorded_op(id, {}, log);
                op->command() = formatted_command::format_for_pipeline(c.args);
                if (c.wait_for)
                    op->command().route_to(redis::detail::key_slot(c.wait_for));
                op->command().confirm(c.confirms);
                pipeline.add(command_op_ptr(op));
            }
            pipeline.take_commands();
            BOOST_TEST((pipeline.on_reply(error_reply(r.redirection)) == reply_answer::redirected));
            const redirect handed = pipeline.take_redirect();
            BOOST_TEST(handed.op->id() == 1u);
            BOOST_TEST((handed.wait ? handed.wait->id() : 0u) == r.follower);
            for (std::size_t i = 1; i < r.commands.size(); ++i)
                pipeline.on_reply(status("R"));
            BOOST_TEST(log == r.log);
            handed.op->destroy();
            if (handed.wait)
                handed.wait->destroy();
        }
    }
}

// Handed to the node that runs the command, the WAIT is written right after it (after ASKING),
// and its reply there is the confirmation.
BOOST_FIXTURE_TEST_CASE(a_wait_that_follows_is_written_after_its_command_on_the_new_link, fixture)
{
    pipeline.follow_redirects(true);
    pipeline.start_session({});
    add(1, {"SET", "a", "1"});
    auto* wait_a = new recorded_op(2, {"WAIT", "1", "100"}, log);
    wait_a->command().route_to(redis::detail::key_slot("a"));
    pipeline.add(command_op_ptr(wait_a));
    pipeline.take_commands();
    BOOST_TEST((pipeline.on_reply(error_reply("ASK 15495 127.0.0.1:7002")) == reply_answer::redirected));
    const redirect r = pipeline.take_redirect();
    BOOST_TEST((pipeline.on_reply(asio_sync::test::integer_reply(0)) == reply_answer::command)); // dropped
    BOOST_TEST(take_log().empty());

    request_pipeline target;
    target.follow_redirects(true);
    target.start_session({});
    target.add(command_op_ptr(r.op), true);
    target.add(command_op_ptr(r.wait));
    BOOST_TEST(target.take_commands() ==
               bytes({"ASKING"}) + bytes({"SET", "a", "1"}) + bytes({"WAIT", "1", "100"}));
    BOOST_TEST((target.on_reply(status("OK")) == reply_answer::health));
    BOOST_TEST((target.on_reply(status("OK")) == reply_answer::command));
    BOOST_TEST((target.on_reply(status("1 replica")) == reply_answer::command));
    BOOST_TEST(take_log() == (std::vector<std::string>{"1 OK", "2 1 replica"}));
}

// Table rows: a command answered with redirections in turn, each followed (written again on the
// same link, as the driver would on the node named). MOVED and ASK count; TRYAGAIN and
// CLUSTERDOWN make it wait, and it counts from zero again. The one past the limit completes the
// command, and the WAIT that follows it, with too_many_redirections.
BOOST_AUTO_TEST_CASE(moved_and_ask_in_a_row_are_bounded_per_command)
{
    struct row
    {
        std::size_t limit;
        std::vector<const char*> answers;
        std::size_t followed; // redirections handed back before the command completed, if it did
        bool fails;
    };
    const char* moved = "MOVED 15495 127.0.0.1:7002";
    const char* ask = "ASK 15495 127.0.0.1:7002";
    const char* tryagain = "TRYAGAIN slot migrating";
    const char* down = "CLUSTERDOWN The cluster is down";
    const row rows[] = {
        {1, {moved, moved}, 1, true},
        {1, {ask, moved}, 1, true},
        {2, {moved, ask, moved}, 2, true},
        {16, std::vector<const char*>(17, moved), 16, true},
        {1, {tryagain, tryagain, down, tryagain}, 4, false},
        {1, {moved, tryagain, ask, down, moved, tryagain, ask}, 7, false},
        {2, {moved, tryagain, moved, moved, moved}, 4, true},
    };
    for (const row& r : rows)
    {
        BOOST_TEST_CONTEXT("limit " << r.limit << ", " << r.answers.size() << " answers")
        {
            std::vector<std::string> log;
            request_pipeline pipeline;
            pipeline.follow_redirects(true, r.limit);
            pipeline.start_session({});
            pipeline.add(command_op_ptr(new recorded_op(1, {"SET", "a", "1"}, log)));
            auto* wait_a = new recorded_op(2, {"WAIT", "1", "100"}, log);
            wait_a->command().route_to(redis::detail::key_slot("a"));
            pipeline.add(command_op_ptr(wait_a));
            std::size_t followed = 0;
            for (const char* answer : r.answers)
            {
                pipeline.take_commands();
                if (pipeline.on_reply(error_reply(answer)) != reply_answer::redirected)
                    break;
                ++followed;
                const redirect handed = pipeline.take_redirect();
                pipeline.on_reply(status("dropped")); // the WAIT's reply here
                pipeline.add(command_op_ptr(handed.op));
                pipeline.add(command_op_ptr(handed.wait));
            }
            BOOST_TEST(followed == r.followed);
            const std::string failed = "the command met more cluster redirections than the limit";
            BOOST_TEST(log == (r.fails ? std::vector<std::string>{"2 " + failed, "1 " + failed}
                                       : std::vector<std::string>{}));
        }
    }
}

// A durable call and the WAIT that names it, one of them cancelled while they await their replies,
// then the call refused with ASK: each completes exactly once. A cancelled WAIT does not follow
// its call (the call goes on alone, and the WAIT's reply here is dropped); a cancelled call is not
// followed, and its WAIT completes with its own reply here (its confirmation is not awaited any
// more). Cancelled before it was written, the call leaves its WAIT to be written alone.
BOOST_AUTO_TEST_CASE(a_cancelled_durable_call_or_its_wait_completes_once_through_a_redirection)
{
    struct row
    {
        const char* what;
        std::uint64_t cancelled;
        bool written;                 // cancelled once written (else while queued)
        reply_answer first;           // the answer to the first reply (the call's, when written)
        std::uint64_t handed;         // the command handed back; 0: none
        std::vector<std::string> log; // once every reply was read
    };
    const row rows[] = {
        {"the WAIT, written", 2, true, reply_answer::redirected, 1, {"2 aborted"}},
        {"the call, written", 1, true, reply_answer::command, 0, {"1 aborted", "2 R"}},
        {"the call, queued", 1, false, reply_answer::command, 0, {"1 aborted", "2 R"}},
        {"the WAIT, queued", 2, false, reply_answer::redirected, 1, {"2 aborted"}},
    };
    for (const row& r : rows)
    {
        BOOST_TEST_CONTEXT(r.what)
        {
            std::vector<std::string> log;
            request_pipeline pipeline;
            pipeline.follow_redirects(true, 1);
            pipeline.start_session({});
            pipeline.add(command_op_ptr(new recorded_op(1, {"SET", "a", "1"}, log)));
            auto* wait_a = new recorded_op(2, {"WAIT", "1", "100"}, log);
            wait_a->command().route_to(redis::detail::key_slot("a"));
            wait_a->command().confirm(1);
            pipeline.add(command_op_ptr(wait_a));
            if (!r.written)
                pipeline.cancel(r.cancelled, cancellation_type::terminal);
            pipeline.take_commands();
            if (r.written)
                pipeline.cancel(r.cancelled, cancellation_type::partial);
            const bool call_written = r.written || r.cancelled != 1;
            redirect handed;
            if (call_written)
            {
                BOOST_TEST((pipeline.on_reply(error_reply("ASK 15495 127.0.0.1:7002")) == r.first));
                handed = pipeline.take_redirect();
            }
            BOOST_TEST((handed.op ? handed.op->id() : 0u) == r.handed);
            BOOST_TEST(!handed.wait);
            if (r.written || r.cancelled != 2)
                BOOST_TEST((pipeline.on_reply(status("R")) == reply_answer::command)); // the WAIT's
            BOOST_TEST(log == r.log);
            if (handed.op)
                handed.op->destroy();
        }
    }
}

BOOST_AUTO_TEST_CASE(a_node_without_cluster_support_is_recognised)
{
    BOOST_TEST(
        redis::detail::is_cluster_disabled(error_reply("ERR This instance has cluster support disabled")));
    BOOST_TEST(!redis::detail::is_cluster_disabled(error_reply("NOPERM this user has no permissions")));
    BOOST_TEST(!redis::detail::is_cluster_disabled(error_reply("LOADING Redis is loading the dataset")));
    BOOST_TEST(!redis::detail::is_cluster_disabled(status("cluster support disabled")));
    BOOST_TEST(!redis::detail::is_cluster_disabled(asio_sync::test::array_reply({})));
}

BOOST_FIXTURE_TEST_CASE(without_following_a_redirection_is_an_error, fixture)
{
    pipeline.start_session({});
    add(1, {"GET", "a"});
    pipeline.take_commands();
    BOOST_TEST((pipeline.on_reply(error_reply("MOVED 15495 127.0.0.1:7002")) == reply_answer::command));
    BOOST_TEST(take_log() == (std::vector<std::string>{"1 server_error MOVED 15495 127.0.0.1:7002"}));
}

BOOST_FIXTURE_TEST_CASE(a_command_sent_after_an_ask_is_written_after_asking, fixture)
{
    pipeline.follow_redirects(true);
    pipeline.start_session({});
    pipeline.add(command_op_ptr(new recorded_op(1, {"GET", "a"}, log)), true);
    BOOST_TEST(pipeline.take_commands() == bytes({"ASKING"}) + bytes({"GET", "a"}));
    BOOST_TEST((pipeline.on_reply(status("OK")) == reply_answer::health));
    BOOST_TEST((pipeline.on_reply(status("A")) == reply_answer::command));
    BOOST_TEST(take_log() == (std::vector<std::string>{"1 A"}));
}

BOOST_FIXTURE_TEST_CASE(queued_commands_of_other_slots_are_taken_back_in_order, fixture)
{
    add(1, {"GET", "a"}); // slot 15495
    add(2, {"GET", "b"}); // slot 3300
    add(3, {"PING"});     // any
    add(4, {"GET", "a"});
    std::vector<std::uint64_t> taken;
    for (command_op_base* op : pipeline.take_queued_unless([](int slot) { return slot != 15495; }))
    {
        taken.push_back(op->id());
        op->destroy();
    }
    BOOST_TEST(taken == (std::vector<std::uint64_t>{1, 4}));
    pipeline.start_session({});
    BOOST_TEST(pipeline.take_commands() == bytes({"GET", "b"}) + bytes({"PING"}));
}

BOOST_FIXTURE_TEST_CASE(the_maps_question_is_answered_in_its_place, fixture)
{
    pipeline.start_session({});
    add(1, {"GET", "a"});
    pipeline.take_commands();
    BOOST_TEST(pipeline.slots_query() == bytes({"CLUSTER", "SLOTS"}));
    BOOST_TEST((pipeline.on_reply(status("A")) == reply_answer::command));
    BOOST_TEST((pipeline.on_reply(asio_sync::test::integer_reply(5)) == reply_answer::slots));
    BOOST_TEST(pipeline.take_slots().integer == 5);
}

BOOST_AUTO_TEST_SUITE_END()
