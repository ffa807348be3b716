-- The shared frontier: every change to it is one call of this script, so it is atomic across
-- processes. KEYS[1] is the crawl's key prefix; ARGV: operation, now (Unix seconds), the default
-- delay, the default per-domain concurrency, whether robots.txt gates domains (1/0), the lease
-- time, then the operation's own arguments.
--
-- Keys under the prefix P:
--   P:ready          zset  domain -> when it may be handed its next request (domains with queued requests)
--   P:qp:D           zset  priorities with queued requests of domain D (score -priority: highest first)
--   P:q:D:PRIO       list  encoded requests "KEY<TAB>JSON", first in first out
--   P:queued         int   requests in the P:q lists
--   P:delayed        zset  "D<TAB>PRIO<TAB>REQUEST" -> not before (retries with backoff)
--   P:d:D            hash  domain state: next, prev, last (slot times), unsent (while the last slot's
--                          request has not left: until when at most), delay, limit, hold (set by
--                          the policy), scheme, robots_until, robots_claim, state (policy JSON)
--   P:inflight:D     zset  holders of D's concurrency (lease keys, robots:D) -> expiry
--   P:leases         zset  lease key -> expiry;   P:leasedata  hash lease key -> "D<TAB>PRIO<TAB>REQUEST"
--   P:domains        set   every domain ever queued
--   P:reclaimed      int   expired leases put back

local P = KEYS[1]
local op = ARGV[1]
local now = tonumber(ARGV[2])
local default_delay = tonumber(ARGV[3])
local default_limit = tonumber(ARGV[4])
local robots_on = ARGV[5] == '1'
local lease_seconds = tonumber(ARGV[6])

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
  local f = redis.call('HMGET', dkey(d), 'next', 'hold', 'limit', 'robots_until', 'robots_claim', 'unsent')
  local at = math.max(num(f[1], 0), num(f[2], 0), num(f[6], 0))
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

-- Take the domain's next slot for a holder starting now; returns the reservation.
local function reserve(d, holder)
  local k = dkey(d)
  local f = redis.call('HMGET', k, 'next', 'delay')
  local delay = num(f[2], default_delay)
  local reservation = fmt(now + delay)
  redis.call('HSET', k, 'prev', f[1] or fmt(0), 'next', reservation, 'last', fmt(now))
  -- The next slot counts from when this request leaves ('sent'); a dead holder's wait expires.
  if delay > 0 then redis.call('HSET', k, 'unsent', fmt(now + lease_seconds)) end
  redis.call('ZADD', inflight_key(d), now + lease_seconds, holder)
  return reservation
end

local function can_start(d)
  local f = redis.call('HMGET', dkey(d), 'next', 'hold', 'limit', 'unsent')
  return math.max(num(f[1], 0), num(f[2], 0), num(f[4], 0)) <= now and holders(d) < num(f[3], default_limit)
end

local function release_lease(key, front)
  local data = redis.call('HGET', P .. ':leasedata', key)
  redis.call('ZREM', P .. ':leases', key)
  redis.call('HDEL', P .. ':leasedata', key)
  if data then
    local d, prio, request = split3(data)
    enqueue(d, prio, request, front)
    redis.call('ZREM', inflight_key(d), key)
    refresh(d)
  end
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
    release_lease(key, true)
    redis.call('INCR', P .. ':reclaimed')
  end
end

if op == 'push' then
  -- ARGV[7..]: domain, priority, request, not before, scheme, and optionally the seen-filter set
  -- and value: a request already seen is not queued (0), in the same step that marks it seen.
  local d, prio, request, not_before, scheme = ARGV[7], ARGV[8], ARGV[9], num(ARGV[10], 0), ARGV[11]
  if ARGV[12] and redis.call('SADD', ARGV[12], ARGV[13]) == 0 then return 0 end
  local key = lease_key(request)
  -- a retry or redirect of a leased request takes its lease's place
  if redis.call('ZREM', P .. ':leases', key) == 1 then redis.call('HDEL', P .. ':leasedata', key) end
  redis.call('SADD', P .. ':domains', d)
  redis.call('HSETNX', dkey(d), 'scheme', scheme)
  if not_before > now then
    redis.call('ZADD', P .. ':delayed', not_before, d .. '\t' .. prio .. '\t' .. request)
  else
    enqueue(d, prio, request, false)
    refresh(d)
  end
  return 1

