// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

// http_limit: an HTTP server (Boost.Beast) that caps the requests in flight per client and in
// total, and sheds the excess with 503 Service Unavailable instead of letting queues grow.
//
// Every request passes two admissions, in this order:
//   1. its client's: at most --per-client requests from one remote address in flight at once;
//   2. the server's: at most --global requests in flight at once, whoever sends them.
// Each admission is an asio_sync::semaphore with a bounded wait queue. A request that finds no
// free permit waits only if fewer than --client-queue (or --global-queue) requests already wait
// there, and only for --queue-timeout (async_acquire_permit_for, which cannot lose a permit to
// the race between the grant and the deadline). Otherwise it is answered at once with 503 and
// Retry-After. Permits are `permit` objects, so they go back however the request ends. The
// per-client admission comes first, so one greedy client fills its own queue, not the server's.
//
// Behind the admissions is a simulated backend with --backend-slots workers, each request taking
// --work milliseconds. Past that many requests at once it does what real backends do when
// overloaded: the requests share the workers and each takes proportionally longer. The limits
// exist to keep it out of that regime: requests beyond what it can serve promptly are refused
// fast rather than all served slowly.
//
// Modes:
//   http_limit [options]               serve on 127.0.0.1:--port until SIGINT or SIGTERM (or for
//                                      --duration), then print a summary
//   http_limit --self-test [options]   serve on an ephemeral port for --duration (default 1 s)
//                                      while built-in clients from several loopback addresses
//                                      (127.0.0.1, 127.0.0.2, ...) overload it; then check that
//                                      the limits held and exit non-zero if not
// --no-limit turns both admissions off, to compare. example/3_advanced/http_limit/load.sh runs
// the server under wrk with and without the limits.
//
// Shutdown (the signal, the duration, or the end of the self-test) is graceful: the acceptor
// closes, the global semaphore is closed so that queued requests get a 503 at once, requests in
// flight finish, keep-alive connections are closed after their current response, and
// io_context::run() returns by itself.

#include <asio_sync/semaphore.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::awaitable;
using asio::ip::tcp;
using boost::system::error_code;
using clock_type = std::chrono::steady_clock;
using milliseconds = std::chrono::milliseconds;
using namespace std::chrono_literals;

constexpr auto as_result = asio::as_tuple(asio::use_awaitable);
constexpr auto idle_timeout = 1s; // a keep-alive connection with no request for this long is closed
constexpr const char body_ok[] = "served by the backend\n";

struct options
{
    asio::ip::port_type port = 8080;
    unsigned threads = 2;
    std::size_t global = 8;
    std::size_t global_queue = 4;
    std::size_t per_client = 4;
    std::size_t client_queue = 4;
    milliseconds queue_timeout = 100ms;
    std::size_t backend_slots = 8;
    milliseconds work = 2ms;
    bool limit = true;
    bool self_test = false;
    std::optional<milliseconds> duration;
    std::size_t test_addresses = 4;    // self-test: client addresses 127.0.0.1 .. 127.0.0.N
    std::size_t test_connections = 10; // self-test: keep-alive connections per address
};

constexpr const char usage[] =
    "usage: http_limit [--help] [--self-test] [--no-limit] [--port N] [--threads N] [--duration SECONDS]\n"
    "                  [--global N] [--global-queue N] [--per-client N] [--client-queue N]\n"
    "                  [--queue-timeout MS] [--backend-slots N] [--work MS]\n"
    "                  [--test-addresses N] [--test-connections N]\n"
    "\n"
    "An HTTP server on 127.0.0.1 that admits at most --per-client requests per remote address and\n"
    "--global requests in total at once, each with a bounded wait queue, and answers 503 to the\n"
    "rest. --self-test runs it on an ephemeral port against built-in clients and checks the limits.\n"
    "Defaults: port 8080, 2 threads, global 8 (queue 4), per client 4 (queue 4), queue timeout\n"
    "100 ms, a backend of 8 slots taking 2 ms per request; self-test: 4 addresses x 10 connections.\n";

