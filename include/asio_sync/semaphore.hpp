// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_SEMAPHORE_HPP
#define ASIO_SYNC_SEMAPHORE_HPP

/// @file
/// The asynchronous counting semaphore: asio_sync::basic_semaphore, its permit objects
/// (asio_sync::basic_semaphore::permit) and the asio_sync::semaphore alias.

#include <asio_sync/call_site.hpp>
#include <asio_sync/detail/access.hpp>
#include <asio_sync/detail/acquire_awaitable.hpp>
#include <asio_sync/detail/deadline.hpp>
#include <asio_sync/detail/plain_grant.hpp>
#include <asio_sync/detail/semaphore_core.hpp>
#include <asio_sync/detail/semaphore_service.hpp>
#include <asio_sync/error.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/execution_context.hpp>
#include <boost/system/error_code.hpp>
#include <boost/throw_exception.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <optional>
#include <stdexcept>
#include <tuple>
#include <type_traits>
#include <utility>

namespace asio_sync {

/// An asynchronous counting semaphore for Asio: waits never block a thread.
///
/// The semaphore holds a count of permits. `async_acquire(n)` completes once it has been given n
/// permits; `release(n)` gives n back. Waiters are served in strict FIFO order: the oldest waiter
/// collects permits as they are released, even a few at a time, and nobody overtakes it: not a
/// later waiter for fewer permits, not `try_acquire`. Released permits go directly to the waiters
/// that need them; only the surplus returns to the counter.
///
/// Its waits keep the contract of \ref async_waits (completion through the handler's associated
/// executor, never inside `async_acquire`, `release`, `cancel`, `close` or the destructor, nor
/// under
/// the internal lock; work outstanding while anyone waits; per-operation cancellation; one
/// allocation per queued acquire, none for one satisfied at once).
///
/// **Permits and bounds.** `async_acquire_permit` and `try_acquire_permit` hand out a `permit`
/// object that gives its permits back when destroyed. A *bounded* semaphore (the three-argument
/// constructor) never lets more than its bound be in circulation, whatever the sequence of calls;
/// `add_permits`, `forget_permits` and `reduce_permits` change the capacity while it is in use.
/// See [Permits, bounds, capacity and time limits](permits.md) for the rules and how they
/// interact with queued waiters.
///
/// **Faults.** A completion that cannot be submitted gives back what its grant held (the faults of
/// \ref async_waits_executor): a plain grant's permits are released as a cancelled waiter's are,
/// serving the waiters behind it. `release`, `try_release`, `add_permits`, `reduce_permits`,
/// `cancel`, `close`, a permit's return, an unlock, a cancellation, a timeout and the destructor
/// still complete every other waiter they served, and do not throw because of it. An acquire that
/// cannot allocate its operation or install its cancellation handler throws and changes nothing.
///
/// **Thread safety.** Every member function may be called concurrently from any thread.
/// `try_acquire`, `release` while nobody waits, and an `async_acquire` satisfied at once are a
/// lock-free compare-and-swap on one atomic word, on a bounded semaphore too.
///
/// **Memory ordering.** Everything a thread did before `release(n)` happens-before the
/// completion handler (or the successful `try_acquire`) that receives any of those permits.
///
/// **Not copyable, not movable:** queued operations and permit objects refer to the semaphore by
/// address.
///
/// @tparam Executor The I/O executor: the default executor for completion handlers, the executor
/// of the timers of timed acquires, and the context whose shutdown destroys pending operations. A
/// standard executor, such as `boost::asio::io_context::executor_type`, a `strand`, or
/// `boost::asio::any_io_executor`.
template <class Executor = boost::asio::any_io_executor>
class basic_semaphore
{
public:
    /// The type of the executor associated with the semaphore.
    using executor_type = Executor;

    /// Rebinds the semaphore to another executor type.
    ///
    /// @tparam OtherExecutor The executor type to rebind to.
    template <class OtherExecutor>
    struct rebind_executor
    {
        /// The semaphore type when rebound to the specified executor.
        using other = basic_semaphore<OtherExecutor>;
    };

