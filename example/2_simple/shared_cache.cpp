// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

// A shared cache guarded by asio_sync::shared_mutex, used from coroutines on two threads.
//
// Many readers look keys up under a shared lock; a few writers refresh entries under the
// exclusive lock; one "snapshotter" rewrites every entry under the exclusive lock, downgrades it
// to a shared lock, and reads back what it wrote while other readers run alongside it.
//
// Both writers and the snapshotter suspend in the middle of an update while holding the lock, as
// a real refresh would while it fetches the new value. That is what an asynchronous lock is for:
// a blocking std::shared_mutex held across a co_await would block the thread and every coroutine
// queued on it. The program checks that nobody ever sees the half-written state, that writers
// are alone, that readers do share the lock, and that nothing changes under a downgraded lock;
// it exits non-zero if any of that fails.

#include <asio_sync/shared_mutex.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace asio = boost::asio;
using asio::use_awaitable;

namespace {

constexpr std::size_t key_count = 64;
constexpr std::size_t reader_count = 16;
constexpr std::size_t lookups_per_reader = 2000;
constexpr std::size_t writer_count = 3;
constexpr std::size_t refreshes_per_writer = 300;
constexpr std::size_t snapshot_count = 50;

// A value is derived from its key and version, so a reader can tell whether the two belong
// together: an entry whose value does not match its version is half-written.
struct entry
{
    std::uint64_t version = 0;
    std::string value;
};

std::string render(const std::string& key, std::uint64_t version)
{
    return key + " @ version " + std::to_string(version);
}

std::string key_name(std::size_t i)
{
    return "user:" + std::to_string(i);
}

struct cache
{
    explicit cache(asio::io_context& ctx) : mutex(ctx)
    {
        for (std::size_t i = 0; i < key_count; ++i)
        {
            std::string key = key_name(i);
            entries[key] = entry{0, render(key, 0)};
        }
    }

    asio_sync::shared_mutex mutex;
    std::unordered_map<std::string, entry> entries; // guarded by `mutex`
};

// What the coroutines observed. The `*_inside` counters are kept by the lock holders themselves,
// so they show who really was inside at the same time, whatever the mutex believes.
struct observations
{
    std::atomic<int> readers_inside{0};
    std::atomic<int> writers_inside{0};
    std::atomic<int> max_readers_inside{0};
    std::atomic<std::size_t> reads{0};
    std::atomic<std::size_t> writes{0};
    std::atomic<std::size_t> snapshots{0};
    std::atomic<std::size_t> torn_entries{0};
    std::atomic<std::size_t> exclusion_violations{0};
    std::atomic<std::size_t> changed_under_downgrade{0};
    std::atomic<std::size_t> failed_coroutines{0};

    void enter_shared()
    {
        const int inside = readers_inside.fetch_add(1) + 1;
        if (writers_inside.load() != 0)
            exclusion_violations.fetch_add(1);
        int seen = max_readers_inside.load();
        while (inside > seen && !max_readers_inside.compare_exchange_weak(seen, inside))
        {
        }
    }

    void leave_shared() { readers_inside.fetch_sub(1); }

    void enter_exclusive()
    {
        if (writers_inside.fetch_add(1) != 0 || readers_inside.load() != 0)
            exclusion_violations.fetch_add(1);
    }

    void leave_exclusive() { writers_inside.fetch_sub(1); }
};

// A small deterministic generator, so that each coroutine visits keys in its own order.
struct key_picker
{
    std::uint64_t state;

