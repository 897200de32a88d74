// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

// libFuzzer target: runs byte-decoded sequences of operations on one or two
// asio_sync::basic_semaphore objects (bounded or not), and the permit objects they hand out,
// single-threaded on a manual executor, and compares every observable result with a sequential
// model written from the documented semantics (README.md, docs/permits.md and
// include/asio_sync/semaphore.hpp), not from the implementation. Timed acquires need real timers
// and are left to the unit tests.
//
// With -DASIO_SYNC_FUZZ_REPLAY the file builds as a plain program instead: it runs the inputs named
// on its command line (files, or directories of files) through the same checks, so the corpus also
// runs with g++ and in the ordinary test build. With ASIO_SYNC_FUZZ_TRACE=1 in the environment it
// prints each input's operation trace.
//
// Input format: byte 0 holds flags (bit 0: end by shutting the context down instead of cancelling
// and draining), bytes 1 and 2 the initial permits of the two semaphores, bytes 3 and 4 their
// shapes (bit 0: bounded; see decode_shape), then one operation per opcode byte, each followed by
// its parameter bytes (missing bytes read as 0).
//
// The seed corpus in corpus/ is the output of a fuzzing run merged with `-merge=1 -use_counters=0`
// (edges and semantic features, without hit counts, so that it stays a few hundred short files);
// refresh it the same way when the input format or the semantic features change, since old seeds
// then decode to different operations.

#include <asio_sync/semaphore.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/execution.hpp>
#include <boost/asio/execution_context.hpp>
#include <boost/asio/prefer.hpp>
#include <boost/asio/query.hpp>
#include <boost/asio/require.hpp>
#include <boost/system/error_code.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#define ASIO_SYNC_FUZZ_TARGET "semaphore_fuzz"
#include "harness.hpp"

namespace asio = boost::asio;
using boost::system::error_code;

// Semantic coverage: one counter per (operation, state of its semaphore before it, outcome). Code
// edges do not tell apart a forget_permits on a closed semaphore from one on an open semaphore, or
// a permit returning into a debt from one returning to the counter; libFuzzer's extra counters make
// such combinations features, so the fuzzer seeks them and the corpus merge keeps inputs that
// reach them. External linkage, so that the stores are not optimised away.
#if !defined(ASIO_SYNC_FUZZ_REPLAY)
__attribute__((section("__libfuzzer_extra_counters")))
#endif
std::uint8_t asio_sync_fuzz_features[32 * 32 * 2];

namespace {

using asio_sync::fuzz::fail;
using asio_sync::fuzz::note;
using asio_sync::fuzz::reader;
using asio_sync::fuzz::trace;
using asio_sync::fuzz::tracing;

// ---------------------------------------------------------------------------------------------
// A manual execution context: handlers queue up until the fuzzer runs them, one at a time, so the
// order of completions is fully observable. It counts outstanding work in a counter that outlives
// it, so the count can still be checked after the context is gone.

class manual_executor;

class manual_context : public asio::execution_context
{
public:
    explicit manual_context(long& work) : work_(work) {}

    manual_context(const manual_context&) = delete;
    manual_context& operator=(const manual_context&) = delete;

    // Like io_context: services shut down first (pending operations are destroyed, not invoked),
    // then queued handlers are destroyed without being invoked.
    ~manual_context()
    {
        shutdown();
        queue_.clear();
        destroy();
    }

    manual_executor get_executor() noexcept;

    std::size_t queued() const noexcept { return queue_.size(); }

    // Runs the oldest queued function; false if there was none.
    bool run_one()
    {
        if (queue_.empty())
            return false;
        std::unique_ptr<task> next = std::move(queue_.front());
        queue_.pop_front();
        next->run();
        return true;
    }

    template <class Function>
    void post(Function&& f)
    {
        queue_.push_back(std::make_unique<task_for<std::decay_t<Function>>>(std::forward<Function>(f)));
    }

    void work_started() noexcept { ++work_; }

    void work_finished() noexcept
    {
        // A negative count is a bug in whoever ended work it never started: report it at once.
        FUZZ_CHECK(work_ > 0, "outstanding work finished more often than it started");
        --work_;
    }

private:
    struct task
    {
        virtual ~task() = default;
        virtual void run() = 0;
    };

    template <class Function>
    struct task_for final : task
    {
        template <class F>
        explicit task_for(F&& f) : function(std::forward<F>(f))
        {
        }
        void run() override { function(); }
        Function function;
    };

    // Move-only: Asio's completion handlers need not be copyable.
    std::deque<std::unique_ptr<task>> queue_;
    long& work_;
};

// A minimal standard executor for Asio 1.26: execute() queues, never runs inline; the
// outstanding_work property is a run-time flag, so tracked and untracked executors share one type
// (the semaphore's I/O executor type) and each tracked copy counts as one unit of work.
class manual_executor
{
public:
    manual_executor(manual_context& ctx, bool tracked) noexcept : ctx_(&ctx), tracked_(tracked)
    {
        if (tracked_)
            ctx_->work_started();
    }

    manual_executor(const manual_executor& other) noexcept : ctx_(other.ctx_), tracked_(other.tracked_)
    {
        if (tracked_)
            ctx_->work_started();
    }

    manual_executor(manual_executor&& other) noexcept : ctx_(other.ctx_), tracked_(other.tracked_)
    {
        other.tracked_ = false;
    }

    manual_executor& operator=(const manual_executor& other) noexcept
    {
        manual_executor copy(other);
        return *this = std::move(copy);
    }

    manual_executor& operator=(manual_executor&& other) noexcept
    {
        if (this != &other)
        {
            if (tracked_)
                ctx_->work_finished();
            ctx_ = other.ctx_;
            tracked_ = other.tracked_;
            other.tracked_ = false;
        }
        return *this;
    }

    ~manual_executor()
    {
        if (tracked_)
            ctx_->work_finished();
    }

    asio::execution_context& query(asio::execution::context_t) const noexcept { return *ctx_; }

    asio::execution::blocking_t query(asio::execution::blocking_t) const noexcept
    {
        return asio::execution::blocking.never;
    }

    asio::execution::outstanding_work_t query(asio::execution::outstanding_work_t) const noexcept
    {
        if (tracked_)
            return asio::execution::outstanding_work.tracked;
        return asio::execution::outstanding_work.untracked;
    }

    manual_executor require(asio::execution::blocking_t::never_t) const noexcept { return *this; }

    manual_executor require(asio::execution::outstanding_work_t::tracked_t) const noexcept
    {
        return manual_executor(*ctx_, true);
    }

    manual_executor require(asio::execution::outstanding_work_t::untracked_t) const noexcept
    {
        return manual_executor(*ctx_, false);
    }

    // The fuzzer does not check allocations; accepting the property keeps prefer() well-formed.
    template <class Allocator>
    manual_executor require(asio::execution::allocator_t<Allocator>) const noexcept
    {
        return *this;
    }

    template <class Function>
    void execute(Function&& f) const
    {
        ctx_->post(std::forward<Function>(f));
    }

