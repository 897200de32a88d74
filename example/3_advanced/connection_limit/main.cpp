// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

// connection_limit: a TCP server that accepts every connection but serves at most K at once.
//
// Each accepted connection becomes a session that waits, in FIFO order, for one of the K permits
// of an asio_sync::semaphore. While it waits it watches its socket: a client that hangs up leaves
// the queue through per-operation cancellation. Every session holds an entry in an asio_sync::gate.
// When the run is over the server stops accepting and closes the semaphore, so queued sessions are
// turned away and active ones finish, then closes the gate and waits for every session still in
// flight before it reports; io_context::run() returns by itself because no work is left.
//
// One exchange per connection:
//   client -> "REQUEST <id>\n"
//   server -> "DONE <id>\n"  after a short piece of work done while holding a permit, or
//             "CLOSED\n"     if the server shut down while the session was queued.
//
// The same process runs a crowd of loopback clients, each with its own patience: a client that
// has waited longer than that for its reply hangs up and, after a pause, tries again.
//
// With --redis the K permits are those of an asio_sync::redis::semaphore, shared by every process
// that opens the same name on that server: several of these programs then serve at most K
// sessions at once between them (scripts/fleet-demo runs three). With --shares as well they are
// those of an asio_sync::redis::share_semaphore: each process serves its sessions from its share of
// the K, leased from Redis, without a call to Redis per session.
//
// With --adaptive an asio_sync::adaptive_limiter, at most K, decides how many sessions are served
// at once, from how long the sessions it admits take; the work then slows down in proportion once
// more than K/2 sessions run at once (a backend with a knee), and the report shows the limit.

#include <asio_sync/adaptive_limiter.hpp>
#include <asio_sync/aimd_limit.hpp>
#include <asio_sync/gate.hpp>
#include <asio_sync/gradient2_limit.hpp>
#include <asio_sync/semaphore.hpp>
#include <asio_sync/vegas_limit.hpp>
#include <asio_sync/wait_histogram.hpp>
#if defined(ASIO_SYNC_EXAMPLE_REDIS)
#include <asio_sync/redis/semaphore.hpp>
#include <asio_sync/redis/share_semaphore.hpp>

#include <boost/asio/executor_work_guard.hpp>

#include <fstream>
#include <tuple>
#endif

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <variant>
#include <vector>

