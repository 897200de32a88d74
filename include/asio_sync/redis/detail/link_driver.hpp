// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_REDIS_DETAIL_LINK_DRIVER_HPP
#define ASIO_SYNC_REDIS_DETAIL_LINK_DRIVER_HPP

#include <asio_sync/redis/connection_options.hpp>
#include <asio_sync/redis/detail/command.hpp>
#include <asio_sync/redis/detail/link_fsm.hpp>
#include <asio_sync/redis/detail/link_setup.hpp>
#include <asio_sync/redis/detail/reply_reader.hpp>
#include <asio_sync/redis/detail/request_pipeline.hpp>
#include <asio_sync/redis/detail/sentinel_query.hpp>
#include <asio_sync/redis/detail/sentinel_resolver.hpp>
#include <asio_sync/redis/error.hpp>
#include <asio_sync/redis/reply.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/generic/stream_protocol.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <boost/system/error_code.hpp>
#include <boost/throw_exception.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace asio_sync::redis::detail {

// The links of a connection, each living its own connect / set up / run / back off sequence
// (link_fsm), and what moves bytes on them: sockets, timers, the reading of replies, the writing
// of requests; with Sentinel, the asking of the sentinels that each connection attempt makes
// (what to ask and what the answers mean: sentinel_resolver), and the watch link, subscribed to a
// sentinel's +switch-master, which sends the other links to the new primary. What the command
// and subscriber links carry, and where the command links go, is its owner's (connection_impl):
// it hears of each reply and each link going up or down through the functions it overrides. All
// its state lives on the strand.
class link_driver : public std::enable_shared_from_this<link_driver>
{
public:
    link_driver(const link_driver&) = delete;
    link_driver& operator=(const link_driver&) = delete;

protected:
    using socket_type = boost::asio::generic::stream_protocol::socket;
    using endpoint_type = boost::asio::generic::stream_protocol::endpoint;
    using action = link_fsm::action;

    static constexpr std::size_t no_node = static_cast<std::size_t>(-1);

    // One connection attempt of a link and, once connected, its socket and its streams. Replaced
    // as a whole on every reconnect, so a handler of an older session recognises that it is
    // stale, and nothing it holds (its buffers, its reader's state) leaks into the next one.
    struct session
    {
        explicit session(const boost::asio::any_io_executor& ex)
            : socket(ex), resolver(ex), connect_timer(ex), sentinel_timer(ex), health_timer(ex)
        {
        }

        socket_type socket;
        boost::asio::ip::tcp::resolver resolver;
        boost::asio::steady_timer connect_timer;
        boost::asio::steady_timer sentinel_timer; // bounds the question to one sentinel
        boost::asio::steady_timer health_timer;
        reply_reader reader;
        std::vector<char> input = std::vector<char>(16 * 1024);
        std::string output;  // bytes waiting to be written
        std::string writing; // bytes of the write in progress
        bool write_in_progress = false;
        bool established = false;           // set up once: the connect listeners have run
        sentinel_resolver::attempt primary; // with Sentinel: how the sentinels were asked
        std::size_t watched = 0;            // the watch link: the sentinel it listens to
    };

    struct link
    {
        link(link_kind k, const boost::asio::any_io_executor& ex, const connection_options& options,
             unsigned seed, std::size_t n = no_node)
            : kind(k), fsm(options, seed), retry_timer(ex), node(n)
        {
        }

        link_kind kind;
        link_fsm fsm;
        std::shared_ptr<session> current;
        boost::asio::steady_timer retry_timer;
        std::size_t node; // a command link's node, in its owner's count
    };

    struct server_address
    {
        std::string host;
        std::uint16_t port;
    };

    // Throws if the options name a unix socket path that is too long, or both sentinels and
    // cluster nodes, or allow no redirection.
    link_driver(const boost::asio::any_io_executor& ex, const connection_options& options)
        : strand_(ex), options_(checked(options)), setup_(options_), resolver_(options_),
          subscriber_link_(link_kind::subscriber, strand_, options_, random_seed()),
          watch_link_(link_kind::watch, strand_, options_, random_seed())
    {
        // A unix socket reaches the one server only: not the nodes of a cluster, nor a primary
        // that the sentinels name (its path is checked all the same).
        if (!options_.unix_socket.empty() && options_.cluster_nodes.empty())
            unix_endpoint_.emplace(boost::asio::local::stream_protocol::endpoint(options_.unix_socket));
        if (!options_.sentinels.empty())
            unix_endpoint_.reset();
    }

    ~link_driver() = default;

    // ---- what the owner decides

