package queue

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// SlotStats is the backlog of one topic×slot.
type SlotStats struct {
	Slot      int
	Now       time.Time // Redis's TIME
	Scheduled int64     // waiting in the scheduled set (including overdue)
	Overdue   int64     // scheduled with a due time already passed
	Inflight  int64
	Dead      int64
	// Retrying is the part of Scheduled that failed at least once and waits
	// for another attempt: scheduled members with an :attempts record. It is
	// exact up to retryingSample records in the slot, an estimate from a
	// random sample of them beyond (see statsScript).
	Retrying int64
	// NextDue is the earliest due time still in the future (zero if none).
	NextDue time.Time
	// OldestOverdue is the earliest due time already passed (zero if none,
	// and zero while the earliest is -inf: the next claim dead-letters it).
	OldestOverdue time.Time
	// Pause is the slot's paused key (see Pause).
	Pause PauseState
	// Recurring is how many recurrences live in the slot (each has at most
	// one tick waiting, counted in Scheduled).
	Recurring int64
	// FairKeys is, on a fair topic, how many keys have messages scheduled
	// in the slot (the entries of SlotKeys.FairCount; 0 on other topics).
	FairKeys int64
	// DedupIDs is how many ids the slot remembers for its topic's dedup
	// window (the entries of SlotKeys.Delivered, expired ones not yet
	// removed included; 0 without a window).
	DedupIDs int64
}

// retryingSample bounds the :attempts records one stats call looks at, and so
// its cost: the hash holds every failing message, which a broker refusing a
// whole topic makes as large as the backlog.
const retryingSample = 1000

// statsScript reads the backlog of one slot.
//
// KEYS -> slotKeys
// ARGV[1] -> most :attempts records to look at for the retrying count
// ARGV[2] -> "0" to leave next due out (absent: it is found)
//
// Returns {now, scheduled, overdue, inflight, dead, next due or "", oldest
// overdue or "", retrying, 1 when retrying is exact else 0, recurrences,
// fair keys, dedup ids, paused since or nil, pause reason or nil}.
//
// The due times are found from counts (firstScoreLua), to the millisecond
// rounded up: a slot whose head is a large message costs what any other
// does.
//
// Retrying: HLEN of :attempts alone would also count members in flight again
// and records left by a producer's cancel until the reaper sweeps them, so
// each record's member is looked up in the scheduled set: all of them when
// there are at most ARGV[1], else a random sample of ARGV[1] (HRANDFIELD,
// distinct fields) whose share of hits is scaled to HLEN.
var statsScript = slotScript(nowLua, firstScoreLua, `
local nowstr = string.format('%.0f', now)
local overdue = redis.call('ZCOUNT', sched, '-inf', nowstr)
local oldest = ''
if overdue > 0 then oldest = oldest_at(sched, now) end
local nxt = ''
if ARGV[2] ~= '0' then nxt = first_above(sched, now, `+firstScoreReach+`, overdue) or '' end
local retrying, exact = 0, 1
local n = redis.call('HLEN', attempts)
if n > 0 then
  local limit = tonumber(ARGV[1])
  local fields
  if n <= limit then
    fields = redis.call('HKEYS', attempts)
  else
    fields = redis.call('HRANDFIELD', attempts, limit)
  end
  local hits = 0
  for c = 1, #fields, 256 do
    local scores = redis.call('ZMSCORE', sched, unpack(fields, c, math.min(c + 255, #fields)))
    for j = 1, #scores do
      if scores[j] then hits = hits + 1 end
    end
  end
  retrying = hits
  if n > limit then
    retrying = math.floor(hits * n / #fields + 0.5)
    exact = 0
  end
end
return {nowstr, redis.call('ZCARD', sched), overdue, redis.call('ZCARD', inflight), redis.call('ZCARD', dead), nxt, oldest, retrying, exact,
  redis.call('HLEN', recur), redis.call('ZCARD', fcount), redis.call('ZCARD', deliv), unpack(redis.call('HMGET', paused, 'since', 'reason'))}
`)

// Stats reads the backlog of one slot.
func (q *Queue) Stats(ctx context.Context, t Topic, slot int) (SlotStats, error) {
	s, _, err := q.stats(ctx, t.Keys(slot), slot, retryingSample, true)
	return s, err
}

// Backlog is Stats without NextDue (left zero), what gauges read every few
// seconds: the next due time is found by halving on counts, and on Redis
// 7.0 each count whose range starts at a large member compares it with
// itself (docs/architecture.md, Message size), so only an operator's
// Stats pays for it.
func (q *Queue) Backlog(ctx context.Context, t Topic, slot int) (SlotStats, error) {
	s, _, err := q.stats(ctx, t.Keys(slot), slot, retryingSample, false)
	return s, err
}

// stats runs statsScript on one slot, looking at no more than sample
// :attempts records, finding NextDue when next; exact reports whether
// Retrying counted them all.
func (q *Queue) stats(ctx context.Context, k SlotKeys, slot, sample int, next bool) (s SlotStats, exact bool, err error) {
	res, err := statsScript.Run(ctx, q.rdb, slotKeys(k), sample, flag(next)).Slice()
	if err != nil {
		return SlotStats{}, false, fmt.Errorf("stats %s: %w", k.Scheduled, err)
	}
	if len(res) != 14 {
		return SlotStats{}, false, fmt.Errorf("stats %s: malformed reply of %d elements", k.Scheduled, len(res))
	}
	s = SlotStats{Slot: slot}
	s.Now = parseMillis(res[0])
	s.Scheduled, _ = res[1].(int64)
	s.Overdue, _ = res[2].(int64)
	s.Inflight, _ = res[3].(int64)
	s.Dead, _ = res[4].(int64)
	s.NextDue = parseMillis(res[5])
	s.OldestOverdue = parseMillis(res[6])
	s.Retrying, _ = res[7].(int64)
	flag, _ := res[8].(int64)
	s.Recurring, _ = res[9].(int64)
	s.FairKeys, _ = res[10].(int64)
	s.DedupIDs, _ = res[11].(int64)
	since, _ := res[12].(string)
	reason, _ := res[13].(string)
	s.Pause = parsePause(since, reason)
	return s, flag == 1, nil
}

// TopicStats reads every slot of t.
func (q *Queue) TopicStats(ctx context.Context, t Topic) ([]SlotStats, error) {
	out := make([]SlotStats, t.SlotCount())
	for slot := range out {
		s, err := q.Stats(ctx, t, slot)
		if err != nil {
			return nil, err
		}
		out[slot] = s
	}
	return out, nil
}

func parseMillis(v any) time.Time {
	s, _ := v.(string)
	if s == "" {
		return time.Time{}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return time.Time{}
	}
	return MillisTime(f)
}
