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
