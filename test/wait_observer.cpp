// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#define BOOST_TEST_MODULE wait_observer
#include <boost/test/unit_test.hpp>

#include <asio_sync/latch.hpp>
#include <asio_sync/manual_reset_event.hpp>
#include <asio_sync/mutex.hpp>
#include <asio_sync/semaphore.hpp>
#include <asio_sync/shared_mutex.hpp>
#include <asio_sync/upgrade_mutex.hpp>
#include <asio_sync/wait_observer.hpp>

#include "support/handler.hpp"
#include "support/io_steps.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/system/error_code.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

namespace asio = boost::asio;
namespace test = asio_sync::test;
using asio_sync::wait_outcome;
using asio_sync::test::poll;
using boost::system::error_code;
using steady = std::chrono::steady_clock;

namespace {

// Records every report, in order; thread-safe. Throws from each function if asked to, after
// recording.
class recorder final : public asio_sync::wait_observer
{
public:
    struct report
    {
        bool queued; // else finished
        wait_outcome outcome;
        clock::duration waited;
    };

    explicit recorder(bool throws = false) : throws_(throws) {}

    void on_queued() override
    {
        add({true, wait_outcome::granted, {}});
        if (throws_)
            throw std::runtime_error("on_queued");
    }

    void on_finished(wait_outcome outcome, clock::duration waited) override
    {
        add({false, outcome, waited});
        if (throws_)
            throw std::runtime_error("on_finished");
    }

    std::vector<report> reports() const
    {
        std::lock_guard lock(mutex_);
        return reports_;
    }

    std::size_t queued() const
    {
        std::size_t n = 0;
        for (const report& r : reports())
            n += r.queued;
        return n;
    }

    std::vector<wait_outcome> finished() const
    {
        std::vector<wait_outcome> outcomes;
        for (const report& r : reports())
            if (!r.queued)
                outcomes.push_back(r.outcome);
        return outcomes;
    }

private:
    void add(report r)
    {
        std::lock_guard lock(mutex_);
        reports_.push_back(r);
    }

    bool throws_;
    mutable std::mutex mutex_;
    std::vector<report> reports_;
};

// One way to wait on each primitive: a wait decided at once, then one that queues behind `block`
// until `grant`. `release` gives back what a successful wait holds.
struct primitive
{
    const char* name;
    std::function<void(asio::io_context&, recorder&, const std::function<void(error_code)>&)> run;
};

template <class Make, class Block, class Wait, class Grant, class Release>
primitive make_primitive(const char* name, Make make, Block block, Wait wait, Grant grant, Release release)
{
    return {name, [=](asio::io_context& io, recorder& r, const std::function<void(error_code)>& handler) {
                auto o = make(io);
                o->set_observer(&r);
                bool immediate = false;
                wait(*o, std::function<void(error_code)>([&](error_code ec) { immediate = !ec; }));
                poll(io);
                BOOST_TEST(immediate);
                release(*o);
                block(*o);
                wait(*o, handler);
                poll(io);
                grant(*o);
                poll(io);
                release(*o);
            }};
}

} // namespace

BOOST_AUTO_TEST_SUITE(wait_observer)

