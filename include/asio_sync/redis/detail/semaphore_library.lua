#!lua name=asio_sync_v1

-- The server side of the fleet-wide semaphore (asio_sync::redis::basic_semaphore): a Redis 7
-- function library. scripts/generate-semaphore-library writes it into semaphore_library.hpp, with
-- the facts both sides share (the block below). FUNCTION LOAD REPLACE makes loading it idempotent;
-- functions persist across restarts and replicate.
--
-- State of a semaphore named S (every key carries the hash tag {S}, so one cluster slot holds all):
--   meta     hash: capacity (declared by the first acquire), used, lease (the longest lease seen)
--   holders  zset: id -> lease deadline (server ms)        hinfo  hash: id -> "<n>:<fence>"
--   queue    zset: id -> arrival number                    wdl    zset: id -> waiter deadline
--   wreq     hash: id -> n                                 seq    counter of arrivals and fences
-- seq never expires, so fencing tokens never go backwards. Every other key expires with meta, at
-- least a minute after the last deadline set and at most twice the longest lease plus a minute
-- after the last writing call, so an idle semaphore disappears: a writing call that finds meta
-- expiring within the longest lease plus a minute pushes every key's expiry to twice the longest
-- lease plus a minute from now, and gives a key it creates meta's expiry.
--
-- Every writing function reads TIME and each key once (keeping what it read up to date in Lua, as
-- a command run from Lua costs far more than the Lua around it), removes at most `reap_limit` expired holders
-- and waiters (plus the caller's own id if it has expired), then serves the queue from its head while the
-- head fits (strict FIFO: the first waiter that does not fit stops it). Each grant takes INCR seq as its
-- fence and publishes "<id> <fence> <n>" on the semaphore's channel (fence and n are the last two words,
-- whatever the id holds). A waiter granted keeps its waiter deadline as its lease, which its last renewal
-- set. Ids are chosen by clients and unique, so every call is replayable: the same call again returns the
-- same state. The channel is not a key: the writing functions take it as their first argument, before those
-- listed below; the helpers of semaphore_script.hpp pass it.
--
-- Replies (flat arrays; <fence>, <n>, <position>, <used>, ... are integers):
--   acquire(id, n, capacity, lease_ms, wait|try)
--       granted <fence> <n> | queued <position> | busy (try only: queued waiters or no room;
--       nothing stored). An id already known returns its state, whatever the arguments.
--   renew(id, lease_ms)  holder: deadline moved, granted <fence> <n>; waiter: deadline moved,
--       queued <position>, or granted <fence> <n> if it was served; unknown or expired: lost
--       (nothing is created).
--   release(id)          released <n> (a holder) | cancelled (a waiter) | lost; then serves.
--   status(id)           granted <fence> <n> | queued <position> | lost. Read-only (FCALL_RO): an
--       entry whose deadline has passed says lost before a writing call removes it, and a waiter
--       that a writing call would serve still says queued.
--   usage()              usage <capacity> <held> <queued>: the declared capacity (0 if none yet),
--       the permits held and the waiters queued under live leases. Read-only (FCALL_RO).
--   check()              ok <used> <holders> <queued>, or the error ASIO_SYNC_INVARIANT <what>.
--       Read-only: used is the sum of the holders' n and at most the capacity, holder and waiter
--       tables agree, fences and arrivals are unique and at most seq, the queue's head does not
--       fit (or has expired), every key but seq expires, and none before a live deadline.
-- <position> counts from 1 (the head). Errors, with nothing changed:
--   ASIO_SYNC_CAPACITY <declared>        acquire declared another capacity than the semaphore's
--   ASIO_SYNC_TOO_MANY <n> > <capacity>  acquire asked for more permits than the capacity
--   ASIO_SYNC_ARGUMENT <what>            a malformed call (numbers are positive decimal integers
--                                        of at most 15 digits; a mode other than wait or try; an
--                                        empty argument; another count of keys or arguments)
--   WRONGTYPE ...                        Redis' own error: a key of the semaphore holds another type

-- BEGIN shared facts: written by scripts/generate-semaphore-library from its table; do not edit
local META, HOLDERS, HOLDER_INFO, QUEUE, WAITER_DEADLINES, WAITER_REQUESTS, SEQ = 1, 2, 3, 4, 5, 6, 7
local KEY_COUNT = 7
local REAP_LIMIT = 16
local FUNCTION_PREFIX = 'asio_sync_v1_'
local REPLY = {
    granted = 'granted',
    queued = 'queued',
    busy = 'busy',
    released = 'released',
    cancelled = 'cancelled',
    lost = 'lost',
    usage = 'usage',
    ok = 'ok',
}
local ERROR = {
    capacity = 'ASIO_SYNC_CAPACITY',
    too_many = 'ASIO_SYNC_TOO_MANY',
    argument = 'ASIO_SYNC_ARGUMENT',
    invariant = 'ASIO_SYNC_INVARIANT',
}
-- END shared facts
local idle_margin_ms = 60000

