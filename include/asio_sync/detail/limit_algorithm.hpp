// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_DETAIL_LIMIT_ALGORITHM_HPP
#define ASIO_SYNC_DETAIL_LIMIT_ALGORITHM_HPP

#include <asio_sync/limit_sample.hpp>

#include <cstddef>
#include <memory>
#include <type_traits>
#include <utility>

namespace asio_sync::detail {

// A limit algorithm behind one interface, so that the limiter's type names its executor alone.
// The virtual call runs on the permit-return path only, where the algorithm runs anyway.
class limit_algorithm
{
public:
    virtual ~limit_algorithm() = default;
    virtual std::size_t limit() const noexcept = 0;
    virtual std::size_t min_limit() const noexcept = 0;
    virtual std::size_t max_limit() const noexcept = 0;
    virtual void on_sample(const limit_sample& s) = 0;
};

template <class Algorithm>
class limit_algorithm_of final : public limit_algorithm
{
public:
    explicit limit_algorithm_of(Algorithm algorithm) : algorithm_(std::move(algorithm)) {}

    std::size_t limit() const noexcept override { return algorithm_.limit(); }
    std::size_t min_limit() const noexcept override { return algorithm_.min_limit(); }
    std::size_t max_limit() const noexcept override { return algorithm_.max_limit(); }
    void on_sample(const limit_sample& s) override { algorithm_.on_sample(s); }

private:
    Algorithm algorithm_;
};

template <class Algorithm, class = void>
struct is_limit_algorithm : std::false_type
{
};

template <class Algorithm>
struct is_limit_algorithm<
    Algorithm,
    std::void_t<decltype(std::size_t(std::declval<const Algorithm&>().limit())),
                decltype(std::size_t(std::declval<const Algorithm&>().min_limit())),
                decltype(std::size_t(std::declval<const Algorithm&>().max_limit())),
                decltype(std::declval<Algorithm&>().on_sample(std::declval<const limit_sample&>()))>>
    : std::true_type
{
};

template <class Algorithm>
std::unique_ptr<limit_algorithm> make_limit_algorithm(Algorithm algorithm)
{
    static_assert(
        is_limit_algorithm<Algorithm>::value,
        "a limit algorithm has limit(), min_limit(), max_limit() and on_sample(const limit_sample&)");
    return std::make_unique<limit_algorithm_of<Algorithm>>(std::move(algorithm));
}

} // namespace asio_sync::detail

#endif // ASIO_SYNC_DETAIL_LIMIT_ALGORITHM_HPP
