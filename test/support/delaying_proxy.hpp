// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_TEST_SUPPORT_DELAYING_PROXY_HPP
#define ASIO_SYNC_TEST_SUPPORT_DELAYING_PROXY_HPP

// A TCP proxy on a free loopback port, on a thread of its own, that keeps what a client sends on
// the links open now, and delivers it later, also after the client closed the link: a stuck
// middlebox that comes back. Later links are relayed normally, so a client that gives up on its
// link and connects again goes on through the proxy.

#include <boost/asio/buffer.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace asio_sync::test {

class delaying_proxy
{
public:
    explicit delaying_proxy(std::uint16_t target_port)
        : target_(boost::asio::ip::make_address_v4("127.0.0.1"), target_port),
          acceptor_(io_, {boost::asio::ip::make_address_v4("127.0.0.1"), 0})
    {
        accept();
        thread_ = std::thread([this] { io_.run(); });
    }

    delaying_proxy(const delaying_proxy&) = delete;
    delaying_proxy& operator=(const delaying_proxy&) = delete;

    ~delaying_proxy()
    {
        io_.stop();
        thread_.join();
    }

    std::uint16_t port() const { return acceptor_.local_endpoint().port(); }

    // What the clients send on the links open now is kept from here on, and not forwarded; later
    // links are relayed normally.
    void stall_existing()
    {
        on_thread([this] {
            for (const auto& l : links_)
            {
                l->stalled = true;
                stalled_.push_back(l);
            }
            links_.clear();
        });
    }

    // Writes what was kept to the server, on the link it was sent on, followed by `then` (a
    // command that shows when the server has run what was kept).
    void deliver_stalled(const std::string& then = {})
    {
        on_thread([this, &then] {
            for (const auto& l : stalled_)
            {
                l->stalled = false;
                auto data = std::make_shared<std::string>(std::move(l->kept) + then);
                boost::asio::async_write(l->server, boost::asio::buffer(*data),
                                         [l, data](boost::system::error_code, std::size_t) {});
            }
            stalled_.clear();
        });
    }

    std::size_t kept_bytes()
    {
        std::size_t bytes = 0;
        on_thread([&] {
            for (const auto& l : stalled_)
                bytes += l->kept.size();
        });
        return bytes;
    }

private:
    using tcp = boost::asio::ip::tcp;

    struct link : std::enable_shared_from_this<link>
    {
        link(delaying_proxy& owner_, tcp::socket c) : owner(owner_), client(std::move(c)), server(owner_.io_)
        {
        }

        void up()
        {
            client.async_read_some(
                boost::asio::buffer(up_data), [self = shared_from_this()](auto ec, std::size_t n) {
                    if (ec)
                    {
                        self->client_gone = true;
                        if (!self->stalled)
                        {
                            boost::system::error_code ignored;
                            self->server.close(ignored);
                        }
                        return;
                    }
                    if (self->stalled)
                    {
                        self->kept.append(self->up_data.data(), n);
                        return self->up();
                    }
                    boost::asio::async_write(self->server, boost::asio::buffer(self->up_data, n),
                                             [self](auto ec2, std::size_t) {
                                                 if (!ec2)
                                                     self->up();
                                             });
                });
        }

        void down()
        {
            server.async_read_some(
                boost::asio::buffer(down_data), [self = shared_from_this()](auto ec, std::size_t n) {
                    if (ec)
                    {
                        boost::system::error_code ignored;
                        self->client.close(ignored);
                        return;
                    }
                    if (self->client_gone || self->stalled)
                        return self->down(); // a stalled link forwards nothing either way
                    boost::asio::async_write(self->client, boost::asio::buffer(self->down_data, n),
                                             [self](auto, std::size_t) { self->down(); });
                });
        }

        delaying_proxy& owner;
        tcp::socket client;
        tcp::socket server;
        std::array<char, 16 * 1024> up_data{};
        std::array<char, 16 * 1024> down_data{};
        std::string kept;
        bool stalled = false;
        bool client_gone = false;
    };

    template <class F>
    void on_thread(F f)
    {
        std::promise<void> done;
        boost::asio::post(io_, [&] {
            f();
            done.set_value();
        });
        done.get_future().wait();
    }

    void accept()
    {
        acceptor_.async_accept([this](boost::system::error_code ec, tcp::socket socket) {
            if (ec)
                return;
            auto l = std::make_shared<link>(*this, std::move(socket));
            l->server.async_connect(target_, [this, l](boost::system::error_code ec2) {
                if (ec2)
                    return;
                links_.push_back(l);
                all_.push_back(l);
                l->up();
                l->down();
            });
            accept();
        });
    }

    boost::asio::io_context io_;
    tcp::endpoint target_;
    tcp::acceptor acceptor_;
    std::vector<std::shared_ptr<link>> links_;   // relayed normally
    std::vector<std::shared_ptr<link>> stalled_; // kept since stall_existing()
    std::vector<std::shared_ptr<link>> all_;     // every link, kept open until the proxy goes
    std::thread thread_;
};

} // namespace asio_sync::test

#endif // ASIO_SYNC_TEST_SUPPORT_DELAYING_PROXY_HPP
