// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_TEST_SUPPORT_DSCHED_HPP
#define ASIO_SYNC_TEST_SUPPORT_DSCHED_HPP

// A deterministic scheduler for logical threads, in the manner of folly's DeterministicSchedule:
// the code under test is instantiated with `dsched::atomic` and `dsched::mutex`, whose every
// operation is a scheduling point. Logical threads are ucontext fibers on one OS thread; at each
// point the scheduler decides which fiber performs the next shared-memory operation. `explore`
// enumerates every such sequence of decisions depth-first; `explore_random` samples them.
//
// The interleavings explored are the sequentially consistent ones (every operation is treated as
// seq_cst, a weak CAS never fails spuriously); ThreadSanitizer covers the memory-order side.
//
// Fibers switch with a few instructions of assembly rather than swapcontext, which makes a system
// call per switch: hundreds of thousands of schedules need millions of switches. Include this
// header in one translation unit only (it defines the switch routine).

#if !defined(__x86_64__)
#error "the deterministic scheduler's fiber switch is written for x86-64"
#endif

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

// Saves the callee-saved registers on the current stack, stores the stack pointer in *save,
// switches to the stack `load` and restores the registers saved there.
extern "C" void asio_sync_dsched_switch(void** save, void* load);
asm(R"(
    .text
    .globl asio_sync_dsched_switch
    .type asio_sync_dsched_switch, @function
asio_sync_dsched_switch:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .size asio_sync_dsched_switch, .-asio_sync_dsched_switch
)");

namespace asio_sync::test::dsched {

class scheduler;

namespace detail {
inline scheduler*& active() noexcept
{
    static scheduler* instance = nullptr;
    return instance;
}
} // namespace detail

// A thread-local variable of the code under test, of which each logical thread needs a copy of its
// own, since they all run on one OS thread: the scheduler puts a thread's copy in place while the
// thread runs, and keeps it aside, the OS thread's own value back in place, while it does not.
class fiber_local
{
public:
    virtual ~fiber_local() = default;
    virtual void enter(std::size_t fiber) = 0;
    virtual void leave(std::size_t fiber) = 0;
};

// The copies of `variable`, each value-initialised at first.
template <class T>
class fiber_local_of final : public fiber_local
{
public:
    explicit fiber_local_of(T& variable) : variable_(variable) {}

    void enter(std::size_t fiber) override
    {
        if (copies_.size() <= fiber)
            copies_.resize(fiber + 1);
        outside_ = variable_;
        variable_ = copies_[fiber];
    }

    void leave(std::size_t fiber) override
    {
        copies_[fiber] = variable_;
        variable_ = outside_;
    }

private:
    T& variable_;
    std::vector<T> copies_;
    T outside_{};
};

// One run of a scenario: its logical threads, an invariant checked after every step, and the
// checks made once every thread has finished. A failure is recorded, not thrown.
class scenario
{
public:
    virtual ~scenario() = default;
    virtual std::vector<std::function<void()>> threads() = 0;
    virtual void check_step() {}
    virtual void check_end() {}
    // The thread-local variables each logical thread has its own copy of.
    virtual std::vector<fiber_local*> fiber_locals() { return {}; }

    void fail(const std::string& what)
    {
        if (failure.empty())
            failure = what;
    }

    std::string failure;
};

class scheduler
{
public:
    static constexpr std::size_t none = static_cast<std::size_t>(-1);

    // `decide(options)` picks the index of the next thread among `options` runnable ones.
    scheduler(scenario& sc, std::function<std::size_t(std::size_t)> decide)
        : scenario_(sc), decide_(std::move(decide))
    {
    }

    // Runs every thread of the scenario to completion, one scheduling decision at a time.
    void run()
    {
        auto bodies = scenario_.threads();
        const std::vector<fiber_local*> locals = scenario_.fiber_locals();
        fibers_.resize(bodies.size());
        for (std::size_t i = 0; i < bodies.size(); ++i)
        {
            fiber& f = fibers_[i];
            f.body = std::move(bodies[i]);
            f.sp = initial_stack(i);
        }
        detail::active() = this;
        for (;;)
        {
            const std::size_t next = choose();
            if (next == none)
                break;
            current_ = next;
            for (fiber_local* local : locals)
                local->enter(next);
            asio_sync_dsched_switch(&main_sp_, fibers_[next].sp);
            for (fiber_local* local : locals)
                local->leave(next);
            current_ = none;
            // Also after a thread's last step: checks that compare with the previous step must
            // see every step.
            checking_ = true;
            scenario_.check_step();
            checking_ = false;
        }
        detail::active() = nullptr;
        bool all_finished = true;
        for (const fiber& f : fibers_)
            all_finished = all_finished && f.finished;
        if (!all_finished)
            scenario_.fail("deadlock: no logical thread can run");
        else
        {
            checking_ = true;
            scenario_.check_end();
            checking_ = false;
        }
    }

