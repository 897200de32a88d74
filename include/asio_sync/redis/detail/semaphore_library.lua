#!lua name=asio_sync_v4

-- The server side of the fleet-wide semaphore (asio_sync::redis::basic_semaphore): a Redis 7
-- function library. scripts/generate-semaphore-library writes it into semaphore_library.hpp, with
-- the facts both sides share (the block below), and copies into it the helpers it shares with the
-- fenced writes' library (lua_helpers.lua). FUNCTION LOAD REPLACE makes loading it idempotent;
-- functions persist across restarts and replicate.
--
-- State of a semaphore named S (every key carries the hash tag {S}, so one cluster slot holds all):
--   meta       hash: epoch, seq, capacity, used, holders, waiters, lease, horizon, quiet, stamp, calm,
--              version (below), and for each id a field '#<id>': '<n>:<fence>' for a holder, '<n>'
--              for a waiter
--   deadlines  zset: id -> lease deadline (server ms), holders and waiters alike
--   queue      zset: waiter id -> ticket
--   horizon    string: no deadline of a live lease is later than it (server ms)
--   capacity   string: '<capacity> <stamp> <id>' of the last resize, or '-' (never resized)
-- deadlines and queue also hold a placeholder, the member '' (never an id) scored +inf, so that they
-- exist while empty: the five keys are made together by the first call that stores anything, and
-- never expire.
-- meta's fields: epoch is the first fence of the current state (it exists exactly while meta
-- does); seq the last fence, ticket or stamp handed out; capacity the capacity in force; used the
-- permits held, holders and waiters the entries; lease the longest lease seen (ms); horizon a copy
-- of the horizon key; quiet the server time before which nothing is granted (0: none); stamp the
-- token of the resize in force (absent or 0: the capacity was declared, never resized); calm the
-- stamp of the latest resize under which the permits held came down to its capacity (equal to
-- stamp unless a shrink is pending); version '4', written by the call that made the state or took
-- it over from version 3 (whose keys expired while idle: that call removes their expiries).
--
-- Capacity. The first acquire of a semaphore without state declares its capacity, unless the
-- capacity key holds one: a resize outlives lost state, so that it never reverts to a declared
-- capacity. An acquire with another capacity than the one in force is refused
-- (ASIO_SYNC_CAPACITY, with the capacity and stamp in force, so that a client can tell a resize it
-- missed from a wrong configuration). resize stores a capacity (last writer wins) under a new stamp:
-- it removes from the queue every waiter that asks for more, serves the queue (a larger capacity
-- grants at once), and never takes permits from a holder: while the permits held exceed a smaller
-- capacity a shrink is pending, and nothing is granted until they fit. The call that brings them
-- down to it (a release, an expiry, lost state) records calm = stamp and publishes 'settled'.
--
-- Fences and tickets are max(seq + 1, server time in microseconds): they grow strictly, and a
-- state started afresh (its meta lost, or the server restarted without its data) still hands out
-- tokens above every earlier one, as long as the server's clock does not step back.
--
-- Lost state. A writing call checks what it reads against meta's counts: meta gone while the
-- horizon is still ahead or other keys remain, deadlines gone while entries exist, queue gone while
-- waiters exist, an entry without its field, a field without its entry. Any of those (eviction, a
-- DEL, a flush of part of the data) is lost state: the call deletes meta, deadlines and queue,
-- starts afresh (a new epoch; the capacity of the capacity key, else kept if meta still told it; a
-- pending shrink settles, as nobody holds anything) and grants nothing until the latest deadline
-- that any lost lease can have (the horizon, or the longest lease from now):
-- every holder of the lost state has by then learnt its loss from its renewal (state_lost, as its
-- fence is older than the new epoch) or from its own lease deadline.
--
-- The horizon. A writing call that could set a deadline later than the horizon (now + the longest
-- lease) moves it to now + twice the longest lease.
--
-- Why the keys never expire, and all exist or none: a call names all five, and while its hash slot
-- migrates between the nodes of a Redis Cluster, Redis refuses (TRYAGAIN) a call naming several
-- keys unless one node holds them all. Keys that exist in some states and not in others (a queue
-- while nobody waits, a capacity never resized, a state expired while idle) would be missing on
-- both nodes and refused for the whole migration. So every writing call of the general path makes
-- again a key that is missing (deleted by hand, or never made by version 3), the fast acquire
-- writes the placeholder of deadlines with its entry and leaves any other missing key to the
-- general path. With the five keys always together, the call runs on the node that holds them (the
-- target after ASK once they moved); only a semaphore's very first call, before any key exists,
-- waits for the end of its slot's migration. The price: about 700 bytes of Redis memory per
-- semaphore name, for as long as the data lasts.
--
-- Every writing call reads TIME at most once (it moves during a script on 7.0), reads before it
-- writes (so a key of another type fails it with WRONGTYPE before anything changed) and writes at the
-- end, each key once where it can. It removes at most REAP_LIMIT expired entries (plus the caller's
-- own, if expired: an expired lease is never renewed or replayed), then serves the queue from its
-- head while the head fits (strict FIFO: the first waiter that does not fit stops it). A waiter
-- granted keeps its waiter deadline as its lease and is published on the semaphore's channel; a
-- grant made to the caller itself is answered, not published. Ids are chosen by clients and unique,
-- so every call is replayable. The channel is not a key: the writing functions take it as their
-- first argument. Messages (the first word says which; an id is the rest of the message, whatever
-- it holds):
--   granted <fence> <n> <id>            a waiter was granted
--   resized <capacity> <stamp> <calm>   a resize was stored
--   settled <capacity> <stamp>          the permits held came down to the capacity of that resize
--
-- Calls and replies (flat arrays; numbers are integers; <left> is the lease time left on the
-- server, in ms, so that a client dating it from when it sent the call never outlives the server's
-- deadline):
--   acquire(id, n, capacity, lease_ms, wait|try)
--       granted <fence> <n> <left> | queued <position> <left> | busy (try only: someone queued, no
--       room, or a quiet period; nothing stored). An id already known returns its state, whatever
--       the arguments. `capacity` must be the one in force (it declares it if none is).
--   renew(id, lease_ms, fence)  (fence 0 for a waiter) deadline moved to now + lease_ms; holder:
--       granted <fence> <n> <left>; waiter: queued <position> <left>, or granted if it was served.
--       Unknown or expired: lost, or state_lost when the caller's fence is older than the epoch
--       (its state was lost); nothing is created.
--   release(id, fence)  released <n> (a holder) | cancelled (a waiter) | lost | state_lost; then
--       serves. An unknown id changes nothing.
--   resize(id, capacity, base)  resized <capacity> <stamp> <calm> | conflict <capacity> <stamp>.
--       Stores `capacity` under a new stamp if the stamp in force is `base` (0 when never resized),
--       else changes nothing and answers conflict with the capacity and stamp in force, so that a
--       client whose reply was lost can tell a resize that ran (the capacity key names its id: it
--       answers resized) from one that did not (the stamp is still its base), and one that cannot
--       tell from either. A shrink is pending while calm < stamp.
--   status(id)  granted <fence> <n> | queued <position> | lost. Read-only: an entry whose deadline
--       has passed says lost before a writing call removes it.
--   usage()  usage <capacity> <held> <queued> <stamp> <calm> <clock>: the capacity in force (0 if
--       none yet), the permits held and the waiters queued under live leases, the stamp and calm of
--       the capacity, and a token below every stamp a later resize will take. Read-only.
--   watch()  wake <ms> | idle: the time until the earliest deadline or the end of a quiet period,
--       when a writing call may serve the queue; idle when there is neither. Read-only.
--   check()  ok <used> <holders> <waiters>, or the error ASIO_SYNC_INVARIANT <what>. Read-only:
--       the counts in meta match the keys, used is the sum of the holders' n, and at most the
--       capacity unless a shrink is pending (calm < stamp, exactly while it exceeds it), the holders
--       granted since the resize in force (fence above its stamp) hold at most the capacity, no
--       waiter asks for more, every entry has its field and its deadline, fences and tickets are
--       unique, above the epoch and at most seq, the queue's head does not fit (unless expired or
--       quiet), no deadline is beyond the horizon, the five keys exist together (each zset with its
--       placeholder) and none expires, and the capacity key agrees with meta's capacity and stamp.
-- <position> counts from 1 (the head). Errors, with nothing changed:
--   ASIO_SYNC_CAPACITY <capacity> <stamp>  acquire declared another capacity than the one in force
--   ASIO_SYNC_TOO_MANY <n> > <capacity>    acquire asked for more permits than the capacity in force
--   ASIO_SYNC_ARGUMENT <what>              a malformed call (numbers are decimal integers below
--                                          2^53, positive but for a fence or a base; a capacity
--                                          above MAX_CAPACITY; a mode other than wait or try; an
--                                          empty argument; another count of keys or arguments)
--   WRONGTYPE ...                          Redis' own error: a key of the semaphore holds another
--                                          type