    // C++20 derives != from this.
    friend bool operator==(const manual_executor& a, const manual_executor& b) noexcept
    {
        return a.ctx_ == b.ctx_ && a.tracked_ == b.tracked_;
    }

private:
    manual_context* ctx_;
    bool tracked_;
};

manual_executor manual_context::get_executor() noexcept
{
    return manual_executor(*this, false);
}

// What the semaphore asks of its executor, spelled out so that a gap in the manual executor fails
// here rather than deep inside Asio.
static_assert(asio::execution::is_executor<manual_executor>::value);
static_assert(asio::can_query<const manual_executor&, asio::execution::context_t>::value);
static_assert(asio::can_require<const manual_executor&, asio::execution::blocking_t::never_t>::value);
static_assert(std::is_same_v<decltype(asio::prefer(std::declval<const manual_executor&>(),
                                                   asio::execution::outstanding_work.tracked)),
                             manual_executor>);
static_assert(
    asio::can_prefer<const manual_executor&, asio::execution::outstanding_work_t::untracked_t>::value);
static_assert(
    asio::can_prefer<const manual_executor&, asio::execution::allocator_t<std::allocator<void>>>::value);

using semaphore = asio_sync::basic_semaphore<manual_executor>;
constexpr std::size_t max_permits = semaphore::max_permits;
constexpr std::size_t max_bound = semaphore::max_bound;
constexpr std::size_t size_max = std::numeric_limits<std::size_t>::max();

// ---------------------------------------------------------------------------------------------
// The model's vocabulary.

// Completion codes as bits, so that an expectation can allow more than one.
enum code_bits : unsigned
{
    code_success = 1,
    code_aborted = 2,
    code_closed = 4,
    code_too_many = 8,
};

const char* code_names(unsigned codes)
{
    switch (codes)
    {
    case code_success:
        return "success";
    case code_aborted:
        return "operation_aborted";
    case code_closed:
        return "closed";
    case code_too_many:
        return "too_many_permits";
    case code_too_many | code_closed:
        return "too_many_permits or closed";
    }
    return "?";
}

unsigned code_of(const error_code& ec)
{
    if (!ec)
        return code_success;
    if (ec == asio::error::operation_aborted)
        return code_aborted;
    if (ec == asio_sync::error::closed)
        return code_closed;
    if (ec == asio_sync::error::too_many_permits)
        return code_too_many;
    return 0;
}

enum class acquire_state
{
    queued,    // waiting in its semaphore's queue
    posted,    // decided; its handler is in the context's queue
    done,      // its handler ran
    destroyed, // its handler was destroyed by the context's shutdown without running
};

struct acquire_record
{
    int sem;        // 0 or 1
    unsigned gen;   // which incarnation of that semaphore (destroy-and-recreate starts a new one)
    std::size_t n;  // permits asked for
    bool to_permit; // async_acquire_permit: the handler receives a permit object
    std::size_t missing = 0;
    std::size_t collected = 0; // permits handed to it while queued, not yet its caller's
    acquire_state state = acquire_state::posted;
    unsigned codes = 0; // the completion codes allowed once decided
};

// One semaphore as the specification describes it: a counter, a FIFO of waiters, a closed flag, a
// capacity (the bound of a bounded semaphore, max_permits otherwise), the debt reduce_permits
// leaves, and the figures of the permit ledger.
struct sem_model
{
    unsigned gen = 0;
    bool bounded = false;
    std::size_t bound = max_permits; // capacity()
    std::size_t counter = 0;
    std::size_t debt = 0; // owed after reduce_permits; paid first by every permit flowing back
    bool closed = false;
    std::deque<int> queue; // acquire ids, oldest first

    // Permit ledger, in arithmetic modulo 2^64: the identity in check_ledger holds over the
    // integers, hence modulo 2^64, and any discrepancy smaller than 2^64 still shows.
    std::uint64_t initial = 0;         // permits at construction
    std::uint64_t released = 0;        // sum of n over release(n) / try_release(n) that succeeded
    std::uint64_t added = 0;           // sum of n over add_permits(n) that succeeded
    std::uint64_t collected = 0;       // held by queued waiters, collected so far
    std::uint64_t granted = 0;         // successful plain acquires whose handler has not run yet
    std::uint64_t granted_permits = 0; // the same for permit acquires: their permit holds them
    std::uint64_t held = 0;            // the caller's: successful plain acquires
    std::uint64_t permits = 0;         // held by the permit objects of the pool
    std::uint64_t lost = 0;            // plain grants whose handler was destroyed at shutdown
    std::uint64_t forgotten = 0;       // permit::forget
    std::uint64_t removed = 0;         // forget_permits
    std::uint64_t reduced = 0;         // reduce_permits: taken at once, or owed (the debt)
    std::uint64_t dropped = 0;         // permit returns that did not fit an unbounded counter
};

// Input bytes; reads past the end give 0, so every input decodes to something.
std::size_t decode_initial(std::uint8_t b)
{
    switch (b % 8)
    {
    case 6:
        return max_permits - (b >> 3) % 4; // near the top, for overflow attempts
    case 7:
        return std::size_t(1) << 40;
    default:
        return (b >> 3) % 9;
    }
}

// A semaphore's shape byte: bit 0 makes it bounded, bits 1-3 pick how far the bound lies above the
// initial permits, and bits 4-7 all set first try a construction that must be refused.
struct shape
{
    bool bounded;
    std::size_t bound;
    bool try_invalid;
};

shape decode_shape(std::uint8_t b, std::size_t initial)
{
    std::size_t slack;
    switch ((b >> 1) & 7)
    {
    case 5:
        slack = 8;
        break;
    case 6:
        slack = std::size_t(1) << 40;
        break;
    case 7:
        slack = max_bound - initial; // the largest bound there is
        break;
    default:
        slack = (b >> 1) & 7;
        break;
    }
    const std::size_t bound = slack > max_bound - initial ? max_bound : initial + slack;
    return shape{(b & 1) != 0, bound, (b >> 4) == 15};
}

// Mostly 0..8, sometimes huge: exactly max_permits (valid, waits "forever"), just above it, or the
// largest size_t.
std::size_t decode_count(std::uint8_t b)
{
    const unsigned v = b & 15;
    if (v <= 8)
        return v;
    switch (v)
    {
    case 9:
    case 10:
        return 1;
    case 11:
        return 2;
    case 12:
        return max_permits;
    case 13:
        return max_permits + 1;
    case 14:
        return size_max;
    default:
        return std::size_t(1) << 40;
    }
}

// How many permits permit::split moves: small, around the permit's count, or absurd.
std::size_t decode_split(std::uint8_t b, std::size_t count)
{
    switch (b % 8)
    {
    case 0:
        return 0;
    case 1:
        return 1;
    case 2:
        return 2;
    case 3:
        return count / 2;
    case 4:
        return count == 0 ? 0 : count - 1;
    case 5:
        return count;
    case 6:
        return count + 1;
    default:
        return size_max;
    }
}

asio::cancellation_type_t decode_cancellation(std::uint8_t b)
{
    using ct = asio::cancellation_type;
    switch (b % 8)
    {
    case 0:
        return ct::terminal;
    case 1:
        return ct::partial;
    case 2:
        return ct::total;
    case 3:
        return ct::none;
    case 4:
        return ct::all;
    case 5:
        return ct::partial | ct::total;
    case 6:
        return static_cast<ct>(8); // a bit with no meaning: must change nothing
    default:
        return static_cast<ct>(8) | ct::terminal;
    }
}

// A permit object the fuzzer holds, with what the model says it holds. Held through a pointer:
// the pool's vector must never move-assign permits behind the model's back (that gives permits
// back).
struct held_permit
{
    std::unique_ptr<semaphore::permit> object;
    int sem;           // the semaphore it names (always the live incarnation: see settle_permits)
    std::size_t count; // what it holds
};

// ---------------------------------------------------------------------------------------------
// One input's run: the real semaphores on a manual context, the model beside them, and the
// comparison after every operation.

class harness
{
public:
    harness() : ctx_(std::make_unique<manual_context>(work_)) {}

    harness(const harness&) = delete;
    harness& operator=(const harness&) = delete;

    void run(reader in)
    {
        const std::uint8_t flags = in.byte();
        const std::uint8_t initial0 = in.byte();
        const std::uint8_t initial1 = in.byte();
        const std::uint8_t shape0 = in.byte();
        const std::uint8_t shape1 = in.byte();
        create(0, decode_initial(initial0), shape0);
        create(1, decode_initial(initial1), shape1);
        check("construction");
        while (!in.empty())
        {
            ++step_;
            step(in);
        }
        if (flags & 1)
            finish_by_shutdown();
        else
            finish_by_draining();
    }