// Parses the options; returns false on anything unknown, missing or out of range.
bool parse_options(int argc, char** argv, options& o)
{
    for (int i = 1; i < argc; ++i)
    {
        const std::string_view arg = argv[i];
        if (arg == "--self-test")
        {
            o.self_test = true;
            continue;
        }
        if (arg == "--no-limit")
        {
            o.limit = false;
            continue;
        }
        if (i + 1 == argc)
            return false;
        char* end = nullptr;
        const double value = std::strtod(argv[++i], &end);
        if (end == argv[i] || *end != '\0' || !(value >= 0.0 && value <= 100000.0))
            return false;
        const auto count = static_cast<std::size_t>(value);
        const milliseconds ms(static_cast<long long>(value));
        if (arg == "--port" && value <= 65535)
            o.port = static_cast<asio::ip::port_type>(value);
        else if (arg == "--threads" && count >= 1 && count <= 64)
            o.threads = static_cast<unsigned>(count);
        else if (arg == "--duration" && value > 0.0)
            o.duration = milliseconds(static_cast<long long>(value * 1000.0));
        else if (arg == "--global" && count >= 1)
            o.global = count;
        else if (arg == "--global-queue")
            o.global_queue = count;
        else if (arg == "--per-client" && count >= 1)
            o.per_client = count;
        else if (arg == "--client-queue")
            o.client_queue = count;
        else if (arg == "--queue-timeout")
            o.queue_timeout = ms;
        else if (arg == "--backend-slots" && count >= 1)
            o.backend_slots = count;
        else if (arg == "--work")
            o.work = ms;
        else if (arg == "--test-addresses" && count >= 1 && count <= 250)
            o.test_addresses = count;
        else if (arg == "--test-connections" && count >= 1 && count <= 100)
            o.test_connections = count;
        else
            return false;
    }
    return true;
}

// How many are inside now, and the most there ever were at once.
struct peak_counter
{
    std::atomic<std::size_t> now{0};
    std::atomic<std::size_t> peak{0};

    // Counts one in for as long as it lives.
    class scope
    {
    public:
        explicit scope(peak_counter& c) : counter_(c)
        {
            const std::size_t inside = counter_.now.fetch_add(1) + 1;
            std::size_t seen = counter_.peak.load();
            while (inside > seen && !counter_.peak.compare_exchange_weak(seen, inside))
            {
            }
        }
        scope(const scope&) = delete;
        scope& operator=(const scope&) = delete;
        ~scope() { counter_.now.fetch_sub(1); }

    private:
        peak_counter& counter_;
    };
};

enum class verdict
{
    admitted,
    queue_full,
    timed_out,
    closed,
};

// A semaphore with a bounded wait queue: at most `max_queued` requests wait for a permit, each
// for at most `timeout`; the others are refused at once. `waiting()` alone would not do as the
// bound: two threads could both see room for one. The counter below reserves a place atomically.
class admission
{
public:
    using permit = asio_sync::semaphore::permit;

    admission(const asio::any_io_executor& ex, std::size_t permits, std::size_t max_queued,
              milliseconds timeout)
        : semaphore_(ex, permits), max_queued_(max_queued), timeout_(timeout)
    {
    }

    struct outcome
    {
        verdict result;
        std::optional<permit> held; // set when admitted
    };

    awaitable<outcome> enter()
    {
        // try_acquire_permit never overtakes a queued request, so the queue stays FIFO.
        if (std::optional<permit> free = semaphore_.try_acquire_permit())
            co_return outcome{verdict::admitted, std::move(free)};
        if (queued_.fetch_add(1) >= max_queued_)
        {
            queued_.fetch_sub(1);
            co_return outcome{verdict::queue_full, std::nullopt};
        }
        auto [ec, granted] = co_await semaphore_.async_acquire_permit_for(1, timeout_, as_result);
        queued_.fetch_sub(1);
        if (!ec)
            co_return outcome{verdict::admitted, std::move(granted)};
        co_return outcome{ec == asio_sync::error::timed_out ? verdict::timed_out : verdict::closed,
                          std::nullopt};
    }

