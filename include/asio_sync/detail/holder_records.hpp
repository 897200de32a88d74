// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_DETAIL_HOLDER_RECORDS_HPP
#define ASIO_SYNC_DETAIL_HOLDER_RECORDS_HPP

#include <chrono>
#include <cstddef>
#include <list>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <utility>

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
    // An unlock of this mode came while coroutines other than its own held it too: the record may
    // be the one that unlock ended (see holder_records).
    bool unattributed = false;
};

// The records, under one lock; a wait's record stays where it is when it is granted, so a waiter
// can keep its position in the list.
//
// An unlock is a plain function call: nothing tells the registry which coroutine makes it. When
// every recorded holder of that mode is one coroutine, that coroutine's oldest record goes.
// Otherwise (readers of several coroutines) the registry cannot tell whose share went: it marks
// every record of that primitive and mode unattributed and counts one more release for them in
// `gone_`; that many of the unattributed records have ended, nobody knows which. The deadlock
// check trusts an unattributed record only while its coroutine has more of them than that count,
// so it refuses a wait only when the coroutine surely holds an excluding mode: a debug aid must
// never refuse a correct program, and may miss a deadlock it cannot prove. Once the count reaches
// the number of unattributed records, all of them have ended.
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
            if (r.holding && r.primitive == primitive && r.task == task && excludes(r.mode, requested) &&
                (!r.unattributed || count(primitive, r.mode, task) > gone(primitive, r.mode)))
                return true;
        return false;
    }

    iterator wait(const void* primitive, const char* kind, const void* address, const void* task,
                  std::size_t mode, const char* file, unsigned line)
    {
        std::lock_guard<std::mutex> lock(mutex_);
        return records_.insert(records_.end(), {primitive, kind, address ? address : primitive, task, mode,
                                                file, line, false, std::chrono::steady_clock::now(), false});
    }

    // The wait was granted: its record now holds `mode` (a granted upgrade holds the exclusive
    // mode), from now. `replaces`, if not zero, is a mode the same task gave up in the grant.
    void hold(iterator record, std::size_t mode, std::size_t replaces)
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (replaces != 0)
            remove_own(record->primitive, replaces, record->task);
        record->mode = mode;
        record->holding = true;
        record->since = std::chrono::steady_clock::now();
    }

    void forget(iterator record)
    {
        std::lock_guard<std::mutex> lock(mutex_);
        records_.erase(record);
    }

    // A holder of `mode` let go of it (or changed it to `now_mode`, if not zero). Attributed to
    // the coroutine that holds every record of that mode, if there is one; otherwise an
    // unattributed release (whose holder's new mode, if any, goes unrecorded).
    void released(const void* primitive, std::size_t mode, std::size_t now_mode = 0)
    {
        std::lock_guard<std::mutex> lock(mutex_);
        iterator oldest = records_.end();
        bool one_task = true;
        for (auto it = records_.begin(); it != records_.end(); ++it)
        {
            if (!it->holding || it->primitive != primitive || it->mode != mode)
                continue;
            if (oldest == records_.end())
                oldest = it;
            else if (it->task != oldest->task)
                one_task = false;
        }
        if (oldest == records_.end())
            return; // a lock the registry did not record
        if (one_task)
        {
            if (now_mode == 0)
                return remove_own(primitive, mode, oldest->task);
            const iterator own = find_own(primitive, mode, oldest->task);
            own->mode = now_mode;
            if (std::exchange(own->unattributed, false))
                settle(primitive, mode);
            return;
        }
        for (holder_record& r : records_)
            if (r.holding && r.primitive == primitive && r.mode == mode)
                r.unattributed = true;
        ++gone_[{primitive, mode}];
        settle(primitive, mode);
    }

    std::string dump()
    {
        std::lock_guard<std::mutex> lock(mutex_);
        std::ostringstream out;
        const auto now = std::chrono::steady_clock::now();
        for (const holder_record& r : records_)
        {
            out << r.kind << '@' << r.address
                << (r.unattributed ? " may hold"
                    : r.holding    ? " holds"
                                   : " waits")
                << " mode " << r.mode << " coroutine " << r.task << " at " << r.file << ':' << r.line
                << " for " << std::chrono::duration<double, std::milli>(now - r.since).count() << " ms";
            if (r.unattributed)
                out << " (" << gone(r.primitive, r.mode) << " of " << count(r.primitive, r.mode, nullptr)
                    << " such released)";
            out << '\n';
        }
        return out.str();
    }

