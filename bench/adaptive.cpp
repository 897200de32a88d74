// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

// Adaptive concurrency limits, two ways.
//
// Without arguments (or with Google Benchmark's): the cost rows. A permit through the adaptive
// limiter against a plain semaphore permit plus one steady_clock::now(), in the same run,
// uncontended and on two threads at once.
//
// With --simulate: a simulated backend with a knee, run on asio timers. It serves at most C
// requests at once with exponential service times (mean 5 ms); beyond C they queue inside it. Three
// phases: C = 32, then 8, then 32. A Poisson load offers 1.5 times the most the backend can serve
// at C = 32. In front of it: no limit, a fixed K (a sweep, from which the report takes the best K
// of each phase), or an adaptive limiter with each algorithm (fed every request, or one sample per
// window through windowed_limit), each refusing at once what its limit does not admit. Every
// configuration runs on its own io_context and thread, all at once (--alone NAME runs one
// configuration by itself, to measure how much they disturb each other). Writes summary.csv (per
// configuration and phase: goodput within 4x the mean service time, p99 latency of the admitted
// requests, refusals) and trace.csv (the limit every 100 ms) to --out; bench/adaptive_report.py
// turns runs into bench/results/adaptive.md and its chart.

#include <asio_sync/adaptive_limiter.hpp>
#include <asio_sync/aimd_limit.hpp>
#include <asio_sync/gradient2_limit.hpp>
#include <asio_sync/semaphore.hpp>
#include <asio_sync/vegas_limit.hpp>
#include <asio_sync/windowed_limit.hpp>

#include <benchmark/benchmark.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <queue>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>

namespace {

namespace asio = boost::asio;
using clock_type = std::chrono::steady_clock;
using io_semaphore = asio_sync::basic_semaphore<asio::io_context::executor_type>;
using io_limiter = asio_sync::basic_adaptive_limiter<asio::io_context::executor_type>;

// ---- The cost rows ----------------------------------------------------------------------------

io_limiter& shared_limiter()
{
    static asio::io_context io;
    static io_limiter limiter(io.get_executor(), asio_sync::vegas_limit({1000, 1000, 1000}));
    return limiter;
}

io_semaphore& shared_semaphore()
{
    static asio::io_context io;
    static io_semaphore semaphore(io.get_executor(), 1000);
    return semaphore;
}

void BM_semaphore_permit_plus_now(benchmark::State& state)
{
    io_semaphore& semaphore = shared_semaphore();
    for (auto _ : state)
    {
        std::optional<io_semaphore::permit> p = semaphore.try_acquire_permit();
        clock_type::time_point now = clock_type::now();
        benchmark::DoNotOptimize(now);
        benchmark::DoNotOptimize(p);
    }
}
BENCHMARK(BM_semaphore_permit_plus_now)->Threads(1)->Threads(2);

// Acquired and given back without an outcome: the algorithm does not run.
void BM_limiter_permit_ignored(benchmark::State& state)
{
    io_limiter& limiter = shared_limiter();
    for (auto _ : state)
    {
        std::optional<io_limiter::permit> p = limiter.try_acquire();
        benchmark::DoNotOptimize(p);
    }
}
BENCHMARK(BM_limiter_permit_ignored)->Threads(1)->Threads(2);

// Acquired and given back as a success: a second now() and the algorithm, under its lock.
void BM_limiter_permit_success(benchmark::State& state)
{
    io_limiter& limiter = shared_limiter();
    for (auto _ : state)
    {
        std::optional<io_limiter::permit> p = limiter.try_acquire();
        if (p)
            p->success();
        benchmark::DoNotOptimize(p);
    }
}
BENCHMARK(BM_limiter_permit_success)->Threads(1)->Threads(2);

// The asynchronous acquires, as chains on a running io_context(1): each handler drops its permit
// and starts the next acquire, so every acquire is decided at once (bench/uncontended.cpp's
// chains).
constexpr benchmark::IterationCount chain_length = 10000;

template <class StartNext>
void run_chain(benchmark::State& state, asio::io_context& io, StartNext start_next)
{
    while (state.KeepRunningBatch(chain_length))
    {
        benchmark::IterationCount left = chain_length;
        start_next(left);
        io.restart();
        io.run();
    }
}

void BM_semaphore_async_permit_plus_now(benchmark::State& state)
{
    asio::io_context io(1);
    io_semaphore semaphore(io.get_executor(), 1);
    std::function<void(benchmark::IterationCount&)> next = [&](benchmark::IterationCount& left) {
        semaphore.async_acquire_permit(1, [&](boost::system::error_code, io_semaphore::permit p) {
            clock_type::time_point now = clock_type::now();
            benchmark::DoNotOptimize(now);
            p.release();
            if (--left != 0)
                next(left);
        });
    };
    run_chain(state, io, next);
}
BENCHMARK(BM_semaphore_async_permit_plus_now);

void BM_limiter_async_permit_ignored(benchmark::State& state)
{
    asio::io_context io(1);
    io_limiter limiter(io.get_executor(), asio_sync::vegas_limit({1, 1, 1}));
    std::function<void(benchmark::IterationCount&)> next = [&](benchmark::IterationCount& left) {
        limiter.async_acquire([&](boost::system::error_code, io_limiter::permit p) {
            p.ignore();
            if (--left != 0)
                next(left);
        });
    };
    run_chain(state, io, next);
}
BENCHMARK(BM_limiter_async_permit_ignored);

// ---- The simulation ---------------------------------------------------------------------------

// The virtual time of the simulation that runs on this thread, as a clock for windowed_limit:
// its windows then close in virtual time, as its samples' latencies are measured.
struct virtual_clock
{
    using duration = std::chrono::nanoseconds;
    using rep = duration::rep;
    using period = duration::period;
    using time_point = std::chrono::time_point<virtual_clock>;

