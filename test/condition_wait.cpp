// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

// A condition variable's wait and the mutex it relocks, under the interleaving checker, composed
// as the library composes them. Both engines run on the checker's atomic and mutex: the condition
// variable's event_core, and the mutex's semaphore_core with the one permit basic_mutex gives it.
// Between them run the library's own operations: a wait is a condition_wait_op queued by
// queue_op; its completion (a notification, or a per-operation cancellation through the library's
// acquire_cancellation) starts the relock from the thread that completed it, through
// start_acquire_until with adopt_lock_grant (the mutex's async_scoped_lock), and relock_handler
// moves the relocked lock into the caller's lock object before the caller's handler runs.
// Completions are finished by complete_all, whose record of the waiters a thread is finishing
// each logical thread has its own copy of. Each logical thread has an executor that queues what
// is submitted to it, and runs its handlers itself, as a thread running an io_context would.
//
// What the test writes itself, because the library's version is tied to the engines without the
// checker's types: a wait's initiation (initiate_condition_wait's start: queue_op on the engine,
// then the unlock), notify_one and notify_all (event_impl's: the engine's step, then
// complete_all), and the mutex's unlock and cancel() (basic_semaphore's release and cancel: the
// core's step, then complete_all). Predicate waits are left out: predicate_wait_op calls the
// engine of the condition variable's real state directly.
//
// After every step: the mutex never has more than its one permit, and nobody holds the mutex
// while the permit is in it; a second holder fails at once, and every critical section takes a
// step, so that a second holder would overlap it. At the end: every lock and every wait completed
// exactly once, holding the mutex unless the mutex aborted the relock (then with
// operation_aborted), no completion is left unrun, and the mutex is free with its one permit and
// nobody queued; plus each scenario's own outcome, counted over all its schedules.

#define BOOST_TEST_MODULE condition_wait
#include <boost/test/unit_test.hpp>

#include <asio_sync/detail/acquire_op.hpp>
#include <asio_sync/detail/condition_wait.hpp>
#include <asio_sync/detail/deadline.hpp>
#include <asio_sync/detail/event_core.hpp>
#include <asio_sync/detail/grant.hpp>
#include <asio_sync/detail/semaphore_core.hpp>
#include <asio_sync/detail/semaphore_service.hpp>
#include <asio_sync/detail/start_acquire.hpp>
#include <asio_sync/detail/submit.hpp>
#include <asio_sync/detail/timed_acquire_op.hpp>
#include <asio_sync/detail/waiter_list.hpp>

#include "support/dsched_scripted.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/execution.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/system/error_code.hpp>

#include <algorithm>
#include <cstddef>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace dsched = asio_sync::test::dsched;
namespace detail = asio_sync::detail;
using boost::system::error_code;
using detail::relation;
using detail::waiter_list;
using detail::waiter_outcome;

namespace {

// The handlers submitted to one logical thread's executor, in order.
class handler_queue
{
public:
    template <class Function>
    void push(Function&& f)
    {
        tasks_.push_back(std::make_unique<task<std::decay_t<Function>>>(std::forward<Function>(f)));
        dsched::scheduler::wake(this);
    }

    bool empty() const noexcept { return tasks_.empty(); }

    // Destroys the handlers without running them; returns whether there were any.
    bool discard()
    {
        std::vector<std::unique_ptr<task_base>> doomed;
        doomed.swap(tasks_);
        return !doomed.empty();
    }

    void run_one()
    {
        const std::unique_ptr<task_base> next = std::move(tasks_.front());
        tasks_.erase(tasks_.begin());
        next->run();
    }

private:
    struct task_base
    {
        virtual ~task_base() = default;
        virtual void run() = 0;
    };

    template <class Function>
    struct task final : task_base
    {
        template <class F>
        explicit task(F&& f) : function(std::forward<F>(f))
        {
        }

        void run() override { std::move(function)(); }

        Function function;
    };

    // A few at most: a vector allocates nothing while empty, where a deque would.
    std::vector<std::unique_ptr<task_base>> tasks_;
};

// An executor that queues what it is given for the logical thread that owns `queue`: never
// inline, as the library requires (blocking.never).
class queue_executor
{
public:
    explicit queue_executor(handler_queue& queue) noexcept : queue_(&queue) {}

