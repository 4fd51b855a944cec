package queue

// The scripts of the previous minor version (before the id index), copied from
// its source (git c4e7502) with their helpers inlined, to check that data it
// wrote keeps working and that a rolling mix of its daemons and this
// version's loses nothing. Generated once; never edit them to match new code.

import "github.com/redis/go-redis/v9"

// prevSchedule is the previous version's scheduleScript.
var prevSchedule = redis.NewScript(`
local sched, inflight, dues, attempts, dead, reasons, ids, paused = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8]

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local function score_of(mode, value)
  if mode == 'in' then
    local d = tonumber(value)
    local s = now + d
    if d > 0 and tonumber(t[2]) % 1000 > 0 then s = s + 1 end
    if s < 0 or s > 9007199254740992 then
      return nil, string.format('%.0f', s)
    end
    return string.format('%.0f', s)
  end
  return value
end
local function wake(channel, prefix, score)
  if channel ~= '' then redis.call('PUBLISH', channel, prefix .. score) end
end

local function forget(m)
  redis.call('HDEL', dues, m)
  redis.call('HDEL', attempts, m)
  if not redis.call('ZSCORE', dead, m) then redis.call('HDEL', reasons, m) end
end

local function put(m, id, score)
  local replaced = 0
  if id == '' then
    if redis.call('ZSCORE', sched, m) then replaced = 1 end
  else
    local old = redis.call('HGET', ids, id)
    if old then
      if redis.call('ZREM', sched, old) == 1 then replaced = 1 end
      if redis.call('ZREM', inflight, old) == 1 then replaced = 2 end
      forget(old)
    end
    if old ~= m and redis.call('ZREM', sched, m) == 1 then
      forget(m)
    end
    redis.call('HSET', ids, id, m)
  end
  redis.call('ZADD', sched, score, m)
  return replaced
end

local score, bad = score_of(ARGV[3], ARGV[4])
if not score then
  return redis.error_reply('ERR due time ' .. bad .. ' ms cannot be honoured')
end
local replaced = put(ARGV[1], ARGV[2], score)
wake(ARGV[5], ARGV[6], score)
return {score, replaced}
`)

// prevAck is the previous version's ackScript.
var prevAck = redis.NewScript(`
local sched, inflight, dues, attempts, dead, reasons, ids, paused = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8]

local function idof(m)
  local ok, v = pcall(cjson.decode, m)
  if ok and type(v) == 'table' and type(v['id']) == 'string' then return v['id'] end
  return ''
end
local function unmap(id, m)
  if id ~= '' and redis.call('HGET', ids, id) == m
    and not redis.call('ZSCORE', sched, m) and not redis.call('ZSCORE', inflight, m) then
    redis.call('HDEL', ids, id)
  end
end
local chunk = 256

local n = 0
local failed = redis.call('HLEN', attempts) > 0
local seen = {}
for c = 1, #ARGV, 2 * chunk do
  local ms, mids = {}, {}
  for i = c, math.min(c + 2 * chunk - 2, #ARGV - 1), 2 do
    if not seen[ARGV[i]] then
      seen[ARGV[i]] = true
      ms[#ms + 1], mids[#mids + 1] = ARGV[i], ARGV[i + 1]
    end
  end
  if #ms > 0 then
    local scores = redis.call('ZMSCORE', inflight, unpack(ms))
    local held, heldIDs = {}, {}
    for j = 1, #ms do
      if scores[j] then
        held[#held + 1], heldIDs[#heldIDs + 1] = ms[j], mids[j]
      end
    end
    if #held > 0 then
      redis.call('ZREM', inflight, unpack(held))
      redis.call('HDEL', dues, unpack(held))
      if failed then
        redis.call('HDEL', attempts, unpack(held))
        local died, drop = redis.call('ZMSCORE', dead, unpack(held)), {}
        for j = 1, #held do
          if not died[j] then drop[#drop + 1] = held[j] end
        end
        if #drop > 0 then redis.call('HDEL', reasons, unpack(drop)) end
      end
      for j = 1, #held do
        unmap(heldIDs[j], held[j])
      end
      n = n + #held
    end
  end
end
return n
`)

