// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_BENCH_SUPPORT_STRAND_SEMAPHORE_HPP
#define ASIO_SYNC_BENCH_SUPPORT_STRAND_SEMAPHORE_HPP

// A semaphore as Asio users hand-roll it, the peer our semaphore is measured against: a strand
// serialises every access to a count and a std::deque of pending handlers; async_acquire posts to
// the strand, which either takes the permits or queues the handler; release posts to the strand,
// which adds the permits and completes the oldest waiters that now fit. Handlers are type-erased
// into heap nodes (Boost 1.81 has no any_completion_handler) and completed with a post to their
// own executor, as an Asio operation must. No cancellation, no bound: what such code usually has.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/system/error_code.hpp>

#include <cstddef>
#include <deque>
#include <future>
#include <memory>
#include <utility>

namespace asio_sync::bench {

class strand_semaphore
{
public:
    using executor_type = boost::asio::any_io_executor;

    template <class ExecutionContext>
    strand_semaphore(ExecutionContext& ctx, std::size_t permits)
        : strand_(boost::asio::make_strand(ctx.get_executor())), permits_(permits)
    {
    }

    strand_semaphore(const strand_semaphore&) = delete;
    strand_semaphore& operator=(const strand_semaphore&) = delete;

    template <class Token>
    auto async_acquire(std::size_t n, Token&& token)
    {
        return boost::asio::async_initiate<Token, void(boost::system::error_code)>(
            [this, n](auto handler) {
                boost::asio::post(strand_, [this, n, w = make_waiter(std::move(handler))]() mutable {
                    if (waiters_.empty() && permits_ >= n)
                    {
                        permits_ -= n;
                        w->complete();
                    }
                    else
                    {
                        waiters_.push_back(pending{n, std::move(w)});
                    }
                });
            },
            token);
    }

    template <class Token>
    auto async_acquire(Token&& token)
    {
        return async_acquire(1, std::forward<Token>(token));
    }

    void release(std::size_t n = 1)
    {
        boost::asio::post(strand_, [this, n] {
            permits_ += n;
            // First come, first served: a large request at the head holds back smaller ones.
            while (!waiters_.empty() && permits_ >= waiters_.front().permits)
            {
                permits_ -= waiters_.front().permits;
                std::unique_ptr<waiter> w = std::move(waiters_.front().handler);
                waiters_.pop_front();
                w->complete();
            }
        });
    }

    // Whether all permits are back and nobody waits, asked on the strand once the releases posted
    // so far have run. Needs a thread running the context; a caller that has just seen run()
    // return can use is_idle_now() instead.
    bool is_idle(std::size_t permits)
    {
        std::promise<bool> answer;
        boost::asio::post(strand_, [&] { answer.set_value(is_idle_now(permits)); });
        return answer.get_future().get();
    }

    bool is_idle_now(std::size_t permits) const { return permits_ == permits && waiters_.empty(); }

private:
    struct waiter
    {
        virtual ~waiter() = default;
        virtual void complete() = 0;
    };

    template <class Handler>
    struct waiter_for final : waiter
    {
        using handler_executor = boost::asio::associated_executor_t<Handler, executor_type>;

        waiter_for(Handler&& h, const executor_type& fallback)
            : work(boost::asio::get_associated_executor(h, fallback)), handler(std::move(h))
        {
        }

        void complete() override
        {
            handler_executor ex = work.get_executor();
            work.reset();
            boost::asio::post(
                ex, [h = std::move(handler)]() mutable { std::move(h)(boost::system::error_code()); });
        }

        // Keeps the handler's executor busy while the handler waits, as an Asio operation does.
        boost::asio::executor_work_guard<handler_executor> work;
        Handler handler;
    };

    template <class Handler>
    std::unique_ptr<waiter> make_waiter(Handler handler)
    {
        return std::make_unique<waiter_for<Handler>>(std::move(handler), strand_.get_inner_executor());
    }

    struct pending
    {
        std::size_t permits;
        std::unique_ptr<waiter> handler;
    };

    boost::asio::strand<executor_type> strand_;
    std::size_t permits_;
    std::deque<pending> waiters_;
};

} // namespace asio_sync::bench

#endif // ASIO_SYNC_BENCH_SUPPORT_STRAND_SEMAPHORE_HPP