namespace {

namespace asio = boost::asio;
using asio::awaitable;
using asio::ip::tcp;
using boost::system::error_code;
using clock_type = std::chrono::steady_clock;
using milliseconds = std::chrono::milliseconds;
using namespace std::chrono_literals;

constexpr auto as_result = asio::as_tuple(asio::use_awaitable);

constexpr unsigned io_threads = 2;
constexpr milliseconds report_interval = 100ms;
constexpr int work_min_ms = 10; // how long a session holds its permit
constexpr int work_max_ms = 40;
constexpr int patience_min_ms = 100; // how long a client waits for its reply
constexpr int patience_max_ms = 2000;
constexpr int pause_max_ms = 100;    // between a client's exchanges
constexpr int start_spread_ms = 200; // clients arrive over this first stretch
constexpr int max_rounds_per_client = 1000;
constexpr std::size_t max_line = 64;
constexpr std::size_t max_clients = 400; // each uses two descriptors, one per end

struct options
{
    std::size_t k = 4;
    std::size_t clients = 64;
    milliseconds duration = 3000ms;
    std::string redis_host; // empty: the permits are local to this process
    std::uint16_t redis_port = 0;
    std::string redis_spec;  // as given to --redis
    std::string master_name; // with sentinels: the name they watch the primary by
    std::vector<std::pair<std::string, std::uint16_t>> sentinels;
    unsigned durable_replicas = 0;
    std::string name = "connection_limit";
    milliseconds lease = 2000ms;
    bool shares = false; // the K permits served from a share leased from Redis
    std::string log_path;
    std::string adaptive; // empty: K sessions at once; else the limit algorithm
};

constexpr const char usage[] =
    "usage: connection_limit [--k N] [--clients N] [--duration SECONDS] [--adaptive vegas|gradient2|aimd]\n"
    "                        [--redis HOST:PORT|MASTER@SENTINEL,... [--name NAME] [--lease MS]\n"
    "                         [--durable N | --shares] [--log FILE]] [--help]\n"
    "\n"
    "Runs a TCP server on 127.0.0.1 that accepts every connection but serves at most K at once,\n"
    "and a crowd of loopback clients against it, some of which lose patience while queued. After\n"
    "the duration the server shuts down gracefully and prints a summary.\n"
    "\n"
    "  --k N               sessions served at once (default 4)\n"
    "  --clients N         clients in the crowd, 1 to 400 (default 64)\n"
    "  --duration SECONDS  how long the server runs before shutting down (default 3)\n"
    "  --adaptive ALGO     let an adaptive limiter (vegas, gradient2 or aimd), at most K, find how\n"
    "                      many sessions to serve at once; the work slows down in proportion past\n"
    "                      K/2 sessions at once, and the report shows the limit\n"
    "  --redis HOST:PORT   take the K permits from a semaphore in this Redis server, shared by\n"
    "                      every process that uses the same name there; MASTER@HOST:PORT,HOST:PORT\n"
    "                      finds the primary named MASTER through these Redis Sentinels\n"
    "  --name NAME         the semaphore's name in Redis (default connection_limit)\n"
    "  --lease MS          the lease of a fleet permit, in milliseconds (default 2000)\n"
    "  --durable N         grant a fleet permit only once N replicas have it (default 0)\n"
    "  --shares            serve the K permits from this process' share of them, leased from\n"
    "                      Redis for the lease above (a share_semaphore: no call per session)\n"
    "  --log FILE          write one line per fleet permit held: the steady-clock nanoseconds of\n"
    "                      its grant and of its end, the nanoseconds waited, its fencing token\n"
    "                      (with --shares, that of the share it came from)\n"
    "  --help              show this text\n";

std::optional<std::size_t> parse_count(const char* text, std::size_t min, std::size_t max)
{
    char* end = nullptr;
    errno = 0;
    const unsigned long long value = std::strtoull(text, &end, 10);
    if (end == text || *end != '\0' || errno != 0 || text[0] == '-' || value < min || value > max)
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
    return milliseconds(static_cast<long long>(std::llround(value * 1000.0)));
}

bool is_fleet_option(std::string_view arg)
{
    return arg == "--redis" || arg == "--name" || arg == "--lease" || arg == "--durable" || arg == "--log";
}

// Parses one of the options of is_fleet_option into `result`; false if `value` is bad.
bool parse_fleet_option(std::string_view arg, std::string_view value, options& result)
{
    if (arg == "--redis")
    {
        // HOST:PORT, or [IPv6]:PORT; or MASTER@ followed by sentinels, each HOST:PORT, comma-separated
        const auto address = [](std::string_view text, std::string& host, std::uint16_t& port) {
            const std::size_t colon = text.rfind(':');
            if (colon == std::string_view::npos || colon == 0)
                return false;
            std::string_view name = text.substr(0, colon);
            if (name.size() > 2 && name.front() == '[' && name.back() == ']')
                name = name.substr(1, name.size() - 2);
            const auto number = parse_count(std::string(text.substr(colon + 1)).c_str(), 1, 65535);
            host = name;
            port = static_cast<std::uint16_t>(number.value_or(0));
            return number.has_value();
        };
        result.redis_spec = value;
        const std::size_t at = value.find('@');
        if (at == std::string_view::npos)
            return address(value, result.redis_host, result.redis_port);
        result.master_name = value.substr(0, at);
        result.redis_host = "sentinel";
        for (std::string_view rest = value.substr(at + 1); !rest.empty();)
        {
            const std::size_t comma = rest.find(',');
            std::pair<std::string, std::uint16_t> sentinel;
            if (!address(rest.substr(0, comma), sentinel.first, sentinel.second))
                return false;
            result.sentinels.push_back(sentinel);
            rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
        }
        return !result.master_name.empty() && !result.sentinels.empty();
    }
    if (arg == "--durable")
    {
        const auto replicas = parse_count(std::string(value).c_str(), 0, 100);
        result.durable_replicas = static_cast<unsigned>(replicas.value_or(0));
        return replicas.has_value();
    }
    if (arg == "--name")
    {
        result.name = value;
        return !value.empty();
    }
    if (arg == "--lease")
    {
        const auto lease = parse_count(std::string(value).c_str(), 10, 3600000);
        result.lease = milliseconds(lease.value_or(0));
        return lease.has_value();
    }
    result.log_path = value; // --log
    return !value.empty();
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
        if (arg == "--shares") // the one option without a value
        {
            result.shares = true;
            --i;
            continue;
        }
        const char* value = i + 1 < argc ? argv[i + 1] : nullptr;
        bool valid = value != nullptr;
        if (valid && arg == "--k")
        {
            const auto k = parse_count(value, 1, 100000);
            valid = k.has_value();
            result.k = k.value_or(0);
        }
        else if (valid && arg == "--clients")
        {
            const auto clients = parse_count(value, 1, max_clients);
            valid = clients.has_value();
            result.clients = clients.value_or(0);
        }
        else if (valid && arg == "--duration")
        {
            const auto duration = parse_seconds(value);
            valid = duration.has_value();
            result.duration = duration.value_or(0ms);
        }
        else if (valid && arg == "--adaptive")
        {
            result.adaptive = value;
            valid = result.adaptive == "vegas" || result.adaptive == "gradient2" || result.adaptive == "aimd";
        }
        else if (valid && is_fleet_option(arg))
        {
            valid = parse_fleet_option(arg, value, result);
        }
        else
        {
            valid = false;
        }
        if (!valid)
        {
            std::fprintf(stderr, "connection_limit: bad argument '%s%s%s'\n\n%s", argv[i], value ? " " : "",
                         value ? value : "", usage);
            return 2;
        }
    }
    if (result.shares && (result.redis_host.empty() || result.durable_replicas != 0))
    {
        std::fprintf(stderr, "connection_limit: --shares goes with --redis, and without --durable\n\n%s",
                     usage);
        return 2;
    }
#if !defined(ASIO_SYNC_EXAMPLE_REDIS)
    if (!result.redis_host.empty())
    {
        std::fputs("connection_limit: built without asio_sync::redis (hiredis was not found): no --redis\n",
                   stderr);
        return 2;
    }
#endif
    return result;
}

double seconds_since(clock_type::time_point start)
{
    return std::chrono::duration<double>(clock_type::now() - start).count();
}