    std::size_t steps() const noexcept { return steps_; }

    // A scheduling point: called by the instrumented types before each shared-memory operation.
    static void point()
    {
        scheduler* s = detail::active();
        if (!s || s->checking_ || s->current_ == none)
            return;
        ++s->steps_;
        s->yield();
    }

    // The current thread cannot go on until `resource` is released.
    static void block_on(const void* resource)
    {
        scheduler* s = detail::active();
        if (!s || s->current_ == none)
            return;
        s->fibers_[s->current_].blocked_on = resource;
        s->yield();
    }

    static void wake(const void* resource)
    {
        scheduler* s = detail::active();
        if (!s)
            return;
        for (fiber& f : s->fibers_)
            if (f.blocked_on == resource)
                f.blocked_on = nullptr;
    }

    static bool checking()
    {
        scheduler* s = detail::active();
        return s && s->checking_;
    }

private:
    static constexpr std::size_t stack_size = 128 * 1024;

    struct fiber
    {
        std::function<void()> body;
        void* sp = nullptr; // saved stack pointer while switched out
        const void* blocked_on = nullptr;
        bool finished = false;
    };

    // Stacks are reused from run to run: allocating (and clearing) them per schedule would cost
    // more than the schedule itself.
    static char* stack(std::size_t i)
    {
        static std::vector<std::unique_ptr<char[]>> stacks;
        while (stacks.size() <= i)
            stacks.emplace_back(new char[stack_size]);
        return stacks[i].get();
    }

    // A fresh stack whose first switch "returns" into fiber_entry with the ABI's alignment: six
    // zeroed register slots, then fiber_entry's address, then a never-used return address.
    static void* initial_stack(std::size_t i)
    {
        auto top = reinterpret_cast<std::uintptr_t>(stack(i) + stack_size) & ~std::uintptr_t(15);
        auto* frame = reinterpret_cast<void**>(top - 16);
        frame[0] = reinterpret_cast<void*>(&scheduler::fiber_entry);
        frame[1] = nullptr;
        for (int r = 1; r <= 6; ++r)
            frame[-r] = nullptr;
        return frame - 6;
    }

    [[noreturn]] static void fiber_entry()
    {
        scheduler* s = detail::active();
        fiber& f = s->fibers_[s->current_];
        try
        {
            f.body();
        }
        catch (const std::exception& e)
        {
            s->scenario_.fail(std::string("exception in a logical thread: ") + e.what());
        }
        f.finished = true;
        asio_sync_dsched_switch(&f.sp, s->main_sp_);
        __builtin_unreachable();
    }

    void yield() { asio_sync_dsched_switch(&fibers_[current_].sp, main_sp_); }

    bool runnable(const fiber& f) const noexcept { return !f.finished && !f.blocked_on; }

    // Picks among the runnable threads without allocating: this runs before every step.
    std::size_t choose()
    {
        std::size_t count = 0;
        for (const fiber& f : fibers_)
            count += runnable(f);
        if (count == 0)
            return none;
        std::size_t pick = count == 1 ? 0 : decide_(count);
        for (std::size_t i = 0;; ++i)
            if (runnable(fibers_[i]) && pick-- == 0)
                return i;
    }

    scenario& scenario_;
    std::function<std::size_t(std::size_t)> decide_;
    std::vector<fiber> fibers_;
    void* main_sp_ = nullptr;
    std::size_t current_ = none;
    std::size_t steps_ = 0;
    bool checking_ = false;
};

// Drop-in for std::atomic<T>: every operation is a scheduling point. Only what the code under
// test uses is provided.
template <class T>
class atomic
{
public:
    constexpr atomic(T value = T()) noexcept : value_(value) {}
    atomic(const atomic&) = delete;
    atomic& operator=(const atomic&) = delete;

    T load(std::memory_order = std::memory_order_seq_cst) const
    {
        scheduler::point();
        return value_;
    }

