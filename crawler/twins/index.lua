-- One site's fingerprints, shared by the processes of a crawl: find the closest page within
-- the distance, or keep this one, in one atomic step (two processes fetching twins at once
-- cannot both keep theirs).
--
-- KEYS[1]  the site's index, a hash:
--            n           the fingerprints held
--            f:<fp>      the URL of the first page with fingerprint <fp> (16 hex digits)
--            <block>     the fingerprints (16 hex digits each, one after another) with that block
-- ARGV     url, fingerprint (16 hex digits), max distance, capacity, then the fingerprint's blocks
-- returns  {distance, twin's URL}, or {-1} (kept, or held already) or {-2} (the site is full)

local function bits_set(x)
  local count = 0
  while x ~= 0 do
    x = bit.band(x, x - 1)
    count = count + 1
  end
  return count
end

local function apart(high, low, other)
  return bits_set(bit.bxor(high, tonumber(string.sub(other, 1, 8), 16)))
    + bits_set(bit.bxor(low, tonumber(string.sub(other, 9, 16), 16)))
end

local index, url, fp = KEYS[1], ARGV[1], ARGV[2]
local max_distance, capacity = tonumber(ARGV[3]), tonumber(ARGV[4])
local high, low = tonumber(string.sub(fp, 1, 8), 16), tonumber(string.sub(fp, 9, 16), 16)
local best, best_url, looked = max_distance + 1, false, {}
for i = 5, #ARGV do
  local members = redis.call("HGET", index, ARGV[i])
  if members then
    for j = 1, #members, 16 do
      local other = string.sub(members, j, j + 15)
      if not looked[other] then
        looked[other] = true
        local d = apart(high, low, other)
        if d < best then
          local other_url = redis.call("HGET", index, "f:" .. other)
          if other_url ~= url then  -- a page fetched again is not its own twin
            best, best_url = d, other_url
          end
        end
      end
    end
  end
end
if best_url then
  return {best, best_url}
end
if redis.call("HEXISTS", index, "f:" .. fp) == 1 then
  return {-1}
end
if tonumber(redis.call("HGET", index, "n") or "0") >= capacity then
  return {-2}
end
redis.call("HSET", index, "f:" .. fp, url)
redis.call("HINCRBY", index, "n", 1)
for i = 5, #ARGV do
  redis.call("HSET", index, ARGV[i], (redis.call("HGET", index, ARGV[i]) or "") .. fp)
end
return {-1}