// prevRetry is the previous version's retryScript.
var prevRetry = redis.NewScript(`
local sched, inflight, dues, attempts, dead, reasons, ids, paused = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8]

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local function idof(m)
  local ok, v = pcall(cjson.decode, m)
  if ok and type(v) == 'table' and type(v['id']) == 'string' then return v['id'] end
  return ''
end
local function unmap(id, m)
  if id ~= '' and redis.call('HGET', ids, id) == m
    and not redis.call('ZSCORE', sched, m) and not redis.call('ZSCORE', inflight, m) then
    redis.call('HDEL', ids, id)
  end
end

local function bury(m, why, id)
  redis.call('ZADD', dead, now, m)
  redis.call('HSET', reasons, m, why)
  redis.call('HDEL', dues, m)
  redis.call('HDEL', attempts, m)
  unmap(id, m)
end

local m = ARGV[1]
if not redis.call('ZSCORE', inflight, m) then return -1 end
redis.call('ZREM', inflight, m)
local n = redis.call('HINCRBY', attempts, m, 1)
if ARGV[4] == '1' or n >= tonumber(ARGV[3]) then
  bury(m, ARGV[5], ARGV[6])
  return 0
end
redis.call('HSET', reasons, m, ARGV[5])
redis.call('ZADD', sched, 'NX', now + tonumber(ARGV[2]), m)
return n
`)

// prevRelease is the previous version's releaseScript.
var prevRelease = redis.NewScript(`
local sched, inflight, dues, attempts, dead, reasons, ids, paused = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8]

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local n = 0
for i = 1, #ARGV do
  local m = ARGV[i]
  if redis.call('ZREM', inflight, m) == 1 then
    local due = redis.call('HGET', dues, m) or string.format('%.0f', now)
    redis.call('ZADD', sched, 'NX', due, m)
    n = n + 1
  end
end
return n
`)

// prevReap is the previous version's reapScript.
var prevReap = redis.NewScript(`
local sched, inflight, dues, attempts, dead, reasons, ids, paused = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8]

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local function idof(m)
  local ok, v = pcall(cjson.decode, m)
  if ok and type(v) == 'table' and type(v['id']) == 'string' then return v['id'] end
  return ''
end
local function unmap(id, m)
  if id ~= '' and redis.call('HGET', ids, id) == m
    and not redis.call('ZSCORE', sched, m) and not redis.call('ZSCORE', inflight, m) then
    redis.call('HDEL', ids, id)
  end
end

local function bury(m, why, id)
  redis.call('ZADD', dead, now, m)
  redis.call('HSET', reasons, m, why)
  redis.call('HDEL', dues, m)
  redis.call('HDEL', attempts, m)
  unmap(id, m)
end

local function forget(m)
  redis.call('HDEL', dues, m)
  redis.call('HDEL', attempts, m)
  if not redis.call('ZSCORE', dead, m) then redis.call('HDEL', reasons, m) end
end

local limit = tonumber(ARGV[1])
local nowstr = string.format('%.0f', now)
local expired = redis.call('ZRANGEBYSCORE', inflight, '-inf', nowstr, 'LIMIT', 0, limit)
for _, m in ipairs(expired) do
  redis.call('ZREM', inflight, m)
  local due = redis.call('HGET', dues, m) or nowstr
  redis.call('ZADD', sched, 'NX', due, m)
end
local swept = 0
local scan
if ARGV[3] == 'ids' then
  scan = redis.call('HSCAN', ids, ARGV[2], 'COUNT', limit)
  local fields = scan[2]
  for i = 1, #fields, 2 do
    local m = fields[i + 1]
    if not redis.call('ZSCORE', inflight, m) and not redis.call('ZSCORE', sched, m) then
      redis.call('HDEL', ids, fields[i])
      swept = swept + 1
    end
  end
else
  scan = redis.call('HSCAN', dues, ARGV[2], 'COUNT', limit)
  local fields = scan[2]
  for i = 1, #fields, 2 do
    local m = fields[i]
    if not redis.call('ZSCORE', inflight, m) and not redis.call('ZSCORE', sched, m) then
      forget(m)
      swept = swept + 1
    end
  end
end
local envelopes = ARGV[4] == '1'
local inf = redis.call('ZRANGEBYSCORE', sched, '+inf', '+inf', 'LIMIT', 0, limit)
for _, m in ipairs(inf) do
  redis.call('ZREM', sched, m)
  bury(m, 'due time +inf can never be honoured', envelopes and idof(m) or '')
end
local head = redis.call('ZRANGE', inflight, 0, 0, 'WITHSCORES')
return {#expired, scan[1], swept, #inf, nowstr, head[2] or ''}
`)