    // The requests of a command link (the other links' are the driver's own).
    virtual request_pipeline& command_requests(link& l) noexcept = 0;
    // Where a command link, or the subscriber link, connects (without Sentinel or unix socket).
    virtual server_address address_of(link& l) = 0;
    // The command link or the subscriber link is up.
    virtual void link_up(link& l) = 0;
    // The command link or the subscriber link dropped its session.
    virtual void link_down(link& l) = 0;
    // A command link drops its session, to connect again after its delay.
    virtual void reconnecting(link& l) = 0;
    // A reply on a command link or the subscriber link, or to the watch link's set-up.
    virtual void on_reply(link& l, reply&& r) = 0;
    // With Sentinel, the command link on the primary.
    virtual link& primary_link() noexcept = 0;

    static unsigned random_seed() { return std::random_device()(); }

    static const connection_options& checked(const connection_options& options)
    {
        if (!options.sentinels.empty() && !options.cluster_nodes.empty())
            boost::throw_exception(std::invalid_argument(
                "asio_sync::redis: connection_options name both sentinels and cluster nodes"));
        if (options.max_redirections == 0)
            boost::throw_exception(
                std::invalid_argument("asio_sync::redis: connection_options::max_redirections is 0"));
        return options;
    }

    // A handler of the session `s` of `l`: acts only while `s` is the link's current session.
    template <class Function>
    auto on_session(link& l, const std::shared_ptr<session>& s, Function f)
    {
        return [self = shared_from_this(), &l, s, f = std::move(f)](auto&&... args) {
            if (l.current == s)
                f(*self, std::forward<decltype(args)>(args)...);
        };
    }

    request_pipeline& requests_of(link& l) noexcept
    {
        return l.kind == link_kind::command      ? command_requests(l)
               : l.kind == link_kind::subscriber ? subscriber_setup_
                                                 : watch_setup_;
    }

    // With Sentinel, the server a link reached is not the primary (ROLE or READONLY said so).
    void not_the_primary() noexcept
    {
        if (!options_.sentinels.empty())
            resolver_.on_not_primary();
    }

    // ---- the sequence of a link: carries out what its link_fsm asks for

    void perform(link& l, action a)
    {
        switch (a)
        {
        case action::none:
            return;
        case action::connect:
            return connect(l);
        case action::set_up:
            return set_up(l);
        case action::run:
            return run_link(l);
        case action::check_health:
            write(l, l.kind == link_kind::command ? requests_of(l).health_check()
                                                  : std::string(request_pipeline::ping_bytes));
            return arm_health_check(l);
        case action::reconnect:
            teardown(l, error::connection_lost);
            if (l.kind == link_kind::command)
                reconnecting(l);
            l.retry_timer.expires_after(l.fsm.delay());
            l.retry_timer.async_wait([self = shared_from_this(), &l](boost::system::error_code ec) {
                if (!ec)
                    self->perform(l, l.fsm.on_reconnect_timer());
            });
            return;
        case action::stop:
            l.retry_timer.cancel();
            if (l.current)
                teardown(l, boost::asio::error::operation_aborted);
            return;
        }
    }

    void connect(link& l)
    {
        auto s = std::make_shared<session>(strand_);
        l.current = s;
        s->connect_timer.expires_after(l.fsm.timeout());
        s->connect_timer.async_wait(on_session(l, s, [&l](link_driver& self, boost::system::error_code ec) {
            if (!ec)
                self.perform(l, l.fsm.on_failure());
        }));
        const auto connected =
            on_session(l, s, [&l](link_driver& self, boost::system::error_code ec, auto&&...) {
                self.perform(l, l.fsm.on_connected(!ec));
            });
        if (unix_endpoint_)
            return s->socket.async_connect(*unix_endpoint_, connected);
        if (l.kind == link_kind::watch)
        {
            s->watched = resolver_.next_watched();
            const connection_options::sentinel_address& at = options_.sentinels[s->watched];
            return connect_to(l, s, at.host, at.port, connected);
        }
        if (!options_.sentinels.empty())
        {
            if (!watch_link_.fsm.started())
                perform(watch_link_, watch_link_.fsm.start());
            return sentinel_step(l, s, resolver_.begin(s->primary));
        }
        const server_address to = address_of(l);
        connect_to(l, s, to.host, to.port, connected);
    }

