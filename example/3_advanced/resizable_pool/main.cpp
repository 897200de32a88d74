// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

// resizable_pool: a worker pool whose concurrency limit is raised and lowered while work runs.
//
// Jobs run on a boost::asio::thread_pool. Before each job a worker takes one permit of a bounded
// asio_sync::semaphore with async_acquire_permit, and holds the permit object until the job is
// done. The semaphore's bound is the limit, and capacity() reports it. A controller moves the
// limit through a schedule (2, 6, 3, 1, 4 by default), one phase each:
//
//  - raising it is add_permits: the new permits go straight to the workers queued for one;
//  - lowering it is reduce_permits, which neither waits nor interrupts anything: the capacity
//    drops at once, the permits not in use are taken, and the rest becomes a debt that the jobs
//    in flight pay off as they finish. No worker is admitted while the debt is open, so the
//    number in flight drains down to the new limit and stays within it.
//
// When the last phase is over the controller closes the semaphore: queued workers are turned away
// and the jobs in flight finish. The program then takes the whole capacity out with
// forget_permits, which only gets what is back in the semaphore, so it proves no permit was lost.
//
// Workers count themselves in and out of an atomic in-flight counter, in while they hold a permit.
// The controller prints the limit changes and the count as it drains or fills up to the new limit.
// A worker counts itself in when its coroutine resumes, a moment after the grant, so right after a
// reduction the count may still rise by one or two: those workers were granted under the old
// limit. At the end a table gives, per phase, the count before the change, how long it took to
// settle and the most workers in flight at once once it had; the program exits non-zero if that
// ever exceeded the limit.
//
//   resizable_pool [--duration SECONDS] [--schedule LIMITS] [--workers N] [--help]

#include <asio_sync/semaphore.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace {

namespace asio = boost::asio;
using asio::awaitable;
using clock_type = std::chrono::steady_clock;
using milliseconds = std::chrono::milliseconds;
using microseconds = std::chrono::microseconds;
using namespace std::chrono_literals;

constexpr auto as_result = asio::as_tuple(asio::use_awaitable);

constexpr unsigned pool_threads = 4;
constexpr microseconds job_min = 2000us; // how long a job holds its permit
constexpr microseconds job_max = 8000us;
constexpr milliseconds sample_interval = 1ms;   // how often the controller looks at the count
constexpr milliseconds status_interval = 100ms; // how often it prints a status line
constexpr std::size_t max_limit = 1000;
constexpr std::size_t max_phases = 16;

struct options
{
    milliseconds duration = 1500ms;
    std::vector<std::size_t> schedule{2, 6, 3, 1, 4};
    std::size_t workers = 8;
};

constexpr const char usage[] =
    "usage: resizable_pool [--duration SECONDS] [--schedule LIMITS] [--workers N] [--help]\n"
    "\n"
    "Runs jobs on a thread pool under a concurrency limit that a controller raises with\n"
    "add_permits and lowers with reduce_permits while jobs are in flight, then checks that, once\n"
    "each reduction has drained, no more jobs than the limit ever ran at once.\n"
    "\n"
    "  --duration SECONDS  how long the whole schedule takes, in equal phases (default 1.5)\n"
    "  --schedule LIMITS   the limit in each phase, comma-separated, each 1 to 1000, at most 16\n"
    "                      phases (default 2,6,3,1,4)\n"
    "  --workers N         workers competing for the permits, 1 to 1000 (default 8)\n"
    "  --help              show this text\n";

std::optional<std::size_t> parse_count(std::string_view text, std::size_t min, std::size_t max)
{
    const std::string copy(text);
    char* end = nullptr;
    errno = 0;
    const unsigned long long value = std::strtoull(copy.c_str(), &end, 10);
    if (copy.empty() || *end != '\0' || errno != 0 || copy[0] == '-' || copy[0] == '+' || value < min ||
        value > max)
        return std::nullopt;
    return static_cast<std::size_t>(value);
}

std::optional<milliseconds> parse_seconds(const char* text)
{
    char* end = nullptr;
    errno = 0;
    const double value = std::strtod(text, &end);
    if (end == text || *end != '\0' || errno != 0 || !(value > 0.0) || value > 3600.0)
        return std::nullopt;
    return milliseconds(std::llround(value * 1000.0));
}

std::optional<std::vector<std::size_t>> parse_schedule(std::string_view text)
{
    std::vector<std::size_t> limits;
    for (;;)
    {
        const std::size_t comma = text.find(',');
        const auto limit = parse_count(text.substr(0, comma), 1, max_limit);
        if (!limit || limits.size() == max_phases)
            return std::nullopt;
        limits.push_back(*limit);
        if (comma == std::string_view::npos)
            return limits;
        text.remove_prefix(comma + 1);
    }
}