    void store(T value, std::memory_order = std::memory_order_seq_cst)
    {
        scheduler::point();
        value_ = value;
    }

    bool compare_exchange_weak(T& expected, T desired, std::memory_order, std::memory_order)
    {
        return compare_exchange_strong(expected, desired);
    }

    bool compare_exchange_weak(T& expected, T desired, std::memory_order = std::memory_order_seq_cst)
    {
        return compare_exchange_strong(expected, desired);
    }

    bool compare_exchange_strong(T& expected, T desired, std::memory_order = std::memory_order_seq_cst)
    {
        scheduler::point();
        if (value_ == expected)
        {
            value_ = desired;
            return true;
        }
        expected = value_;
        return false;
    }

    T fetch_add(T delta, std::memory_order = std::memory_order_seq_cst)
    {
        scheduler::point();
        const T old = value_;
        value_ = old + delta;
        return old;
    }

    T fetch_sub(T delta, std::memory_order = std::memory_order_seq_cst)
    {
        scheduler::point();
        const T old = value_;
        value_ = old - delta;
        return old;
    }

private:
    T value_;
};

// Drop-in for std::mutex: lock() is a scheduling point and blocks the logical thread while
// another holds it; unlock() wakes the threads blocked on it.
class mutex
{
public:
    mutex() = default;
    mutex(const mutex&) = delete;
    mutex& operator=(const mutex&) = delete;

    void lock()
    {
        scheduler::point();
        while (locked_)
            scheduler::block_on(this);
        locked_ = true;
    }

    void unlock()
    {
        locked_ = false;
        scheduler::wake(this);
    }

    // For invariants that hold only while nobody is inside the critical section.
    bool locked() const noexcept { return locked_; }

private:
    bool locked_ = false;
};

struct exploration
{
    std::size_t schedules = 0;
    std::size_t max_steps = 0;
    bool complete = false; // every interleaving was explored
    std::string failure;   // the first invariant violation, with its schedule
};

inline std::string describe(const std::vector<std::size_t>& choices)
{
    std::ostringstream out;
    out << "schedule [";
    for (std::size_t i = 0; i < choices.size(); ++i)
        out << (i ? " " : "") << choices[i];
    out << "]";
    return out.str();
}

// Depth-first over every sequence of scheduling decisions. `make` returns a fresh scenario for
// each run. Stops at the first failure, or after `limit` schedules (then `complete` is false).
template <class MakeScenario>
exploration explore(MakeScenario make, std::size_t limit = 5'000'000)
{
    exploration result;
    std::vector<std::size_t> taken;   // the decision made at each branching point
    std::vector<std::size_t> options; // how many choices there were
    for (;;)
    {
        std::size_t depth = 0;
        auto sc = make();
        scheduler s(*sc, [&](std::size_t count) {
            if (depth == taken.size())
            {
                taken.push_back(0);
                options.push_back(count);
            }
            return taken[depth++];
        });
        s.run();
        ++result.schedules;
        result.max_steps = std::max(result.max_steps, s.steps());
        if (!sc->failure.empty())
        {
            result.failure = sc->failure + " (" + describe(taken) + ")";
            return result;
        }
        taken.resize(depth);
        options.resize(depth);
        while (!taken.empty() && taken.back() + 1 == options.back())
        {
            taken.pop_back();
            options.pop_back();
        }
        if (taken.empty())
        {
            result.complete = true;
            return result;
        }
        if (result.schedules == limit)
            return result;
        ++taken.back();
    }
}

// Seeded random schedules, for scenarios too large to enumerate.
template <class MakeScenario>
exploration explore_random(MakeScenario make, std::size_t runs, unsigned seed)
{
    exploration result;
    std::mt19937 rng(seed);
    for (std::size_t run = 0; run < runs; ++run)
    {
        std::vector<std::size_t> taken;
        auto sc = make();
        scheduler s(*sc, [&](std::size_t count) {
            taken.push_back(std::uniform_int_distribution<std::size_t>(0, count - 1)(rng));
            return taken.back();
        });
        s.run();
        ++result.schedules;
        result.max_steps = std::max(result.max_steps, s.steps());
        if (!sc->failure.empty())
        {
            result.failure = sc->failure + " (seed " + std::to_string(seed) + ", " + describe(taken) + ")";
            return result;
        }
    }
    return result;
}

} // namespace asio_sync::test::dsched

#endif // ASIO_SYNC_TEST_SUPPORT_DSCHED_HPP