-- Lua's tostring drops digits from large numbers.
local function decimal(x)
    return string.format('%d', x)
end

-- A positive integer in decimal digits, small enough for Lua's doubles to hold exactly, or nil.
local function positive(arg)
    if type(arg) == 'string' and #arg <= 15 and string.match(arg, '^%d+$') then
        local value = tonumber(arg)
        if value >= 1 then
            return value
        end
    end
    return nil
end

local function argument_error(what)
    return redis.error_reply(ERROR.argument .. ' ' .. what)
end

-- Reads every key with a command of its type: a key of another type fails the call with Redis' own
-- WRONGTYPE error. The read-only functions probe; the writing ones load_state.
local function probe(keys)
    redis.call('HGET', keys[META], 'capacity')
    redis.call('ZCARD', keys[HOLDERS])
    redis.call('HLEN', keys[HOLDER_INFO])
    redis.call('ZCARD', keys[QUEUE])
    redis.call('ZCARD', keys[WAITER_DEADLINES])
    redis.call('HLEN', keys[WAITER_REQUESTS])
    redis.call('GET', keys[SEQ])
end

-- Registers a function that first checks the counts of keys and arguments and refuses an empty
-- argument.
local function register(name, arg_count, body, flags)
    local function checked(keys, args)
        if #keys ~= KEY_COUNT then
            return argument_error('expected ' .. KEY_COUNT .. ' keys')
        end
        if #args ~= arg_count then
            return argument_error('expected ' .. arg_count .. ' arguments')
        end
        for _, arg in ipairs(args) do
            if arg == '' then
                return argument_error('empty argument')
            end
        end
        return body(keys, args)
    end
    redis.register_function{function_name = FUNCTION_PREFIX .. name, callback = checked, flags = flags}
end

-- Server milliseconds, read once per call: on Redis 7.0 TIME moves during a script.
local function now_ms()
    local time = redis.call('TIME')
    return tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end

-- n and fence of a holder from its hinfo entry, or nil.
local function parse_holder_info(info)
    if not info then
        return nil
    end
    local n, fence = string.match(info, '^(%d+):(%d+)$')
    return tonumber(n), tonumber(fence)
end

-- The state a writing call works on, read before anything is written with one command of its type
-- per key (so that a key of another type fails the call with WRONGTYPE and changes nothing), each
-- read one the call needs. The call then keeps it up to date instead of reading keys again:
--   capacity, used, lease   meta's fields (used and lease 0 when absent), written back by store_state
--   holder                  the caller's hinfo entry, or false
--   request                 the caller's wreq entry (its n while it waits), or false
--   queued                  the queue's length
--   expired_holders, expired_waiters   the first entries past their deadlines, within REAP_LIMIT
--   budget                  how many more expired entries the call may remove
--   new_holders, new_waiters   whether the call created holders and hinfo, or queue, wdl and wreq
-- Every field is set by the constructor, which sizes the table once: a call spends more time in
-- Lua's allocator than in most of the commands it runs.
local function load_state(keys, id)
    local meta = redis.call('HMGET', keys[META], 'capacity', 'used', 'lease')
    local now = now_ms()
    local now_text = decimal(now)
    local expired_holders =
        redis.call('ZRANGEBYSCORE', keys[HOLDERS], '-inf', now_text, 'LIMIT', 0, REAP_LIMIT)
    local budget = REAP_LIMIT - #expired_holders
    local expired_waiters =
        redis.call('ZRANGEBYSCORE', keys[WAITER_DEADLINES], '-inf', now_text, 'LIMIT', 0, budget)
    local capacity, used, lease = tonumber(meta[1]), tonumber(meta[2]) or 0, tonumber(meta[3]) or 0
    local s = {
        keys = keys,
        id = id,
        now = now,
        capacity = capacity,
        used = used,
        lease = lease,
        stored_capacity = capacity,
        stored_used = used,
        stored_lease = lease,
        expired_holders = expired_holders,
        expired_waiters = expired_waiters,
        budget = budget - #expired_waiters,
        holder = redis.call('HGET', keys[HOLDER_INFO], id),
        queued = redis.call('ZCARD', keys[QUEUE]),
        request = redis.call('HGET', keys[WAITER_REQUESTS], id),
        new_holders = false,
        new_waiters = false,
    }
    redis.call('GET', keys[SEQ])
    return s