    asio_sync::semaphore& semaphore() { return semaphore_; }

private:
    asio_sync::semaphore semaphore_;
    std::size_t max_queued_;
    milliseconds timeout_;
    std::atomic<std::size_t> queued_{0};
};

// What the server counts; everything is read once run() has returned.
struct server_stats
{
    std::atomic<std::size_t> ok{0};
    std::atomic<std::size_t> client_queue_full{0};
    std::atomic<std::size_t> global_queue_full{0};
    std::atomic<std::size_t> timed_out{0};
    std::atomic<std::size_t> shut_down{0};
    std::atomic<std::size_t> permits_lost{0};    // client admissions found short when dropped
    peak_counter in_flight;                      // requests past both admissions
    std::atomic<std::size_t> peak_per_client{0}; // the most of one client's, when it left

    std::mutex latency_mutex;
    std::vector<double> ok_ms; // from request read to response ready
    std::vector<double> refused_ms;

    void record(bool ok_response, double ms)
    {
        std::lock_guard lock(latency_mutex);
        (ok_response ? ok_ms : refused_ms).push_back(ms);
    }
};

// One per remote address with a connection open: the per-client admission and its count.
struct client_state
{
    client_state(const asio::any_io_executor& ex, const options& o)
        : limit(ex, o.per_client, o.client_queue, o.queue_timeout)
    {
    }

    admission limit;
    peak_counter in_flight;
};

// The clients with a connection open, by address. An entry lives while any of its connections
// does: every copy of its shared_ptr is made and dropped under the mutex, so use_count is exact.
class client_registry
{
public:
    std::shared_ptr<client_state> join(const asio::ip::address& address, const asio::any_io_executor& ex,
                                       const options& o)
    {
        std::lock_guard lock(mutex_);
        std::shared_ptr<client_state>& entry = clients_[address];
        if (!entry)
            entry = std::make_shared<client_state>(ex, o);
        return entry;
    }

    // Drops the connection's reference; the last connection of an address removes its entry.
    void leave(const asio::ip::address& address, std::shared_ptr<client_state>& client, server_stats& stats,
               const options& o)
    {
        std::lock_guard lock(mutex_);
        client.reset();
        const auto it = clients_.find(address);
        if (it->second.use_count() > 1)
            return;
        if (it->second->limit.semaphore().available() != o.per_client)
            stats.permits_lost.fetch_add(1);
        stats.peak_per_client.store(
            std::max(stats.peak_per_client.load(), it->second->in_flight.peak.load()));
        clients_.erase(it);
    }

    std::size_t size()
    {
        std::lock_guard lock(mutex_);
        return clients_.size();
    }

private:
    std::mutex mutex_;
    std::map<asio::ip::address, std::shared_ptr<client_state>> clients_;
};

// A backend with a fixed number of workers: up to `slots` requests take `work` each; beyond that
// they share the workers and each takes proportionally longer.
class backend
{
public:
    backend(std::size_t slots, milliseconds work) : slots_(slots), work_(work) {}

    awaitable<void> serve()
    {
        const std::size_t busy = busy_.fetch_add(1) + 1;
        const double slowdown = std::max(1.0, static_cast<double>(busy) / static_cast<double>(slots_));
        asio::steady_timer timer(co_await asio::this_coro::executor,
                                 std::chrono::duration_cast<clock_type::duration>(work_ * slowdown));
        co_await timer.async_wait(as_result);
        busy_.fetch_sub(1);
    }

private:
    std::size_t slots_;
    milliseconds work_;
    std::atomic<std::size_t> busy_{0};
};

struct server
{
    server(asio::io_context& io, const options& o)
        : ctx(io), opts(o), global(ctx.get_executor(), o.global, o.global_queue, o.queue_timeout),
          work(o.backend_slots, o.work), acceptor(asio::make_strand(ctx)), signals(acceptor.get_executor())
    {
    }

    asio::io_context& ctx;
    const options& opts;
    admission global;
    backend work;
    client_registry clients;
    server_stats stats;
    tcp::acceptor acceptor;
    asio::signal_set signals;
    std::atomic<bool> stopping{false};