// prevClaim is the previous version's claimScript.
var prevClaim = redis.NewScript(`
local sched, inflight, dues, attempts, dead, reasons, ids, paused = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8]

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local function idof(m)
  local ok, v = pcall(cjson.decode, m)
  if ok and type(v) == 'table' and type(v['id']) == 'string' then return v['id'] end
  return ''
end
local function unmap(id, m)
  if id ~= '' and redis.call('HGET', ids, id) == m
    and not redis.call('ZSCORE', sched, m) and not redis.call('ZSCORE', inflight, m) then
    redis.call('HDEL', ids, id)
  end
end

local function bury(m, why, id)
  redis.call('ZADD', dead, now, m)
  redis.call('HSET', reasons, m, why)
  redis.call('HDEL', dues, m)
  redis.call('HDEL', attempts, m)
  unmap(id, m)
end
local chunk = 256

local out = {string.format('%.3f', tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000), '', '0', '0'}
if redis.call('HLEN', paused) > 0 then
  out[3] = '1'
  return out
end
local horizon = now + math.max(tonumber(ARGV[4] or '0') or 0, 0)
local head = redis.call('ZRANGE', sched, 0, 0, 'WITHSCORES')
if not head[2] or tonumber(head[2]) > horizon then
  if head[2] then out[2] = head[2] end
  return out
end
local limit = tonumber(ARGV[1])
local deadline = horizon + tonumber(ARGV[2])
local envelopes = ARGV[3] == '1'
local items = redis.call('ZRANGEBYSCORE', sched, '-inf', string.format('%.0f', horizon), 'WITHSCORES', 'LIMIT', 0, limit)
local n = #items / 2
if n > 0 then
  redis.call('ZREMRANGEBYRANK', sched, 0, n - 1)
  local ms, ss, buried = {}, {}, 0
  for i = 1, #items, 2 do
    local m, s = items[i], items[i + 1]
    if s == '-inf' then
      bury(m, 'due time -inf can never be honoured', envelopes and idof(m) or '')
      buried = buried + 1
    else
      ms[#ms + 1], ss[#ss + 1] = m, s
    end
  end
  out[4] = tostring(buried)
  for c = 1, #ms, chunk do
    local last = math.min(c + chunk - 1, #ms)
    local part = {unpack(ms, c, last)}
    local known = redis.call('HMGET', dues, unpack(part))
    local again, atts = {}, {}
    for j = 1, #part do
      if known[j] then again[#again + 1] = part[j] end
    end
    if #again > 0 then
      local a = redis.call('HMGET', attempts, unpack(again))
      for j = 1, #again do atts[again[j]] = a[j] end
    end
    local record, lease = {}, {}
    for j = 1, #part do
      local m, due = part[j], known[j]
      if not due then
        due = ss[c + j - 1]
        record[#record + 1] = m
        record[#record + 1] = due
      end
      lease[#lease + 1] = deadline
      lease[#lease + 1] = m
      out[#out + 1] = m
      out[#out + 1] = due
      out[#out + 1] = atts[m] or '0'
      out[#out + 1] = ss[c + j - 1]
    end
    if #record > 0 then redis.call('HSET', dues, unpack(record)) end
    redis.call('ZADD', inflight, unpack(lease))
  end
end
if n >= limit then return out end
local nxt = redis.call('ZRANGE', sched, 0, 0, 'WITHSCORES')
if nxt[2] then out[2] = nxt[2] end
return out
`)