end

local function remove_holder(s, id)
    local info = s.holder
    if id ~= s.id then
        info = redis.call('HGET', s.keys[HOLDER_INFO], id)
    end
    local n = parse_holder_info(info)
    if not n then
        return nil
    end
    redis.call('ZREM', s.keys[HOLDERS], id)
    redis.call('HDEL', s.keys[HOLDER_INFO], id)
    s.used = s.used - n
    if id == s.id then
        s.holder = false
    end
    return n
end

local function remove_waiter(s, id)
    s.queued = s.queued - redis.call('ZREM', s.keys[QUEUE], id)
    redis.call('ZREM', s.keys[WAITER_DEADLINES], id)
    redis.call('HDEL', s.keys[WAITER_REQUESTS], id)
    if id == s.id then
        s.request = false
    end
end

-- Whether the caller's deadline in the zset deadlines (holders or wdl) has passed.
local function caller_expired(s, deadlines)
    local deadline = redis.call('ZSCORE', s.keys[deadlines], s.id)
    return deadline and tonumber(deadline) <= s.now
end

-- Removes the expired entries load_state found, holders first (they free permits); then the caller's
-- own entry, if expired, whatever the reaping reached: an expired lease is never renewed, released
-- or replayed.
local function reap(s)
    for _, id in ipairs(s.expired_holders) do
        remove_holder(s, id)
    end
    for _, id in ipairs(s.expired_waiters) do
        remove_waiter(s, id)
    end
    if s.holder and caller_expired(s, HOLDERS) then
        remove_holder(s, s.id)
    end
    if s.request and caller_expired(s, WAITER_DEADLINES) then
        remove_waiter(s, s.id)
    end
end

-- A key that does not exist yet is created by the call's first write to it; holders and hinfo
-- exist exactly while permits are used.
local function grant(s, channel, id, n, deadline)
    local keys = s.keys
    local fence = redis.call('INCR', keys[SEQ])
    if s.used == 0 then
        s.new_holders = true
    end
    local n_text, fence_text = decimal(n), decimal(fence)
    local info = n_text .. ':' .. fence_text
    redis.call('ZADD', keys[HOLDERS], decimal(deadline), id)
    redis.call('HSET', keys[HOLDER_INFO], id, info)
    s.used = s.used + n
    redis.call('PUBLISH', channel, id .. ' ' .. fence_text .. ' ' .. n_text)
    if id == s.id then
        s.holder = info
    end
    return fence
end

local function enqueue(s, n, deadline)
    local keys = s.keys
    if s.queued == 0 then
        s.new_waiters = true
    end
    redis.call('ZADD', keys[QUEUE], decimal(redis.call('INCR', keys[SEQ])), s.id)
    redis.call('ZADD', keys[WAITER_DEADLINES], decimal(deadline), s.id)
    redis.call('HSET', keys[WAITER_REQUESTS], s.id, decimal(n))
    s.queued = s.queued + 1
    s.request = decimal(n)
end

-- Grants the queue from its head while the head fits; an expired head is removed within the
-- reaping budget.
local function serve(s, channel)
    if not s.capacity then
        return
    end
    local keys = s.keys
    while s.queued > 0 do
        local head = redis.call('ZRANGE', keys[QUEUE], 0, 0)[1]
        local deadline = tonumber(redis.call('ZSCORE', keys[WAITER_DEADLINES], head))
        if deadline <= s.now then
            if s.budget == 0 then
                return
            end
            s.budget = s.budget - 1
            remove_waiter(s, head)
        else
            local n = tonumber(redis.call('HGET', keys[WAITER_REQUESTS], head))
            if s.used + n > s.capacity then
                return
            end
            remove_waiter(s, head)
            grant(s, channel, head, n, deadline)
        end
    end
end

local function state(s)
    local n, fence = parse_holder_info(s.holder)
    if n then
        return {REPLY.granted, fence, n}
    end
    local rank = s.request and redis.call('ZRANK', s.keys[QUEUE], s.id)
    return rank and {REPLY.queued, rank + 1}
end

local function note_lease(s, lease)
    if lease > s.lease then
        s.lease = lease
    end
end

local function declare(s, capacity, lease)
    s.capacity = capacity
    note_lease(s, lease)
end

