// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_TEST_SUPPORT_REDIS_SERVER_HPP
#define ASIO_SYNC_TEST_SUPPORT_REDIS_SERVER_HPP

// A real redis-server (found on PATH) for one test: its own free loopback port and temporary
// directory, started on construction and stopped, with the directory removed, on destruction. The
// server is also killed by the kernel if the thread that started it dies (PR_SET_PDEATHSIG), so a
// crashed test leaves nothing running. It can be stopped, killed, paused and started again on the
// same port and directory, for fault tests.

#include "watchdog.hpp" // not "support/...": the benchmarks include this file too

#include <asio_sync/redis/connection_options.hpp>

#include <hiredis/hiredis.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace asio_sync::test {

class redis_server
{
public:
    struct options
    {
        bool append_only = false;            // AOF on, appendfsync always: a restart keeps every write
        std::string password;                // requirepass, when not empty
        std::vector<std::string> extra_args; // more redis-server options, e.g. {"--maxclients", "64"}
        std::string sentinel_config;         // not empty: a sentinel (--sentinel) with this configuration
    };

    redis_server() : redis_server(options()) {}

    explicit redis_server(options opts) : options_(std::move(opts)), dir_(make_temp_dir())
    {
        // Another process may take the free port before the server binds it: try a few.
        const auto& args = options_.extra_args;
        const bool cluster = std::find(args.begin(), args.end(), "--cluster-enabled") != args.end();
        for (int attempt = 1;; ++attempt)
        {
            port_ = cluster ? free_cluster_port() : free_port();
            try
            {
                start();
                return;
            }
            catch (const std::exception&)
            {
                if (attempt == 5)
                {
                    std::error_code ignored;
                    std::filesystem::remove_all(dir_, ignored);
                    throw;
                }
            }
        }
    }

    redis_server(const redis_server&) = delete;
    redis_server& operator=(const redis_server&) = delete;

    ~redis_server()
    {
        stop();
        std::error_code ignored;
        std::filesystem::remove_all(dir_, ignored);
    }

    const char* host() const noexcept { return "127.0.0.1"; }
    std::uint16_t port() const noexcept { return port_; }
    const std::filesystem::path& dir() const noexcept { return dir_; }
    pid_t pid() const noexcept { return pid_; }
    bool running() const noexcept { return pid_ > 0; }

    // Starts the server (again) on the same port and directory, and waits until it answers PING.
    void start()
    {
        if (running())
            throw std::logic_error("redis_server: already running");
        std::vector<std::string> args{"redis-server"};
        if (!options_.sentinel_config.empty())
        {
            // A sentinel rewrites its configuration file: written once, kept across restarts.
            const std::filesystem::path config = dir_ / "sentinel.conf";
            if (!std::filesystem::exists(config))
                std::ofstream(config) << options_.sentinel_config;
            args.insert(args.end(), {config.string(), "--sentinel"});
        }
        args.insert(args.end(), {"--port", std::to_string(port_), "--bind", "127.0.0.1", "--dir",
                                 dir_.string(), "--logfile", (dir_ / "redis.log").string(), "--daemonize",
                                 "no", "--save", "", "--enable-debug-command", "yes", "--appendonly",
                                 options_.append_only ? "yes" : "no", "--appendfsync", "always"});
        if (!options_.password.empty())
            args.insert(args.end(), {"--requirepass", options_.password});
        args.insert(args.end(), options_.extra_args.begin(), options_.extra_args.end());

        std::vector<char*> argv;
        for (std::string& a : args)
            argv.push_back(a.data());
        argv.push_back(nullptr);

        const pid_t parent = ::getpid();
        const pid_t child = ::fork();
        if (child < 0)
            throw std::runtime_error("redis_server: fork failed");
        if (child == 0)
        {
            ::prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (::getppid() != parent) // the parent died before prctl
                ::_exit(127);
            ::execvp("redis-server", argv.data());
            ::_exit(127);
        }
        pid_ = child;
        wait_until_ready();
    }

    // The redis-server options of the next start(): a test restarts a server with others (a
    // cluster node as a standalone server).
    void set_extra_args(std::vector<std::string> args) { options_.extra_args = std::move(args); }

    // Stops the server as an operator would (SIGTERM: it finishes its AOF writes), and waits.
    void stop() { end(SIGTERM); }

    // Kills the server at once (SIGKILL), as a crash would, and waits.
    void kill() { end(SIGKILL); }

    // Freezes and thaws the server (SIGSTOP / SIGCONT): connections stay open, nothing is answered.
    void pause() const { signal(SIGSTOP); }
    void resume() const { signal(SIGCONT); }

