// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_TEST_SUPPORT_RECORDING_EXECUTOR_HPP
#define ASIO_SYNC_TEST_SUPPORT_RECORDING_EXECUTOR_HPP

// An executor that submits through another one and records, for every submission, whether it was
// asked for as a continuation (execution::relationship.continuation) or not. Optionally it also
// runs an action inside every execute(), before submitting: where the library submits a
// completion from, e.g. to call back into the object that completes it.

#include <boost/asio/execution.hpp>
#include <boost/asio/query.hpp>
#include <boost/asio/require.hpp>

#include <functional>
#include <utility>
#include <vector>

namespace asio_sync::test {

template <class Inner>
class recording_executor
{
public:
    recording_executor(const Inner& inner, std::vector<bool>& continuations)
        : recording_executor(inner, &continuations, nullptr, false)
    {
    }

    // `on_execute` must outlive the executor and its copies.
    recording_executor(const Inner& inner, std::vector<bool>& continuations,
                       const std::function<void()>& on_execute)
        : recording_executor(inner, &continuations, &on_execute, false)
    {
    }

    boost::asio::execution_context& query(boost::asio::execution::context_t) const noexcept
    {
        return boost::asio::query(inner_, boost::asio::execution::context);
    }

    static constexpr boost::asio::execution::blocking_t query(boost::asio::execution::blocking_t) noexcept
    {
        return boost::asio::execution::blocking.never;
    }

    boost::asio::execution::relationship_t query(boost::asio::execution::relationship_t) const noexcept
    {
        if (continuation_)
            return boost::asio::execution::relationship.continuation;
        return boost::asio::execution::relationship.fork;
    }

    recording_executor require(boost::asio::execution::blocking_t::never_t) const { return *this; }

    recording_executor require(boost::asio::execution::relationship_t::continuation_t) const
    {
        return recording_executor(inner_, continuations_, on_execute_, true);
    }

    recording_executor require(boost::asio::execution::relationship_t::fork_t) const
    {
        return recording_executor(inner_, continuations_, on_execute_, false);
    }

    // Work tracking is the inner executor's.
    template <class Property,
              class = decltype(boost::asio::require(std::declval<const Inner&>(), std::declval<Property>()))>
    auto require(Property p,
                 std::enable_if_t<std::is_convertible_v<Property, boost::asio::execution::outstanding_work_t>,
                                  int> = 0) const
    {
        auto inner = boost::asio::require(inner_, p);
        return recording_executor<decltype(inner)>(inner, continuations_, on_execute_, continuation_);
    }

    template <class Function>
    void execute(Function&& f) const
    {
        continuations_->push_back(continuation_);
        if (on_execute_)
            (*on_execute_)();
        boost::asio::require(inner_, boost::asio::execution::blocking.never)
            .execute(std::forward<Function>(f));
    }

    friend bool operator==(const recording_executor& a, const recording_executor& b) noexcept
    {
        return a.inner_ == b.inner_ && a.continuations_ == b.continuations_ &&
               a.on_execute_ == b.on_execute_ && a.continuation_ == b.continuation_;
    }

    // C++17 does not derive it from operator==, and an executor needs both.
    friend bool operator!=(const recording_executor& a, const recording_executor& b) noexcept
    {
        return !(a == b);
    }

private:
    template <class>
    friend class recording_executor;

    recording_executor(const Inner& inner, std::vector<bool>* continuations,
                       const std::function<void()>* on_execute, bool continuation)
        : inner_(inner), continuations_(continuations), on_execute_(on_execute), continuation_(continuation)
    {
    }

    Inner inner_;
    std::vector<bool>* continuations_;
    const std::function<void()>* on_execute_;
    bool continuation_;
};

} // namespace asio_sync::test

#endif // ASIO_SYNC_TEST_SUPPORT_RECORDING_EXECUTOR_HPP
