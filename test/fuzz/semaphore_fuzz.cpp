// libFuzzer target: runs byte-decoded sequences of operations on one or two
// asio_sync::basic_semaphore objects, single-threaded on a manual executor, and compares every
// observable result with a sequential model written from the documented semantics (README.md and
// include/asio_sync/semaphore.hpp), not from the implementation.
//
// With -DASIO_SYNC_FUZZ_REPLAY the file builds as a plain program instead: it runs the inputs named
// on its command line (files, or directories of files) through the same checks, so the corpus also
// runs with g++ and in the ordinary test build. With ASIO_SYNC_FUZZ_TRACE=1 in the environment it
// prints each input's operation trace.
//
// Input format: byte 0 holds flags (bit 0: end by shutting the context down instead of cancelling
// and draining), bytes 1 and 2 the initial permits of the two semaphores, then one operation per
// opcode byte, each followed by its parameter bytes (missing bytes read as 0).
//
// The seed corpus in corpus/ is the output of a fuzzing run merged with `-merge=1 -use_counters=0`
// (edges only, so that it stays a few dozen files); refresh it the same way when the input format
// changes, since old seeds then decode to different operations.

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

#include <cstdarg>
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

#if defined(ASIO_SYNC_FUZZ_REPLAY)
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#endif

namespace asio = boost::asio;
using boost::system::error_code;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

// ---------------------------------------------------------------------------------------------
// Failure reporting. With tracing on, every operation appends a line to the trace, so a mismatch
// can be read as a story rather than reconstructed from the input bytes. Formatting the trace
// costs a fifth of the fuzzer's speed, so it is off while fuzzing: the harness is deterministic,
// and a mismatch reruns the input with tracing on to produce it.

std::string trace;
bool tracing = false;
bool print_trace_always = false;
const std::uint8_t* input_data = nullptr; // the input being run, for the rerun
std::size_t input_size = 0;
const char* input_name = nullptr; // the file being replayed, if any

void run_input(const std::uint8_t* data, std::size_t size);

void vappend(const char* format, std::va_list args)
{
    char line[512];
    std::vsnprintf(line, sizeof line, format, args);
    trace += line;
    trace += '\n';
}

__attribute__((format(printf, 1, 2))) void note(const char* format, ...)
{
    if (!tracing)
        return;
    std::va_list args;
    va_start(args, format);
    vappend(format, args);
    va_end(args);
}

[[noreturn]] __attribute__((format(printf, 1, 2))) void fail(const char* format, ...)
{
    const bool traced = tracing;
    tracing = true;
    std::fflush(stdout);
    std::va_list args;
    va_start(args, format);
    trace += "MISMATCH: ";
    vappend(format, args);
    va_end(args);
    if (!traced)
    {
        // The objects of the failed run are abandoned, not destroyed: the rerun builds its own.
        std::fprintf(stderr, "semaphore_fuzz: %ssemaphore_fuzz: rerunning the input with the trace on\n",
                     trace.c_str());
        run_input(input_data, input_size);
        std::fprintf(stderr, "semaphore_fuzz: the rerun did not fail: the harness is not deterministic\n");
        std::abort();
    }
    std::fprintf(stderr, "semaphore_fuzz: operation trace:\n%ssemaphore_fuzz: mismatch with the model%s%s\n",
                 trace.c_str(), input_name ? ", input " : "", input_name ? input_name : "");
    std::fflush(stderr);
    // Abort rather than throw: libFuzzer must see a crash, and the code under test must not get a
    // chance to swallow the failure.
    std::abort();
}

#define FUZZ_CHECK(condition, ...)                                                                           \
    do                                                                                                       \
    {                                                                                                        \
        if (!(condition))                                                                                    \
            fail(__VA_ARGS__);                                                                               \
    } while (false)

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
constexpr std::size_t size_max = std::numeric_limits<std::size_t>::max();

// ---------------------------------------------------------------------------------------------
// The model's vocabulary.

