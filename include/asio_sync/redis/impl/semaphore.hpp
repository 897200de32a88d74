// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_REDIS_IMPL_SEMAPHORE_HPP
#define ASIO_SYNC_REDIS_IMPL_SEMAPHORE_HPP

#include <asio_sync/redis/detail/checked_semaphore_options.hpp>
#include <asio_sync/redis/detail/composed_call.hpp>
#include <asio_sync/redis/detail/semaphore_reply.hpp>

#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace asio_sync::redis {

template <class Executor>
class basic_semaphore<Executor>::initiate_async_acquire_permit
{
public:
    using executor_type = Executor;

    explicit initiate_async_acquire_permit(basic_semaphore* self) noexcept : self_(self) {}

    const executor_type& get_executor() const noexcept { return self_->get_executor(); }

    template <class Handler>
    void operator()(Handler&& handler, std::size_t n, detail::acquire_mode mode, no_timeout timeout) const
    {
        self_->engine_->acquire(n, mode, timeout, std::decay_t<Handler>(std::forward<Handler>(handler)));
    }

private:
    basic_semaphore* self_;
};

// The read of async_status: FCALL_RO usage, then the decoded numbers. A composed call
// (detail/composed_call.hpp), so that the handler's allocator and cancellation slot carry over to
// the connection's command. It holds the call, not the semaphore's engine: the handler may
// destroy the semaphore, the connection and their context before the operation is destroyed.
template <class Executor>
struct basic_semaphore<Executor>::status_read
{
    connection_type* connection;
    std::vector<std::string> usage;

    template <class Self>
    void operator()(Self& self)
    {
        connection->async_execute(usage, std::move(self));
    }

    template <class Self>
    void operator()(Self& self, boost::system::error_code ec, const reply& r)
    {
        using outcome = detail::semaphore_reply::outcome;
        const detail::semaphore_reply decoded = detail::decode_semaphore_reply(ec, r);
        if (decoded.what == outcome::usage)
            return self.complete({}, semaphore_status{decoded.capacity, decoded.held, decoded.queued});
        // A read whose reply was lost with its link is not sent again: it reports connection_lost,
        // as async_execute does.
        self.complete(decoded.what == outcome::failed ? decoded.error
                      : decoded.what == outcome::connection_lost
                          ? ec
                          : boost::system::error_code(redis::error::server_error),
                      semaphore_status{});
    }
};

template <class Executor>
class basic_semaphore<Executor>::initiate_async_set_capacity
{
public:
    using executor_type = Executor;

    explicit initiate_async_set_capacity(basic_semaphore* self) noexcept : self_(self) {}

    const executor_type& get_executor() const noexcept { return self_->get_executor(); }

    template <class Handler>
    void operator()(Handler&& handler, std::size_t n, set_capacity_mode mode) const
    {
        self_->engine_->set_capacity(n, mode == set_capacity_mode::wait_for_holders,
                                     std::decay_t<Handler>(std::forward<Handler>(handler)));
    }

private:
    basic_semaphore* self_;
};

template <class Executor>
class basic_semaphore<Executor>::initiate_async_status
{
public:
    using executor_type = Executor;

    explicit initiate_async_status(basic_semaphore* self) noexcept : self_(self) {}

    const executor_type& get_executor() const noexcept { return self_->get_executor(); }

    template <class Handler>
    void operator()(Handler&& handler) const
    {
        detail::start_composed_call<void(boost::system::error_code, semaphore_status)>(
            std::forward<Handler>(handler), self_->get_executor(),
            status_read{self_->connection_, self_->engine_->script().usage()});
    }

private:
    basic_semaphore* self_;
};

template <class Executor>
basic_semaphore<Executor>::basic_semaphore(connection_type& conn, std::string name, std::size_t capacity,
                                           std::chrono::milliseconds lease_duration)
    : basic_semaphore(conn, std::move(name), capacity, semaphore_options{lease_duration, std::nullopt, false})
{
}

template <class Executor>
basic_semaphore<Executor>::basic_semaphore(connection_type& conn, std::string name, std::size_t capacity,
                                           const semaphore_options& options)
    : executor_(conn.get_executor()), connection_(&conn),
      engine_(std::make_shared<engine_type>(
          std::make_shared<detail::connection_semaphore_link<Executor>>(conn), executor_, name, capacity,
          detail::checked_semaphore_options(options, min_lease_duration, max_lease_duration)))
{
    engine_->start();
}

template <class Executor>
basic_semaphore<Executor>::~basic_semaphore()
{
    engine_->stop();
}

template <class Executor>
void basic_semaphore<Executor>::cancel()
{
    engine_->abort_waiters(boost::asio::error::operation_aborted);
}

template <class Executor>
void basic_semaphore<Executor>::close()
{
    engine_->close();
}

} // namespace asio_sync::redis

#endif // ASIO_SYNC_REDIS_IMPL_SEMAPHORE_HPP
