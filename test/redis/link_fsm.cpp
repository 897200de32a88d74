// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#define BOOST_TEST_MODULE redis_link_fsm

// The life of a link without I/O: connect, set up, run with a health check, and reconnect after a
// delay that doubles with each failed attempt and starts again once the server answers; a dead
// link found by its health check; events that come in the wrong state; close.

#include <asio_sync/redis/detail/link_fsm.hpp>

#include <boost/test/unit_test.hpp>

#include <chrono>

BOOST_AUTO_TEST_SUITE(redis_link_fsm)

namespace {

namespace redis = asio_sync::redis;
using redis::detail::link_fsm;
using action = link_fsm::action;
using state = link_fsm::state;
using namespace std::chrono_literals;

redis::connection_options options()
{
    redis::connection_options o;
    o.reconnect_delay_min = 10ms;
    o.reconnect_delay_max = 50ms;
    o.reconnect_jitter = 0;
    o.health_check_interval = 100ms;
    return o;
}

// A link run up to ready.
link_fsm ready_link(const redis::connection_options& o = options())
{
    link_fsm fsm(o, 1);
    BOOST_TEST((fsm.start() == action::connect));
    BOOST_TEST((fsm.on_connected(true) == action::set_up));
    BOOST_TEST((fsm.on_set_up(true) == action::run));
    return fsm;
}

} // namespace

BOOST_AUTO_TEST_CASE(connects_sets_up_and_runs)
{
    link_fsm fsm(options(), 1);
    BOOST_TEST(!fsm.started());
    BOOST_TEST((fsm.start() == action::connect));
    BOOST_TEST((fsm.current() == state::connecting));
    BOOST_TEST((fsm.timeout() == redis::connection_options().connect_timeout));
    BOOST_TEST((fsm.start() == action::none)); // once
    BOOST_TEST((fsm.on_connected(true) == action::set_up));
    BOOST_TEST((fsm.current() == state::setting_up));
    BOOST_TEST((fsm.on_set_up(true) == action::run));
    BOOST_TEST(fsm.ready());
    BOOST_TEST((fsm.health_interval() == 100ms));
}

BOOST_AUTO_TEST_CASE(each_failure_reconnects_after_a_delay_that_doubles_up_to_the_maximum)
{
    link_fsm fsm(options(), 1);
    fsm.start();
    const std::chrono::milliseconds expected[] = {10ms, 20ms, 40ms, 50ms, 50ms};
    for (const auto delay : expected)
    {
        BOOST_TEST((fsm.on_connected(false) == action::reconnect)); // refused
        BOOST_TEST((fsm.current() == state::waiting));
        BOOST_TEST((fsm.delay() == delay));
        BOOST_TEST((fsm.on_reconnect_timer() == action::connect));
    }
    // An answer of the server starts the delays again from the shortest.
    BOOST_TEST((fsm.on_connected(true) == action::set_up));
    fsm.on_answer();
    BOOST_TEST((fsm.on_set_up(false) == action::reconnect)); // a refused set-up (AUTH) is a failure
    BOOST_TEST((fsm.delay() == 10ms));
}

BOOST_AUTO_TEST_CASE(jitter_draws_each_delay_below_its_doubled_value)
{
    redis::connection_options o = options();
    o.reconnect_jitter = 0.5;
    link_fsm fsm(o, 7);
    fsm.start();
    fsm.on_connected(false);
    BOOST_TEST((fsm.delay() >= 5ms));
    BOOST_TEST((fsm.delay() <= 10ms));
}

BOOST_AUTO_TEST_CASE(a_failure_at_any_stage_drops_the_session_and_reconnects)
{
    link_fsm fsm(options(), 1);
    fsm.start();
    BOOST_TEST((fsm.on_failure() == action::reconnect)); // the connect timeout
    BOOST_TEST((fsm.on_failure() == action::none));      // already waiting
    fsm.on_reconnect_timer();
    fsm.on_connected(true);
    BOOST_TEST((fsm.on_failure() == action::reconnect)); // a read error while setting up
    link_fsm running = ready_link();
    BOOST_TEST((running.on_failure() == action::reconnect)); // a reply that cannot be parsed
}