    // Runs on the acceptor's strand.
    void shut_down()
    {
        if (stopping.exchange(true))
            return;
        error_code ignored;
        acceptor.close(ignored);
        signals.cancel(ignored);
        global.semaphore().close(); // queued requests get their 503 now
    }
};

http::response<http::string_body> make_response(http::status status, std::string body, unsigned version)
{
    http::response<http::string_body> res(status, version);
    res.set(http::field::server, "asio_sync http_limit");
    res.set(http::field::content_type, "text/plain");
    if (status == http::status::service_unavailable)
        res.set(http::field::retry_after, "1");
    res.body() = std::move(body);
    res.prepare_payload();
    return res;
}

// Admits the request (or not) and produces its response.
awaitable<http::response<http::string_body>> handle(const http::request<http::string_body>& req,
                                                    client_state& client, server& srv)
{
    const auto refuse = [&](verdict v, bool at_client) {
        if (v == verdict::queue_full)
            (at_client ? srv.stats.client_queue_full : srv.stats.global_queue_full).fetch_add(1);
        else if (v == verdict::timed_out)
            srv.stats.timed_out.fetch_add(1);
        else
            srv.stats.shut_down.fetch_add(1);
        return make_response(http::status::service_unavailable, "busy, try again later\n", req.version());
    };

    std::optional<admission::permit> client_permit;
    std::optional<admission::permit> global_permit;
    if (srv.opts.limit)
    {
        admission::outcome mine = co_await client.limit.enter();
        if (mine.result != verdict::admitted)
            co_return refuse(mine.result, true);
        client_permit = std::move(mine.held);
        admission::outcome all = co_await srv.global.enter();
        if (all.result != verdict::admitted)
            co_return refuse(all.result, false);
        global_permit = std::move(all.held);
    }

    {
        // Declared after the permits, so the counts drop before the permits go back.
        const peak_counter::scope counted(srv.stats.in_flight);
        const peak_counter::scope counted_for_client(client.in_flight);
        co_await srv.work.serve();
    }
    srv.stats.ok.fetch_add(1);
    co_return make_response(http::status::ok, body_ok, req.version());
}

awaitable<void> serve_connection(tcp::socket socket, server& srv)
{
    error_code ec;
    const asio::ip::address address = socket.remote_endpoint(ec).address();
    if (ec)
        co_return;
    std::shared_ptr<client_state> client = srv.clients.join(address, srv.ctx.get_executor(), srv.opts);
    struct membership // leaves the registry however the connection ends
    {
        server& srv;
        const asio::ip::address& address;
        std::shared_ptr<client_state>& client;
        ~membership() { srv.clients.leave(address, client, srv.stats, srv.opts); }
    } member{srv, address, client};

    beast::tcp_stream stream(std::move(socket));
    beast::flat_buffer buffer;
    for (;;)
    {
        http::request<http::string_body> req;
        stream.expires_after(idle_timeout);
        auto [read_ec, read_size] = co_await http::async_read(stream, buffer, req, as_result);
        if (read_ec)
            break; // closed by the client, idle too long, or not HTTP
        stream.expires_never();

        const auto received = clock_type::now();
        http::response<http::string_body> res = co_await handle(req, *client, srv);
        srv.stats.record(res.result() == http::status::ok,
                         std::chrono::duration<double, std::milli>(clock_type::now() - received).count());
        res.keep_alive(req.keep_alive() && !srv.stopping.load());
        auto [write_ec, written] = co_await http::async_write(stream, res, as_result);
        if (write_ec || !res.keep_alive())
            break;
    }
    stream.socket().shutdown(tcp::socket::shutdown_send, ec);
}

awaitable<void> accept_connections(server& srv)
{
    for (;;)
    {
        // Each connection gets a strand: its coroutine and its stream never run concurrently.
        auto [ec, socket] = co_await srv.acceptor.async_accept(asio::make_strand(srv.ctx), as_result);
        if (ec == asio::error::operation_aborted || !srv.acceptor.is_open())
            co_return;
        if (!ec)
            asio::co_spawn(socket.get_executor(), serve_connection(tcp::socket(std::move(socket)), srv),
                           asio::detached);
    }
}

