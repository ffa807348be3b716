-- The shared frontier: every change to it is one call of this script, so it is atomic across
-- processes. KEYS[1] is the key prefix of one shard of the crawl (store.py, shards.py): a hash
-- tag of its own, so every key below, built from it, lies in KEYS[1]'s slot of a Redis Cluster
-- (a domain's keys and the seen marks pushed with its requests are in its shard); ARGV:
-- operation, now (Unix seconds; empty: the
-- server's clock, so that processes on machines whose clocks differ agree), the default delay,
-- the default per-domain concurrency, whether robots.txt gates domains (1/0), the lease time,
-- the delivery cap (how many times a request may come back unfinished), then the operation's
-- own arguments.
--
-- Keys under the shard's prefix P:
--   P:ready          zset  domain -> when it may be handed its next request (domains with queued requests)
--   P:qp:D           zset  priorities with queued requests of domain D (score -priority: highest first)
--   P:q:D:PRIO       list  encoded requests "KEY<TAB>JSON", first in first out
--   P:queued         int   requests in the P:q lists
--   P:delayed        zset  "D<TAB>PRIO<TAB>REQUEST" -> not before (retries with backoff)
--   P:d:D            hash  domain state: next, prev, last (slot times), pending (the hold of a slot
--                          until its request left), delay, limit, hold (set by the policy),
--                          scheme, robots_until, robots_claim, state (policy JSON), freed (when a
--                          finished request freed a slot of the domain at its concurrency: Turns)
--   P:inflight:D     zset  holders of D's concurrency (lease keys, robots:D) -> expiry
--   P:leases         zset  lease key -> expiry;   P:leasedata  hash lease key -> "D<TAB>PRIO<TAB>REQUEST"
--   P:owners         hash  lease key -> the process it was handed to (a lease is renewed only by it)
--   P:returns        hash  lease key -> times the request came back unfinished
--   P:dead           list  "D<TAB>PRIO<TAB>REQUEST" of requests past the delivery cap;
--   P:dead_new       list  the same, not yet turned into a row by a worker
--   P:domains        set   every domain ever queued
--   P:reclaimed      int   expired leases put back
--   P:alive          str   when a worker last used the shard (for reclaiming dead crawls)
--   P:born           str   "running" while the crawl runs (set by its workers in every shard with the
--                          crawl's own mark, Python's): a worker's pops and reservations need it, so that
--                          nothing is handed out of keys that vanished (Redis flushed, or restarted
--                          without its data)
--   P:seen:...             the seen marks of the shard's domains' requests (seen.lua)
--   P:spilled        int   requests of the shard's domains moved to PostgreSQL (``frontier_spill``);
--                          P:d:D's field ``spilled``: domain D's
--   P:long           set   domains whose queue grew past the spill threshold (the movers' candidates)
--   P:long_cursor    str   where the movers' scan of P:long stands
--   P:refill         zset  domain -> when a mover may refill it (a domain with requests in the table
--                          whose queue ran low; put off by a claim, so a dead mover's is tried again)
--   P:mover:D        str   the mover holding domain D (spilling or refilling it), expiring
--   P:run            str   the name the shard's rows in the table carry: a new run of the crawl (its
--                          keys deleted, flushed) never reads an earlier run's rows
--   P:hungry         zset  process -> since when its asks of the shard found nothing (a worker's
--                          pop names its process); P:hungry_at  zset  process -> its last such ask
--
-- Turns: a domain at its concurrency frees a slot when a request of it finishes, and the process
-- that held it asks again at once, while the others learn of the slot only at their next ask.
-- So for the turn time a worker's pop gives (its poll time) after the slot was freed (P:d:D's
-- ``freed``), the slot is left to the process that has found nothing the longest, if that is
-- not the asker: each process that asks gets a share of a lone domain's concurrency.

local P = KEYS[1]
local op = ARGV[1]
local now
if ARGV[2] == '' then
  local t = redis.call('TIME')
  now = tonumber(t[1]) + tonumber(t[2]) / 1e6
else
  now = tonumber(ARGV[2])
end
local default_delay = tonumber(ARGV[3])
local default_limit = tonumber(ARGV[4])
local robots_on = ARGV[5] == '1'
local lease_seconds = tonumber(ARGV[6])
local max_deliveries = tonumber(ARGV[7])

local function num(value, default)
  local n = tonumber(value)
  if n == nil then return default end
  return n
end
local function fmt(t) return string.format('%.6f', t) end
local function dkey(d) return P .. ':d:' .. d end
local function inflight_key(d) return P .. ':inflight:' .. d end
local function prios_key(d) return P .. ':qp:' .. d end
local function list_key(d, prio) return P .. ':q:' .. d .. ':' .. prio end
local function split3(s)
  local a, b, c = string.match(s, '^([^\t]*)\t([^\t]*)\t(.*)$')
  return a, b, c
end
local function lease_key(request) return string.match(request, '^[^\t]*') end

local function holders(d)
  local k = inflight_key(d)
  redis.call('ZREMRANGEBYSCORE', k, '-inf', now)  -- a killed worker's slots free themselves
  return redis.call('ZCARD', k)
end

local function robots_pending(f_until)
  return robots_on and num(f_until, 0) <= now
end

-- Set the domain's ready time from its state; drop it from the index when nothing is queued.
local function refresh(d)
  if redis.call('EXISTS', prios_key(d)) == 0 then
    redis.call('ZREM', P .. ':ready', d)
    return
  end
  local f = redis.call('HMGET', dkey(d), 'next', 'hold', 'limit', 'robots_until', 'robots_claim')
  local at = math.max(num(f[1], 0), num(f[2], 0))
  if holders(d) >= num(f[3], default_limit) then
    local first = redis.call('ZRANGE', inflight_key(d), 0, 0, 'WITHSCORES')
    at = math.max(at, num(first[2], now))
  end
  if robots_pending(f[4]) and num(f[5], 0) > now then
    at = math.max(at, num(f[5], 0))  -- another process is fetching the rules
  end
  redis.call('ZADD', P .. ':ready', at, d)
end

local function enqueue(d, prio, request, front)
  local lk = list_key(d, prio)
  if front then redis.call('LPUSH', lk, request) else redis.call('RPUSH', lk, request) end
  redis.call('ZADD', prios_key(d), -tonumber(prio), prio)
  redis.call('INCR', P .. ':queued')
end

-- Requests queued in Redis for a domain (the sum over its priorities: a few lists).
local function domain_len(d)
  local n = 0
  for _, prio in ipairs(redis.call('ZRANGE', prios_key(d), 0, -1)) do
    n = n + redis.call('LLEN', list_key(d, prio))
  end
  return n
end

local function mover_key(d) return P .. ':mover:' .. d end
local function claim(d, claimant, seconds)
  return redis.call('SET', mover_key(d), claimant, 'NX', 'PX', math.max(1, math.floor(seconds * 1000)))
end
local function holds(d, claimant) return redis.call('GET', mover_key(d)) == claimant end

-- The name of the shard's rows in the table, made by the first mover of the run.
local function run_name(claimant)
  local run = redis.call('GET', P .. ':run')
  if not run then
    local t = redis.call('TIME')  -- the server's: unique even where a clock is given
    run = P .. '@' .. t[1] .. '.' .. t[2] .. '/' .. claimant
    redis.call('SET', P .. ':run', run)
  end
  return run
end

-- A pop left a cold domain's queue low: a mover brings some of its requests back from the table.
local function note_if_low(d, below)
  if below > 0 and num(redis.call('HGET', dkey(d), 'spilled'), 0) > 0 and domain_len(d) < below then
    redis.call('ZADD', P .. ':refill', 'NX', now, d)
  end
end

-- A request handed out leaves some time later (the worker's reply, its engine, its
-- middlewares): a paced domain's next slot is held until it reports that it left (``sent``),
-- which counts the delay from then, or this long if it never does (a request that has not left
-- well within it takes a fresh slot: ``download/held_slot.py``).
local SEND_WINDOW = 10

-- Take the domain's next slot for a holder: now, or the slot's own time when it is handed out
-- ahead of it; returns the reservation and the slot's time.
local function reserve(d, holder)
  local k = dkey(d)
  local f = redis.call('HMGET', k, 'next', 'delay')
  local delay = num(f[2], default_delay)
  local slot = math.max(now, num(f[1], 0))
  local reservation = fmt(slot + delay)
  if delay > 0 then
    reservation = fmt(slot + math.max(delay, SEND_WINDOW))
    redis.call('HSET', k, 'pending', reservation)
  end
  redis.call('HSET', k, 'prev', f[1] or fmt(0), 'next', reservation, 'last', fmt(slot))
  redis.call('ZADD', inflight_key(d), now + lease_seconds, holder)
  return reservation, slot
end

-- Give back a slot reserved and not used, unless another was taken since.
local function unreserve(d, reservation)
  local k = dkey(d)
  if redis.call('HGET', k, 'next') == reservation then
    redis.call('HSET', k, 'next', redis.call('HGET', k, 'prev') or fmt(0))
    redis.call('HDEL', k, 'pending')
  end
end

-- Whether the domain's next slot may be taken now; ``holding``: by a request that holds its
-- share of the domain's concurrency already (its slot went stale before it left: ``reslot``).
local function can_start(d, holding)
  local f = redis.call('HMGET', dkey(d), 'next', 'hold', 'limit')
  local room = holding or holders(d) < num(f[3], default_limit)
  return math.max(num(f[1], 0), num(f[2], 0)) <= now and room
end

-- The lease ``key`` ends: its expiry, its request and its holder.
local function end_lease(key)
  redis.call('ZREM', P .. ':leases', key)
  redis.call('HDEL', P .. ':leasedata', key)
  redis.call('HDEL', P .. ':owners', key)
end

-- A leased request comes back to its queue. ``returned``: it came back unfinished (a dead
-- worker, a failed callback, a worker closing while it was in flight), which counts towards
-- the delivery cap; past the cap it goes to the dead-letter list instead.
local function release_lease(key, front, returned)
  local data = redis.call('HGET', P .. ':leasedata', key)
  end_lease(key)
  if not data then return end
  local d, prio, request = split3(data)
  redis.call('ZREM', inflight_key(d), key)
  if returned and redis.call('HINCRBY', P .. ':returns', key, 1) >= max_deliveries then
    redis.call('HDEL', P .. ':returns', key)
    redis.call('RPUSH', P .. ':dead', data)
    redis.call('RPUSH', P .. ':dead_new', data)
  else
    enqueue(d, prio, request, front)
  end
  refresh(d)
end

-- Whether the lease ``key`` was handed to a process other than ``process`` (it was this one's,
-- expired while the process stood still, and went to another). No process named: no check.
local function own_lease_of_another(key, process)
  if process == nil or process == '' then return false end
  local owner = redis.call('HGET', P .. ':owners', key)
  return owner ~= false and owner ~= process
end

local function housekeeping()
  local due = redis.call('ZRANGEBYSCORE', P .. ':delayed', '-inf', now, 'LIMIT', 0, 100)
  for _, entry in ipairs(due) do
    redis.call('ZREM', P .. ':delayed', entry)
    local d, prio, request = split3(entry)
    enqueue(d, prio, request, false)
    refresh(d)
  end
  local expired = redis.call('ZRANGEBYSCORE', P .. ':leases', '-inf', now, 'LIMIT', 0, 100)
  for _, key in ipairs(expired) do
    release_lease(key, true, true)
    redis.call('INCR', P .. ':reclaimed')
  end
end

local asker, turn_seconds = nil, 0  -- set by a worker's pop
local owner = ''  -- the popping process, whose leases they are (P:owners)
local turn_until = math.huge  -- the end of the earliest turn the asker left to another process
local hungrier_found = nil

-- Whether a process other than the asker has found nothing since before the asker did.
local function hungrier_process()
  if hungrier_found == nil then
    local mine = redis.call('ZSCORE', P .. ':hungry', asker)
    local first = redis.call('ZRANGEBYSCORE', P .. ':hungry', '-inf', mine and ('(' .. mine) or '+inf', 'LIMIT', 0, 1)
    hungrier_found = #first > 0
  end
  return hungrier_found
end

-- Whether the slot of ``d`` the asker would take is another process's turn.
local function others_turn(d)
  if not asker or turn_seconds <= 0 then return false end
  local freed = tonumber(redis.call('HGET', dkey(d), 'freed') or '')
  if not freed or freed + turn_seconds <= now or not hungrier_process() then return false end
  turn_until = math.min(turn_until, freed + turn_seconds)
  return true
end

-- A process that has not asked for twice the turn time is gone (stopped, paused, ended): forgotten.
local function forget_gone_askers()
  local gone = redis.call('ZRANGEBYSCORE', P .. ':hungry_at', '-inf', '(' .. fmt(now - 2 * turn_seconds))
  if #gone > 0 then
    redis.call('ZREM', P .. ':hungry', unpack(gone))
    redis.call('ZREM', P .. ':hungry_at', unpack(gone))
  end
end

local function note_hunger(got)
  if got then
    redis.call('ZREM', P .. ':hungry', asker)
    redis.call('ZREM', P .. ':hungry_at', asker)
  else
    redis.call('ZADD', P .. ':hungry', 'NX', fmt(now), asker)
    redis.call('ZADD', P .. ':hungry_at', fmt(now), asker)
  end
end

-- Whether a domain whose ready time is within the lead may be handed a request now: only its
-- delay may still be running, not a hold (a block, an open circuit) nor its concurrency.
local function only_delay_left(d)
  local f = redis.call('HMGET', dkey(d), 'hold', 'limit')
  return num(f[1], 0) <= now and holders(d) < num(f[2], default_limit)
end

-- One request (or robots.txt claim) of a ready domain, appended to ``out``; false if none.
-- ``lead``: a request may be handed out this long before its slot, with the time it may leave.
local function pop_one(out, lead, refill_below)
  local candidates = redis.call('ZRANGEBYSCORE', P .. ':ready', '-inf', now + lead, 'LIMIT', 0, 16)
  for _, d in ipairs(candidates) do
    refresh(d)
    local score = redis.call('ZSCORE', P .. ':ready', d)
    score = score and tonumber(score) or math.huge  -- dropped by refresh: nothing queued
    local k = dkey(d)
    local pending_robots = robots_pending(redis.call('HGET', k, 'robots_until'))
    local available = score <= now or (score <= now + lead and not pending_robots and only_delay_left(d))
    if available and (pending_robots or not others_turn(d)) then  -- robots.txt claims take no turns
      if pending_robots then
        -- The domain's robots.txt comes first, fetched once for all processes on the domain's slot.
        redis.call('HSET', k, 'robots_claim', fmt(now + lease_seconds))  -- a dead fetcher's claim expires
        local reservation = reserve(d, 'robots:' .. d)
        refresh(d)
        table.insert(out, {'robots', d, redis.call('HGET', k, 'scheme') or 'http', reservation, fmt(0)})
        return true
      end
      local prio = redis.call('ZRANGE', prios_key(d), 0, 0)[1]
      local lk = list_key(d, prio)
      local request = redis.call('LPOP', lk)
      if redis.call('LLEN', lk) == 0 then redis.call('ZREM', prios_key(d), prio) end
      if request then
        redis.call('DECR', P .. ':queued')
        note_if_low(d, refill_below)
        local key = lease_key(request)
        local reservation, slot = reserve(d, key)
        redis.call('ZADD', P .. ':leases', now + lease_seconds, key)
        redis.call('HSET', P .. ':leasedata', key, d .. '\t' .. prio .. '\t' .. request)
        if owner ~= '' then redis.call('HSET', P .. ':owners', key, owner) end
        refresh(d)
        table.insert(out, {'request', d, request, reservation, fmt(slot - now)})
        return true
      end
      refresh(d)
    end
  end
  return false
end

local function wait_time(lead)
  local times = {}
  for _, name in ipairs({':ready', ':delayed', ':leases'}) do
    local first = redis.call('ZRANGE', P .. name, 0, 0, 'WITHSCORES')
    local at = tonumber(first[2])
    if at and name == ':ready' and at - lead > now then
      at = at - lead  -- handed out ahead; a domain already within its lead was not: its hold, its concurrency
    end
    if at then table.insert(times, at) end
  end
  if #times == 0 then return '' end
  return fmt(math.max(0, math.min(unpack(times)) - now))
end

-- A worker's pops and reservations (``begun``: 1) need the crawl's mark: once its keys vanished,
-- what the worker still pushed before it noticed must not be handed out, or the robots.txt claim
-- and slots it reserved would hold the domain for a lease time in the crawl started again.
local function crawl_marked(begun)
  return begun ~= '1' or redis.call('EXISTS', P .. ':born') == 1
end

if op ~= 'sizes' then redis.call('SET', P .. ':alive', fmt(now)) end

if op == 'push' then
  -- ARGV[8..]: domain, priority, request, seconds to wait before it may go (retries with
  -- backoff), scheme, the spill threshold (a domain queuing more is a candidate to spill; 0: off),
  -- the pushing process when it was handed the request's lease (a retry or redirect of it; ''
  -- otherwise), and optionally the request's seen-filter marker (kind, key, values; see
  -- seen.lua): a request already seen is not queued (0), in the same step that marks it seen.
  -- A retry or redirect of a request whose lease went to another process (the pusher stood still
  -- past it) is not queued either (-1): that process fetches the request and follows it.
  local d, prio, request, wait, scheme = ARGV[8], ARGV[9], ARGV[10], num(ARGV[11], 0), ARGV[12]
  local spill_above = num(ARGV[13], 0)
  local key = lease_key(request)
  if own_lease_of_another(key, ARGV[14]) then return -1 end
  if ARGV[15] and not mark_seen(ARGV[15], ARGV[16], {unpack(ARGV, 17)}) then return 0 end
  -- a retry or redirect of a leased request takes its lease's place
  end_lease(key)
  redis.call('SADD', P .. ':domains', d)
  redis.call('HSETNX', dkey(d), 'scheme', scheme)
  if wait > 0 then
    redis.call('ZADD', P .. ':delayed', now + wait, d .. '\t' .. prio .. '\t' .. request)
  else
    enqueue(d, prio, request, false)
    refresh(d)
    if spill_above > 0 and redis.call('SISMEMBER', P .. ':long', d) == 0 and domain_len(d) > spill_above then
      redis.call('SADD', P .. ':long', d)
    end
  end
  return 1

