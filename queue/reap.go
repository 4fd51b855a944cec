package queue

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// ReapResult is what one Reap call did.
type ReapResult struct {
	Reaped int    // expired leases returned to the scheduled set
	Cursor string // sweep cursor for the next call ("0": sweep finished)
	Swept  int    // stale :due/:attempts records (and :ids entries) dropped
	Dead   int    // members with a +inf score dead-lettered
	// Now is Redis's TIME when the reap ran.
	Now time.Time
	// NextLease is the earliest lease deadline left in flight, valid when
	// HasNext: no lease of the slot can expire before it, so the reaper need
	// not look again earlier (unless a claim adds a lease).
	NextLease time.Time
	HasNext   bool
}

// idsCursor marks a sweep cursor that is in its second phase, over the :ids
// HASH of an envelope topic.
const idsCursor = "ids:"

// reapScript returns expired leases and sweeps stale records.
//
// KEYS    -> slotKeys
// ARGV[1] -> most members to reap (and HSCAN COUNT of the sweep)
// ARGV[2] -> HSCAN cursor ("0" starts a sweep)
// ARGV[3] -> what the sweep scans: "due" (the due HASH) or "ids" (the ids HASH)
// ARGV[4] -> "1" when the topic's members are envelopes
//
// Members whose lease passed go back to scheduled at their original due time
// (so they are due at once and keep their order), unless the producer
// rescheduled them meanwhile; an envelope keeps its id. The "due" sweep drops
// :due/:attempts records (and the last error, unless dead) of members that are in neither set (cancelled while
// waiting to retry); the "ids" sweep drops ids whose member is in neither set
// (acked, dead-lettered or cancelled by a producer that skipped the index). A
// score of +inf can never fall due: such members go to the dead set.
//
// Returns {reaped, next cursor, swept, dead, now, earliest lease deadline left
// in flight or ""}.
var reapScript = drainScript(nowLua, idsLua, buryLua, forgetLua, `
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

// Reap returns up to limit expired leases of one slot to the scheduled set and
// advances the sweep of stale records from cursor ("0" to start). The sweep
// walks the :due HASH and then, on envelope topics, the :ids HASH; the cursor
// it returns is opaque and "0" once both are done.
func (q *Queue) Reap(ctx context.Context, t Topic, slot, limit int, cursor string) (ReapResult, error) {
	k := t.Keys(slot)
	phase := "due"
	if cursor == "" {
		cursor = "0"
	}
	if rest, ok := strings.CutPrefix(cursor, idsCursor); ok {
		phase, cursor = "ids", rest
	}
	res, err := reapScript.Run(ctx, q.rdb, slotKeys(k),
		limit, cursor, phase, flag(t.envelope())).Slice()
	if err != nil {
		return ReapResult{}, fmt.Errorf("reap %s: %w", k.Inflight, err)
	}
	if len(res) != 6 {
		return ReapResult{}, fmt.Errorf("reap %s: malformed reply of %d elements", k.Inflight, len(res))
	}
	r := ReapResult{}
	r.Reaped, _ = toInt(res[0])
	r.Cursor, _ = res[1].(string)
	r.Swept, _ = toInt(res[2])
	r.Dead, _ = toInt(res[3])
	r.Now = parseMillis(res[4])
	r.NextLease = parseMillis(res[5])
	r.HasNext = !r.NextLease.IsZero()
	switch {
	case phase == "due" && r.Cursor == "0" && t.envelope():
		r.Cursor = idsCursor + "0"
	case phase == "ids" && r.Cursor != "0":
		r.Cursor = idsCursor + r.Cursor
	}
	return r, nil
}
