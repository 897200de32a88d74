// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

// libFuzzer target: runs byte-decoded sequences of operations on one manual_reset_event, one
// auto_reset_event, one latch and one gate, single-threaded on an io_context, and compares every
// wait's completion (whether and how it completed, and in which order) and every observable state
// with a sequential model written from the documented semantics of
// include/asio_sync/{manual_reset_event,auto_reset_event,latch,gate}.hpp. The operations: set,
// reset, wait, cancel, count_down, try_enter, leave and close. After each operation the context
// runs what is ready, so every completion the model predicts is due then.
//
// It shares the harness of semaphore_fuzz.cpp (harness.hpp): -DASIO_SYNC_FUZZ_REPLAY builds the
// replay program, and ASIO_SYNC_FUZZ_TRACE=1 prints each input's operation trace.
//
// Input format: byte 0 is the latch's initial count (modulo 5), then one operation per opcode
// byte, each followed by its parameter byte (a missing byte reads as 0).

#include <asio_sync/auto_reset_event.hpp>
#include <asio_sync/gate.hpp>
#include <asio_sync/latch.hpp>
#include <asio_sync/manual_reset_event.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/system/error_code.hpp>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <stdexcept>
#include <vector>

#define ASIO_SYNC_FUZZ_TARGET "events_fuzz"
#include "harness.hpp"

namespace asio = boost::asio;
using boost::system::error_code;

namespace {

using asio_sync::fuzz::fail;
using asio_sync::fuzz::note;
using asio_sync::fuzz::reader;
using asio_sync::fuzz::trace;

enum primitive : int
{
    manual_event,
    auto_event,
    countdown_latch,
    closing_gate,
    primitive_count,
};

const char* const primitive_names[] = {"manual_reset_event", "auto_reset_event", "latch", "gate"};

struct wait_record
{
    primitive on;
    asio::cancellation_signal signal;
    std::optional<error_code> result; // what the handler was given
    std::optional<error_code> expect; // what the model predicts, once it is decided
    std::size_t order = 0;            // when the handler ran, counted from 1
    std::size_t expected_order = 0;   // when the model decided it, counted from 1
};

class harness
{
public:
    explicit harness(std::size_t latch_count)
        : latch_(io_, latch_count), latch_left_(latch_count), latch_open_(latch_count == 0)
    {
    }

    void run(reader in)
    {
        note("latch(%zu)", latch_left_);
        while (!in.empty())
        {
            const std::uint8_t op = in.byte();
            const std::uint8_t arg = in.byte();
            ++step_;
            apply(op, arg);
            settle();
        }
        // Whatever is still queued leaves by cancellation; the gate's guards go, which drains it.
        guards_.clear();
        model_drain_gate();
        for (std::size_t i = 0; i < waits_.size(); ++i)
            if (!waits_[i].expect)
                cancel_wait(i, asio::cancellation_type::terminal);
        settle();
    }

private:
    void apply(std::uint8_t op, std::uint8_t arg)
    {
        switch (op % 12)
        {
        case 0:
            note("#%d manual.set()", step_);
            manual_.set();
            manual_set_ = true;
            decide_all(manual_event, {});
            break;
        case 1:
            note("#%d manual.reset()", step_);
            manual_.reset();
            manual_set_ = false;
            break;
        case 2:
            note("#%d auto.set()", step_);
            auto_.set();
            if (!decide_oldest(auto_event, {}))
                auto_set_ = true;
            break;
        case 3:
        {
            note("#%d auto.reset()", step_);
            const bool consumed = auto_.reset();
            if (consumed != auto_set_)
                fail("auto.reset() returned %d, the model expects %d", consumed, auto_set_);
            auto_set_ = false;
            break;
        }
        case 4:
        case 5:
        case 6:
            start_wait(primitive(op % 12 - 4));
            break;
        case 7:
            count_down(arg % 3);
            break;
        case 8:
        {
            note("#%d gate.try_enter()", step_);
            auto g = gate_.try_enter();
            if (bool(g) == gate_closed_)
                fail("try_enter() %s on a gate the model has %s", g ? "entered" : "failed",
                     gate_closed_ ? "closed" : "open");
            if (g)
                guards_.push_back(std::move(g));
            break;
        }
        case 9:
            if (guards_.empty())
                break;
            note("#%d guard %zu released", step_, arg % guards_.size());
            guards_.erase(guards_.begin() + std::ptrdiff_t(arg % guards_.size()));
            model_drain_gate();
            break;
        case 10:
            start_wait(closing_gate);
            break;
        case 11:
            if (waits_.empty())
                break;
            cancel_wait(arg % waits_.size(), cancellation_types[(arg / waits_.size()) % 3]);
            break;
        }
    }

    static constexpr asio::cancellation_type cancellation_types[] = {
        asio::cancellation_type::terminal, asio::cancellation_type::partial, asio::cancellation_type::total};

