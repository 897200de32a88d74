// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_TEST_SUPPORT_HANDLER_HPP
#define ASIO_SYNC_TEST_SUPPORT_HANDLER_HPP

#include <asio_sync/error.hpp>

#include <boost/system/error_code.hpp>
#include <boost/test/unit_test.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <ostream>

namespace asio_sync {

// Lets BOOST_TEST print an asio_sync::error when a comparison fails.
inline std::ostream& boost_test_print_type(std::ostream& os, error e)
{
    return os << make_error_code(e);
}

} // namespace asio_sync

namespace asio_sync::test {

// Where a completion lands: the error code, and how often the handler was invoked.
struct outcome
{
    std::optional<boost::system::error_code> ec;
    int calls = 0;

    bool done() const { return calls > 0; }
};

// A handler that records its completion into an `outcome` and fails the test if it is invoked
// more than once. Each copy shares the outcome; moved-from copies cannot be invoked.
class record
{
public:
    explicit record(std::shared_ptr<outcome> out) : out_(std::move(out)) {}

    void operator()(boost::system::error_code ec)
    {
        BOOST_REQUIRE_MESSAGE(out_, "a moved-from handler was invoked");
        BOOST_CHECK_MESSAGE(out_->calls == 0, "handler invoked more than once");
        ++out_->calls;
        out_->ec = ec;
    }

private:
    std::shared_ptr<outcome> out_;
};

// Owns a callback that runs when the handler holding it is destroyed.
struct on_destroy
{
    std::function<void()> action;
    explicit on_destroy(std::function<void()> f) : action(std::move(f)) {}
    on_destroy(const on_destroy&) = delete;
    ~on_destroy() { action(); }
};

// Convenience: a fresh outcome and a handler recording into it.
inline std::pair<std::shared_ptr<outcome>, record> make_record()
{
    auto out = std::make_shared<outcome>();
    return {out, record(out)};
}

// Checks that a recorded handler was invoked exactly once, with `expected`.
inline void check_completed(const outcome& out, const boost::system::error_code& expected)
{
    BOOST_TEST(out.calls == 1);
    BOOST_TEST_REQUIRE(out.ec.has_value());
    BOOST_TEST(*out.ec == expected);
}

} // namespace asio_sync::test

#endif // ASIO_SYNC_TEST_SUPPORT_HANDLER_HPP