// The adaptive limiter of --adaptive: at most K, at least 1, starting at K; AIMD counts a session
// slower than twice the longest unloaded work as a drop.
asio_sync::adaptive_limiter* make_adaptive(std::optional<asio_sync::adaptive_limiter>& storage,
                                           asio::io_context& ctx, const options& opts)
{
    if (opts.adaptive == "vegas")
        return &storage.emplace(ctx, asio_sync::vegas_limit({opts.k, 1, opts.k}));
    if (opts.adaptive == "gradient2")
        return &storage.emplace(ctx, asio_sync::gradient2_limit({opts.k, 1, opts.k}));
    asio_sync::aimd_limit::options aimd{opts.k, 1, opts.k};
    aimd.timeout = milliseconds(2 * work_max_ms);
    return &storage.emplace(ctx, asio_sync::aimd_limit(aimd));
}

// A well-mixed number per session or client (splitmix64): neighbouring indices get unrelated values.
std::uint64_t seed_for(std::uint64_t base, std::uint64_t index)
{
    std::uint64_t z = base + (index + 1) * 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

int uniform(std::mt19937_64& rng, int min, int max)
{
    return std::uniform_int_distribution<int>(min, max)(rng);
}

// What the server counts. Sessions run on many strands, hence atomics and a mutex.
struct server_stats
{
    std::atomic<std::size_t> active{0};
    std::atomic<std::size_t> peak{0};
    std::atomic<std::size_t> served{0};
    std::atomic<std::size_t> left_while_served{0};
    std::atomic<std::size_t> abandoned{0};
    std::atomic<std::size_t> abandoned_after_grant{0};
    std::atomic<std::size_t> turned_away{0};
    std::atomic<std::size_t> limit_changes{0}; // with --adaptive
    std::atomic<std::size_t> lowest_limit{SIZE_MAX};
    std::atomic<std::size_t> highest_limit{0};
    std::size_t drained = 0; // sessions in flight at shutdown, all waited for
    double drain_ms = 0;     // from the gate's close until the last of them ended
    bool drained_ok = false; // the close completed and no session was left in the gate

    std::mutex wait_mutex;
    std::vector<double> wait_ms; // per served session: from its request to its permit

    void record_wait(double ms)
    {
        std::lock_guard lock(wait_mutex);
        wait_ms.push_back(ms);
    }
};

// What the clients saw.
struct client_stats
{
    std::atomic<std::size_t> replies{0};
    std::atomic<std::size_t> gave_up{0};
    std::atomic<std::size_t> turned_away{0};
};

// Completion of every detached coroutine: an exception there is a bug in this program, so it is
// reported and fails the run rather than escaping io_context::run() on some thread.
struct fail_on_exception
{
    const char* what;
    std::atomic<bool>* failed;

    void operator()(std::exception_ptr e) const
    {
        if (!e)
            return;
        failed->store(true);
        try
        {
            std::rethrow_exception(e);
        }
        catch (const std::exception& ex)
        {
            std::fprintf(stderr, "connection_limit: %s failed: %s\n", what, ex.what());
        }
        catch (...)
        {
            std::fprintf(stderr, "connection_limit: %s failed\n", what);
        }
    }
};

// One permit of the limit, held by a session. Counts the session active while held and gives the
// permit back exactly once, on whichever path the session ends.
class session_permit
{
public:
    session_permit(asio_sync::semaphore& limit, server_stats& stats) noexcept : limit_(limit), stats_(stats)
    {
        const std::size_t now_active = stats_.active.fetch_add(1) + 1;
        std::size_t peak = stats_.peak.load();
        while (now_active > peak && !stats_.peak.compare_exchange_weak(peak, now_active))
        {
        }
    }

    session_permit(const session_permit&) = delete;
    session_permit& operator=(const session_permit&) = delete;

    ~session_permit()
    {
        // Leave the count before the permit goes: the next holder, whose turn happens-after this
        // release, must never be counted alongside us, or the peak would overstate concurrency.
        stats_.active.fetch_sub(1);
        limit_.release();
    }

private:
    asio_sync::semaphore& limit_;
    server_stats& stats_;
};

// A session's view of its client while it has no reply yet. Shared with the watch on the socket;
// both run on the session's strand, as does the acquire's completion, so nothing here is touched
// concurrently and the cancellation signal is only ever emitted where its slot is used.
struct client_watch
{
    enum class stage
    {
        queued,
        working,
        replying,
    };

    explicit client_watch(const tcp::socket::executor_type& executor) : work(executor) {}

    stage current = stage::queued;
    bool peer_left = false;
    asio::cancellation_signal leave_queue;
    asio::steady_timer work;
    char byte = 0;
};

// The client sends nothing after its request until it has the reply, so a read that completes
// before then means it hung up (EOF or reset) or misbehaved. Queued, the session leaves the queue;
// working, it stops. A read rather than async_wait(wait_read): a wait can complete spuriously (on
// a readiness event left over from the request), while a read checks.
void watch_client(tcp::socket& socket, std::shared_ptr<client_watch> watch)
{
    char* byte = &watch->byte;
    socket.async_read_some(asio::buffer(byte, 1), [watch = std::move(watch)](error_code ec, std::size_t) {
        if (ec == asio::error::operation_aborted)
            return;
        watch->peer_left = true;
        if (watch->current == client_watch::stage::queued)
            watch->leave_queue.emit(asio::cancellation_type::terminal);
        else if (watch->current == client_watch::stage::working)
            watch->work.cancel();
    });
}

class fleet_limit;

#if defined(ASIO_SYNC_EXAMPLE_REDIS)

// One fleet permit held by a session, as --log writes it. Times are steady_clock, which is
// CLOCK_MONOTONIC on Linux: one clock for every process on the machine.
struct fleet_hold
{
    std::int64_t granted_ns;
    std::int64_t ended_ns;
    std::int64_t waited_ns; // from the request to the grant
    std::uint64_t fencing_token;
};

// A fleet permit: one of the semaphore in Redis, or (--shares) one of this process' share.
using share_permit = asio_sync::redis::share_semaphore::permit;
using fleet_permit = std::variant<asio_sync::redis::semaphore::permit, share_permit>;

// With --redis: the K permits live in Redis, shared by every process that opens the same name.
// The link to Redis has an io_context and a thread of its own, so that the sessions' io_context
// still runs out of work, and run() returns, once the last session has ended.
class fleet_limit
{
public:
    fleet_limit(const options& opts, asio::io_context::executor_type sessions_executor)
        : sessions_executor_(sessions_executor), connection_(redis_ctx_, connection_options_for(opts))
    {
        if (opts.shares)
            share_.emplace(connection_, opts.name, opts.k,
                           asio_sync::redis::share_options{opts.lease, {}, {}});
        else
            semaphore_.emplace(connection_, opts.name, opts.k, semaphore_options_for(opts));
        thread_ = std::thread([this] { redis_ctx_.run(); });
    }

    fleet_limit(const fleet_limit&) = delete;
    fleet_limit& operator=(const fleet_limit&) = delete;

    ~fleet_limit() { stop(); }

    // With --shares, the share semaphore; otherwise null.
    asio_sync::redis::share_semaphore* shares() { return share_ ? &*share_ : nullptr; }

    // The semaphore in Redis, without --shares.
    asio_sync::redis::semaphore& semaphore() { return *semaphore_; }

    // Takes one fleet permit; `slot` takes the acquire out of the queue.
    awaitable<std::tuple<error_code, fleet_permit>> acquire(asio::cancellation_slot slot)
    {
        if (share_)
        {
            auto [ec, permit] =
                co_await share_->async_acquire_permit(1, asio::bind_cancellation_slot(slot, as_result));
            co_return std::tuple<error_code, fleet_permit>(ec, std::move(permit));
        }
        auto [ec, permit] =
            co_await semaphore_->async_acquire_permit(1, asio::bind_cancellation_slot(slot, as_result));
        co_return std::tuple<error_code, fleet_permit>(ec, std::move(permit));
    }

    // The fencing token of a permit; with --shares, the share's.
    std::uint64_t fence_of(const fleet_permit& permit) const
    {
        if (share_)
            return share_->state().fence;
        return std::get<asio_sync::redis::semaphore::permit>(permit).fencing_token();
    }

    // Queued acquires complete with asio_sync::error::closed, later ones too.
    void close()
    {
        if (share_)
            share_->close();
        else
            semaphore_->close();
    }

    // Closes the link. Called once the sessions' io_context has returned: every permit is then
    // back in Redis, since each release keeps that context busy until Redis has answered it.
    void stop()
    {
        if (!thread_.joinable())
            return;
        semaphore_.reset();
        share_.reset();
        connection_.close();
        redis_work_.reset();
        thread_.join();
    }

    // Gives `permit` back, and notes how the session held it.
    void release(fleet_permit& permit, const fleet_hold& hold)
    {
        {
            std::lock_guard lock(mutex_);
            holds_.push_back(hold);
        }
        if (auto* from_share = std::get_if<share_permit>(&permit))
            return from_share->release();
        std::get<asio_sync::redis::semaphore::permit>(permit).async_release(
            [this, work = asio::make_work_guard(sessions_executor_)](error_code ec) {
                if (ec == asio_sync::redis::error::lease_lost || ec == asio_sync::redis::error::state_lost)
                    leases_lost_.fetch_add(1);
            });
    }

    std::size_t leases_lost() const { return leases_lost_.load(); }

    bool write_log(const std::string& path)
    {
        std::ofstream log(path);
        std::lock_guard lock(mutex_);
        for (const fleet_hold& hold : holds_)
            log << hold.granted_ns << ' ' << hold.ended_ns << ' ' << hold.waited_ns << ' '
                << hold.fencing_token << '\n';
        return static_cast<bool>(log.flush());
    }

private:
    static asio_sync::redis::connection_options connection_options_for(const options& opts)
    {
        asio_sync::redis::connection_options result;
        result.host = opts.redis_host;
        result.port = opts.redis_port;
        for (const auto& [host, port] : opts.sentinels)
            result.sentinels.push_back({host, port});
        result.master_name = opts.master_name;
        return result;
    }

    static asio_sync::redis::semaphore_options semaphore_options_for(const options& opts)
    {
        asio_sync::redis::semaphore_options result;
        result.lease_duration = opts.lease;
        result.durable_replicas = opts.durable_replicas;
        return result;
    }

    asio::io_context::executor_type sessions_executor_;
    asio::io_context redis_ctx_;
    asio::executor_work_guard<asio::io_context::executor_type> redis_work_{redis_ctx_.get_executor()};
    asio_sync::redis::connection connection_;
    std::optional<asio_sync::redis::semaphore> semaphore_;
    std::optional<asio_sync::redis::share_semaphore> share_;
    std::thread thread_;
    std::atomic<std::size_t> leases_lost_{0};
    std::mutex mutex_;
    std::vector<fleet_hold> holds_;
};

std::int64_t steady_ns(clock_type::time_point t)
{
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

// A session's fleet permit. The interval it logs lies inside the permit's lease in Redis (with
// --shares, inside its share's lease, unless the share is lost): it starts once the grant has
// arrived and ends before the release is sent.
class fleet_turn
{
public:
    fleet_turn(fleet_limit& fleet, fleet_permit permit, clock_type::time_point queued_at)
        : fleet_(fleet), permit_(std::move(permit)), fence_(fleet.fence_of(permit_)), queued_at_(queued_at)
    {
    }

    fleet_turn(const fleet_turn&) = delete;
    fleet_turn& operator=(const fleet_turn&) = delete;

    ~fleet_turn()
    {
        fleet_.release(permit_, {steady_ns(granted_at_), steady_ns(clock_type::now()),
                                 steady_ns(granted_at_) - steady_ns(queued_at_), fence_});
    }

private:
    fleet_limit& fleet_;
    fleet_permit permit_;
    std::uint64_t fence_;
    clock_type::time_point queued_at_;
    clock_type::time_point granted_at_ = clock_type::now();
};

#endif // ASIO_SYNC_EXAMPLE_REDIS

// `in_flight` is the session's entry in the server's gate: it leaves when the coroutine ends, on
// whichever path.
awaitable<void> serve_session(tcp::socket socket, [[maybe_unused]] asio_sync::gate::guard in_flight,
                              asio_sync::semaphore& limit, [[maybe_unused]] fleet_limit* fleet,
                              asio_sync::adaptive_limiter* adaptive, server_stats& stats,
                              milliseconds work_time)
{
    std::string request;
    auto [read_ec, request_size] =
        co_await asio::async_read_until(socket, asio::dynamic_buffer(request, max_line), '\n', as_result);
    if (read_ec)
        co_return; // gone before asking for anything
    constexpr std::string_view request_prefix = "REQUEST ";
    const std::string_view line = std::string_view(request).substr(0, request_size - 1);
    const std::string_view id =
        line.starts_with(request_prefix) ? line.substr(request_prefix.size()) : std::string_view("?");

    auto watch = std::make_shared<client_watch>(socket.get_executor());
    watch_client(socket, watch);
    const auto queued_at = clock_type::now();
#if defined(ASIO_SYNC_EXAMPLE_REDIS)
    // With --redis a session first takes its turn in the fleet-wide queue. The local semaphore then
    // has a permit free for it (no more than K sessions of this process hold fleet permits) and
    // still turns it away once the server shuts down.
    std::optional<fleet_turn> turn;
    if (fleet)
    {
        auto [fleet_ec, permit] = co_await fleet->acquire(watch->leave_queue.slot());
        // Closed by the shutdown: the closed local semaphore below turns the session away.
        const bool shut_down = fleet_ec == asio_sync::error::closed;
        if (fleet_ec == asio::error::operation_aborted && !shut_down)
        {
            stats.abandoned.fetch_add(1);
            co_return;
        }
        if (fleet_ec && !shut_down)
            throw boost::system::system_error(fleet_ec, "fleet-wide acquire");
        if (!shut_down)
            turn.emplace(*fleet, std::move(permit), queued_at);
    }
#endif
    // With --adaptive a session first takes a permit of the adaptive limit; the local semaphore, of
    // K permits, then always has one free for it, and still turns it away once the server shuts
    // down (which also cancels the adaptive queue).
    std::optional<asio_sync::adaptive_limiter::permit> adaptive_permit;
    if (adaptive && !limit.is_closed())
    {
        auto [adaptive_ec, granted] = co_await adaptive->async_acquire(
            asio::bind_cancellation_slot(watch->leave_queue.slot(), as_result));
        if (adaptive_ec && !limit.is_closed())
        {
            stats.abandoned.fetch_add(1);
            co_return;
        }
        adaptive_permit.emplace(std::move(granted));
    }
    auto [acquire_ec] =
        co_await limit.async_acquire(asio::bind_cancellation_slot(watch->leave_queue.slot(), as_result));
    const auto admitted_at = clock_type::now();
    watch->current = client_watch::stage::working;

    if (acquire_ec == asio_sync::error::closed)
    {
        stats.turned_away.fetch_add(1);
        watch->current = client_watch::stage::replying;
        co_await asio::async_write(socket, asio::buffer(std::string_view("CLOSED\n")), as_result);
        co_return;
    }
    if (acquire_ec) // operation_aborted: the watch took this session out of the queue
    {
        stats.abandoned.fetch_add(1);
        co_return;
    }
    const session_permit permit(limit, stats);
    if (watch->peer_left)
    {
        // The hang-up came after the grant was decided: the permit is ours, and the guard returns it.
        stats.abandoned.fetch_add(1);
        stats.abandoned_after_grant.fetch_add(1);
        co_return;
    }

    // The simulated backend's knee: past K/2 sessions at once, each takes longer in proportion.
    const double slowdown =
        adaptive ? std::max(1.0, static_cast<double>(stats.active.load()) /
                                     static_cast<double>(std::max<std::size_t>(1, adaptive->max_limit() / 2)))
                 : 1.0;
    watch->work.expires_after(std::chrono::duration_cast<milliseconds>(work_time * slowdown));
    co_await watch->work.async_wait(as_result);
    if (watch->peer_left)
    {
        stats.left_while_served.fetch_add(1);
        co_return;
    }

    watch->current = client_watch::stage::replying;
    const std::string reply = "DONE " + std::string(id) + "\n";
    auto [write_ec, written] = co_await asio::async_write(socket, asio::buffer(reply), as_result);
    if (write_ec)
    {
        stats.left_while_served.fetch_add(1);
        co_return;
    }
    stats.served.fetch_add(1);
    if (adaptive_permit)
        adaptive_permit->success(); // a session whose client left reports nothing: ignored
    stats.record_wait(std::chrono::duration<double, std::milli>(admitted_at - queued_at).count());
}

awaitable<void> accept_sessions(tcp::acceptor& acceptor, asio::io_context::executor_type io_executor,
                                asio_sync::gate& sessions, asio_sync::semaphore& limit, fleet_limit* fleet,
                                asio_sync::adaptive_limiter* adaptive, server_stats& stats,
                                std::uint64_t seed, std::atomic<bool>& failed)
{
    for (std::uint64_t session_number = 0;; ++session_number)
    {
        // Each session gets its own strand: its coroutine, socket and watch never run concurrently.
        auto [ec, peer] = co_await acceptor.async_accept(asio::make_strand(io_executor), as_result);
        if (ec == asio::error::operation_aborted || !acceptor.is_open())
            co_return; // shutting down
        if (ec)
        {
            // Transient (say, out of descriptors): give running sessions a moment to end.
            asio::steady_timer pause(acceptor.get_executor(), 10ms);
            co_await pause.async_wait(as_result);
            continue;
        }
        asio_sync::gate::guard in_flight = sessions.try_enter();
        if (!in_flight)
            co_return; // accepted as the server shut down: the socket closes unserved
        tcp::socket socket(std::move(peer));
        const auto session_executor = socket.get_executor();
        const milliseconds work_time(work_min_ms +
                                     seed_for(seed, session_number) % (work_max_ms - work_min_ms + 1));
        asio::co_spawn(
            session_executor,
            serve_session(std::move(socket), std::move(in_flight), limit, fleet, adaptive, stats, work_time),
            fail_on_exception{"session", &failed});
    }
}

bool fleet_shares([[maybe_unused]] fleet_limit* fleet)
{
#if defined(ASIO_SYNC_EXAMPLE_REDIS)
    return fleet && fleet->shares();
#else
    return false;
#endif
}

// With --redis, also the permits held and the waiters queued across the fleet, read from Redis;
// with --shares, this process' share of the K and its demand.
awaitable<void> report_progress(clock_type::time_point start, asio_sync::semaphore& limit, fleet_limit* fleet,
                                const asio_sync::adaptive_limiter* adaptive, const server_stats& stats)
{
    std::printf("  time  active  queued  served  abandoned%s%s\n", adaptive ? "  limit   peak" : "",
                !fleet                ? ""
                : fleet_shares(fleet) ? "       share      demand"
                                      : "  fleet-held  fleet-queued");
    asio::steady_timer timer(co_await asio::this_coro::executor);
    for (auto next = start + report_interval; !limit.is_closed(); next += report_interval)
    {
        timer.expires_at(next);
        co_await timer.async_wait(as_result);
        if (limit.is_closed())
            break;
        std::printf("%5.2fs  %6zu  %6zu  %6zu  %9zu", seconds_since(start), stats.active.load(),
                    limit.waiting() + (adaptive ? adaptive->waiting() : 0), stats.served.load(),
                    stats.abandoned.load());
        if (adaptive)
            std::printf("  %5zu  %5zu", adaptive->limit(), stats.peak.load());
#if defined(ASIO_SYNC_EXAMPLE_REDIS)
        if (fleet_shares(fleet))
        {
            const asio_sync::redis::share_state state = fleet->shares()->state();
            std::printf("  %10zu  %10zu", state.share, state.demand);
        }
        else if (fleet)
        {
            auto [status_ec, status] = co_await fleet->semaphore().async_status(as_result);
            if (!status_ec)
                std::printf("  %10zu  %12zu", status.held, status.queued);
        }
#endif
        std::printf("\n");
    }
}

awaitable<void> shut_down_at(clock_type::time_point deadline, clock_type::time_point start,
                             tcp::acceptor& acceptor, asio_sync::semaphore& limit, asio_sync::gate& sessions,
                             [[maybe_unused]] fleet_limit* fleet, asio_sync::adaptive_limiter* adaptive,
                             server_stats& stats)
{
    asio::steady_timer timer(co_await asio::this_coro::executor, deadline);
    co_await timer.async_wait(as_result);
    error_code ignored;
    acceptor.close(ignored); // later connections are refused
    const std::size_t queued = limit.waiting() + (adaptive ? adaptive->waiting() : 0);
    limit.close(); // queued sessions complete with error::closed; active ones finish their turn
    if (adaptive)
        adaptive->cancel(); // after the close: the sessions it aborts see the semaphore closed
#if defined(ASIO_SYNC_EXAMPLE_REDIS)
    if (fleet)
        fleet->close(); // so do the sessions still in the fleet-wide queue
#endif
    std::printf("%5.2fs  shutting down: acceptor closed, semaphore closed with %zu sessions queued\n",
                seconds_since(start), queued);

    // No session starts from here on; wait for those in flight (active, or answering CLOSED).
    stats.drained = sessions.count();
    const auto closed_at = clock_type::now();
    auto [close_ec] = co_await sessions.async_close(as_result);
    stats.drain_ms = std::chrono::duration<double, std::milli>(clock_type::now() - closed_at).count();
    stats.drained_ok = !close_ec && sessions.count() == 0;
    std::printf("%5.2fs  drained: the %zu sessions in flight at shutdown have ended\n", seconds_since(start),
                stats.drained);
}

awaitable<void> run_client(std::size_t client, tcp::endpoint server, client_stats& stats, std::uint64_t seed)
{
    using asio::experimental::make_parallel_group;
    using asio::experimental::wait_for_one;

    const auto executor = co_await asio::this_coro::executor;
    std::mt19937_64 rng(seed);
    const milliseconds patience(uniform(rng, patience_min_ms, patience_max_ms));
    asio::steady_timer timer(executor, milliseconds(uniform(rng, 0, start_spread_ms)));
    co_await timer.async_wait(as_result);

    // Ends when the server turns it away or refuses it, which it does once shut down.
    for (int round = 0; round < max_rounds_per_client; ++round)
    {
        tcp::socket socket(executor);
        auto [connect_ec] = co_await socket.async_connect(server, as_result);
        if (connect_ec)
            co_return;
        const std::string request = "REQUEST " + std::to_string(client) + "." + std::to_string(round) + "\n";
        auto [write_ec, written] = co_await asio::async_write(socket, asio::buffer(request), as_result);
        if (write_ec)
            co_return;

        std::string reply;
        timer.expires_after(patience);
        auto [order, read_ec, reply_size, timer_ec] =
            co_await make_parallel_group(
                asio::async_read_until(socket, asio::dynamic_buffer(reply, max_line), '\n', asio::deferred),
                timer.async_wait(asio::deferred))
                .async_wait(wait_for_one(), asio::use_awaitable);
        if (order[0] == 1)
        {
            // Out of patience: hang up, which takes this request out of the server's queue.
            stats.gave_up.fetch_add(1);
            error_code ignored;
            socket.close(ignored);
        }
        else if (read_ec)
        {
            co_return; // the server dropped the connection
        }
        else if (std::string_view(reply).starts_with("DONE "))
        {
            stats.replies.fetch_add(1);
        }
        else
        {
            stats.turned_away.fetch_add(1);
            co_return;
        }

        timer.expires_after(milliseconds(uniform(rng, 0, pause_max_ms)));
        co_await timer.async_wait(as_result);
    }
}

// A duration as a short label: "1us", "10ms", "1s".
std::string label(asio_sync::wait_histogram::duration d)
{
    using namespace std::chrono;
    if (d < 1ms)
        return std::to_string(duration_cast<microseconds>(d).count()) + "us";
    if (d < 1s)
        return std::to_string(duration_cast<milliseconds>(d).count()) + "ms";
    return std::to_string(duration_cast<seconds>(d).count()) + "s";
}

// The semaphore's own account of its waits: the sessions that queued for a permit, how their
// waits ended, and the histogram of the wait times (the buckets that are not empty).
void print_waits(const asio_sync::wait_histogram::snapshot_type& s)
{
    const double mean_ms = s.count == 0 ? 0.0
                                        : std::chrono::duration<double, std::milli>(s.sum).count() /
                                              static_cast<double>(s.count);
    std::printf("  queued for a permit       %llu: %llu granted, %llu cancelled, %llu failed; mean %.1f ms\n",
                static_cast<unsigned long long>(s.queued), static_cast<unsigned long long>(s.granted),
                static_cast<unsigned long long>(s.cancelled), static_cast<unsigned long long>(s.failed),
                mean_ms);
    std::string buckets;
    for (std::size_t i = 0; i < s.buckets.size(); ++i)
    {
        if (s.buckets[i] == 0)
            continue;
        const std::string bound =
            i < s.upper_bounds.size() ? "<=" + label(s.upper_bounds[i]) : ">" + label(s.upper_bounds.back());
        buckets += (buckets.empty() ? "" : ", ") + bound + " " + std::to_string(s.buckets[i]);
    }
    std::printf("  queued waits by length    %s\n", buckets.empty() ? "none" : buckets.c_str());
}

// Nearest-rank percentile of sorted samples.
double percentile(const std::vector<double>& sorted, double p)
{
    const auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(sorted.size())));
    return sorted[std::clamp<std::size_t>(rank, 1, sorted.size()) - 1];
}

} // namespace