// Completion codes as bits, so an expectation can allow more than one: the documentation does not
// say which of too_many_permits and closed wins for `n > max_permits` on a closed semaphore.
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
    int sem;       // 0 or 1
    unsigned gen;  // which incarnation of that semaphore (destroy-and-recreate starts a new one)
    std::size_t n; // permits asked for
    std::size_t missing = 0;
    std::size_t collected = 0; // permits handed to it while queued, not yet its caller's
    acquire_state state = acquire_state::posted;
    unsigned codes = 0; // the completion codes allowed once decided
};

// One semaphore as the specification describes it: a counter, a FIFO of waiters, a closed flag,
// and the figures of the permit ledger.
struct sem_model
{
    unsigned gen = 0;
    std::size_t counter = 0;
    bool closed = false;
    std::deque<int> queue; // acquire ids, oldest first

    // Permit ledger, in arithmetic modulo 2^64: the identity below holds over the integers, hence
    // modulo 2^64, and any discrepancy smaller than 2^64 still shows. Huge releases may wrap.
    std::uint64_t initial = 0;   // permits at construction
    std::uint64_t released = 0;  // sum of n over release(n) calls that did not throw
    std::uint64_t collected = 0; // held by queued waiters, collected so far
    std::uint64_t granted = 0;   // held by successful acquires whose handler has not run yet
    std::uint64_t held = 0;      // the caller's: successful try_acquire, and handlers that ran
    std::uint64_t lost = 0;      // granted, but the handler was destroyed at context shutdown
};

// Input bytes; reads past the end give 0, so every input decodes to something.
struct reader
{
    const std::uint8_t* data;
    std::size_t size;

    bool empty() const noexcept { return size == 0; }

    std::uint8_t byte() noexcept
    {
        if (size == 0)
            return 0;
        --size;
        return *data++;
    }
};

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
        create(0, decode_initial(in.byte()));
        create(1, decode_initial(in.byte()));
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

    // Invoked by every completion handler.
    void completed(int id, const error_code& ec)
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
            note("    ran handler #%d: %s", id, ec.message().c_str());
        if (code == code_success && live(a))
        {
            model_[a.sem].granted -= a.n;
            model_[a.sem].held += a.n;
        }
    }

