#ifndef ASIO_SYNC_MUTEX_HPP
#define ASIO_SYNC_MUTEX_HPP

/// @file
/// The asynchronous mutex.

#include <asio_sync/detail/lock_grant.hpp>
#include <asio_sync/semaphore.hpp>

#include <boost/assert.hpp>

#include <mutex>

namespace asio_sync {

/// An asynchronous mutex for Asio: a semaphore of one permit.
///
/// It inherits everything the semaphore guarantees: strict FIFO hand-off (an unlock passes the
/// lock to the oldest waiter, nobody barges in, `try_lock` fails while anyone waits), per-operation
/// cancellation, one allocation per wait through the handler's allocator, completions always
/// posted through the handler's associated executor and never invoked inside a member function.
///
/// The mutex is not recursive and has no owner: any code may unlock it, as with a semaphore.
/// Every member function may be called concurrently from any thread. Unlocking happens-before
/// the completion of the lock operation that receives the lock.
///
/// @tparam Executor The I/O executor: the default executor for completion handlers.
template <class Executor = boost::asio::any_io_executor>
class basic_mutex
{
public:
    /// The type of the executor associated with the mutex.
    using executor_type = Executor;

    /// Rebinds the mutex to another executor type.
    template <class OtherExecutor>
    struct rebind_executor
    {
        /// The mutex type when rebound to the specified executor.
        using other = basic_mutex<OtherExecutor>;
    };

    /// Constructs an unlocked mutex.
    explicit basic_mutex(const executor_type& ex) : semaphore_(ex, 1) {}

    /// Constructs an unlocked mutex that uses the context's executor.
    template <
        class ExecutionContext,
        std::enable_if_t<std::is_convertible_v<ExecutionContext&, boost::asio::execution_context&>, int> = 0>
    explicit basic_mutex(ExecutionContext& ctx) : semaphore_(ctx, 1)
    {
    }

    basic_mutex(const basic_mutex&) = delete;
    basic_mutex& operator=(const basic_mutex&) = delete;

    /// Destroys the mutex. Pending lock operations complete with
    /// `boost::asio::error::operation_aborted`.
    ~basic_mutex() = default;

    /// Returns the executor associated with the mutex.
    const executor_type& get_executor() const noexcept { return semaphore_.get_executor(); }

    /// Starts an asynchronous lock. On success the caller holds the lock and must `unlock()` it.
    ///
    /// **Completion signature:** `void(boost::system::error_code)`.
    ///
    /// **Errors:** `boost::asio::error::operation_aborted` when cancelled (per-operation
    /// cancellation, `cancel()`, destruction of the mutex); the lock is then not held.
    ///
    /// **Per-operation cancellation:** terminal, partial and total. A cancellation that races the
    /// grant either completes with success (the lock is held) or with `operation_aborted` (the
    /// lock passed on to the next waiter); never both, never neither.
    ///
    /// **Executor:** the handler is never invoked from within this function; it is submitted to
    /// its associated executor (default: `get_executor()`) as if by `boost::asio::post`.
    ///
    /// **Thread safety:** may be called concurrently with any other member function.
    ///
    /// **Object lifetimes:** the mutex must outlive the initiation; destroying it aborts the
    /// pending lock. A lock that waits allocates one object with the handler's allocator.
    template <BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code))
                  LockToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_lock(LockToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type))
    {
        return semaphore_.async_acquire(1, std::forward<LockToken>(token));
    }

    /// Starts an asynchronous lock whose handler receives a `std::unique_lock` owning the lock.
    ///
    /// **Completion signature:** `void(boost::system::error_code, std::unique_lock<basic_mutex>)`.
    /// On success the `unique_lock` owns the lock (adopted) and unlocks it when destroyed; on
    /// error it owns nothing. The guard is made when the lock is granted, so a handler destroyed
    /// without being invoked (say, at context shutdown) still unlocks.
    ///
    /// Errors, cancellation, executor, thread safety and lifetimes: as `async_lock`.
    template <BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code, std::unique_lock<basic_mutex>))
                  LockToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_scoped_lock(LockToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type))
    {
        using lock_type = std::unique_lock<basic_mutex>;
        return semaphore_.template async_acquire_as<void(boost::system::error_code, lock_type)>(
            1, detail::adopt_lock_grant<lock_type>{this}, std::forward<LockToken>(token));
    }

    /// Locks the mutex if that can be done at once: fails while it is locked or anyone waits.
    bool try_lock() noexcept { return semaphore_.try_acquire(1); }

    /// Unlocks the mutex, passing it to the oldest waiter if there is one (its handler is posted).
    ///
    /// Precondition: the mutex is locked. Unlocking an unlocked mutex is a precondition violation,
    /// caught by an assertion in debug builds.
    void unlock()
    {
        BOOST_ASSERT_MSG(semaphore_.available() == 0, "asio_sync::basic_mutex::unlock of an unlocked mutex");
        semaphore_.release(1);
    }

    /// Aborts every pending lock operation with `boost::asio::error::operation_aborted`.
    ///
    /// @returns the number of operations aborted.
    std::size_t cancel() { return semaphore_.cancel(); }

private:
    basic_semaphore<Executor> semaphore_;
};

/// A mutex with the default executor type, `boost::asio::any_io_executor`.
using mutex = basic_mutex<>;

} // namespace asio_sync

#endif // ASIO_SYNC_MUTEX_HPP