// Returns the options, or the exit code when the program should stop here.
std::variant<options, int> parse_options(int argc, char** argv)
{
    options result;
    for (int i = 1; i < argc; i += 2) // every option but --help takes a value
    {
        const std::string_view arg = argv[i];
        if (arg == "--help" || arg == "-h")
        {
            std::fputs(usage, stdout);
            return 0;
        }
        const char* value = i + 1 < argc ? argv[i + 1] : nullptr;
        bool valid = value != nullptr;
        if (valid && arg == "--duration")
        {
            const auto duration = parse_seconds(value);
            valid = duration.has_value() && *duration > 0ms;
            result.duration = duration.value_or(0ms);
        }
        else if (valid && arg == "--schedule")
        {
            auto schedule = parse_schedule(value);
            valid = schedule.has_value();
            result.schedule = std::move(schedule).value_or(std::vector<std::size_t>());
        }
        else if (valid && arg == "--workers")
        {
            const auto workers = parse_count(value, 1, 1000);
            valid = workers.has_value();
            result.workers = workers.value_or(0);
        }
        else
        {
            valid = false;
        }
        if (!valid)
        {
            std::fprintf(stderr, "resizable_pool: bad argument '%s%s%s'\n\n%s", argv[i], value ? " " : "",
                         value ? value : "", usage);
            return 2;
        }
    }
    return result;
}

double seconds_between(clock_type::time_point from, clock_type::time_point to)
{
    return std::chrono::duration<double>(to - from).count();
}

void raise_to(std::atomic<std::size_t>& max, std::size_t value)
{
    std::size_t seen = max.load();
    while (value > seen && !max.compare_exchange_weak(seen, value))
    {
    }
}

// What happened in one phase of the schedule.
struct phase_stats
{
    std::size_t limit = 0; // from the schedule, set before any worker runs

    // Kept by the workers: every admission counts, those made within the phase are checked.
    std::atomic<std::size_t> admitted{0};
    std::atomic<std::size_t> checked{0};
    std::atomic<std::size_t> max_checked{0}; // the most in flight that a checked admission saw
    std::atomic<std::size_t> over_the_limit{0};

    // Kept by the controller.
    std::size_t in_flight_before = 0;       // just before the change
    std::optional<double> settled_after_ms; // until the count was back within (or up to) the limit
};

// The state the workers and the controller share. They run on every thread of the pool.
//
// `phase_word` is 2p while phase p is in force and 2p - 1 while the controller changes the limit
// for it. A worker reads it before asking for a permit and again once it has counted itself in.
// If both reads give the same even value, the limit did not move in between, so its permit was
// granted after phase p's change was made. No reduction's debt is open at a grant: from then on
// every permit in use fits under the limit, and since everyone counted in holds a permit, the
// count it saw must not exceed the limit. A worker admitted across a change is not checked: it may
// have been granted under the old limit.
struct pool_state
{
    explicit pool_state(const std::vector<std::size_t>& schedule) : phases(schedule.size())
    {
        for (std::size_t p = 0; p < schedule.size(); ++p)
            phases[p].limit = schedule[p];
    }

    std::atomic<std::size_t> in_flight{0};
    std::atomic<std::size_t> phase_word{0};
    std::atomic<std::size_t> jobs_done{0};
    std::atomic<std::size_t> failed_coroutines{0};
    std::vector<phase_stats> phases;

    void record_admission(std::size_t asked_in, std::size_t admitted_in, std::size_t in_flight_now)
    {
        phase_stats& phase = phases[(admitted_in + 1) / 2];
        phase.admitted.fetch_add(1);
        if (asked_in != admitted_in || admitted_in % 2 != 0)
            return;
        phase.checked.fetch_add(1);
        raise_to(phase.max_checked, in_flight_now);
        if (in_flight_now > phase.limit)
            phase.over_the_limit.fetch_add(1);
    }
};

// Completion of every detached coroutine: an exception there is a bug in this program.
struct count_failure
{
    const char* what;
    pool_state* state;

    void operator()(std::exception_ptr e) const
    {
        if (!e)
            return;
        state->failed_coroutines.fetch_add(1);
        try
        {
            std::rethrow_exception(e);
        }
        catch (const std::exception& ex)
        {
            std::fprintf(stderr, "resizable_pool: %s failed: %s\n", what, ex.what());
        }
        catch (...)
        {
            std::fprintf(stderr, "resizable_pool: %s failed\n", what);
        }
    }
};