    // Invoked by every completion handler; `p` is the permit of a permit acquire.
    void completed(int id, const error_code& ec, semaphore::permit* p = nullptr)
    {
        FUZZ_CHECK(id >= 0 && std::size_t(id) < acquires_.size(), "handler with unknown id %d", id);
        acquire_record& a = acquires_[std::size_t(id)];
        FUZZ_CHECK(a.state != acquire_state::done, "handler of acquire #%d ran a second time", id);
        FUZZ_CHECK(a.state != acquire_state::destroyed, "handler of acquire #%d ran after its destruction",
                   id);
        FUZZ_CHECK(running_,
                   "handler of acquire #%d (%s) was invoked inside an operation, not by the executor", id,
                   ec.message().c_str());
        FUZZ_CHECK(invoked_ == 0, "one function from the executor invoked a second handler (#%d)", id);
        ++invoked_;
        FUZZ_CHECK(!expected_.empty(), "handler of acquire #%d ran, but the model expects no completion", id);
        const int want = expected_.front();
        FUZZ_CHECK(want == id, "handler of acquire #%d (%s) ran, but the model expects #%d (%s) first", id,
                   ec.message().c_str(), want, code_names(acquires_[std::size_t(want)].codes));
        const unsigned code = code_of(ec);
        FUZZ_CHECK(code & a.codes, "acquire #%d completed with \"%s\", the model expects %s", id,
                   ec.message().c_str(), code_names(a.codes));
        FUZZ_CHECK(a.state == acquire_state::posted, "acquire #%d completed while the model has it queued",
                   id);
        expected_.pop_front();
        a.state = acquire_state::done;
        if (tracing) // message() allocates: only when it is printed
            note("    ran handler #%d: %s%s", id, ec.message().c_str(), a.to_permit ? ", with a permit" : "");
        sem_model& m = model_[a.sem];
        if (!a.to_permit)
        {
            if (code == code_success && live(a))
            {
                m.granted -= a.n;
                m.held += a.n;
            }
            return;
        }
        // On error the permit holds nothing; on success exactly n, of this semaphore.
        const std::size_t count = code == code_success ? a.n : 0;
        FUZZ_CHECK(p->count() == count,
                   "acquire #%d completed with a permit holding %zu, the model expects %zu", id, p->count(),
                   count);
        FUZZ_CHECK(bool(*p) == (count != 0),
                   "acquire #%d: the permit's operator bool is %d for a count of %zu", id, int(bool(*p)),
                   count);
        if (!live(a))
        {
            // Aborted by the semaphore's destruction: the permit holds nothing and is dropped here.
            FUZZ_CHECK(code != code_success, "harness: a destroyed semaphore's permit reached acquire #%d",
                       id);
            return;
        }
        FUZZ_CHECK(&p->semaphore() == &*sem_[a.sem], "acquire #%d: its permit names another semaphore", id);
        if (code != code_success)
            return;
        m.granted_permits -= a.n;
        m.permits += a.n;
        pool_.push_back(held_permit{std::make_unique<semaphore::permit>(std::move(*p)), a.sem, a.n});
        note("    permit %zu (sem%d) now holds %zu", pool_.size() - 1, a.sem, a.n);
    }

private:
    // ----- operations -------------------------------------------------------------------------

    void step(reader& in)
    {
        const std::uint8_t op = in.byte();
        const std::uint8_t arg = in.byte();
        const int s = arg >> 7; // which semaphore
        const unsigned before[2] = {state_bits(0), state_bits(1)};
        subject_ = s;
        outcome_ = false;
        unsigned kind = op % 32; // the feature's operation: aliases of one operation share one
        switch (op % 32)
        {
        case 0:
        case 1:
        case 31:
            kind = 0;
            async_acquire(s, decode_count(arg), false, false);
            break;
        case 2:
            async_acquire(s, decode_count(arg), true, false);
            break;
        case 3:
        case 4:
            kind = 3;
            async_acquire(s, decode_count(arg), false, true);
            break;
        case 5:
            async_acquire(s, decode_count(arg), true, true);
            break;
        case 6:
            try_acquire(s, decode_count(arg));
            break;
        case 7:
            try_acquire_permit(s, decode_count(arg));
            break;
        case 8:
        case 9:
            kind = 8;
            release(s, arg % 9, false);
            break;
        case 10:
            release(s, big_release(s, arg), false);
            break;
        case 11:
            release(s, (arg & 1) ? big_release(s, arg) : std::size_t((arg >> 1) % 9), true);
            break;
        case 12:
        case 13:
        {
            kind = 12;
            const std::uint8_t type = in.byte();
            emit(arg, type);
            break;
        }
        case 14:
            cancel(s);
            break;
        case 15:
            close(s);
            break;
        case 16:
        case 17:
            kind = 16;
            run_one();
            break;
        case 18:
            run_all();
            break;
        case 19:
        {
            const std::uint8_t initial = in.byte();
            const std::uint8_t shape = in.byte();
            recreate(s, initial, shape);
            break;
        }
        case 20:
        case 21:
            kind = 20;
            permit_release(arg);
            break;
        case 22:
            permit_destroy(arg);
            break;
        case 23:
            permit_forget(arg);
            break;
        case 24:
        {
            const std::uint8_t k = in.byte();
            permit_split(arg, k);
            break;
        }
        case 25:
        {
            const std::uint8_t other = in.byte();
            permit_merge(arg, other);
            break;
        }
        case 26:
        {
            const std::uint8_t source = in.byte();
            permit_move_assign(arg, source);
            break;
        }
        case 27:
            add_permits(s, decode_amount(s, arg));
            break;
        case 28:
            forget_permits(s, decode_amount(s, arg));
            break;
        default:
            kind = 29;
            reduce_permits(s, decode_amount(s, arg));
            break;
        }
        std::uint8_t& feature =
            asio_sync_fuzz_features[(kind * 32 + before[subject_]) * 2 + (outcome_ ? 1 : 0)];
        if (feature != 255)
            ++feature;
        check("after the operation");
    }

    // What the semantic coverage distinguishes about a semaphore.
    unsigned state_bits(int s) const
    {
        const sem_model& m = model_[s];
        return (m.closed ? 1u : 0u) | (m.bounded ? 2u : 0u) | (m.debt != 0 ? 4u : 0u) |
               (!m.queue.empty() ? 8u : 0u) | (m.counter != 0 ? 16u : 0u);
    }

    // Release amounts around the boundaries, relative to the state the model predicts: the room
    // under the bound (or under max_permits for the counter), the counter, the debt, the bound.
    std::size_t big_release(int s, std::uint8_t arg) const
    {
        const sem_model& m = model_[s];
        const std::size_t room = release_room(s);
        switch ((arg >> 3) & 15)
        {
        case 0:
            return room; // fills up exactly
        case 1:
            return room + 1; // one too many
        case 2:
            return max_permits;
        case 3:
            return max_permits + 1;
        case 4:
            return size_max;
        case 5:
            return std::size_t(1) << 40;
        case 6:
            return room - 1;
        case 7:
            return m.counter;
        case 8:
            return max_permits - m.counter;
        case 9:
            return max_permits - m.counter + 1;
        case 10:
            return m.debt;
        case 11:
            return m.debt + 1;
        case 12:
            return m.bound;
        case 13:
            return m.bound + 1;
        case 14:
            return room / 2;
        default:
            return 0;
        }
    }

    // Amounts for add_permits, forget_permits and reduce_permits: mostly decode_count, sometimes
    // relative to the capacity, the counter, the debt, or the room add_permits has below
    // max_bound (bounded) or max_permits.
    std::size_t decode_amount(int s, std::uint8_t arg) const
    {
        if (((arg >> 4) & 7) < 5)
            return decode_count(arg & 15);
        const sem_model& m = model_[s];
        const std::size_t top = m.bounded ? m.bound : m.counter;
        const std::size_t limit = m.bounded ? max_bound : max_permits;
        switch (arg & 7)
        {
        case 0:
            return m.bound;
        case 1:
            return m.bound - 1;
        case 2:
            return m.bound + 1;
        case 3:
            return m.counter;
        case 4:
            return m.counter + 1;
        case 5:
            return m.debt;
        case 6:
            return limit - top;
        default:
            return limit - top + 1;
        }
    }