elseif op == 'pop' then
  -- ARGV[8]: at most how many; ARGV[9]: the lead (seconds a request may be handed out before its
  -- slot; none if absent); ARGV[10]: 1 from a worker of a begun crawl; ARGV[11]: the length
  -- under which a cold domain's queue is refilled from the table (0 or absent: no spill);
  -- ARGV[12], ARGV[13]: the asking process and its turn time (see Turns; absent: no turns). Returns now, then
  -- kind/domain/request/reservation/seconds from now until it may leave, five at a time (kind
  -- ``dead``: a request past the delivery cap, for a row), then the seconds until anything may
  -- be handed out ('' when nothing is queued, delayed or leased) if fewer came.
  if not crawl_marked(ARGV[10]) then return {fmt(now), ''} end
  housekeeping()
  local lead = num(ARGV[9], 0)
  local out = {}
  local refill_below = num(ARGV[11], 0)
  owner = ARGV[12] or ''
  if ARGV[12] and ARGV[12] ~= '' and num(ARGV[13], 0) > 0 then
    asker, turn_seconds = ARGV[12], num(ARGV[13], 0)
    forget_gone_askers()
  end
  for _ = 1, tonumber(ARGV[8]) do
    if not pop_one(out, lead, refill_below) then break end
  end
  if asker then note_hunger(#out > 0) end
  local answer = {fmt(now)}
  for _, data in ipairs(redis.call('LRANGE', P .. ':dead_new', 0, 9)) do
    redis.call('LPOP', P .. ':dead_new')
    local d, _, request = split3(data)
    for _, part in ipairs({'dead', d, request, '', fmt(0)}) do table.insert(answer, part) end
  end
  for _, entry in ipairs(out) do
    for _, part in ipairs(entry) do table.insert(answer, part) end
  end
  if #out < tonumber(ARGV[8]) then
    local wait = wait_time(lead)
    if turn_until < math.huge and (wait == '' or tonumber(wait) < turn_until - now) then
      wait = fmt(turn_until - now)  -- not at once again: the slot is another's until then
    end
    table.insert(answer, wait)
  end
  return answer

elseif op == 'sizes' or op == 'beat' then
  -- ``beat``: the same, from a worker, which keeps the crawl alive
  return {
    tonumber(redis.call('GET', P .. ':queued') or '0'), redis.call('ZCARD', P .. ':delayed'),
    redis.call('ZCARD', P .. ':leases'), tonumber(redis.call('GET', P .. ':reclaimed') or '0'),
    redis.call('LLEN', P .. ':dead'), tonumber(redis.call('GET', P .. ':spilled') or '0'),
  }

elseif op == 'ack' then
  -- ARGV[8]: the process; ARGV[9..]: lease keys whose rows it committed. A lease handed out again
  -- to another process is left to it (its row comes from there).
  for i = 9, #ARGV do
    if not own_lease_of_another(ARGV[i], ARGV[8]) then
      end_lease(ARGV[i])
      redis.call('HDEL', P .. ':returns', ARGV[i])
    end
  end
  return 1

elseif op == 'release' then
  -- ARGV[8]: 1 if these requests came back unfinished (counted against the delivery cap), 0 if
  -- they were never started; ARGV[9]: the process; ARGV[10..]: lease keys it gives back, to the
  -- front of their queues (but a lease handed out again to another process, which is that one's)
  for i = 10, #ARGV do
    if not own_lease_of_another(ARGV[i], ARGV[9]) then release_lease(ARGV[i], true, ARGV[8] == '1') end
  end
  return 1

elseif op == 'renew' then
  -- ARGV[8]: the renewing process; ARGV[9..]: lease keys it is still working on (fetched, or their
  -- rows being stored): their leases and the concurrency they hold run for another lease time
  -- from now. Returns how many were renewed, then the keys handed out again to another process
  -- since (this one stopped for longer than a lease): their leases are that process's, and this
  -- one must neither extend nor end them. A key expired and not handed out again is neither.
  local process, answer = ARGV[8], {0}
  for i = 9, #ARGV do
    local key = ARGV[i]
    if own_lease_of_another(key, process) then
      table.insert(answer, key)
    elseif redis.call('ZADD', P .. ':leases', 'XX', 'CH', now + lease_seconds, key) == 1 then
      answer[1] = answer[1] + 1
      local d = split3(redis.call('HGET', P .. ':leasedata', key) or '')
      if d then redis.call('ZADD', inflight_key(d), 'XX', now + lease_seconds, key) end
    end
  end
  return answer

elseif op == 'try_reserve' or op == 'reslot' then
  -- ARGV[8], ARGV[9]: domain, holder; ARGV[10] as pop's. ``try_reserve``: for requests this
  -- process keeps (sitemap discovery). ``reslot``: a fresh slot for a handed-out request that did
  -- not leave on its own in time (``download/held_slot.py``); its share of the concurrency is its
  -- own still while its holder is in flight, and gone (its lease expired) it takes one as any does.
  local d, holder = ARGV[8], ARGV[9]
  local holding = false
  if op == 'reslot' then
    holders(d)  -- an expired hold is not the holder's any more
    holding = redis.call('ZSCORE', inflight_key(d), holder) ~= false
  end
  if not crawl_marked(ARGV[10]) or not can_start(d, holding) then return false end
  local reservation = reserve(d, holder)
  refresh(d)
  return reservation

elseif op == 'rehold' then
  -- ARGV[8..10]: domain, holder, new holder: a reservation passes to the request that uses it.
  local k = inflight_key(ARGV[8])
  local expiry = redis.call('ZSCORE', k, ARGV[9])
  if expiry then
    redis.call('ZREM', k, ARGV[9])
    redis.call('ZADD', k, expiry, ARGV[10])
  end
  return 1

elseif op == 'sent' then
  -- ARGV[8]: domain; ARGV[9]: seconds since it left (none: now), as the worker measured them
  -- until it sent this call, so never more than really passed. The holder of the last slot
  -- left then: the next slot counts from then.
  local d = ARGV[8]
  local k = dkey(d)
  local f = redis.call('HMGET', k, 'next', 'delay', 'pending')
  local delay = num(f[2], default_delay)
  local left = now - math.max(0, num(ARGV[9], 0))
  local next = left + delay
  if f[1] ~= f[3] then next = math.max(num(f[1], 0), next) end  -- else: the hold until it left ends
  redis.call('HSET', k, 'next', fmt(next), 'last', fmt(left))
  redis.call('HDEL', k, 'pending')
  refresh(d)
  return fmt(delay)  -- the delay in force, as text (Redis would cut a number to an integer)

elseif op == 'unreserve' then
  -- ARGV[8], ARGV[9]: domain, reservation. Give back an unused slot unless another was taken since.
  unreserve(ARGV[8], ARGV[9])
  refresh(ARGV[8])
  return 1

elseif op == 'give_back' then
  -- ARGV[8..10]: domain, reservation, holder: a slot granted (``try_reserve``) and never taken,
  -- with the share of the concurrency it held; an empty holder keeps its share (a ``reslot``'s,
  -- which is its leased request's). Unlike ``finish``, no turn: nothing finished.
  unreserve(ARGV[8], ARGV[9])
  if ARGV[10] ~= '' then redis.call('ZREM', inflight_key(ARGV[8]), ARGV[10]) end
  refresh(ARGV[8])
  return 1

elseif op == 'finish' then
  -- ARGV[8..10]: domain, holder, the process. A holder that is a lease handed out again to
  -- another process (this one stood still past it) is that process's share now: left to it.
  local d = ARGV[8]
  local full = holders(d) >= num(redis.call('HGET', dkey(d), 'limit'), default_limit)
  if not own_lease_of_another(ARGV[9], ARGV[10])
      and redis.call('ZREM', inflight_key(d), ARGV[9]) == 1 and full then
    redis.call('HSET', dkey(d), 'freed', fmt(now))  -- a slot of a full domain: see Turns
  end
  refresh(d)
  return 1

elseif op == 'update' then
  -- ARGV[8]: domain, then field/value pairs written by the policy
  local d = ARGV[8]
  if #ARGV >= 10 then redis.call('HSET', dkey(d), unpack(ARGV, 9)) end
  refresh(d)
  return 1

elseif op == 'robots_stored' then
  -- ARGV[8], ARGV[9]: domain, rules valid until
  local k = dkey(ARGV[8])
  redis.call('HSET', k, 'robots_until', ARGV[9])
  redis.call('HDEL', k, 'robots_claim')
  redis.call('ZREM', inflight_key(ARGV[8]), 'robots:' .. ARGV[8])
  refresh(ARGV[8])
  return 1

elseif op == 'spill_take' then
  -- A mover's turn (``spill.py``): ARGV[8..13]: claimant, claim seconds, seconds the first
  -- request beyond the kept ones must be away to count as cold, requests kept, at most how many
  -- to move, how many candidates to look at. Claims the first domain of P:long (it queued more
  -- than the spill threshold, and spills down to the kept ones) whose tail is cold: its next slot
  -- is far (a long delay, a block, an open circuit, a pause), or its kept requests alone take that
  -- long at its delay (a big site's queue, most of which waits hours), and returns the shard's run, the domain and the
  -- tail of its queue beyond the kept ones (priority, request pairs, lowest priority first), left
  -- in place: the mover writes them to the table first, then removes them (``spill_remove``).
  -- Nothing ({}) if none.
  local claimant, seconds, cold = ARGV[8], tonumber(ARGV[9]), tonumber(ARGV[10])
  local keep, most = tonumber(ARGV[11]), tonumber(ARGV[12])
  local scan = redis.call('SSCAN', P .. ':long', redis.call('GET', P .. ':long_cursor') or '0', 'COUNT', ARGV[13])
  if scan[1] == '0' then  -- a full round: no key left behind where there is nothing to scan
    redis.call('DEL', P .. ':long_cursor')
  else
    redis.call('SET', P .. ':long_cursor', scan[1])
  end
  for _, d in ipairs(scan[2]) do
    local n = domain_len(d)
    local ready_at = tonumber(redis.call('ZSCORE', P .. ':ready', d) or '')
    local tail_at = ready_at and math.max(ready_at, now) + keep * num(redis.call('HGET', dkey(d), 'delay'), default_delay)
    if n <= keep then
      redis.call('SREM', P .. ':long', d)
    elseif (not tail_at or tail_at > now + cold) and claim(d, claimant, seconds) then
      local tail, wanted = {run_name(claimant), d}, math.min(n - keep, most)
      for _, prio in ipairs(redis.call('ZREVRANGE', prios_key(d), 0, -1)) do
        if wanted <= 0 then break end
        local taken = redis.call('LRANGE', list_key(d, prio), -wanted, -1)
        for _, request in ipairs(taken) do
          table.insert(tail, prio)
          table.insert(tail, request)
        end
        wanted = wanted - #taken
      end
      return tail
    end
  end
  return {}

elseif op == 'spill_remove' then
  -- ARGV[8..11]: domain, claimant, requests kept, refill length; then the priority, request pairs written to
  -- the table. Removes each one still queued (one occurrence) and counts it spilled; returns 1 or
  -- 0 for each (0: it had left the queue, its row goes), or nothing if the claim was lost
  -- (another mover has the domain: the rows stay, a duplicate at worst).
  local d, claimant = ARGV[8], ARGV[9]
  if not holds(d, claimant) then return false end
  local flags, removed = {}, 0
  for i = 12, #ARGV, 2 do
    local lk = list_key(d, ARGV[i])
    local n = redis.call('LREM', lk, -1, ARGV[i + 1])
    if n > 0 and redis.call('LLEN', lk) == 0 then redis.call('ZREM', prios_key(d), ARGV[i]) end
    removed = removed + n
    table.insert(flags, n)
  end
  redis.call('DECRBY', P .. ':queued', removed)
  redis.call('HINCRBY', dkey(d), 'spilled', removed)
  redis.call('INCRBY', P .. ':spilled', removed)
  if domain_len(d) <= tonumber(ARGV[10]) then redis.call('SREM', P .. ':long', d) end  -- spilled down
  note_if_low(d, tonumber(ARGV[11]))  -- its queue may have run low meanwhile
  redis.call('DEL', mover_key(d))
  refresh(d)
  return flags

elseif op == 'refill_take' then
  -- ARGV[8..11]: claimant, claim seconds, requests kept, the length under which a queue is
  -- refilled. Claims the first domain due for a refill; returns the shard's run, the domain and
  -- how many requests to bring back; nothing ({}) if none.
  local claimant, seconds, keep, below = ARGV[8], tonumber(ARGV[9]), tonumber(ARGV[10]), tonumber(ARGV[11])
  for _, d in ipairs(redis.call('ZRANGEBYSCORE', P .. ':refill', '-inf', now, 'LIMIT', 0, 16)) do
    local n = domain_len(d)
    if num(redis.call('HGET', dkey(d), 'spilled'), 0) <= 0 or n >= below then
      redis.call('ZREM', P .. ':refill', d)
    elseif claim(d, claimant, seconds) then
      redis.call('ZADD', P .. ':refill', now + seconds, d)  -- tried again if this mover dies
      return {run_name(claimant), d, tostring(keep - n)}
    end
  end
  return {}

elseif op == 'refill' then
  -- ARGV[8..11]: domain, claimant, 1 if the table holds more of its requests, the refill length;
  -- then the priority, request pairs brought back from the table (in priority order), queued
  -- again without the seen filter (they were seen). How many, or nothing if the claim was lost.
  local d, claimant = ARGV[8], ARGV[9]
  if not holds(d, claimant) then return false end
  local brought = 0
  for i = 12, #ARGV, 2 do
    enqueue(d, ARGV[i], ARGV[i + 1], false)
    brought = brought + 1
  end
  local had = num(redis.call('HGET', dkey(d), 'spilled'), 0)
  local left = 0
  if ARGV[10] == '1' then left = math.max(had - brought, 1) end  -- the table says whether any are left
  if left > 0 then redis.call('HSET', dkey(d), 'spilled', left) else redis.call('HDEL', dkey(d), 'spilled') end
  redis.call('INCRBY', P .. ':spilled', left - had)
  if left > 0 and domain_len(d) < tonumber(ARGV[11]) then
    redis.call('ZADD', P .. ':refill', now, d)
  else
    redis.call('ZREM', P .. ':refill', d)
  end
  redis.call('DEL', mover_key(d))
  refresh(d)
  return brought

elseif op == 'spill_run' then
  -- ARGV[8]: claimant. The shard's run (made now if it has none).
  return run_name(ARGV[8])
end
return redis.error_reply('unknown frontier operation ' .. tostring(op))
