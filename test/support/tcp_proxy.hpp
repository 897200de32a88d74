// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_TEST_SUPPORT_TCP_PROXY_HPP
#define ASIO_SYNC_TEST_SUPPORT_TCP_PROXY_HPP

// A TCP proxy on a free loopback port in front of a server on another loopback port, running on
// a thread of its own, for fault tests. Each connection it accepts is relayed to the server or
// misbehaves, in the mode its rank was given at construction. The relayed connections can also be
// held (what the clients send waits in the proxy), made to lose the server's replies, frozen (open
// but forwarding nothing, as a stuck proxy or a half-open connection), and cut; and the clients of
// one source address isolated, as by a network partition.

#include <boost/asio/buffer.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>

#include <boost/asio/post.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace asio_sync::test {

class tcp_proxy
{
public:
    enum class mode
    {
        forward, // relay both ways
        silent,  // accept and read, never answer: a server that hangs
        garbage, // answer the first bytes received with bytes that are not RESP
        reject,  // close at once
    };

    // The first connections get the modes of `first`, in order; the others get `others`.
    explicit tcp_proxy(std::uint16_t target_port, std::vector<mode> first = {}, mode others = mode::forward)
        : target_(boost::asio::ip::make_address_v4("127.0.0.1"), target_port),
          acceptor_(io_, {boost::asio::ip::make_address_v4("127.0.0.1"), 0}), first_(std::move(first)),
          others_(others)
    {
        accept();
        thread_ = std::thread([this] { io_.run(); });
    }

    tcp_proxy(const tcp_proxy&) = delete;
    tcp_proxy& operator=(const tcp_proxy&) = delete;

    ~tcp_proxy()
    {
        io_.stop();
        thread_.join();
    }

    std::uint16_t port() const { return acceptor_.local_endpoint().port(); }

    // How many connections have been accepted so far.
    std::size_t accepted() const { return accepted_.load(); }

    // From now until `release`, what the clients send stays in the proxy: the server hears nothing
    // from them, as if they had stalled.
    void hold()
    {
        on_proxy_thread([this] { holding_ = true; });
    }

    // Sends on what was held, and relays again.
    void release()
    {
        on_proxy_thread([this] {
            holding_ = false;
            for (const auto& p : held_)
                p->forward(p->held);
            held_.clear();
        });
    }

    // From now until `cut`, the server's replies on the relayed connections are read and dropped:
    // the server runs the commands, and the clients never learn of it.
    void drop_replies()
    {
        on_proxy_thread([this] { dropping_ = true; });
    }

    // Closes every connection relayed so far, and relays the later ones normally.
    void cut()
    {
        on_proxy_thread([this] {
            for (const auto& weak : relayed_)
                if (const auto socket = weak.lock())
                {
                    boost::system::error_code ignored;
                    socket->close(ignored);
                }
            relayed_.clear();
            pipes_.clear();
            dropping_ = false;
        });
    }

    // From now on the connections relayed so far stay open and forward nothing, either way: what
    // either end sends is read and dropped. Later connections are relayed normally.
    void freeze()
    {
        on_proxy_thread([this] {
            for (const auto& weak : pipes_)
                if (const auto p = weak.lock())
                    p->frozen = true;
            pipes_.clear();
            relayed_.clear();
        });
    }

    // From now on the connections from `source` (a loopback address the client bound, such as a
    // server's bind-source-addr) forward nothing, either way, and stay open; later ones from it are
    // accepted and never answered: a network partition, which sends no reset. Other clients are
    // relayed as before.
    void isolate(const std::string& source)
    {
        const auto address = boost::asio::ip::make_address_v4(source);
        on_proxy_thread([this, address] {
            isolated_.push_back(address);
            for (const auto& weak : pipes_)
                if (const auto p = weak.lock(); p && p->client == address)
                    p->frozen = true;
        });
    }

private:
    using tcp = boost::asio::ip::tcp;

    template <class Function>
    void on_proxy_thread(Function f)
    {
        std::promise<void> done;
        boost::asio::post(io_, [&] {
            f();
            done.set_value();
        });
        done.get_future().wait();
    }

    // Copies what one socket receives to another, until either fails; then closes both. Runs on
    // the proxy's thread, which alone reads the proxy's flags.
    struct pipe : std::enable_shared_from_this<pipe>
    {
        enum class direction
        {
            to_server,
            to_client,
        };

        pipe(tcp_proxy& owner_, direction way_, std::shared_ptr<tcp::socket> source,
             std::shared_ptr<tcp::socket> sink)
            : owner(owner_), way(way_), from(std::move(source)), to(std::move(sink))
        {
        }

