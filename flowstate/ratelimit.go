package flowstate

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/delaybridge/delaybridge/internal/luakeys"
	"github.com/delaybridge/delaybridge/queue"
)

// A topic's rate limit is a token bucket in Redis, shared by every replica:
// a scanner takes permits from it before a claim and claims only as many
// messages as it was granted, so held messages never leave the scheduled
// set. The bucket is one small HASH in the topic-wide hash tag (queue.FlowKeys),
// refilled from Redis's TIME, so replicas whose clocks disagree, or that
// come and go, still share one budget.

// BurstOf is the bucket's capacity for a rate: 100 ms of deliveries, at
// least one. The capacity is what makes the rate robust: a replica whose
// timers fire late (a loaded host, a pause) still finds the permits that
// accumulated meanwhile, up to 100 ms of them (a waiting scanner comes back
// at half), so the long-run rate holds. It does not make a second
// burstier: beside the bucket, a log of the last second's grants
// (FlowKeys.Bucket + ":log") caps every 1-second window at the rate itself.
// What a consumer sees above the rate is the jitter between a grant and its
// delivery, which can move at most one bucketful (10 %) across the edge of
// a window. 250 ms made that edge effect 25 % (375 in a second at 300/s).
func BurstOf(rate float64) float64 { return max(1, rate/10) }

// acquireScript grants permits from a topic's token bucket and window log.
//
// KEYS[1] -> FlowKeys.Bucket
// KEYS[2] -> FlowKeys.Bucket + ":log" (ZSET "<ms>:<n>" scored by ms)
// ARGV[1] -> rate, permits per second
// ARGV[2] -> burst: the bucket's capacity
// ARGV[3] -> permits wanted
// ARGV[4] -> permits given back (granted before and not used)
//
// Refills the bucket for the time since it was last touched (Redis's TIME,
// with microseconds; a clock that went back refills nothing), adds the
// permits given back (and takes them off the log), caps it at burst, and
// grants min(wanted, whole tokens, what the window has left): the window is
// the last second (1/rate seconds below 1 permit a second) and holds at most
// rate × window permits. Returns {granted, wait}: wait (ms, a decimal
// string), when none was granted, is how long until half of min(wanted,
// burst) permits (at least one) are in the bucket and the window has room,
// else "0". Both keys expire once the bucket would be full anyway. It runs
// on a full Redis (allowOOMLua): its state is two small keys, and a limited
// topic must keep draining the backlog that filled Redis.
var acquireScript = luakeys.NewScript(allowOOMLua + `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
local rate, burst, want, back = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local win = math.max(1000, 1000 / rate)
local cap = math.max(1, math.floor(rate * win / 1000 + 0.000001))
local v = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens, at = tonumber(v[1]), tonumber(v[2])
if not tokens or not at then
  tokens, at = burst, now
end
if at > now then
  at = now
end
tokens = math.min(burst, tokens + (now - at) * rate / 1000 + back)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', '(' .. string.format('%.3f', now - win))
if back > 0 then
  local last = redis.call('ZREVRANGE', KEYS[2], 0, 0, 'WITHSCORES')
  if last[2] then
    redis.call('ZADD', KEYS[2], last[2], string.format('%.3f:-%d', now, back))
  end
end
local used, oldest = 0, nil
for i, e in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1, 'WITHSCORES')) do
  if i % 2 == 1 then
    used = used + tonumber(string.match(e, ':(-?%d+)$'))
  elseif not oldest then
    oldest = tonumber(e)
  end
end
local grant = math.max(0, math.min(want, math.floor(tokens), cap - used))
tokens = tokens - grant
if grant > 0 then
  redis.call('ZADD', KEYS[2], now, string.format('%.3f:%d', now, grant))
end
local ttl = math.ceil(math.max((burst - tokens) * 1000 / rate, win)) + 1000
redis.call('HSET', KEYS[1], 'tokens', string.format('%.6f', tokens), 'at', string.format('%.3f', now))
redis.call('PEXPIRE', KEYS[1], ttl)
redis.call('PEXPIRE', KEYS[2], ttl)
local wait = 0
if grant == 0 and want > 0 then
  wait = math.max(0, math.max(1, math.min(want, burst) / 2) - tokens) * 1000 / rate
  if used >= cap and oldest then
    wait = math.max(wait, oldest + win - now)
  end
end
return {grant, string.format('%.3f', wait)}
`)

// Grant is what Acquire gave.
type Grant struct {
	// Permits is how many messages may be claimed now.
	Permits int
	// Wait is how long until the permits wanted (up to the bucket's
	// capacity) are there, when Permits is 0.
	Wait time.Duration
}

// Acquire takes up to want permits from t's rate limit of rate per second
// (over every replica), giving back the unused permits of an earlier grant
// in the same call. One round trip to the node of t's FlowKeys.
func (s *Store) Acquire(ctx context.Context, t queue.Topic, rate float64, want, giveBack int) (Grant, error) {
	if rate <= 0 || math.IsNaN(rate) {
		return Grant{}, fmt.Errorf("acquire permits of %s: rate %v is not positive", t.Name, rate)
	}
	burst := BurstOf(rate)
	k := t.FlowKeys().Bucket
	r, err := acquireScript.Run(ctx, s.rdb, []string{k, k + ":log"},
		strconv.FormatFloat(rate, 'f', -1, 64), strconv.FormatFloat(burst, 'f', -1, 64), max(0, want), max(0, giveBack)).Slice()
	if err != nil {
		return Grant{}, fmt.Errorf("acquire permits of %s: %w", t.Name, err)
	}
	if len(r) != 2 {
		return Grant{}, fmt.Errorf("acquire permits of %s: unexpected reply %v", t.Name, r)
	}
	n, _ := r[0].(int64)
	ms, _ := r[1].(string)
	w, err := strconv.ParseFloat(ms, 64)
	if err != nil {
		return Grant{}, fmt.Errorf("acquire permits of %s: wait %q: %w", t.Name, ms, err)
	}
	return Grant{Permits: int(n), Wait: time.Duration(w * float64(time.Millisecond))}, nil
}
