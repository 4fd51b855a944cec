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
// HASH of an envelope topic; idxCursor one in its third, over the buckets of
// the index ("idx:<bucket>:<HSCAN cursor>").
const (
	idsCursor = "ids:"
	idxCursor = "idx:"
)

// sweepSeen is the most index entries one reap looks at, and sweepChecks
// the most of them it may search for in flight (or among a legacy entry's
// scores): what bounds the sweep's share of a reap script to a few
// thousand commands whatever the slot holds (docs/architecture.md, Guarantees 10). Each
// entry costs a binary search at its score; a search in flight costs one per
// distinct lease deadline (claimed or renewed batches in flight).
const (
	sweepSeen   = 64
	sweepChecks = 16
)

// reapScript returns expired leases and sweeps stale records.
//
// KEYS    -> slotKeys
// ARGV[1] -> most members to reap (and HSCAN COUNT of the sweep)
// ARGV[2] -> HSCAN cursor ("0" starts a sweep)
// ARGV[3] -> what the sweep scans: "due" (the due HASH), "ids" (the ids HASH)
// or "idx" (the index's buckets; the cursor is "<bucket>:<HSCAN cursor>",
// then ":<fields of that HSCAN page already looked at>" when a call stopped
// inside a page)
// ARGV[4] -> "1" when the topic's members are envelopes
// ARGV[5] -> "1" when the topic is fair: a returned member is indexed
// (fair_add) in the same call
//
// Members whose lease passed go back to scheduled at their original due time
// (so they are due at once and keep their order), unless the producer
// rescheduled them meanwhile; an envelope keeps its id. The "due" sweep drops
// :due/:attempts records (and the last error, unless dead) of members that are in neither set (cancelled while
// waiting to retry); the "ids" sweep drops ids whose member is in neither set
// (acked, dead-lettered or cancelled by a producer that skipped the index);
// the "idx" sweep drops index entries whose id names no member at its score
// nor in flight (acked by a daemon of the previous version, which knows only
// the ids HASH), bucket after bucket until it has looked at sweepSeen
// entries (or limit, if fewer) or searched the in-flight set or the
// previous layout's scores for sweepChecks of them; a legacy entry it finds
// is rewritten with its exact score (see idsLua). A returned member's index entry follows it to its score. A score
// of +inf can never fall due: such members go to the dead set.
//
// Returns {reaped, next cursor, swept, dead, now, earliest lease deadline left
// in flight or ""}.
var reapScript = drainScript(nowLua, idsLua, buryLua, forgetLua, firstScoreLua, fairLua, fmt.Sprintf("local sweepSeen, sweepChecks = %d, %d\n", sweepSeen, sweepChecks), `
local limit = tonumber(ARGV[1])
local nowstr = string.format('%.0f', now)
local expired = redis.call('ZRANGEBYSCORE', inflight, '-inf', nowstr, 'LIMIT', 0, limit)
for _, m in ipairs(expired) do
  redis.call('ZREM', inflight, m)
  local due = redis.call('HGET', dues, m) or nowstr
  redis.call('ZADD', sched, 'NX', due, m)
  local s = redis.call('ZSCORE', sched, m)
  if ARGV[4] == '1' then moved(m, fastid(m), s) end
  if ARGV[5] == '1' then fair_add(m, s) end
end
local swept = 0
local scan
if ARGV[3] == 'idx' then
  scan = {'0'}
  local b, c, k = string.match(ARGV[2], '^(%d+):(%d+):?(%d*)$')
  b, c, k = tonumber(b) or 0, c or '0', tonumber(k) or 0
  local seen, checks, most = 0, 0, math.min(limit, sweepSeen)
  while b < 256 do
    local key = idx .. ':' .. b
    local s = redis.call('HSCAN', key, c, 'COUNT', sweepSeen)
    local fields = s[2]
    local i, gone = 2 * k + 1, 0
    while i <= #fields and seen < most and checks < sweepChecks do
      local id, v = fields[i], fields[i + 1]
      local n = needle(id)
      seen = seen + 1
      if n and legacy(v) then checks = checks + 1 end
      -- An exact entry stands while a member is at its score: the sweep
      -- reads no member to tell whose it is (a large one would cost its
      -- size each sweep); a stale one sharing a live member's score goes
      -- once that member has left.
      local standing = n and not legacy(v) and redis.call('ZCOUNT', sched, v, v) > 0
      if not standing and (not n or not seekid(id, v, n)) then
        if n then checks = checks + 1 end
        if not n or not flying(n) then
          redis.call('HDEL', key, id)
          swept, gone = swept + 1, gone + 1
        end
      end
      i = i + 2
    end
    if i <= #fields then
      scan = {b .. ':' .. c .. ':' .. ((i - 1) / 2 - gone)}
      break
    end
    if s[1] ~= '0' then
      scan = {b .. ':' .. s[1]}
      break
    end
    b, c, k = b + 1, '0', 0
    if seen >= most and b < 256 then
      scan = {b .. ':0'}
      break
    end
  end
elseif ARGV[3] == 'ids' then
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
  bury(m, 'due time +inf can never be honoured', envelopes and idof(m) or '', 'inf')
end
-- The in-flight head is read as is: a member in flight is being published
-- (copied) anyway, and on Redis 7.0 each count whose range ends at a large
-- member compares it with itself, which halving would do many times.
local head = redis.call('ZRANGE', inflight, 0, 0, 'WITHSCORES')
return {#expired, scan[1], swept, #inf, nowstr, head[2] or ''}
`)

// Reap returns up to limit expired leases of one slot to the scheduled set and
// advances the sweep of stale records from cursor ("0" to start). The sweep
// walks the :due HASH and then, on envelope topics, the :ids HASH and the
// index's buckets; the cursor
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
	if rest, ok := strings.CutPrefix(cursor, idxCursor); ok {
		phase, cursor = "idx", rest
	}
	res, err := reapScript.Run(ctx, q.rdb, slotKeys(k),
		limit, cursor, phase, flag(t.envelope()), flag(t.Fair)).Slice()
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
	case phase == "ids":
		r.Cursor = idxCursor + "0:0"
	case phase == "idx" && r.Cursor != "0":
		r.Cursor = idxCursor + r.Cursor
	}
	return r, nil
}