        void run()
        {
            from->async_read_some(
                boost::asio::buffer(data), [self = shared_from_this()](auto ec, std::size_t n) {
                    if (ec)
                        return self->close();
                    if (self->frozen || (self->way == direction::to_client && self->owner.dropping_))
                        return self->run();
                    if (self->way == direction::to_server && self->owner.holding_)
                    {
                        self->held = n;
                        self->owner.held_.push_back(self);
                        return;
                    }
                    self->forward(n);
                });
        }

        void forward(std::size_t n)
        {
            boost::asio::async_write(*to, boost::asio::buffer(data, n),
                                     [self = shared_from_this()](auto ec, std::size_t) {
                                         if (ec)
                                             return self->close();
                                         self->run();
                                     });
        }

        void close()
        {
            boost::system::error_code ignored;
            from->close(ignored);
            to->close(ignored);
        }

        tcp_proxy& owner;
        const direction way;
        boost::asio::ip::address_v4 client; // the client's address
        std::shared_ptr<tcp::socket> from;
        std::shared_ptr<tcp::socket> to;
        std::array<char, 16 * 1024> data{};
        std::size_t held = 0; // bytes of `data` waiting for release()
        bool frozen = false;  // reads and drops, forwards nothing
    };

    void accept()
    {
        acceptor_.async_accept([this](boost::system::error_code ec, tcp::socket socket) {
            if (ec)
                return;
            const std::size_t rank = accepted_++;
            boost::system::error_code unknown;
            const tcp::endpoint peer = socket.remote_endpoint(unknown);
            const bool cut_off = !unknown && std::find(isolated_.begin(), isolated_.end(),
                                                       peer.address().to_v4()) != isolated_.end();
            serve(std::make_shared<tcp::socket>(std::move(socket)), cut_off                ? mode::silent
                                                                    : rank < first_.size() ? first_[rank]
                                                                                           : others_);
            accept();
        });
    }

    void serve(std::shared_ptr<tcp::socket> client, mode m)
    {
        switch (m)
        {
        case mode::forward:
        {
            auto server = std::make_shared<tcp::socket>(io_);
            server->async_connect(target_, [this, client, server](boost::system::error_code ec) {
                if (ec)
                    return;
                relayed_.push_back(client);
                relayed_.push_back(server);
                boost::system::error_code unknown;
                const auto address = client->remote_endpoint(unknown).address().to_v4();
                for (const auto& p :
                     {std::make_shared<pipe>(*this, pipe::direction::to_server, client, server),
                      std::make_shared<pipe>(*this, pipe::direction::to_client, server, client)})
                {
                    p->client = address;
                    pipes_.push_back(p);
                    p->run();
                }
            });
            break;
        }
        case mode::silent:
            discard(client, std::make_shared<std::array<char, 1024>>());
            break;
        case mode::garbage:
        {
            auto buffer = std::make_shared<std::array<char, 1024>>();
            client->async_read_some(boost::asio::buffer(*buffer), [client, buffer](auto ec, std::size_t) {
                if (ec)
                    return;
                static constexpr char not_resp[] = "!garbage\r\n";
                boost::asio::async_write(*client, boost::asio::buffer(not_resp, sizeof not_resp - 1),
                                         [client, buffer](auto, std::size_t) { discard(client, buffer); });
            });
            break;
        }
        case mode::reject:
            break; // the socket closes as `client` goes
        }
    }

    static void discard(std::shared_ptr<tcp::socket> client, std::shared_ptr<std::array<char, 1024>> buffer)
    {
        client->async_read_some(boost::asio::buffer(*buffer), [client, buffer](auto ec, std::size_t) {
            if (!ec)
                discard(client, buffer);
        });
    }

    boost::asio::io_context io_;
    tcp::endpoint target_;
    tcp::acceptor acceptor_;
    const std::vector<mode> first_;
    const mode others_;
    std::atomic<std::size_t> accepted_{0};
    // Used on the proxy's thread only.
    bool holding_ = false;
    bool dropping_ = false;
    std::vector<std::shared_ptr<pipe>> held_;
    std::vector<std::weak_ptr<tcp::socket>> relayed_;
    std::vector<std::weak_ptr<pipe>> pipes_;
    std::vector<boost::asio::ip::address_v4> isolated_; // sources cut off by isolate()
    std::thread thread_;
};

} // namespace asio_sync::test

#endif // ASIO_SYNC_TEST_SUPPORT_TCP_PROXY_HPP
