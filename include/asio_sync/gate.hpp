// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_GATE_HPP
#define ASIO_SYNC_GATE_HPP

#include <asio_sync/detail/access.hpp>
#include <asio_sync/detail/deadline.hpp>
#include <asio_sync/detail/event_core.hpp>
#include <asio_sync/detail/gate_close.hpp>
#include <asio_sync/detail/gate_count.hpp>
#include <asio_sync/detail/gate_stop.hpp>
#include <asio_sync/wait_observer.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/execution/context.hpp>
#include <boost/asio/execution_context.hpp>
#include <boost/asio/query.hpp>
#include <boost/assert.hpp>
#include <boost/system/error_code.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <type_traits>
#include <utility>

namespace asio_sync {

/// An asynchronous gate for Asio: it counts the tasks in flight and, at shutdown, stops admitting
/// new ones and waits for those in flight, as Seastar's `gate` does.
///
/// Each task enters with `try_enter()`, which returns a `guard`; the task is in flight while its
/// guard lives. `async_close` closes the gate, so that every later `try_enter()` returns an empty
/// guard, and completes once every guard is gone: at once (posted) if none is alive, otherwise
/// when the last one is released. Several `async_close` calls all complete then, oldest first.
///
/// **Stopping the tasks.** A task that can be told to stop enters with `try_enter_stoppable()`
/// instead: its guard owns a `boost::asio::cancellation_signal`, and the task binds the guard's
/// `slot()` to its operations (`boost::asio::bind_cancellation_slot`). `request_stop(type)` closes
/// the gate and emits `type` once on the signal of every stoppable guard alive, as C++26's
/// `counting_scope::request_stop` and folly's `AsyncScope::cancelAndJoinAsync` stop the work in
/// their scope; an `async_close` (or a timed one) then waits for the tasks to leave:
/// @code
/// gate.request_stop(boost::asio::cancellation_type::terminal);
/// co_await gate.async_close(boost::asio::use_awaitable);
/// @endcode
/// The emission runs on the thread that calls `request_stop`, inside the call, never under the
/// gate's lock. Asio's cancellation slots are not thread-safe: a task must start and finish the
/// operations bound to its slot on the thread or strand that requests the stop (dispatch the call
/// there: `boost::asio::dispatch(strand, [&] { gate.request_stop(); })`). Plain guards
/// (`try_enter`) are never signalled and keep their lock-free entry and release.
///
/// **Closing is not undone.** A gate closes once and for all, when the first `async_close` starts;
/// cancelling that close completes its wait with `operation_aborted` but the gate stays closed
/// (and drains as before, for the other closes). Seastar's `gate::close()` is also final, and its
/// future cannot be abandoned at all; it also allows a single close, where here any number of
/// closes may wait. To admit tasks again, make a new gate.
///
/// The closes keep the contract of \ref async_waits (a guard's release, like `async_close` and
/// `request_stop`, never invokes a handler). A close that cannot be submitted loses only its own
/// handler; the other closes still complete and the release that drained the gate does not throw.
/// `try_enter_stoppable` allocates one object, its guard's signal, with `operator new`;
/// `try_enter` and plain guards allocate nothing.
///
/// **Thread safety.** Every member function may be called concurrently from any thread.
/// `try_enter`, `count`, `is_closed` and a guard's release are lock-free: `count` and `is_closed`
/// are one atomic load, `try_enter` one compare-and-swap (retried only if another entry, a release
/// or a close changed the count meanwhile), a release one atomic subtraction. Only the release of
/// the last guard of a closed gate takes the internal lock, to complete the closes.
/// `try_enter_stoppable`, the release of a stoppable guard and `request_stop` take a lock of
/// their own, which no plain guard takes.
///
/// **Memory ordering.** Everything a task did before its guard was released happens-before the
/// completion of every `async_close` that waited for it. No guard is granted after a close has
/// started.
///
/// **Lifetime.** The gate must outlive its guards (debug builds assert it, as Seastar's gate does).
/// A close handler that destroys the gate must know that no other thread is still inside a call on
/// it: a `request_stop` on another thread may still be emitting when the last guard leaves and the
/// close completes.
///
/// **Not copyable, not movable:** guards and queued operations refer to the gate by address.
///
/// @tparam Executor The I/O executor: the default executor for completion handlers, and the
/// context whose shutdown destroys pending operations.
template <class Executor = boost::asio::any_io_executor>
class basic_gate
{
public:
    /// The type of the executor associated with the gate.
    using executor_type = Executor;

