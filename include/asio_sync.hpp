// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_HPP
#define ASIO_SYNC_HPP

/// @file
/// Includes every public header of asio_sync.

/// @namespace asio_sync
/// Asynchronous synchronization primitives for Boost.Asio: asio_sync::basic_semaphore,
/// asio_sync::basic_mutex, asio_sync::basic_shared_mutex, asio_sync::basic_upgrade_mutex and
/// the rest of the family, and their error codes, asio_sync::error. Everything in the nested `detail` namespace is internal.

#include <asio_sync/adaptive_limiter.hpp>
#include <asio_sync/aimd_limit.hpp>
#include <asio_sync/auto_reset_event.hpp>
#include <asio_sync/barrier.hpp>
#include <asio_sync/call_site.hpp>
#include <asio_sync/condition_variable.hpp>
#include <asio_sync/error.hpp>
#include <asio_sync/gate.hpp>
#include <asio_sync/gradient2_limit.hpp>
#include <asio_sync/holder_registry.hpp>
#include <asio_sync/latch.hpp>
#include <asio_sync/limit_sample.hpp>
#include <asio_sync/manual_reset_event.hpp>
#include <asio_sync/mutex.hpp>
#include <asio_sync/semaphore.hpp>
#include <asio_sync/shared_mutex.hpp>
#include <asio_sync/upgrade_lock.hpp>
#include <asio_sync/upgrade_mutex.hpp>
#include <asio_sync/vegas_limit.hpp>
#include <asio_sync/wait_histogram.hpp>
#include <asio_sync/wait_observer.hpp>

#endif // ASIO_SYNC_HPP