elseif op == 'pop' then
  housekeeping()
  local candidates = redis.call('ZRANGEBYSCORE', P .. ':ready', '-inf', now, 'LIMIT', 0, 16)
  for _, d in ipairs(candidates) do
    refresh(d)
    local score = redis.call('ZSCORE', P .. ':ready', d)
    if score and tonumber(score) <= now then
      local k = dkey(d)
      if robots_pending(redis.call('HGET', k, 'robots_until')) then
        -- The domain's robots.txt comes first, fetched once for all processes on the domain's slot.
        redis.call('HSET', k, 'robots_claim', fmt(now + lease_seconds))  -- a dead fetcher's claim expires
        local reservation = reserve(d, 'robots:' .. d)
        refresh(d)
        return {'robots', d, redis.call('HGET', k, 'scheme') or 'http', reservation}
      end
      local prio = redis.call('ZRANGE', prios_key(d), 0, 0)[1]
      local lk = list_key(d, prio)
      local request = redis.call('LPOP', lk)
      if redis.call('LLEN', lk) == 0 then redis.call('ZREM', prios_key(d), prio) end
      if request then
        redis.call('DECR', P .. ':queued')
        local key = lease_key(request)
        local reservation = reserve(d, key)
        redis.call('ZADD', P .. ':leases', now + lease_seconds, key)
        redis.call('HSET', P .. ':leasedata', key, d .. '\t' .. prio .. '\t' .. request)
        refresh(d)
        return {'request', d, request, reservation}
      end
      refresh(d)
    end
  end
  local first = redis.call('ZRANGE', P .. ':ready', 0, 0, 'WITHSCORES')
  local delayed = redis.call('ZRANGE', P .. ':delayed', 0, 0, 'WITHSCORES')
  local leases = redis.call('ZRANGE', P .. ':leases', 0, 0, 'WITHSCORES')
  return {'none', first[2] or '', delayed[2] or '', leases[2] or ''}

elseif op == 'ack' then
  -- ARGV[7..]: lease keys whose rows are committed
  for i = 7, #ARGV do
    redis.call('ZREM', P .. ':leases', ARGV[i])
    redis.call('HDEL', P .. ':leasedata', ARGV[i])
  end
  return 1

elseif op == 'release' then
  -- ARGV[7..]: lease keys given back unfinished (a worker closing), to the front of their queues
  for i = 7, #ARGV do release_lease(ARGV[i], true) end
  return 1

elseif op == 'try_reserve' then
  -- ARGV[7], ARGV[8]: domain, holder. For requests this process keeps (sitemap discovery).
  local d = ARGV[7]
  if not can_start(d) then return false end
  local reservation = reserve(d, ARGV[8])
  refresh(d)
  return reservation

elseif op == 'sent' then
  -- ARGV[7]: domain. The holder of the last slot leaves now: the next slot counts from now.
  local d = ARGV[7]
  local k = dkey(d)
  local f = redis.call('HMGET', k, 'next', 'delay')
  local delay = num(f[2], default_delay)
  redis.call('HSET', k, 'next', fmt(math.max(num(f[1], 0), now + delay)), 'last', fmt(now))
  redis.call('HDEL', k, 'unsent')
  refresh(d)
  return fmt(delay)  -- the delay in force, as text (Redis would cut a number to an integer)

elseif op == 'unreserve' then
  -- ARGV[7], ARGV[8]: domain, reservation. Give back an unused slot unless another was taken since.
  local k = dkey(ARGV[7])
  if redis.call('HGET', k, 'next') == ARGV[8] then
    redis.call('HSET', k, 'next', redis.call('HGET', k, 'prev') or fmt(0))
  end
  redis.call('HDEL', k, 'unsent')
  refresh(ARGV[7])
  return 1

elseif op == 'finish' then
  -- ARGV[7], ARGV[8]: domain, holder
  redis.call('ZREM', inflight_key(ARGV[7]), ARGV[8])
  refresh(ARGV[7])
  return 1

elseif op == 'update' then
  -- ARGV[7]: domain, then field/value pairs written by the policy
  local d = ARGV[7]
  if #ARGV >= 9 then redis.call('HSET', dkey(d), unpack(ARGV, 8)) end
  refresh(d)
  return 1

elseif op == 'robots_stored' then
  -- ARGV[7], ARGV[8]: domain, rules valid until
  local k = dkey(ARGV[7])
  redis.call('HSET', k, 'robots_until', ARGV[8])
  redis.call('HDEL', k, 'robots_claim')
  redis.call('ZREM', inflight_key(ARGV[7]), 'robots:' .. ARGV[7])
  refresh(ARGV[7])
  return 1
end
return redis.error_reply('unknown frontier operation ' .. tostring(op))
