package queue

import "github.com/redis/go-redis/v9"

// requeueScript moves dead members back to the scheduled set, due now.
//
// KEYS[1] -> scheduled ZSET
// KEYS[2] -> inflight ZSET
// KEYS[3] -> due HASH
// KEYS[4] -> attempts HASH
// KEYS[5] -> dead ZSET
// KEYS[6] -> dead reason HASH
// KEYS[7] -> ids HASH
// ARGV[1] -> wake channel ("" publishes nothing)
// ARGV[2] -> wake payload before the score
// ARGV[3…] -> member1, id1, member2, id2, … (id "" for raw or undecodable
// members)
//
// Each member still dead starts over: no attempts, due at Redis's now (a
// member the producer scheduled again meanwhile keeps the producer's score).
// An envelope whose id already names another scheduled or in-flight member
// (a newer version) stays dead and counts as skipped; otherwise its id names
// it again. Returns {requeued, skipped}.
var requeueScript = redis.NewScript(nowLua + `
local nowstr = string.format('%.0f', now)
local moved, skipped = 0, 0
for i = 3, #ARGV, 2 do
  local m, id = ARGV[i], ARGV[i + 1]
  if redis.call('ZSCORE', KEYS[5], m) then
    local cur = false
    if id ~= '' then cur = redis.call('HGET', KEYS[7], id) end
    if cur and cur ~= m and (redis.call('ZSCORE', KEYS[1], cur) or redis.call('ZSCORE', KEYS[2], cur)) then
      skipped = skipped + 1
    else
      redis.call('ZREM', KEYS[5], m)
      redis.call('HDEL', KEYS[6], m)
      redis.call('HDEL', KEYS[3], m)
      redis.call('HDEL', KEYS[4], m)
      redis.call('ZADD', KEYS[1], 'NX', nowstr, m)
      if id ~= '' then redis.call('HSET', KEYS[7], id, m) end
      moved = moved + 1
    end
  end
end
if moved > 0 and ARGV[1] ~= '' then
  redis.call('PUBLISH', ARGV[1], ARGV[2] .. nowstr)
end
return {moved, skipped}
`)

// purgeScript deletes dead members for good.
//
// KEYS[1] -> dead ZSET
// KEYS[2] -> dead reason HASH
// ARGV    -> members
//
// Returns how many were dead.
var purgeScript = redis.NewScript(`
local n = 0
for i = 1, #ARGV do
  if redis.call('ZREM', KEYS[1], ARGV[i]) == 1 then
    redis.call('HDEL', KEYS[2], ARGV[i])
    n = n + 1
  end
end
return n
`)

// purgeAllScript empties the dead set of one slot.
//
// KEYS[1] -> dead ZSET
// KEYS[2] -> dead reason HASH
//
// Returns how many members it held.
var purgeAllScript = redis.NewScript(`
local n = redis.call('ZCARD', KEYS[1])
redis.call('UNLINK', KEYS[1], KEYS[2])
return n
`)