    static time_point now() noexcept { return current; }

    static thread_local time_point current;
};

thread_local virtual_clock::time_point virtual_clock::current;

template <class Algorithm>
using windowed = asio_sync::windowed_limit<Algorithm, virtual_clock>;

constexpr double mean_service_ms = 5;
constexpr double budget_ms = 4 * mean_service_ms;
constexpr std::size_t phase_capacity[3] = {32, 8, 32};
constexpr double offered_per_second = 1.5 * 32 * 1000 / mean_service_ms;

struct phase_figures
{
    std::size_t good = 0;
    std::size_t refused = 0;
    std::vector<double> latencies_ms;
};

// A gate in front of the backend: nothing, a fixed semaphore or an adaptive limiter.
using admission = std::variant<std::monostate, std::unique_ptr<io_semaphore>, std::unique_ptr<io_limiter>>;

// The backend and the load advance in virtual time on a 1 ms tick of an asio timer: each tick
// runs, in time order, the arrivals and the completions due by now (a timer per request would
// cost a system call each, and the configurations run side by side). Latencies are virtual
// times, exact, and the limiter is told them (permit::success(latency)): its decisions land on
// the tick, its samples are not rounded by it.
class simulation
{
public:
    simulation(std::string name, std::function<admission(asio::io_context&)> make_gate, double phase_seconds,
               std::uint64_t seed)
        : name_(std::move(name)), gate_(make_gate(io_)), phase_(phase_seconds), random_(seed)
    {
    }

    void run()
    {
        start_ = clock_type::now();
        next_arrival_ = draw(offered_per_second);
        tick();
        io_.run();
    }

    void write(std::FILE* summary, std::FILE* trace, int run) const
    {
        for (int p = 0; p < 3; ++p)
        {
            std::vector<double> l = figures_[p].latencies_ms;
            std::sort(l.begin(), l.end());
            const double p99 = l.empty() ? 0 : l[std::min(l.size() - 1, l.size() * 99 / 100)];
            std::fprintf(summary, "%d,%s,%d,%.1f,%.3f,%zu\n", run, name_.c_str(), p,
                         static_cast<double>(figures_[p].good) / phase_, p99, figures_[p].refused);
        }
        for (const auto& [t, limit, capacity] : trace_)
            std::fprintf(trace, "%d,%s,%.2f,%zu,%zu\n", run, name_.c_str(), t, limit, capacity);
    }

    const std::string& name() const { return name_; }

    std::size_t fixed_k_ = 0; // the K of a fixed configuration, for its trace

private:
    struct request
    {
        double arrived; // virtual seconds
        std::optional<io_limiter::permit> limited;
        std::optional<io_semaphore::permit> fixed;
    };

    using in_service = std::pair<double, std::unique_ptr<request>>;

    struct later
    {
        bool operator()(const in_service& a, const in_service& b) const { return a.first > b.first; }
    };

    double draw(double rate) { return std::exponential_distribution<double>(rate)(random_); }

    int phase_at(double t) const { return std::min(2, static_cast<int>(t / phase_)); }