    // The bytes that clients have sent the server and it has not read yet, from the kernel's
    // receive queues of its connections (/proc/net/tcp): while it is paused, a command written to
    // it shows here.
    std::size_t unread_bytes() const
    {
        std::ifstream table("/proc/net/tcp");
        std::string line;
        std::getline(table, line); // the header
        std::size_t unread = 0;
        while (std::getline(table, line))
        {
            std::istringstream fields(line);
            std::string slot, local, remote, state, queues;
            fields >> slot >> local >> remote >> state >> queues;
            const bool listening = state == "0A";
            if (!listening && std::stoul(local.substr(local.find(':') + 1), nullptr, 16) == port_)
                unread += std::stoul(queues.substr(queues.find(':') + 1), nullptr, 16);
        }
        return unread;
    }

    // A reply copied out of hiredis' tree, so that no hiredis object outlives the read.
    struct reply
    {
        enum class kind
        {
            string,
            status,
            error,
            integer,
            nil,
            array,
        };

        kind type = kind::nil;
        std::string text; // string, status and error
        long long integer = 0;
        std::vector<reply> elements;

        // An integer as its decimal form, nil as "(nil)", an array as its elements joined by '\n'.
        std::string to_text() const
        {
            switch (type)
            {
            case kind::integer:
                return std::to_string(integer);
            case kind::nil:
                return "(nil)";
            case kind::array:
            {
                std::string joined;
                for (std::size_t i = 0; i < elements.size(); ++i)
                    joined += (i ? "\n" : "") + elements[i].to_text();
                return joined;
            }
            default:
                return text;
            }
        }
    };

    // One connection to the server, for many commands in order, or for a subscriber reading the
    // messages pushed to it. For test set-up and checks, outside the code under test.
    class client
    {
    public:
        explicit client(const redis_server& server)
            : ctx_(server.connect(std::chrono::seconds(5)), &redisFree)
        {
            if (!ctx_)
                throw std::runtime_error("redis_server: cannot connect for a command");
            // A reply or message that never comes fails the test instead of hanging it.
            redisSetTimeout(ctx_.get(), timeval{10, 0});
        }

        // Sends one command and returns its reply; an error reply is returned, not thrown.
        reply execute(const std::vector<std::string>& args)
        {
            std::vector<const char*> argv;
            std::vector<std::size_t> lengths;
            for (const std::string& a : args)
            {
                argv.push_back(a.data());
                lengths.push_back(a.size());
            }
            return take(
                redisCommandArgv(ctx_.get(), static_cast<int>(argv.size()), argv.data(), lengths.data()));
        }

        // Sends one command and returns its reply as text (reply::to_text); an error reply throws.
        std::string command(const std::vector<std::string>& args)
        {
            reply r = execute(args);
            if (r.type == reply::kind::error)
                throw std::runtime_error("redis_server: " + r.text);
            return r.to_text();
        }

        // The next reply the server pushes, e.g. a message on a subscribed channel.
        reply read()
        {
            void* raw = nullptr;
            if (redisGetReply(ctx_.get(), &raw) != REDIS_OK)
                raw = nullptr;
            return take(raw);
        }

    private:
        reply take(void* raw)
        {
            std::unique_ptr<redisReply, void (*)(void*)> owned(static_cast<redisReply*>(raw),
                                                               &freeReplyObject);
            if (!owned)
                throw std::runtime_error(std::string("redis_server: command failed: ") + ctx_->errstr);
            return copy(*owned);
        }

        static reply copy(const redisReply& from)
        {
            reply to;
            switch (from.type)
            {
            case REDIS_REPLY_STRING:
                to.type = reply::kind::string;
                break;
            case REDIS_REPLY_STATUS:
                to.type = reply::kind::status;
                break;
            case REDIS_REPLY_ERROR:
                to.type = reply::kind::error;
                break;
            case REDIS_REPLY_INTEGER:
                to.type = reply::kind::integer;
                to.integer = from.integer;
                return to;
            case REDIS_REPLY_ARRAY:
                to.type = reply::kind::array;
                for (std::size_t i = 0; i < from.elements; ++i)
                    to.elements.push_back(copy(*from.element[i]));
                return to;
            default:
                return to;
            }
            to.text.assign(from.str, from.len);
            return to;
        }

        std::unique_ptr<redisContext, void (*)(redisContext*)> ctx_;
    };

    // Runs one command on a connection of its own and returns its reply; an error reply is
    // returned, not thrown.
    reply execute(const std::vector<std::string>& args) const { return client(*this).execute(args); }

    // Runs one command on a connection of its own and returns the reply as text (an integer as its
    // decimal form, nil as "(nil)", an array as its elements joined by '\n'). An error reply
    // throws. For test set-up and checks, outside the code under test.
    std::string command(const std::vector<std::string>& args) const { return client(*this).command(args); }

    // The server's log, for a failure message.
    std::string log() const
    {
        std::ifstream in(dir_ / "redis.log");
        return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }

private:
    static std::filesystem::path make_temp_dir()
    {
        std::string pattern = (std::filesystem::temp_directory_path() / "asio_sync_redis_XXXXXX").string();
        if (!::mkdtemp(pattern.data()))
            throw std::runtime_error("redis_server: cannot create a temporary directory");
        return pattern;
    }

