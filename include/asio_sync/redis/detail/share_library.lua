#!lua name=asio_sync_share_v1

-- The server side of the leased shares (asio_sync::redis::basic_share_semaphore): a Redis 7
-- function library, separate from the per-acquire semaphore's. scripts/generate-semaphore-library
-- writes it into share_library.hpp, with its facts (the block below), and copies into it the
-- helpers it shares with the other libraries (lua_helpers.lua). FUNCTION LOAD REPLACE makes loading
-- it idempotent; functions persist across restarts and replicate.
--
-- The state of a limit named S is one hash (its key carries the hash tag {S}, so a call names one
-- key and a slot migration never splits it):
--   capacity    the fleet-wide capacity in force
--   seq         the last fence handed out
--   #<id>       '<held> <want> <target> <expiry> <fence> <call>' of each process (its id, chosen by it)
-- held is what Redis counts against the capacity for the process: the most permits it may have in
-- use. want is the demand it reported, target its part of the division, expiry the end of its lease
-- (server ms), fence the token of its share, handed out when the entry was made, call the number of
-- the last refresh it ran.
--
-- The rule that keeps the shares within the capacity: the sum of held never exceeds the capacity
-- through a grant. held grows only by capacity that is free (capacity minus the sum of held) and
-- only up to the target; it falls only when the process confirms (its bound: what it may still have
-- in use, after it lowered its local share and its holders gave back) or when its lease ends. A
-- smaller capacity (resize) lowers targets at once and held as the processes confirm.
--
-- The division: max-min fair. The processes are taken by want, smallest first (ties by id); each
-- gets min(want, floor(left / processes left)), so that a process wanting less than an equal part
-- gets its want, and those wanting more split what remains within one permit of each other.
--
--   asio_sync_share_v1_refresh(keys: state; args: channel, id, want, bound, lease_ms, capacity, call)
--       share <held> <target> <lease_ms> <fence> <capacity>
--     Renews (or starts) the caller's lease, records its want, lowers its held to its bound,
--     divides, grows its held toward its target from free capacity. capacity is declared if the
--     state has none; the one in force is answered. Publishes 'divided' on the channel when another
--     process should call: its target changed, or capacity that was not free before the call is
--     free after it while that process is below its target (not when the caller took it back).
--     call numbers the process's refreshes, growing: one that is not above the last one run for the
--     entry was sent before it (a link that died and delivered it late) and changes nothing, since
--     its bound may be below what the process took since; it is answered with the entry as it is.
--   asio_sync_share_v1_leave(keys: state; args: channel, id)
--       left <capacity>
--     Removes the caller's entry: its held returns to the free capacity (only sent once the process
--     holds nothing, or when it gives up on purpose).
--   asio_sync_share_v1_resize(keys: state; args: channel, capacity)
--       resized <capacity>
--     Stores a capacity; the targets follow on each process's next call, which the message
--     'divided' asks for.
--   asio_sync_share_v1_status(keys: state)      (read only)
--       status <capacity> <held sum> <now> followed by id, held, want, target, expiry, fence of each
--
-- Every writing call reads TIME once and removes the entries whose lease has ended: their held is
-- free again. Errors, with nothing changed:
--   ASIO_SYNC_ARGUMENT <what>  a malformed call
--   WRONGTYPE ...              Redis' own error: the key holds another type than a hash

-- BEGIN shared facts: written by scripts/generate-semaphore-library from its table; do not edit
local MAX_CAPACITY = 4503599627370496
local REPLY = {
    share = 'share',
    left = 'left',
    resized = 'resized',
    status = 'status',
    divided = 'divided',
}
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


-- BEGIN server clock: the tests of the library replace this function, never a client
-- The server's clock, in seconds and microseconds.
local function server_time()
    local time = redis.call('TIME')
    return tonumber(time[1]), tonumber(time[2])
end
-- END server clock

-- The server's clock in milliseconds (leases), and in microseconds (fences).
local function clock()
    local seconds, micros = server_time()
    return seconds * 1000 + math.floor(micros / 1000), seconds * 1000000 + micros
end