    void construct(int s, std::size_t initial, bool bounded, std::size_t bound)
    {
        // Every constructor: from an executor, and from an execution context, with and without a bound.
        if (bounded)
        {
            if (s == 0)
                sem_[s].emplace(ctx_->get_executor(), initial, bound);
            else
                sem_[s].emplace(*ctx_, initial, bound);
        }
        else if (s == 0)
            sem_[s].emplace(ctx_->get_executor(), initial);
        else
            sem_[s].emplace(*ctx_, initial);
    }

    void create(int s, std::size_t initial, std::uint8_t shape_byte)
    {
        // A bounded semaphore's initial permits are at most max_bound: the large ones stay near it.
        if ((shape_byte & 1) != 0 && initial > max_bound)
            initial = max_bound - (initial & 3);
        const shape sh = decode_shape(shape_byte, initial);
        if (sh.try_invalid)
        {
            // initial > max_permits, initial > bound or bound > max_bound: std::invalid_argument.
            const std::size_t bad_initial = sh.bounded ? initial : max_permits + 1;
            const std::size_t bad_bound = !sh.bounded ? 0 : initial != 0 ? initial - 1 : max_bound + 1;
            note("sem%d: constructing with %zu permits, bound %zu%s must throw", s, bad_initial, bad_bound,
                 sh.bounded ? "" : " (none)");
            const std::size_t queued = ctx_->queued();
            bool threw = false;
            try
            {
                construct(s, bad_initial, sh.bounded, bad_bound);
            }
            catch (const std::invalid_argument&)
            {
                threw = true;
            }
            FUZZ_CHECK(threw && !sem_[s], "sem%d: the constructor did not throw std::invalid_argument", s);
            FUZZ_CHECK(ctx_->queued() == queued, "a refused construction posted a function");
        }
        construct(s, initial, sh.bounded, sh.bound);
        sem_model& m = model_[s];
        const unsigned gen = m.gen + 1;
        m = sem_model();
        m.gen = gen;
        m.bounded = sh.bounded;
        m.bound = sh.bounded ? sh.bound : max_permits;
        m.counter = initial;
        m.initial = initial;
        if (sh.bounded)
            note("sem%d created with %zu permits, bound %zu (incarnation %u)", s, initial, sh.bound, gen);
        else
            note("sem%d created with %zu permits, unbounded (incarnation %u)", s, initial, gen);
        FUZZ_CHECK(sem_[s]->get_executor() == ctx_->get_executor(),
                   "get_executor() is not the given executor");
    }

    auto handler(int id)
    {
        return [this, id, token = token_](error_code ec) { completed(id, ec); };
    }

    auto permit_handler(int id)
    {
        return [this, id, token = token_](error_code ec, semaphore::permit p) { completed(id, ec, &p); };
    }

    void async_acquire(int s, std::size_t n, bool with_signal, bool to_permit)
    {
        const int id = int(acquires_.size());
        acquires_.push_back(acquire_record{s, model_[s].gen, n, to_permit});
        const char* what = to_permit ? "async_acquire_permit" : "async_acquire";
        if (with_signal)
        {
            signals_.push_back(std::make_unique<asio::cancellation_signal>());
            signal_owner_.push_back(id);
            note("#%d sem%d.%s(%zu) with signal %zu -> acquire #%d", step_, s, what, n, signals_.size() - 1,
                 id);
            auto slot = signals_.back()->slot();
            if (to_permit)
                sem_[s]->async_acquire_permit(n, asio::bind_cancellation_slot(slot, permit_handler(id)));
            else
                sem_[s]->async_acquire(n, asio::bind_cancellation_slot(slot, handler(id)));
        }
        else
        {
            note("#%d sem%d.%s(%zu) -> acquire #%d", step_, s, what, n, id);
            if (to_permit)
                sem_[s]->async_acquire_permit(n, permit_handler(id));
            else
                sem_[s]->async_acquire(n, handler(id));
        }
        model_acquire(id);
        outcome_ = acquires_[std::size_t(id)].state != acquire_state::queued;
    }

    void try_acquire(int s, std::size_t n)
    {
        note("#%d sem%d.try_acquire(%zu)", step_, s, n);
        const bool got = sem_[s]->try_acquire(n);
        const bool want = model_try_acquire(s, n, false);
        FUZZ_CHECK(got == want, "try_acquire(%zu) returned %s, the model expects %s", n,
                   got ? "true" : "false", want ? "true" : "false");
        outcome_ = got;
    }

    void try_acquire_permit(int s, std::size_t n)
    {
        note("#%d sem%d.try_acquire_permit(%zu)", step_, s, n);
        std::optional<semaphore::permit> got = sem_[s]->try_acquire_permit(n);
        const bool want = model_try_acquire(s, n, true);
        FUZZ_CHECK(got.has_value() == want, "try_acquire_permit(%zu) returned %s, the model expects %s", n,
                   got ? "a permit" : "nothing", want ? "a permit" : "nothing");
        outcome_ = want;
        if (!got)
            return;
        pool_.push_back(held_permit{std::make_unique<semaphore::permit>(std::move(*got)), s, n});
        note("    permit %zu (sem%d) now holds %zu", pool_.size() - 1, s, n);
        check_permit(pool_.size() - 1, "try_acquire_permit");
    }

    void release(int s, std::size_t n, bool as_try)
    {
        // Noted before the call, so that a failure inside it shows in the trace.
        note("#%d sem%d.%s(%zu)", step_, s, as_try ? "try_release" : "release", n);
        bool failed = false;
        if (as_try)
            failed = !sem_[s]->try_release(n);
        else
        {
            try
            {
                sem_[s]->release(n);
            }
            catch (const std::overflow_error&)
            {
                failed = true;
            }
        }
        const bool want = model_release(s, n);
        outcome_ = !failed;
        if (as_try)
            FUZZ_CHECK(failed == want, "try_release(%zu) returned %s, the model expects %s", n,
                       failed ? "false" : "true", want ? "false" : "true");
        else
            FUZZ_CHECK(failed == want, "release(%zu) %s, the model expects it %s", n,
                       failed ? "threw" : "did not throw",
                       want ? "to throw std::overflow_error" : "to succeed");
    }

    void emit(std::uint8_t which, std::uint8_t type_byte)
    {
        if (signals_.empty())
            return;
        // Small values pick recent signals: those are the likeliest to have a waiter still queued.
        const std::size_t k = signals_.size() - 1 - which % signals_.size();
        const acquire_record& a = acquires_[std::size_t(signal_owner_[k])];
        const asio::cancellation_type_t type = decode_cancellation(type_byte);
        // Documented precondition: no emission after the semaphore is destroyed while the
        // operation's handler has not run yet (its cancellation handler still names the semaphore).
        if (!live(a) && a.state != acquire_state::done)
        {
            note("#%d signal %zu: skipped, its semaphore is gone", step_, k);
            return;
        }
        note("#%d signal %zu (acquire #%d).emit(%u)", step_, k, signal_owner_[k], unsigned(type));
        subject_ = a.sem;
        outcome_ = a.state == acquire_state::queued;
        signals_[k]->emit(type);
        model_emit(signal_owner_[k], type);
    }

    void cancel(int s)
    {
        note("#%d sem%d.cancel()", step_, s);
        const std::size_t got = sem_[s]->cancel();
        const std::size_t want = model_abort_all(s, code_aborted);
        FUZZ_CHECK(got == want, "cancel() returned %zu, the model expects %zu", got, want);
    }

    void close(int s)
    {
        note("#%d sem%d.close()", step_, s);
        sem_[s]->close();
        model_abort_all(s, code_closed);
        model_[s].closed = true;
    }

    void add_permits(int s, std::size_t n)
    {
        note("#%d sem%d.add_permits(%zu)", step_, s, n);
        bool threw = false;
        try
        {
            sem_[s]->add_permits(n);
        }
        catch (const std::overflow_error&)
        {
            threw = true;
        }
        const bool want = model_add(s, n);
        outcome_ = threw;
        FUZZ_CHECK(threw == want, "add_permits(%zu) %s, the model expects it %s", n,
                   threw ? "threw" : "did not throw", want ? "to throw std::overflow_error" : "to succeed");
    }