    /// Rebinds the gate to another executor type.
    ///
    /// @tparam OtherExecutor The executor type to rebind to.
    template <class OtherExecutor>
    struct rebind_executor
    {
        /// The gate type when rebound to the specified executor.
        using other = basic_gate<OtherExecutor>;
    };

    class guard;

    /// Constructs an open gate with no task in it.
    ///
    /// \ctorex
    explicit basic_gate(const executor_type& ex)
        : executor_(ex), drained_(boost::asio::query(executor_, boost::asio::execution::context), false)
    {
        drained_.names = {"gate", "async_close", this};
    }

    /// Constructs an open gate that uses the context's executor.
    ///
    /// \ctorctx
    template <
        class ExecutionContext,
        std::enable_if_t<std::is_convertible_v<ExecutionContext&, boost::asio::execution_context&>, int> = 0>
    explicit basic_gate(ExecutionContext& ctx) : basic_gate(executor_type(ctx.get_executor()))
    {
    }

    /// Not copyable (nor movable): guards and operations refer to the gate by address.
    basic_gate(const basic_gate&) = delete;
    /// Not copy-assignable (nor move-assignable).
    basic_gate& operator=(const basic_gate&) = delete;

    /// Destroys the gate. No guard may be alive (an assertion in debug builds: a guard released
    /// afterwards would reach the destroyed gate), hence no close is still waiting: the last
    /// guard's release completed them all.
    ~basic_gate()
    {
        BOOST_ASSERT_MSG(count_.count() == 0, "asio_sync::basic_gate destroyed while a guard is alive");
    }

    /// Returns the executor associated with the gate.
    const executor_type& get_executor() const noexcept { return executor_; }

    /// Enters the gate, unless it is closed. Lock-free.
    ///
    /// @returns a guard that holds the entry until it is released or destroyed; an empty guard
    /// (false) if an `async_close` has started.
    guard try_enter() noexcept
    {
        if (!count_.try_enter())
            return guard();
        return detail::access::construct<guard>(*this);
    }

    /// Enters the gate, unless it is closed, with a guard that can be told to stop: the guard owns
    /// a cancellation signal, on which `request_stop` emits, and its `slot()` is the slot the task
    /// binds to its operations. Takes the gate's stop lock, briefly; never invokes a handler.
    ///
    /// The emission is not remembered: a task that starts an operation bound to the slot after
    /// `request_stop` has emitted is not signalled. Check `stop_requested()`, on the thread or
    /// strand that requests the stop, before starting one.
    ///
    /// @returns a guard that holds the entry and a cancellation signal until it is released or
    /// destroyed; an empty guard (false) if an `async_close` or a `request_stop` has started.
    /// @throws std::bad_alloc if the signal cannot be allocated; the gate is then left unchanged.
    guard try_enter_stoppable()
    {
        detail::gate_stop_entry* entry = stops_.enter(count_);
        if (!entry)
            return guard();
        return detail::access::construct<guard>(*this, entry);
    }

    /// Returns the number of guards alive. Lock-free; the value may be stale at once.
    std::size_t count() const noexcept { return count_.count(); }

    /// Returns true once an `async_close` has started: `try_enter` fails from then on. Lock-free.
    bool is_closed() const noexcept { return count_.is_closed(); }