    // Resolves host:port and connects the session's socket to one of its addresses; `connected`
    // hears how it went.
    template <class Handler>
    void connect_to(link& l, const std::shared_ptr<session>& s, const std::string& host, std::uint16_t port,
                    Handler connected)
    {
        s->resolver.async_resolve(
            host, std::to_string(port),
            on_session(l, s,
                       [s, connected](link_driver&, boost::system::error_code resolved,
                                      const boost::asio::ip::tcp::resolver::results_type& results) {
                           if (resolved)
                               return connected(resolved);
                           std::vector<endpoint_type> endpoints;
                           for (const auto& entry : results)
                               endpoints.emplace_back(entry.endpoint());
                           boost::asio::async_connect(
                               s->socket, endpoints,
                               [connected](boost::system::error_code ec, const auto&) { connected(ec); });
                       }));
    }

    // With Sentinel: carries out a step of the attempt to find the primary (see
    // sentinel_resolver), on the session's socket, closed after each sentinel.
    void sentinel_step(link& l, const std::shared_ptr<session>& s, const sentinel_resolver::step& step)
    {
        using kind = sentinel_resolver::step::kind;
        sentinel_resolver::attempt& a = s->primary;
        if (step.what == kind::pending)
            return sentinel_reply(l, s);
        if (step.what == kind::fail)
        {
            if (l.kind == link_kind::command && step.error)
                requests_of(l).fail_queued(step.error, a.refusal);
            return perform(l, l.fsm.on_connected(false));
        }
        boost::system::error_code ignored;
        s->socket.close(ignored);
        s->reader = reply_reader();
        if (step.what == kind::connect)
            return connect_to(l, s, a.primary.host, a.primary.port,
                              on_session(l, s, [&l](link_driver& self, boost::system::error_code ec) {
                                  self.perform(l, l.fsm.on_connected(!ec));
                              }));
        s->sentinel_timer.expires_after(resolver_.ask_timeout(l.fsm.timeout()));
        s->sentinel_timer.async_wait(
            on_session(l, s, [s, tried = a.tried](link_driver&, boost::system::error_code ec) {
                if (ec || !sentinel_resolver::asking(s->primary, tried))
                    return;
                // The step in progress completes with operation_aborted and moves on.
                boost::system::error_code closed;
                s->resolver.cancel();
                s->socket.close(closed);
            }));
        const auto failed = [&l, s](link_driver& self) {
            self.sentinel_step(l, s, self.resolver_.on_failure(s->primary));
        };
        const connection_options::sentinel_address& at = options_.sentinels[step.sentinel];
        connect_to(l, s, at.host, at.port,
                   on_session(l, s, [&l, s, failed](link_driver& self, boost::system::error_code ec) {
                       if (ec)
                           return failed(self);
                       boost::asio::async_write(
                           s->socket, boost::asio::buffer(s->primary.query->request()),
                           self.on_session(l, s,
                                           [&l, s, failed](link_driver& me, boost::system::error_code written,
                                                           std::size_t) {
                                               if (written)
                                                   return failed(me);
                                               me.read_sentinel(l, s);
                                           }));
                   }));
    }

    // Reads the replies of the sentinel being asked.
    void read_sentinel(link& l, const std::shared_ptr<session>& s)
    {
        s->socket.async_read_some(
            boost::asio::buffer(s->input),
            on_session(l, s, [&l, s](link_driver& self, boost::system::error_code ec, std::size_t n) {
                if (ec || !s->reader.feed(s->input.data(), n))
                    return self.sentinel_step(l, s, self.resolver_.on_failure(s->primary));
                self.sentinel_reply(l, s);
            }));
    }

    // Carries out what the sentinel's next reply means, once it is read.
    void sentinel_reply(link& l, const std::shared_ptr<session>& s)
    {
        reply r;
        switch (s->reader.next(r))
        {
        case reply_reader::result::incomplete:
            return read_sentinel(l, s);
        case reply_reader::result::error:
            return sentinel_step(l, s, resolver_.on_failure(s->primary));
        case reply_reader::result::reply:
            return sentinel_step(l, s, resolver_.on_reply(s->primary, r));
        }
    }

    // The session is connected: reads start, and the set-up commands go out first.
    void set_up(link& l)
    {
        const std::shared_ptr<session> s = l.current;
        if (!unix_endpoint_)
        {
            boost::system::error_code ignored;
            s->socket.set_option(boost::asio::ip::tcp::no_delay(true), ignored);
            s->socket.set_option(boost::asio::socket_base::keep_alive(true), ignored);
        }
        read(l, s);
        request_pipeline& requests = requests_of(l);
        const std::string bytes = requests.start_session(setup_.commands(l.kind));
        if (!requests.setting_up())
            return perform(l, l.fsm.on_set_up(true));
        write(l, bytes);
    }

