#ifndef ASIO_SYNC_SEMAPHORE_HPP
#define ASIO_SYNC_SEMAPHORE_HPP

/// @file
/// The asynchronous counting semaphore.

#include <asio_sync/detail/semaphore_service.hpp>
#include <asio_sync/error.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/execution_context.hpp>
#include <boost/system/error_code.hpp>

#include <cstddef>
#include <type_traits>

namespace asio_sync {

template <class Executor>
class basic_mutex;
template <class Executor>
class basic_shared_mutex;

/// An asynchronous counting semaphore for Asio: waits never block a thread.
///
/// The semaphore holds a count of permits. `async_acquire(n)` completes once it has been given n
/// permits; `release(n)` gives n back. Waiters are served in strict FIFO order: the oldest waiter
/// collects permits as they are released, even a few at a time, and nobody overtakes it: not a
/// later waiter for fewer permits, not `try_acquire`. Released permits go directly to the waiters
/// that need them; only the surplus returns to the counter.
///
/// **Completion.** A handler is never invoked from inside `async_acquire`, `release`, `cancel`,
/// `close` or the destructor, and never while the semaphore's internal lock is held. It runs
/// through its associated executor (by default the semaphore's), as if by `boost::asio::post`,
/// and the operation keeps that executor's work outstanding until then, so `io_context::run()`
/// does not return while anyone waits.
///
/// **Allocation.** An acquire satisfied at once allocates nothing of its own. An acquire that has
/// to wait allocates one operation object with the handler's associated allocator; the waiter
/// lives inside it. Nothing else is allocated per wait.
///
/// **Thread safety.** Every member function may be called concurrently from any thread.
/// `try_acquire`, `release` while nobody waits, and an `async_acquire` satisfied at once are a
/// lock-free compare-and-swap on one atomic word.
///
/// **Memory ordering.** Everything a thread did before `release(n)` happens-before the
/// completion handler (or the successful `try_acquire`) that receives any of those permits.
///
/// **Lifetime.** The semaphore must outlive any call on it; destroying it aborts the acquires
/// still queued. It may outlive its execution context: context shutdown destroys the queued
/// acquires' handlers without invoking them, and the semaphore stays safe to destroy afterwards.
///
/// @tparam Executor The I/O executor: the default executor for completion handlers and the
/// context whose shutdown destroys pending operations.
template <class Executor = boost::asio::any_io_executor>
class basic_semaphore
{
public:
    /// The type of the executor associated with the semaphore.
    using executor_type = Executor;

    /// Rebinds the semaphore to another executor type.
    template <class OtherExecutor>
    struct rebind_executor
    {
        /// The semaphore type when rebound to the specified executor.
        using other = basic_semaphore<OtherExecutor>;
    };

    /// The largest number of permits the semaphore can count, and the most one acquire may ask
    /// for: 2^62 - 1 on 64-bit platforms.
    static constexpr std::size_t max_permits = detail::semaphore_core<>::max_permits;

    /// Constructs a semaphore that holds `initial_permits` permits.
    ///
    /// @throws std::invalid_argument if `initial_permits > max_permits`.
    basic_semaphore(const executor_type& ex, std::size_t initial_permits);

    /// Constructs a semaphore that uses the context's executor and holds `initial_permits`.
    ///
    /// @throws std::invalid_argument if `initial_permits > max_permits`.
    template <
        class ExecutionContext,
        std::enable_if_t<std::is_convertible_v<ExecutionContext&, boost::asio::execution_context&>, int> = 0>
    basic_semaphore(ExecutionContext& ctx, std::size_t initial_permits)
        : basic_semaphore(executor_type(ctx.get_executor()), initial_permits)
    {
    }

    basic_semaphore(const basic_semaphore&) = delete;
    basic_semaphore& operator=(const basic_semaphore&) = delete;

    /// Destroys the semaphore. Queued acquires complete with
    /// `boost::asio::error::operation_aborted` (posted, as always).
    ~basic_semaphore();

    /// Returns the executor associated with the semaphore.
    const executor_type& get_executor() const noexcept { return executor_; }

