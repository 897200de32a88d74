// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_TEST_SUPPORT_DSCHED_SCRIPTED_HPP
#define ASIO_SYNC_TEST_SUPPORT_DSCHED_SCRIPTED_HPP

#include "support/dsched.hpp"

#include <boost/test/unit_test.hpp>

#include <functional>
#include <utility>
#include <vector>

namespace asio_sync::test::dsched {

// A scenario whose logical threads are scripts, each a function of the scenario `Self` that
// derives from this class and offers the steps the scripts call.
template <class Self>
class scripted_scenario : public scenario
{
public:
    using script = std::function<void(Self&)>;

    explicit scripted_scenario(std::vector<script> scripts) : scripts_(std::move(scripts)) {}

    std::vector<std::function<void()>> threads() override
    {
        std::vector<std::function<void()>> bodies;
        for (auto& s : scripts_)
            bodies.push_back([this, &s] { s(static_cast<Self&>(*this)); });
        return bodies;
    }

private:
    std::vector<script> scripts_;
};

// Checks an exhaustive exploration: no invariant failed, and every interleaving was explored.
inline void report(const char* name, const exploration& e)
{
    BOOST_TEST_MESSAGE(name << ": " << e.schedules << " schedules" << (e.complete ? ", all explored" : ""));
    BOOST_TEST(e.failure.empty(), name << ": " << e.failure);
    BOOST_TEST(e.complete);
}

} // namespace asio_sync::test::dsched

#endif // ASIO_SYNC_TEST_SUPPORT_DSCHED_SCRIPTED_HPP