    // The link is up: the watch link subscribes to the sentinel's announcements, the others do
    // what their owner says; the health check starts.
    void run_link(link& l)
    {
        session& s = *l.current;
        s.primary.ran = true;
        s.connect_timer.cancel();
        if (l.kind == link_kind::watch)
            write(l, std::string(formatted_command::format({"SUBSCRIBE", switch_master_channel}).bytes()));
        else
            link_up(l);
        arm_health_check(l);
    }

    void arm_health_check(link& l)
    {
        if (l.fsm.health_interval() == link_fsm::duration::zero())
            return;
        const std::shared_ptr<session> s = l.current;
        s->health_timer.expires_after(l.fsm.health_interval());
        s->health_timer.async_wait(on_session(l, s, [&l](link_driver& self, boost::system::error_code ec) {
            if (!ec)
                self.perform(l, l.fsm.on_health_timer());
        }));
    }

    // Closes the session of `l`; the commands awaiting its replies complete with `ec`.
    void teardown(link& l, boost::system::error_code ec)
    {
        const std::shared_ptr<session> s = std::move(l.current);
        if (!options_.sentinels.empty())
            resolver_.on_end(s->primary);
        boost::system::error_code ignored;
        s->socket.close(ignored);
        s->resolver.cancel();
        s->connect_timer.cancel();
        s->sentinel_timer.cancel();
        s->health_timer.cancel();
        requests_of(l).end_session(ec);
        if (l.kind != link_kind::watch)
            link_down(l);
    }

    // A sentinel announced that the primary moved to `to`: the links that are not there (set up
    // on the old primary, or still looking for one) start again from the sentinel that said so;
    // the commands written on them complete with connection_lost, the queued ones wait.
    void follow_switch(const primary_address& to, std::size_t sentinel)
    {
        resolver_.on_switch(sentinel);
        for (link* l : {&primary_link(), &subscriber_link_})
            if (l->current && sentinel_resolver::elsewhere(l->current->primary, to))
                perform(*l, l->fsm.on_failure());
    }

    // ---- reading and writing

    void read(link& l, const std::shared_ptr<session>& s)
    {
        s->socket.async_read_some(
            boost::asio::buffer(s->input),
            on_session(l, s, [&l, s](link_driver& self, boost::system::error_code ec, std::size_t n) {
                self.received(l, s, ec, n);
            }));
    }

    void received(link& l, const std::shared_ptr<session>& s, boost::system::error_code ec, std::size_t n)
    {
        if (ec || !s->reader.feed(s->input.data(), n))
            return perform(l, l.fsm.on_failure());
        for (;;)
        {
            reply r;
            const reply_reader::result result = s->reader.next(r);
            if (result == reply_reader::result::incomplete)
                break;
            if (result == reply_reader::result::error)
                return perform(l, l.fsm.on_failure());
            dispatch(l, std::move(r));
            if (l.current != s) // the reply ended the session
                return;
        }
        read(l, s);
    }

    void dispatch(link& l, reply&& r)
    {
        l.fsm.on_reply();
        if (r.kind != reply_kind::error)
            l.fsm.on_answer();
        if (l.kind == link_kind::watch && l.fsm.ready())
        {
            if (const std::optional<primary_address> to = switched_primary(r, options_.master_name))
                follow_switch(*to, l.current->watched);
            return;
        }
        on_reply(l, std::move(r));
    }

    void write(link& l, std::string_view bytes)
    {
        if (!l.current || bytes.empty())
            return;
        l.current->output += bytes;
        write_out(l, l.current);
    }

    void write_out(link& l, const std::shared_ptr<session>& s)
    {
        if (s->write_in_progress || s->output.empty())
            return;
        s->writing.clear();
        std::swap(s->output, s->writing);
        s->write_in_progress = true;
        boost::asio::async_write(
            s->socket, boost::asio::buffer(s->writing),
            on_session(l, s, [&l, s](link_driver& self, boost::system::error_code ec, std::size_t) {
                s->write_in_progress = false;
                if (ec)
                    return self.perform(l, l.fsm.on_failure());
                self.write_out(l, s);
            }));
    }

    boost::asio::strand<boost::asio::any_io_executor> strand_;
    connection_options options_;
    link_setup setup_;           // what each session runs first
    sentinel_resolver resolver_; // with Sentinel, where the primary is
    std::optional<endpoint_type> unix_endpoint_;
    link subscriber_link_;
    link watch_link_;
    request_pipeline subscriber_setup_; // the subscriber link's set-up (credentials)
    request_pipeline watch_setup_;      // the watch link's set-up (the sentinels' credentials)
};

} // namespace asio_sync::redis::detail

#endif // ASIO_SYNC_REDIS_DETAIL_LINK_DRIVER_HPP