    // Binds `port` (0: any) on the loopback interface; the port bound, or 0 when taken.
    static std::uint16_t try_bind(std::uint16_t port)
    {
        const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0)
            throw std::runtime_error("redis_server: socket failed");
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        addr.sin_port = htons(port);
        socklen_t len = sizeof addr;
        const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
                        ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
        ::close(fd);
        return ok ? ntohs(addr.sin_port) : 0;
    }

    // A port the kernel just handed out on the loopback interface, so free an instant ago.
    static std::uint16_t free_port()
    {
        if (const auto port = try_bind(0))
            return port;
        throw std::runtime_error("redis_server: no free port");
    }

    // A cluster node also listens on its port + 10000 (the cluster bus), so its port is at most
    // 55535, which a port from the ephemeral range (up to 60999) often is not: draw until both fit.
    static std::uint16_t free_cluster_port()
    {
        for (int draw = 0; draw < 256; ++draw)
        {
            const auto port = free_port();
            if (port <= 55535 && try_bind(static_cast<std::uint16_t>(port + 10000)) != 0)
                return port;
        }
        throw std::runtime_error("redis_server: no free port with a free cluster bus port");
    }

    redisContext* connect(std::chrono::milliseconds timeout) const
    {
        const auto ms = timeout.count();
        const timeval tv{static_cast<time_t>(ms / 1000), static_cast<suseconds_t>(ms % 1000 * 1000)};
        redisContext* ctx = redisConnectWithTimeout(host(), port_, tv);
        if (ctx && ctx->err)
        {
            redisFree(ctx);
            return nullptr;
        }
        if (ctx && !options_.password.empty())
        {
            auto* auth = static_cast<redisReply*>(redisCommand(ctx, "AUTH %s", options_.password.c_str()));
            const bool ok = auth && auth->type != REDIS_REPLY_ERROR;
            if (auth)
                freeReplyObject(auth);
            if (!ok)
            {
                redisFree(ctx);
                return nullptr;
            }
        }
        return ctx;
    }

    void wait_until_ready()
    {
        const waiting_for waiting("redis-server on port " + std::to_string(port_) + " to answer PING");
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        while (std::chrono::steady_clock::now() < deadline)
        {
            int status = 0;
            if (::waitpid(pid_, &status, WNOHANG) == pid_)
            {
                pid_ = -1;
                throw std::runtime_error("redis_server: redis-server exited at start (is it on PATH?)\n" +
                                         log());
            }
            if (redisContext* ctx = connect(std::chrono::milliseconds(200)))
            {
                auto* pong = static_cast<redisReply*>(redisCommand(ctx, "PING"));
                // Loading an AOF answers -LOADING until done.
                const bool ready = pong && pong->type == REDIS_REPLY_STATUS;
                if (pong)
                    freeReplyObject(pong);
                redisFree(ctx);
                if (ready)
                    return;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        end(SIGKILL);
        throw std::runtime_error("redis_server: not ready after 20 s\n" + log());
    }

    void signal(int sig) const
    {
        if (running())
            ::kill(pid_, sig);
    }

    void end(int sig)
    {
        if (!running())
            return;
        ::kill(pid_, SIGCONT); // a paused server cannot act on SIGTERM
        ::kill(pid_, sig);
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        int status = 0;
        while (::waitpid(pid_, &status, WNOHANG) == 0)
        {
            if (std::chrono::steady_clock::now() > deadline)
            {
                ::kill(pid_, SIGKILL);
                ::waitpid(pid_, &status, 0);
                break;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
        pid_ = -1;
    }

    options options_;
    std::filesystem::path dir_;
    std::uint16_t port_ = 0;
    pid_t pid_ = -1;
};

// Client options for servers that fail over (Sentinel, Cluster): reconnections within 50 ms, a
// dead link found by the health check within 400 ms, a connection attempt bounded by 2 s.
inline redis::connection_options failover_client_options()
{
    using namespace std::chrono_literals;
    redis::connection_options o;
    o.reconnect_delay_min = 1ms;
    o.reconnect_delay_max = 50ms;
    o.health_check_interval = 200ms;
    o.connect_timeout = 2000ms;
    return o;
}

// Polls `ready` every 20 ms until it holds; throws, naming `what`, after 30 s. For a set-up of
// several servers (replication, sentinels, a cluster) to settle, not for a test's verdict.
template <class Predicate>
void wait_for_set_up(const char* what, Predicate ready)
{
    const waiting_for waiting(std::string("the set-up: ") + what);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!ready())
    {
        if (std::chrono::steady_clock::now() > deadline)
            throw std::runtime_error(std::string("timed out waiting for ") + what);
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
}

} // namespace asio_sync::test

#endif // ASIO_SYNC_TEST_SUPPORT_REDIS_SERVER_HPP
