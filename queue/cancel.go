package queue

import (
	"context"
	"fmt"
)

// cancelScript removes a message that is not yet claimed.
//
// KEYS    -> slotKeys
// ARGV[1] -> member ("" to look it up by id)
// ARGV[2] -> envelope id ("" for a raw member)
//
// Returns {state, member}: state 1 when cancelled, 2 when the member is in
// flight (nothing changed), 0 when there is no such message.
var cancelScript = drainScript(idsLua, forgetLua, `
local m, id = ARGV[1], ARGV[2]
if m == '' then
  m = lookup(id)[1]
  if not m then return {0, ''} end
end
local s = redis.call('ZSCORE', sched, m)
if s then
  redis.call('ZREM', sched, m)
  if not redis.call('ZSCORE', inflight, m) then
    forget(m)
  end
  unmap(id, m, s)
  return {1, m}
end
if redis.call('ZSCORE', inflight, m) then return {2, m} end
unmap(id, m, nil)
return {0, m}
`)

// Cancel removes a member that is not yet claimed and reports whether it was
// scheduled. A member already claimed is not cancelled: the error wraps
// ErrInFlight and nothing changes.
func (q *Queue) Cancel(ctx context.Context, t Topic, member []byte) (bool, error) {
	if err := q.checkLayout(ctx, t); err != nil {
		return false, fmt.Errorf("cancel: %w", err)
	}
	id := t.memberID(string(member))
	return q.cancelIn(ctx, t, t.memberCandidates(member), string(member), id)
}

// CancelID removes the message an envelope id names, if it is not yet
// claimed (else the error wraps ErrInFlight and nothing changes). The id
// of a recurrence's waiting or claimed tick is refused with ErrTick.
func (q *Queue) CancelID(ctx context.Context, t Topic, id string) (bool, error) {
	if err := t.needEnvelope(id); err != nil {
		return false, fmt.Errorf("cancel: %w", err)
	}
	if err := q.checkLayout(ctx, t); err != nil {
		return false, fmt.Errorf("cancel: %w", err)
	}
	ok, err := q.cancelIn(ctx, t, t.slotCandidates([]byte(id)), "", id)
	if ok || err != nil {
		return ok, err
	}
	return false, q.refuseTick(ctx, t, id)
}

// refuseTick is ErrTick when id names a recurrence's tick that waits or is
// in flight (nil otherwise, and when it names no tick).
func (q *Queue) refuseTick(ctx context.Context, t Topic, id string) error {
	member, slot, err := q.tickOfID(ctx, t, id)
	if err != nil {
		return fmt.Errorf("cancel id %q: %w", id, err)
	}
	if member == "" {
		return nil
	}
	e, found, err := q.inspect(ctx, t, slot, member, "")
	switch {
	case err != nil:
		return fmt.Errorf("cancel id %q: %w", id, err)
	case found && e.State != "dead":
		rid, _ := recurrenceOfTick(id)
		return fmt.Errorf("cancel id %q: %w %q (%s): remove the recurrence (recur rm) to stop it", id, ErrTick, rid, e.State)
	}
	return nil
}

// cancelIn cancels in the first of slots that has the message (see
// slotCandidates: a resized topic may keep it in an old slot).
func (q *Queue) cancelIn(ctx context.Context, t Topic, slots []int, member, id string) (bool, error) {
	for _, slot := range slots {
		ok, err := q.cancel(ctx, t, slot, member, id)
		if ok || err != nil {
			return ok, err
		}
	}
	return false, nil
}

func (q *Queue) cancel(ctx context.Context, t Topic, slot int, member, id string) (bool, error) {
	k := t.Keys(slot)
	res, err := cancelScript.Run(ctx, q.rdb, slotKeys(k), member, id).Slice()
	if err != nil {
		return false, fmt.Errorf("cancel in %s: %w", k.Scheduled, err)
	}
	if len(res) != 2 {
		return false, fmt.Errorf("cancel in %s: malformed reply of %d elements", k.Scheduled, len(res))
	}
	switch n, _ := res[0].(int64); n {
	case 1:
		return true, nil
	case 2:
		return false, fmt.Errorf("cancel %s in %s: %w", describe(member, id), k.Scheduled, ErrInFlight)
	default:
		return false, nil
	}
}
