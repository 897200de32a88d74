// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_HOLDER_REGISTRY_HPP
#define ASIO_SYNC_HOLDER_REGISTRY_HPP

/// @file
/// The debugging registry of who holds and who waits: asio_sync::holder_registry, compiled in
/// only with `ASIO_SYNC_ENABLE_HOLDER_REGISTRY`.

#include <asio_sync/detail/holder_records.hpp>

#include <string>

namespace asio_sync {

/// A process-wide record of the coroutines that wait for a primitive and of those that hold a
/// lock, for debug builds: `dump()` lists them with their ages, and a coroutine that waits for a
/// lock it already holds in a mode that excludes the one it asks for (a mutex it has locked, the
/// exclusive lock of a shared mutex it reads) is refused at once with
/// `boost::system::errc::resource_deadlock_would_occur`, as `std::mutex` reports a recursive lock,
/// instead of hanging silently (tokio's users report that hang: mumble-voip/mumble#680 is one).
///
/// **Compiled out by default.** Only a program built with `ASIO_SYNC_ENABLE_HOLDER_REGISTRY`
/// defined (everywhere, for every translation unit that includes the library) records anything;
/// otherwise the primitives never touch the registry, and `dump()` says so. The registry takes a
/// process-wide lock and allocates for every coroutine wait it records: it is a debugging aid.
///
/// **What it records.** The waits of coroutines (the tokens `boost::asio::use_awaitable` and
/// `as_tuple(use_awaitable)`) on the semaphore, the mutexes, the events and the latch, while they
/// wait, each with the file and line of its call (`call_site`); and the locks of
/// `basic_mutex`, `basic_shared_mutex` and `basic_upgrade_mutex` that coroutines took that way,
/// while they are held. A coroutine is identified by its Asio coroutine thread (what `co_spawn`
/// started). Locks taken with other tokens, or with `try_lock`, are not recorded.
///
/// **Unlocks.** An unlock does not say which coroutine makes it. When one coroutine holds every
/// recorded lock of that mode, its record goes. When readers of several coroutines hold it, the
/// registry cannot tell whose share went: their records are listed as `may hold`, with how many
/// of them have ended, and the deadlock check counts a coroutine's share only while it surely
/// still holds one. A correct program is never refused; a coroutine whose share the registry
/// cannot be sure of may wait for itself undetected, as without the registry.
///
/// **Thread safety.** `dump()` may be called from any thread at any time.
class holder_registry
{
public:
    /// Whether this build records anything: true with `ASIO_SYNC_ENABLE_HOLDER_REGISTRY`.
    static constexpr bool enabled = detail::holder_registry_enabled;

    /// Lists every primitive that a recorded coroutine holds or waits for, one line per holder or
    /// waiter: the primitive's kind and address, `holds`, `may hold` or `waits`, the mode (the
    /// permits asked for: 1 is a mutex's lock or a shared lock, a shared mutex's writer asks for
    /// all its readers' permits; an upgrade mutex's modes are 1 shared, 2 upgrade, 3 exclusive, 4
    /// upgrading), the coroutine, the file and line of the call that started the wait (see
    /// `call_site`) and the age in milliseconds; after a `may hold` line, `(U of N such
    /// released)`: of the N records of that primitive and mode listed so, U have ended, by unlocks
    /// it cannot attribute. Empty when nothing is recorded.
    ///
    /// @returns the listing, or a line saying the registry is compiled out.
    static std::string dump()
    {
        if constexpr (!enabled)
            return "asio_sync::holder_registry: compiled out (define ASIO_SYNC_ENABLE_HOLDER_REGISTRY)\n";
        else
            return detail::holder_records::instance().dump();
    }
};

} // namespace asio_sync

#endif // ASIO_SYNC_HOLDER_REGISTRY_HPP
