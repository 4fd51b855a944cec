package queue

import "github.com/redis/go-redis/v9"

// The scripts below each touch the keys of one topic×slot (one hash tag).
// Every one reads "now" from Redis's TIME, in whole milliseconds rounded down:
// a score s is due when s <= now, so an integer score is never claimed before
// its millisecond has begun and a fractional one never before its instant.
//
// Scores travel as strings: Redis turns Lua numbers into integers on return,
// which would cut fractional due times.

// nowLua sets the local "now" (ms, integer-valued float) from TIME.
const nowLua = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
`

// idsLua defines the helpers that keep the :ids index (envelope id -> member)
// right: an id names its member while that member is scheduled or in flight.
//
// idof(m) is the id of an envelope member, or "" when m is not one (cjson
// under pcall, so a malformed member never fails the script). Go passes ids
// it decoded itself on the hot paths (ack, retry); idof serves the members a
// script finds on its own (-inf and +inf scores).
// unmap(ids, sched, inflight, id, m) drops ids[id] only when it still names m
// and m is neither scheduled nor in flight.
const idsLua = `
local function idof(m)
  local ok, v = pcall(cjson.decode, m)
  if ok and type(v) == 'table' and type(v['id']) == 'string' then return v['id'] end
  return ''
end
local function unmap(ids, sched, inflight, id, m)
  if id ~= '' and redis.call('HGET', ids, id) == m
    and not redis.call('ZSCORE', sched, m) and not redis.call('ZSCORE', inflight, m) then
    redis.call('HDEL', ids, id)
  end
end
`

// claimScript moves due members to the in-flight set.
//
// KEYS[1] -> scheduled ZSET
// KEYS[2] -> inflight ZSET
// KEYS[3] -> due HASH
// KEYS[4] -> attempts HASH
// KEYS[5] -> dead ZSET
// KEYS[6] -> dead reason HASH
// KEYS[7] -> ids HASH (envelope topics)
// ARGV[1] -> most members to claim
// ARGV[2] -> lease, ms
// ARGV[3] -> "1" when the topic's members are envelopes
//
// Returns {now, next, m1, due1, attempts1, m2, …}: now is Redis's time (ms,
// with its microseconds as a fraction, so the scanner can sleep until the
// next due time to the microsecond), next is the lowest score left in the
// scheduled set ("" when empty), due is the original due time (kept from the
// first claim through retries and reaps), attempts the failed attempts so
// far. A score of -inf can never be honoured: such a member goes to the dead
// set instead (and, for an envelope, leaves the ids index). Claiming leaves
// the ids index alone: an id keeps naming its member while it is in flight.
//
// When nothing is due it only reads the first score: an idle slot costs one
// command besides TIME. Otherwise the records of the claimed members are read
// and written with one variadic command per chunk of 256, not one per member.
var claimScript = redis.NewScript(nowLua + idsLua + `
local out = {string.format('%.3f', tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000), ''}
local head = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
if not head[2] or tonumber(head[2]) > now then
  if head[2] then out[2] = head[2] end
  return out
