// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_REDIS_IMPL_PERMIT_HPP
#define ASIO_SYNC_REDIS_IMPL_PERMIT_HPP

#include <asio_sync/detail/completion.hpp>
#include <asio_sync/detail/grant.hpp>
// The engine that carries out the permit's operations; included last, so that the permit's
// header and the semaphore's may come in either order.
#include <asio_sync/redis/detail/semaphore_engine.hpp>

#include <boost/asio/error.hpp>
#include <boost/asio/system_executor.hpp>

#include <type_traits>

namespace asio_sync::redis {

template <class Executor>
class basic_permit<Executor>::initiate_async_release
{
public:
    using executor_type = Executor;

    explicit initiate_async_release(basic_permit* self) noexcept : self_(self) {}

    const executor_type& get_executor() const noexcept { return self_->get_executor(); }

    template <class Handler>
    void operator()(Handler&& handler) const
    {
        self_->count_ = 0;
        self_->lease_.reset();
        if (const auto engine = std::exchange(self_->engine_, nullptr))
            return engine->release(
                self_->id_, engine->make_status_op(std::decay_t<Handler>(std::forward<Handler>(handler))));
        complete_empty(std::decay_t<Handler>(std::forward<Handler>(handler)), boost::system::error_code());
    }

private:
    basic_permit* self_;
};

template <class Executor>
class basic_permit<Executor>::initiate_async_wait_lost
{
public:
    using executor_type = Executor;

    explicit initiate_async_wait_lost(basic_permit* self) noexcept : self_(self) {}

    const executor_type& get_executor() const noexcept { return self_->get_executor(); }

    template <class Handler>
    void operator()(Handler&& handler) const
    {
        if (self_->engine_)
            return self_->engine_->wait_lost(self_->id_, self_->engine_->make_status_op(std::decay_t<Handler>(
                                                             std::forward<Handler>(handler))));
        complete_empty(std::decay_t<Handler>(std::forward<Handler>(handler)),
                       boost::asio::error::operation_aborted);
    }

private:
    basic_permit* self_;
};

template <class Executor>
basic_permit<Executor>::basic_permit(basic_permit&& other) noexcept
    : engine_(std::move(other.engine_)), executor_(other.executor_), id_(std::move(other.id_)),
      count_(std::exchange(other.count_, 0)), fence_(std::exchange(other.fence_, 0)),
      lost_signal_(std::move(other.lost_signal_)), lease_(std::move(other.lease_))
{
}

template <class Executor>
basic_permit<Executor>& basic_permit<Executor>::operator=(basic_permit&& other) noexcept
{
    if (this != &other)
    {
        release_in_background();
        engine_ = std::move(other.engine_);
        executor_ = other.executor_;
        id_ = std::move(other.id_);
        count_ = std::exchange(other.count_, 0);
        fence_ = std::exchange(other.fence_, 0);
        lost_signal_ = std::move(other.lost_signal_);
        lease_ = std::move(other.lease_);
    }
    return *this;
}

template <class Executor>
basic_permit<Executor>::basic_permit(std::shared_ptr<engine_type> engine, std::string id, std::size_t count,
                                     std::uint64_t fence,
                                     std::shared_ptr<boost::asio::cancellation_signal> lost_signal,
                                     std::shared_ptr<const detail::lease_view> lease)
    : engine_(std::move(engine)), executor_(engine_->get_executor()), id_(std::move(id)),
      count_(count), fence_(fence), lost_signal_(std::move(lost_signal)), lease_(std::move(lease))
{
}

template <class Executor>
template <class Handler>
void basic_permit<Executor>::complete_empty(Handler handler, boost::system::error_code ec)
{
    asio_sync::detail::post_completion(std::move(handler), boost::asio::system_executor(),
                                       asio_sync::detail::signal_grant(), ec, 0);
}

template <class Executor>
void basic_permit<Executor>::release_in_background() noexcept
{
    if (const auto engine = std::exchange(engine_, nullptr))
        engine->release(id_, nullptr);
    count_ = 0;
    lease_.reset();
}

} // namespace asio_sync::redis

#endif // ASIO_SYNC_REDIS_IMPL_PERMIT_HPP