    /// The largest number of permits the semaphore can count, and the most one acquire may ask
    /// for: 2^62 - 1 on 64-bit platforms (`SIZE_MAX >> 2`: the two low bits of the internal
    /// counter hold flags). It is also the capacity of an unbounded semaphore.
    static constexpr std::size_t max_permits = detail::semaphore_core<>::max_permits;

    /// The largest bound of a bounded semaphore: 2^31 - 1 on 64-bit platforms. A bounded
    /// semaphore keeps its counter and the room left under its bound in the two halves of one
    /// atomic word, so that a plain acquire or release is one compare-and-swap.
    static constexpr std::size_t max_bound = detail::semaphore_core<>::max_bound;

    /// Constructs an unbounded semaphore that holds `initial_permits` permits.
    ///
    /// The semaphore registers with the service of the executor's execution context, so that the
    /// context's shutdown can destroy the operations still queued.
    ///
    /// \ctorex
    /// @param initial_permits The permits in the counter at the start.
    /// @throws std::invalid_argument if `initial_permits > max_permits`.
    basic_semaphore(const executor_type& ex, std::size_t initial_permits);

    /// Constructs an unbounded semaphore that uses the context's executor and holds
    /// `initial_permits`.
    ///
    /// \ctorctx
    /// @param initial_permits The permits in the counter at the start.
    /// @throws std::invalid_argument if `initial_permits > max_permits`.
    template <
        class ExecutionContext,
        std::enable_if_t<std::is_convertible_v<ExecutionContext&, boost::asio::execution_context&>, int> = 0>
    basic_semaphore(ExecutionContext& ctx, std::size_t initial_permits)
        : basic_semaphore(executor_type(ctx.get_executor()), initial_permits)
    {
    }

    /// Constructs a bounded semaphore: it holds `initial_permits`, and never more than `bound`
    /// permits are in circulation.
    ///
    /// The permits in circulation are those in the counter, those collected by queued acquires
    /// and those held by live `permit` objects. A plain acquire (`async_acquire`, `try_acquire`)
    /// takes its permits out of circulation and a plain `release` puts them back, so a plain
    /// release that was never paired with an acquire fails at that call. `capacity()` reports the
    /// bound; `add_permits`, `forget_permits` and `reduce_permits` move it.
    ///
    /// \ctorex
    /// @param initial_permits The permits in the counter at the start.
    /// @param bound The most permits ever in circulation.
    /// @throws std::invalid_argument if `bound > max_bound` or `initial_permits > bound`.
    basic_semaphore(const executor_type& ex, std::size_t initial_permits, std::size_t bound);

    /// Constructs a bounded semaphore that uses the context's executor.
    ///
    /// \ctorctx
    /// @param initial_permits The permits in the counter at the start.
    /// @param bound The most permits ever in circulation.
    /// @throws std::invalid_argument if `bound > max_bound` or `initial_permits > bound`.
    template <
        class ExecutionContext,
        std::enable_if_t<std::is_convertible_v<ExecutionContext&, boost::asio::execution_context&>, int> = 0>
    basic_semaphore(ExecutionContext& ctx, std::size_t initial_permits, std::size_t bound)
        : basic_semaphore(executor_type(ctx.get_executor()), initial_permits, bound)
    {
    }

    /// Not copyable (nor movable): operations and permits refer to the semaphore by address.
    basic_semaphore(const basic_semaphore&) = delete;
    /// Not copy-assignable (nor move-assignable).
    basic_semaphore& operator=(const basic_semaphore&) = delete;

    /// Destroys the semaphore. Queued acquires complete with
    /// `boost::asio::error::operation_aborted` (posted, as always, oldest first), and what they had
    /// collected is dropped with the semaphore. The handlers are submitted after the internal
    /// lock is released; none is invoked inside the destructor.
    ///
    /// No `permit` object may outlive the semaphore, and no cancellation signal bound to one of
    /// its acquires may be emitted after this.
    ~basic_semaphore();