    void tick()
    {
        ++ticks_;
        timer_.expires_at(start_ + std::chrono::milliseconds(ticks_));
        timer_.async_wait([this](boost::system::error_code) {
            const double now = std::chrono::duration<double>(clock_type::now() - start_).count();
            advance(std::min(now, 3 * phase_));
            if (ticks_ % 100 == 0)
                record_limit(now);
            if (now < 3 * phase_)
                tick();
        });
    }

    // Runs every event due by `now`, oldest first.
    void advance(double now)
    {
        for (;;)
        {
            const double done = service_.empty() ? now + 1 : service_.top().first;
            if (std::min(done, next_arrival_) > now)
                return;
            if (done <= next_arrival_)
            {
                std::unique_ptr<request> r = std::move(const_cast<in_service&>(service_.top()).second);
                service_.pop();
                complete(*r, done);
                start_service(done);
            }
            else
            {
                arrive(next_arrival_);
                next_arrival_ += draw(offered_per_second);
            }
        }
    }

    void arrive(double t)
    {
        auto r = std::make_unique<request>();
        r->arrived = t;
        bool admitted = true;
        if (auto* s = std::get_if<std::unique_ptr<io_semaphore>>(&gate_))
            admitted = (r->fixed = (*s)->try_acquire_permit()).has_value();
        else if (auto* l = std::get_if<std::unique_ptr<io_limiter>>(&gate_))
            admitted = (r->limited = (*l)->try_acquire()).has_value();
        if (!admitted)
        {
            ++figures_[phase_at(t)].refused;
            return;
        }
        queue_.push_back(std::move(r));
        start_service(t);
    }

    // Starts service for the queued requests while fewer than the phase's C are in service.
    void start_service(double t)
    {
        while (!queue_.empty() && service_.size() < phase_capacity[phase_at(t)])
        {
            std::unique_ptr<request> r = std::move(queue_.front());
            queue_.pop_front();
            service_.emplace(t + draw(1000 / mean_service_ms), std::move(r));
        }
    }

    void complete(request& r, double t)
    {
        const double latency_ms = (t - r.arrived) * 1000;
        phase_figures& f = figures_[phase_at(t)];
        f.latencies_ms.push_back(latency_ms);
        if (latency_ms <= budget_ms)
            ++f.good;
        virtual_clock::current = virtual_clock::time_point(
            std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(t)));
        if (r.limited)
            r.limited->success(std::chrono::duration_cast<std::chrono::nanoseconds>(
                std::chrono::duration<double>(t - r.arrived)));
    }

    void record_limit(double now)
    {
        std::size_t limit = 0;
        if (std::holds_alternative<std::unique_ptr<io_semaphore>>(gate_))
            limit = fixed_k_;
        else if (auto* l = std::get_if<std::unique_ptr<io_limiter>>(&gate_))
            limit = (*l)->limit();
        trace_.emplace_back(now, limit, phase_capacity[phase_at(now)]);
    }

    std::string name_;
    asio::io_context io_;
    admission gate_;
    double phase_;
    std::mt19937_64 random_;
    clock_type::time_point start_;
    asio::steady_timer timer_{io_};
    long ticks_ = 0;
    double next_arrival_ = 0;
    std::deque<std::unique_ptr<request>> queue_;
    std::priority_queue<in_service, std::vector<in_service>, later> service_;
    phase_figures figures_[3];
    std::vector<std::tuple<double, std::size_t, std::size_t>> trace_;
};

