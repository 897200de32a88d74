// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

// The leased share, asio_sync::redis::share_semaphore, against its references of the same run: the
// local asio_sync::semaphore (the in-process ceiling) and today's per-acquire
// asio_sync::redis::semaphore, on a redis-server on loopback that this program starts (the tests'
// fixture) and stops at exit. bench/shares runs it and writes bench/results/shares.md and
// shares.png from its JSON output.
//
// - Latency (Google Benchmark rows, one thread, a limit of 4 that nobody else uses): try_acquire +
//   release, and async_acquire + release as a callback chain and as a coroutine loop, on the share
//   and on the local semaphore. The share's rows run with its connection open on the same
//   io_context, after its first share has arrived.
// - Fleets (forked processes, one io_context thread each, each its own connection): every process
//   runs a number of coroutines that loop acquire(1), hold, release. A hold is a steady_timer wait
//   of an exponential duration: a holder of a real server waits for I/O, and a timer neither burns
//   the CPU the other processes need (2 cores for 8 processes) nor stretches when its process is
//   descheduled, as a spin or a post-yield loop would; the timers of one process are served
//   together by one reactor wake-up. Fleet-wide holders are counted in shared memory (an atomic
//   in a MAP_SHARED mapping, added to at every grant and taken from before every release), and
//   the largest count is reported. Pairs count when their release comes before the end. Redis'
//   load is read from INFO commandstats (CONFIG RESETSTAT at the start: every command the fleet
//   sends, with the microseconds Redis spent executing it) and from the CPU time of the
//   redis-server process (/proc); each process' own CPU time from CLOCK_PROCESS_CPUTIME_ID.
// - Fairness: 4 processes, each logging every change of its share on CLOCK_MONOTONIC (shared by
//   the processes) through the share's listener; the times to the fair division are read from the
//   logs.
//
// Options (besides Google Benchmark's): --quick scales every fleet's duration by 0.2; --scale=X by
// X; --hold=yield holds by a loop of co_await post until the hold's end (busy, for comparison).

#include <asio_sync/redis/semaphore.hpp>
#include <asio_sync/redis/share_semaphore.hpp>
#include <asio_sync/semaphore.hpp>

#include <benchmark/benchmark.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <new>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "support/redis_bench.hpp"

