// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

#ifndef ASIO_SYNC_REDIS_DETAIL_REPLY_READER_HPP
#define ASIO_SYNC_REDIS_DETAIL_REPLY_READER_HPP

#include <asio_sync/redis/reply.hpp>

#include <boost/throw_exception.hpp>

#include <hiredis/hiredis.h>

#include <cstddef>
#include <memory>
#include <new>

namespace asio_sync::redis::detail {

// Parses what a server sends into replies with hiredis' reader. Each reply is copied into a
// redis::reply at once, so no hiredis object outlives the call that produced it. After an error
// the reader stays unusable: the connection that fed it must be dropped.
class reply_reader
{
public:
    enum class result
    {
        reply,      // a complete reply was taken
        incomplete, // more bytes are needed
        error,      // the bytes are not RESP2 (or memory ran out)
    };

    reply_reader() : reader_(redisReaderCreate())
    {
        if (!reader_)
            boost::throw_exception(std::bad_alloc());
    }

    // Appends bytes received from the server; false on an error.
    bool feed(const char* data, std::size_t size) noexcept
    {
        return redisReaderFeed(reader_.get(), data, size) == REDIS_OK;
    }

    // Takes the next complete reply, if one has been fed, into `out`.
    result next(reply& out)
    {
        void* raw = nullptr;
        if (redisReaderGetReply(reader_.get(), &raw) != REDIS_OK)
            return result::error;
        if (!raw)
            return result::incomplete;
        const std::unique_ptr<redisReply, void (*)(void*)> owned(static_cast<redisReply*>(raw),
                                                                 &freeReplyObject);
        out = copy(*owned);
        return result::reply;
    }

private:
    struct free_reader
    {
        void operator()(redisReader* r) const noexcept { redisReaderFree(r); }
    };

    static reply copy(const redisReply& from)
    {
        reply to;
        switch (from.type)
        {
        case REDIS_REPLY_STRING:
            to.kind = reply_kind::string;
            break;
        case REDIS_REPLY_STATUS:
            to.kind = reply_kind::status;
            break;
        case REDIS_REPLY_ERROR:
            to.kind = reply_kind::error;
            break;
        case REDIS_REPLY_INTEGER:
            to.kind = reply_kind::integer;
            to.integer = from.integer;
            return to;
        case REDIS_REPLY_ARRAY:
            to.kind = reply_kind::array;
            to.elements.reserve(from.elements);
            for (std::size_t i = 0; i < from.elements; ++i)
                to.elements.push_back(copy(*from.element[i]));
            return to;
        default: // REDIS_REPLY_NIL
            return to;
        }
        to.text.assign(from.str, from.len);
        return to;
    }

    std::unique_ptr<redisReader, free_reader> reader_;
};

} // namespace asio_sync::redis::detail

#endif // ASIO_SYNC_REDIS_DETAIL_REPLY_READER_HPP
