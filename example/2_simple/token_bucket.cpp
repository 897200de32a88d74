// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

// token_bucket: a token-bucket rate limiter built on a bounded asio_sync::semaphore.
//
// The bucket is a semaphore whose bound is the burst size, and it starts full. A request takes a
// token with a plain async_acquire: the token is spent, it leaves circulation and is never given
// back. A timer refills the bucket every tick with try_release, one token at a time. A bounded
// semaphore refuses a release that would put more than its bound in circulation, so once the
// bucket is full try_release returns false and the token is dropped: tokens accrue up to the
// burst size and no further, which is exactly what a token bucket does.
//
// A few clients fire requests back to back, far faster than the rate, except during a quiet
// stretch in the middle of the run. While they are busy the bucket is empty and they are served at
// the rate, taking turns (waiters are served in FIFO order). While they are quiet the bucket fills
// up to the burst, then drops the surplus; when they come back the whole burst is served at once.
//
// Every 100 ms the program prints the tokens in the bucket, the requests served and the most the
// bucket could have allowed by then. At the end it checks that no more requests were served than
// burst + rate * elapsed and that every token is accounted for, and exits non-zero if not.
//
//   token_bucket [--duration SECONDS] [--rate PER_SECOND] [--burst N] [--clients N] [--help]

#include <asio_sync/semaphore.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <variant>
#include <vector>