    /// Returns the executor associated with the semaphore: the default executor of completion
    /// handlers.
    const executor_type& get_executor() const noexcept { return executor_; }

    class permit;

    /// Starts an asynchronous acquire of `n` permits.
    ///
    /// The operation completes once `n` permits are the caller's. While it waits it is queued
    /// behind earlier waiters and, once at the head of the queue, collects permits as they are
    /// released; nobody takes permits ahead of it: not a later acquire for fewer permits, not
    /// `try_acquire`. The permits it completes with must be given back with `release(n)`. A
    /// cancelled acquire hands what it had collected to the waiters behind it.
    ///
    /// An acquire decided at initiation, and the first waiter a `release` serves, are submitted as
    /// continuations of the caller (`execution::relationship.continuation`): on a thread that runs
    /// the
    /// handler's `io_context` or `thread_pool`, the handler runs after the caller's own handler
    /// returns,
    /// without waking another thread. With the token `boost::asio::use_awaitable` or
    /// `as_tuple(use_awaitable)` there is no handler: when the permits are free the coroutine takes
    /// them and continues without suspending; after 64 such acquires in a row on a thread the next
    /// one
    /// first yields through the executor, before it takes any permit, so that a loop of them cannot
    /// starve the thread's other handlers. Other tokens wrapping `use_awaitable` (`redirect_error`)
    /// take the ordinary path.
    ///
    /// \ecsig
    /// @par Errors
    /// - `asio_sync::error::too_many_permits`: `n > capacity()` at the call (for an unbounded
    ///   semaphore, `n > max_permits`), whether or not the semaphore is closed; nothing was
    ///   queued. Or `reduce_permits` lowered a bounded semaphore's capacity below `n` while the
    ///   operation waited.
    /// - `asio_sync::error::closed`: the semaphore was closed before the call, or `close()` was
    ///   called while the operation waited.
    /// - `boost::asio::error::operation_aborted`: cancellation, `cancel()`, or destruction.
    /// .
    /// `n == 0` succeeds without waiting, even behind queued acquires, unless the semaphore is
    /// closed. In every error case the operation holds no permits: what it had collected has gone
    /// to
    /// the waiters behind it, to a `reduce_permits` debt or back to the counter.
    /// \asyncwait
    /// @param n The number of permits to acquire.
    /// \waitparams
    template <BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code))
                  AcquireToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_acquire(std::size_t n, AcquireToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type),
                       call_site where = call_site())
    {
        return async_acquire_as<void(boost::system::error_code)>(n, detail::plain_grant{&impl_.core},
                                                                 std::forward<AcquireToken>(token),
                                                                 detail::no_deadline(), where);
    }

    /// Starts an asynchronous acquire of one permit: `async_acquire(1, token)`. It fails with
    /// `asio_sync::error::too_many_permits` when a bounded semaphore's capacity is 0 (at the call,
    /// or
    /// lowered to 0 by `reduce_permits` while it waited).
    ///
    /// \ecsig
    /// \asyncwait
    /// \waitparams
    template <BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code))
                  AcquireToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_acquire(AcquireToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type),
                       call_site where = call_site())
    {
        return async_acquire(1, std::forward<AcquireToken>(token), where);
    }

    /// Starts an asynchronous acquire of `n` permits that completes with a `permit` holding them.
    ///
    /// Everything said of `async_acquire` holds, errors included, except what the handler receives:
    /// on success a `permit` with `count() == n` (none for `n == 0`), which gives the permits back
    /// when
    /// it is destroyed; on error a `permit` holding nothing. On a bounded semaphore the permits
    /// stay in
    /// circulation while the permit holds them.
    ///
    /// \guardsig{permit}
    /// \asyncwait
    /// @param n The number of permits to acquire.
    /// \waitparams
    template <BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code, permit))
                  AcquireToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_acquire_permit(std::size_t n,
                              AcquireToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type),
                              call_site where = call_site())
    {
        return async_acquire_as<void(boost::system::error_code, permit)>(
            n, permit_grant{this, n}, std::forward<AcquireToken>(token), detail::no_deadline(), where);
    }

    /// Starts `async_acquire(n, token)` that gives up after `timeout`; a timed-out acquire hands
    /// the
    /// permits it had collected to the waiters behind it.
    ///
    /// Prefer this to racing `async_acquire` against a timer with `||` (awaitable operators) or
    /// `experimental::make_parallel_group`: when the grant lands just after the timer won, `||`
    /// reports the timer, and the permits granted to the losing acquire are never released.
    ///
    /// \ecsig
    /// \timedwait
    /// @param n The number of permits to acquire.
    /// \forparams
    /// \waitparams
    template <class Rep, class Period,
              BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code))
                  AcquireToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_acquire_for(std::size_t n, const std::chrono::duration<Rep, Period>& timeout,
                           AcquireToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type),
                           call_site where = call_site())
    {
        return async_acquire_as<void(boost::system::error_code)>(n, detail::plain_grant{&impl_.core},
                                                                 std::forward<AcquireToken>(token),
                                                                 detail::deadline_after(timeout), where);
    }

    /// Starts `async_acquire_permit` that gives up after `timeout`.
    ///
    /// \guardsig{permit}
    /// \timedwait
    /// @param n The number of permits to acquire.
    /// \forparams
    /// \waitparams
    template <class Rep, class Period,
              BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code, permit))
                  AcquireToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_acquire_permit_for(std::size_t n, const std::chrono::duration<Rep, Period>& timeout,
                                  AcquireToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type),
                                  call_site where = call_site())
    {
        return async_acquire_as<void(boost::system::error_code, permit)>(
            n, permit_grant{this, n}, std::forward<AcquireToken>(token), detail::deadline_after(timeout),
            where);
    }

    /// Starts `async_acquire(n, token)` that gives up at `expiry`.
    ///
    /// \ecsig
    /// \timedwait
    /// @param n The number of permits to acquire.
    /// \untilparams
    /// \waitparams
    template <class Clock, class Duration,
              BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code))
                  AcquireToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_acquire_until(std::size_t n, const std::chrono::time_point<Clock, Duration>& expiry,
                             AcquireToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type),
                             call_site where = call_site())
    {
        return async_acquire_as<void(boost::system::error_code)>(n, detail::plain_grant{&impl_.core},
                                                                 std::forward<AcquireToken>(token),
                                                                 detail::deadline_at(expiry), where);
    }

    /// Starts `async_acquire_permit` that gives up at `expiry`.
    ///
    /// \guardsig{permit}
    /// \timedwait
    /// @param n The number of permits to acquire.
    /// \untilparams
    /// \waitparams
    template <class Clock, class Duration,
              BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code, permit))
                  AcquireToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_acquire_permit_until(std::size_t n, const std::chrono::time_point<Clock, Duration>& expiry,
                                    AcquireToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type),
                                    call_site where = call_site())
    {
        return async_acquire_as<void(boost::system::error_code, permit)>(
            n, permit_grant{this, n}, std::forward<AcquireToken>(token), detail::deadline_at(expiry), where);
    }

    /// Takes `n` permits if that can be done at once, without waiting.
    ///
    /// Fails when the semaphore is closed, when fewer than `n` permits are available, or when any
    /// acquire is queued or a `reduce_permits` debt is open (so it never overtakes a waiter).
    /// `try_acquire(0)` succeeds unless closed. Lock-free; may be called concurrently with any
    /// member function but the destructor. A successful call pairs with the releases whose
    /// permits it took, as an acquire does (see the class's memory ordering).
    ///
    /// The permits must be given back with `release(n)`.
    ///
    /// @param n The number of permits to take.
    /// @returns true if the caller now holds `n` permits; false, with nothing changed, otherwise.
    bool try_acquire(std::size_t n = 1) noexcept { return impl_.core.try_acquire(n); }

    /// Takes `n` permits, as a `permit`, if that can be done at once: `try_acquire(n)` that
    /// returns a permit holding them, or nothing. Fails in the same cases as `try_acquire(n)`.
    ///
    /// @param n The number of permits to take.
    /// @returns a permit holding `n` permits, or `std::nullopt` with nothing changed.
    std::optional<permit> try_acquire_permit(std::size_t n = 1);

    /// Gives `n` permits back.
    ///
    /// They go to the oldest queued acquires first; the first waiter left partly served stops the
    /// hand-off (head-of-line order), and what no waiter needs returns to the counter. Completed
    /// waiters' handlers are posted after the internal lock is released, never invoked here.
    /// Works after `close()` too. Lock-free while nobody waits and no `reduce_permits` debt is
    /// open; otherwise the permits pay the debt first. May be called
    /// concurrently with any member function but the destructor. Everything the calling thread
    /// did before the call happens-before the completion (or successful `try_acquire`) that
    /// receives these permits.
    ///
    /// On a bounded semaphore, the `n` permits enter circulation: the call fails if that would
    /// pass the bound (so releasing permits that were not acquired is caught here). Permits held
    /// by a `permit` object are given back through it, not with this function. A bounded release
    /// that finds acquires queued takes the internal lock before it checks the bound, and there
    /// sees every earlier hand-off complete: the plain acquires that another release has just
    /// served are out of circulation, so two releases racing for two queued acquires both fit.
    ///
    /// @param n The number of permits to give back; 0 does nothing.
    /// @throws std::overflow_error if a bounded semaphore would have more than `capacity()`
    /// permits in circulation, or the counter would exceed `max_permits`. Nothing changes.
    void release(std::size_t n = 1);

    /// Gives `n` permits back, like `release(n)`, but reports failure instead of throwing.
    ///
    /// @param n The number of permits to give back.
    /// @returns false, changing nothing, where `release(n)` would throw; true otherwise.
    bool try_release(std::size_t n = 1) noexcept;

    /// Returns the bound of a bounded semaphore, `max_permits` for an unbounded one.
    ///
    /// An acquire of more than `capacity()` permits fails with
    /// `asio_sync::error::too_many_permits`. Lock-free; a snapshot that concurrent capacity
    /// changes may outdate at once.
    std::size_t capacity() const noexcept { return impl_.core.capacity(); }

    /// Raises the capacity by `n`: `n` new permits enter circulation, going to queued acquires
    /// first, like a release. A bounded semaphore's bound rises by `n` too. Works after `close()`
    /// and does not re-open the semaphore. Completed waiters' handlers are posted, never invoked
    /// here.
    ///
    /// @param n The number of permits to add.
    /// @throws std::overflow_error if the bound would exceed `max_bound` (bounded) or the counter
    /// `max_permits` (unbounded). Nothing changes.
    void add_permits(std::size_t n);

    /// Lowers the capacity at once by removing up to `n` permits from the counter, for good.
    /// A bounded semaphore's bound drops by as many. Only available permits are taken: while any
    /// acquire is queued (or a `reduce_permits` debt is open) the counter is empty and nothing is
    /// removed. Lock-free readers see the change at once; does not re-open a closed semaphore.
    /// Never completes a waiter.
    ///
    /// @param n The most permits to remove.
    /// @returns the number of permits removed: `min(n, available())` at the moment of the call.
    std::size_t forget_permits(std::size_t n);

    /// Lowers the capacity by exactly `n`, without waiting.
    ///
    /// What the counter holds now is taken at once. The rest becomes a debt: every permit that
    /// flows back afterwards (a release, a permit returning, a cancelled acquire's collected
    /// permits, `add_permits`) pays the debt before anything reaches the counter or a queued
    /// acquire. While in debt, `available()` is 0, `try_acquire` fails and acquires queue. A
    /// bounded
    /// semaphore's bound drops by `n` at once, and queued acquires that ask for more than the new
    /// bound complete with `asio_sync::error::too_many_permits` (posted), handing on what they
    /// had collected. Does not re-open a closed semaphore. `reduce_permits(0)` does nothing.
    ///
    /// @param n How much to lower the capacity by.
    /// @throws std::invalid_argument if `n > capacity()`; std::overflow_error if the debt would
    /// exceed `max_permits` (only possible without a bound). Nothing changes.
    void reduce_permits(std::size_t n);

    /// Returns the number of permits in the counter now. It is 0 while anyone waits and while a
    /// `reduce_permits` debt is open. Lock-free; a snapshot, for monitoring and tests.
    std::size_t available() const noexcept { return impl_.core.available(); }

    /// \setobserver
    void set_observer(wait_observer* observer) noexcept
    {
        impl_.observer.store(observer, std::memory_order_release);
    }

    /// Returns the number of acquires queued now. A snapshot, for monitoring and tests.
    std::size_t waiting() const noexcept { return impl_.core.waiting(); }

    /// Aborts every queued acquire. They complete with `boost::asio::error::operation_aborted`,
    /// oldest first; their handlers are posted after the internal lock is released, never invoked
    /// here. The permits they had collected pay a `reduce_permits` debt, then return to the
    /// counter. The semaphore stays usable: later acquires queue as before.
    ///
    /// @returns the number of acquires aborted.
    std::size_t cancel();

    /// Closes the semaphore for good.
    ///
    /// Queued acquires complete with `asio_sync::error::closed`, oldest first (posted, never
    /// invoked here), and their collected permits pay a `reduce_permits` debt, then return to the
    /// counter. Later acquires complete with `asio_sync::error::closed` (also for `n == 0`; an
    /// acquire of more than `capacity()` still reports `too_many_permits`) and `try_acquire`
    /// fails. `release` still works, and `available()` grows with it, so holders can still give
    /// their permits back; `add_permits`, `forget_permits` and `reduce_permits` work too and do
    /// not re-open the semaphore. Closing twice does nothing more.
    void close();

    /// Returns true once `close()` has been called. Lock-free.
    bool is_closed() const noexcept { return impl_.core.is_closed(); }