    void forget_permits(int s, std::size_t n)
    {
        note("#%d sem%d.forget_permits(%zu)", step_, s, n);
        const std::size_t got = sem_[s]->forget_permits(n);
        const std::size_t want = model_forget(s, n);
        outcome_ = got != 0;
        FUZZ_CHECK(got == want, "forget_permits(%zu) returned %zu, the model expects %zu", n, got, want);
    }

    enum class reduce_outcome
    {
        done,
        invalid_argument,
        overflow_error,
    };

    static const char* name(reduce_outcome r)
    {
        switch (r)
        {
        case reduce_outcome::done:
            return "success";
        case reduce_outcome::invalid_argument:
            return "std::invalid_argument";
        case reduce_outcome::overflow_error:
            return "std::overflow_error";
        }
        return "?";
    }

    void reduce_permits(int s, std::size_t n)
    {
        note("#%d sem%d.reduce_permits(%zu)", step_, s, n);
        reduce_outcome got = reduce_outcome::done;
        try
        {
            sem_[s]->reduce_permits(n);
        }
        catch (const std::invalid_argument&)
        {
            got = reduce_outcome::invalid_argument;
        }
        catch (const std::overflow_error&)
        {
            got = reduce_outcome::overflow_error;
        }
        const reduce_outcome want = model_reduce(s, n);
        outcome_ = got != reduce_outcome::done;
        FUZZ_CHECK(got == want, "reduce_permits(%zu) ended with %s, the model expects %s", n, name(got),
                   name(want));
    }

    // ----- permit objects ---------------------------------------------------------------------

    // Small values pick recent permits. False (noted) if the pool is empty.
    bool pick_permit(std::uint8_t b, std::size_t& k, const char* what)
    {
        if (pool_.empty())
        {
            note("#%d %s: no permit held", step_, what);
            return false;
        }
        k = pool_.size() - 1 - b % pool_.size();
        return true;
    }

    void permit_release(std::uint8_t b)
    {
        std::size_t k;
        if (!pick_permit(b, k, "permit release()"))
            return;
        held_permit& p = pool_[k];
        note("#%d permit %zu (sem%d, %zu).release()", step_, k, p.sem, p.count);
        subject_ = p.sem;
        outcome_ = p.count != 0;
        p.object->release();
        const std::size_t n = std::exchange(p.count, 0);
        model_[p.sem].permits -= n;
        model_give_back(p.sem, n);
        check_permit(k, "release()");
    }

    void permit_destroy(std::uint8_t b)
    {
        std::size_t k;
        if (!pick_permit(b, k, "permit destruction"))
            return;
        note("#%d permit %zu (sem%d, %zu) destroyed", step_, k, pool_[k].sem, pool_[k].count);
        subject_ = pool_[k].sem;
        outcome_ = pool_[k].count != 0;
        destroy_permit(k);
    }

    void destroy_permit(std::size_t k)
    {
        const int s = pool_[k].sem;
        const std::size_t n = pool_[k].count;
        std::unique_ptr<semaphore::permit> doomed = std::move(pool_[k].object);
        pool_.erase(pool_.begin() + std::ptrdiff_t(k));
        doomed.reset();
        model_[s].permits -= n;
        model_give_back(s, n);
    }

    void permit_forget(std::uint8_t b)
    {
        std::size_t k;
        if (!pick_permit(b, k, "permit forget()"))
            return;
        held_permit& p = pool_[k];
        note("#%d permit %zu (sem%d, %zu).forget()", step_, k, p.sem, p.count);
        subject_ = p.sem;
        outcome_ = p.count != 0;
        p.object->forget();
        const std::size_t n = std::exchange(p.count, 0);
        model_[p.sem].permits -= n;
        model_[p.sem].forgotten += n;
        check_permit(k, "forget()");
    }

    void permit_split(std::uint8_t b, std::uint8_t kb)
    {
        std::size_t k;
        if (!pick_permit(b, k, "permit split()"))
            return;
        const std::size_t part = decode_split(kb, pool_[k].count);
        note("#%d permit %zu (sem%d, %zu).split(%zu)", step_, k, pool_[k].sem, pool_[k].count, part);
        std::unique_ptr<semaphore::permit> split;
        bool threw = false;
        try
        {
            split = std::make_unique<semaphore::permit>(pool_[k].object->split(part));
        }
        catch (const std::invalid_argument&)
        {
            threw = true;
        }
        const bool want = part > pool_[k].count;
        subject_ = pool_[k].sem;
        outcome_ = want;
        FUZZ_CHECK(threw == want, "split(%zu) of a permit holding %zu %s, the model expects it %s", part,
                   pool_[k].count, threw ? "threw" : "did not throw",
                   want ? "to throw std::invalid_argument" : "to succeed");
        if (!threw)
        {
            pool_[k].count -= part;
            pool_.push_back(held_permit{std::move(split), pool_[k].sem, part});
            note("    permit %zu (sem%d) now holds %zu", pool_.size() - 1, pool_[k].sem, part);
            check_permit(pool_.size() - 1, "split() (the new permit)");
        }
        check_permit(k, "split()");
    }

    void permit_merge(std::uint8_t b, std::uint8_t other)
    {
        std::size_t i;
        std::size_t j;
        if (!pick_permit(b, i, "permit merge()") || !pick_permit(other, j, "permit merge()"))
            return;
        note("#%d permit %zu (sem%d, %zu).merge(permit %zu (sem%d, %zu))", step_, i, pool_[i].sem,
             pool_[i].count, j, pool_[j].sem, pool_[j].count);
        const bool want = pool_[i].sem != pool_[j].sem;
        subject_ = pool_[i].sem;
        outcome_ = want;
        // Only unpaired releases on an unbounded semaphore make counts this large; what merge does
        // when the sum does not fit a size_t is not documented.
        if (!want && i != j && pool_[i].count > size_max - pool_[j].count)
        {
            note("    skipped: the sum would not fit a size_t");
            return;
        }
        bool threw = false;
        try
        {
            pool_[i].object->merge(std::move(*pool_[j].object));
        }
        catch (const std::invalid_argument&)
        {
            threw = true;
        }
        FUZZ_CHECK(threw == want, "merge() %s, the model expects it %s", threw ? "threw" : "did not throw",
                   want ? "to throw std::invalid_argument (another semaphore)" : "to succeed");
        // Merging a permit into itself changes nothing.
        if (!want && i != j)
        {
            pool_[i].count += pool_[j].count;
            pool_[j].count = 0;
        }
        check_permit(i, "merge() (the target)");
        check_permit(j, "merge() (the source)");
    }

    void permit_move_assign(std::uint8_t b, std::uint8_t source)
    {
        std::size_t i;
        std::size_t j;
        if (!pick_permit(b, i, "permit move assignment") || !pick_permit(source, j, "permit move assignment"))
            return;
        note("#%d permit %zu (sem%d, %zu) = move(permit %zu (sem%d, %zu))", step_, i, pool_[i].sem,
             pool_[i].count, j, pool_[j].sem, pool_[j].count);
        subject_ = pool_[i].sem;
        outcome_ = pool_[i].count != 0;
        semaphore::permit& target = *pool_[i].object;
        semaphore::permit& from = *pool_[j].object;
        target = std::move(from);
        // Gives back what the target held first, then takes over; assigning to itself changes
        // nothing. The source holds nothing and still names its semaphore.
        if (i != j)
        {
            const int s = pool_[i].sem;
            const std::size_t n = pool_[i].count;
            model_[s].permits -= n;
            model_give_back(s, n);
            pool_[i].sem = pool_[j].sem;
            pool_[i].count = std::exchange(pool_[j].count, 0);
        }
        check_permit(i, "move assignment (the target)");
        check_permit(j, "move assignment (the source)");
    }

    void check_permit(std::size_t k, const char* when)
    {
        const held_permit& p = pool_[k];
        FUZZ_CHECK(p.object->count() == p.count, "%s: permit %zu holds %zu, the model expects %zu", when, k,
                   p.object->count(), p.count);
        FUZZ_CHECK(bool(*p.object) == (p.count != 0),
                   "%s: permit %zu: operator bool is %d for a count of %zu", when, k, int(bool(*p.object)),
                   p.count);
        FUZZ_CHECK(&p.object->semaphore() == &*sem_[p.sem], "%s: permit %zu does not name sem%d", when, k,
                   p.sem);
    }

