-- Copyright (c) 2026 The asio_sync authors
--
-- Distributed under the Boost Software License, Version 1.0. (See accompanying
-- file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)
--
-- The helpers that both function libraries of asio_sync::redis use, the fleet-wide semaphore's
-- (semaphore_library.lua) and the fenced writes' (fence_library.lua). A library cannot call
-- another's code, so scripts/generate-semaphore-library copies the text below this comment into
-- each of them, between its marker lines. It uses ERROR.argument, which each library's block of
-- shared facts defines before it.

-- The decimal digits of an integer, for text: Lua's own conversion drops digits beyond 14 (those
-- passed to redis.call are converted exactly by Redis).
local function decimal(x)
    return string.format('%d', x)
end

-- A decimal integer that Lua's doubles hold exactly (below 2^53), at least `least`, or nil.
local function integer(arg, least)
    if #arg <= 16 and string.find(arg, '^%d+$') then
        local value = tonumber(arg)
        if value >= least and value < 9007199254740992 then
            return value
        end
    end
    return nil
end

local function argument_error(what)
    return redis.error_reply(ERROR.argument .. ' ' .. what)
end