    static constexpr boost::asio::execution::blocking_t query(boost::asio::execution::blocking_t) noexcept
    {
        return boost::asio::execution::blocking.never;
    }

    queue_executor require(boost::asio::execution::blocking_t::never_t) const noexcept { return *this; }

    template <class Function>
    void execute(Function&& f) const
    {
        queue_->push(std::forward<Function>(f));
    }

    friend bool operator==(const queue_executor& a, const queue_executor& b) noexcept
    {
        return a.queue_ == b.queue_;
    }

private:
    handler_queue* queue_;
};

using checked_event = detail::event_core<dsched::atomic, dsched::mutex>;
using checked_semaphore = detail::semaphore_core<dsched::atomic, dsched::mutex>;

// asio_sync::mutex on the checked engine: what relock_traits calls on it.
class checked_mutex
{
public:
    using lock_type = std::unique_lock<checked_mutex>;

    explicit checked_mutex(const queue_executor& ex) : ex_(ex) {}

    checked_mutex(const checked_mutex&) = delete;
    checked_mutex& operator=(const checked_mutex&) = delete;

    // basic_mutex::async_scoped_lock, through the semaphore's initiation.
    template <class Handler>
    void async_scoped_lock(Handler&& handler)
    {
        detail::start_acquire_until(core_, entry_, std::decay_t<Handler>(std::forward<Handler>(handler)), ex_,
                                    1, detail::adopt_lock_grant<lock_type>{this}, detail::no_deadline());
    }

    // basic_mutex::unlock: the semaphore's release(1).
    void unlock()
    {
        waiter_list done;
        if (!core_.release(1, done))
            throw std::logic_error("the mutex's release overflowed");
        detail::complete_all(done, relation::continuation);
    }

    // basic_mutex::cancel(); the mutex's destruction aborts its waiters the same way.
    std::size_t cancel()
    {
        waiter_list done;
        const std::size_t count = core_.abort_all(waiter_outcome::aborted, false, done);
        detail::complete_all(done);
        return count;
    }

    const checked_semaphore& core() const noexcept { return core_; }

private:
    checked_semaphore core_{1};
    // What the semaphore's initiation reads of its service entry: the names and the observer
    // (none). It is registered with no context.
    detail::service_entry entry_{[](detail::service_entry&, waiter_list&) {}};
    queue_executor ex_;
};

using lock_type = checked_mutex::lock_type;

// What a condition_wait_op names to pass its notification on when its relock cannot start, a
// fault no scenario here injects: the state of a real condition variable, left idle.
const std::shared_ptr<detail::event_impl>& idle_condition_state()
{
    static boost::asio::io_context ctx;
    static const auto state = std::make_shared<detail::event_impl>(ctx, false);
    return state;
}

// A participant: a logical thread with its executor, its lock object (the one a wait refers to)
// and the cancellation signal bound to its waits.
struct actor
{
    handler_queue queue;
    lock_type lock;
    boost::asio::cancellation_signal cancel;
    int locks = 0;         // lock handlers run
    int waits_started = 0; // waits initiated
    int waits = 0;         // wait handlers run
    error_code wait_ec;    // the last wait's
    bool watching = false; // may give up on its wait: looks again whenever a wait completes
};

// How a schedule ended, by the scenario's own account, counted over all the schedules.
using tally = std::map<std::string, std::size_t>;

class composed : public dsched::scripted_scenario<composed>
{
    struct lock_handler
    {
        composed* self;
        std::size_t a;

        void operator()(error_code ec, lock_type lock) const { self->locked(a, ec, std::move(lock)); }
    };

    struct wait_done
    {
        composed* self;
        std::size_t a;

        void operator()(error_code ec) const { self->waited(a, ec); }
    };

    // A wait's handler: it completes on its actor's executor, and its actor's signal cancels it.
    using wait_handler =
        boost::asio::cancellation_slot_binder<boost::asio::executor_binder<wait_done, queue_executor>,
                                              boost::asio::cancellation_slot>;

    queue_executor executor(std::size_t a) { return queue_executor(actors_[a].queue); }

public:
    static constexpr std::size_t nobody = static_cast<std::size_t>(-1);

    using setup_steps = std::function<void(composed&)>;
    // The scenario's own checks at the end; returns the name of the outcome, counted in `tally`.
    using outcome_check = std::function<std::string(composed&)>;

