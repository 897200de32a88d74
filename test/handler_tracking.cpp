// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

// Built with BOOST_ASIO_ENABLE_HANDLER_TRACKING (test/CMakeLists.txt, test/Jamfile): the waits of
// the family write Asio's handler tracking records, which Asio writes to standard error. Each
// check captures them, then reads back the records of one wait: its creation under the primitive's
// name and address with the handler that started it as parent, its completion with the error
// code, and the posted completion of the caller's handler as its child.

#define BOOST_TEST_MODULE handler_tracking
#include <boost/test/unit_test.hpp>

#if !defined(BOOST_ASIO_ENABLE_HANDLER_TRACKING)
#error "this test needs BOOST_ASIO_ENABLE_HANDLER_TRACKING"
#endif

#include <asio_sync/manual_reset_event.hpp>
#include <asio_sync/mutex.hpp>
#include <asio_sync/semaphore.hpp>

#include "support/io_steps.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/system/error_code.hpp>

#include <chrono>
#include <cstdio>
#include <optional>
#include <regex>
#include <string>
#include <unistd.h>
#include <vector>

namespace asio = boost::asio;
using asio_sync::test::poll;
using boost::system::error_code;

namespace {

// Sends what is written to file descriptor 2 to a temporary file while it lives.
class stderr_capture
{
public:
    stderr_capture() : file_(std::tmpfile()), saved_(::dup(2))
    {
        BOOST_TEST_REQUIRE(file_ != nullptr);
        BOOST_TEST_REQUIRE(saved_ >= 0);
        BOOST_TEST_REQUIRE(::dup2(::fileno(file_), 2) >= 0);
    }

    stderr_capture(const stderr_capture&) = delete;
    stderr_capture& operator=(const stderr_capture&) = delete;

    ~stderr_capture()
    {
        restore();
        std::fclose(file_);
    }

    // Stops capturing and returns every line written meanwhile.
    std::vector<std::string> lines()
    {
        restore();
        std::rewind(file_);
        std::vector<std::string> result;
        char buffer[1024];
        while (std::fgets(buffer, sizeof buffer, file_))
        {
            std::string line(buffer);
            if (!line.empty() && line.back() == '\n')
                line.pop_back();
            result.push_back(line);
        }
        return result;
    }

private:
    void restore()
    {
        if (saved_ >= 0)
        {
            ::dup2(saved_, 2);
            ::close(saved_);
            saved_ = -1;
        }
    }

    std::FILE* file_;
    int saved_;
};

std::string address(const void* p)
{
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%p", p);
    return buffer;
}

// The records of one tracked wait, found by the name its creation record carries.
struct wait_records
{
    std::string parent;
    std::string id;
    std::string completed;             // the completion record: ">id|ec=category:value"
    std::vector<std::string> children; // creation records of the handlers it started
    bool ended = false;                // its "<id|" record
    bool destroyed = false;            // its "~id|" record
};

// Finds the first creation record `<object>@<address>.<operation>` and what follows for its id.
std::optional<wait_records> find_wait(const std::vector<std::string>& lines, const std::string& name)
{
    const std::regex creation(R"(@asio\|[0-9.]+\|([0-9]+)\*([0-9]+)\|(.*))");
    std::optional<wait_records> found;
    for (const std::string& line : lines)
    {
        std::smatch m;
        if (std::regex_match(line, m, creation))
        {
            if (!found && m[3] == name)
                found = wait_records{m[1], m[2], {}, {}, false, false};
            else if (found && m[1] == found->id)
                found->children.push_back(m[3]);
            continue;
        }
        if (!found)
            continue;
        const auto record = line.substr(line.find('|', 6) + 1); // after "@asio|<time>|"
        if (record.rfind(">" + found->id + "|", 0) == 0)
            found->completed = record;
        else if (record == "<" + found->id + "|")
            found->ended = true;
        else if (record == "~" + found->id + "|")
            found->destroyed = true;
    }
    return found;
}

} // namespace

BOOST_AUTO_TEST_SUITE(handler_tracking)

// A lock that queues behind the holder, then is granted by an unlock: created by the handler that
// started it, completed with success inside the unlocking handler, and the parent of the posted
// completion that runs the caller's handler.
BOOST_AUTO_TEST_CASE(a_queued_wait_is_tracked_under_its_primitive)
{
    stderr_capture capture;
    asio::io_context io;
    asio_sync::mutex m(io);
    BOOST_TEST_REQUIRE(m.try_lock());
    int granted = 0;
    asio::post(io, [&] { m.async_lock([&](error_code ec) { granted += !ec; }); });
    poll(io);
    asio::post(io, [&] { m.unlock(); });
    poll(io);
    m.unlock();
    const auto lines = capture.lines();
    BOOST_TEST(granted == 1);

    const auto wait = find_wait(lines, "mutex@" + address(&m) + ".async_lock");
    BOOST_TEST_REQUIRE(wait.has_value(), "no creation record of the lock among " << lines.size() << " lines");
    BOOST_TEST(wait->parent != "0"); // started from a handler
    BOOST_TEST(wait->completed == ">" + wait->id + "|ec=system:0");
    BOOST_TEST(wait->ended);
    BOOST_TEST_REQUIRE(wait->children.size() == 1u);
    BOOST_TEST(wait->children[0].find(".execute") != std::string::npos); // the posted completion
}

// A wait cancelled through its slot completes with operation_aborted; one that times out with
// timed_out; one destroyed at context shutdown is recorded as destroyed without being invoked.
BOOST_AUTO_TEST_CASE(cancelled_timed_out_and_destroyed_waits)
{
    stderr_capture capture;
    std::optional<asio::io_context> io(std::in_place);
    asio_sync::semaphore sem(*io, 0);
    asio_sync::manual_reset_event event(*io);
    asio::cancellation_signal signal;
    sem.async_acquire(1, asio::bind_cancellation_slot(signal.slot(), [](error_code) {}));
    signal.emit(asio::cancellation_type::terminal);
    event.async_wait_for(std::chrono::milliseconds(1), [](error_code) {});
    io->restart();
    io->run();
    asio_sync::mutex m(*io);
    BOOST_TEST_REQUIRE(m.try_lock());
    m.async_lock([](error_code) {});
    io.reset(); // shutdown destroys the queued lock
    const auto lines = capture.lines();

    const auto cancelled = find_wait(lines, "semaphore@" + address(&sem) + ".async_acquire");
    BOOST_TEST_REQUIRE(cancelled.has_value());
    BOOST_TEST(cancelled->completed == ">" + cancelled->id + "|ec=system:125"); // ECANCELED
    BOOST_TEST(cancelled->children.size() == 1u);

    const auto timed_out = find_wait(lines, "manual_reset_event@" + address(&event) + ".async_wait");
    BOOST_TEST_REQUIRE(timed_out.has_value());
    BOOST_TEST(timed_out->completed == ">" + timed_out->id + "|ec=asio_sync:" +
                                           std::to_string(static_cast<int>(asio_sync::error::timed_out)));

    const auto destroyed = find_wait(lines, "mutex@" + address(&m) + ".async_lock");
    BOOST_TEST_REQUIRE(destroyed.has_value());
    BOOST_TEST(destroyed->completed.empty());
    BOOST_TEST(destroyed->destroyed);
}

BOOST_AUTO_TEST_SUITE_END()
