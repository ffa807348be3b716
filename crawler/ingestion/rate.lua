-- The token bucket of rate.py for one site, shared by the processes of a crawl, on Redis's
-- clock (the processes' clocks may differ).
--
-- KEYS[1]  the site's bucket, a hash: tokens, at (seconds)
-- ARGV     rate (a second), burst, wanted
-- returns  how many of the wanted URLs may be added

local time = redis.call("TIME")
local now = tonumber(time[1]) + tonumber(time[2]) / 1000000
local rate, burst, wanted = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local state = redis.call("HMGET", KEYS[1], "tokens", "at")
local tokens, at = tonumber(state[1]) or burst, tonumber(state[2]) or now
tokens = math.min(burst, tokens + math.max(0, now - at) * rate)
local granted = math.min(wanted, math.floor(tokens))
redis.call("HSET", KEYS[1], "tokens", tostring(tokens - granted), "at", tostring(now))
-- a full bucket is what a missing key means
redis.call("EXPIRE", KEYS[1], math.ceil(burst / rate) + 1)
return granted