    // ----- the executor -----------------------------------------------------------------------

    void run_one()
    {
        note("#%d run one handler", step_);
        running_ = true;
        invoked_ = 0;
        const bool ran = ctx_->run_one();
        running_ = false;
        if (ran)
            FUZZ_CHECK(invoked_ == 1, "a function from the executor invoked no completion handler");
        else
            FUZZ_CHECK(expected_.empty(), "no handler queued, the model expects acquire #%d to complete",
                       expected_.front());
    }

    void run_all()
    {
        note("#%d run all handlers", step_);
        // Handlers here post nothing, so this ends.
        while (ctx_->queued() != 0)
        {
            running_ = true;
            invoked_ = 0;
            ctx_->run_one();
            running_ = false;
            FUZZ_CHECK(invoked_ == 1, "a function from the executor invoked no completion handler");
        }
        FUZZ_CHECK(expected_.empty(), "no handler queued, the model expects acquire #%d to complete",
                   expected_.front());
    }

    // ----- destruction ------------------------------------------------------------------------

    // The semaphore must outlive every permit that names it. Before it is destroyed, the fuzzer
    // runs the queued completions that carry its permits and gives back the permits it holds;
    // those may grant more permit acquires, hence the loop. Aborted permit acquires completed by
    // the destructor itself carry an empty permit naming the dead semaphore: their handler drops it.
    void settle_permits(int s)
    {
        for (;;)
        {
            const auto pending = [&] {
                for (const int id : expected_)
                {
                    const acquire_record& a = acquires_[std::size_t(id)];
                    if (a.sem == s && a.to_permit && live(a))
                        return true;
                }
                return false;
            };
            while (pending())
                run_one();
            bool gave_back = false;
            for (std::size_t k = pool_.size(); k-- > 0;)
            {
                if (pool_[k].sem == s)
                {
                    note("    permit %zu (sem%d, %zu) destroyed before its semaphore", k, s, pool_[k].count);
                    destroy_permit(k);
                    gave_back = true;
                }
            }
            if (!gave_back)
                return;
        }
    }

    void recreate(int s, std::uint8_t initial, std::uint8_t shape_byte)
    {
        note("#%d sem%d destroyed", step_, s);
        settle_permits(s);
        sem_[s].reset();
        model_abort_all(s, code_aborted, false);
        create(s, decode_initial(initial), shape_byte);
    }

    // ----- endings ----------------------------------------------------------------------------

    // Cancels everything, runs every handler, gives every permit back, and checks that nothing is
    // left anywhere.
    void finish_by_draining()
    {
        note("end: cancel both semaphores, run everything, give every permit back");
        for (int s = 0; s < 2; ++s)
            cancel(s);
        check("the final cancel()");
        run_all();
        check("the final run");
        for (std::size_t k = pool_.size(); k-- > 0;)
            destroy_permit(k); // nobody waits: this posts nothing
        check("giving every permit back");
        for (int s = 0; s < 2; ++s)
            fill_up(s);
        check("filling up");
        FUZZ_CHECK(work_ == 0, "%ld units of work outstanding with nothing pending", work_);
        for (std::size_t id = 0; id < acquires_.size(); ++id)
            FUZZ_CHECK(acquires_[id].state == acquire_state::done, "acquire #%zu never completed", id);
        for (int s = 0; s < 2; ++s)
        {
            const sem_model& m = model_[s];
            check_ledger(s, "the end", true);
            const std::uint64_t out = m.held + m.forgotten + m.removed + (m.reduced - m.debt) + m.dropped;
            FUZZ_CHECK(std::uint64_t(sem_[s]->available()) == m.initial + m.released + m.added - out,
                       "sem%d: available() %zu != initial + released + added - held - forgotten - removed "
                       "- reduced + debt - dropped",
                       s, sem_[s]->available());
        }
        for (int s = 0; s < 2; ++s)
            sem_[s].reset();
        FUZZ_CHECK(ctx_->queued() == 0, "destroying semaphores without waiters posted %zu functions",
                   ctx_->queued());
        signals_.clear();
        ctx_.reset();
        finish_common();
    }

    // Destroys the context while acquires wait and handlers are queued: nothing may be invoked,
    // every handler must be destroyed, the permits that queued permit completions carry come back,
    // and the semaphores outlive their context.
    void finish_by_shutdown()
    {
        note("end: destroy the context with %zu queued handlers", expected_.size());
        for (int s = 0; s < 2; ++s)
        {
            sem_model& m = model_[s];
            // Shutdown takes the waiters out as cancel() would, minus the invocation; what they had
            // collected pays the debt, then returns to the counter (test/semaphore.cpp,
            // context_shutdown_destroys_pending_handlers_without_invoking_them).
            std::size_t returned = 0;
            for (const int id : m.queue)
            {
                acquire_record& a = acquires_[std::size_t(id)];
                returned += a.collected;
                m.collected -= a.collected;
                a.collected = 0;
                a.state = acquire_state::destroyed;
            }
            m.queue.clear();
            hand_off(s, returned);
        }
        // Then the queued handlers are destroyed, oldest first: a plain grant's permits are lost
        // with it, a permit grant's permit gives them back.
        for (const int id : expected_)
        {
            acquire_record& a = acquires_[std::size_t(id)];
            if (a.codes == code_success && live(a))
            {
                sem_model& m = model_[a.sem];
                if (a.to_permit)
                {
                    m.granted_permits -= a.n;
                    model_give_back(a.sem, a.n);
                }
                else
                {
                    m.granted -= a.n;
                    m.lost += a.n;
                }
            }
            a.state = acquire_state::destroyed;
        }
        expected_.clear();
        ctx_.reset(); // running_ is false: a handler invoked now fails the check in completed()
        for (int s = 0; s < 2; ++s)
        {
            FUZZ_CHECK(sem_[s]->waiting() == 0, "sem%d: waiting() is %zu after context shutdown", s,
                       sem_[s]->waiting());
            FUZZ_CHECK(sem_[s]->available() == model_[s].counter,
                       "sem%d: available() is %zu after context shutdown, the model expects %zu", s,
                       sem_[s]->available(), model_[s].counter);
            check_ledger(s, "context shutdown", true);
        }
        // Permits may outlive the context too; nobody waits, so giving them back posts nothing.
        for (std::size_t k = pool_.size(); k-- > 0;)
            destroy_permit(k);
        for (int s = 0; s < 2; ++s)
        {
            FUZZ_CHECK(sem_[s]->available() == model_[s].counter,
                       "sem%d: available() is %zu once every permit is back, the model expects %zu", s,
                       sem_[s]->available(), model_[s].counter);
            check_ledger(s, "giving every permit back after shutdown", true);
            fill_up(s);
            FUZZ_CHECK(sem_[s]->available() == model_[s].counter,
                       "sem%d: available() is %zu once filled up, the model expects %zu", s,
                       sem_[s]->available(), model_[s].counter);
            check_ledger(s, "filling up after shutdown", true);
        }
        for (int s = 0; s < 2; ++s)
            sem_[s].reset();
        signals_.clear();
        finish_common();
    }

    // With nobody waiting, plain releases of exactly the room the model sees must fit, and one
    // permit more must not: the check after every operation only shows room the semaphore
    // overstates, this shows room it lost (circulation it counts too high). An unbounded semaphore
    // in debt takes two: the first pays the debt, the second fills the counter.
    void fill_up(int s)
    {
        FUZZ_CHECK(model_[s].queue.empty(), "harness: filling up a semaphore that has waiters");
        for (int i = 0; i < 2; ++i)
        {
            const std::size_t room = release_room(s);
            note("end: sem%d.try_release(%zu) to fill it up", s, room);
            const bool released = sem_[s]->try_release(room);
            FUZZ_CHECK(released, "sem%d.try_release(%zu) failed, the model has room for that many", s, room);
            model_release(s, room);
        }
        FUZZ_CHECK(release_room(s) == 0, "model: sem%d has room for %zu more once filled up", s,
                   release_room(s));
        FUZZ_CHECK(!sem_[s]->try_release(1), "sem%d.try_release(1) succeeded once filled up", s);
    }