    /// Closes the gate and waits until every guard is gone.
    ///
    /// From the moment the operation starts, `try_enter` returns empty guards. If no guard is
    /// alive, the operation completes at once (posted, never inline); otherwise it is queued until
    /// the last guard is released, which completes every queued close, oldest first. Closing a
    /// closed gate only waits. A cancelled close stops waiting, but the gate stays closed and the
    /// other closes keep waiting.
    ///
    /// \ecsig
    /// @par Errors
    /// Only `boost::asio::error::operation_aborted`, from a per-operation cancellation. A close
    /// that throws (its completion or its operation could not be made) leaves the gate closed. The
    /// gate must exist until the operation completes: a close that waits means
    /// a guard is alive, and the gate must outlive its guards.
    /// \asyncwait
    /// @param token The completion token (\ref async_waits_tokens).
    template <BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code))
                  CloseToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_close(CloseToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type))
    {
        return boost::asio::async_initiate<CloseToken, void(boost::system::error_code)>(
            detail::initiate_gate_close<Executor>(executor_, count_, drained_), token);
    }

    /// Starts `async_close` whose wait for the guards gives up after `timeout`. The gate closes at
    /// once and stays closed whatever the outcome; on `timed_out` it goes on draining, for the
    /// other
    /// closes.
    ///
    /// \ecsig
    /// \timedwait
    /// \forparams
    /// @param token The completion token (\ref async_waits_tokens).
    template <class Rep, class Period,
              BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code))
                  CloseToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_close_for(const std::chrono::duration<Rep, Period>& timeout,
                         CloseToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type))
    {
        using initiation = detail::initiate_gate_close<Executor, detail::timeout>;
        return boost::asio::async_initiate<CloseToken, void(boost::system::error_code)>(
            initiation(executor_, count_, drained_, detail::deadline_after(timeout)), token);
    }

    /// Starts `async_close` whose wait for the guards gives up at `expiry`, as `async_close_for`.
    ///
    /// \ecsig
    /// \timedwait
    /// \untilparams
    /// @param token The completion token (\ref async_waits_tokens).
    template <class Clock, class Duration,
              BOOST_ASIO_COMPLETION_TOKEN_FOR(void(boost::system::error_code))
                  CloseToken BOOST_ASIO_DEFAULT_COMPLETION_TOKEN_TYPE(executor_type)>
    auto async_close_until(const std::chrono::time_point<Clock, Duration>& expiry,
                           CloseToken&& token BOOST_ASIO_DEFAULT_COMPLETION_TOKEN(executor_type))
    {
        using initiation = detail::initiate_gate_close<Executor, detail::deadline_type>;
        return boost::asio::async_initiate<CloseToken, void(boost::system::error_code)>(
            initiation(executor_, count_, drained_, detail::deadline_at(expiry)), token);
    }

    /// Returns true once `request_stop` has been called. Lock-free; the value may be stale at once,
    /// except on the thread or strand that requests the stop.
    bool stop_requested() const noexcept { return stops_.stop_requested(); }

    /// Closes the gate and stops the tasks in it: emits `type` once on the cancellation signal of
    /// every stoppable guard alive (see `try_enter_stoppable`), as C++26's
    /// `counting_scope::request_stop` does. To wait until the tasks have left, call `async_close`,
    /// `async_close_for` or `async_close_until` afterwards.
    ///
    /// The gate closes first, as with `async_close`: from then on `try_enter` and
    /// `try_enter_stoppable` return empty guards, and the closes waiting complete once the last
    /// guard is gone. The first call emits, later calls only close (a closed gate stays closed).
    /// Plain guards (`try_enter`) are not signalled.
    ///
    /// The emission runs on the calling thread, inside this call, after the gate's lock is
    /// released: each signal calls the cancellation handler its task installed, synchronously. The
    /// slots are not thread-safe, so the tasks must install and clear their handlers (start and
    /// finish their operations) on the thread or strand that calls this function. A stoppable
    /// guard released on another thread meanwhile is either signalled, if it was alive when the
    /// stop was requested, or had left before: exactly one; its signal is destroyed only once the
    /// emission on it is over.
    ///
    /// Handlers of the gate's closes are never invoked from inside this call (they are posted).
    ///
    /// @par Thread safety
    /// May be called concurrently with any member function. A cancellation handler that throws
    /// calls `std::terminate`.
    ///
    /// @param type The cancellation type to emit; `terminal` by default.
    void request_stop(boost::asio::cancellation_type type = boost::asio::cancellation_type::terminal) noexcept
    {
        detail::request_gate_stop(count_, stops_, type, [this] { drained_.set(); });
    }

    /// Attaches `observer` to the gate's closes, or detaches it (null): every close that has to
    /// wait for guards from now on is reported to it, when queued and when it ends, with how long
    /// it waited (see `wait_observer`). See [Observing waits](observing.md).
    ///
    /// @param observer The observer, or null. It must outlive every close waiting while it is
    /// attached.
    void set_observer(wait_observer* observer) noexcept
    {
        drained_.observer.store(observer, std::memory_order_release);
    }