// What the self-test's clients saw.
struct client_results
{
    std::atomic<std::size_t> ok{0};
    std::atomic<std::size_t> unavailable{0};
    std::atomic<std::size_t> unexpected{0}; // other statuses, wrong bodies, broken connections
    std::atomic<std::size_t> running{0};
};

// One keep-alive connection from `local`, sending requests back to back until `deadline`.
awaitable<void> self_test_client(asio::ip::address local, tcp::endpoint server_endpoint,
                                 clock_type::time_point deadline, client_results& results)
{
    beast::tcp_stream stream(co_await asio::this_coro::executor);
    stream.socket().open(tcp::v4());
    stream.socket().bind(tcp::endpoint(local, 0)); // this is how it counts as another client
    co_await stream.async_connect(server_endpoint, asio::use_awaitable);
    beast::flat_buffer buffer;
    http::request<http::string_body> req(http::verb::get, "/", 11);
    req.set(http::field::host, "127.0.0.1");
    while (clock_type::now() < deadline)
    {
        co_await http::async_write(stream, req, asio::use_awaitable);
        http::response<http::string_body> res;
        co_await http::async_read(stream, buffer, res, asio::use_awaitable);
        if (res.result() == http::status::ok && res.body() == body_ok)
        {
            results.ok.fetch_add(1);
        }
        else if (res.result() == http::status::service_unavailable)
        {
            results.unavailable.fetch_add(1);
            asio::steady_timer back_off(stream.get_executor(), 1ms); // a polite client waits a little
            co_await back_off.async_wait(as_result);
        }
        else
        {
            results.unexpected.fetch_add(1);
        }
    }
}

// Starts the self-test's clients; the last one to finish shuts the server down.
void start_self_test(asio::io_context& ctx, server& srv, client_results& results)
{
    const auto deadline = clock_type::now() + srv.opts.duration.value_or(1s);
    const tcp::endpoint endpoint = srv.acceptor.local_endpoint();
    for (std::size_t a = 0; a < srv.opts.test_addresses; ++a)
    {
        const asio::ip::address_v4 local((127u << 24) | static_cast<unsigned>(a + 1));
        for (std::size_t c = 0; c < srv.opts.test_connections; ++c)
        {
            results.running.fetch_add(1);
            asio::co_spawn(asio::make_strand(ctx), self_test_client(local, endpoint, deadline, results),
                           [&srv, &results](std::exception_ptr e) {
                               if (e)
                                   results.unexpected.fetch_add(1);
                               if (results.running.fetch_sub(1) == 1)
                                   asio::post(srv.acceptor.get_executor(), [&srv] { srv.shut_down(); });
                           });
        }
    }
}

// Nearest-rank percentile of sorted samples, 0 for none.
double percentile(const std::vector<double>& sorted, double p)
{
    if (sorted.empty())
        return 0.0;
    const auto rank = static_cast<std::size_t>(p / 100.0 * static_cast<double>(sorted.size()) + 0.5);
    return sorted[std::clamp<std::size_t>(rank, 1, sorted.size()) - 1];
}

} // namespace

