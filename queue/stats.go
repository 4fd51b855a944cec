package queue

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
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
	// random sample of them beyond (see retryingScript).
	Retrying int64
	// NextDue is the earliest due time still in the future (zero if none).
	NextDue time.Time
	// OldestOverdue is the earliest due time already passed (zero if none,
	// and zero while the earliest is -inf: the next claim dead-letters it).
	OldestOverdue time.Time
}

// retryingSample bounds the :attempts records one stats call looks at, and so
// its cost: the hash holds every failing message, which a broker refusing a
// whole topic makes as large as the backlog.
const retryingSample = 1000

// retryingScript counts the scheduled members that have an attempts record.
//
// KEYS[1] -> scheduled ZSET
// KEYS[2] -> attempts HASH
// ARGV[1] -> most attempts records to look at
//
// Returns {retrying, 1 when exact else 0}. HLEN of :attempts alone would
// also count members in flight again and records left by a producer's
// cancel until the reaper sweeps them, so each record's member is looked up
// in the scheduled set: all of them when there are at most ARGV[1], else a
// random sample of ARGV[1] (HRANDFIELD, distinct fields) whose share of hits
// is scaled to HLEN.
var retryingScript = redis.NewScript(`
local n = redis.call('HLEN', KEYS[2])
if n == 0 then return {0, 1} end
local limit = tonumber(ARGV[1])
local fields
if n <= limit then
  fields = redis.call('HKEYS', KEYS[2])
else
  fields = redis.call('HRANDFIELD', KEYS[2], limit)
end
local hits = 0
for c = 1, #fields, 256 do
  local scores = redis.call('ZMSCORE', KEYS[1], unpack(fields, c, math.min(c + 255, #fields)))
  for j = 1, #scores do
    if scores[j] then hits = hits + 1 end
  end
end
if n <= limit then return {hits, 1} end
return {math.floor(hits * n / #fields + 0.5), 0}
`)

// retrying runs retryingScript on the keys k.
func (q *Queue) retrying(ctx context.Context, k SlotKeys, limit int) (n int64, exact bool, err error) {
	res, err := retryingScript.Run(ctx, q.rdb, []string{k.Scheduled, k.Attempts}, limit).Int64Slice()
	if err != nil {
		return 0, false, fmt.Errorf("count retrying in %s: %w", k.Scheduled, err)
	}
	if len(res) != 2 {
		return 0, false, fmt.Errorf("count retrying in %s: malformed reply of %d elements", k.Scheduled, len(res))
	}
	return res[0], res[1] == 1, nil
}

// Stats reads the backlog of one slot: one call of statsScript, and one of
// retryingScript.
func (q *Queue) Stats(ctx context.Context, t Topic, slot int) (SlotStats, error) {
	k := t.Keys(slot)
	res, err := statsScript.Run(ctx, q.rdb, []string{k.Scheduled, k.Inflight, k.Dead}).Slice()
	if err != nil {
		return SlotStats{}, fmt.Errorf("stats %s: %w", k.Scheduled, err)
	}
	if len(res) != 7 {
		return SlotStats{}, fmt.Errorf("stats %s: malformed reply of %d elements", k.Scheduled, len(res))
	}
	s := SlotStats{Slot: slot}
	s.Now = parseMillis(res[0])
	s.Scheduled, _ = res[1].(int64)
	s.Overdue, _ = res[2].(int64)
	s.Inflight, _ = res[3].(int64)
	s.Dead, _ = res[4].(int64)
	s.NextDue = parseMillis(res[5])
	s.OldestOverdue = parseMillis(res[6])
	if s.Retrying, _, err = q.retrying(ctx, k, retryingSample); err != nil {
		return SlotStats{}, err
	}
	return s, nil
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