// Takes a permit, runs a job while holding it, gives it back; until the semaphore is closed.
awaitable<void> run_worker(std::uint64_t seed, asio_sync::semaphore& limit, pool_state& state)
{
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<microseconds::rep> job_time(job_min.count(), job_max.count());
    asio::steady_timer job(co_await asio::this_coro::executor);
    for (;;)
    {
        const std::size_t asked_in = state.phase_word.load();
        auto [ec, permit] = co_await limit.async_acquire_permit(1, as_result);
        if (ec == asio_sync::error::closed)
            co_return;
        if (ec)
            throw boost::system::system_error(ec);

        const std::size_t in_flight_now = state.in_flight.fetch_add(1) + 1;
        state.record_admission(asked_in, state.phase_word.load(), in_flight_now);
        // The job: a timer stands in for the real work. Nothing interrupts it when the limit drops.
        job.expires_after(microseconds(job_time(rng)));
        co_await job.async_wait(as_result);
        state.jobs_done.fetch_add(1);

        // Leave the count before the permit goes back: the worker it lets in must not be counted
        // alongside this one, or the count would overstate the concurrency.
        state.in_flight.fetch_sub(1);
        permit.release();
    }
}

// Moves the limit through the schedule, and watches the count in between.
awaitable<void> control(asio_sync::semaphore& limit, const options& opts, clock_type::time_point start,
                        pool_state& state, bool& capacity_ok)
{
    asio::steady_timer timer(co_await asio::this_coro::executor);
    const auto phase_length = opts.duration / static_cast<double>(opts.schedule.size());
    const auto phase_end = [&](std::size_t p) {
        return start +
               std::chrono::duration_cast<clock_type::duration>(phase_length * static_cast<double>(p + 1));
    };

    std::size_t phase = 0;
    bool settling = false; // watching the count move to the limit after a change
    bool reduced = false;  // and the change was a reduction
    auto changed_at = start;
    std::size_t last_shown = 0;
    auto next_status = start + status_interval;
    std::printf("%5.2fs  limit %zu  (capacity() = %zu)\n", 0.0, opts.schedule[0], limit.capacity());

    for (auto next = start + sample_interval;; next += sample_interval)
    {
        timer.expires_at(next);
        co_await timer.async_wait(as_result);
        auto now = clock_type::now();

        if (now >= phase_end(phase))
        {
            if (phase + 1 == opts.schedule.size())
                break;
            ++phase;
            const std::size_t from = limit.capacity();
            const std::size_t to = opts.schedule[phase];
            const std::size_t in_flight = state.in_flight.load();
            state.phase_word.store(2 * phase - 1);
            if (to > from)
                limit.add_permits(to - from); // new permits go to queued workers first
            else if (to < from)
                limit.reduce_permits(from - to); // takes what is free now, the rest as jobs finish
            state.phase_word.store(2 * phase);
            now = clock_type::now();
            capacity_ok = capacity_ok && limit.capacity() == to;

            state.phases[phase].in_flight_before = in_flight;
            if (to > from)
                std::printf(
                    "%5.2fs  limit %zu -> %zu  add_permits(%zu)     capacity() = %zu, in flight %zu\n",
                    seconds_between(start, now), from, to, to - from, limit.capacity(), in_flight);
            else if (to < from)
                std::printf(
                    "%5.2fs  limit %zu -> %zu  reduce_permits(%zu)  capacity() = %zu, in flight %zu%s\n",
                    seconds_between(start, now), from, to, from - to, limit.capacity(), in_flight,
                    in_flight > to ? ": their jobs keep running" : "");
            else
                std::printf("%5.2fs  limit %zu, unchanged\n", seconds_between(start, now), to);
            settling = to != from;
            reduced = to < from;
            changed_at = now;
            last_shown = in_flight;
        }

        // While the count moves to the new limit, show every value it passes through. With fewer
        // workers than the limit it tops out at the number of workers.
        const std::size_t in_flight = state.in_flight.load();
        const std::size_t target = std::min(opts.schedule[phase], opts.workers);
        if (settling && in_flight != last_shown)
        {
            last_shown = in_flight;
            std::printf("%5.2fs    in flight %zu\n", seconds_between(start, now), in_flight);
        }
        if (settling && (reduced ? in_flight <= target : in_flight >= target))
        {
            settling = false;
            const double after_ms = seconds_between(changed_at, now) * 1000.0;
            state.phases[phase].settled_after_ms = after_ms;
            std::printf("%5.2fs    %s after %.1f ms\n", seconds_between(start, now),
                        reduced ? "drained to the limit" : "up to the limit", after_ms);
        }

        if (now >= next_status)
        {
            std::printf("%5.2fs  limit %zu, in flight %zu, queued %zu, jobs done %zu\n",
                        seconds_between(start, now), limit.capacity(), in_flight, limit.waiting(),
                        state.jobs_done.load());
            next_status += status_interval;
        }
    }

    // Queued workers complete with error::closed; jobs in flight finish and give their permits back.
    const std::size_t queued = limit.waiting();
    limit.close();
    std::printf("%5.2fs  semaphore closed: %zu queued workers turned away, %zu jobs finishing\n",
                seconds_between(start, clock_type::now()), queued, state.in_flight.load());
}