private:
    // The release of a guard: the last one of a closed gate completes the closes, the first as
    // the releaser's continuation.
    void leave()
    {
        if (count_.leave())
            drained_.set();
    }

    executor_type executor_;
    detail::gate_count<> count_;
    detail::event_impl drained_;     // set once the gate is closed and every guard is gone
    detail::gate_stop_list<> stops_; // the stoppable guards alive
};

/// An entry in a gate: the task that holds it is in flight, and closes of the gate wait for it.
///
/// Move-only, like `basic_semaphore::permit`. Destroying a guard, or calling `release()`, leaves
/// the gate; the release of the last guard of a closed gate completes the waiting closes (posted,
/// never inside the release). An empty guard (from a closed gate, default-constructed or moved
/// from) holds nothing and converts to false.
///
/// A guard from `try_enter_stoppable` also owns a cancellation signal, on which `request_stop`
/// emits; `slot()` returns its slot, for the task's operations. The signal stays at its address
/// while the guard moves, and is destroyed with the entry: the operations bound to the slot must
/// have completed by then.
///
/// **Thread safety:** distinct guards may be released concurrently, also guards of the same gate;
/// one guard object must not be used by two threads at once.
template <class Executor>
class basic_gate<Executor>::guard
{
public:
    /// Constructs an empty guard, which holds no entry.
    guard() noexcept = default;

    /// Takes over the entry `other` holds; `other` then holds nothing.
    ///
    /// @param other The guard to take over.
    guard(guard&& other) noexcept
        : gate_(std::exchange(other.gate_, nullptr)), stop_(std::exchange(other.stop_, nullptr))
    {
    }

    /// Leaves the gate (as `release()`), then takes over the entry `other` holds; `other` then
    /// holds nothing. Self-assignment does nothing.
    ///
    /// @param other The guard to take over.
    /// @returns `*this`.
    guard& operator=(guard&& other) noexcept
    {
        if (this != &other)
        {
            release();
            gate_ = std::exchange(other.gate_, nullptr);
            stop_ = std::exchange(other.stop_, nullptr);
        }
        return *this;
    }

    /// Not copyable: each entry is held by one object.
    guard(const guard&) = delete;
    /// Not copy-assignable.
    guard& operator=(const guard&) = delete;

    /// Leaves the gate, as `release()` does.
    ~guard() { release(); }

    /// Returns true if the guard holds an entry.
    explicit operator bool() const noexcept { return gate_ != nullptr; }

    /// Returns the slot of the guard's cancellation signal, to bind to the task's operations; an
    /// unconnected slot (which operations ignore) if the guard is not stoppable or is empty.
    boost::asio::cancellation_slot slot() const noexcept
    {
        return stop_ ? stop_->signal.slot() : boost::asio::cancellation_slot();
    }

    /// Leaves the gate now; afterwards the guard holds nothing. Does nothing on an empty guard.
    void release()
    {
        if (!gate_)
            return;
        basic_gate* owner = std::exchange(gate_, nullptr);
        if (stop_)
            owner->stops_.leave(std::exchange(stop_, nullptr));
        owner->leave();
    }

private:
    friend detail::access;

    explicit guard(basic_gate& owner, detail::gate_stop_entry* stop = nullptr) noexcept
        : gate_(&owner), stop_(stop)
    {
    }

    basic_gate* gate_ = nullptr;
    detail::gate_stop_entry* stop_ = nullptr; // the signal of a stoppable guard
};

/// A gate with the default executor type, `boost::asio::any_io_executor`.
using gate = basic_gate<>;

} // namespace asio_sync

#endif // ASIO_SYNC_GATE_HPP
