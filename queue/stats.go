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
	// NextDue is the earliest due time still in the future (zero if none).
	NextDue time.Time
	// OldestOverdue is the earliest due time already passed (zero if none).
	OldestOverdue time.Time
}

// statsScript reads the backlog of one slot.
//
// KEYS -> slotKeys
//
// Returns {now, scheduled, overdue, inflight, dead, next due or "", oldest
// overdue or ""}.
var statsScript = slotScript(nowLua, `
local nowstr = string.format('%.0f', now)
local first = redis.call('ZRANGE', sched, 0, 0, 'WITHSCORES')
local overdue = redis.call('ZCOUNT', sched, '-inf', nowstr)
local nxt = ''
local oldest = ''
if first[2] then
  if overdue > 0 then
    oldest = first[2]
    local up = redis.call('ZRANGEBYSCORE', sched, '(' .. nowstr, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
    if up[2] then nxt = up[2] end
  else
    nxt = first[2]
  end
end
return {nowstr, redis.call('ZCARD', sched), overdue, redis.call('ZCARD', inflight), redis.call('ZCARD', dead), nxt, oldest}
`)

// Stats reads the backlog of one slot.
func (q *Queue) Stats(ctx context.Context, t Topic, slot int) (SlotStats, error) {
	k := t.Keys(slot)
	res, err := statsScript.Run(ctx, q.rdb, slotKeys(k)).Slice()
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