std::string describe_change(std::size_t from, std::size_t to)
{
    if (to > from)
        return "add_permits(" + std::to_string(to - from) + ")";
    if (to < from)
        return "reduce_permits(" + std::to_string(from - to) + ")";
    return "unchanged";
}

} // namespace

int main(int argc, char** argv)
{
    const auto parsed = parse_options(argc, argv);
    if (const int* exit_code = std::get_if<int>(&parsed))
        return *exit_code;
    const options opts = std::get<options>(parsed);
    const std::vector<std::size_t>& schedule = opts.schedule;

    asio::thread_pool pool(pool_threads);
    // A bounded semaphore: the bound is the limit, and every permit of it starts free.
    asio_sync::semaphore limit(pool, schedule[0], schedule[0]);
    pool_state state(schedule);
    bool capacity_ok = limit.capacity() == schedule[0];

    std::printf("resizable_pool: %zu workers on %u threads, jobs of %lld-%lld ms, %zu phases of %.2f s\n",
                opts.workers, pool_threads, static_cast<long long>(job_min.count() / 1000),
                static_cast<long long>(job_max.count() / 1000), schedule.size(),
                std::chrono::duration<double>(opts.duration).count() / static_cast<double>(schedule.size()));

    const auto start = clock_type::now();
    std::mt19937_64 seeds(std::random_device{}());
    for (std::size_t w = 0; w < opts.workers; ++w)
        asio::co_spawn(pool, run_worker(seeds(), limit, state), count_failure{"worker", &state});
    asio::co_spawn(pool, control(limit, opts, start, state, capacity_ok),
                   count_failure{"controller", &state});

    // Returns once the controller has closed the semaphore and every worker has ended.
    pool.join();

    // Every permit is back in the semaphore now, so forget_permits can take the whole capacity.
    const std::size_t final_limit = limit.capacity();
    const std::size_t retired = limit.forget_permits(final_limit);
    capacity_ok = capacity_ok && final_limit == schedule.back();
    const bool permits_ok = retired == final_limit && limit.capacity() == 0 && limit.available() == 0 &&
                            state.in_flight.load() == 0;

    std::printf("\nper phase (\"checked\": workers admitted within the phase, after any reduction drained;\n"
                "\"max in flight\": the most that any of them saw in flight, itself included)\n");
    std::printf("  phase  limit  change              in flight before  settled after  admitted  checked  "
                "max in flight  within limit\n");
    bool limits_ok = true;
    for (std::size_t p = 0; p < schedule.size(); ++p)
    {
        const phase_stats& phase = state.phases[p];
        const bool ok = phase.over_the_limit.load() == 0;
        limits_ok = limits_ok && ok;
        const std::string change = p == 0 ? "initial" : describe_change(schedule[p - 1], schedule[p]);
        char settled[32] = "-";
        if (phase.settled_after_ms)
            std::snprintf(settled, sizeof settled, "%.1f ms", *phase.settled_after_ms);
        std::printf("  %5zu  %5zu  %-18s  %16zu  %13s  %8zu  %7zu  %13zu  %s\n", p + 1, phase.limit,
                    change.c_str(), phase.in_flight_before, settled, phase.admitted.load(),
                    phase.checked.load(), phase.max_checked.load(), ok ? "yes" : "NO");
    }

    const bool ok = limits_ok && capacity_ok && permits_ok && state.failed_coroutines.load() == 0;
    std::printf("\nsummary\n");
    std::printf("  jobs done                     %zu\n", state.jobs_done.load());
    std::printf("  never above the limit         %s\n", limits_ok ? "yes" : "NO");
    std::printf("  capacity() followed schedule  %s\n", capacity_ok ? "yes" : "NO");
    std::printf("  every permit came back        %s: forget_permits(%zu) retired %zu, capacity() now %zu\n",
                permits_ok ? "yes" : "NO", final_limit, retired, limit.capacity());
    std::printf("%s\n", ok ? "OK" : "FAILED");
    return ok ? 0 : 1;
}
