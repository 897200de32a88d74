// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_TEST_SUPPORT_FAULT_INJECTION_HPP
#define ASIO_SYNC_TEST_SUPPORT_FAULT_INJECTION_HPP

#include <boost/system/error_code.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <utility>

namespace asio_sync::test {

// Which allocation fails: the k-th one counted while armed (1-based), or with `persistent` every
// one from the k-th on, the way SQLite's out-of-memory tests walk every allocation of a scenario.
struct fault_plan
{
    std::size_t fail_at = 0; // 0: none fails
    bool persistent = false;
    bool armed = false;
    std::size_t allocations = 0; // counted while armed
    std::size_t failures = 0;
    // The stack frames the failures were decided in, the deepest and the shallowest: a chain of
    // failures handled by recursion spreads them apart.
    std::uintptr_t deepest_failure = UINTPTR_MAX;
    std::uintptr_t shallowest_failure = 0;

    // Counts one allocation; true if it must fail.
    bool fail_next() noexcept
    {
        if (!armed)
            return false;
        ++allocations;
        const bool fail = fail_at != 0 && (persistent ? allocations >= fail_at : allocations == fail_at);
        failures += fail;
        if (fail)
        {
            // The frame itself, not a local: a sanitizer may move locals to a heap-allocated stack.
            const auto frame = reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0));
            deepest_failure = std::min(deepest_failure, frame);
            shallowest_failure = std::max(shallowest_failure, frame);
        }
        return fail;
    }

    // How many bytes of stack lie between the deepest and the shallowest failure.
    std::size_t failure_stack_span() const noexcept
    {
        return failures == 0 ? 0 : static_cast<std::size_t>(shallowest_failure - deepest_failure);
    }
};

// An allocator that throws std::bad_alloc when its plan says so. It takes memory from malloc, so
// that a test can fail operator new separately.
template <class T>
class failing_allocator
{
public:
    using value_type = T;

    explicit failing_allocator(fault_plan& plan) noexcept : plan_(&plan) {}

    template <class U>
    failing_allocator(const failing_allocator<U>& other) noexcept : plan_(other.plan())
    {
    }

    T* allocate(std::size_t n)
    {
        if (plan_->fail_next())
            throw std::bad_alloc();
        constexpr std::size_t align =
            alignof(T) > alignof(std::max_align_t) ? alignof(T) : alignof(std::max_align_t);
        if (void* p = std::aligned_alloc(align, (n * sizeof(T) + align - 1) / align * align))
            return static_cast<T*>(p);
        throw std::bad_alloc();
    }

    void deallocate(T* p, std::size_t) noexcept { std::free(p); }

    fault_plan* plan() const noexcept { return plan_; }

    template <class U>
    bool operator==(const failing_allocator<U>& other) const noexcept
    {
        return plan_ == other.plan();
    }

    template <class U>
    bool operator!=(const failing_allocator<U>& other) const noexcept
    {
        return plan_ != other.plan();
    }

private:
    fault_plan* plan_;
};

// What became of one asynchronous operation: invoked (how often, with what), or its handler
// destroyed without being invoked.
struct op_record
{
    bool used = false;    // an initiating function was called
    bool started = false; // it returned without throwing
    bool alive = false;   // a handler object that may still be invoked exists
    bool dropped = false; // the handler was destroyed without being invoked
    int calls = 0;
    boost::system::error_code ec;

    // Each operation completes exactly once, or its handler is destroyed without being invoked:
    // only possible when the initiation threw or the completion could not be delivered.
    bool exactly_once() const noexcept { return !alive && calls <= 1 && (calls == 1) != dropped; }
};

// A move-only handler that records into an op_record and passes the completion on to `body`.
template <class Body>
class tracked_handler
{
public:
    tracked_handler(op_record& record, Body body) : record_(&record), body_(std::move(body))
    {
        record.alive = true;
    }

    tracked_handler(tracked_handler&& other) noexcept
        : record_(std::exchange(other.record_, nullptr)), body_(std::move(other.body_))
    {
    }

    tracked_handler& operator=(tracked_handler&&) = delete;

    ~tracked_handler()
    {
        if (record_)
        {
            record_->alive = false;
            record_->dropped = true;
        }
    }

    template <class... Values>
    void operator()(boost::system::error_code ec, Values&&... values)
    {
        op_record* record = std::exchange(record_, nullptr);
        record->alive = false;
        ++record->calls;
        record->ec = ec;
        body_(ec, std::forward<Values>(values)...);
    }

private:
    op_record* record_;
    Body body_;
};

} // namespace asio_sync::test

#endif // ASIO_SYNC_TEST_SUPPORT_FAULT_INJECTION_HPP