    void start_wait(primitive on)
    {
        const std::size_t i = waits_.size();
        note("#%d wait %zu on the %s", step_, i, primitive_names[on]);
        wait_record& w = waits_.emplace_back();
        w.on = on;
        auto handler = asio::bind_cancellation_slot(w.signal.slot(), [this, i](error_code ec) {
            wait_record& done = waits_[i];
            if (done.result)
                fail("wait %zu completed twice", i);
            done.result = ec;
            done.order = ++completions_;
        });
        switch (on)
        {
        case manual_event:
            manual_.async_wait(std::move(handler));
            break;
        case auto_event:
            auto_.async_wait(std::move(handler));
            break;
        case countdown_latch:
            latch_.async_wait(std::move(handler));
            break;
        case closing_gate:
            gate_.async_close(std::move(handler));
            gate_closed_ = true;
            break;
        default:
            break;
        }
        if (w.result)
            fail("wait %zu completed inside its initiation", i);
        queues_[on].push_back(i);
        // A wait that finds its primitive ready is decided at once (and completes when posted).
        if ((on == manual_event && manual_set_) || (on == countdown_latch && latch_open_))
            decide_oldest(on, {});
        else if (on == auto_event && auto_set_)
        {
            auto_set_ = false;
            decide_oldest(on, {});
        }
        else if (on == closing_gate)
            model_drain_gate();
    }

    void count_down(std::size_t n)
    {
        note("#%d latch.count_down(%zu)", step_, n);
        bool threw = false;
        try
        {
            latch_.count_down(n);
        }
        catch (const std::invalid_argument&)
        {
            threw = true;
        }
        const bool below_zero = n > latch_left_;
        if (threw != below_zero)
            fail("count_down(%zu) with %zu left %s", n, latch_left_, threw ? "threw" : "did not throw");
        if (below_zero)
            return;
        latch_left_ -= n;
        if (n != 0 && latch_left_ == 0)
        {
            latch_open_ = true;
            decide_all(countdown_latch, {});
        }
    }

    void cancel_wait(std::size_t i, asio::cancellation_type type)
    {
        note("#%d cancel wait %zu (type %u)", step_, i, unsigned(type));
        waits_[i].signal.emit(type);
        // Cancelling a wait the model already decided changes nothing; a queued one is aborted.
        std::deque<std::size_t>& queue = queues_[waits_[i].on];
        for (auto it = queue.begin(); it != queue.end(); ++it)
            if (*it == i)
            {
                queue.erase(it);
                decide(i, asio::error::operation_aborted);
                break;
            }
    }

    void model_drain_gate()
    {
        if (gate_closed_ && guards_.empty())
            decide_all(closing_gate, {});
    }

    void decide(std::size_t i, error_code ec)
    {
        waits_[i].expect = ec;
        waits_[i].expected_order = ++decisions_;
    }

    bool decide_oldest(primitive on, error_code ec)
    {
        std::deque<std::size_t>& queue = queues_[on];
        if (queue.empty())
            return false;
        decide(queue.front(), ec);
        queue.pop_front();
        return true;
    }

    void decide_all(primitive on, error_code ec)
    {
        while (decide_oldest(on, ec))
        {
        }
    }

    // Runs what is ready, then compares every wait and every observable state with the model.
    void settle()
    {
        io_.restart();
        io_.poll();
        for (std::size_t i = 0; i < waits_.size(); ++i)
        {
            const wait_record& w = waits_[i];
            if (w.result != w.expect)
                fail("wait %zu on the %s: %s, the model expects %s", i, primitive_names[w.on],
                     w.result ? w.result->message().c_str() : "pending",
                     w.expect ? w.expect->message().c_str() : "pending");
            if (w.order != w.expected_order)
                fail("wait %zu completed %zuth, the model expects %zuth", i, w.order, w.expected_order);
        }
        if (manual_.is_set() != manual_set_ || auto_.is_set() != auto_set_)
            fail("is_set(): manual %d, auto %d; the model expects %d, %d", manual_.is_set(), auto_.is_set(),
                 manual_set_, auto_set_);
        if (latch_.count() != latch_left_ || latch_.try_wait() != latch_open_)
            fail("latch count %zu, try_wait %d; the model expects %zu, %d", latch_.count(), latch_.try_wait(),
                 latch_left_, latch_open_);
        if (gate_.count() != guards_.size() || gate_.is_closed() != gate_closed_)
            fail("gate count %zu, closed %d; the model expects %zu, %d", gate_.count(), gate_.is_closed(),
                 guards_.size(), gate_closed_);
    }

    std::deque<wait_record> waits_; // declared first: the handlers refer to it until the end
    asio::io_context io_;
    asio_sync::manual_reset_event manual_{io_};
    asio_sync::auto_reset_event auto_{io_};
    asio_sync::latch latch_;
    asio_sync::gate gate_{io_};
    std::vector<asio_sync::gate::guard> guards_; // declared after the gate: released before it goes

    // The model.
    bool manual_set_ = false;
    bool auto_set_ = false;
    std::size_t latch_left_;
    bool latch_open_;
    bool gate_closed_ = false;
    std::deque<std::size_t> queues_[primitive_count]; // queued waits, oldest first
    std::size_t completions_ = 0;
    std::size_t decisions_ = 0;
    int step_ = 0;
};

} // namespace

void asio_sync::fuzz::run_input(const std::uint8_t* data, std::size_t size)
{
    trace.clear();
    reader in{data, size};
    harness h(in.byte() % 5);
    h.run(in);
}
