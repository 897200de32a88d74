// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

// Built with -fno-exceptions (and so BOOST_NO_EXCEPTIONS): every public header compiles, and the
// operations below instantiate the function templates that handle errors, since a template body
// is only checked for `try` and `throw` once instantiated. The library then reports errors through
// boost::throw_exception, which such a program must define; here it aborts. The run takes every
// kind of acquire and lock once, through callbacks, and checks that the permits all come back.

#include <asio_sync.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/assert/source_location.hpp>
#include <boost/system/error_code.hpp>
#include <boost/throw_exception.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <shared_mutex>
#include <utility>

namespace boost {

void throw_exception(const std::exception& e)
{
    std::fprintf(stderr, "boost::throw_exception: %s\n", e.what());
    std::abort();
}

void throw_exception(const std::exception& e, const boost::source_location& location)
{
    std::fprintf(stderr, "boost::throw_exception at %s:%u: %s\n", location.file_name(),
                 static_cast<unsigned>(location.line()), e.what());
    std::abort();
}

} // namespace boost

namespace {

using boost::system::error_code;

int failures = 0;

void check(bool condition, const char* what)
{
    if (!condition)
    {
        std::fprintf(stderr, "failed: %s\n", what);
        ++failures;
    }
}

} // namespace

int main()
{
    boost::asio::io_context io;
    asio_sync::semaphore sem(io, 4, 4); // bounded: release() checks the bound
    asio_sync::mutex mtx(io);
    asio_sync::shared_mutex shared(io);
    asio_sync::upgrade_mutex upgradable(io);
    int completed = 0;

    sem.async_acquire(2, [&](error_code ec) {
        check(!ec, "async_acquire");
        sem.release(2);
        ++completed;
    });
    sem.async_acquire_for(1, std::chrono::hours(1), [&](error_code ec) {
        check(!ec, "async_acquire_for");
        sem.release();
        ++completed;
    });
    sem.async_acquire_permit(3, [&](error_code ec, asio_sync::semaphore::permit held) {
        check(!ec && held.count() == 3, "async_acquire_permit");
        asio_sync::semaphore::permit part = held.split(1);
        held.merge(std::move(part));
        ++completed;
    });
    sem.async_acquire_permit_for(1, std::chrono::hours(1),
                                 [&](error_code ec, asio_sync::semaphore::permit held) {
                                     check(!ec && held.count() == 1, "async_acquire_permit_for");
                                     ++completed;
                                 });
    mtx.async_scoped_lock([&](error_code ec, std::unique_lock<asio_sync::mutex> guard) {
        check(!ec && guard.owns_lock(), "mutex::async_scoped_lock");
        ++completed;
    });
    shared.async_scoped_lock_shared([&](error_code ec, std::shared_lock<asio_sync::shared_mutex> guard) {
        check(!ec && guard.owns_lock(), "shared_mutex::async_scoped_lock_shared");
        ++completed;
    });
    shared.async_lock([&](error_code ec) {
        check(!ec, "shared_mutex::async_lock");
        shared.downgrade();
        shared.unlock_shared();
        ++completed;
    });
    mtx.async_lock_until(std::chrono::steady_clock::now() + std::chrono::hours(1), [&](error_code ec) {
        check(!ec, "mutex::async_lock_until");
        mtx.unlock();
        ++completed;
    });
    upgradable.async_scoped_lock_upgrade_for(
        std::chrono::hours(1), [&](error_code ec, asio_sync::upgrade_lock<asio_sync::upgrade_mutex> guard) {
            check(!ec && guard.owns_lock(), "upgrade_mutex::async_scoped_lock_upgrade_for");
            guard.release();
            upgradable.async_upgrade([&](error_code upgrade_ec) {
                check(!upgrade_ec, "upgrade_mutex::async_upgrade");
                upgradable.unlock();
                ++completed;
            });
        });
    io.run();

    sem.reduce_permits(1);
    sem.add_permits(1);
    check(completed == 9, "every operation completed once");
    check(sem.available() == 4 && sem.waiting() == 0, "every permit came back");
    check(mtx.try_lock(), "the mutex is free");
    check(shared.try_lock(), "the shared mutex is free");
    check(upgradable.try_lock(), "the upgrade mutex is free");
    return failures == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