    composed(std::size_t actors, const setup_steps& setup, std::vector<script> scripts,
             const outcome_check& outcome, tally& outcomes)
        : scripted_scenario(std::move(scripts)), mutex_(queue_executor(idle_)), actors_(actors),
          outcome_(outcome), outcomes_(&outcomes)
    {
        if (setup)
            setup(*this);
        setting_up_ = false;
        order_.clear();
    }

    composed(const composed&) = delete;
    composed& operator=(const composed&) = delete;

    ~composed() override
    {
        still_queued();
        // After a failure, completions may be left: destroyed, they unlock what they hold, which
        // may submit more.
        for (bool left = true; left;)
        {
            left = false;
            for (actor& x : actors_)
                left = x.queue.discard() || left;
        }
    }

    // The mutex's async_scoped_lock; returns once the handler has run, holding the lock.
    void lock(std::size_t a)
    {
        actor& x = actors_[a];
        const int before = x.locks;
        mutex_.async_scoped_lock(boost::asio::bind_executor(executor(a), lock_handler{this, a}));
        serve(a, [&] { return x.locks != before; });
    }

    // async_wait(lock, token) as initiate_condition_wait starts it: the wait is queued on the
    // condition variable before the mutex is unlocked.
    void start_wait(std::size_t a)
    {
        using op_type = detail::condition_wait_op<wait_handler, queue_executor, lock_type>;
        actor& x = actors_[a];
        ++x.waits_started;
        wait_handler handler(x.cancel.slot(), boost::asio::bind_executor(executor(a), wait_done{this, a}));
        detail::queue_op(event_,
                         op_type::create(std::move(handler), queue_executor(idle_), x.lock,
                                         idle_condition_state(), detail::no_deadline()),
                         1);
        leave(a);
        detail::relock_traits<lock_type>::unlock(*x.lock.release());
    }

    // Returns once the wait's handler has run.
    void await_wait(std::size_t a)
    {
        actor& x = actors_[a];
        serve(a, [&] { return x.waits == x.waits_started; });
    }

    // The same, but gives up (returns false) once `hopeless()`: the wait can no longer be woken.
    bool await_wait_unless(std::size_t a, const std::function<bool()>& hopeless)
    {
        actor& x = actors_[a];
        x.watching = true;
        serve(a, [&] { return x.waits == x.waits_started || hopeless(); });
        x.watching = false;
        return x.waits == x.waits_started;
    }

    void wait(std::size_t a)
    {
        start_wait(a);
        await_wait(a);
    }

    void unlock(std::size_t a)
    {
        leave(a);
        actors_[a].lock.unlock();
    }

    // event_impl::notify_one and notify_all on the checked engine.
    void notify_one()
    {
        waiter_list done;
        event_.grant_first(done);
        detail::complete_all(done, relation::continuation);
    }

    void notify_all()
    {
        waiter_list done;
        event_.abort_all(waiter_outcome::granted, done);
        detail::complete_all(done, relation::continuation);
    }

    // A per-operation cancellation of a's wait, emitted on a's thread.
    void cancel_wait(std::size_t a) { actors_[a].cancel.emit(boost::asio::cancellation_type::terminal); }

    void cancel_mutex() { mutex_cancels_ += mutex_.cancel(); }

    // The state the waits wait for, guarded by the mutex.
    void make_ready() { ready_ = true; }
    bool ready() const { return ready_; }

    const actor& who(std::size_t a) const { return actors_[a]; }

    // The order in which the actors took the mutex, after the setup.
    const std::vector<std::size_t>& order() const { return order_; }

    std::size_t mutex_cancels() const { return mutex_cancels_; }

    // Takes the waits still queued on the condition variable out and destroys them, as context
    // shutdown does; returns how many there were.
    std::size_t still_queued()
    {
        waiter_list done;
        const std::size_t count = event_.abort_all(waiter_outcome::aborted, done);
        detail::destroy_all(done);
        return count;
    }

    // complete_all's record of the waiters this thread is finishing.
    std::vector<dsched::fiber_local*> fiber_locals() override { return {&finishing_}; }

    void check_step() override
    {
        const std::size_t available = mutex_.core().available();
        if (available > 1)
            fail("the mutex has more than its one permit");
        if (holder_ != nobody && available != 0)
            fail("the mutex has its permit while someone holds it");
    }