BOOST_AUTO_TEST_CASE(a_health_check_unanswered_for_an_interval_means_a_dead_link)
{
    link_fsm fsm = ready_link();
    BOOST_TEST((fsm.on_health_timer() == action::check_health)); // a PING
    fsm.on_reply();
    BOOST_TEST((fsm.on_health_timer() == action::check_health));
    BOOST_TEST((fsm.on_health_timer() == action::reconnect)); // the PING never came back
    BOOST_TEST((fsm.on_health_timer() == action::none));      // not running
    BOOST_TEST((fsm.on_reconnect_timer() == action::connect));
    fsm.on_connected(true);
    fsm.on_set_up(true);
    BOOST_TEST((fsm.on_health_timer() == action::check_health)); // a fresh session owes no PING
}

// A PING held back behind slow commands (pipelined WAITs) is not a dead link while their replies
// come: any reply proves the server answers on the link.
BOOST_AUTO_TEST_CASE(any_reply_proves_the_link_alive)
{
    link_fsm fsm = ready_link();
    BOOST_TEST((fsm.on_health_timer() == action::check_health)); // a PING, behind a WAIT
    fsm.on_reply();                                              // the WAIT's reply
    BOOST_TEST((fsm.on_health_timer() == action::check_health)); // another PING, behind the next WAIT
    fsm.on_reply();
    BOOST_TEST((fsm.on_health_timer() == action::check_health));
    BOOST_TEST((fsm.on_health_timer() == action::reconnect)); // then a whole interval of silence
}

BOOST_AUTO_TEST_CASE(a_set_up_command_added_while_running_sets_the_link_up_again)
{
    link_fsm fsm = ready_link();
    fsm.on_setup_added();
    BOOST_TEST((fsm.current() == state::setting_up));
    BOOST_TEST((fsm.on_set_up(true) == action::run));
    link_fsm waiting(options(), 1);
    waiting.on_setup_added(); // nothing runs: nothing to set up again
    BOOST_TEST((waiting.current() == state::idle));
}

BOOST_AUTO_TEST_CASE(events_in_another_state_do_nothing)
{
    link_fsm fsm(options(), 1);
    BOOST_TEST((fsm.on_connected(true) == action::none));
    BOOST_TEST((fsm.on_set_up(true) == action::none));
    BOOST_TEST((fsm.on_reconnect_timer() == action::none));
    BOOST_TEST((fsm.on_failure() == action::none));
    link_fsm running = ready_link();
    BOOST_TEST((running.on_connected(true) == action::none));
    BOOST_TEST((running.on_reconnect_timer() == action::none));
}

BOOST_AUTO_TEST_CASE(close_stops_the_link_for_good)
{
    link_fsm fsm = ready_link();
    BOOST_TEST((fsm.close() == action::stop));
    BOOST_TEST((fsm.current() == state::closed));
    BOOST_TEST((fsm.close() == action::none));
    BOOST_TEST((fsm.on_failure() == action::none));
    BOOST_TEST((fsm.start() == action::none));
}

// A link no longer needed (a cluster node that left) stops trying while it fails, and can be
// started again; a link that runs is not parked.
BOOST_AUTO_TEST_CASE(a_failing_link_can_be_parked_and_started_again)
{
    link_fsm fsm = ready_link();
    BOOST_TEST((fsm.park() == action::none));
    BOOST_TEST((fsm.on_failure() == action::reconnect));
    BOOST_TEST((fsm.park() == action::stop));
    BOOST_TEST(!fsm.started());
    BOOST_TEST((fsm.on_reconnect_timer() == action::none));
    BOOST_TEST((fsm.start() == action::connect));
}

BOOST_AUTO_TEST_SUITE_END()