private:
    friend detail::access;

    template <class Grant, class Deadline>
    class initiate_async_acquire;

    // The grant of async_acquire_permit: a permit holding the n permits, made at grant time.
    struct permit_grant
    {
        static constexpr bool to_permit = true;

        basic_semaphore* semaphore;
        std::size_t n;

        std::tuple<boost::system::error_code, permit> operator()(boost::system::error_code ec) const;

        // The permit object of an undelivered completion has given the permits back.
        void undelivered(std::size_t) const noexcept {}
    };

    // An acquire whose handler receives what `grant` makes of the outcome: the shape the locks
    // build their scoped variants on.
    template <class Signature, class Grant, class Token, class Deadline = detail::no_deadline>
    auto async_acquire_as(std::size_t n, const Grant& grant, Token&& token, Deadline expiry,
                          [[maybe_unused]] call_site where)
    {
        initiate_async_acquire<Grant, Deadline> initiation(this, grant, expiry);
#if defined(BOOST_ASIO_HAS_CO_AWAIT)
        if constexpr (!std::is_void_v<detail::awaitable_executor_t<Token>>)
            return detail::acquire_awaitable<Signature, std::decay_t<Token>>(n, initiation, where);
        else
#endif
            return boost::asio::async_initiate<Token, Signature>(initiation, token, n);
    }

    void give_back(std::size_t n);

    // Out of line, so that release() stays small enough to inline.
    [[noreturn]] void throw_release_overflow() const;

    executor_type executor_;
    detail::semaphore_impl impl_;
};