-- Writes back meta's fields that changed (mostly used alone), then keeps every key but seq alive
-- beyond every live deadline, while an idle semaphore disappears. All of them expire with meta:
-- when meta expires sooner than the longest lease plus idle_margin_ms from now, every key is given
-- twice the longest lease plus idle_margin_ms; otherwise only the keys this call created are given
-- meta's expiry. So the keys outlive any deadline set now by at least idle_margin_ms, and most
-- calls refresh no expiry at all.
local function store_state(s)
    local keys = s.keys
    if s.capacity ~= s.stored_capacity or s.lease ~= s.stored_lease then
        local fields = {'used', decimal(s.used), 'lease', decimal(s.lease)}
        if s.capacity then
            fields[5], fields[6] = 'capacity', decimal(s.capacity)
        end
        redis.call('HSET', keys[META], unpack(fields))
    elseif s.used ~= s.stored_used then
        redis.call('HSET', keys[META], 'used', decimal(s.used))
    end
    if s.lease == 0 then
        return
    end
    local expiry = redis.call('PEXPIRETIME', keys[META])
    if expiry < s.now + s.lease + idle_margin_ms then
        local at = decimal(s.now + 2 * s.lease + idle_margin_ms)
        for key = META, WAITER_REQUESTS do
            redis.call('PEXPIREAT', keys[key], at)
        end
        return
    end
    local at = decimal(expiry)
    if s.new_holders then
        redis.call('PEXPIREAT', keys[HOLDERS], at)
        redis.call('PEXPIREAT', keys[HOLDER_INFO], at)
    end
    if s.new_waiters then
        redis.call('PEXPIREAT', keys[QUEUE], at)
        redis.call('PEXPIREAT', keys[WAITER_DEADLINES], at)
        redis.call('PEXPIREAT', keys[WAITER_REQUESTS], at)
    end
end

local function acquire(keys, args)
    local channel, id, mode = args[1], args[2], args[6]
    local s = load_state(keys, id)
    local n, capacity, lease = positive(args[3]), positive(args[4]), positive(args[5])
    if not (n and capacity and lease) then
        return argument_error('n, capacity and lease_ms must be positive integers')
    end
    if mode ~= 'wait' and mode ~= 'try' then
        return argument_error('mode must be wait or try')
    end
    if s.capacity and s.capacity ~= capacity then
        return redis.error_reply(ERROR.capacity .. ' ' .. decimal(s.capacity))
    end
    if n > capacity then
        return redis.error_reply(ERROR.too_many .. ' ' .. decimal(n) .. ' > ' .. decimal(capacity))
    end

    reap(s)
    serve(s, channel)
    local reply = state(s)
    if not reply then
        if s.queued == 0 and s.used + n <= capacity then
            declare(s, capacity, lease)
            reply = {REPLY.granted, grant(s, channel, id, n, s.now + lease), n}
        elseif mode == 'try' then
            reply = {REPLY.busy}
        else
            declare(s, capacity, lease)
            enqueue(s, n, s.now + lease)
            reply = {REPLY.queued, s.queued}
        end
    end
    store_state(s)
    return reply
end

local function renew(keys, args)
    local channel, id = args[1], args[2]
    local s = load_state(keys, id)
    local lease = positive(args[3])
    if not lease then
        return argument_error('lease_ms must be a positive integer')
    end
    reap(s)
    serve(s, channel)
    local deadline = decimal(s.now + lease)
    if s.holder then
        redis.call('ZADD', keys[HOLDERS], 'XX', deadline, id)
    elseif s.request then
        redis.call('ZADD', keys[WAITER_DEADLINES], 'XX', deadline, id)
    else
        store_state(s)
        return {REPLY.lost}
    end
    note_lease(s, lease)
    store_state(s)
    return state(s)
end

local function release(keys, args)
    local channel, id = args[1], args[2]
    local s = load_state(keys, id)
    reap(s)
    local reply = {REPLY.lost}
    local n = remove_holder(s, id)
    if n then
        reply = {REPLY.released, n}
    elseif s.request then
        remove_waiter(s, id)
        reply = {REPLY.cancelled}
    end
    serve(s, channel)
    store_state(s)
    return reply
end

local function status(keys, args)
    local id = args[1]
    probe(keys)
    local deadline =
        redis.call('ZSCORE', keys[HOLDERS], id) or redis.call('ZSCORE', keys[WAITER_DEADLINES], id)
    if deadline and tonumber(deadline) > now_ms() then
        local n, fence = parse_holder_info(redis.call('HGET', keys[HOLDER_INFO], id))
        if n then
            return {REPLY.granted, fence, n}
        end
        local rank = redis.call('ZRANK', keys[QUEUE], id)
        return rank and {REPLY.queued, rank + 1}
    end
    return {REPLY.lost}