-- BEGIN shared facts: written by scripts/generate-semaphore-library from its table; do not edit
local META, DEADLINES, QUEUE, HORIZON, CAPACITY = 1, 2, 3, 4, 5
local KEY_COUNT = 5
local REAP_LIMIT = 16
local MAX_CAPACITY = 4503599627370496
local FUNCTION_PREFIX = 'asio_sync_v4_'
local REPLY = {
    granted = 'granted',
    queued = 'queued',
    busy = 'busy',
    released = 'released',
    cancelled = 'cancelled',
    lost = 'lost',
    state_lost = 'state_lost',
    resized = 'resized',
    conflict = 'conflict',
    settled = 'settled',
    usage = 'usage',
    wake = 'wake',
    idle = 'idle',
    ok = 'ok',
}
local ERROR = {
    capacity = 'ASIO_SYNC_CAPACITY',
    too_many = 'ASIO_SYNC_TOO_MANY',
    argument = 'ASIO_SYNC_ARGUMENT',
    invariant = 'ASIO_SYNC_INVARIANT',
}
-- END shared facts

local INFO = '#' -- the prefix of an id's field in meta
local PLACEHOLDER = '' -- the member that keeps deadlines and queue in existence
local NEVER_RESIZED = '-' -- the capacity key of a semaphore never resized
local VERSION = '4' -- meta's field `version`: the keys of this state are kept as this version keeps them
local CHUNK = 1000 -- elements passed to one command at most (Lua's unpack has a limit)

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
        for i = 1, arg_count do
            if args[i] == '' then
                return argument_error('empty argument')
            end
        end
        return body(keys, args)
    end
    redis.register_function{function_name = FUNCTION_PREFIX .. name, callback = checked, flags = flags}
end

-- n and fence of an id's field; fence is nil for a waiter.
local function parse_info(info)
    local colon = string.find(info, ':', 1, true)
    if colon then
        return tonumber(string.sub(info, 1, colon - 1)), tonumber(string.sub(info, colon + 1))
    end
    return tonumber(info), nil
end

-- BEGIN server clock: the tests of the library replace this function, never a client
-- The server's clock, in seconds and microseconds.
local function server_time()
    local time = redis.call('TIME')
    return tonumber(time[1]), tonumber(time[2])
end
-- END server clock

-- The members of a zset's range without the placeholder.
local function without_placeholder(members)
    if members[#members] == PLACEHOLDER then
        members[#members] = nil
    end
    return members
end

-- Server milliseconds and microseconds, read once per call.
local function read_clock(s)
    if not s.now then
        local seconds, micros = server_time()
        s.now = seconds * 1000 + math.floor(micros / 1000)
        s.now_us = seconds * 1000000 + micros
    end
    return s.now
end

local function next_token(s)
    read_clock(s)
    local token = math.max(s.seq + 1, s.now_us)
    s.seq = token
    return token
end

-- The fields of meta that load_state reads, in order, then the caller's own field.
local SCALARS = {'epoch', 'seq', 'capacity', 'used', 'holders', 'waiters', 'lease', 'horizon', 'quiet',
                 'stamp', 'calm'}

-- The state of the call being run (Redis runs one function at a time), in one table that every
-- call resets rather than allocates: a call spends more time converting and allocating in Lua than
-- in most commands it runs, so each number is parsed once, and the epoch (a string here) only where a
-- reply needs it. It holds meta's fields as numbers (absent ones nil, the counts, stamp and calm 0),
-- as read (read_*, to write back only what changed) and as the call changes them; the caller's field
-- (info, or nil); the caller's lease (call_lease, 0 for a release or a resize); and:
--   now, now_us        the server's clock, once read_clock has read it
--   absent             no meta, and nothing lost: nothing to write unless acquire declares
--   lost_unknown       no meta, lost, but the call knows no lease to wait for (a release, a resize)
--   reset              the call found lost state and starts afresh
--   heads, scanned     waiters of the queue from its head as read, and how many were read
--   gone               the ids the call removed or served (id -> true)
--   deadline           the caller's deadline, once known
--   durable            the capacity key as read ({capacity, stamp, id}), false if absent, nil if unread
--   resized            a resize: it publishes 'resized', not 'settled', and writes the capacity key
--   queue_removed, queue_added, deadlines_removed, deadlines_added, fields_removed, fields_set,
--   messages           the writes, in the order store_state applies them
local STATE = {}

local function new_state(keys, id, call_lease, m)
    local seq, capacity, used, holders = tonumber(m[2]), tonumber(m[3]), tonumber(m[4]), tonumber(m[5])
    local waiters, lease, horizon, quiet = tonumber(m[6]), tonumber(m[7]), tonumber(m[8]), tonumber(m[9])
    local stamp, calm = tonumber(m[10]) or 0, tonumber(m[11]) or 0
    local s = STATE
    s.keys, s.id, s.call_lease, s.info, s.channel = keys, id, call_lease, m[12], nil
    s.epoch, s.seq, s.capacity, s.used, s.holders = m[1], seq or 0, capacity, used or 0, holders or 0
    s.waiters, s.lease, s.horizon, s.quiet = waiters or 0, lease or 0, horizon, quiet or 0
    s.budget = REAP_LIMIT
    s.read_seq, s.read_capacity, s.read_used, s.read_holders = seq, capacity, used, holders
    s.read_waiters, s.read_lease, s.read_horizon, s.read_quiet = waiters, lease, horizon, quiet
    s.stamp, s.calm, s.read_stamp, s.read_calm = stamp, calm, stamp, calm
    s.read_version = m[13]
    s.now, s.now_us, s.absent, s.reset, s.heads, s.scanned = nil, nil, nil, nil, nil, 0
    s.lost_unknown = nil
    s.gone, s.deadline, s.durable, s.resized = nil, nil, nil, nil
    s.queue_removed, s.queue_added, s.deadlines_removed, s.deadlines_added = nil, nil, nil, nil
    s.fields_removed, s.fields_set, s.messages = nil, nil, nil
    return s
end

-- Appends one value, or two, to the list `name` of s, made if needed.
local function push(s, name, a, b)
    local list = s[name]
    if not list then
        list = {}
        s[name] = list
    end
    list[#list + 1] = a
    if b then
        list[#list + 1] = b
    end
end

local function is_gone(s, id)
    return s.gone and s.gone[id]
end

local function mark_gone(s, id)
    if not s.gone then
        s.gone = {}
    end
    s.gone[id] = true
end

-- The capacity key: {capacity, stamp, id} of the last resize, or false; read once per call.
local function read_durable(s)
    if s.durable == nil then
        local value = redis.call('GET', s.keys[CAPACITY])
        s.durable = false
        if value then
            local capacity, stamp, id = string.match(value, '^(%d+) (%d+) (.+)$')
            s.durable = capacity and {tonumber(capacity), tonumber(stamp), id} or false
        end
    end
    return s.durable
end

-- Takes the capacity of the capacity key, if any, for a state that meta does not tell (a new one, or
-- one started afresh): a resize outlives the state.
local function take_durable(s)
    local durable = read_durable(s)
    if durable then
        s.capacity, s.stamp, s.calm = durable[1], durable[2], durable[2]
        s.seq = math.max(s.seq, durable[2])
    end
end

-- Starts afresh (store_state deletes the old state first): nothing is granted until every lease
-- the old state may have held has lapsed. The bound is the least of the horizon and now + the
-- longest lease, when known; else the caller's lease (with meta lost, the longest lease of the
-- fleet is not known here).
local function start_afresh(s)
    read_clock(s)
    local quiet = s.now + s.call_lease
    if s.read_lease or s.horizon then
        quiet = math.min(s.horizon or math.huge, s.read_lease and s.now + s.read_lease or math.huge)
    end
    take_durable(s)
    s.calm = 0 -- nobody holds anything any more: store_state settles a resized capacity
    s.epoch = next_token(s)
    s.used, s.holders, s.waiters = 0, 0, 0
    s.lease = math.max(s.lease, s.call_lease)
    s.quiet = math.max(quiet, s.now)
    s.info, s.heads, s.deadline, s.gone = nil, nil, nil, nil
    s.absent, s.reset = nil, true
    s.read_seq, s.read_capacity, s.read_used, s.read_holders, s.read_waiters = nil, nil, nil, nil, nil
    s.read_lease, s.read_horizon, s.read_quiet, s.read_stamp, s.read_calm = nil, nil, nil, nil, nil
    s.read_version = nil
    s.queue_removed, s.queue_added, s.deadlines_removed, s.deadlines_added = nil, nil, nil, nil
    s.fields_removed, s.fields_set, s.messages = nil, nil, nil
end

-- meta's fields in the order of SCALARS, then the caller's own field, then the version.
local function read_meta(keys, id)
    return redis.call('HMGET', keys[META], 'epoch', 'seq', 'capacity', 'used', 'holders', 'waiters', 'lease',
                      'horizon', 'quiet', 'stamp', 'calm', INFO .. id, 'version')
end

-- Checks the other keys against meta's fields `m` where the call needs them: a writing call, with
-- the caller's id and lease (0 for a release), and the server's clock if the call read it. Detects
-- lost state and starts afresh.
local function load_state(keys, id, call_lease, m, now, now_us)
    local s = new_state(keys, id, call_lease, m)
    s.now, s.now_us = now, now_us -- the clock, if the call read it already
    if not s.epoch then
        for i = 2, 12 do
            if m[i] then
                start_afresh(s) -- part of meta: not what this library writes
                return s
            end
        end
        -- meta is gone: lost, if a lease may still be live or other keys remain. A release, which
        -- knows no lease, leaves it to the next acquire or renewal.
        s.horizon = tonumber(redis.call('GET', keys[HORIZON]))
        -- (ZCARD, not EXISTS: a key of another type fails the call rather than count as lost state)
        local lost = (s.horizon and s.horizon > read_clock(s)) or
                         redis.call('ZCARD', keys[DEADLINES]) + redis.call('ZCARD', keys[QUEUE]) > 0
        if lost and call_lease > 0 then
            start_afresh(s)
        else
            s.absent, s.lost_unknown = true, lost
            take_durable(s)
        end
        return s
    end
    if not (s.read_seq and s.read_used and s.read_holders and s.read_waiters and s.read_lease and
            s.horizon) then
        start_afresh(s)
        return s
    end
    if s.waiters > 0 then
        s.heads = redis.call('ZRANGE', keys[QUEUE], 0, REAP_LIMIT - 1)
        s.scanned = #s.heads
        without_placeholder(s.heads)
        if #s.heads == 0 then
            start_afresh(s)
        end
    end
    return s
end

-- Declares meta, for an acquire on a semaphore without state; the capacity key's, if any, was taken
-- by load_state.
local function declare(s, capacity, lease)
    if s.absent then
        s.absent = nil
        s.epoch = next_token(s)
        s.used, s.holders, s.waiters = 0, 0, 0
    end
    s.capacity = s.capacity or capacity
    s.lease = math.max(s.lease, lease)
end

local function remove_entry(s, id, info)
    local n, fence = parse_info(info)
    mark_gone(s, id)
    push(s, 'deadlines_removed', id)
    push(s, 'fields_removed', INFO .. id)
    if fence then
        s.used = s.used - n
        s.holders = s.holders - 1
    else
        push(s, 'queue_removed', id)
        s.waiters = s.waiters - 1
    end
    if id == s.id then
        s.info, s.deadline = nil, nil
    end
end

-- Removes expired entries, the caller's own whatever the limit. Needs the earliest deadline, which
-- also proves that deadlines exists while meta counts entries.
local function reap(s)
    if s.reset or s.holders + s.waiters == 0 then
        return
    end
    local keys = s.keys
    local first = redis.call('ZRANGE', keys[DEADLINES], 0, 0, 'WITHSCORES')
    if #first == 0 or first[1] == PLACEHOLDER then
        return start_afresh(s)
    end
    local now = read_clock(s)
    if tonumber(first[2]) > now then
        return
    end
    local expired =
        redis.call('ZRANGEBYSCORE', keys[DEADLINES], '-inf', now, 'LIMIT', 0, REAP_LIMIT)
    local own = false
    local pending = {}
    for i = 1, #expired do
        own = own or expired[i] == s.id
        if not is_gone(s, expired[i]) then
            pending[#pending + 1] = expired[i]
        end
    end
    expired = pending
    if s.info and not own then
        local deadline = redis.call('ZSCORE', keys[DEADLINES], s.id)
        if not deadline then
            return start_afresh(s)
        end
        s.deadline = tonumber(deadline)
        if s.deadline <= now then
            expired[#expired + 1] = s.id
        end
    end
    if #expired == 0 then
        return
    end
    local fields = {}
    for i = 1, #expired do
        fields[i] = INFO .. expired[i]
    end
    local infos = redis.call('HMGET', keys[META], unpack(fields))
    for i = 1, #expired do
        if not infos[i] then
            return start_afresh(s)
        end
    end
    for i = 1, #expired do
        remove_entry(s, expired[i], infos[i])
    end
    s.budget = REAP_LIMIT - #expired
end

local function quiet(s)
    return s.quiet > 0 and s.quiet > read_clock(s)
end

-- A grant: the next fence, the field written, and the counts.
local function grant(s, id, n)
    local fence = next_token(s)
    local info = n .. ':' .. decimal(fence)
    push(s, 'fields_set', INFO .. id, info)
    s.used = s.used + n
    s.holders = s.holders + 1
    if id == s.id then
        s.info = info
    end
    return fence
end

-- Serves the queue from its head while the head fits; an expired head is removed within the
-- reaping budget. The heads were read by load_state (which also proves that queue exists).
local function serve(s)
    if s.reset or s.waiters == 0 or not s.capacity or quiet(s) then
        return
    end
    local keys, now = s.keys, read_clock(s)
    while s.waiters > 0 do
        local ids = {}
        for i = 1, #s.heads do
            if not is_gone(s, s.heads[i]) then
                ids[#ids + 1] = s.heads[i]
            end
        end
        if #ids == 0 then
            -- every waiter read was served or removed: read further
            s.heads = redis.call('ZRANGE', keys[QUEUE], s.scanned, s.scanned + REAP_LIMIT - 1)
            s.scanned = s.scanned + #s.heads
            without_placeholder(s.heads)
            for i = 1, #s.heads do
                if not is_gone(s, s.heads[i]) then
                    ids[#ids + 1] = s.heads[i]
                end
            end
            if #ids == 0 then
                return start_afresh(s)
            end
        end
        local fields = {}
        for i = 1, #ids do
            fields[i] = INFO .. ids[i]
        end
        local infos = redis.call('HMGET', keys[META], unpack(fields))
        local deadlines = redis.call('ZMSCORE', keys[DEADLINES], unpack(ids))
        for i = 1, #ids do
            local id, info, deadline = ids[i], infos[i], tonumber(deadlines[i])
            if not (info and deadline) or string.find(info, ':', 1, true) then
                return start_afresh(s) -- a waiter without its field or deadline, or a holder queued
            end
            if deadline <= now then
                if s.budget == 0 then
                    return
                end
                s.budget = s.budget - 1
                remove_entry(s, id, info)
            else
                local n = tonumber(info)
                if s.used + n > s.capacity then
                    return
                end
                mark_gone(s, id)
                push(s, 'queue_removed', id)
                s.waiters = s.waiters - 1
                local fence = grant(s, id, n)
                push(s, 'messages', REPLY.granted .. ' ' .. decimal(fence) .. ' ' .. n .. ' ' .. id)
                if id == s.id then
                    s.deadline = s.deadline or deadline
                end
            end
            if s.waiters == 0 then
                return
            end
        end
    end
end

-- Moves the horizon and every expiry when a deadline set now could pass the horizon (see the top).
local function extend(s)
    local keys = s.keys
    local now = read_clock(s)
    if s.horizon and s.horizon >= now + s.lease then
        return
    end
    s.horizon = now + 2 * s.lease
    redis.call('SET', keys[HORIZON], s.horizon)
end

local function write_queue(s)
    if s.queue_removed then
        redis.call('ZREM', s.keys[QUEUE], unpack(s.queue_removed))
    end
    if s.queue_added then
        redis.call('ZADD', s.keys[QUEUE], unpack(s.queue_added))
    end
end

local function write_deadlines(s)
    if s.deadlines_removed then
        redis.call('ZREM', s.keys[DEADLINES], unpack(s.deadlines_removed))
    end
    if s.deadlines_added then
        redis.call('ZADD', s.keys[DEADLINES], unpack(s.deadlines_added))
    end
end

-- Applies the call's writes: deadlines and the queue, the one the call did not read first (a call
-- writes at most one key it did not read, so that a key of another type fails it before anything
-- changed), then meta, then the horizon and the capacity key, then the grants' messages. A state
-- made by the call (a new one, or one started afresh) gets its placeholders and its keys first.
local function store_state(s)
    if s.absent then
        return
    end
    local keys = s.keys
    if s.reset then
        redis.call('DEL', keys[META], keys[DEADLINES], keys[QUEUE])
    end
    local made = s.reset or not s.read_seq -- a state made by this call: its keys too
    -- The placeholders, made again if a key was deleted; and a zset of another type fails the call
    -- here, before anything is written.
    redis.call('ZADD', keys[DEADLINES], 'NX', '+inf', PLACEHOLDER)
    redis.call('ZADD', keys[QUEUE], 'NX', '+inf', PLACEHOLDER)
    local adopted = not made and s.read_version ~= VERSION
    if adopted then
        for key = 1, KEY_COUNT do
            redis.call('PERSIST', keys[key])
        end
    end
    local repair = made or adopted or redis.call('EXISTS', keys[HORIZON], keys[CAPACITY]) < 2
    if s.heads then
        write_deadlines(s)
        write_queue(s)
    else
        write_queue(s)
        write_deadlines(s)
    end
    if s.fields_removed then
        redis.call('HDEL', keys[META], unpack(s.fields_removed))
    end
    if s.now and s.lease > 0 then
        extend(s)
    end
    if made then
        push(s, 'fields_set', 'epoch', s.epoch)
    end
    if made or adopted then
        push(s, 'fields_set', 'version', VERSION)
    end
    if repair then
        -- no lease yet (a resize): no deadline is later than now
        s.horizon = s.horizon or read_clock(s)
        redis.call('SET', keys[HORIZON], s.horizon, 'NX')
        if not s.resized then
            redis.call('SET', keys[CAPACITY], NEVER_RESIZED, 'NX')
        end
    end
    if s.seq ~= s.read_seq then
        push(s, 'fields_set', 'seq', s.seq)
    end
    if s.capacity and s.capacity ~= s.read_capacity then
        push(s, 'fields_set', 'capacity', s.capacity)
    end
    if s.capacity and s.stamp > s.calm and s.used <= s.capacity then
        -- the permits held came down to a smaller capacity: the shrink settles
        s.calm = s.stamp
        if not s.resized then
            push(s, 'messages', REPLY.settled .. ' ' .. decimal(s.capacity) .. ' ' .. decimal(s.stamp))
        end
    end
    if s.stamp ~= s.read_stamp then
        push(s, 'fields_set', 'stamp', s.stamp)
    end
    if s.calm ~= s.read_calm then
        push(s, 'fields_set', 'calm', s.calm)
    end
    if s.used ~= s.read_used then
        push(s, 'fields_set', 'used', s.used)
    end
    if s.holders ~= s.read_holders then
        push(s, 'fields_set', 'holders', s.holders)
    end
    if s.waiters ~= s.read_waiters then
        push(s, 'fields_set', 'waiters', s.waiters)
    end
    if s.lease ~= s.read_lease then
        push(s, 'fields_set', 'lease', s.lease)
    end
    if s.quiet > 0 and s.quiet <= read_clock(s) then
        s.quiet = 0
    end
    if s.quiet ~= s.read_quiet then
        push(s, 'fields_set', 'quiet', s.quiet)
    end
    if s.horizon ~= s.read_horizon then
        push(s, 'fields_set', 'horizon', s.horizon)
    end
    if s.fields_set then
        redis.call('HSET', keys[META], unpack(s.fields_set))
    end
    if s.resized then
        redis.call('SET', keys[CAPACITY], decimal(s.capacity) .. ' ' .. decimal(s.stamp) .. ' ' .. s.id)
    end
    local messages = s.messages
    for i = 1, messages and #messages or 0 do
        redis.call('PUBLISH', s.channel, messages[i])
    end
end

-- lost or state_lost for an unknown caller with this fence (0 for a waiter).
local function lost_reply(s, fence)
    if fence > 0 and (not s.epoch or fence < tonumber(s.epoch) or s.reset) then
        return {REPLY.state_lost}
    end
    return {REPLY.lost}
end

-- The caller's position in the queue, counted after the call's writes.
local function position(s)
    return redis.call('ZRANK', s.keys[QUEUE], s.id) + 1
end

local function caller_deadline(s)
    if not s.deadline then
        s.deadline = tonumber(redis.call('ZSCORE', s.keys[DEADLINES], s.id))
    end
    return s.deadline
end

-- The two calls that most often do the least, in straight lines: the general path (load_state, reap,
-- serve, store_state) would do exactly the same there, at twice the cost in Lua, which costs more
-- than the commands. Each gives up (returns nil) at the first thing it does not cover.

-- An acquire granted at once: meta whole, the caller unknown, the capacity as declared, nobody
-- queued, no quiet period, no deadline passed, and the lease no longer than the longest seen, so
-- that the new deadline stays within the horizon. Returns the reply, or nil and the clock it read.
local function acquire_at_once(keys, id, n, capacity, lease, m)
    if not m[1] or m[12] or m[6] ~= '0' or m[9] ~= '0' or m[13] ~= VERSION then
        return nil
    end
    local seq, declared, used, holders = tonumber(m[2]), tonumber(m[3]), tonumber(m[4]), tonumber(m[5])
    local longest, horizon = tonumber(m[7]), tonumber(m[8])
    if not (seq and used and holders and longest and horizon) or declared ~= capacity or lease > longest or
        used + n > capacity then
        return nil
    end
    if redis.call('EXISTS', keys[QUEUE], keys[HORIZON], keys[CAPACITY]) < 3 then
        return nil -- a key deleted by hand: the general path makes it again
    end
    local seconds, micros = server_time()
    local now, now_us = seconds * 1000 + math.floor(micros / 1000), seconds * 1000000 + micros
    if horizon < now + longest then
        return nil, now, now_us
    end
    if holders > 0 then
        local first = redis.call('ZRANGE', keys[DEADLINES], 0, 0, 'WITHSCORES')
        if #first == 0 or first[1] == PLACEHOLDER or tonumber(first[2]) <= now then
            return nil, now, now_us
        end
    end
    local fence = math.max(seq + 1, now_us)
    redis.call('ZADD', keys[DEADLINES], now + lease, id, '+inf', PLACEHOLDER)
    redis.call('HSET', keys[META], INFO .. id, n .. ':' .. decimal(fence), 'seq', fence, 'used', used + n,
               'holders', holders + 1)
    return {REPLY.granted, fence, n, lease}
end

-- A holder's release while nobody is queued and no shrink is pending: no clock, nothing to serve,
-- nothing to settle.
local function release_at_once(keys, id, m)
    local info = m[12]
    if not (info and m[1] and m[6] == '0' and m[2] and m[3] and m[4] and m[5] and m[7] and m[8] and
            m[13] == VERSION) or
        tonumber(m[4]) > tonumber(m[3]) then
        return nil
    end
    local n, fence = parse_info(info)
    if not fence then
        return nil
    end
    redis.call('ZREM', keys[DEADLINES], id)
    redis.call('HDEL', keys[META], INFO .. id)
    redis.call('HSET', keys[META], 'used', tonumber(m[4]) - n, 'holders', tonumber(m[5]) - 1)
    return {REPLY.released, n}
end

local function acquire(keys, args)
    local channel, id, mode = args[1], args[2], args[6]
    local n, capacity, lease = integer(args[3], 1), integer(args[4], 1), integer(args[5], 1)
    if not (n and capacity and lease) or capacity > MAX_CAPACITY then
        return argument_error('n, capacity and lease_ms must be positive integers, capacity at most ' ..
                                  decimal(MAX_CAPACITY))
    end
    if mode ~= 'wait' and mode ~= 'try' then
        return argument_error('mode must be wait or try')
    end
    local m = read_meta(keys, id)
    local done, clock_ms, clock_us = acquire_at_once(keys, id, n, capacity, lease, m)
    if done then
        return done
    end
    local s = load_state(keys, id, lease, m, clock_ms, clock_us)
    s.channel = channel
    if s.capacity and s.capacity ~= capacity then
        return redis.error_reply(ERROR.capacity .. ' ' .. decimal(s.capacity) .. ' ' .. decimal(s.stamp))
    end
    if n > capacity then
        return redis.error_reply(ERROR.too_many .. ' ' .. decimal(n) .. ' > ' .. decimal(capacity))
    end
    reap(s)
    serve(s)
    if s.info then
        -- a replay: the state the first call made, with the lease time left
        local held, fence = parse_info(s.info)
        local left = caller_deadline(s) - read_clock(s)
        store_state(s)
        if fence then
            return {REPLY.granted, fence, held, left}
        end
        return {REPLY.queued, position(s), left}
    end
    local now = read_clock(s)
    if s.waiters == 0 and s.used + n <= capacity and not quiet(s) then
        declare(s, capacity, lease)
        local fence = grant(s, id, n)
        push(s, 'deadlines_added', now + lease, id)
        store_state(s)
        return {REPLY.granted, fence, n, lease}
    end
    if mode == 'try' then
        store_state(s)
        return {REPLY.busy}
    end
    declare(s, capacity, lease)
    push(s, 'queue_added', next_token(s), id)
    push(s, 'deadlines_added', now + lease, id)
    push(s, 'fields_set', INFO .. id, n)
    s.waiters = s.waiters + 1
    store_state(s)
    return {REPLY.queued, s.waiters, lease}
end

local function renew(keys, args)
    local channel, id = args[1], args[2]
    local lease, fence = integer(args[3], 1), integer(args[4], 0)
    if not (lease and fence) then
        return argument_error('lease_ms must be a positive integer and fence an integer')
    end
    local s = load_state(keys, id, lease, read_meta(keys, id))
    s.channel = channel
    reap(s)
    if not s.info then
        serve(s) -- the permits of the entries reaped, its own among them
        store_state(s)
        return lost_reply(s, fence)
    end
    local now = read_clock(s)
    s.deadline = now + lease
    push(s, 'deadlines_added', s.deadline, id)
    s.lease = math.max(s.lease, lease)
    serve(s)
    store_state(s)
    local held, own_fence = parse_info(s.info)
    if own_fence then
        return {REPLY.granted, own_fence, held, lease}
    end
    return {REPLY.queued, position(s), lease}
end

local function release(keys, args)
    local channel, id, fence = args[1], args[2], integer(args[3], 0)
    if not fence then
        return argument_error('fence must be an integer')
    end
    local m = read_meta(keys, id)
    local done = release_at_once(keys, id, m)
    if done then
        return done
    end
    local s = load_state(keys, id, 0, m)
    s.channel = channel
    if not s.info then
        store_state(s)
        return lost_reply(s, fence)
    end
    local n, own_fence = parse_info(s.info)
    remove_entry(s, id, s.info)
    if s.waiters > 0 then
        reap(s)
        serve(s)
    end
    store_state(s)
    if own_fence then
        return {REPLY.released, n}
    end
    return {REPLY.cancelled}
end

-- Removes from the queue every waiter that asks for more than the capacity: it could never be served,
-- and would stop the queue. Its process learns it from its next renewal (lost), and its acquire sent
-- again is refused (ASIO_SYNC_TOO_MANY) if the capacity is still smaller.
local function reject_too_large(s)
    if s.reset or s.waiters == 0 then
        return
    end
    local queued = without_placeholder(redis.call('ZRANGE', s.keys[QUEUE], 0, -1))
    for first = 1, #queued, CHUNK do
        local ids, fields = {}, {}
        for i = first, math.min(first + CHUNK - 1, #queued) do
            if not is_gone(s, queued[i]) then
                ids[#ids + 1] = queued[i]
                fields[#fields + 1] = INFO .. queued[i]
            end
        end
        local infos = #fields > 0 and redis.call('HMGET', s.keys[META], unpack(fields)) or {}
        for i = 1, #ids do
            if not infos[i] or string.find(infos[i], ':', 1, true) then
                return start_afresh(s) -- a waiter without its field, or a holder queued
            end
            if tonumber(infos[i]) > s.capacity then
                remove_entry(s, ids[i], infos[i])
            end
        end
    end
end

local function resize(keys, args)
    local channel, id = args[1], args[2]
    local capacity, base = integer(args[3], 1), integer(args[4], 0)
    if not (capacity and base) or capacity > MAX_CAPACITY then
        return argument_error('capacity must be a positive integer of at most ' .. decimal(MAX_CAPACITY) ..
                                  ' and base an integer')
    end
    local s = load_state(keys, id, 0, read_meta(keys, id))
    local durable = read_durable(s)
    if durable and durable[3] == id then
        -- a replay of the resize in force
        return {REPLY.resized, s.capacity, s.stamp, s.calm}
    end
    if s.stamp ~= base then
        return {REPLY.conflict, s.capacity or 0, s.stamp}
    end
    s.channel, s.resized = channel, true
    if s.lost_unknown then
        -- the capacity key alone holds the resize: the next acquire or renewal starts afresh with it
        s.stamp = next_token(s)
        redis.call('SET', keys[CAPACITY], decimal(capacity) .. ' ' .. decimal(s.stamp) .. ' ' .. id)
        redis.call('PUBLISH', channel, REPLY.resized .. ' ' .. decimal(capacity) .. ' ' .. decimal(s.stamp) ..
                       ' ' .. decimal(s.stamp))
        return {REPLY.resized, capacity, s.stamp, s.stamp}
    end
    declare(s, capacity, 0) -- a semaphore without state: the resize makes it
    reap(s)
    s.capacity, s.stamp = capacity, next_token(s)
    reject_too_large(s)
    serve(s)
    if s.used <= capacity then
        s.calm = s.stamp
    end
    -- the resize first, then the grants it made
    local messages = s.messages or {}
    table.insert(messages, 1, REPLY.resized .. ' ' .. decimal(capacity) .. ' ' .. decimal(s.stamp) .. ' ' ..
                     decimal(s.calm))
    s.messages = messages
    store_state(s)
    return {REPLY.resized, capacity, s.stamp, s.calm}
end

local function status(keys, args)
    local id = args[1]
    local info = redis.call('HGET', keys[META], INFO .. id)
    local deadline = info and tonumber(redis.call('ZSCORE', keys[DEADLINES], id))
    if not (deadline and deadline > read_clock({})) then
        return {REPLY.lost}
    end
    local n, fence = parse_info(info)
    if fence then
        return {REPLY.granted, fence, n}
    end
    local rank = redis.call('ZRANK', keys[QUEUE], id)
    return rank and {REPLY.queued, rank + 1} or {REPLY.lost}
end

-- The infos of the entries of deadlines whose deadlines are after `now`: ids, then their fields.
local function live_entries(keys, now)
    local ids = without_placeholder(redis.call('ZRANGEBYSCORE', keys[DEADLINES], '(' .. decimal(now), '+inf'))
    if #ids == 0 then
        return ids, {}
    end
    local fields = {}
    for i = 1, #ids do
        fields[i] = INFO .. ids[i]
    end
    return ids, redis.call('HMGET', keys[META], unpack(fields))
end

local function usage(keys, _)
    local m = redis.call('HMGET', keys[META], 'capacity', 'stamp', 'calm', 'seq')
    local s = {keys = keys}
    local capacity, stamp, calm = tonumber(m[1]), tonumber(m[2]) or 0, tonumber(m[3]) or 0
    local durable = read_durable(s)
    if not capacity and durable then
        capacity, stamp, calm = durable[1], durable[2], durable[2]
    end
    local now = read_clock(s)
    -- every later stamp is above seq, the stamp in force and the clock as it reads now
    local clock = math.max(tonumber(m[4]) or 0, stamp, s.now_us - 1)
    local _, infos = live_entries(keys, now)
    local held, queued = 0, 0
    for i = 1, #infos do
        if infos[i] then
            local n, fence = parse_info(infos[i])
            if fence then
                held = held + n
            else
                queued = queued + 1
            end
        end
    end
    return {REPLY.usage, capacity or 0, held, queued, stamp, calm, clock}
end

local function watch(keys, _)
    local now = read_clock({})
    local wake = tonumber(redis.call('HGET', keys[META], 'quiet')) or 0
    if wake <= now then
        wake = nil
    end
    local first = redis.call('ZRANGE', keys[DEADLINES], 0, 0, 'WITHSCORES')
    if #first > 0 and first[1] ~= PLACEHOLDER then
        wake = math.min(wake or math.huge, tonumber(first[2]))
    end
    if not wake then
        return {REPLY.idle}
    end
    return {REPLY.wake, math.max(wake - now, 0)}
end

local function check(keys, _)
    local function broken(what)
        return redis.error_reply(ERROR.invariant .. ' ' .. what)
    end
    local now = read_clock({})
    local meta = redis.call('HGETALL', keys[META])
    local scalars, infos, info_count = {}, {}, 0
    for i = 1, #meta, 2 do
        local field, value = meta[i], meta[i + 1]
        if string.sub(field, 1, 1) == INFO then
            infos[string.sub(field, 2)] = value
            info_count = info_count + 1
        else
            scalars[field] = tonumber(value)
        end
    end
    local deadlines = redis.call('ZRANGE', keys[DEADLINES], 0, -1, 'WITHSCORES')
    local queue = redis.call('ZRANGE', keys[QUEUE], 0, -1, 'WITHSCORES')
    local horizon = tonumber(redis.call('GET', keys[HORIZON]))
    local capacity_key = redis.call('GET', keys[CAPACITY])
    local durable = read_durable({keys = keys})
    if not scalars.epoch then
        if #meta + #deadlines + #queue > 0 or horizon or capacity_key then
            return broken('state without meta')
        end
        return {REPLY.ok, 0, 0, 0}
    end
    -- the placeholder closes each zset: drop it
    for _, zset in ipairs({deadlines, queue}) do
        if zset[#zset - 1] ~= PLACEHOLDER then
            return broken('a zset without its placeholder')
        end
        zset[#zset], zset[#zset - 1] = nil, nil
    end
    if not (horizon and (durable or capacity_key == NEVER_RESIZED)) then
        return broken('meta without its other keys')
    end
    if scalars.version ~= tonumber(VERSION) then
        return broken('a state of another version')
    end
    for _, field in ipairs(SCALARS) do
        if field ~= 'capacity' and field ~= 'stamp' and field ~= 'calm' and not scalars[field] then
            return broken('meta without ' .. field)
        end
    end
    local capacity, epoch, seq = scalars.capacity or 0, scalars.epoch, scalars.seq
    local stamp, calm = scalars.stamp or 0, scalars.calm or 0
    if (stamp > 0 or durable) and not (durable and durable[1] == capacity and durable[2] == stamp) then
        return broken('the capacity key differs from meta')
    end
    if calm > stamp or stamp > seq then
        return broken('a stamp beyond seq, or calm beyond the stamp')
    end
    if scalars.horizon ~= horizon then
        return broken('the horizon differs from its copy')
    end
    if #deadlines / 2 ~= info_count or scalars.holders + scalars.waiters ~= info_count then
        return broken('deadlines and fields differ')
    end
    if #queue / 2 ~= scalars.waiters then
        return broken('queue and waiters differ')
    end
    local used, holders, fences, last_deadline, since_resize = 0, 0, {}, 0, 0
    for i = 1, #deadlines, 2 do
        local id, deadline = deadlines[i], tonumber(deadlines[i + 1])
        local info = infos[id]
        if not info then
            return broken('an entry without its field')
        end
        local n, fence = parse_info(info)
        if n < 1 or (not fence and n > capacity) then
            return broken('an n out of range')
        end
        if fence then
            if fence <= epoch or fence > seq or fences[fence] then
                return broken('a fence repeated, not above the epoch or beyond seq')
            end
            fences[fence] = true
            used = used + n
            holders = holders + 1
            if fence > stamp then
                since_resize = since_resize + n
            end
        end
        last_deadline = math.max(last_deadline, deadline)
    end
    if holders ~= scalars.holders or used ~= scalars.used then
        return broken('used is not the sum of the holders')
    end
    if used > capacity and calm == stamp then
        return broken('used exceeds the capacity')
    end
    if used <= capacity and calm < stamp then
        return broken('a shrink settled but not recorded')
    end
    if since_resize > capacity then
        return broken('a grant beyond the capacity in force')
    end
    for i = 1, #queue, 2 do
        local id, ticket = queue[i], tonumber(queue[i + 1])
        local info = infos[id]
        if not info or string.find(info, ':', 1, true) then
            return broken('a ticket without a waiter')
        end
        if ticket <= epoch or ticket > seq or fences[ticket] then
            return broken('a ticket repeated, not above the epoch or beyond seq')
        end
        fences[ticket] = true
        if i == 1 and scalars.quiet <= now and used + tonumber(info) <= capacity then
            local deadline = tonumber(redis.call('ZSCORE', keys[DEADLINES], id))
            if deadline > now then
                return broken('the head fits but waits')
            end
        end
    end
    if last_deadline > horizon or scalars.quiet > horizon then
        return broken('a deadline beyond the horizon')
    end
    for key = 1, KEY_COUNT do
        if redis.call('PTTL', keys[key]) ~= -1 then
            return broken('a key expires')
        end
    end
    return {REPLY.ok, used, holders, scalars.waiters}
end

register('acquire', 6, acquire, {})
register('renew', 4, renew, {})
register('release', 3, release, {})
register('resize', 4, resize, {})
register('status', 1, status, {'no-writes'})
register('usage', 0, usage, {'no-writes'})
register('watch', 0, watch, {'no-writes'})
register('check', 0, check, {'no-writes'})
