package queue

import (
	"context"
	"fmt"
	"strconv"
)

// rescheduleScript moves a scheduled message to a new due time.
//
// KEYS    -> slotKeys
// ARGV[1] -> member ("" to look it up by id)
// ARGV[2] -> envelope id ("" for a raw member)
// ARGV[3] -> "at" or "in"
// ARGV[4] -> score (ms) for "at", delay (ms) from Redis's TIME for "in"
// ARGV[5] -> wake channel ("" publishes nothing)
// ARGV[6] -> wake payload before the score
//
// Returns {state, member, score}: state 1 when rescheduled, 2 when the member
// is in flight (nothing changed), 0 when there is no such message. A message
// waiting to retry keeps its attempts and last error but its new time
// becomes its due time; it keeps a :due record (the new time), so the reap
// sweep still finds its records if a producer later removes it.
var rescheduleScript = slotScript(nowLua, scoreLua, idsLua, `
local m, id = ARGV[1], ARGV[2]
if m == '' then
  m = lookup(id)[1]
  if not m then return {0, '', ''} end
end
if redis.call('ZSCORE', sched, m) then
  local score, bad = score_of(ARGV[3], ARGV[4])
  if not score then
    return redis.error_reply('ERR due time ' .. bad .. ' ms cannot be honoured')
  end
  redis.call('ZADD', sched, 'XX', score, m)
  moved(m, id, score)
  if redis.call('ZSCORE', inflight, m) then
  elseif redis.call('HGET', attempts, m) then
    redis.call('HSET', dues, m, score)
  else
    redis.call('HDEL', dues, m)
  end
  wake(ARGV[5], ARGV[6], score)
  return {1, m, score}
end
if redis.call('ZSCORE', inflight, m) then return {2, m, ''} end
return {0, m, ''}
`)

// Reschedule moves a scheduled message (by member, or by id on envelope
// topics) to a new due time. The error wraps ErrNotFound when there is no
// such message and ErrInFlight when it is already claimed (nothing changes).
func (q *Queue) Reschedule(ctx context.Context, t Topic, ref Ref, when When) (Receipt, error) {
	if err := ref.one(false); err != nil {
		return Receipt{}, fmt.Errorf("reschedule: %w", err)
	}
	mode, value, err := when.args()
	if err != nil {
		return Receipt{}, fmt.Errorf("reschedule in %s: %w", t.Name, err)
	}
	if err := q.checkLayout(ctx, t); err != nil {
		return Receipt{}, fmt.Errorf("reschedule: %w", err)
	}
	var slots []int
	var member, id string
	if ref.ID != "" {
		if err := t.needEnvelope(ref.ID); err != nil {
			return Receipt{}, fmt.Errorf("reschedule: %w", err)
		}
		slots, id = t.slotCandidates([]byte(ref.ID)), ref.ID
	} else {
		slots, member, id = t.memberCandidates(ref.Member), string(ref.Member), t.memberID(string(ref.Member))
	}
	slot, res, err := q.rescheduleIn(ctx, t, slots, member, id, mode, value)
	if err != nil {
		return Receipt{}, err
	}
	k := t.Keys(slot)
	state, _ := res[0].(int64)
	m, _ := res[1].(string)
	switch state {
	case 1:
	case 2:
		return Receipt{}, fmt.Errorf("reschedule %s in %s: %w", describe(member, id), k.Scheduled, ErrInFlight)
	default:
		return Receipt{}, fmt.Errorf("reschedule %s in %s: %w", describe(member, id), k.Scheduled, ErrNotFound)
	}
	if err := q.fairIndex(ctx, t, slot, []string{m}); err != nil {
		return Receipt{}, fmt.Errorf("reschedule: %w", err)
	}
	r := Receipt{Topic: t.Name, Slot: slot, ID: id, Member: m, Replaced: ReplacedScheduled}
	if !t.envelope() {
		r.ID = MessageID([]byte(m))
	}
	s, _ := res[2].(string)
	if r.Score, err = strconv.ParseFloat(s, 64); err != nil {
		return Receipt{}, fmt.Errorf("reschedule in %s: parse score %q: %w", k.Scheduled, s, err)
	}
	return r, nil
}

// rescheduleIn runs rescheduleScript in the first of slots that has the
// message (see slotCandidates: a resized topic may keep it in an old slot),
// or in the first slot when none has it.
func (q *Queue) rescheduleIn(ctx context.Context, t Topic, slots []int, member, id, mode, value string) (int, []any, error) {
	var first []any
	for _, slot := range slots {
		k := t.Keys(slot)
		channel, prefix := t.wakeArgs(slot)
		cmd, confirm := q.runConfirmed(ctx, rescheduleScript, slotKeys(k),
			member, id, mode, value, channel, prefix)
		res, err := cmd.Slice()
		if err != nil {
			return 0, nil, fmt.Errorf("reschedule in %s: %w", k.Scheduled, dueErr(err))
		}
		if len(res) != 3 {
			return 0, nil, fmt.Errorf("reschedule in %s: malformed reply of %d elements", k.Scheduled, len(res))
		}
		if state, _ := res[0].(int64); state != 0 {
			if confirm != nil {
				return 0, nil, fmt.Errorf("reschedule in %s: %w", k.Scheduled, confirm)
			}
			return slot, res, nil
		}
		if first == nil {
			first = res
		}
	}
	return slots[0], first, nil
}
