#ifndef ASIO_SYNC_BENCH_SUPPORT_HARNESS_HPP
#define ASIO_SYNC_BENCH_SUPPORT_HARNESS_HPP

// What the contended benchmarks share: a persistent io_context thread pool and a gate the
// benchmark thread waits on until every task of a batch has finished.

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <thread>
#include <vector>

namespace asio_sync::bench {

// Operations per task per batch, the same in every contended scenario (and on the Tokio side in
// tokio/): enough that spawning the tasks and waking the benchmark thread at the end are noise,
// few enough that a batch takes milliseconds and repetitions stay cheap.
constexpr std::size_t rounds = 10000;

// Runs the io_context on `count` threads until destroyed, so that starting threads stays out of
// the timed region; the work guard keeps them waiting between batches.
class context_threads
{
public:
    context_threads(boost::asio::io_context& ctx, std::size_t count) : work_(ctx.get_executor())
    {
        for (std::size_t i = 0; i < count; ++i)
            threads_.emplace_back([&ctx] { ctx.run(); });
    }

    context_threads(const context_threads&) = delete;
    context_threads& operator=(const context_threads&) = delete;

    ~context_threads()
    {
        work_.reset();
        for (std::thread& t : threads_)
            t.join();
    }

private:
    boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
    std::vector<std::thread> threads_;
};

// Counts finished tasks and wakes the benchmark thread after the last. Notifying under the lock
// keeps the gate valid until the notifier is done with it, so it can be reused by the next batch.
class finish_gate
{
public:
    void reset(std::size_t expected)
    {
        std::lock_guard<std::mutex> lock(mutex_);
        remaining_ = expected;
    }

    void arrive()
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (--remaining_ == 0)
            done_.notify_one();
    }

    void wait()
    {
        std::unique_lock<std::mutex> lock(mutex_);
        done_.wait(lock, [this] { return remaining_ == 0; });
    }

private:
    std::mutex mutex_;
    std::condition_variable done_;
    std::size_t remaining_ = 0;
};

} // namespace asio_sync::bench

#endif // ASIO_SYNC_BENCH_SUPPORT_HARNESS_HPP
