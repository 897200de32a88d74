// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_DETAIL_COMPLETION_HPP
#define ASIO_SYNC_DETAIL_COMPLETION_HPP

#include <asio_sync/detail/grant.hpp>
#include <asio_sync/detail/submit.hpp>

#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/config.hpp>
#include <boost/core/no_exceptions_support.hpp>
#include <boost/system/error_code.hpp>

#include <cstddef>
#include <tuple>
#include <utility>

namespace asio_sync::detail {

// What runs on the handler's executor: detaches our cancellation handler, then makes the upcall.
template <class Handler, class Args>
class completion
{
public:
    using slot_type = boost::asio::associated_cancellation_slot_t<Handler>;

    completion(Handler&& handler, Args&& args, slot_type slot = slot_type())
        : handler_(std::move(handler)), args_(std::move(args)), slot_(std::move(slot))
    {
    }

    void operator()()
    {
        if (slot_.is_connected())
            slot_.clear();
        std::apply(std::move(handler_), std::move(args_));
    }

private:
    Handler handler_;
    Args args_;
    slot_type slot_;
};

// Runs `submit_completion`, which submits the completion of a grant of n permits. If that throws,
// the completion's handler is gone, so the permits go back before the exception leaves. Forced
// inline, as post_completion is: left to itself g++ keeps the handler-catching frame out of line,
// and an immediate acquire costs 10% more (bench/uncontended.cpp).
template <class Grant, class Submit>
BOOST_FORCEINLINE void submit_granted(const Grant& grant, boost::system::error_code ec, std::size_t n,
                                      Submit&& submit_completion)
{
    BOOST_TRY
    {
        submit_completion();
    }
    BOOST_CATCH(...)
    {
        if (!ec)
            grant.undelivered(n);
        BOOST_RETHROW
    }
    BOOST_CATCH_END
}

// Completes `handler` without an operation object: for acquires decided at initiation, which
// continue the caller's chain. If the completion cannot be submitted, the exception reaches the
// initiating function's caller. The try block is submit_granted's, written out: g++ does not
// inline the lambda submit_granted would take here once the same submission serves the queued
// acquires' completions too, which cost an immediate acquire 28 instructions more.
template <class Handler, class IoExecutor, class Grant>
BOOST_FORCEINLINE void post_completion(Handler handler, const IoExecutor& io_ex, const Grant& grant,
                                       boost::system::error_code ec, std::size_t n)
{
    const auto alloc = get_handler_allocator(handler);
    const auto& ex = handler_executor(handler, io_ex);
    BOOST_TRY
    {
        submit(ex,
               completion<Handler, grant_result_t<Grant>>(std::move(handler), grant_arguments(grant, ec, n)),
               alloc, relation::continuation);
    }
    BOOST_CATCH(...)
    {
        if (!ec)
            grant.undelivered(n);
        BOOST_RETHROW
    }
    BOOST_CATCH_END
}

} // namespace asio_sync::detail

#endif // ASIO_SYNC_DETAIL_COMPLETION_HPP