private:
    // The task is known here: its oldest attributed record of `mode`, or else an unattributed
    // one, which surely was not among those released (it was held until now).
    iterator find_own(const void* primitive, std::size_t mode, const void* task)
    {
        iterator found = records_.end();
        for (auto it = records_.begin(); it != records_.end(); ++it)
            if (it->holding && it->primitive == primitive && it->mode == mode && it->task == task &&
                (found == records_.end() || (found->unattributed && !it->unattributed)))
                found = it;
        return found;
    }

    void remove_own(const void* primitive, std::size_t mode, const void* task)
    {
        const iterator found = find_own(primitive, mode, task);
        if (found == records_.end())
            return;
        const bool unattributed = found->unattributed;
        records_.erase(found);
        if (unattributed)
            settle(primitive, mode);
    }

    // The unattributed records of `primitive` and `mode`, of `task` (or of every task if null).
    std::size_t count(const void* primitive, std::size_t mode, const void* task) const
    {
        std::size_t n = 0;
        for (const holder_record& r : records_)
            n += r.unattributed && r.primitive == primitive && r.mode == mode && (!task || r.task == task);
        return n;
    }

    std::size_t gone(const void* primitive, std::size_t mode) const
    {
        const auto it = gone_.find({primitive, mode});
        return it == gone_.end() ? 0 : it->second;
    }

    // Once as many unattributed releases as unattributed records, all of those have ended.
    // Otherwise the records are kept few, so that readers that keep overlapping do not pile them
    // up: the newest one goes with one release (as if it were the one that ended), unless another
    // coroutine has as many of the records as there are releases, or more: that coroutine would
    // then look surer of its shares than it may be. This stops with two coroutines at that count,
    // hence with at most twice as many records as shares held; with no release left, the records
    // are attributed again.
    void settle(const void* primitive, std::size_t mode)
    {
        const auto same = [&](const holder_record& r) {
            return r.unattributed && r.primitive == primitive && r.mode == mode;
        };
        for (;;)
        {
            const std::size_t released = gone(primitive, mode);
            if (count(primitive, mode, nullptr) <= released)
            {
                records_.remove_if(same);
                break;
            }
            if (released == 0)
            {
                for (holder_record& r : records_)
                    if (same(r))
                        r.unattributed = false;
                break;
            }
            auto newest = records_.end();
            for (auto it = records_.begin(); it != records_.end(); ++it)
                if (same(*it) && !another_reaches(primitive, mode, it->task, released))
                    newest = it;
            if (newest == records_.end())
                return;
            records_.erase(newest);
            --gone_[{primitive, mode}];
        }
        gone_.erase({primitive, mode});
    }

    // Whether a coroutine other than `task` has `n` unattributed records of `primitive` and
    // `mode`, or more.
    bool another_reaches(const void* primitive, std::size_t mode, const void* task, std::size_t n) const
    {
        for (const holder_record& r : records_)
            if (r.unattributed && r.primitive == primitive && r.mode == mode && r.task != task &&
                count(primitive, mode, r.task) >= n)
                return true;
        return false;
    }

    std::mutex mutex_;
    std::list<holder_record> records_;
    // Per primitive and mode: the unattributed releases of its unattributed records.
    std::map<std::pair<const void*, std::size_t>, std::size_t> gone_;
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
