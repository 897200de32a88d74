// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#define BOOST_TEST_MODULE semaphore_reentrancy
#include <asio_sync/mutex.hpp>
#include <asio_sync/semaphore.hpp>
#include <asio_sync/shared_mutex.hpp>

#include <support/handler.hpp>
#include <support/recording_executor.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/system/error_code.hpp>
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

// A completion is never submitted while the semaphore's internal lock, or its context's semaphore
// service's lock, is held: the handler's executor may call back into the semaphore from inside
// execute(). If a completion were submitted under one of those locks, such a call would deadlock
// on it. Each test case has a time limit far beyond what it needs, so that a deadlock fails the
// test (Boost.Test interrupts it and names the last checkpoint, the path) instead of hanging it.

namespace {

namespace asio = boost::asio;
namespace test = asio_sync::test;
using boost::system::error_code;

// Seconds a test case may take before it fails: only a deadlock comes near.
constexpr unsigned limit_seconds = 60;

const error_code success{};
const error_code aborted = asio::error::operation_aborted;
const error_code closed = asio_sync::error::closed;

// Calls back into a semaphore: a lock-free try pair, then forget_permits(0), which takes the
// internal lock whatever the state (and changes nothing).
void call_back_into(asio_sync::semaphore& sem)
{
    if (sem.try_acquire())
        sem.release();
    const std::size_t forgotten = sem.forget_permits(0);
    BOOST_TEST(forgotten == 0u);
}

// Calls back into a mutex or shared mutex: a lock-free try_lock, then cancel(), which takes the
// internal lock and, with nobody else waiting, changes nothing.
template <class Lock>
void call_back_into(Lock& lock)
{
    if (lock.try_lock())
        lock.unlock();
    const std::size_t cancelled = lock.cancel();
    BOOST_TEST(cancelled == 0u);
}

// The scene of one completion path. The handler of interest is bound to an executor whose
// execute(), called where the library submits the completion, calls back into the object that
// completes it and into the context's semaphore service (a semaphore of the same context comes
// and goes), and counts the calls.
class reentry
{
public:
    explicit reentry(const char* path) : path_(path) {}

    asio::io_context io;
    asio::cancellation_signal cancellation; // outlives the handler, which clears its slot
    int call_backs = 0;
    std::shared_ptr<test::outcome> outcome = std::make_shared<test::outcome>();

    auto handler() { return asio::bind_executor(executor_, test::record(outcome)); }

    // Makes the object under test, on `io`: a semaphore, mutex or shared mutex.
    template <class Object, class... Args>
    Object& make(Args... args)
    {
        auto object = std::make_shared<Object>(io, args...);
        call_back_ = [raw = object.get()] { call_back_into(*raw); };
        object_ = object;
        return *object;
    }

    // Destroys the object under test; its destructor may complete the handler of interest.
    void destroy() { object_.reset(); }

private:
    using executor = test::recording_executor<asio::io_context::executor_type>;