int main(int argc, char** argv)
{
    const auto parsed = parse_options(argc, argv);
    if (const int* exit_code = std::get_if<int>(&parsed))
        return *exit_code;
    const options opts = std::get<options>(parsed);

    asio::io_context ctx(io_threads);
    asio_sync::semaphore limit(ctx, opts.k);
    asio_sync::wait_histogram limit_waits; // every session that had to queue for a permit
    limit.set_observer(&limit_waits);
    asio_sync::gate sessions(ctx); // every session in flight holds an entry
    server_stats server;
    std::optional<asio_sync::adaptive_limiter> adaptive_storage;
    asio_sync::adaptive_limiter* adaptive = nullptr;
    if (!opts.adaptive.empty())
    {
        adaptive = make_adaptive(adaptive_storage, ctx, opts);
        adaptive->set_observer(&limit_waits); // the sessions wait there; the semaphore then has room
        adaptive->set_listener([&server](std::size_t, std::size_t new_limit, asio_sync::limit_reason) {
            server.limit_changes.fetch_add(1);
            std::size_t low = server.lowest_limit.load();
            while (new_limit < low && !server.lowest_limit.compare_exchange_weak(low, new_limit))
            {
            }
            std::size_t high = server.highest_limit.load();
            while (new_limit > high && !server.highest_limit.compare_exchange_weak(high, new_limit))
            {
            }
        });
    }
    client_stats clients;
    std::atomic<bool> failed{false};

    // The acceptor, the progress report and the shutdown share one strand.
    const auto server_strand = asio::make_strand(ctx);
    tcp::acceptor acceptor(server_strand, tcp::endpoint(asio::ip::address_v4::loopback(), 0));
    const tcp::endpoint endpoint = acceptor.local_endpoint();
    const std::uint64_t seed = (std::uint64_t(std::random_device{}()) << 32) | std::random_device{}();
    fleet_limit* fleet = nullptr;
#if defined(ASIO_SYNC_EXAMPLE_REDIS)
    std::optional<fleet_limit> fleet_storage;
    if (!opts.redis_host.empty())
    {
        fleet = &fleet_storage.emplace(opts, ctx.get_executor());
        std::printf("connection_limit: the K permits are the %s '%s' in Redis at %s, lease %lld ms%s\n",
                    opts.shares ? "leased shares" : "semaphore", opts.name.c_str(), opts.redis_spec.c_str(),
                    static_cast<long long>(opts.lease.count()), opts.durable_replicas ? ", durable" : "");
    }
#endif

    std::printf(
        "connection_limit: server on %s:%u serves at most %zu at once; %zu clients, %.1f s, %u threads\n",
        endpoint.address().to_string().c_str(), static_cast<unsigned>(endpoint.port()), opts.k, opts.clients,
        std::chrono::duration<double>(opts.duration).count(), io_threads);

    const auto start = clock_type::now();
    asio::co_spawn(
        server_strand,
        accept_sessions(acceptor, ctx.get_executor(), sessions, limit, fleet, adaptive, server, seed, failed),
        fail_on_exception{"accept loop", &failed});
    asio::co_spawn(server_strand, report_progress(start, limit, fleet, adaptive, server),
                   fail_on_exception{"report", &failed});
    asio::co_spawn(
        server_strand,
        shut_down_at(start + opts.duration, start, acceptor, limit, sessions, fleet, adaptive, server),
        fail_on_exception{"shutdown", &failed});
    for (std::size_t client = 0; client < opts.clients; ++client)
    {
        asio::co_spawn(asio::make_strand(ctx), run_client(client, endpoint, clients, seed_for(~seed, client)),
                       fail_on_exception{"client", &failed});
    }

    // No stop(): run() returns once the server has shut down and every session and client ended.
    std::thread second_thread([&ctx] { ctx.run(); });
    ctx.run();
    second_thread.join();
    const double elapsed = seconds_since(start);
#if defined(ASIO_SYNC_EXAMPLE_REDIS)
    if (fleet_storage)
    {
        fleet_storage->stop();
        if (fleet_storage->leases_lost() != 0)
        {
            std::fprintf(stderr, "connection_limit: %zu fleet permits lost their lease\n",
                         fleet_storage->leases_lost());
            failed.store(true);
        }
        if (!opts.log_path.empty() && !fleet_storage->write_log(opts.log_path))
        {
            std::fprintf(stderr, "connection_limit: could not write %s\n", opts.log_path.c_str());
            failed.store(true);
        }
    }
#endif

    std::vector<double>& waits = server.wait_ms;
    std::sort(waits.begin(), waits.end());
    const std::size_t peak = server.peak.load();
    const std::size_t available = limit.available();
    const bool peak_ok = peak <= opts.k;
    const bool permits_ok =
        available == opts.k && limit.waiting() == 0 &&
        (!adaptive || (adaptive->available() == adaptive->limit() && adaptive->waiting() == 0));

    std::printf("\nsummary\n");
    std::printf("  K (sessions at once)      %zu\n", opts.k);
    std::printf("  clients                   %zu\n", opts.clients);
    std::printf("  duration                  %.2f s\n", elapsed);
    std::printf("  peak concurrent sessions  %zu  never above K: %s\n", peak, peak_ok ? "yes" : "NO");
    if (adaptive)
        std::printf("  adaptive limit (%s)  %zu at the end; %zu changes, between %zu and %zu\n",
                    opts.adaptive.c_str(), adaptive->limit(), server.limit_changes.load(),
                    std::min(server.lowest_limit.load(), adaptive->limit()),
                    std::max(server.highest_limit.load(), adaptive->limit()));
    std::printf("  permits after shutdown    %zu of %zu  none lost: %s\n", available, opts.k,
                permits_ok ? "yes" : "NO");
    std::printf("  sessions served           %zu (and %zu whose client left during its turn)\n",
                server.served.load(), server.left_while_served.load());
    std::printf("  abandoned waits           %zu (%zu of them raced the grant; permit given back)\n",
                server.abandoned.load(), server.abandoned_after_grant.load());
    std::printf("  turned away at shutdown   %zu\n", server.turned_away.load());
    std::printf("  drained at shutdown       %zu sessions in %.1f ms  all ended: %s\n", server.drained,
                server.drain_ms, server.drained_ok ? "yes" : "NO");
    std::printf("  clients saw               %zu replies, %zu gave up waiting, %zu turned away\n",
                clients.replies.load(), clients.gave_up.load(), clients.turned_away.load());
    print_waits(limit_waits.snapshot());
    if (waits.empty())
        std::printf("  wait before service       no sessions served\n");
    else
        std::printf("  wait p50/p90/p99/max      %.1f / %.1f / %.1f / %.1f ms\n", percentile(waits, 50),
                    percentile(waits, 90), percentile(waits, 99), waits.back());

    return peak_ok && permits_ok && server.drained_ok && !failed.load() ? 0 : 1;
}