int main(int argc, char** argv)
{
    options opts;
    if (argc == 2 && (std::string_view(argv[1]) == "--help" || std::string_view(argv[1]) == "-h"))
    {
        std::fputs(usage, stdout);
        return 0;
    }
    if (!parse_options(argc, argv, opts))
    {
        std::fputs(usage, stderr);
        return 2;
    }

    asio::io_context ctx(static_cast<int>(opts.threads));
    server srv(ctx, opts);
    const tcp::endpoint listen_on(asio::ip::address_v4::loopback(), opts.self_test ? 0 : opts.port);
    srv.acceptor.open(listen_on.protocol());
    srv.acceptor.set_option(tcp::acceptor::reuse_address(true));
    srv.acceptor.bind(listen_on);
    srv.acceptor.listen();
    const unsigned port = srv.acceptor.local_endpoint().port();

    if (opts.limit)
        std::printf(
            "http_limit: listening on 127.0.0.1:%u; per client %zu (queue %zu), global %zu (queue %zu), "
            "queue timeout %lld ms\n",
            port, opts.per_client, opts.client_queue, opts.global, opts.global_queue,
            static_cast<long long>(opts.queue_timeout.count()));
    else
        std::printf("http_limit: listening on 127.0.0.1:%u; no limits\n", port);
    std::printf("http_limit: backend of %zu slots, %lld ms per request; %u threads\n", opts.backend_slots,
                static_cast<long long>(opts.work.count()), opts.threads);
    std::fflush(stdout);

    asio::co_spawn(srv.acceptor.get_executor(), accept_connections(srv), asio::detached);
    srv.signals.add(SIGINT);
    srv.signals.add(SIGTERM);
    srv.signals.async_wait([&srv](error_code ec, int) {
        if (!ec)
            srv.shut_down();
    });
    asio::steady_timer stop_timer(srv.acceptor.get_executor());
    client_results results;
    if (opts.self_test)
    {
        start_self_test(ctx, srv, results);
    }
    else if (opts.duration)
    {
        stop_timer.expires_after(*opts.duration);
        stop_timer.async_wait([&srv](error_code) { srv.shut_down(); });
    }

    std::vector<std::thread> threads;
    for (unsigned i = 1; i < opts.threads; ++i)
        threads.emplace_back([&ctx] { ctx.run(); });
    ctx.run();
    for (std::thread& t : threads)
        t.join();
    stop_timer.cancel();

    server_stats& s = srv.stats;
    std::sort(s.ok_ms.begin(), s.ok_ms.end());
    std::sort(s.refused_ms.begin(), s.refused_ms.end());
    const std::size_t refused = s.client_queue_full + s.global_queue_full + s.timed_out + s.shut_down;
    const bool global_ok = !opts.limit || s.in_flight.peak <= opts.global;
    const bool client_ok = !opts.limit || s.peak_per_client <= opts.per_client;
    const bool permits_ok =
        s.permits_lost == 0 && srv.clients.size() == 0 && srv.global.semaphore().available() == opts.global;

    std::printf("\nsummary\n");
    std::printf("  responses          200: %zu  503: %zu (client queue full %zu, global queue full %zu, "
                "timed out %zu, shutting down %zu)\n",
                s.ok.load(), refused, s.client_queue_full.load(), s.global_queue_full.load(),
                s.timed_out.load(), s.shut_down.load());
    std::printf("  peak in flight     global %zu (limit %s), one client %zu (limit %s)\n",
                s.in_flight.peak.load(), opts.limit ? std::to_string(opts.global).c_str() : "none",
                s.peak_per_client.load(), opts.limit ? std::to_string(opts.per_client).c_str() : "none");
    std::printf("  server time, 200   p50 %.2f ms  p99 %.2f ms  max %.2f ms\n", percentile(s.ok_ms, 50),
                percentile(s.ok_ms, 99), s.ok_ms.empty() ? 0.0 : s.ok_ms.back());
    std::printf("  server time, 503   p50 %.2f ms  p99 %.2f ms\n", percentile(s.refused_ms, 50),
                percentile(s.refused_ms, 99));
    std::printf("  permits            all returned: %s\n", permits_ok ? "yes" : "NO");

    bool ok = global_ok && client_ok && permits_ok;
    if (opts.self_test)
    {
        // The clients outnumber what the limits admit, so some requests must have been refused.
        const bool statuses_ok = results.unexpected == 0 && results.ok > 0 &&
                                 (!opts.limit || results.unavailable > 0) && results.ok == s.ok &&
                                 results.unavailable == refused;
        std::printf(
            "  self-test clients  %zu addresses x %zu connections: 200: %zu  503: %zu  unexpected: %zu\n",
            opts.test_addresses, opts.test_connections, results.ok.load(), results.unavailable.load(),
            results.unexpected.load());
        std::printf("  limits held        global %s, per client %s; responses as expected: %s\n",
                    global_ok ? "yes" : "NO", client_ok ? "yes" : "NO", statuses_ok ? "yes" : "NO");
        ok = ok && statuses_ok;
    }
    std::printf("%s\n", ok ? "OK" : "FAILED");
    return ok ? 0 : 1;
}
