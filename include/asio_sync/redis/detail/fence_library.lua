#!lua name=asio_sync_fence_v1

-- Fenced writes (asio_sync::redis::async_fenced_set): a Redis 7 function library, separate from
-- the semaphore's so that either can change without the other. scripts/generate-semaphore-library
-- writes it into fence_library.hpp, with its error prefix (the block of facts below), and copies
-- into it the helpers it shares with the semaphore's library (lua_helpers.lua). FUNCTION LOAD
-- REPLACE makes loading it idempotent.
--
--   asio_sync_v1_fenced_set(keys: value, fence; args: fence, value, ttl_ms)
--       written <fence> | stale <largest>
--
-- The fence key holds the largest fence that has written the value key. A write carrying a
-- smaller fence changes nothing and answers stale with the largest; one carrying that fence or a
-- larger one sets both keys (the same holder may write twice). With ttl_ms > 0 both keys expire
-- after ttl_ms, so the record of fences lives exactly as long as the value; with 0 neither expires
-- (an earlier expiry is removed). The two keys must share a cluster slot (a hash tag).
--
-- Errors, with nothing changed:
--   ASIO_SYNC_ARGUMENT <what>  a malformed call: the fence not a positive decimal integer below
--                              2^53, ttl_ms not a decimal integer below 2^53, another count of
--                              keys or arguments, one key given as both, or a fence key that
--                              holds no fence
--   WRONGTYPE ...              Redis' own error: a key holds another type than a string

-- BEGIN shared facts: written by scripts/generate-semaphore-library from its table; do not edit
local ERROR = {
    argument = 'ASIO_SYNC_ARGUMENT',
}
-- END shared facts

-- BEGIN shared helpers: written by scripts/generate-semaphore-library from lua_helpers.lua; do not edit
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
-- END shared helpers

local function fenced_set(keys, args)
    if #keys ~= 2 then
        return argument_error('expected 2 keys')
    end
    if #args ~= 3 then
        return argument_error('expected 3 arguments')
    end
    if keys[1] == keys[2] then
        return argument_error('the value key and the fence key must differ')
    end
    local fence, ttl = integer(args[1], 1), integer(args[3], 0)
    if not (fence and ttl) then
        return argument_error('fence must be a positive integer and ttl_ms an integer')
    end
    -- Both keys are read before anything is written, so that a key of another type fails the call
    -- with WRONGTYPE before anything changed.
    redis.call('STRLEN', keys[1])
    local stored = redis.call('GET', keys[2])
    if stored then
        local largest = integer(stored, 1)
        if not largest then
            return argument_error('the fence key holds no fence')
        end
        if fence < largest then
            return {'stale', largest}
        end
    end
    if ttl > 0 then
        redis.call('SET', keys[1], args[2], 'PX', ttl)
        redis.call('SET', keys[2], decimal(fence), 'PX', ttl)
    else
        redis.call('SET', keys[1], args[2])
        redis.call('SET', keys[2], decimal(fence))
    end
    return {'written', fence}
end

redis.register_function{function_name = 'asio_sync_v1_fenced_set', callback = fenced_set}