    std::string next()
    {
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        return key_name(static_cast<std::size_t>(state >> 33) % key_count);
    }
};

// Lets other handlers run: the suspension point a real lookup or refresh would have.
asio::awaitable<void> yield()
{
    co_await asio::post(co_await asio::this_coro::executor, use_awaitable);
}

asio::awaitable<void> reader(cache& c, observations& obs, std::uint64_t seed)
{
    key_picker keys{seed};
    for (std::size_t i = 0; i < lookups_per_reader; ++i)
    {
        const std::string key = keys.next();
        std::shared_lock<asio_sync::shared_mutex> lock =
            co_await c.mutex.async_scoped_lock_shared(use_awaitable);
        obs.enter_shared();
        const entry& e = c.entries.at(key);
        // Holding the shared lock across a suspension lets other readers in alongside this one,
        // and proves the entry cannot change while it is held.
        const std::uint64_t version = e.version;
        if (i % 4 == 0)
            co_await yield();
        if (e.version != version || e.value != render(key, e.version))
            obs.torn_entries.fetch_add(1);
        obs.leave_shared();
        lock.unlock();
        obs.reads.fetch_add(1);
    }
}

asio::awaitable<void> writer(cache& c, observations& obs, std::uint64_t seed)
{
    key_picker keys{seed};
    for (std::size_t i = 0; i < refreshes_per_writer; ++i)
    {
        const std::string key = keys.next();
        std::unique_lock<asio_sync::shared_mutex> lock = co_await c.mutex.async_scoped_lock(use_awaitable);
        obs.enter_exclusive();
        entry& e = c.entries.at(key);
        // The entry is half-written across this suspension: a new version with the old value.
        ++e.version;
        co_await yield();
        e.value = render(key, e.version);
        obs.leave_exclusive();
        lock.unlock();
        obs.writes.fetch_add(1);
        co_await yield();
    }
}

// Rewrites every entry, then keeps reading them under a shared lock obtained by downgrading, so
// no writer can slip in between the write and the reads while plain readers still proceed.
asio::awaitable<void> snapshotter(cache& c, observations& obs)
{
    for (std::size_t round = 0; round < snapshot_count; ++round)
    {
        std::unique_lock<asio_sync::shared_mutex> exclusive =
            co_await c.mutex.async_scoped_lock(use_awaitable);
        obs.enter_exclusive();
        std::unordered_map<std::string, std::uint64_t> written;
        for (auto& [key, e] : c.entries)
        {
            ++e.version;
            e.value = render(key, e.version);
            written[key] = e.version;
        }
        // Switch the bookkeeping to reader while the lock is still exclusive: nobody else can be
        // inside to see the moment in between, and readers let in by downgrade() find it done.
        obs.leave_exclusive();
        obs.enter_shared();
        asio_sync::shared_mutex* m = exclusive.release();
        m->downgrade();
        std::shared_lock<asio_sync::shared_mutex> shared(*m, std::adopt_lock);

        co_await yield();
        for (const auto& [key, e] : c.entries)
        {
            if (e.version != written.at(key) || e.value != render(key, e.version))
                obs.changed_under_downgrade.fetch_add(1);
        }
        obs.leave_shared();
        shared.unlock();
        obs.snapshots.fetch_add(1);
        co_await yield();
    }
}

} // namespace

int main()
{
    asio::io_context ctx(2);
    cache c(ctx);
    observations obs;

    auto on_exit = [&](std::exception_ptr e) {
        if (e)
            obs.failed_coroutines.fetch_add(1);
    };
    for (std::size_t i = 0; i < reader_count; ++i)
        asio::co_spawn(ctx, reader(c, obs, 1000 + i), on_exit);
    for (std::size_t i = 0; i < writer_count; ++i)
        asio::co_spawn(ctx, writer(c, obs, 2000 + i), on_exit);
    asio::co_spawn(ctx, snapshotter(c, obs), on_exit);

    std::thread second([&ctx] { ctx.run(); });
    ctx.run();
    second.join();

    const std::size_t reads = obs.reads.load();
    const std::size_t writes = obs.writes.load();
    const std::size_t snapshots = obs.snapshots.load();
    const int max_readers = obs.max_readers_inside.load();
    const std::size_t torn = obs.torn_entries.load();
    const std::size_t exclusion = obs.exclusion_violations.load();
    const std::size_t changed = obs.changed_under_downgrade.load();
    const std::size_t failed = obs.failed_coroutines.load();

    std::printf("shared_cache: %zu readers, %zu writers, 1 snapshotter on 2 threads\n", reader_count,
                writer_count);
    std::printf("  reads: %zu, refreshes: %zu, snapshots (write, downgrade, read back): %zu\n", reads, writes,
                snapshots);
    std::printf("  most readers inside at once: %d\n", max_readers);
    std::printf("  half-written entries seen: %zu, writer not alone: %zu, changed under downgrade: %zu\n",
                torn, exclusion, changed);

    // Readers sharing the lock is the point of a shared mutex: if they never overlapped, it
    // degenerated into an exclusive one.
    const bool ok = reads == reader_count * lookups_per_reader &&
                    writes == writer_count * refreshes_per_writer && snapshots == snapshot_count &&
                    max_readers > 1 && torn == 0 && exclusion == 0 && changed == 0 && failed == 0;
    std::printf("%s\n", ok ? "OK" : "FAILED");
    return ok ? 0 : 1;
}