    void check_end() override
    {
        for (const actor& x : actors_)
            if (!x.queue.empty())
                fail("a completion was submitted that nobody ran");
        if (!idle_.empty())
            fail("a completion went to an I/O executor");
        if (holder_ != nobody)
            fail("the mutex is held at the end");
        if (mutex_.core().available() != 1 || mutex_.core().waiting() != 0)
            fail("the mutex did not end free, with its one permit and nobody queued");
        const std::string outcome = outcome_(*this);
        if (failure.empty())
            ++(*outcomes_)[outcome];
    }

private:
    // Runs a's handlers until `until()`; blocks while there are none.
    template <class Until>
    void serve(std::size_t a, Until until)
    {
        handler_queue& queue = actors_[a].queue;
        while (!until())
        {
            if (!queue.empty())
                queue.run_one();
            else if (setting_up_)
                throw std::logic_error("the setup would block");
            else
                dsched::scheduler::block_on(&queue);
        }
    }

    // A wait has completed: the threads that would give up on theirs look again.
    void wake_watchers()
    {
        for (actor& x : actors_)
            if (x.watching)
                dsched::scheduler::wake(&x.queue);
    }

    void locked(std::size_t a, error_code ec, lock_type lock)
    {
        actor& x = actors_[a];
        ++x.locks;
        if (ec || !lock.owns_lock())
            fail("a lock failed");
        else
        {
            x.lock = std::move(lock);
            enter(a);
        }
    }

    void waited(std::size_t a, error_code ec)
    {
        actor& x = actors_[a];
        if (++x.waits > x.waits_started)
            fail("a wait completed twice");
        x.wait_ec = ec;
        if (x.lock.owns_lock())
            enter(a);
        else if (ec != boost::asio::error::operation_aborted)
            fail("a wait completed without the lock, and not with operation_aborted");
        wake_watchers();
    }

    // The critical section takes a step, so that a second holder, if one got in, would overlap.
    void enter(std::size_t a)
    {
        if (holder_ != nobody)
            fail("two holders of the mutex at once");
        holder_ = a;
        order_.push_back(a);
        sections_.fetch_add(1);
    }

    void leave(std::size_t a)
    {
        if (holder_ != a)
            fail("the mutex given back by a thread that does not hold it");
        holder_ = nobody;
    }

    handler_queue idle_; // the I/O executors': every handler here has an executor of its own
    checked_event event_{false};
    checked_mutex mutex_;
    std::vector<actor> actors_; // never resized: executors refer to its queues
    outcome_check outcome_;
    tally* outcomes_;
    bool setting_up_ = true;
    bool ready_ = false;
    std::size_t holder_ = nobody;
    std::vector<std::size_t> order_;
    dsched::atomic<int> sections_{0}; // the step each critical section takes
    std::size_t mutex_cancels_ = 0;
    dsched::fiber_local_of<waiter_list*> finishing_{detail::finishing_on_this_thread()};
};

// Explores every interleaving (or, with `sampled`, that many seeded random schedules), checks
// that nothing failed and that every schedule ended with one of the `expected` outcomes, each of
// them reached at least once; logs how many schedules ended with each.
void explore(const char* name, std::size_t actors, const composed::setup_steps& setup,
             std::vector<composed::script> scripts, const composed::outcome_check& outcome,
             std::initializer_list<const char*> expected, std::size_t sampled = 0)
{
    tally outcomes;
    const auto make = [&] { return std::make_unique<composed>(actors, setup, scripts, outcome, outcomes); };
    dsched::exploration e;
    if (sampled == 0)
    {
        e = dsched::explore(make, 20'000'000);
        dsched::report(name, e);
    }
    else
    {
        e = dsched::explore_random(make, sampled, 20261126);
        BOOST_TEST_MESSAGE(name << ": " << e.schedules << " random schedules");
        BOOST_TEST(e.failure.empty(), name << ": " << e.failure);
    }
    if (!e.failure.empty())
        return;
    std::size_t counted = 0;
    for (const auto& [what, count] : outcomes)
    {
        BOOST_TEST_MESSAGE(name << ": " << what << ": " << count);
        counted += count;
    }
    BOOST_TEST(counted == e.schedules);
    BOOST_TEST(outcomes.size() == expected.size(), name << ": an unexpected outcome");
    for (const char* what : expected)
        BOOST_TEST(outcomes[what] != 0, name << ": never " << what);
}

} // namespace

