// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_TEST_SUPPORT_SCRIPTED_WAITER_HPP
#define ASIO_SYNC_TEST_SUPPORT_SCRIPTED_WAITER_HPP

// What the interleaving checks of the broadcast engines (test/event_core.cpp, test/gate_count.cpp)
// share: a waiter that records what became of it.

#include <asio_sync/detail/waiter_list.hpp>

#include "support/dsched_scripted.hpp"

namespace asio_sync::test {

struct scripted_waiter : detail::semaphore_waiter
{
    detail::semaphore_waiter* handle = nullptr; // what the cancellation handler holds
    int completions = 0;
    detail::waiter_outcome result = detail::waiter_outcome::pending;

    // What start_acquire does before queueing: the cancellation handler names the waiter.
    void arm() noexcept
    {
        handle = this;
        cancel_ref = &handle;
    }

    void complete(detail::waiter_outcome why) noexcept
    {
        ++completions;
        result = why;
    }
};

// What start_acquire does: the lock-free attempt, then the queue. Returns the outcome decided at
// once, or pending if the waiter was queued.
template <class Engine>
detail::waiter_outcome start_wait(Engine& engine, scripted_waiter& x)
{
    x.arm();
    if (engine.try_acquire(1, false))
        return detail::waiter_outcome::granted;
    return engine.enqueue(x, 1);
}

// Runs `step`, which finishes waiters into a list, then hands each of them to `complete`, oldest
// first, as complete_all does once the engine's lock is released.
template <class Step, class Complete>
void finish(Step step, Complete complete)
{
    detail::waiter_list done;
    step(done);
    while (detail::semaphore_waiter* x = done.pop_front())
        complete(static_cast<scripted_waiter&>(*x), x->outcome);
}

// What timed_acquire_op::expire does to `x`: the timer holds a pointer to its own operation, which
// nobody clears, so only the engine's check under its lock tells a grant that came first. The
// waiter, if it leaves, goes to `complete` as finish() hands it.
template <class Engine, class Complete>
void time_out(Engine& engine, scripted_waiter& x, Complete complete)
{
    if (!x.queued.load())
        return;
    detail::semaphore_waiter* self = &x;
    finish([&](detail::waiter_list& done) { engine.cancel(&self, detail::waiter_outcome::timed_out, done); },
           complete);
}

} // namespace asio_sync::test

#endif // ASIO_SYNC_TEST_SUPPORT_SCRIPTED_WAITER_HPP
