// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_TEST_SUPPORT_SANITIZERS_HPP
#define ASIO_SYNC_TEST_SUPPORT_SANITIZERS_HPP

namespace asio_sync::test {

// ThreadSanitizer slows threaded tests down many times over: they loop less under it.
#if defined(__SANITIZE_THREAD__)
inline constexpr bool under_tsan = true;
#elif defined(__has_feature)
inline constexpr bool under_tsan = __has_feature(thread_sanitizer);
#else
inline constexpr bool under_tsan = false;
#endif

} // namespace asio_sync::test

#endif // ASIO_SYNC_TEST_SUPPORT_SANITIZERS_HPP
