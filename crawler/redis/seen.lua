-- Marks a request seen in the crawl's seen filter; true when it had not been seen before.
-- kind 'set': one 64-bit value in a small set (the exact filter); 'bits': the bit offsets of a
-- Bloom filter's block; 'bf': one item of a RedisBloom filter (where the server has the module).
local function mark_seen(kind, key, values)
  if kind == 'set' then
    return redis.call('SADD', key, values[1]) == 1
  elseif kind == 'bits' then
    local new = false
    for i = 1, #values do
      if redis.call('SETBIT', key, values[i], 1) == 0 then new = true end
    end
    return new
  elseif kind == 'bf' then
    return redis.call('BF.ADD', key, values[1]) == 1
  end
  error('unknown seen-filter kind ' .. tostring(kind))
end

-- Whether a request counts as seen, without marking it.
local function is_seen(kind, key, values)
  if kind == 'set' then
    return redis.call('SISMEMBER', key, values[1]) == 1
  elseif kind == 'bits' then
    for i = 1, #values do
      if redis.call('GETBIT', key, values[i]) == 0 then return false end
    end
    return true
  elseif kind == 'bf' then
    return redis.call('BF.EXISTS', key, values[1]) == 1
  end
  error('unknown seen-filter kind ' .. tostring(kind))
end