private:
    // ----- operations -------------------------------------------------------------------------

    void step(reader& in)
    {
        const std::uint8_t op = in.byte();
        const std::uint8_t arg = in.byte();
        const int s = arg >> 7; // which semaphore
        switch (op % 16)
        {
        case 0:
        case 1:
        case 2:
            async_acquire(s, decode_count(arg), false);
            break;
        case 3:
        case 4:
            async_acquire(s, decode_count(arg), true);
            break;
        case 5:
            try_acquire(s, decode_count(arg));
            break;
        case 6:
        case 7:
            release(s, arg % 9);
            break;
        case 8:
            release(s, big_release(s, arg));
            break;
        case 9:
        case 10:
            emit(arg, in.byte());
            break;
        case 11:
            cancel(s);
            break;
        case 12:
            close(s);
            break;
        case 13:
            run_one();
            break;
        case 14:
            run_all();
            break;
        default:
            recreate(s, decode_initial(in.byte()));
            break;
        }
        check("after the operation");
    }

    // Release amounts around the overflow boundary, relative to the counter the model predicts.
    std::size_t big_release(int s, std::uint8_t arg) const
    {
        const std::size_t room = max_permits - model_[s].counter;
        switch ((arg >> 3) % 8)
        {
        case 0:
            return room; // fills the counter exactly
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
        default:
            return model_[s].counter;
        }
    }

    void create(int s, std::size_t initial)
    {
        // Both constructors: from an executor, and from an execution context.
        if (s == 0)
            sem_[s].emplace(ctx_->get_executor(), initial);
        else
            sem_[s].emplace(*ctx_, initial);
        sem_model& m = model_[s];
        const unsigned gen = m.gen + 1;
        m = sem_model();
        m.gen = gen;
        m.counter = initial;
        m.initial = initial;
        note("sem%d created with %zu permits (incarnation %u)", s, initial, gen);
        FUZZ_CHECK(sem_[s]->get_executor() == ctx_->get_executor(),
                   "get_executor() is not the given executor");
    }

    auto handler(int id)
    {
        return [this, id, token = token_](error_code ec) { completed(id, ec); };
    }

    void async_acquire(int s, std::size_t n, bool with_signal)
    {
        const int id = int(acquires_.size());
        acquires_.push_back(acquire_record{s, model_[s].gen, n});
        if (with_signal)
        {
            signals_.push_back(std::make_unique<asio::cancellation_signal>());
            signal_owner_.push_back(id);
            note("#%d sem%d.async_acquire(%zu) with signal %zu -> acquire #%d", step_, s, n,
                 signals_.size() - 1, id);
            sem_[s]->async_acquire(n, asio::bind_cancellation_slot(signals_.back()->slot(), handler(id)));
        }
        else
        {
            note("#%d sem%d.async_acquire(%zu) -> acquire #%d", step_, s, n, id);
            sem_[s]->async_acquire(n, handler(id));
        }
        model_acquire(id);
    }

    void try_acquire(int s, std::size_t n)
    {
        note("#%d sem%d.try_acquire(%zu)", step_, s, n);
        const bool got = sem_[s]->try_acquire(n);
        const bool want = model_try_acquire(s, n);
        FUZZ_CHECK(got == want, "try_acquire(%zu) returned %s, the model expects %s", n,
                   got ? "true" : "false", want ? "true" : "false");
    }

    void release(int s, std::size_t n)
    {
        // Noted before the call, so that a failure inside it shows in the trace.
        note("#%d sem%d.release(%zu)", step_, s, n);
        bool threw = false;
        try
        {
            sem_[s]->release(n);
        }
        catch (const std::overflow_error&)
        {
            threw = true;
        }
        const bool want = model_release(s, n);
        FUZZ_CHECK(threw == want, "release(%zu) %s, the model expects it %s", n,
                   threw ? "threw" : "did not throw", want ? "to throw std::overflow_error" : "to succeed");
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

    void recreate(int s, std::size_t initial)
    {
        note("#%d sem%d destroyed", step_, s);
        sem_[s].reset();
        model_abort_all(s, code_aborted, false);
        create(s, initial);
    }

    // ----- endings ----------------------------------------------------------------------------

    // Cancels everything, runs every handler, and checks that nothing is left anywhere.
    void finish_by_draining()
    {
        note("end: cancel both semaphores, run everything");
        for (int s = 0; s < 2; ++s)
            cancel(s);
        check("the final cancel()");
        run_all();
        check("the final run");
        FUZZ_CHECK(work_ == 0, "%ld units of work outstanding with nothing pending", work_);
        for (std::size_t id = 0; id < acquires_.size(); ++id)
            FUZZ_CHECK(acquires_[id].state == acquire_state::done, "acquire #%zu never completed", id);
        for (int s = 0; s < 2; ++s)
        {
            const sem_model& m = model_[s];
            check_ledger(s, "the end", true);
            FUZZ_CHECK(std::uint64_t(sem_[s]->available()) == m.initial + m.released - m.held,
                       "sem%d: available() %zu != initial + released - held", s, sem_[s]->available());
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
    // every handler must be destroyed, and the semaphores outlive their context.
    void finish_by_shutdown()
    {
        note("end: destroy the context with %zu queued handlers", expected_.size());
        for (int s = 0; s < 2; ++s)
        {
            sem_model& m = model_[s];
            // Shutdown takes the waiters out as cancel() would, minus the invocation; what they had
            // collected returns to the counter (test/semaphore.cpp,
            // context_shutdown_destroys_pending_handlers_without_invoking_them).
            for (const int id : m.queue)
            {
                acquire_record& a = acquires_[std::size_t(id)];
                m.counter += a.collected;
                m.collected -= a.collected;
                a.collected = 0;
                a.state = acquire_state::destroyed;
            }
            m.queue.clear();
        }
        for (const int id : expected_)
        {
            acquire_record& a = acquires_[std::size_t(id)];
            if (a.codes == code_success && live(a))
            {
                model_[a.sem].granted -= a.n;
                model_[a.sem].lost += a.n;
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
        for (int s = 0; s < 2; ++s)
            sem_[s].reset();
        signals_.clear();
        finish_common();
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
            model_[a.sem].granted += a.n;
        note("    model: acquire #%d decided, %s", id, code_names(codes));
    }

    void model_acquire(int id)
    {
        acquire_record& a = acquires_[std::size_t(id)];
        sem_model& m = model_[a.sem];
        if (a.n > max_permits)
            return post(id, m.closed ? code_too_many | code_closed : code_too_many);
        if (m.closed)
            return post(id, code_closed);
        if (a.n == 0)
            return post(id, code_success); // even behind waiters
        if (m.queue.empty() && m.counter >= a.n)
        {
            m.counter -= a.n; // taken at initiation; the handler is only posted
            return post(id, code_success);
        }
        // Waits. Permits in the counter are only possible with nobody queued; the new (head) waiter
        // collects them, so none are left floating while someone waits.
        a.collected = m.counter;
        a.missing = a.n - m.counter;
        m.collected += m.counter;
        m.counter = 0;
        a.state = acquire_state::queued;
        m.queue.push_back(id);
        note("    model: acquire #%d queued, %zu collected, %zu missing", id, a.collected, a.missing);
    }

    bool model_try_acquire(int s, std::size_t n)
    {
        sem_model& m = model_[s];
        if (m.closed)
            return false;
        if (n == 0)
            return true;
        if (!m.queue.empty() || m.counter < n)
            return false;
        m.counter -= n;
        m.held += n;
        return true;
    }

    // Returns true if release(n) must throw (and then changes nothing).
    bool model_release(int s, std::size_t n)
    {
        sem_model& m = model_[s];
        // "would push the counter past max_permits": checked against the counter before any
        // hand-off, as test/semaphore.cpp (release_overflow_throws_and_changes_nothing) pins down.
        if (n > max_permits - m.counter)
            return true;
        m.released += n;
        hand_off(s, n);
        return false;
    }

    // Gives n permits to the oldest waiters; the first left partly served stops the hand-off, and
    // what nobody needs goes to the counter.
    void hand_off(int s, std::size_t n)
    {
        sem_model& m = model_[s];
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
    // collected permits return to the counter, unless the semaphore itself goes away.
    std::size_t model_abort_all(int s, unsigned code, bool keep = true)
    {
        sem_model& m = model_[s];
        const std::size_t count = m.queue.size();
        for (const int id : m.queue)
        {
            acquire_record& a = acquires_[std::size_t(id)];
            if (keep)
                m.counter += a.collected;
            m.collected -= a.collected;
            a.collected = 0;
            a.missing = 0;
            post(id, code);
        }
        m.queue.clear();
        return count;
    }

    // ----- comparison -------------------------------------------------------------------------

    void check(const char* when)
    {
        std::size_t waiting = 0;
        for (int s = 0; s < 2; ++s)
        {
            const sem_model& m = model_[s];
            const semaphore& sem = *sem_[s];
            FUZZ_CHECK(m.queue.empty() || m.counter == 0,
                       "model: permits in the counter while someone waits");
            FUZZ_CHECK(sem.available() == m.counter, "%s: sem%d.available() is %zu, the model expects %zu",
                       when, s, sem.available(), m.counter);
            FUZZ_CHECK(sem.waiting() == m.queue.size(), "%s: sem%d.waiting() is %zu, the model expects %zu",
                       when, s, sem.waiting(), m.queue.size());
            FUZZ_CHECK(sem.is_closed() == m.closed, "%s: sem%d.is_closed() is %d, the model expects %d", when,
                       s, int(sem.is_closed()), int(m.closed));
            check_ledger(s, when);
            waiting += m.queue.size();
        }
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
    //   initial + released == available() + collected + granted + held + lost
    // where `collected` is what queued waiters have collected so far, `granted` what decided but
    // not yet invoked successful acquires hold, `held` what the caller received (successful
    // try_acquire and successful handlers that ran) and `lost` what went with handlers destroyed
    // at context shutdown. Aborted and closed acquires hold nothing.
    //
    // The model keeps `collected` and `granted` as running sums, since summing the queues after
    // every operation makes long inputs quadratic; `recount` (at the end, and whenever the queues
    // are short) checks those sums against the individual acquires.
    void check_ledger(int s, const char* when, bool recount = false)
    {
        const sem_model& m = model_[s];
        if (recount || m.queue.size() + expected_.size() <= 8)
        {
            std::uint64_t collected = 0;
            for (const int id : m.queue)
                collected += acquires_[std::size_t(id)].collected;
            std::uint64_t granted = 0;
            for (const int id : expected_)
            {
                const acquire_record& a = acquires_[std::size_t(id)];
                if (a.sem == s && live(a) && a.codes == code_success)
                    granted += a.n;
            }
            FUZZ_CHECK(collected == m.collected && granted == m.granted,
                       "model: sem%d running sums collected %llu, granted %llu; recounted %llu, %llu", s,
                       (unsigned long long)m.collected, (unsigned long long)m.granted,
                       (unsigned long long)collected, (unsigned long long)granted);
        }
        const std::uint64_t have =
            std::uint64_t(sem_[s]->available()) + m.collected + m.granted + m.held + m.lost;
        FUZZ_CHECK(
            m.initial + m.released == have,
            "%s: sem%d permits not conserved: initial %llu + released %llu != available %zu + collected "
            "%llu + granted %llu + held %llu + lost %llu",
            when, s, (unsigned long long)m.initial, (unsigned long long)m.released, sem_[s]->available(),
            (unsigned long long)m.collected, (unsigned long long)m.granted, (unsigned long long)m.held,
            (unsigned long long)m.lost);
    }

    // Declaration order is destruction order in reverse: the context goes after the semaphores and
    // the signals (the endings destroy them explicitly anyway).
    long work_ = 0;
    std::unique_ptr<manual_context> ctx_;
    std::vector<std::unique_ptr<asio::cancellation_signal>> signals_;
    std::vector<int> signal_owner_; // acquire id per signal
    std::optional<semaphore> sem_[2];
    sem_model model_[2];
    std::vector<acquire_record> acquires_;
    std::deque<int> expected_; // acquire ids in the order their handlers must run
    std::shared_ptr<int> token_ = std::make_shared<int>(0); // every handler holds a copy
    bool running_ = false; // true only while the fuzzer runs a queued function
    int invoked_ = 0;      // handlers invoked by the function being run
    int step_ = 0;
};

} // namespace

namespace {

void run_input(const std::uint8_t* data, std::size_t size)
{
    trace.clear();
    harness h;
    h.run(reader{data, size});
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    input_data = data;
    input_size = size;
    tracing = print_trace_always;
    run_input(data, size);
    if (print_trace_always)
        std::fputs(trace.c_str(), stdout);
    return 0;
}

#if defined(ASIO_SYNC_FUZZ_REPLAY)

namespace {

void replay_file(const std::filesystem::path& path)
{
    std::ifstream file(path, std::ios::binary);
    if (!file)
    {
        std::fprintf(stderr, "semaphore_fuzz: cannot read %s\n", path.c_str());
        std::exit(2);
    }
    const std::vector<char> bytes{std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
    if (print_trace_always)
        std::printf("== %s\n", path.c_str());
    input_name = path.c_str();
    LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
    input_name = nullptr;
}

} // namespace

// Runs every input named on the command line (files, or directories of them, in name order).
int main(int argc, char** argv)
{
    const char* env = std::getenv("ASIO_SYNC_FUZZ_TRACE");
    print_trace_always = env && *env && std::string(env) != "0";
    std::size_t count = 0;
    for (int i = 1; i < argc; ++i)
    {
        const std::filesystem::path arg(argv[i]);
        if (std::filesystem::is_directory(arg))
        {
            std::vector<std::filesystem::path> files;
            for (const auto& entry : std::filesystem::directory_iterator(arg))
                if (entry.is_regular_file())
                    files.push_back(entry.path());
            std::sort(files.begin(), files.end());
            for (const auto& file : files)
                replay_file(file);
            count += files.size();
        }
        else
        {
            replay_file(arg);
            ++count;
        }
    }
    std::printf("semaphore_fuzz: %zu inputs replayed, no mismatch\n", count);
    // An empty corpus would make the test pass without checking anything.
    return count == 0 ? 1 : 0;
}

#endif