// The adaptive configurations: Netflix's defaults but for the floor (1) and the ceiling (200);
// AIMD counts a success slower than the latency budget as a drop.
std::vector<std::unique_ptr<simulation>> configurations(double phase_seconds, std::uint64_t seed)
{
    std::vector<std::unique_ptr<simulation>> all;
    all.push_back(std::make_unique<simulation>(
        "none", [](asio::io_context&) { return admission(); }, phase_seconds, seed));
    for (std::size_t k : {4u, 6u, 8u, 10u, 12u, 16u, 20u, 24u, 32u, 40u, 48u})
    {
        all.push_back(std::make_unique<simulation>(
            "fixed" + std::to_string(k),
            [k](asio::io_context& io) {
                return admission(std::make_unique<io_semaphore>(io.get_executor(), k));
            },
            phase_seconds, seed));
        all.back()->fixed_k_ = k;
    }
    const auto add = [&](std::string name, auto make_algorithm) {
        all.push_back(std::make_unique<simulation>(
            std::move(name),
            [make_algorithm](asio::io_context& io) {
                return admission(std::make_unique<io_limiter>(io.get_executor(), make_algorithm()));
            },
            phase_seconds, seed));
    };
    const auto vegas = [] {
        asio_sync::vegas_limit::options o;
        o.min_limit = 1;
        o.max_limit = 200;
        o.probe_seed = 1;
        return asio_sync::vegas_limit(o);
    };
    const auto gradient2 = [] {
        asio_sync::gradient2_limit::options o;
        o.min_limit = 1;
        o.max_limit = 200;
        return asio_sync::gradient2_limit(o);
    };
    const auto aimd = [] {
        asio_sync::aimd_limit::options o;
        o.min_limit = 1;
        o.max_limit = 200;
        o.timeout = std::chrono::milliseconds(static_cast<int>(budget_ms));
        return asio_sync::aimd_limit(o);
    };
    add("vegas", vegas);
    add("gradient2", gradient2);
    add("aimd", aimd);
    // The same algorithms fed one sample per window (windowed_limit's defaults: the mean of at
    // least 50 ms), and Vegas on the window's median.
    add("vegas_windowed", [vegas] { return windowed<asio_sync::vegas_limit>(vegas()); });
    add("gradient2_windowed", [gradient2] { return windowed<asio_sync::gradient2_limit>(gradient2()); });
    add("aimd_windowed", [aimd] { return windowed<asio_sync::aimd_limit>(aimd()); });
    add("vegas_windowed_p50", [vegas] {
        windowed<asio_sync::vegas_limit>::options o;
        o.aggregate = asio_sync::window_aggregate::percentile;
        return windowed<asio_sync::vegas_limit>(vegas(), o);
    });
    // Gradient2 windowed and tuned for a latency that is the signal: no tolerance above the
    // long-term average (the window's mean is steady enough), which spans 6000 windows (5 min,
    // so that it does not follow a queue within a phase); growth by a fraction of the limit
    // (queue_fraction 0.05) plus 0.25, so that the limit settles 5 to 10% above the knee whatever
    // C (the constant part weighs most at a small knee); smoothing 0.65, so that it climbs back
    // to a risen C within two or three seconds.
    add("gradient2_windowed_tuned", [] {
        asio_sync::gradient2_limit::options o;
        o.min_limit = 1;
        o.max_limit = 200;
        o.rtt_tolerance = 1.0;
        o.long_window = 6000;
        o.queue_size = 0.25;
        o.queue_fraction = 0.05;
        o.smoothing = 0.65;
        return windowed<asio_sync::gradient2_limit>(asio_sync::gradient2_limit(o));
    });
    return all;
}

int simulate(int argc, char** argv)
{
    double phase_seconds = 30;
    int runs = 3;
    std::string out = ".";
    std::string alone;
    for (int i = 1; i + 1 < argc; ++i)
    {
        if (!std::strcmp(argv[i], "--phase-seconds"))
            phase_seconds = std::atof(argv[++i]);
        else if (!std::strcmp(argv[i], "--runs"))
            runs = std::atoi(argv[++i]);
        else if (!std::strcmp(argv[i], "--out"))
            out = argv[++i];
        else if (!std::strcmp(argv[i], "--alone"))
            alone = argv[++i];
    }
    std::FILE* summary = std::fopen((out + "/summary.csv").c_str(), "w");
    std::FILE* trace = std::fopen((out + "/trace.csv").c_str(), "w");
    if (!summary || !trace)
    {
        std::fprintf(stderr, "cannot write to %s\n", out.c_str());
        return 1;
    }
    std::fprintf(summary, "run,config,phase,goodput,p99_ms,refused\n");
    std::fprintf(trace, "run,config,t,limit,capacity\n");
    for (int run = 0; run < runs; ++run)
    {
        std::vector<std::unique_ptr<simulation>> all =
            configurations(phase_seconds, static_cast<std::uint64_t>(1000 + run));
        if (!alone.empty())
            all.erase(
                std::remove_if(all.begin(), all.end(), [&](const auto& s) { return s->name() != alone; }),
                all.end());
        std::vector<std::thread> threads;
        for (auto& s : all)
            threads.emplace_back([&s] { s->run(); });
        for (std::thread& t : threads)
            t.join();
        for (auto& s : all)
            s->write(summary, trace, run);
        std::fprintf(stderr, "run %d done\n", run);
    }
    std::fclose(summary);
    std::fclose(trace);
    return 0;
}

} // namespace

int main(int argc, char** argv)
{
    if (argc > 1 && !std::strcmp(argv[1], "--simulate"))
        return simulate(argc, argv);
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv))
        return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
