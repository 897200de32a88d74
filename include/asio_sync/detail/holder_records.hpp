// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_DETAIL_HOLDER_RECORDS_HPP
#define ASIO_SYNC_DETAIL_HOLDER_RECORDS_HPP

#include <chrono>
#include <cstddef>
#include <list>
#include <mutex>
#include <sstream>
#include <string>

namespace asio_sync::detail {

#if defined(ASIO_SYNC_ENABLE_HOLDER_REGISTRY)
inline constexpr bool holder_registry_enabled = true;
#else
inline constexpr bool holder_registry_enabled = false;
#endif

// One coroutine holding or waiting for one primitive.
struct holder_record
{
    const void* primitive; // its service entry: the key
    const char* kind;
    const void* address; // the primitive's own, as handler tracking shows it
    const void* task;
    std::size_t mode;
    const char* file; // where the wait was started
    unsigned line;
    bool holding;
    std::chrono::steady_clock::time_point since;
};

// The records, under one lock; a wait's record stays where it is when it is granted, so a waiter
// can keep its position in the list.
class holder_records
{
public:
    using iterator = std::list<holder_record>::iterator;

    static holder_records& instance()
    {
        static holder_records records;
        return records;
    }

    // Whether `task` holds `primitive` in a mode for which `excludes(held, requested)` is true.
    template <class Excludes>
    bool holds_excluding(const void* primitive, const void* task, std::size_t requested, Excludes excludes)
    {
        std::lock_guard<std::mutex> lock(mutex_);
        for (const holder_record& r : records_)
            if (r.holding && r.primitive == primitive && r.task == task && excludes(r.mode, requested))
                return true;
        return false;
    }

    iterator wait(const void* primitive, const char* kind, const void* address, const void* task,
                  std::size_t mode, const char* file, unsigned line)
    {
        std::lock_guard<std::mutex> lock(mutex_);
        return records_.insert(records_.end(), {primitive, kind, address ? address : primitive, task, mode,
                                                file, line, false, std::chrono::steady_clock::now()});
    }

    // The wait was granted: its record now holds `mode` (a granted upgrade holds the exclusive
    // mode), from now. `replaces`, if not zero, is a mode the same task gave up in the grant.
    void hold(iterator record, std::size_t mode, std::size_t replaces)
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (replaces != 0)
            remove_oldest(record->primitive, replaces, record->task);
        record->mode = mode;
        record->holding = true;
        record->since = std::chrono::steady_clock::now();
    }

    void forget(iterator record)
    {
        std::lock_guard<std::mutex> lock(mutex_);
        records_.erase(record);
    }

    // A holder of `mode` let go of it (or changed it to `now_mode`, if not zero).
    void released(const void* primitive, std::size_t mode, std::size_t now_mode = 0)
    {
        std::lock_guard<std::mutex> lock(mutex_);
        for (auto it = records_.begin(); it != records_.end(); ++it)
        {
            if (it->holding && it->primitive == primitive && it->mode == mode)
            {
                if (now_mode == 0)
                    records_.erase(it);
                else
                    it->mode = now_mode;
                return;
            }
        }
    }

    std::string dump()
    {
        std::lock_guard<std::mutex> lock(mutex_);
        std::ostringstream out;
        const auto now = std::chrono::steady_clock::now();
        for (const holder_record& r : records_)
            out << r.kind << '@' << r.address << (r.holding ? " holds" : " waits") << " mode " << r.mode
                << " coroutine " << r.task << " at " << r.file << ':' << r.line << " for "
                << std::chrono::duration<double, std::milli>(now - r.since).count() << " ms\n";
        return out.str();
    }

private:
    void remove_oldest(const void* primitive, std::size_t mode, const void* task)
    {
        for (auto it = records_.begin(); it != records_.end(); ++it)
            if (it->holding && it->primitive == primitive && it->mode == mode && it->task == task)
            {
                records_.erase(it);
                return;
            }
    }

    std::mutex mutex_;
    std::list<holder_record> records_;
};

// What an unlock tells the registry: a holder of `mode` let go of it, or changed it to `now_mode`.
// Nothing, and no cost, unless the registry is compiled in.
inline void holder_released(const void* primitive, std::size_t mode, std::size_t now_mode = 0)
{
    if constexpr (holder_registry_enabled)
        holder_records::instance().released(primitive, mode, now_mode);
}

} // namespace asio_sync::detail

#endif // ASIO_SYNC_DETAIL_HOLDER_RECORDS_HPP