namespace {

namespace asio = boost::asio;
namespace redis = asio_sync::redis;
using asio::awaitable;
using asio_sync::bench::check;
using asio_sync::bench::options_for;
using asio_sync::bench::server;
using asio_sync::test::redis_server;
using boost::system::error_code;
using clock_type = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr auto as_result = asio::as_tuple(asio::use_awaitable);

// Every fleet's duration is multiplied by this (--quick, --scale).
double duration_scale = 1.0;
// --hold=yield: a hold is a loop of co_await post until its end, instead of a timer wait.
bool yielding_holds = false;

std::chrono::nanoseconds scaled(std::chrono::nanoseconds d)
{
    return std::chrono::nanoseconds(static_cast<std::int64_t>(static_cast<double>(d.count()) * duration_scale));
}

std::int64_t monotonic_ns(clock_type::time_point t = clock_type::now())
{
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

// Names are never reused within a run: a fleet's processes leave their entries to expire.
std::string fresh_name(const std::string& prefix)
{
    static int counter = 0;
    return "bench_" + prefix + "_" + std::to_string(::getpid()) + "_" + std::to_string(++counter);
}

awaitable<void> ping(redis::connection& conn)
{
    const std::vector<std::string> command{"PING"};
    auto [ec, reply] = co_await conn.async_execute(command, as_result);
    check(ec, "PING");
}

// Runs the context until `done()` or the deadline.
template <class Done>
bool run_until(asio::io_context& ctx, Done done, clock_type::duration limit)
{
    const auto deadline = clock_type::now() + limit;
    while (!done() && clock_type::now() < deadline)
        ctx.run_one_for(10ms);
    return done();
}

// --- Latency ---------------------------------------------------------------------------------

constexpr benchmark::IterationCount chain_length = 10000;
constexpr std::size_t latency_capacity = 4;

// A share of the whole capacity on its own connection and io_context. Four acquires queued at
// first raise the demand to the capacity (the first refresh, sent at construction, asked for
// nothing: the next call may go a quarter interval later); once they are granted and given back,
// the share stays whole until the next refresh is due, 10 s later, after the row: an idle process
// gives its share back at its next refresh, and a try would then fail.
class share_fixture
{
public:
    share_fixture()
        : connection_(ctx_, options_for(server().port())),
          sem_(connection_, fresh_name("latency"), latency_capacity, redis::share_options{30s, {}, 10s})
    {
        std::size_t granted = 0;
        for (std::size_t i = 0; i < latency_capacity; ++i)
            sem_.async_acquire(1, [&granted](error_code ec) { granted += !ec; });
        if (!run_until(ctx_, [&] { return granted == latency_capacity; }, 10s))
            throw std::runtime_error("the share did not arrive");
        sem_.release(latency_capacity);
    }
    ~share_fixture()
    {
        sem_.close();
        connection_.close();
        ctx_.restart();
        ctx_.run_for(1s);
    }
    share_fixture(const share_fixture&) = delete;
    share_fixture& operator=(const share_fixture&) = delete;

    asio::io_context& context() { return ctx_; }
    redis::share_semaphore& semaphore() { return sem_; }

private:
    asio::io_context ctx_{1};
    redis::connection connection_;
    redis::share_semaphore sem_;
};

// The local semaphore on a bare io_context, and on one that also carries a connection: with I/O
// registered, the context's scheduler polls its reactor between handlers (an epoll_wait per
// posted completion), which the share's context does too.
class local_fixture
{
public:
    asio::io_context& context() { return ctx_; }
    asio_sync::semaphore& semaphore() { return sem_; }

private:
    asio::io_context ctx_{1};
    asio_sync::semaphore sem_{ctx_, latency_capacity};
};

class local_io_fixture : public local_fixture
{
public:
    local_io_fixture() : connection_(context(), options_for(server().port()))
    {
        bool done = false;
        asio::co_spawn(context(), ping(connection_), [&done](std::exception_ptr) { done = true; });
        if (!run_until(context(), [&] { return done; }, 10s))
            throw std::runtime_error("no connection");
    }
    ~local_io_fixture()
    {
        connection_.close();
        context().restart();
        context().run_for(100ms);
    }
    local_io_fixture(const local_io_fixture&) = delete;
    local_io_fixture& operator=(const local_io_fixture&) = delete;

private:
    redis::connection connection_;
};

template <class Fixture>
void BM_try_pair(benchmark::State& state)
{
    Fixture f;
    auto& sem = f.semaphore();
    std::size_t failures = 0;
    for (auto _ : state)
    {
        const bool acquired = sem.try_acquire(1);
        benchmark::DoNotOptimize(acquired);
        failures += !acquired;
        sem.release(1);
        benchmark::ClobberMemory();
    }
    if (failures != 0)
        state.SkipWithError("try_acquire failed with permits free");
}

// One link of an acquire chain: gives the permit back and starts the next acquire, which finds
// it free; the last link stops the context (the share's context never runs out of work).
template <class Semaphore>
struct acquire_link
{
    Semaphore* sem;
    asio::io_context* ctx;
    benchmark::IterationCount* remaining;
    benchmark::IterationCount* executed;

    void operator()(error_code ec) const
    {
        if (ec)
            return;
        ++*executed;
        sem->release(1);
        if (--*remaining != 0)
            sem->async_acquire(1, *this);
        else
            ctx->stop();
    }
};

template <class Fixture>
void BM_callback_pair(benchmark::State& state)
{
    Fixture f;
    auto& sem = f.semaphore();
    using semaphore_type = std::remove_reference_t<decltype(sem)>;
    benchmark::IterationCount executed = 0;
    while (state.KeepRunningBatch(chain_length))
    {
        benchmark::IterationCount remaining = chain_length;
        f.context().restart();
        sem.async_acquire(1, acquire_link<semaphore_type>{&sem, &f.context(), &remaining, &executed});
        f.context().run();
    }
    if (executed != state.iterations())
        state.SkipWithError("acquire chain broke off");
}

template <class Semaphore>
awaitable<void> acquire_loop(Semaphore& sem, asio::io_context& ctx, benchmark::IterationCount& executed)
{
    for (benchmark::IterationCount i = 0; i < chain_length; ++i)
    {
        co_await sem.async_acquire(1, asio::use_awaitable);
        sem.release(1);
        ++executed;
    }
    ctx.stop();
}

template <class Fixture>
void BM_coroutine_pair(benchmark::State& state)
{
    Fixture f;
    benchmark::IterationCount executed = 0;
    std::size_t failures = 0;
    while (state.KeepRunningBatch(chain_length))
    {
        f.context().restart();
        asio::co_spawn(f.context(), acquire_loop(f.semaphore(), f.context(), executed),
                       [&failures](std::exception_ptr e) { failures += e != nullptr; });
        f.context().run();
    }
    if (failures != 0 || executed != state.iterations())
        state.SkipWithError("coroutine loop broke off");
}

// Registered by main: five rounds, each over every row, so that the local and the share rows
// alternate and a burst of other work hits one round rather than one row; the report takes the
// median round of each row, in CPU time (one thread: a descheduled moment does not count).
template <class Fixture>
void register_latency_rows(const std::string& fixture, const std::string& suffix)
{
    const std::string name = "<" + fixture + ">" + suffix;
    benchmark::RegisterBenchmark(("BM_try_pair" + name).c_str(), BM_try_pair<Fixture>);
    benchmark::RegisterBenchmark(("BM_callback_pair" + name).c_str(), BM_callback_pair<Fixture>);
    benchmark::RegisterBenchmark(("BM_coroutine_pair" + name).c_str(), BM_coroutine_pair<Fixture>);
}

void register_latency_rows()
{
    for (int round = 0; round < 5; ++round)
    {
        const std::string suffix = "/round:" + std::to_string(round);
        register_latency_rows<local_fixture>("local_fixture", suffix);
        register_latency_rows<local_io_fixture>("local_io_fixture", suffix);
        register_latency_rows<share_fixture>("share_fixture", suffix);
    }
}

// --- Fleets ----------------------------------------------------------------------------------

constexpr std::size_t max_processes = 8;
constexpr std::size_t max_log = 8192;

struct share_sample
{
    std::int64_t ns;
    std::uint32_t share;
};

// What the processes of one fleet share: a MAP_SHARED anonymous mapping, made before the fork.
struct board
{
    std::atomic<std::int64_t> holders{0};
    std::atomic<std::int64_t> max_holders{0};
    std::atomic<std::uint32_t> ready{0};
    std::atomic<std::uint32_t> failed{0};
    std::atomic<std::int64_t> start_ns{0};
    std::atomic<std::uint64_t> pairs[max_processes]{};
    std::atomic<std::int64_t> cpu_ns[max_processes]{}; // from the start to the end
    std::atomic<std::int64_t> held_ns[max_processes]{}; // the holds of the pairs counted, in all
    std::atomic<std::uint32_t> log_size[max_processes]{};
    share_sample log[max_processes][max_log]{};

    void granted()
    {
        const std::int64_t now = holders.fetch_add(1, std::memory_order_acq_rel) + 1;
        std::int64_t seen = max_holders.load(std::memory_order_relaxed);
        while (now > seen && !max_holders.compare_exchange_weak(seen, now, std::memory_order_relaxed))
        {
        }
    }
    void releasing() { holders.fetch_sub(1, std::memory_order_acq_rel); }

    void record(std::size_t process, std::size_t share)
    {
        const std::uint32_t at = log_size[process].load(std::memory_order_relaxed);
        if (at == max_log)
            return;
        log[process][at] = share_sample{monotonic_ns(), static_cast<std::uint32_t>(share)};
        log_size[process].store(at + 1, std::memory_order_release);
    }
};

class shared_board
{
public:
    shared_board()
    {
        void* p = ::mmap(nullptr, sizeof(board), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            throw std::runtime_error("mmap failed");
        board_ = new (p) board();
    }
    ~shared_board() { ::munmap(board_, sizeof(board)); }
    shared_board(const shared_board&) = delete;
    shared_board& operator=(const shared_board&) = delete;
    board* operator->() const { return board_; }
    board& operator*() const { return *board_; }

private:
    board* board_;
};

enum class kind
{
    local, // each process its own asio_sync::semaphore of local_capacity[i]
    share, // redis::share_semaphore of the fleet's capacity
    fleet, // redis::semaphore (one call per acquire and per release) of the fleet's capacity
};

struct fleet_config
{
    kind what = kind::share;
    std::size_t processes = 1;
    std::size_t capacity = 32;                // the fleet's
    std::vector<std::size_t> local_capacity;  // kind::local: each process'
    std::vector<std::size_t> coroutines;      // per process: the most it ever runs
    std::chrono::nanoseconds hold_mean{20us}; // exponential
    std::chrono::nanoseconds duration{1s};
    // Before the start, the coroutines already run and hold: the shares have settled when the
    // measurement starts.
    std::chrono::nanoseconds warm_up = std::max<std::chrono::nanoseconds>(scaled(2s), 1s);
    redis::share_options options;
    std::string name; // the limit's, unique to the fleet
    // How many of its coroutines process `i` runs `elapsed` after the start.
    std::function<std::size_t(std::size_t, std::chrono::nanoseconds)> demand;
    bool log_shares = false;
};

// The fleet's coroutines on one semaphore type: acquire, count, hold, uncount, release.
struct local_ops
{
    asio_sync::semaphore& sem;
    awaitable<void> acquire() { check(std::get<0>(co_await sem.async_acquire(1, as_result)), "acquire"); }
    awaitable<void> release()
    {
        sem.release(1);
        co_return;
    }
};

struct share_ops
{
    redis::share_semaphore& sem;
    awaitable<void> acquire() { check(std::get<0>(co_await sem.async_acquire(1, as_result)), "acquire"); }
    awaitable<void> release()
    {
        sem.release(1);
        co_return;
    }
};

// Each coroutine its own copy, with its own permit.
struct fleet_ops
{
    explicit fleet_ops(redis::semaphore& s) : sem(s) {}
    fleet_ops(const fleet_ops& other) : sem(other.sem) {}
    fleet_ops& operator=(const fleet_ops&) = delete;

    redis::semaphore& sem;
    redis::semaphore::permit permit{};
    awaitable<void> acquire()
    {
        auto [ec, p] = co_await sem.async_acquire_permit(1, as_result);
        check(ec, "acquire");
        permit = std::move(p);
    }
    awaitable<void> release()
    {
        auto [ec] = co_await permit.async_release(as_result);
        check(ec, "release");
    }
};

struct member_run
{
    const fleet_config& config;
    board& shared;
    std::size_t index;
    clock_type::time_point start;
    clock_type::time_point end;
    std::uint64_t pairs = 0;
    clock_type::duration held{};
};

template <class Ops>
awaitable<void> worker(member_run& run, Ops ops, std::size_t slot, std::uint32_t seed)
{
    asio::steady_timer timer(co_await asio::this_coro::executor);
    std::mt19937 random(seed);
    std::exponential_distribution<double> hold(1.0 / static_cast<double>(run.config.hold_mean.count()));
    for (;;)
    {
        const auto now = clock_type::now();
        if (now >= run.end)
            co_return;
        if (slot >= run.config.demand(run.index, std::max<std::chrono::nanoseconds>(now - run.start, 0ns)))
        {
            timer.expires_after(1ms);
            co_await timer.async_wait(as_result);
            continue;
        }
        co_await ops.acquire();
        run.shared.granted();
        const auto granted = clock_type::now();
        const auto until = granted + std::chrono::nanoseconds(static_cast<std::int64_t>(hold(random)));
        if (yielding_holds)
            while (clock_type::now() < until)
                co_await asio::post(co_await asio::this_coro::executor, asio::use_awaitable);
        else
        {
            timer.expires_at(until);
            co_await timer.async_wait(as_result);
        }
        const auto released = clock_type::now();
        run.shared.releasing();
        co_await ops.release();
        if (released >= run.start && released < run.end)
        {
            ++run.pairs;
            run.held += released - granted;
        }
    }
}

// Says it is ready, waits for the start time minus the warm-up (running the context meanwhile),
// runs the coroutines until the end and records its pairs.
std::int64_t process_cpu_ns()
{
    timespec t{};
    ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return static_cast<std::int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec;
}

template <class Ops>
void run_member(asio::io_context& ctx, member_run& run, Ops ops)
{
    run.shared.ready.fetch_add(1);
    while (run.shared.start_ns.load() == 0)
        ctx.run_for(1ms);
    run.start = clock_type::time_point(std::chrono::nanoseconds(run.shared.start_ns.load()));
    run.end = run.start + run.config.duration;
    ctx.restart();
    ctx.run_until(run.start - run.config.warm_up);
    for (std::size_t slot = 0; slot < run.config.coroutines[run.index]; ++slot)
        asio::co_spawn(ctx, worker(run, ops, slot, static_cast<std::uint32_t>(run.index * 1000 + slot)),
                       [&run](std::exception_ptr e) {
                           if (e)
                               run.shared.failed.fetch_add(1);
                       });
    ctx.restart();
    ctx.run_until(run.start);
    const std::int64_t cpu_at_start = process_cpu_ns();
    ctx.restart();
    ctx.run_until(run.end);
    run.shared.cpu_ns[run.index].store(process_cpu_ns() - cpu_at_start);
    run.shared.pairs[run.index].store(run.pairs);
    run.shared.held_ns[run.index].store(std::chrono::nanoseconds(run.held).count());
}

[[noreturn]] void fleet_member(const fleet_config& config, board& shared, std::size_t index, std::uint16_t port)
{
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    try
    {
        asio::io_context ctx(1);
        member_run run{config, shared, index, {}, {}};
        if (config.what == kind::local)
        {
            asio_sync::semaphore sem(ctx, config.local_capacity[index]);
            run_member(ctx, run, local_ops{sem});
        }
        else
        {
            redis::connection conn(ctx, options_for(port));
            bool connected = false;
            asio::co_spawn(ctx, ping(conn), [&connected](std::exception_ptr e) { connected = !e; });
            if (!run_until(ctx, [&] { return connected; }, 10s))
                throw std::runtime_error("no connection");
            if (config.what == kind::share)
            {
                redis::share_semaphore sem(conn, std::string(config.name), config.capacity, config.options);
                if (config.log_shares)
                    sem.set_listener([&](const redis::share_state& s) { shared.record(index, s.share); });
                run_member(ctx, run, share_ops{sem});
            }
            else
            {
                redis::semaphore sem(conn, std::string(config.name), config.capacity, 60s);
                run_member(ctx, run, fleet_ops{sem});
            }
        }
    }
    catch (const std::exception&)
    {
        shared.failed.fetch_add(1);
    }
    ::_exit(0);
}

struct redis_usage
{
    double calls = 0;
    double usec = 0;
    double inner_calls = 0; // the commands the functions ran
    double publishes = 0;   // of which PUBLISH: a new division, heard by every process
    double cpu_seconds = 0;
};

double redis_cpu_seconds()
{
    std::ifstream stat("/proc/" + std::to_string(server().pid()) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    // Fields after the command name, which ends with the last ')': state is field 3, utime 14.
    std::istringstream fields(text.substr(text.rfind(')') + 2));
    std::vector<std::string> values((std::istream_iterator<std::string>(fields)), std::istream_iterator<std::string>());
    const double ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
    return (std::stod(values.at(11)) + std::stod(values.at(12))) / ticks;
}

// The commands the libraries' functions run: Redis counts them apart from the FCALL that runs them
// (whose time includes theirs), and the fleet never sends them itself.
const std::vector<std::string> inner_commands{"del",   "exists",  "get",  "hdel", "hget",    "hgetall",
                                              "hmget", "hset",    "persist", "pttl", "publish", "set",
                                              "time",  "zadd",    "zcard", "zmscore", "zrange",
                                              "zrangebyscore", "zrank", "zrem", "zscore"};

// Every command the clients sent since the last CONFIG RESETSTAT (but the counter's own), with the
// time Redis spent executing them.
redis_usage redis_commands(redis_server::client& counter)
{
    const std::string stats = counter.command({"INFO", "commandstats"});
    redis_usage total;
    std::istringstream lines(stats);
    for (std::string line; std::getline(lines, line);)
    {
        // "cmdstat_<name>:calls=<n>,usec=<us>,..."
        if (line.rfind("cmdstat_", 0) != 0)
            continue;
        const std::string name = line.substr(8, line.find(':') - 8);
        const std::size_t calls_at = line.find("calls=") + 6;
        const double calls = std::stod(line.substr(calls_at));
        if (name == "info" || name.rfind("config", 0) == 0)
            continue;
        if (std::find(inner_commands.begin(), inner_commands.end(), name) != inner_commands.end())
        {
            total.inner_calls += calls;
            total.publishes += name == "publish" ? calls : 0;
            continue;
        }
        total.calls += calls;
        total.usec += std::stod(line.substr(line.find("usec=", calls_at) + 5));
    }
    return total;
}

struct fleet_result
{
    double seconds = 0;
    std::uint64_t pairs = 0;
    std::int64_t max_holders = 0;
    redis_usage redis;
    double fleet_cpu_seconds = 0;
    double held_seconds = 0; // the holds of the pairs counted, in all
    std::vector<std::vector<share_sample>> logs;
    std::int64_t start_ns = 0;
};

// Forks the fleet, starts it (its warm-up) 200 ms after every process is ready, and collects what
// it did from the start.
fleet_result run_fleet(const fleet_config& config)
{
    const std::uint16_t port = server().port();
    redis_server::client counter(server());
    shared_board shared;
    std::vector<pid_t> children;
    for (std::size_t i = 0; i < config.processes; ++i)
    {
        const pid_t child = ::fork();
        if (child == 0)
            fleet_member(config, *shared, i, port);
        if (child < 0)
            throw std::runtime_error("fork failed");
        children.push_back(child);
    }
    const auto ready_by = clock_type::now() + 20s;
    while (shared->ready.load() < config.processes && clock_type::now() < ready_by)
        std::this_thread::sleep_for(1ms);
    const auto start = clock_type::now() + 200ms + config.warm_up;
    shared->start_ns.store(monotonic_ns(start));
    std::this_thread::sleep_until(start);
    counter.command({"CONFIG", "RESETSTAT"});
    const double cpu_before = redis_cpu_seconds();
    std::this_thread::sleep_until(start + config.duration);
    fleet_result result;
    result.redis = redis_commands(counter);
    result.redis.cpu_seconds = redis_cpu_seconds() - cpu_before;
    result.seconds = std::chrono::duration<double>(config.duration).count();
    result.start_ns = monotonic_ns(start);
    for (const pid_t child : children)
    {
        int status = 0;
        ::waitpid(child, &status, 0);
    }
    if (shared->ready.load() < config.processes || shared->failed.load() != 0)
        throw std::runtime_error("a process of the fleet failed");
    for (std::size_t i = 0; i < config.processes; ++i)
    {
        result.pairs += shared->pairs[i].load();
        result.fleet_cpu_seconds += 1e-9 * static_cast<double>(shared->cpu_ns[i].load());
        result.held_seconds += 1e-9 * static_cast<double>(shared->held_ns[i].load());
        const std::uint32_t size = shared->log_size[i].load();
        result.logs.emplace_back(shared->log[i], shared->log[i] + size);
    }
    result.max_holders = shared->max_holders.load();
    return result;
}

void report_fleet(benchmark::State& state, const fleet_config& config, const fleet_result& r)
{
    state.SetIterationTime(r.seconds);
    const double rate = static_cast<double>(r.pairs) / r.seconds;
    state.counters["pairs_per_s"] = rate;
    state.counters["max_holders"] = static_cast<double>(r.max_holders);
    // Little's law: the mean number of holders over the window, and the mean hold as measured.
    state.counters["mean_holders"] = r.held_seconds / r.seconds;
    state.counters["hold_us"] = r.pairs ? 1e6 * r.held_seconds / static_cast<double>(r.pairs) : 0;
    state.counters["capacity"] = static_cast<double>(config.capacity);
    state.counters["fleet_cpu_per_s"] = r.fleet_cpu_seconds / r.seconds;
    state.counters["fleet_cpu_ns_per_pair"] = r.pairs ? 1e9 * r.fleet_cpu_seconds / static_cast<double>(r.pairs) : 0;
    state.counters["redis_commands"] = r.redis.calls;
    state.counters["redis_commands_per_1000"] = r.pairs ? 1000 * r.redis.calls / static_cast<double>(r.pairs) : 0;
    state.counters["redis_usec_per_s"] = r.redis.usec / r.seconds;
    state.counters["redis_usec_per_command"] = r.redis.calls ? r.redis.usec / r.redis.calls : 0;
    state.counters["redis_inner_commands"] = r.redis.inner_calls;
    state.counters["redis_publishes"] = r.redis.publishes;
    state.counters["redis_cpu_ms_per_s"] = 1e3 * r.redis.cpu_seconds / r.seconds;
}

template <class Body>
void guarded(benchmark::State& state, Body body)
{
    try
    {
        body();
    }
    catch (const std::exception& e)
    {
        state.SkipWithError(e.what());
    }
}

// The contended fleet of the goals: demands 16, 16, 8, 8, 4, 4, 4, 4 against a capacity of 32;
// the first and the last process swap their demands every 5 s.
const std::vector<std::size_t> contended_demands{16, 16, 8, 8, 4, 4, 4, 4};

std::size_t swapped_demand(std::size_t i, std::chrono::nanoseconds elapsed)
{
    const bool swapped = (elapsed / scaled(5s)) % 2 == 1;
    if (swapped && i == 0)
        return contended_demands.back();
    if (swapped && i == contended_demands.size() - 1)
        return contended_demands.front();
    return contended_demands[i];
}

fleet_config contended_fleet(kind what, std::chrono::nanoseconds hold_mean, std::chrono::nanoseconds duration)
{
    fleet_config config;
    config.what = what;
    config.processes = contended_demands.size();
    config.coroutines.assign(config.processes, 16);
    config.local_capacity.assign(config.processes, 32 / config.processes);
    config.hold_mean = hold_mean;
    config.duration = scaled(duration);
    config.name = fresh_name("contended");
    config.demand = swapped_demand;
    return config;
}

void BM_contended(benchmark::State& state, kind what, std::chrono::nanoseconds hold_mean,
                  std::chrono::nanoseconds duration)
{
    for (auto _ : state)
        guarded(state, [&] {
            const fleet_config config = contended_fleet(what, hold_mean, duration);
            report_fleet(state, config, run_fleet(config));
        });
}
// The goal's run: the share, 20 s, holds of 20 us on average.
BENCHMARK_CAPTURE(BM_contended, share, kind::share, 20us, 20s)
    ->Iterations(1)
    ->Repetitions(1)
    ->UseManualTime()
    ->Unit(benchmark::kSecond);
// The same fleet at about 10,000 pairs/s (32 holders of 3.2 ms on average), for Redis' load.
BENCHMARK_CAPTURE(BM_contended, share_slow, kind::share, 3200us, 10s)
    ->Iterations(1)
    ->Repetitions(1)
    ->UseManualTime()
    ->Unit(benchmark::kSecond);
// The same fleet on a static division: each process its own local semaphore of 4.
BENCHMARK_CAPTURE(BM_contended, static, kind::local, 20us, 5s)
    ->Iterations(1)
    ->Repetitions(1)
    ->UseManualTime()
    ->Unit(benchmark::kSecond);

// The chart: a fleet of capacity 32 and 64 coroutines in all, split evenly over 1, 2, 4 or 8
// processes; the local rows give each process its own semaphore of 32 / processes.
void BM_scaling(benchmark::State& state)
{
    const auto what = static_cast<kind>(state.range(0));
    const auto processes = static_cast<std::size_t>(state.range(1));
    for (auto _ : state)
        guarded(state, [&] {
            fleet_config config;
            config.what = what;
            config.processes = processes;
            config.coroutines.assign(processes, 64 / processes);
            config.local_capacity.assign(processes, 32 / processes);
            config.duration = scaled(3s);
            config.name = fresh_name("scaling");
            config.demand = [processes](std::size_t, std::chrono::nanoseconds) { return 64 / processes; };
            report_fleet(state, config, run_fleet(config));
        });
}
// Three rounds, each over every process count and every kind in turn, so that a burst of other
// work on the machine hits one round rather than one kind; the report takes the median round.
BENCHMARK(BM_scaling)
    ->ArgNames({"kind", "processes", "round"})
    ->Apply([](benchmark::internal::Benchmark* b) {
        for (int round = 0; round < 3; ++round)
            for (int processes : {1, 2, 4, 8})
                for (kind what : {kind::local, kind::share, kind::fleet})
                    b->Args({static_cast<int>(what), processes, round});
    })
    ->Iterations(1)
    ->Repetitions(1)
    ->UseManualTime()
    ->Unit(benchmark::kSecond);

// --- Fairness --------------------------------------------------------------------------------

constexpr std::size_t fair_processes = 4;
constexpr std::size_t fair_capacity = 32;
const redis::share_options fair_options{2000ms, {}, 200ms};

// The first time from `from` at which every process' share satisfies `ok(process, share)`, in ms
// after `from`; -1 if never.
template <class Ok>
double first_time(const fleet_result& r, std::int64_t from, Ok ok)
{
    std::vector<std::pair<std::int64_t, std::size_t>> events; // (time, process) of every change
    for (std::size_t i = 0; i < r.logs.size(); ++i)
        for (const share_sample& s : r.logs[i])
            events.emplace_back(s.ns, i);
    std::sort(events.begin(), events.end());
    std::vector<std::size_t> shares(r.logs.size(), 0);
    std::vector<std::size_t> seen(r.logs.size(), 0);
    const auto all_ok = [&] {
        for (std::size_t i = 0; i < shares.size(); ++i)
            if (!ok(i, shares[i]))
                return false;
        return true;
    };
    bool checked_from = false;
    for (const auto& [ns, process] : events)
    {
        if (ns >= from && !checked_from)
        {
            checked_from = true;
            if (all_ok())
                return 0;
        }
        shares[process] = r.logs[process][seen[process]++].share;
        if (ns >= from && all_ok())
            return 1e-6 * static_cast<double>(ns - from);
    }
    return -1;
}

// 4 processes of 16 coroutines (holds of 1 ms on average) on a capacity of 32, with a lease of 2 s
// and a refresh every 200 ms. From the start all four are busy; after one phase the last one's
// demand drops to 2; after two it is busy again; the run ends after three.
void BM_fairness(benchmark::State& state)
{
    for (auto _ : state)
        guarded(state, [&] {
            const auto phase = std::max<std::chrono::nanoseconds>(scaled(3s), 1500ms);
            fleet_config config;
            config.what = kind::share;
            config.processes = fair_processes;
            config.capacity = fair_capacity;
            config.coroutines.assign(fair_processes, 16);
            config.hold_mean = 1ms;
            config.duration = 3 * phase;
            config.options = fair_options;
            config.name = fresh_name("fairness");
            config.log_shares = true;
            config.warm_up = 0ns;
            config.demand = [phase](std::size_t i, std::chrono::nanoseconds elapsed) -> std::size_t {
                return i == fair_processes - 1 && elapsed >= phase && elapsed < 2 * phase ? 2 : 16;
            };
            const fleet_result r = run_fleet(config);
            report_fleet(state, config, r);
            const std::int64_t start = r.start_ns;
            const std::int64_t dropped = start + phase.count();
            const std::int64_t busy = start + 2 * phase.count();
            const std::size_t fair = fair_capacity / fair_processes;
            const auto near = [](std::size_t share, std::size_t target) {
                return share + 1 >= target && share <= target + 1;
            };
            state.counters["all_fair_ms"] =
                first_time(r, start, [&](std::size_t, std::size_t s) { return near(s, fair); });
            state.counters["drop_given_back_ms"] = first_time(r, dropped, [&](std::size_t i, std::size_t s) {
                return i != fair_processes - 1 || s <= 2;
            });
            state.counters["drop_others_fair_ms"] = first_time(r, dropped, [&](std::size_t i, std::size_t s) {
                return i == fair_processes - 1 || near(s, (fair_capacity - 2) / (fair_processes - 1));
            });
            state.counters["busy_fair_ms"] = first_time(r, busy, [&](std::size_t i, std::size_t s) {
                return i != fair_processes - 1 || near(s, fair);
            });
            state.counters["busy_all_fair_ms"] =
                first_time(r, busy, [&](std::size_t, std::size_t s) { return near(s, fair); });
            state.counters["refresh_interval_ms"] = 200;
        });
}
BENCHMARK(BM_fairness)->Iterations(1)->Repetitions(1)->UseManualTime()->Unit(benchmark::kSecond);

// The round trip the fairness goals allow for: a PING on loopback, for scale.
void BM_ping(benchmark::State& state)
{
    asio::io_context ctx(1);
    redis::connection conn(ctx, options_for(server().port()));
    for (auto _ : state)
    {
        bool done = false;
        asio::co_spawn(ctx, ping(conn), [&](std::exception_ptr) { done = true; });
        run_until(ctx, [&] { return done; }, 5s);
    }
    conn.close();
    ctx.restart();
    ctx.run_for(100ms);
}
BENCHMARK(BM_ping)->Repetitions(1)->Unit(benchmark::kMicrosecond);

} // namespace

int main(int argc, char** argv)
{
    std::vector<char*> rest{argv[0]};
    for (int i = 1; i < argc; ++i)
    {
        const std::string arg = argv[i];
        if (arg == "--quick")
            duration_scale = 0.2;
        else if (arg == "--hold=yield")
            yielding_holds = true;
        else if (arg.rfind("--scale=", 0) == 0)
            duration_scale = std::stod(arg.substr(8));
        else
            rest.push_back(argv[i]);
    }
    register_latency_rows();
    int count = static_cast<int>(rest.size());
    benchmark::Initialize(&count, rest.data());
    if (benchmark::ReportUnrecognizedArguments(count, rest.data()))
        return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
