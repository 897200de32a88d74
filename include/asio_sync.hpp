#ifndef ASIO_SYNC_HPP
#define ASIO_SYNC_HPP

/// @file
/// Includes every public header of asio_sync.

#include <asio_sync/error.hpp>
#include <asio_sync/mutex.hpp>
#include <asio_sync/semaphore.hpp>
#include <asio_sync/shared_mutex.hpp>

#endif // ASIO_SYNC_HPP