end
local limit = tonumber(ARGV[1])
local deadline = now + tonumber(ARGV[2])
local items = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', string.format('%.0f', now), 'WITHSCORES', 'LIMIT', 0, limit)
local n = #items / 2
if n > 0 then
  redis.call('ZREMRANGEBYRANK', KEYS[1], 0, n - 1)
  local failed = redis.call('HLEN', KEYS[4]) > 0
  local ms, ss = {}, {}
  for i = 1, #items, 2 do
    local m, s = items[i], items[i + 1]
    if s == '-inf' then
      redis.call('ZADD', KEYS[5], now, m)
      redis.call('HSET', KEYS[6], m, 'due time -inf can never be honoured')
      redis.call('HDEL', KEYS[3], m)
      redis.call('HDEL', KEYS[4], m)
      if ARGV[3] == '1' then unmap(KEYS[7], KEYS[1], KEYS[2], idof(m), m) end
    else
      ms[#ms + 1], ss[#ss + 1] = m, s
    end
  end
  for c = 1, #ms, 256 do
    local last = math.min(c + 255, #ms)
    local chunk = {unpack(ms, c, last)}
    local dues = redis.call('HMGET', KEYS[3], unpack(chunk))
    local atts = failed and redis.call('HMGET', KEYS[4], unpack(chunk)) or {}
    local record, lease = {}, {}
    for j = 1, #chunk do
      local m, due = chunk[j], dues[j]
      if not due then
        due = ss[c + j - 1]
        record[#record + 1] = m
        record[#record + 1] = due
      end
      lease[#lease + 1] = deadline
      lease[#lease + 1] = m
      out[#out + 1] = m
      out[#out + 1] = due
      out[#out + 1] = atts[j] or '0'
    end
    if #record > 0 then redis.call('HSET', KEYS[3], unpack(record)) end
    redis.call('ZADD', KEYS[2], unpack(lease))
  end
end
local nxt = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
if nxt[2] then out[2] = nxt[2] end
return out
`)

// ackScript forgets members the broker confirmed.
//
// KEYS[1] -> inflight ZSET
// KEYS[2] -> due HASH
// KEYS[3] -> attempts HASH
// KEYS[4] -> scheduled ZSET
// KEYS[5] -> ids HASH (envelope topics)
// ARGV    -> member1, id1, member2, id2, … (id "" for raw members)
//
// Returns how many were still in flight. A member no longer in flight (its
// lease expired and it was reaped, or the producer replaced it) is left
// alone. An acked envelope leaves the ids index unless its member was
// scheduled again meanwhile. Members are looked up and forgotten with one
// variadic command per chunk of 256, not one per member.
var ackScript = redis.NewScript(idsLua + `
local n = 0
local failed = redis.call('HLEN', KEYS[3]) > 0
local seen = {}
for c = 1, #ARGV, 512 do
  local ms, ids = {}, {}
  for i = c, math.min(c + 510, #ARGV - 1), 2 do
    if not seen[ARGV[i]] then
      seen[ARGV[i]] = true
      ms[#ms + 1], ids[#ids + 1] = ARGV[i], ARGV[i + 1]
    end
  end
  if #ms > 0 then
    local scores = redis.call('ZMSCORE', KEYS[1], unpack(ms))
    local held, heldIDs = {}, {}
    for j = 1, #ms do
      if scores[j] then
        held[#held + 1], heldIDs[#heldIDs + 1] = ms[j], ids[j]
      end
    end
    if #held > 0 then
      redis.call('ZREM', KEYS[1], unpack(held))
      redis.call('HDEL', KEYS[2], unpack(held))
      if failed then redis.call('HDEL', KEYS[3], unpack(held)) end
      for j = 1, #held do
        unmap(KEYS[5], KEYS[4], KEYS[1], heldIDs[j], held[j])
      end
      n = n + #held
    end
  end
end
return n
`)

// retryScript records a failed publish of one member.
//
// KEYS[1] -> scheduled ZSET
// KEYS[2] -> inflight ZSET
// KEYS[3] -> due HASH
// KEYS[4] -> attempts HASH
// KEYS[5] -> dead ZSET
// KEYS[6] -> dead reason HASH
// KEYS[7] -> ids HASH (envelope topics)
// ARGV[1] -> member
// ARGV[2] -> back-off before the next attempt, ms
// ARGV[3] -> max attempts
// ARGV[4] -> "1" when the failure is permanent (dead-letter at once)
// ARGV[5] -> error text
// ARGV[6] -> the member's envelope id ("" for raw or undecodable members)
//
// Returns -1 when the member is not in flight (someone else handled it: no
// change), 0 when it was dead-lettered, else the attempts so far. A member the
// producer rescheduled meanwhile keeps the producer's score. A dead-lettered
// envelope leaves the ids index; one waiting to retry keeps its id.
var retryScript = redis.NewScript(nowLua + idsLua + `
local m = ARGV[1]
if not redis.call('ZSCORE', KEYS[2], m) then return -1 end
redis.call('ZREM', KEYS[2], m)
local n = redis.call('HINCRBY', KEYS[4], m, 1)
if ARGV[4] == '1' or n >= tonumber(ARGV[3]) then
  redis.call('ZADD', KEYS[5], now, m)
  redis.call('HSET', KEYS[6], m, ARGV[5])
  redis.call('HDEL', KEYS[3], m)
  redis.call('HDEL', KEYS[4], m)
  unmap(KEYS[7], KEYS[1], KEYS[2], ARGV[6], m)
  return 0
end
redis.call('ZADD', KEYS[1], 'NX', now + tonumber(ARGV[2]), m)
return n
`)

// releaseScript returns claimed members without counting an attempt (the sink
// lost its connection, or the daemon is shutting down).
//
// KEYS[1] -> scheduled ZSET
// KEYS[2] -> inflight ZSET
// KEYS[3] -> due HASH
// ARGV    -> members
//
// Each goes back at its original due time, so slot order is kept. Returns how
// many were still in flight.
var releaseScript = redis.NewScript(nowLua + `
local n = 0
for i = 1, #ARGV do
  local m = ARGV[i]
  if redis.call('ZREM', KEYS[2], m) == 1 then
    local due = redis.call('HGET', KEYS[3], m) or string.format('%.0f', now)
    redis.call('ZADD', KEYS[1], 'NX', due, m)
    n = n + 1
  end
end
return n
`)

// reapScript returns expired leases and sweeps stale records.
//
// KEYS[1] -> scheduled ZSET
// KEYS[2] -> inflight ZSET
// KEYS[3] -> due HASH
// KEYS[4] -> attempts HASH
// KEYS[5] -> dead ZSET
// KEYS[6] -> dead reason HASH
// KEYS[7] -> ids HASH (envelope topics)
// ARGV[1] -> most members to reap (and HSCAN COUNT of the sweep)
// ARGV[2] -> HSCAN cursor ("0" starts a sweep)
// ARGV[3] -> what the sweep scans: "due" (the due HASH) or "ids" (the ids HASH)
// ARGV[4] -> "1" when the topic's members are envelopes
//
// Members whose lease passed go back to scheduled at their original due time
// (so they are due at once and keep their order), unless the producer
// rescheduled them meanwhile; an envelope keeps its id. The "due" sweep drops
// :due/:attempts records of members that are in neither set (cancelled while
// waiting to retry); the "ids" sweep drops ids whose member is in neither set
// (acked, dead-lettered or cancelled by a producer that skipped the index). A
// score of +inf can never fall due: such members go to the dead set.
//
// Returns {reaped, next cursor, swept, dead}.
var reapScript = redis.NewScript(nowLua + idsLua + `
local limit = tonumber(ARGV[1])
local nowstr = string.format('%.0f', now)
local expired = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', nowstr, 'LIMIT', 0, limit)
for _, m in ipairs(expired) do
  redis.call('ZREM', KEYS[2], m)
  local due = redis.call('HGET', KEYS[3], m) or nowstr
  redis.call('ZADD', KEYS[1], 'NX', due, m)
end
local swept = 0
local scan
if ARGV[3] == 'ids' then
  scan = redis.call('HSCAN', KEYS[7], ARGV[2], 'COUNT', limit)
  local fields = scan[2]
  for i = 1, #fields, 2 do
    local m = fields[i + 1]
    if not redis.call('ZSCORE', KEYS[2], m) and not redis.call('ZSCORE', KEYS[1], m) then
      redis.call('HDEL', KEYS[7], fields[i])
      swept = swept + 1
    end
  end
else
  scan = redis.call('HSCAN', KEYS[3], ARGV[2], 'COUNT', limit)
  local fields = scan[2]
  for i = 1, #fields, 2 do
    local m = fields[i]
    if not redis.call('ZSCORE', KEYS[2], m) and not redis.call('ZSCORE', KEYS[1], m) then
      redis.call('HDEL', KEYS[3], m)
      redis.call('HDEL', KEYS[4], m)
      swept = swept + 1
    end
  end
end
local inf = redis.call('ZRANGEBYSCORE', KEYS[1], '+inf', '+inf', 'LIMIT', 0, limit)
for _, m in ipairs(inf) do
  redis.call('ZREM', KEYS[1], m)
  redis.call('ZADD', KEYS[5], now, m)
  redis.call('HSET', KEYS[6], m, 'due time +inf can never be honoured')
  redis.call('HDEL', KEYS[3], m)
  redis.call('HDEL', KEYS[4], m)
  if ARGV[4] == '1' then unmap(KEYS[7], KEYS[1], KEYS[2], idof(m), m) end
end
return {#expired, scan[1], swept, #inf}
`)

// statsScript reads the backlog of one slot.
//
// KEYS[1] -> scheduled ZSET
// KEYS[2] -> inflight ZSET
// KEYS[3] -> dead ZSET
//
// Returns {now, scheduled, overdue, inflight, dead, next due or "", oldest
// overdue or ""}.
var statsScript = redis.NewScript(nowLua + `
local nowstr = string.format('%.0f', now)
local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local overdue = redis.call('ZCOUNT', KEYS[1], '-inf', nowstr)
local nxt = ''
local oldest = ''
if first[2] then
  if overdue > 0 then
    oldest = first[2]
    local up = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. nowstr, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
    if up[2] then nxt = up[2] end
  else
    nxt = first[2]
  end
end
return {nowstr, redis.call('ZCARD', KEYS[1]), overdue, redis.call('ZCARD', KEYS[2]), redis.call('ZCARD', KEYS[3]), nxt, oldest}
`)
