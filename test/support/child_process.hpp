// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_TEST_SUPPORT_CHILD_PROCESS_HPP
#define ASIO_SYNC_TEST_SUPPORT_CHILD_PROCESS_HPP

// A child process for the multi-process tests, with a line-based pipe each way: either forked,
// running a function of the test, or the test binary itself run again with arguments that select
// a child role (posix_spawn). Fork only before the test process has any thread: a child of a
// threaded process may inherit locks held by threads it does not have, and ThreadSanitizer kills
// such a child when it starts a thread (an Asio resolver does). Once threads may exist (Asio's
// system executor keeps its threads for the life of the process), spawn. The child builds its own
// io_context and connections. It is killed by the kernel if the test process dies
// (PR_SET_PDEATHSIG; a spawned child calls die_with_parent), and killed and reaped by the
// destructor if still running, so a failing test leaves no process behind.

#include "support/redis_client.hpp"
#include "support/watchdog.hpp"

#include <boost/test/unit_test.hpp>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

extern char** environ;

namespace asio_sync::test {

// For a spawned child: be killed when the test process `parent` dies; false if it already has.
inline bool die_with_parent(pid_t parent)
{
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    return ::getppid() == parent;
}

// One end of the pair of pipes between the test and a child: lines of text each way.
class pipe_link
{
public:
    pipe_link(int read_fd, int write_fd) : read_fd_(read_fd), write_fd_(write_fd) {}

    pipe_link(const pipe_link&) = delete;
    pipe_link& operator=(const pipe_link&) = delete;

    ~pipe_link()
    {
        ::close(read_fd_);
        ::close(write_fd_);
    }

    // Writes `line` and a newline; false if the other side is gone.
    bool send(std::string_view line)
    {
        std::string text(line);
        text += '\n';
        std::string_view rest = text;
        while (!rest.empty())
        {
            const ssize_t written = ::write(write_fd_, rest.data(), rest.size());
            if (written <= 0)
                return false;
            rest.remove_prefix(static_cast<std::size_t>(written));
        }
        return true;
    }

    // The next line, without its newline; empty once the other side has closed its end or after
    // `limit` without one.
    std::string receive(std::chrono::milliseconds limit = redis_wait_limit)
    {
        const auto deadline = std::chrono::steady_clock::now() + limit;
        for (;;)
        {
            if (const auto end = buffer_.find('\n'); end != std::string::npos)
            {
                std::string line = buffer_.substr(0, end);
                buffer_.erase(0, end + 1);
                return line;
            }
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                deadline - std::chrono::steady_clock::now());
            pollfd readable{read_fd_, POLLIN, 0};
            if (left.count() <= 0 || ::poll(&readable, 1, static_cast<int>(left.count())) <= 0)
                return {};
            char chunk[4096];
            const ssize_t got = ::read(read_fd_, chunk, sizeof chunk);
            if (got <= 0)
                return {};
            buffer_.append(chunk, static_cast<std::size_t>(got));
        }
    }

private:
    int read_fd_;
    int write_fd_;
    std::string buffer_;
};

class child_process
{
public:
    // Forks; the child runs `body(pipe_link&)` and exits with the int it returns (100 if it
    // throws), without running the test process' exit handlers.
    template <class Body>
    explicit child_process(Body body)
    {
        int to_child[2];
        int from_child[2];
        BOOST_REQUIRE(::pipe(to_child) == 0);
        BOOST_REQUIRE(::pipe(from_child) == 0);
        // Or the child would write what the test buffered, again.
        std::fflush(nullptr);
        const pid_t parent = ::getpid();
        pid_ = ::fork();
        BOOST_REQUIRE(pid_ >= 0);
        if (pid_ == 0)
        {
            ::prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (::getppid() != parent) // the parent died before prctl
                ::_exit(127);
            ::close(to_child[1]);
            ::close(from_child[0]);
            int code = 100;
            try
            {
                pipe_link link(to_child[0], from_child[1]);
                code = body(link);
            }
            catch (...)
            {
            }
            ::_exit(code);
        }
        ::close(to_child[0]);
        ::close(from_child[1]);
        link_ = std::make_unique<pipe_link>(from_child[0], to_child[1]);
    }

    // Runs this test binary again with `args` (after the program name), its standard input and
    // output connected to the test's link(); the child's end is pipe_link(0, 1). The child's
    // main should call die_with_parent(getppid() at the spawn, passed in `args`).
    explicit child_process(const std::vector<std::string>& args)
    {
        int to_child[2];
        int from_child[2];
        BOOST_REQUIRE(::pipe2(to_child, O_CLOEXEC) == 0);
        BOOST_REQUIRE(::pipe2(from_child, O_CLOEXEC) == 0);
        posix_spawn_file_actions_t actions;
        ::posix_spawn_file_actions_init(&actions);
        ::posix_spawn_file_actions_adddup2(&actions, to_child[0], STDIN_FILENO);
        ::posix_spawn_file_actions_adddup2(&actions, from_child[1], STDOUT_FILENO);
        std::string program = "/proc/self/exe";
        std::vector<std::string> copies(args);
        std::vector<char*> argv{program.data()};
        for (std::string& a : copies)
            argv.push_back(a.data());
        argv.push_back(nullptr);
        const int spawned = ::posix_spawn(&pid_, program.c_str(), &actions, nullptr, argv.data(), environ);
        ::posix_spawn_file_actions_destroy(&actions);
        ::close(to_child[0]);
        ::close(from_child[1]);
        link_ = std::make_unique<pipe_link>(from_child[0], to_child[1]);
        if (spawned != 0)
            pid_ = -1;
        BOOST_REQUIRE_MESSAGE(spawned == 0, "posix_spawn failed");
    }

    child_process(const child_process&) = delete;
    child_process& operator=(const child_process&) = delete;

    ~child_process() { kill(); }

    pid_t pid() const noexcept { return pid_; }

    pipe_link& link() noexcept { return *link_; }

    void signal(int sig) const
    {
        if (pid_ > 0)
            ::kill(pid_, sig);
    }

    // Kills the child with SIGKILL, if it still runs, and reaps it.
    void kill()
    {
        if (pid_ <= 0)
            return;
        ::kill(pid_, SIGCONT);
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
        pid_ = -1;
    }

    // Waits for the child to exit (killing it after the limit) and returns its exit code, or
    // -1 if a signal ended it.
    int wait()
    {
        const waiting_for waiting("child process " + std::to_string(pid_) + " to exit");
        const auto deadline = std::chrono::steady_clock::now() + redis_wait_limit;
        int status = 0;
        while (::waitpid(pid_, &status, WNOHANG) == 0)
        {
            if (std::chrono::steady_clock::now() > deadline)
            {
                kill();
                BOOST_FAIL("the child process did not exit within the limit");
            }
            ::usleep(2000);
        }
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }

private:
    pid_t pid_ = -1;
    std::unique_ptr<pipe_link> link_;
};

} // namespace asio_sync::test

#endif // ASIO_SYNC_TEST_SUPPORT_CHILD_PROCESS_HPP
