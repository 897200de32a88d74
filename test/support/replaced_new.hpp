// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_TEST_SUPPORT_REPLACED_NEW_HPP
#define ASIO_SYNC_TEST_SUPPORT_REPLACED_NEW_HPP

// Replaces the global operator new and delete of the test program that includes this header (in
// its one translation unit) with malloc and free, and calls a hook before each allocation, so that
// a test can count them or make one fail. Sanitizer runtimes replace operator new themselves:
// there nothing is replaced, and ASIO_SYNC_TEST_SANITIZED is defined.

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <new>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define ASIO_SYNC_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define ASIO_SYNC_TEST_SANITIZED 1
#endif
#endif

namespace asio_sync::test {

// Called before every allocation of the replaced operator new; true makes it throw std::bad_alloc.
inline bool (*on_operator_new)() noexcept = nullptr;

// Installs a hook for the whole program: a namespace-scope `const operator_new_hook h(&f);`.
struct operator_new_hook
{
    explicit operator_new_hook(bool (*hook)() noexcept) noexcept { on_operator_new = hook; }
};

// How many times the replaced operator new ran with count_operator_new as the hook: for the
// tests that check an operation allocates nothing but through its handler's allocator. Stays 0
// under sanitizers, where only the allocator is counted.
inline std::atomic<std::size_t> global_news{0};

inline bool count_operator_new() noexcept
{
    global_news.fetch_add(1, std::memory_order_relaxed);
    return false;
}

} // namespace asio_sync::test

#ifndef ASIO_SYNC_TEST_SANITIZED
// The replacements pair malloc with free; optimising g++ sees the replaced operator delete inlined
// as free() after a new-expression and warns, wrongly here.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

void* operator new(std::size_t size)
{
    if (asio_sync::test::on_operator_new && asio_sync::test::on_operator_new())
        throw std::bad_alloc();
    if (void* p = std::malloc(size ? size : 1))
        return p;
    throw std::bad_alloc();
}

void* operator new(std::size_t size, std::align_val_t align)
{
    if (asio_sync::test::on_operator_new && asio_sync::test::on_operator_new())
        throw std::bad_alloc();
    const std::size_t a = static_cast<std::size_t>(align);
    if (void* p = std::aligned_alloc(a, (size + a - 1) / a * a))
        return p;
    throw std::bad_alloc();
}

void operator delete(void* p) noexcept
{
    std::free(p);
}
void operator delete(void* p, std::size_t) noexcept
{
    std::free(p);
}
void operator delete(void* p, std::align_val_t) noexcept
{
    std::free(p);
}
void operator delete(void* p, std::size_t, std::align_val_t) noexcept
{
    std::free(p);
}
#endif

#endif // ASIO_SYNC_TEST_SUPPORT_REPLACED_NEW_HPP