    void finish_common()
    {
        FUZZ_CHECK(work_ == 0, "%ld units of work outstanding at the end", work_);
        FUZZ_CHECK(token_.use_count() == 1, "%ld handler copies were never destroyed",
                   token_.use_count() - 1);
    }

    // ----- the model --------------------------------------------------------------------------

    bool live(const acquire_record& a) const { return model_[a.sem].gen == a.gen; }

    void post(int id, unsigned codes)
    {
        acquire_record& a = acquires_[std::size_t(id)];
        a.state = acquire_state::posted;
        a.codes = codes;
        expected_.push_back(id);
        if (codes == code_success)
        {
            sem_model& m = model_[a.sem];
            (a.to_permit ? m.granted_permits : m.granted) += a.n;
        }
        note("    model: acquire #%d decided, %s", id, code_names(codes));
    }

    // Permits in circulation (bounded semaphores): the counter, what queued acquires collected,
    // what permit objects hold (also those in queued completions), minus the debt. Negative while
    // the debt is larger than that; computed modulo 2^64 and read as signed.
    std::uint64_t circulation(int s) const
    {
        const sem_model& m = model_[s];
        return std::uint64_t(m.counter) + m.collected + m.granted_permits + m.permits - m.debt;
    }

    // The most a plain release may put in: up to the bound, or up to max_permits in the counter.
    std::size_t release_room(int s) const
    {
        const sem_model& m = model_[s];
        if (!m.bounded)
            return max_permits - m.counter;
        return std::size_t(std::uint64_t(m.bound) - circulation(s));
    }

    void model_acquire(int id)
    {
        acquire_record& a = acquires_[std::size_t(id)];
        sem_model& m = model_[a.sem];
        // README: n > capacity() fails with too_many_permits, also when closed; nothing is queued.
        if (a.n > m.bound)
            return post(id, code_too_many);
        if (m.closed)
            return post(id, code_closed);
        if (a.n == 0)
            return post(id, code_success); // even behind waiters, even in debt
        if (m.queue.empty() && m.debt == 0 && m.counter >= a.n)
        {
            m.counter -= a.n; // taken at initiation; the handler is only posted
            return post(id, code_success);
        }
        // Waits. Permits in the counter are only possible with nobody queued and no debt; the new
        // (head) waiter collects them, so none are left floating while someone waits.
        a.collected = m.counter;
        a.missing = a.n - m.counter;
        m.collected += m.counter;
        m.counter = 0;
        a.state = acquire_state::queued;
        m.queue.push_back(id);
        note("    model: acquire #%d queued, %zu collected, %zu missing", id, a.collected, a.missing);
    }

    bool model_try_acquire(int s, std::size_t n, bool to_permit)
    {
        sem_model& m = model_[s];
        if (m.closed)
            return false;
        if (n == 0)
            return true;
        if (!m.queue.empty() || m.debt != 0 || m.counter < n)
            return false;
        m.counter -= n;
        (to_permit ? m.permits : m.held) += n;
        return true;
    }

    // Returns true if release(n) must fail (and then changes nothing).
    bool model_release(int s, std::size_t n)
    {
        // Unbounded: "would push the counter past max_permits", checked against the counter before
        // any hand-off, as test/semaphore.cpp (release_overflow_throws_and_changes_nothing) pins
        // down. Bounded: circulation would pass the bound.
        if (n > release_room(s))
            return true;
        model_[s].released += n;
        hand_off(s, n);
        return false;
    }

    // A permit object gives n back: never fails, circulation unchanged. An unbounded counter that
    // is full already (after unpaired releases) takes what fits and the rest is dropped.
    void model_give_back(int s, std::size_t n)
    {
        sem_model& m = model_[s];
        if (!m.bounded)
        {
            const std::size_t fit = n < max_permits - m.counter ? n : max_permits - m.counter;
            m.dropped += n - fit;
            n = fit;
        }
        hand_off(s, n);
    }

    // Returns true if add_permits(n) must throw std::overflow_error (and then changes nothing).
    bool model_add(int s, std::size_t n)
    {
        sem_model& m = model_[s];
        if (m.bounded ? n > max_bound - m.bound : n > max_permits - m.counter)
            return true;
        if (m.bounded)
            m.bound += n;
        m.added += n;
        hand_off(s, n);
        return false;
    }

    std::size_t model_forget(int s, std::size_t n)
    {
        sem_model& m = model_[s];
        const std::size_t taken = n < m.counter ? n : m.counter;
        m.counter -= taken;
        if (m.bounded)
            m.bound -= taken;
        m.removed += taken;
        return taken;
    }

    reduce_outcome model_reduce(int s, std::size_t n)
    {
        sem_model& m = model_[s];
        if (n > m.bound) // capacity(): max_permits without a bound
            return reduce_outcome::invalid_argument;
        const std::size_t taken = n < m.counter ? n : m.counter;
        if (n - taken > max_permits - m.debt)
            return reduce_outcome::overflow_error;
        m.counter -= taken;
        m.debt += n - taken;
        m.reduced += n;
        if (taken != n)
            note("    model: %zu taken from the counter, %zu owed", taken, m.debt);
        if (!m.bounded)
            return reduce_outcome::done;
        m.bound -= n;
        // Queued acquires asking for more than the new bound fail, oldest first, and hand on what
        // they had collected (to the debt first) once they are all out.
        std::size_t returned = 0;
        for (auto it = m.queue.begin(); it != m.queue.end();)
        {
            acquire_record& a = acquires_[std::size_t(*it)];
            if (a.n <= m.bound)
            {
                ++it;
                continue;
            }
            const int id = *it;
            it = m.queue.erase(it);
            returned += a.collected;
            m.collected -= a.collected;
            a.collected = 0;
            a.missing = 0;
            post(id, code_too_many);
        }
        hand_off(s, returned);
        return reduce_outcome::done;
    }

    // Permits flowing back: they pay the debt first, then go to the oldest waiters; the first left
    // partly served stops the hand-off, and what nobody needs goes to the counter.
    void hand_off(int s, std::size_t n)
    {
        sem_model& m = model_[s];
        if (m.debt != 0 && n != 0)
        {
            const std::size_t paid = n < m.debt ? n : m.debt;
            m.debt -= paid;
            n -= paid;
            note("    model: %zu paid to the debt, %zu owed", paid, m.debt);
        }
        while (n != 0 && !m.queue.empty())
        {
            acquire_record& head = acquires_[std::size_t(m.queue.front())];
            const std::size_t take = n < head.missing ? n : head.missing;
            head.missing -= take;
            head.collected += take;
            m.collected += take;
            n -= take;
            if (head.missing != 0)
                break;
            const int id = m.queue.front();
            m.queue.pop_front();
            m.collected -= head.collected;
            head.collected = 0; // now the caller's, through the handler
            post(id, code_success);
        }
        m.counter += n;
    }

    void model_emit(int id, asio::cancellation_type_t type)
    {
        using ct = asio::cancellation_type;
        if (!(type & (ct::terminal | ct::partial | ct::total)))
            return;
        acquire_record& a = acquires_[std::size_t(id)];
        if (a.state != acquire_state::queued)
            return; // decided already: the grant (or earlier abort) stands
        sem_model& m = model_[a.sem];
        for (auto it = m.queue.begin(); it != m.queue.end(); ++it)
        {
            if (*it == id)
            {
                m.queue.erase(it);
                break;
            }
        }
        const std::size_t collected = a.collected;
        m.collected -= collected;
        a.collected = 0;
        a.missing = 0;
        // The aborted waiter completes first, then those its permits satisfy. The documentation
        // does not order completions within one call; this is the natural reading of "leaves the
        // queue, gives what it had collected to the waiters behind it".
        post(id, code_aborted);
        hand_off(a.sem, collected);
    }