// Each primitive reports the wait that queued, once queued and once granted, and not the one
// decided at once.
BOOST_AUTO_TEST_CASE(every_primitive_reports_its_queued_waits)
{
    const std::vector<primitive> primitives{
        make_primitive(
            "semaphore", [](asio::io_context& io) { return std::make_unique<asio_sync::semaphore>(io, 1); },
            [](auto& s) { BOOST_TEST_REQUIRE(s.try_acquire()); }, [](auto& s, auto h) { s.async_acquire(h); },
            [](auto& s) { s.release(); }, [](auto& s) { s.release(); }),
        make_primitive(
            "mutex", [](asio::io_context& io) { return std::make_unique<asio_sync::mutex>(io); },
            [](auto& m) { BOOST_TEST_REQUIRE(m.try_lock()); }, [](auto& m, auto h) { m.async_lock(h); },
            [](auto& m) { m.unlock(); }, [](auto& m) { m.unlock(); }),
        make_primitive(
            "shared_mutex",
            [](asio::io_context& io) { return std::make_unique<asio_sync::shared_mutex>(io); },
            [](auto& m) { BOOST_TEST_REQUIRE(m.try_lock()); },
            [](auto& m, auto h) { m.async_lock_shared(h); }, [](auto& m) { m.unlock(); },
            [](auto& m) { m.unlock_shared(); }),
        make_primitive(
            "upgrade_mutex",
            [](asio::io_context& io) { return std::make_unique<asio_sync::upgrade_mutex>(io); },
            [](auto& m) { BOOST_TEST_REQUIRE(m.try_lock()); },
            [](auto& m, auto h) { m.async_lock_upgrade(h); }, [](auto& m) { m.unlock(); },
            [](auto& m) { m.unlock_upgrade(); }),
        make_primitive(
            "manual_reset_event",
            [](asio::io_context& io) { return std::make_unique<asio_sync::manual_reset_event>(io, true); },
            [](auto& e) { e.reset(); }, [](auto& e, auto h) { e.async_wait(h); }, [](auto& e) { e.set(); },
            [](auto&) {}),
    };
    for (const primitive& p : primitives)
    {
        BOOST_TEST_CONTEXT(p.name)
        {
            asio::io_context io;
            recorder r;
            int granted = 0;
            p.run(io, r, [&](error_code ec) { granted += !ec; });
            BOOST_TEST(granted == 1);
            BOOST_TEST(r.queued() == 1u);
            BOOST_TEST((r.finished() == std::vector<wait_outcome>{wait_outcome::granted}));
        }
    }

    // The latch: the waits before the last count_down are reported; those after it are not.
    asio::io_context io;
    recorder r;
    asio_sync::latch l(io, 1);
    l.set_observer(&r);
    l.async_wait([](error_code) {});
    l.count_down();
    l.async_wait([](error_code) {});
    poll(io);
    BOOST_TEST(r.queued() == 1u);
    BOOST_TEST((r.finished() == std::vector<wait_outcome>{wait_outcome::granted}));
}

// Every way a wait ends, with its outcome: granted, cancelled (per operation, cancel(),
// destruction, context shutdown), timed out, failed (close).
BOOST_AUTO_TEST_CASE(every_outcome)
{
    recorder r;
    std::optional<asio::io_context> io(std::in_place);
    {
        asio_sync::semaphore sem(*io, 0);
        sem.set_observer(&r);
        asio::cancellation_signal signal;
        sem.async_acquire(1, [](error_code) {});                                              // granted
        sem.async_acquire(1, asio::bind_cancellation_slot(signal.slot(), [](error_code) {})); // cancelled
        sem.release();
        signal.emit(asio::cancellation_type::terminal);
        poll(*io);
        sem.async_acquire_for(1, std::chrono::milliseconds(1), [](error_code) {}); // timed out
        io->restart();
        io->run();
        sem.async_acquire(1, [](error_code) {}); // cancel()
        sem.cancel();
        sem.async_acquire(1, [](error_code) {}); // close()
        sem.close();
        poll(*io);
    }
    {
        asio_sync::mutex m(*io);
        m.set_observer(&r);
        BOOST_TEST_REQUIRE(m.try_lock());
        {
            asio_sync::mutex doomed(*io);
            doomed.set_observer(&r);
            BOOST_TEST_REQUIRE(doomed.try_lock());
            doomed.async_lock([](error_code) {}); // destroyed
        }
        poll(*io);
        m.async_lock([](error_code) { BOOST_ERROR("invoked after shutdown"); }); // shutdown
        io.reset();
    }
    const std::vector<wait_outcome> expected{
        wait_outcome::granted, wait_outcome::cancelled, wait_outcome::timed_out, wait_outcome::cancelled,
        wait_outcome::failed,  wait_outcome::cancelled, wait_outcome::cancelled};
    BOOST_TEST(r.finished() == expected);
    BOOST_TEST(r.queued() == expected.size());
}