BOOST_AUTO_TEST_SUITE(condition_wait)

// The lost wake-up window, through the real relock: a waiter locks, and waits unless the state is
// ready; a notifier locks, makes the state ready and unlocks, and notifies one before or after
// its unlock. Whichever comes first, the waiter ends holding the mutex, woken once if it waited,
// and takes the mutex after the notifier.
void no_lost_wake_up(const char* name, bool notify_under_the_lock)
{
    explore(name, 2, nullptr,
            {[](composed& s) {
                 s.lock(0);
                 while (!s.ready())
                     s.wait(0);
                 s.unlock(0);
             },
             [notify_under_the_lock](composed& s) {
                 s.lock(1);
                 s.make_ready();
                 if (notify_under_the_lock)
                     s.notify_one();
                 s.unlock(1);
                 if (!notify_under_the_lock)
                     s.notify_one();
             }},
            [](composed& s) -> std::string {
                const actor& w = s.who(0);
                if (w.waits > 1 || w.wait_ec || s.still_queued() != 0)
                    s.fail("the waiter did not end woken once, holding the lock");
                const std::vector<std::size_t> order =
                    w.waits == 0 ? std::vector<std::size_t>{1, 0} : std::vector<std::size_t>{0, 1, 0};
                if (s.order() != order)
                    s.fail("the mutex was taken out of order");
                return w.waits == 0 ? "found the state ready" : "waited and was woken";
            },
            {"found the state ready", "waited and was woken"});
}

BOOST_AUTO_TEST_CASE(no_lost_wake_up_notified_under_the_lock)
{
    no_lost_wake_up("no_lost_wake_up_notified_under_the_lock", true);
}

BOOST_AUTO_TEST_CASE(no_lost_wake_up_notified_after_the_unlock)
{
    no_lost_wake_up("no_lost_wake_up_notified_after_the_unlock", false);
}

// notify_all with `waiters` waits queued (actors 0 to waiters - 1), while the mutex's holder
// (actor `waiters`) unlocks, and the notifier (the holder itself, or actor `waiters` + 1 without
// the lock) starts every relock, oldest first. The waiters take the mutex one at a time in the
// order of their notification, each wait completes once, and the mutex ends free.
void notify_all_vs_unlock(const char* name, std::size_t waiters, bool notifier_holds, std::size_t sampled = 0)
{
    const std::size_t holder = waiters;
    std::vector<composed::script> scripts;
    for (std::size_t i = 0; i < waiters; ++i)
        scripts.push_back([i](composed& s) {
            s.await_wait(i);
            s.unlock(i);
        });
    if (notifier_holds)
        scripts.push_back([holder](composed& s) {
            s.notify_all();
            s.unlock(holder);
        });
    else
    {
        scripts.push_back([holder](composed& s) { s.unlock(holder); });
        scripts.push_back([](composed& s) { s.notify_all(); });
    }
    explore(
        name, waiters + 2,
        [waiters, holder](composed& s) {
            for (std::size_t i = 0; i < waiters; ++i)
            {
                s.lock(i);
                s.start_wait(i);
            }
            s.lock(holder);
        },
        std::move(scripts),
        [waiters](composed& s) -> std::string {
            std::vector<std::size_t> fifo;
            for (std::size_t i = 0; i < waiters; ++i)
            {
                fifo.push_back(i);
                if (s.who(i).waits != 1 || s.who(i).wait_ec)
                    s.fail("a notified wait did not complete once, successfully");
            }
            if (s.order() != fifo)
                s.fail("the waiters did not take the mutex oldest first, the order notify_all woke them in");
            return "in order";
        },
        {"in order"}, sampled);
}

BOOST_AUTO_TEST_CASE(notify_all_two_waiters_vs_a_holder_unlocking)
{
    notify_all_vs_unlock("notify_all_two_waiters_vs_a_holder_unlocking", 2, false);
}

BOOST_AUTO_TEST_CASE(notify_all_three_waiters_under_the_lock)
{
    notify_all_vs_unlock("notify_all_three_waiters_under_the_lock", 3, true);
}

