package queue

import "github.com/redis/go-redis/v9"

// The producer scripts keep the :ids index of envelope topics in step with
// the sets; on raw topics they get "" for the id and leave the index alone.
// Each one that writes a due time also publishes a wake-up (see WakeChannel)
// in the same call, so a scanner sleeping until a later message looks again.

// scoreLua sets the local "score" (a string) from ARGV[mode] and ARGV[mode+1]:
// "at" takes the score as given, "in" adds a delay to Redis's TIME. A score
// past 2^53 ms cannot be held exactly, one before 1970 cannot be honoured:
// both are errors. Needs nowLua.
const scoreLua = `
local function score_of(mode, value)
  if mode == 'in' then
    local s = now + tonumber(value)
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
`

// scheduleScript schedules one member.
//
// KEYS[1] -> scheduled ZSET
// KEYS[2] -> inflight ZSET
// KEYS[3] -> due HASH
// KEYS[4] -> attempts HASH
// KEYS[5] -> ids HASH
// ARGV[1] -> member
// ARGV[2] -> envelope id ("" for a raw member)
// ARGV[3] -> "at" or "in"
// ARGV[4] -> score (ms) for "at", delay (ms) from Redis's TIME for "in"
// ARGV[5] -> wake channel ("" publishes nothing)
// ARGV[6] -> wake payload before the score ("<topic>\n<slot>\n")
//
// Returns {score, replaced}. A raw member is a plain ZADD (replaced 1 when it
// was already scheduled; a copy in flight proceeds, as with any ZADD). An
// envelope replaces whatever its id named: a scheduled member is removed
// (replaced 1); a member in flight leaves the in-flight set (replaced 2), so
// its delivery proceeds but is never retried, reaped or released, and the new
// member is the only one the id names. Either way the new member starts
// fresh: no attempts, due at its own score.
var scheduleScript = redis.NewScript(nowLua + scoreLua + `
local m, id = ARGV[1], ARGV[2]
local score, bad = score_of(ARGV[3], ARGV[4])
if not score then
  return redis.error_reply('ERR due time ' .. bad .. ' ms cannot be honoured')
end
local replaced = 0
if id == '' then
  if redis.call('ZSCORE', KEYS[1], m) then replaced = 1 end
else
  local old = redis.call('HGET', KEYS[5], id)
  if old then
    if redis.call('ZREM', KEYS[1], old) == 1 then replaced = 1 end
    if redis.call('ZREM', KEYS[2], old) == 1 then replaced = 2 end
    redis.call('HDEL', KEYS[3], old)
    redis.call('HDEL', KEYS[4], old)
  end
  if old ~= m and redis.call('ZREM', KEYS[1], m) == 1 then
    redis.call('HDEL', KEYS[3], m)
    redis.call('HDEL', KEYS[4], m)
  end
  redis.call('HSET', KEYS[5], id, m)
end
redis.call('ZADD', KEYS[1], score, m)
wake(ARGV[5], ARGV[6], score)
return {score, replaced}
`)

// cancelScript removes a message that is not yet claimed.
//
// KEYS[1] -> scheduled ZSET
// KEYS[2] -> inflight ZSET
// KEYS[3] -> due HASH
// KEYS[4] -> attempts HASH
// KEYS[5] -> ids HASH
// ARGV[1] -> member ("" to look it up by id)
// ARGV[2] -> envelope id ("" for a raw member)
//
// Returns {state, member}: state 1 when cancelled, 2 when the member is in
// flight (nothing changed), 0 when there is no such message.
var cancelScript = redis.NewScript(idsLua + `
local m, id = ARGV[1], ARGV[2]
if m == '' then
  m = redis.call('HGET', KEYS[5], id)
  if not m then return {0, ''} end
end
if redis.call('ZREM', KEYS[1], m) == 1 then
  if not redis.call('ZSCORE', KEYS[2], m) then
    redis.call('HDEL', KEYS[3], m)
    redis.call('HDEL', KEYS[4], m)
  end
  unmap(KEYS[5], KEYS[1], KEYS[2], id, m)
  return {1, m}
end
if redis.call('ZSCORE', KEYS[2], m) then return {2, m} end
unmap(KEYS[5], KEYS[1], KEYS[2], id, m)
return {0, m}
`)

// rescheduleScript moves a scheduled message to a new due time.
//
// KEYS[1] -> scheduled ZSET
// KEYS[2] -> inflight ZSET
// KEYS[3] -> due HASH
// KEYS[4] -> ids HASH
// ARGV[1] -> member ("" to look it up by id)
// ARGV[2] -> envelope id ("" for a raw member)
// ARGV[3] -> "at" or "in"
// ARGV[4] -> score (ms) for "at", delay (ms) from Redis's TIME for "in"
// ARGV[5] -> wake channel ("" publishes nothing)
// ARGV[6] -> wake payload before the score
//
// Returns {state, member, score}: state 1 when rescheduled, 2 when the member
// is in flight (nothing changed), 0 when there is no such message. A message
// waiting to retry keeps its attempts but its new time becomes its due time.
var rescheduleScript = redis.NewScript(nowLua + scoreLua + `
local m, id = ARGV[1], ARGV[2]
if m == '' then
  m = redis.call('HGET', KEYS[4], id)
  if not m then return {0, '', ''} end
end
if redis.call('ZSCORE', KEYS[1], m) then
  local score, bad = score_of(ARGV[3], ARGV[4])
  if not score then
    return redis.error_reply('ERR due time ' .. bad .. ' ms cannot be honoured')
  end
  redis.call('ZADD', KEYS[1], 'XX', score, m)
  if not redis.call('ZSCORE', KEYS[2], m) then redis.call('HDEL', KEYS[3], m) end
  wake(ARGV[5], ARGV[6], score)
  return {1, m, score}
end
if redis.call('ZSCORE', KEYS[2], m) then return {2, m, ''} end
return {0, m, ''}
`)

// getScript reads the state of one envelope by id.
//
// KEYS[1] -> scheduled ZSET
// KEYS[2] -> inflight ZSET
// KEYS[3] -> due HASH
// KEYS[4] -> attempts HASH
// KEYS[5] -> ids HASH
// ARGV[1] -> envelope id
//
// Returns {} when the id names nothing live, else {member, score or "", lease
// deadline or "", original due or "", attempts}.
var getScript = redis.NewScript(`
local m = redis.call('HGET', KEYS[5], ARGV[1])
if not m then return {} end
local score = redis.call('ZSCORE', KEYS[1], m)
local lease = redis.call('ZSCORE', KEYS[2], m)
if not score and not lease then return {} end
return {m, score or '', lease or '', redis.call('HGET', KEYS[3], m) or '', redis.call('HGET', KEYS[4], m) or '0'}
`)