/// Permits acquired from a `basic_semaphore`, given back when the object is destroyed.
///
/// Obtained from `async_acquire_permit`, `async_acquire_permit_for` or `try_acquire_permit`.
/// Move-only. A moved-from permit holds nothing but still names its semaphore. The semaphore must
/// outlive every permit that names it.
///
/// A permit made by a permit acquire is created at the moment the acquire is granted, inside the
/// completion: if the handler is destroyed without being invoked (context shutdown), the permits
/// still come back. On a bounded semaphore the permits stay in circulation while a permit holds
/// them, so giving them back never fails. See [Permits, bounds, capacity and time
/// limits](permits.md).
///
/// **Thread safety:** distinct permits may be used concurrently, also permits of the same
/// semaphore; one permit object must not be used by two threads at once.
template <class Executor>
class basic_semaphore<Executor>::permit
{
public:
    /// Takes over what `other` holds and the semaphore it names; `other` then holds nothing.
    ///
    /// @param other The permit to take over.
    permit(permit&& other) noexcept : semaphore_(other.semaphore_), count_(std::exchange(other.count_, 0)) {}

    /// Gives back what this permit holds (as `release()`), then takes over what `other` holds and
    /// the semaphore it names; `other` then holds nothing. Self-assignment does nothing.
    ///
    /// @param other The permit to take over.
    /// @returns `*this`.
    permit& operator=(permit&& other) noexcept
    {
        if (this != &other)
        {
            release();
            semaphore_ = other.semaphore_;
            count_ = std::exchange(other.count_, 0);
        }
        return *this;
    }

