#ifndef ASIO_SYNC_IMPL_SEMAPHORE_HPP
#define ASIO_SYNC_IMPL_SEMAPHORE_HPP

#include <boost/asio/execution/context.hpp>
#include <boost/asio/query.hpp>

#include <utility>

namespace asio_sync {

template <class Executor>
template <class Grant>
class basic_semaphore<Executor>::initiate_async_acquire
{
public:
    using executor_type = Executor;

    initiate_async_acquire(basic_semaphore* self, const Grant& grant) noexcept : self_(self), grant_(grant) {}

    const executor_type& get_executor() const noexcept { return self_->get_executor(); }

    template <class Handler>
    void operator()(Handler&& handler, std::size_t n) const
    {
        self_->start_acquire(std::decay_t<Handler>(std::forward<Handler>(handler)), n, grant_);
    }

private:
    basic_semaphore* self_;
    Grant grant_;
};

template <class Executor>
basic_semaphore<Executor>::basic_semaphore(const executor_type& ex, std::size_t initial_permits)
    : executor_(ex), impl_(initial_permits)
{
    boost::asio::execution_context& ctx = boost::asio::query(executor_, boost::asio::execution::context);
    boost::asio::use_service<detail::semaphore_service>(ctx).add(impl_);
}

template <class Executor>
basic_semaphore<Executor>::~basic_semaphore()
{
    detail::waiter_list done;
    impl_.core.abort_all(detail::waiter_outcome::aborted, false, done);
    if (detail::semaphore_service* service = impl_.service.load(std::memory_order_acquire))
        service->remove(impl_);
    detail::complete_all(done);
}

template <class Executor>
template <class Handler, class Grant>
void basic_semaphore<Executor>::start_acquire(Handler handler, std::size_t n, const Grant& grant)
{
    using op_type = detail::acquire_op<Handler, Executor, Grant>;
    using cancellation_type = detail::acquire_cancellation<detail::semaphore_core<>>;
    using enqueue_result = detail::semaphore_core<>::enqueue_result;

    if (n > max_permits)
        return detail::post_completion(std::move(handler), executor_, grant, error::too_many_permits);
    if (impl_.core.try_acquire(n))
        return detail::post_completion(std::move(handler), executor_, grant, {});
    if (n == 0) // try_acquire(0) fails only once closed
        return detail::post_completion(std::move(handler), executor_, grant, error::closed);

    op_type* op = op_type::create(std::move(handler), executor_, grant);
    auto& slot = op->slot();
    if (slot.is_connected())
    {
        // Installed before the waiter is visible to other threads, so no grant can race it.
        try
        {
            op->cancel_ref = slot.template emplace<cancellation_type>(impl_.core, op).waiter_ref();
        }
        catch (...)
        {
            op->destroy();
            throw;
        }
    }
    const enqueue_result result = impl_.core.enqueue(*op, n);
    if (result == enqueue_result::queued)
        return;
    // Decided without queueing: nobody else knows of the operation yet.
    if (slot.is_connected())
        slot.clear();
    op->complete(result == enqueue_result::granted ? boost::system::error_code() : error::closed);
}

template <class Executor>
void basic_semaphore<Executor>::release(std::size_t n)
{
    detail::waiter_list done;
    impl_.core.release(n, done);
    detail::complete_all(done);
}

template <class Executor>
std::size_t basic_semaphore<Executor>::cancel()
{
    detail::waiter_list done;
    const std::size_t count = impl_.core.abort_all(detail::waiter_outcome::aborted, false, done);
    detail::complete_all(done);
    return count;
}

template <class Executor>
void basic_semaphore<Executor>::close()
{
    detail::waiter_list done;
    impl_.core.abort_all(detail::waiter_outcome::closed, true, done);
    detail::complete_all(done);
}

} // namespace asio_sync

#endif // ASIO_SYNC_IMPL_SEMAPHORE_HPP