    /// Starts an asynchronous acquire of `n` permits.
    ///
    /// The operation completes once `n` permits are the caller's. While it waits it is queued
    /// behind earlier waiters and collects permits as they are released; nobody takes permits
    /// ahead of it. The permits it completes with must be given back with `release(n)`.
    ///
    /// **Completion signature:** `void(boost::system::error_code)`.
    ///
    /// **Errors:**
    /// - none: the caller now holds `n` permits. `n == 0` succeeds at once unless closed.
    /// - `asio_sync::error::too_many_permits`: `n > max_permits`. Nothing was queued.
    /// - `asio_sync::error::closed`: the semaphore is closed, or was closed while this waited.
    /// - `boost::asio::error::operation_aborted`: cancelled by per-operation cancellation,
    ///   `cancel()` or the semaphore's destruction.
    /// In every error case the operation holds no permits: those it had collected have been
    /// handed to the waiters behind it or returned to the counter.
    ///
    /// **Per-operation cancellation:** terminal, partial and total cancellation are supported,
    /// through the handler's associated cancellation slot. A cancelled acquire leaves the queue,
    /// gives what it had collected to the waiters behind it, and completes with
    /// `operation_aborted`. A cancellation that races a grant has exactly one outcome: either
    /// success (the permits are the caller's) or `operation_aborted` (the permits were returned).
    /// The cancellation signal must not be emitted after the semaphore is destroyed.
    ///
    /// **Executor:** the handler is never invoked from within this function. It is submitted to
    /// its associated executor (default: `get_executor()`) as if by `boost::asio::post`, even when
    /// permits are available at once, with that executor's work outstanding until then.
    ///
    /// **Thread safety:** may be called concurrently with any other member function.
    ///
    /// **Object lifetimes:** the semaphore must outlive the operation's initiation; destroying it
    /// while the operation waits completes the operation with `operation_aborted`. An operation
    /// that has to wait holds the handler in one object allocated with the handler's associated
    /// allocator, released before the handler is invoked.
    ///
    /// @param n The number of permits to acquire.
    /// @param token The completion token: a handler, `boost::asio::use_awaitable`,
    /// `boost::asio::use_future`, `boost::asio::deferred`, or any other.
    template <BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code))
                  AcquireToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_acquire(std::size_t n, AcquireToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type))
    {
        return async_acquire_as<void(boost::system::error_code)>(n, detail::plain_grant(),
                                                                 std::forward<AcquireToken>(token));
    }

    /// Starts an asynchronous acquire of one permit: `async_acquire(1, token)`.
    template <BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code))
                  AcquireToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_acquire(AcquireToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type))
    {
        return async_acquire(1, std::forward<AcquireToken>(token));
    }

    /// Takes `n` permits if that can be done at once, without waiting.
    ///
    /// Fails when the semaphore is closed, when fewer than `n` permits are available, or when any
    /// acquire is queued (so it never overtakes a waiter). `try_acquire(0)` succeeds unless closed.
    /// Lock-free.
    ///
    /// @returns true if the caller now holds `n` permits.
    bool try_acquire(std::size_t n = 1) noexcept { return impl_.core.try_acquire(n); }

    /// Gives `n` permits back.
    ///
    /// They go to the oldest queued acquires first; the first waiter left partly served stops the
    /// hand-off (head-of-line order), and what no waiter needs returns to the counter. Completed
    /// waiters' handlers are posted after the internal lock is released, never invoked here.
    /// Works after `close()` too. Lock-free while nobody waits.
    ///
    /// @throws std::overflow_error if the counter would exceed `max_permits`. Nothing changes.
    void release(std::size_t n = 1);

    /// Returns the number of permits in the counter now. It is 0 while anyone waits.
    std::size_t available() const noexcept { return impl_.core.available(); }

    /// Returns the number of acquires queued now.
    std::size_t waiting() const noexcept { return impl_.core.waiting(); }

    /// Aborts every queued acquire. They complete with `boost::asio::error::operation_aborted`;
    /// the permits they had collected return to the counter. The semaphore stays usable.
    ///
    /// @returns the number of acquires aborted.
    std::size_t cancel();

    /// Closes the semaphore for good.
    ///
    /// Queued acquires complete with `asio_sync::error::closed` and their collected permits
    /// return to the counter. Later acquires complete with `asio_sync::error::closed` (also for
    /// `n == 0`) and `try_acquire` fails. `release` still works, and `available()` grows with it,
    /// so holders can still give their permits back.
    void close();

    /// Returns true once `close()` has been called.
    bool is_closed() const noexcept { return impl_.core.is_closed(); }

private:
    template <class>
    friend class basic_mutex;
    template <class>
    friend class basic_shared_mutex;

    template <class Grant>
    class initiate_async_acquire;

    // An acquire whose handler receives what `grant` makes of the outcome: the shape the locks
    // build their scoped variants on.
    template <class Signature, class Grant, class Token>
    auto async_acquire_as(std::size_t n, const Grant& grant, Token&& token)
    {
        return boost::asio::async_initiate<Token, Signature>(initiate_async_acquire<Grant>(this, grant),
                                                             token, n);
    }

    template <class Handler, class Grant>
    void start_acquire(Handler handler, std::size_t n, const Grant& grant);

    executor_type executor_;
    detail::semaphore_impl impl_;
};

/// A semaphore with the default executor type, `boost::asio::any_io_executor`.
using semaphore = basic_semaphore<>;

} // namespace asio_sync

#include <asio_sync/impl/semaphore.hpp>

#endif // ASIO_SYNC_SEMAPHORE_HPP
