// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#define BOOST_TEST_MODULE redis_link_setup

// The commands each link runs first on every session, without a server: AUTH (with and without a
// user), ROLE with Sentinel, CLUSTER MYID in a cluster (without SELECT), SELECT, the sentinels'
// AUTH on the watch link, and the commands registered with add_setup_command, each once.

#include <asio_sync/redis/detail/link_setup.hpp>

#include <boost/test/unit_test.hpp>

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

BOOST_AUTO_TEST_SUITE(redis_link_setup)

namespace {

namespace redis = asio_sync::redis;
using redis::detail::formatted_command;
using redis::detail::link_kind;
using redis::detail::link_setup;

std::string bytes(std::initializer_list<std::string_view> args)
{
    return std::string(formatted_command::format(args).bytes());
}

std::vector<std::string> commands(const link_setup& setup, link_kind kind)
{
    std::vector<std::string> out;
    for (const redis::detail::setup_command& c : setup.commands(kind))
        out.push_back(c.bytes);
    return out;
}

} // namespace

BOOST_AUTO_TEST_CASE(each_link_runs_its_setup_from_the_options)
{
    const std::string auth = bytes({"AUTH", "pw"});
    const std::string auth_user = bytes({"AUTH", "app", "pw"});
    const std::string role = bytes({"ROLE"});
    const std::string myid = bytes({"CLUSTER", "MYID"});
    const std::string select = bytes({"SELECT", "3"});
    const std::string sentinel_auth = bytes({"AUTH", "spw"});
    struct row
    {
        const char* name;
        redis::connection_options options;
        std::vector<std::string> command, subscriber, watch;
    };
    const auto with = [](auto change) {
        redis::connection_options o;
        change(o);
        return o;
    };
    const row rows[] = {
        {"defaults: nothing", {}, {}, {}, {}},
        {"a password", with([](auto& o) { o.password = "pw"; }), {auth}, {auth}, {}},
        {"a user and a password",
         with([](auto& o) {
             o.user = "app";
             o.password = "pw";
         }),
         {auth_user},
         {auth_user},
         {}},
        {"a database", with([](auto& o) { o.database = 3; }), {select}, {}, {}},
        {"a cluster: no SELECT",
         with([](auto& o) {
             o.cluster_nodes = {{"10.0.0.1", 7000}};
             o.database = 3;
             o.password = "pw";
         }),
         {auth, myid},
         {auth},
         {}},
        {"Sentinel",
         with([](auto& o) {
             o.sentinels = {{"10.0.0.1", 26379}};
             o.password = "pw";
             o.sentinel_password = "spw";
             o.database = 3;
         }),
         {auth, role, select},
         {auth, role},
         {sentinel_auth}},
    };
    for (const row& r : rows)
    {
        BOOST_TEST_CONTEXT(r.name)
        {
            const link_setup setup(r.options);
            BOOST_TEST(commands(setup, link_kind::command) == r.command, boost::test_tools::per_element());
            BOOST_TEST(commands(setup, link_kind::subscriber) == r.subscriber,
                       boost::test_tools::per_element());
            BOOST_TEST(commands(setup, link_kind::watch) == r.watch, boost::test_tools::per_element());
        }
    }
}

BOOST_AUTO_TEST_CASE(the_kinds_of_setup_commands)
{
    redis::connection_options o;
    o.cluster_nodes = {{"10.0.0.1", 7000}};
    o.password = "pw";
    const std::vector<redis::detail::setup_command> setup = link_setup(o).commands(link_kind::command);
    BOOST_TEST_REQUIRE(setup.size() == 2u);
    BOOST_TEST(setup[0].credentials); // refused: auth_failed
    BOOST_TEST(setup[1].cluster_check);
    o = {};
    o.sentinels = {{"10.0.0.1", 26379}};
    BOOST_TEST(link_setup(o).commands(link_kind::subscriber).at(0).primary_check);
}

BOOST_AUTO_TEST_CASE(a_registered_command_runs_once_on_the_command_link_after_the_others)
{
    redis::connection_options o;
    o.database = 3;
    link_setup setup(o);
    BOOST_TEST(setup.add(bytes({"FUNCTION", "LOAD", "x"}), false));
    BOOST_TEST(!setup.add(bytes({"FUNCTION", "LOAD", "x"}), true)); // registered already
    BOOST_TEST(setup.add(bytes({"CLIENT", "SETNAME", "y"}), true));
    BOOST_TEST(setup.last().best_effort);
    BOOST_TEST(commands(setup, link_kind::command) ==
                   (std::vector<std::string>{bytes({"SELECT", "3"}), bytes({"FUNCTION", "LOAD", "x"}),
                                             bytes({"CLIENT", "SETNAME", "y"})}),
               boost::test_tools::per_element());
    BOOST_TEST(commands(setup, link_kind::subscriber).empty());
}

BOOST_AUTO_TEST_SUITE_END()