-- The state: its capacity (nil if none), its last fence and its entries by id.
local function read_state(key)
    local fields = redis.call('HGETALL', key)
    local state = {seq = 0, entries = {}, ids = {}}
    for i = 1, #fields, 2 do
        local field, value = fields[i], fields[i + 1]
        if field == 'capacity' then
            state.capacity = tonumber(value)
        elseif field == 'seq' then
            state.seq = tonumber(value)
        elseif string.sub(field, 1, 1) == '#' then
            local held, want, target, expiry, fence, call =
                string.match(value, '^(%d+) (%d+) (%d+) (%d+) (%d+) (%d+)$')
            if held then
                local id = string.sub(field, 2)
                state.entries[id] = {
                    held = tonumber(held), want = tonumber(want), target = tonumber(target),
                    expiry = tonumber(expiry), fence = tonumber(fence), call = tonumber(call),
                }
                state.ids[#state.ids + 1] = id
            end
        end
    end
    table.sort(state.ids)
    return state
end

-- Removes the entries whose lease ended (the caller's own too).
local function reap(key, state, now)
    local live = {}
    for _, id in ipairs(state.ids) do
        if state.entries[id].expiry <= now then
            state.entries[id] = nil
            redis.call('HDEL', key, '#' .. id)
        else
            live[#live + 1] = id
        end
    end
    state.ids = live
end

-- Max-min fair targets of the live entries.
local function divide(state)
    local order = {}
    for i, id in ipairs(state.ids) do
        order[i] = id
    end
    table.sort(order, function(a, b)
        local wa, wb = state.entries[a].want, state.entries[b].want
        if wa ~= wb then
            return wa < wb
        end
        return a < b
    end)
    local left, targets = state.capacity, {}
    for i, id in ipairs(order) do
        local part = math.floor(left / (#order - i + 1))
        local target = math.min(state.entries[id].want, part)
        targets[id] = target
        left = left - target
    end
    return targets
end

local function held_sum(state)
    local sum = 0
    for _, id in ipairs(state.ids) do
        sum = sum + state.entries[id].held
    end
    return sum
end

local function encode(entry)
    return decimal(entry.held) .. ' ' .. decimal(entry.want) .. ' ' .. decimal(entry.target) .. ' ' ..
               decimal(entry.expiry) .. ' ' .. decimal(entry.fence) .. ' ' .. decimal(entry.call)
end

-- Stores the new targets; true if another process should call: its target changed, or it is below
-- its target and capacity is free that was not before the call (the held sum fell below both
-- `held_before`, the sum when the call began, and the capacity).
local function store_targets(key, state, targets, caller, held_before)
    local held = held_sum(state)
    local freed = held < held_before and held < state.capacity
    local wake = false
    for _, id in ipairs(state.ids) do
        local entry = state.entries[id]
        if id ~= caller and (targets[id] ~= entry.target or (freed and entry.held < targets[id])) then
            wake = true
        end
        entry.target = targets[id]
        redis.call('HSET', key, '#' .. id, encode(entry))
    end
    return wake
end

local function refresh(keys, args)
    if #keys ~= 1 or #args ~= 7 then
        return argument_error('expected 1 key and 7 arguments')
    end
    local channel, id = args[1], args[2]
    local want, bound, lease, declared, call = integer(args[3], 0), integer(args[4], 0), integer(args[5], 1),
        integer(args[6], 1), integer(args[7], 1)
    if not (want and bound and lease and declared and call) or id == '' or declared > MAX_CAPACITY then
        return argument_error('want, bound, lease_ms, capacity and call must be integers, the last three ' ..
                                  'positive')
    end
    local key = keys[1]
    local now, now_us = clock()
    local state = read_state(key)
    if not state.capacity then
        state.capacity = declared
        redis.call('HSET', key, 'capacity', decimal(declared))
    end
    local held_before = held_sum(state)
    reap(key, state, now)
    local entry = state.entries[id]
    if not entry then
        -- Fences grow strictly, above the server time in microseconds, so that a state started
        -- afresh still hands out larger ones than any earlier.
        state.seq = math.max(state.seq + 1, now_us)
        redis.call('HSET', key, 'seq', decimal(state.seq))
        entry = {held = 0, want = 0, target = 0, fence = state.seq, call = 0}
        state.entries[id] = entry
        state.ids[#state.ids + 1] = id
        table.sort(state.ids)
    elseif call <= entry.call then
        return {REPLY.share, entry.held, entry.target, lease, entry.fence, state.capacity}
    end
    entry.call = call
    entry.held = math.min(entry.held, bound)
    entry.want = want
    entry.expiry = now + lease
    local targets = divide(state)
    local free = state.capacity - held_sum(state)
    if targets[id] > entry.held and free > 0 then
        entry.held = entry.held + math.min(targets[id] - entry.held, free)
    end
    if store_targets(key, state, targets, id, held_before) then
        redis.call('PUBLISH', channel, REPLY.divided)
    end
    return {REPLY.share, entry.held, entry.target, lease, entry.fence, state.capacity}
end

local function leave(keys, args)
    if #keys ~= 1 or #args ~= 2 then
        return argument_error('expected 1 key and 2 arguments')
    end
    if args[2] == '' then
        return argument_error('the id must not be empty')
    end
    local key = keys[1]
    local state = read_state(key)
    local held_before = held_sum(state)
    reap(key, state, clock())
    local entry = state.entries[args[2]]
    if entry then
        state.entries[args[2]] = nil
        redis.call('HDEL', key, '#' .. args[2])
        for i, id in ipairs(state.ids) do
            if id == args[2] then
                table.remove(state.ids, i)
                break
            end
        end
    end
    if state.capacity and store_targets(key, state, divide(state), nil, held_before) then
        redis.call('PUBLISH', args[1], REPLY.divided)
    end
    return {REPLY.left, state.capacity or 0}
end

local function resize(keys, args)
    if #keys ~= 1 or #args ~= 2 then
        return argument_error('expected 1 key and 2 arguments')
    end
    local capacity = integer(args[2], 1)
    if not capacity or capacity > MAX_CAPACITY then
        return argument_error('capacity must be a positive integer up to 2^52')
    end
    local key = keys[1]
    local state = read_state(key)
    reap(key, state, clock())
    state.capacity = capacity
    redis.call('HSET', key, 'capacity', decimal(capacity))
    store_targets(key, state, divide(state), nil, 0) -- published below in any case
    redis.call('PUBLISH', args[1], REPLY.divided)
    return {REPLY.resized, capacity}
end

local function status(keys, args)
    if #keys ~= 1 or #args ~= 0 then
        return argument_error('expected 1 key and no argument')
    end
    local state = read_state(keys[1])
    local now = clock()
    local reply = {REPLY.status, state.capacity or 0, 0, now}
    local sum = 0
    for _, id in ipairs(state.ids) do
        local entry = state.entries[id]
        if entry.expiry > now then
            sum = sum + entry.held
            for _, value in ipairs({id, entry.held, entry.want, entry.target, entry.expiry, entry.fence}) do
                reply[#reply + 1] = value
            end
        end
    end
    reply[3] = sum
    return reply
end

redis.register_function('asio_sync_share_v1_refresh', refresh)
redis.register_function('asio_sync_share_v1_leave', leave)
redis.register_function('asio_sync_share_v1_resize', resize)
redis.register_function{function_name = 'asio_sync_share_v1_status', callback = status, flags = {'no-writes'}}
