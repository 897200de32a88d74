// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_BENCH_SUPPORT_HEAP_COUNTER_HPP
#define ASIO_SYNC_BENCH_SUPPORT_HEAP_COUNTER_HPP

// Counts heap allocations two ways, for the benchmarks that report memory:
//
// - every malloc in the program, by interposing glibc's allocation functions and forwarding them
//   to glibc's own (__libc_malloc and friends). Operator new ends in malloc, and Asio's recycling
//   allocator in aligned_alloc, so this sees everything. The functions are defined here, not
//   inline, so include this header from exactly one source file per benchmark executable, and only
//   from executables whose timings can bear two relaxed atomic increments per allocation;
// - allocations made through a handler's associated allocator, by binding a counting_allocator
//   to the handler with boost::asio::bind_allocator. It takes its memory from glibc directly, so
//   that what it serves does not also show up in the global count (which is why the tests'
//   counting allocator, built on aligned_alloc, does not serve here).

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <new>

extern "C"
{
    void* __libc_malloc(std::size_t size);
    void* __libc_calloc(std::size_t count, std::size_t size);
    void* __libc_realloc(void* p, std::size_t size);
    void* __libc_memalign(std::size_t alignment, std::size_t size);
    void __libc_free(void* p);
}

namespace asio_sync::bench {

struct allocation_counts
{
    std::atomic<std::size_t> allocations{0};
    std::atomic<std::size_t> bytes{0};

    void record(std::size_t size) noexcept
    {
        allocations.fetch_add(1, std::memory_order_relaxed);
        bytes.fetch_add(size, std::memory_order_relaxed);
    }

    // The counts as plain numbers, so that two readings can be subtracted.
    struct snapshot
    {
        std::size_t allocations;
        std::size_t bytes;
    };

    snapshot now() const noexcept
    {
        return {allocations.load(std::memory_order_relaxed), bytes.load(std::memory_order_relaxed)};
    }
};

inline allocation_counts global_heap;

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
        counts_->record(n * sizeof(T));
        // Aligned as operator new would be, since Asio's operations may be over-aligned.
        if (void* p = __libc_memalign(alignof(std::max_align_t) > alignof(T) ? alignof(std::max_align_t)
                                                                             : alignof(T),
                                      n * sizeof(T)))
            return static_cast<T*>(p);
        throw std::bad_alloc();
    }

    void deallocate(T* p, std::size_t) noexcept { __libc_free(p); }

    allocation_counts* counts() const noexcept { return counts_; }

    template <class U>
    bool operator==(const counting_allocator<U>& other) const noexcept
    {
        return counts_ == other.counts();
    }

private:
    allocation_counts* counts_;
};

} // namespace asio_sync::bench

extern "C"
{

    void* malloc(std::size_t size)
    {
        asio_sync::bench::global_heap.record(size);
        return __libc_malloc(size);
    }

    void* calloc(std::size_t count, std::size_t size)
    {
        asio_sync::bench::global_heap.record(count * size);
        return __libc_calloc(count, size);
    }

    // A reallocation counts as a new allocation of the new size.
    void* realloc(void* p, std::size_t size)
    {
        asio_sync::bench::global_heap.record(size);
        return __libc_realloc(p, size);
    }

    void* aligned_alloc(std::size_t alignment, std::size_t size)
    {
        asio_sync::bench::global_heap.record(size);
        return __libc_memalign(alignment, size);
    }

    void* memalign(std::size_t alignment, std::size_t size)
    {
        return aligned_alloc(alignment, size);
    }

    int posix_memalign(void** out, std::size_t alignment, std::size_t size)
    {
        void* p = aligned_alloc(alignment, size);
        if (p == nullptr)
            return ENOMEM;
        *out = p;
        return 0;
    }

    void free(void* p)
    {
        __libc_free(p);
    }

} // extern "C"

#endif // ASIO_SYNC_BENCH_SUPPORT_HEAP_COUNTER_HPP