    const char* path_;
    std::function<void()> call_back_;
    std::vector<bool> continuations_;
    // The checkpoint is what a deadlock below reports: no assertion comes before the calls.
    const std::function<void()> on_execute_ = [this] {
        BOOST_TEST_CHECKPOINT("calling back from execute(), on the path: " << path_);
        ++call_backs;
        asio_sync::semaphore passing(io, 0);
        call_back_();
    };
    executor executor_{io.get_executor(), continuations_, on_execute_};
    std::shared_ptr<void> object_;
};

using asio_sync::semaphore;

// One way to complete an acquire: `start` completes the handler of interest once, or leaves it to
// run().
struct completion_path
{
    const char* name;
    error_code expected;
    void (*start)(reentry& r);
};

const completion_path paths[] = {
    {"granted at initiation", success, [](reentry& r) { r.make<semaphore>(1).async_acquire(r.handler()); }},
    {"closed at initiation", closed,
     [](reentry& r) {
         auto& sem = r.make<semaphore>(0);
         sem.close();
         sem.async_acquire(r.handler());
     }},
    {"too many permits at initiation", asio_sync::error::too_many_permits,
     [](reentry& r) { r.make<semaphore>(1, 1).async_acquire(2, r.handler()); }},
    {"granted by release", success,
     [](reentry& r) {
         auto& sem = r.make<semaphore>(0);
         sem.async_acquire(r.handler());
         sem.release(1);
     }},
    {"granted by try_release", success,
     [](reentry& r) {
         auto& sem = r.make<semaphore>(0);
         sem.async_acquire(r.handler());
         BOOST_TEST(sem.try_release(1));
     }},
    {"granted by permit::release", success,
     [](reentry& r) {
         auto& sem = r.make<semaphore>(1);
         auto permit = sem.try_acquire_permit();
         sem.async_acquire(r.handler());
         permit->release();
     }},
    {"granted by a permit's destruction", success,
     [](reentry& r) {
         auto& sem = r.make<semaphore>(1);
         auto permit = sem.try_acquire_permit();
         sem.async_acquire(r.handler());
         permit.reset();
     }},
    {"granted by add_permits", success,
     [](reentry& r) {
         auto& sem = r.make<semaphore>(0);
         sem.async_acquire(r.handler());
         sem.add_permits(1);
     }},
    {"granted by add_permits on a bounded semaphore", success,
     [](reentry& r) {
         auto& sem = r.make<semaphore>(0, 1);
         sem.async_acquire(r.handler());
         sem.add_permits(1);
     }},
    {"per-operation cancellation", aborted,
     [](reentry& r) {
         r.make<semaphore>(0).async_acquire(asio::bind_cancellation_slot(r.cancellation.slot(), r.handler()));
         r.cancellation.emit(asio::cancellation_type::terminal);
     }},
    {"cancel()", aborted,
     [](reentry& r) {
         auto& sem = r.make<semaphore>(0);
         sem.async_acquire(r.handler());
         BOOST_TEST(sem.cancel() == 1u);
     }},
    {"close()", closed,
     [](reentry& r) {
         auto& sem = r.make<semaphore>(0);
         sem.async_acquire(r.handler());
         sem.close();
     }},
    {"the semaphore's destruction", aborted,
     [](reentry& r) {
         r.make<semaphore>(0).async_acquire(r.handler());
         r.destroy();
     }},
    {"timeout of async_acquire_for", asio_sync::error::timed_out,
     [](reentry& r) { r.make<semaphore>(0).async_acquire_for(1, std::chrono::nanoseconds(0), r.handler()); }},
    {"too many permits after reduce_permits", asio_sync::error::too_many_permits,
     [](reentry& r) {
         auto& sem = r.make<semaphore>(0, 2);
         sem.async_acquire(2, r.handler());
         sem.reduce_permits(1);
     }},
    {"mutex unlock", success,
     [](reentry& r) {
         auto& mutex = r.make<asio_sync::mutex>();
         BOOST_TEST(mutex.try_lock());
         mutex.async_lock(r.handler());
         mutex.unlock();
     }},
    {"shared_mutex unlock", success,
     [](reentry& r) {
         auto& mutex = r.make<asio_sync::shared_mutex>();
         BOOST_TEST(mutex.try_lock());
         mutex.async_lock_shared(r.handler());
         mutex.unlock();
     }},
};

} // namespace

BOOST_AUTO_TEST_SUITE(semaphore_reentrancy)

BOOST_AUTO_TEST_CASE(every_completion_path_lets_the_executor_call_back_into_the_semaphore,
                     *boost::unit_test::timeout(limit_seconds))
{
    for (const completion_path& path : paths)
    {
        BOOST_TEST_CONTEXT(path.name)
        {
            reentry r(path.name);
            path.start(r);
            r.io.run();
            BOOST_TEST(r.call_backs == 1); // the completion went through the executor, once
            BOOST_TEST(r.outcome->calls == 1);
            BOOST_TEST(r.outcome->ec.has_value());
            if (r.outcome->ec)
                BOOST_TEST(*r.outcome->ec == path.expected);
        }
    }
}

// Context shutdown destroys the queued handlers after the service has let go of its lock, and
// outside the semaphores' locks: a handler's destructor may call back into its semaphore, release
// a permit, make a semaphore of the same context come and go (the service's lock), and destroy its
// own semaphore.
BOOST_AUTO_TEST_CASE(handler_destructors_may_call_back_during_context_shutdown,
                     *boost::unit_test::timeout(limit_seconds))
{
    auto io = std::make_unique<asio::io_context>();
    asio::io_context& ctx = *io;
    asio_sync::semaphore kept(ctx, 0); // outlives the context
    auto doomed = std::make_unique<asio_sync::semaphore>(ctx, 0);
    int destroyed = 0;

    auto call_back = std::make_shared<test::on_destroy>([&] {
        BOOST_TEST_CHECKPOINT("a handler's destructor calls back, at shutdown");
        ++destroyed;
        kept.release(1);
        asio_sync::semaphore passing(ctx, 0);
        call_back_into(kept);
    });
    kept.async_acquire(2, [call_back](error_code) { BOOST_ERROR("invoked at shutdown"); });
    auto destroy = std::make_shared<test::on_destroy>([&] {
        BOOST_TEST_CHECKPOINT("a handler's destructor destroys its semaphore, at shutdown");
        ++destroyed;
        doomed.reset();
    });
    doomed->async_acquire([destroy](error_code) { BOOST_ERROR("invoked at shutdown"); });
    call_back.reset();
    destroy.reset();

    io.reset();
    BOOST_TEST(destroyed == 2);
    BOOST_TEST(!doomed);
    BOOST_TEST(kept.available() == 1u);
    BOOST_TEST(kept.waiting() == 0u);
}

BOOST_AUTO_TEST_SUITE_END()