    // cancel(), close() and destruction: every waiter completes with `code`, oldest first. Their
    // collected permits pay the debt and return to the counter, unless the semaphore goes away.
    std::size_t model_abort_all(int s, unsigned code, bool keep = true)
    {
        sem_model& m = model_[s];
        const std::size_t count = m.queue.size();
        std::size_t returned = 0;
        for (const int id : m.queue)
        {
            acquire_record& a = acquires_[std::size_t(id)];
            returned += a.collected;
            m.collected -= a.collected;
            a.collected = 0;
            a.missing = 0;
            post(id, code);
        }
        m.queue.clear();
        if (keep)
            hand_off(s, returned);
        return count;
    }

    // ----- comparison -------------------------------------------------------------------------

    void check(const char* when)
    {
        std::size_t waiting = 0;
        for (int s = 0; s < 2; ++s)
        {
            const sem_model& m = model_[s];
            semaphore& sem = *sem_[s];
            FUZZ_CHECK(m.queue.empty() || m.counter == 0,
                       "model: permits in the counter while someone waits");
            FUZZ_CHECK(m.debt == 0 || m.counter == 0, "model: permits in the counter while in debt");
            FUZZ_CHECK(!m.bounded || std::int64_t(circulation(s)) <= std::int64_t(m.bound),
                       "model: sem%d has %lld permits in circulation for a bound of %zu", s,
                       (long long)circulation(s), m.bound);
            FUZZ_CHECK(sem.available() == m.counter, "%s: sem%d.available() is %zu, the model expects %zu",
                       when, s, sem.available(), m.counter);
            FUZZ_CHECK(sem.waiting() == m.queue.size(), "%s: sem%d.waiting() is %zu, the model expects %zu",
                       when, s, sem.waiting(), m.queue.size());
            FUZZ_CHECK(sem.is_closed() == m.closed, "%s: sem%d.is_closed() is %d, the model expects %d", when,
                       s, int(sem.is_closed()), int(m.closed));
            FUZZ_CHECK(sem.capacity() == m.bound, "%s: sem%d.capacity() is %zu, the model expects %zu", when,
                       s, sem.capacity(), m.bound);
            // The bound, observed: one permit more than the room the model sees must not fit. (If
            // it did, the release went through and the checks after this one fail.)
            const std::size_t room = release_room(s);
            FUZZ_CHECK(!sem.try_release(room + 1),
                       "%s: sem%d.try_release(%zu) succeeded, the model has room for %zu more permits", when,
                       s, room + 1, room);
            check_ledger(s, when);
            waiting += m.queue.size();
        }
        if (pool_.size() <= 16)
            for (std::size_t k = 0; k < pool_.size(); ++k)
                check_permit(k, when);
        FUZZ_CHECK(ctx_->queued() == expected_.size(), "%s: %zu handlers queued, the model expects %zu", when,
                   ctx_->queued(), expected_.size());
        // Each waiting acquire keeps work outstanding; beyond that, work may only be held by
        // functions already queued (none of which the fuzzer has run yet).
        FUZZ_CHECK(work_ >= long(waiting), "%s: %ld units of work outstanding for %zu waiting acquires", when,
                   work_, waiting);
        FUZZ_CHECK(work_ <= long(waiting + ctx_->queued()),
                   "%s: %ld units of work outstanding for %zu waiting acquires and %zu queued handlers", when,
                   work_, waiting, ctx_->queued());
    }

    // Conservation of permits, per semaphore incarnation:
    //   initial + released + added == available() + collected + granted + granted_permits + held
    //       + permits + lost + forgotten + removed + (reduced - debt) + dropped
    // where `collected` is what queued waiters have collected so far, `granted` and
    // `granted_permits` what decided but not yet invoked successful acquires hold, `held` what the
    // caller received from plain acquires, `permits` what the pool's permit objects hold, `lost`
    // what went with plain handlers destroyed at context shutdown, `forgotten` what permit::forget
    // took, `removed` what forget_permits took, `reduced - debt` what reduce_permits has taken so
    // far, and `dropped` what did not fit an unbounded counter. Failed acquires hold nothing.
    //
    // The model keeps the sums as running totals, since summing the queues after every operation
    // makes long inputs quadratic; `recount` (at the end, and whenever the queues are short) checks
    // them against the individual acquires and permits.
    void check_ledger(int s, const char* when, bool recount = false)
    {
        const sem_model& m = model_[s];
        if (recount || m.queue.size() + expected_.size() + pool_.size() <= 12)
        {
            std::uint64_t collected = 0;
            for (const int id : m.queue)
                collected += acquires_[std::size_t(id)].collected;
            std::uint64_t granted = 0;
            std::uint64_t granted_permits = 0;
            for (const int id : expected_)
            {
                const acquire_record& a = acquires_[std::size_t(id)];
                if (a.sem == s && live(a) && a.codes == code_success)
                    (a.to_permit ? granted_permits : granted) += a.n;
            }
            std::uint64_t permits = 0;
            for (const held_permit& p : pool_)
                if (p.sem == s)
                    permits += p.count;
            FUZZ_CHECK(collected == m.collected && granted == m.granted &&
                           granted_permits == m.granted_permits && permits == m.permits,
                       "model: sem%d running sums collected %llu, granted %llu, granted_permits %llu, "
                       "permits %llu; recounted %llu, %llu, %llu, %llu",
                       s, (unsigned long long)m.collected, (unsigned long long)m.granted,
                       (unsigned long long)m.granted_permits, (unsigned long long)m.permits,
                       (unsigned long long)collected, (unsigned long long)granted,
                       (unsigned long long)granted_permits, (unsigned long long)permits);
        }
        const std::uint64_t in = m.initial + m.released + m.added;
        const std::uint64_t out = std::uint64_t(sem_[s]->available()) + m.collected + m.granted +
                                  m.granted_permits + m.held + m.permits + m.lost + m.forgotten + m.removed +
                                  (m.reduced - m.debt) + m.dropped;
        FUZZ_CHECK(in == out,
                   "%s: sem%d permits not conserved: initial %llu + released %llu + added %llu != available "
                   "%zu + collected %llu + granted %llu + granted_permits %llu + held %llu + permits %llu + "
                   "lost %llu + forgotten %llu + removed %llu + reduced %llu - debt %llu + dropped %llu",
                   when, s, (unsigned long long)m.initial, (unsigned long long)m.released,
                   (unsigned long long)m.added, sem_[s]->available(), (unsigned long long)m.collected,
                   (unsigned long long)m.granted, (unsigned long long)m.granted_permits,
                   (unsigned long long)m.held, (unsigned long long)m.permits, (unsigned long long)m.lost,
                   (unsigned long long)m.forgotten, (unsigned long long)m.removed,
                   (unsigned long long)m.reduced, (unsigned long long)m.debt, (unsigned long long)m.dropped);
    }

    // Declaration order is destruction order in reverse: the permits go first, then the
    // semaphores, the signals and the context (the endings destroy them explicitly anyway).
    long work_ = 0;
    std::unique_ptr<manual_context> ctx_;
    std::vector<std::unique_ptr<asio::cancellation_signal>> signals_;
    std::vector<int> signal_owner_; // acquire id per signal
    std::optional<semaphore> sem_[2];
    std::vector<held_permit> pool_;
    sem_model model_[2];
    std::vector<acquire_record> acquires_;
    std::deque<int> expected_; // acquire ids in the order their handlers must run
    std::shared_ptr<int> token_ = std::make_shared<int>(0); // every handler holds a copy
    bool running_ = false; // true only while the fuzzer runs a queued function
    int invoked_ = 0;      // handlers invoked by the function being run
    int step_ = 0;
    int subject_ = 0;      // the semaphore the operation being run acts on, for the features
    bool outcome_ = false; // and its outcome, in the sense each operation gives it
};

} // namespace

void asio_sync::fuzz::run_input(const std::uint8_t* data, std::size_t size)
{
    trace.clear();
    harness h;
    h.run(reader{data, size});
}
