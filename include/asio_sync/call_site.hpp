// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_CALL_SITE_HPP
#define ASIO_SYNC_CALL_SITE_HPP

/// @file
/// Where a wait was started, for the holder registry: asio_sync::call_site.

#if defined(ASIO_SYNC_ENABLE_HOLDER_REGISTRY) && defined(__has_include)
#if __has_include(<source_location>)
#include <source_location>
#endif
#endif

namespace asio_sync {

/// The source file and line of the call that started a wait: the defaulted last parameter of every
/// acquire and lock of the semaphore, the mutexes and the upgrade mutex, and of every wait of the
/// events and the latch, which `holder_registry` shows beside each holder and waiter.
///
/// Leave the parameter defaulted: its default value is the caller's location
/// (`std::source_location::current()` where the standard library has it, the compiler's
/// `__builtin_FILE()` and `__builtin_LINE()` otherwise, which GCC, Clang and MSVC provide). A
/// function of your own that wraps a lock can take a `call_site where = call_site()` parameter too
/// and pass it on, so that the registry shows the wrapper's caller. The registry keeps the file name
/// by pointer for as long as it lists the wait: where a file is given explicitly, it must be a
/// string that lives as long (a literal, or `__FILE__`).
///
/// **Empty unless the holder registry is compiled in** (`ASIO_SYNC_ENABLE_HOLDER_REGISTRY`): then
/// it records nothing, costs nothing, and `file()` is empty and `line()` zero.
class call_site
{
public:
#if !defined(ASIO_SYNC_ENABLE_HOLDER_REGISTRY)
    /// The caller's location (nothing, in this build).
    constexpr call_site() noexcept = default;

    /// The source file, or an empty string when the registry is compiled out.
    constexpr const char* file() const noexcept
    {
        return "";
    }

    /// The line, or 0 when the registry is compiled out.
    constexpr unsigned line() const noexcept
    {
        return 0;
    }
#else
#if defined(__cpp_lib_source_location)
    /// The caller's location.
    constexpr call_site(std::source_location where = std::source_location::current()) noexcept
        : file_(where.file_name()), line_(where.line())
    {
    }
#else
    /// The caller's location.
    constexpr call_site(const char* file = __builtin_FILE(), unsigned line = __builtin_LINE()) noexcept
        : file_(file), line_(line)
    {
    }
#endif

    /// The source file.
    constexpr const char* file() const noexcept
    {
        return file_;
    }

    /// The line.
    constexpr unsigned line() const noexcept
    {
        return line_;
    }

private:
    const char* file_;
    unsigned line_;
#endif
};

} // namespace asio_sync

#endif // ASIO_SYNC_CALL_SITE_HPP
