// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

// A bounded producer/consumer queue with an asio_sync::mutex and two condition variables, as
// with std::mutex and std::condition_variable, but no thread ever blocks: producers wait while
// the queue is full, consumers while it is empty, as suspended coroutines on a thread pool.
//
// `co_await cv.async_wait(lock, pred, use_awaitable)` gives the mutex up while it waits and holds
// it again when it resumes, with `lock` owning it. The lock object lives in the coroutine frame,
// which outlives the wait, as the wait requires. Closing the queue wakes everyone with
// notify_all; consumers drain what is left and stop.
//
// The program checks that every item was consumed exactly once, and exits non-zero if not.
//
//   producer_consumer [PRODUCERS] [CONSUMERS] [ITEMS_EACH]    (default: 4 4 1000)

#include <asio_sync/condition_variable.hpp>
#include <asio_sync/mutex.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <atomic>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <optional>

namespace asio = boost::asio;

namespace {

// A queue of at most `capacity` items. push and pop suspend while it is full or empty.
class bounded_queue
{
public:
    bounded_queue(const asio::any_io_executor& ex, std::size_t capacity)
        : mutex_(ex), not_full_(ex), not_empty_(ex), capacity_(capacity)
    {
    }

    asio::awaitable<void> push(long item)
    {
        std::unique_lock lock = co_await mutex_.async_scoped_lock(asio::use_awaitable);
        co_await not_full_.async_wait(
            lock, [&] { return items_.size() < capacity_; }, asio::use_awaitable);
        items_.push_back(item);
        not_empty_.notify_one();
    }

    // Returns nothing once the queue is closed and empty.
    asio::awaitable<std::optional<long>> pop()
    {
        std::unique_lock lock = co_await mutex_.async_scoped_lock(asio::use_awaitable);
        co_await not_empty_.async_wait(
            lock, [&] { return !items_.empty() || closed_; }, asio::use_awaitable);
        if (items_.empty())
            co_return std::nullopt;
        const long item = items_.front();
        items_.pop_front();
        not_full_.notify_one();
        co_return item;
    }

    asio::awaitable<void> close()
    {
        std::unique_lock lock = co_await mutex_.async_scoped_lock(asio::use_awaitable);
        closed_ = true;
        not_empty_.notify_all();
    }

private:
    asio_sync::mutex mutex_;
    asio_sync::condition_variable not_full_;
    asio_sync::condition_variable not_empty_;
    std::size_t capacity_;
    std::deque<long> items_; // guarded by mutex_, as is closed_
    bool closed_ = false;
};

struct totals
{
    std::mutex mutex; // the consumers' tallies, reported from the pool's threads
    long sum = 0;
    long count = 0;
};

asio::awaitable<void> produce(bounded_queue& queue, long first, long count, std::atomic<int>& producers_left)
{
    for (long item = first; item < first + count; ++item)
        co_await queue.push(item);
    if (--producers_left == 0)
        co_await queue.close();
}

asio::awaitable<void> consume(bounded_queue& queue, totals& result)
{
    long sum = 0;
    long count = 0;
    while (std::optional<long> item = co_await queue.pop())
    {
        sum += *item;
        ++count;
    }
    std::lock_guard guard(result.mutex);
    result.sum += sum;
    result.count += count;
}

} // namespace

int main(int argc, char** argv)
{
    const int producers = argc > 1 ? std::atoi(argv[1]) : 4;
    const int consumers = argc > 2 ? std::atoi(argv[2]) : 4;
    const long items_each = argc > 3 ? std::atol(argv[3]) : 1000;

    asio::thread_pool pool(4);
    bounded_queue queue(pool.get_executor(), 16);
    totals result;
    std::atomic<int> producers_left{producers};
    for (int c = 0; c < consumers; ++c)
        asio::co_spawn(pool, consume(queue, result), asio::detached);
    for (int p = 0; p < producers; ++p)
        asio::co_spawn(pool, produce(queue, p * items_each, items_each, producers_left), asio::detached);
    pool.join();

    const long total = producers * items_each;
    const long expected_sum = total * (total - 1) / 2; // items 0 .. total-1, each once
    std::printf("%ld items consumed, sum %ld (expected %ld items, sum %ld)\n", result.count, result.sum,
                total, expected_sum);
    return result.count == total && result.sum == expected_sum ? EXIT_SUCCESS : EXIT_FAILURE;
}