    /// Not copyable: each permit is held by one object.
    permit(const permit&) = delete;
    /// Not copy-assignable.
    permit& operator=(const permit&) = delete;

    /// Gives back what this permit holds, as `release()` does.
    ~permit() { release(); }

    /// Returns the number of permits held.
    std::size_t count() const noexcept { return count_; }

    /// Returns true if any permit is held.
    explicit operator bool() const noexcept { return count_ != 0; }

    /// Gives back every permit held, now, as `basic_semaphore::release` does (queued acquires
    /// first), except that it never fails: on a bounded semaphore the permits were in circulation
    /// all along. Afterwards the permit holds nothing.
    void release()
    {
        if (count_ != 0)
            semaphore_->give_back(std::exchange(count_, 0));
    }

    /// Keeps the permits held out of circulation for good: they are not given back. On a bounded
    /// semaphore this makes room under the bound for as many plain `release` calls. Afterwards
    /// the permit holds nothing.
    void forget() noexcept { semaphore_->impl_.core.forget_permit(std::exchange(count_, 0)); }

    /// Moves `k` of the permits held into a new permit of the same semaphore.
    ///
    /// @param k How many permits to move; 0 makes an empty permit.
    /// @returns a permit holding `k` permits.
    /// @throws std::invalid_argument if `k > count()`. Nothing changes.
    permit split(std::size_t k)
    {
        if (k > count_)
            boost::throw_exception(
                std::invalid_argument("asio_sync: cannot split more permits than are held"));
        count_ -= k;
        return permit(*semaphore_, k);
    }

    /// Takes over what `other` holds; `other` then holds nothing. Merging a permit into itself
    /// does nothing.
    ///
    /// @param other A permit of the same semaphore.
    /// @throws std::invalid_argument if `other` names another semaphore. Nothing changes.
    void merge(permit&& other)
    {
        if (other.semaphore_ != semaphore_)
            boost::throw_exception(
                std::invalid_argument("asio_sync: cannot merge permits of another semaphore"));
        if (&other != this)
            count_ += std::exchange(other.count_, 0);
    }

    /// Returns the semaphore the permits belong to (also after a move, and when it holds none).
    basic_semaphore& semaphore() const noexcept { return *semaphore_; }

private:
    friend detail::access;

    permit(basic_semaphore& owner, std::size_t n) noexcept : semaphore_(&owner), count_(n) {}

    basic_semaphore* semaphore_;
    std::size_t count_;
};

/// A semaphore with the default executor type, `boost::asio::any_io_executor`.
using semaphore = basic_semaphore<>;

} // namespace asio_sync

#include <asio_sync/impl/semaphore.hpp>
#include <asio_sync/wait_observer.hpp>

#endif // ASIO_SYNC_SEMAPHORE_HPP