end

local function check(keys, _)
    local function broken(what)
        return redis.error_reply(ERROR.invariant .. ' ' .. what)
    end
    probe(keys)
    local now = now_ms()
    local capacity = tonumber(redis.call('HGET', keys[META], 'capacity'))
    local used = tonumber(redis.call('HGET', keys[META], 'used')) or 0
    local seq = tonumber(redis.call('GET', keys[SEQ])) or 0
    local holders = redis.call('ZRANGE', keys[HOLDERS], 0, -1, 'WITHSCORES')
    local waiters = redis.call('ZRANGE', keys[QUEUE], 0, -1, 'WITHSCORES')
    local holder_count, waiter_count = #holders / 2, #waiters / 2
    if redis.call('HLEN', keys[HOLDER_INFO]) ~= holder_count then
        return broken('holders and hinfo differ')
    end
    if redis.call('ZCARD', keys[WAITER_DEADLINES]) ~= waiter_count or
        redis.call('HLEN', keys[WAITER_REQUESTS]) ~= waiter_count then
        return broken('queue, wdl and wreq differ')
    end
    if not capacity then
        if holder_count + waiter_count > 0 or used ~= 0 then
            return broken('state without a declared capacity')
        end
        capacity = 0
    end

    local sum, last_deadline, fences = 0, 0, {}
    for i = 1, #holders, 2 do
        local n, fence = parse_holder_info(redis.call('HGET', keys[HOLDER_INFO], holders[i]))
        if not n then
            return broken('a holder without hinfo')
        end
        if n < 1 or n > capacity then
            return broken('a holder n out of range')
        end
        if fence > seq or fences[fence] then
            return broken('a fence repeated or beyond seq')
        end
        fences[fence] = true
        sum = sum + n
        last_deadline = math.max(last_deadline, tonumber(holders[i + 1]))
    end
    if sum ~= used then
        return broken('used is not the sum of the holders')
    end
    if used > capacity then
        return broken('used exceeds the capacity')
    end

    local last_arrival = 0
    for i = 1, #waiters, 2 do
        local id, arrival = waiters[i], tonumber(waiters[i + 1])
        local deadline = tonumber(redis.call('ZSCORE', keys[WAITER_DEADLINES], id))
        local n = tonumber(redis.call('HGET', keys[WAITER_REQUESTS], id))
        if not (deadline and n) then
            return broken('a queued waiter without wdl or wreq')
        end
        if n < 1 or n > capacity then
            return broken('a waiter n out of range')
        end
        if redis.call('ZSCORE', keys[HOLDERS], id) then
            return broken('a waiter is also a holder')
        end
        if arrival <= last_arrival or arrival > seq then
            return broken('an arrival repeated or beyond seq')
        end
        if i == 1 and deadline > now and used + n <= capacity then
            return broken('the head fits but waits')
        end
        last_arrival = arrival
        last_deadline = math.max(last_deadline, deadline)
    end

    for key = META, WAITER_REQUESTS do
        local ttl = redis.call('PTTL', keys[key])
        if ttl == -1 then
            return broken('a key without expiry')
        end
        if ttl >= 0 and now + ttl < last_deadline then
            return broken('a key expires before a live deadline')
        end
    end
    if redis.call('PTTL', keys[SEQ]) >= 0 then
        return broken('seq expires')
    end
    return {REPLY.ok, used, holder_count, waiter_count}
end

register('acquire', 6, acquire, {})
register('renew', 3, renew, {})
register('release', 2, release, {})
register('status', 1, status, {'no-writes'})
register('check', 0, check, {'no-writes'})

-- Read-only: the declared capacity (0 before the first acquire), the permits held and the waiters
-- queued, both under leases that have not yet lapsed.
local function usage(keys, _)
    local now = '(' .. decimal(now_ms())
    local held = 0
    for _, id in ipairs(redis.call('ZRANGEBYSCORE', keys[HOLDERS], now, '+inf')) do
        held = held + (parse_holder_info(redis.call('HGET', keys[HOLDER_INFO], id)) or 0)
    end
    local capacity = tonumber(redis.call('HGET', keys[META], 'capacity')) or 0
    return {REPLY.usage, capacity, held, redis.call('ZCOUNT', keys[WAITER_DEADLINES], now, '+inf')}
end

register('usage', 0, usage, {'no-writes'})