namespace {

namespace asio = boost::asio;
using asio::awaitable;
using clock_type = std::chrono::steady_clock;
using milliseconds = std::chrono::milliseconds;
using namespace std::chrono_literals;

constexpr auto as_result = asio::as_tuple(asio::use_awaitable);

constexpr unsigned io_threads = 2;
constexpr milliseconds tick = 10ms;             // how often the bucket is refilled
constexpr milliseconds report_interval = 100ms; // how often a line is printed
constexpr double quiet_from = 0.4;              // the clients' quiet stretch, as fractions of the run
constexpr double quiet_until = 0.6;
constexpr std::size_t bar_width = 20;

struct options
{
    milliseconds duration = 1500ms;
    double rate = 200.0; // tokens per second
    std::size_t burst = 20;
    std::size_t clients = 8;
};

constexpr const char usage[] =
    "usage: token_bucket [--duration SECONDS] [--rate PER_SECOND] [--burst N] [--clients N] [--help]\n"
    "\n"
    "Rate-limits a few greedy clients with a token bucket: a bounded semaphore whose bound is the\n"
    "burst size, refilled by a timer. The clients pause in the middle of the run so that the bucket\n"
    "fills up. Checks that no more requests were served than burst + rate * elapsed.\n"
    "\n"
    "  --duration SECONDS   how long the clients run (default 1.5)\n"
    "  --rate PER_SECOND    tokens added per second (default 200)\n"
    "  --burst N            the bucket's size, 1 to 1000000 (default 20)\n"
    "  --clients N          clients firing requests, 1 to 1000 (default 8)\n"
    "  --help               show this text\n";

std::optional<std::size_t> parse_count(const char* text, std::size_t min, std::size_t max)
{
    char* end = nullptr;
    errno = 0;
    const unsigned long long value = std::strtoull(text, &end, 10);
    if (end == text || *end != '\0' || errno != 0 || text[0] == '-' || value < min || value > max)
        return std::nullopt;
    return static_cast<std::size_t>(value);
}

std::optional<double> parse_positive(const char* text, double max)
{
    char* end = nullptr;
    errno = 0;
    const double value = std::strtod(text, &end);
    if (end == text || *end != '\0' || errno != 0 || !(value > 0.0) || value > max)
        return std::nullopt;
    return value;
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
            const auto seconds = parse_positive(value, 3600.0);
            valid = seconds.has_value();
            result.duration = milliseconds(std::llround(seconds.value_or(0.0) * 1000.0));
            valid = valid && result.duration > 0ms;
        }
        else if (valid && arg == "--rate")
        {
            const auto rate = parse_positive(value, 1e6);
            valid = rate.has_value();
            result.rate = rate.value_or(0.0);
        }
        else if (valid && arg == "--burst")
        {
            const auto burst = parse_count(value, 1, 1000000);
            valid = burst.has_value();
            result.burst = burst.value_or(0);
        }
        else if (valid && arg == "--clients")
        {
            const auto clients = parse_count(value, 1, 1000);
            valid = clients.has_value();
            result.clients = clients.value_or(0);
        }
        else
        {
            valid = false;
        }
        if (!valid)
        {
            std::fprintf(stderr, "token_bucket: bad argument '%s%s%s'\n\n%s", argv[i], value ? " " : "",
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

// The most requests the bucket may have served `elapsed` seconds after the start: the tokens it
// started with, plus those the rate has added since.
double allowed(const options& opts, double elapsed)
{
    return static_cast<double>(opts.burst) + opts.rate * elapsed;
}

// What the clients and the refill timer count. The clients run on both threads, hence atomics.
struct bucket_stats
{
    std::atomic<std::size_t> served{0};
    std::atomic<std::size_t> failed_coroutines{0};
    std::vector<std::size_t> served_per_client; // each slot is written by its own client only

    // Written by the refill timer, read once the run is over.
    std::size_t refilled = 0;         // tokens try_release put into the bucket
    std::size_t dropped = 0;          // tokens refused because the bucket was full
    std::size_t over_the_limit = 0;   // checks that found more requests served than allowed
    std::size_t over_the_bound = 0;   // checks that found more tokens in the bucket than the burst
    std::size_t most_tokens = 0;      // the most tokens a check found in the bucket
    clock_type::time_point closed_at; // when the bucket stopped handing out tokens
};

// Completion of every detached coroutine: an exception there is a bug in this program.
struct count_failure
{
    const char* what;
    bucket_stats* stats;

    void operator()(std::exception_ptr e) const
    {
        if (!e)
            return;
        stats->failed_coroutines.fetch_add(1);
        try
        {
            std::rethrow_exception(e);
        }
        catch (const std::exception& ex)
        {
            std::fprintf(stderr, "token_bucket: %s failed: %s\n", what, ex.what());
        }
        catch (...)
        {
            std::fprintf(stderr, "token_bucket: %s failed\n", what);
        }
    }
};

std::string fill_bar(std::size_t tokens, std::size_t burst)
{
    const std::size_t filled = (tokens * bar_width + burst - 1) / burst;
    return "[" + std::string(std::min(filled, bar_width), '#') +
           std::string(bar_width - std::min(filled, bar_width), ' ') + "]";
}

// Fires requests back to back, each after taking a token, except during the quiet stretch. Ends
// when the bucket is closed.
awaitable<void> run_client(std::size_t id, asio_sync::semaphore& bucket, clock_type::time_point quiet_start,
                           clock_type::time_point quiet_end, bucket_stats& stats)
{
    asio::steady_timer timer(co_await asio::this_coro::executor);
    for (;;)
    {
        const auto now = clock_type::now();
        if (now >= quiet_start && now < quiet_end)
        {
            timer.expires_at(quiet_end);
            co_await timer.async_wait(as_result);
        }
        // A plain acquire spends the token: it is never released, the refill replaces it.
        auto [ec] = co_await bucket.async_acquire(as_result);
        if (ec == asio_sync::error::closed)
            co_return;
        if (ec)
            throw boost::system::system_error(ec);
        // This is where the request would be sent.
        ++stats.served_per_client[id];
        stats.served.fetch_add(1);
    }
}

// Every tick, adds the tokens the rate has earned since the start that it has not added yet; every
// report interval, prints a line. Closes the bucket when the time is up.
awaitable<void> refill(asio_sync::semaphore& bucket, const options& opts, clock_type::time_point start,
                       bucket_stats& stats)
{
    std::printf("  time  bucket                        served  total  allowed  queued  dropped\n");
    asio::steady_timer timer(co_await asio::this_coro::executor);
    const auto deadline = start + opts.duration;
    std::size_t earned = 0; // tokens the rate has earned so far, whether they fitted or not
    std::size_t served_at_last_report = 0;
    auto next_report = start + report_interval;
    for (auto next = start + tick; next <= deadline; next += tick)
    {
        timer.expires_at(next);
        co_await timer.async_wait(as_result);

        const auto due = static_cast<std::size_t>(opts.rate * seconds_between(start, clock_type::now()));
        for (; earned < due; ++earned)
        {
            // False when the bucket is full: a bounded semaphore never holds more than its bound.
            if (bucket.try_release())
                ++stats.refilled;
            else
                ++stats.dropped;
        }

        // Read the count first: every request it includes was served before `now`.
        const std::size_t served = stats.served.load();
        const std::size_t tokens = bucket.available();
        const auto now = clock_type::now();
        if (static_cast<double>(served) > allowed(opts, seconds_between(start, now)))
            ++stats.over_the_limit;
        if (tokens > opts.burst)
            ++stats.over_the_bound;
        stats.most_tokens = std::max(stats.most_tokens, tokens);

        if (now >= next_report)
        {
            const double t = seconds_between(start, now);
            std::printf("%5.2fs  %5zu %s  %6zu  %5zu  %7.0f  %6zu  %7zu\n", t, tokens,
                        fill_bar(tokens, opts.burst).c_str(), served - served_at_last_report, served,
                        std::floor(allowed(opts, t)), bucket.waiting(), stats.dropped);
            served_at_last_report = served;
            next_report += report_interval;
        }
    }

    // No more tokens: queued clients complete with error::closed, later acquires fail at once.
    stats.closed_at = clock_type::now();
    const std::size_t queued = bucket.waiting();
    bucket.close();
    std::printf("%5.2fs  bucket closed, %zu queued clients turned away\n",
                seconds_between(start, stats.closed_at), queued);
}

} // namespace

int main(int argc, char** argv)
{
    const auto parsed = parse_options(argc, argv);
    if (const int* exit_code = std::get_if<int>(&parsed))
        return *exit_code;
    const options opts = std::get<options>(parsed);

    asio::io_context ctx(io_threads);
    // The bound is the burst size, and the bucket starts full.
    asio_sync::semaphore bucket(ctx, opts.burst, opts.burst);
    bucket_stats stats;
    stats.served_per_client.assign(opts.clients, 0);

    std::printf("token_bucket: rate %.1f/s, burst %zu, %zu clients on %u threads, %.2f s "
                "(quiet from %.2f s to %.2f s)\n",
                opts.rate, bucket.capacity(), opts.clients, io_threads,
                std::chrono::duration<double>(opts.duration).count(),
                quiet_from * std::chrono::duration<double>(opts.duration).count(),
                quiet_until * std::chrono::duration<double>(opts.duration).count());

    const auto start = clock_type::now();
    const auto quiet_start =
        start + std::chrono::duration_cast<clock_type::duration>(opts.duration * quiet_from);
    const auto quiet_end =
        start + std::chrono::duration_cast<clock_type::duration>(opts.duration * quiet_until);
    asio::co_spawn(ctx, refill(bucket, opts, start, stats), count_failure{"refill", &stats});
    for (std::size_t id = 0; id < opts.clients; ++id)
        asio::co_spawn(ctx, run_client(id, bucket, quiet_start, quiet_end, stats),
                       count_failure{"client", &stats});

    // No stop(): run() returns once the bucket is closed and every client has ended.
    std::thread second_thread([&ctx] { ctx.run(); });
    ctx.run();
    second_thread.join();

    const double elapsed = seconds_between(start, stats.closed_at);
    const std::size_t served = stats.served.load();
    const double limit = allowed(opts, elapsed);
    const std::size_t left = bucket.available();
    const auto [fewest, most] =
        std::minmax_element(stats.served_per_client.begin(), stats.served_per_client.end());

    // Tokens in: the initial burst and the refills that fitted. Tokens out: one per request served.
    const bool rate_ok = static_cast<double>(served) <= limit && stats.over_the_limit == 0;
    const bool bound_ok = stats.over_the_bound == 0 && left <= opts.burst && bucket.capacity() == opts.burst;
    const bool tokens_ok = opts.burst + stats.refilled == served + left;
    const bool ok = rate_ok && bound_ok && tokens_ok && stats.failed_coroutines.load() == 0;

    std::printf("\nsummary\n");
    std::printf("  elapsed                 %.3f s\n", elapsed);
    std::printf("  requests served         %zu (%.1f/s; the rate is %.1f/s)\n", served,
                static_cast<double>(served) / elapsed, opts.rate);
    std::printf("  most allowed            %.1f = burst %zu + %.1f/s * %.3f s  within it: %s\n", limit,
                opts.burst, opts.rate, elapsed, rate_ok ? "yes" : "NO");
    std::printf("  refills                 %zu added, %zu dropped because the bucket was full\n",
                stats.refilled, stats.dropped);
    std::printf("  never above the burst   %s (most tokens seen in the bucket: %zu of %zu)\n",
                bound_ok ? "yes" : "NO", stats.most_tokens, opts.burst);
    std::printf("  tokens accounted for    %zu initial + %zu refilled = %zu served + %zu left: %s\n",
                opts.burst, stats.refilled, served, left, tokens_ok ? "yes" : "NO");
    std::printf("  served per client       %zu to %zu (FIFO: waiting clients take turns)\n", *fewest, *most);
    std::printf("%s\n", ok ? "OK" : "FAILED");
    return ok ? 0 : 1;
}
