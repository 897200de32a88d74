// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_TEST_SUPPORT_COUNTING_ALLOCATOR_HPP
#define ASIO_SYNC_TEST_SUPPORT_COUNTING_ALLOCATOR_HPP

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <new>

namespace asio_sync::test {

struct allocation_counts
{
    std::atomic<std::size_t> allocations{0};
    std::atomic<std::size_t> deallocations{0};
    std::atomic<std::size_t> bytes{0};
};

// An allocator that counts what it does and takes memory from malloc, not operator new, so a
// test can count operator new separately.
template <class T>
class counting_allocator
{
public:
    using value_type = T;

    explicit counting_allocator(allocation_counts& counts) noexcept : counts_(&counts) {}

    template <class U>
    counting_allocator(const counting_allocator<U>& other) noexcept : counts_(other.counts())
    {
    }

    T* allocate(std::size_t n)
    {
        void* p = std::aligned_alloc(alignof(std::max_align_t) > alignof(T) ? alignof(std::max_align_t)
                                                                            : alignof(T),
                                     round_up(n * sizeof(T)));
        if (!p)
            throw std::bad_alloc();
        counts_->allocations.fetch_add(1);
        counts_->bytes.fetch_add(n * sizeof(T));
        return static_cast<T*>(p);
    }

    void deallocate(T* p, std::size_t) noexcept
    {
        counts_->deallocations.fetch_add(1);
        std::free(p);
    }

    allocation_counts* counts() const noexcept { return counts_; }

    template <class U>
    bool operator==(const counting_allocator<U>& other) const noexcept
    {
        return counts_ == other.counts();
    }

    template <class U>
    bool operator!=(const counting_allocator<U>& other) const noexcept
    {
        return counts_ != other.counts();
    }

private:
    static std::size_t round_up(std::size_t size)
    {
        const std::size_t a = alignof(std::max_align_t) > alignof(T) ? alignof(std::max_align_t) : alignof(T);
        return (size + a - 1) / a * a;
    }

    allocation_counts* counts_;
};

} // namespace asio_sync::test

#endif // ASIO_SYNC_TEST_SUPPORT_COUNTING_ALLOCATOR_HPP