// The wait time runs from the queueing to the end, on the steady clock: it is at least the time
// from the call's return to the grant, and at most the time from the call to the report.
BOOST_AUTO_TEST_CASE(the_wait_time_spans_the_queue)
{
    asio::io_context io;
    recorder r;
    asio_sync::mutex m(io);
    m.set_observer(&r);
    BOOST_TEST_REQUIRE(m.try_lock());
    const auto before_call = steady::now();
    m.async_lock([](error_code) {});
    const auto after_call = steady::now();
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    const auto before_grant = steady::now();
    m.unlock();
    const auto after_report = steady::now();
    const auto reports = r.reports();
    BOOST_TEST_REQUIRE(reports.size() == 2u);
    BOOST_TEST(!reports[1].queued);
    BOOST_TEST((reports[1].waited >= before_grant - after_call));
    BOOST_TEST((reports[1].waited <= after_report - before_call));
    poll(io);
    m.unlock();
}

// An observer that throws from both functions: the exceptions are dropped, the waits complete as
// without an observer, and every report is still made.
BOOST_AUTO_TEST_CASE(an_observer_that_throws_changes_nothing)
{
    asio::io_context io;
    recorder r(true);
    asio_sync::semaphore sem(io, 0);
    sem.set_observer(&r);
    auto [out, handler] = test::make_record();
    auto [timed, timed_handler] = test::make_record();
    BOOST_CHECK_NO_THROW(sem.async_acquire(1, handler));
    BOOST_CHECK_NO_THROW(sem.release()); // reports the grant, which throws
    BOOST_CHECK_NO_THROW(sem.async_acquire_for(1, std::chrono::milliseconds(1), timed_handler));
    io.run();
    BOOST_TEST(out->calls == 1);
    BOOST_TEST(!*out->ec);
    BOOST_TEST(timed->calls == 1);
    BOOST_TEST(*timed->ec == asio_sync::error::timed_out);
    BOOST_TEST((r.finished() == std::vector<wait_outcome>{wait_outcome::granted, wait_outcome::timed_out}));
    BOOST_TEST(r.queued() == 2u);
    BOOST_TEST(sem.available() == 0u);
    BOOST_TEST(sem.waiting() == 0u);
}

BOOST_AUTO_TEST_CASE(a_detached_observer_hears_nothing_more)
{
    asio::io_context io;
    recorder r;
    asio_sync::semaphore sem(io, 0);
    sem.set_observer(&r);
    sem.async_acquire(1, [](error_code) {});
    sem.set_observer(nullptr);
    sem.async_acquire(1, [](error_code) {}); // not observed
    sem.release(2);
    poll(io);
    BOOST_TEST(r.queued() == 1u);
    BOOST_TEST(r.finished().size() == 1u); // the first wait was observed from start to end
}

// Locks queued and granted on a thread pool: every queued report has its finished one, counted
// exactly.
BOOST_AUTO_TEST_CASE(reports_from_a_thread_pool_add_up)
{
    constexpr int tasks = 8;
    constexpr int rounds = 300;
    asio::thread_pool pool(2);
    recorder r;
    asio_sync::mutex m(pool);
    m.set_observer(&r);
    std::atomic<int> left{tasks};
    std::promise<void> done;
    std::vector<std::unique_ptr<std::function<void(int)>>> loops;
    for (int t = 0; t < tasks; ++t)
    {
        loops.push_back(std::make_unique<std::function<void(int)>>());
        auto* loop = loops.back().get();
        *loop = [&, loop](int round) {
            if (round == rounds)
            {
                if (left.fetch_sub(1) == 1)
                    done.set_value();
                return;
            }
            m.async_lock([&, loop, round](error_code) {
                m.unlock();
                (*loop)(round + 1);
            });
        };
        asio::post(pool, [loop] { (*loop)(0); });
    }
    BOOST_TEST_REQUIRE((done.get_future().wait_for(std::chrono::seconds(60)) == std::future_status::ready));
    pool.join();
    const auto finished = r.finished();
    BOOST_TEST(finished.size() == r.queued());
    for (const wait_outcome outcome : finished)
        BOOST_TEST((outcome == wait_outcome::granted));
    BOOST_TEST_MESSAGE(finished.size() << " of " << tasks * rounds << " locks queued");
}

BOOST_AUTO_TEST_SUITE_END()