// Three waiters and a holder apart from the notifier: too many interleavings to enumerate.
BOOST_AUTO_TEST_CASE(notify_all_three_waiters_vs_a_holder_unlocking_sampled)
{
    notify_all_vs_unlock("notify_all_three_waiters_vs_a_holder_unlocking_sampled", 3, false, 200'000);
}

// A per-operation cancellation of the oldest wait (actor 0, emitted on its thread) racing the
// notify_one of actor 2, with a second wait (actor 1) behind it. Exactly one outcome: the first
// wait is woken (successfully) and the second stays queued, or the first is cancelled
// (operation_aborted) and the notification wakes the second. Either way the first relocks once
// and completes holding the lock.
void cancellation_vs_notify_one(const char* name, bool notifier_holds)
{
    explore(
        name, 3,
        [notifier_holds](composed& s) {
            for (std::size_t i = 0; i < 2; ++i)
            {
                s.lock(i);
                s.start_wait(i);
            }
            if (notifier_holds)
                s.lock(2);
        },
        {[](composed& s) {
             s.cancel_wait(0);
             s.await_wait(0);
             s.unlock(0);
         },
         [](composed& s) {
             // Once the first wait took the notification, nothing can wake this one.
             const actor& first = s.who(0);
             if (s.await_wait_unless(1, [&] { return first.waits == 1 && !first.wait_ec; }))
                 s.unlock(1);
         },
         [notifier_holds](composed& s) {
             if (!notifier_holds)
                 s.lock(2);
             s.notify_one();
             s.unlock(2);
         }},
        [](composed& s) -> std::string {
            const actor& first = s.who(0);
            const actor& second = s.who(1);
            const std::size_t queued = s.still_queued();
            if (first.waits != 1 || std::count(s.order().begin(), s.order().end(), 0) != 1)
                s.fail("the cancelled wait did not complete once, holding the lock");
            else if (!first.wait_ec)
            {
                if (second.waits != 0 || queued != 1)
                    s.fail("the notification woke both waits");
                return "notified";
            }
            else if (first.wait_ec != boost::asio::error::operation_aborted)
                s.fail("the cancelled wait completed with another error");
            else if (second.waits != 1 || second.wait_ec || queued != 0)
                s.fail("the notification was lost on the cancelled wait");
            return "cancelled";
        },
        {"notified", "cancelled"});
}

BOOST_AUTO_TEST_CASE(cancellation_vs_notify_one_under_the_lock)
{
    cancellation_vs_notify_one("cancellation_vs_notify_one_under_the_lock", true);
}

BOOST_AUTO_TEST_CASE(cancellation_vs_notify_one_and_its_lock)
{
    cancellation_vs_notify_one("cancellation_vs_notify_one_and_its_lock", false);
}

// A notified wait (actor 0) whose relock the mutex's cancel() (actor 3) races, while the mutex's
// holder (actor 1) unlocks and actor 2 notifies. The wait completes once: relocked,
// successfully, or with its relock aborted, with operation_aborted and without the lock, exactly
// when cancel() counted it. No permit is lost either way.
BOOST_AUTO_TEST_CASE(mutex_cancel_vs_the_relock)
{
    explore(
        "mutex_cancel_vs_the_relock", 4,
        [](composed& s) {
            s.lock(0);
            s.start_wait(0);
            s.lock(1);
        },
        {[](composed& s) {
             s.await_wait(0);
             if (s.who(0).lock.owns_lock())
                 s.unlock(0);
         },
         [](composed& s) { s.unlock(1); }, [](composed& s) { s.notify_one(); },
         [](composed& s) { s.cancel_mutex(); }},
        [](composed& s) -> std::string {
            const actor& w = s.who(0);
            if (w.waits != 1)
                s.fail("the notified wait did not complete once");
            else if (!w.wait_ec && s.mutex_cancels() == 0 && s.order() == std::vector<std::size_t>{0})
                return "relocked";
            else if (w.wait_ec == boost::asio::error::operation_aborted && s.mutex_cancels() == 1 &&
                     s.order().empty())
                return "relock aborted";
            s.fail("the wait's outcome disagrees with what cancel() counted");
            return {};
        },
        {"relocked", "relock aborted"});
}

BOOST_AUTO_TEST_SUITE_END()
