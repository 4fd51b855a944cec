package queue

import (
	"context"
	"fmt"
)

// RequeueResult is what Requeue did.
type RequeueResult struct {
	// Requeued messages are scheduled again, due now, with no attempts.
	Requeued int
	// Skipped envelopes stay dead: their id already names a newer scheduled
	// or in-flight message.
	Skipped int
}

// Requeue moves dead messages back to the scheduled set, due now, with their
// attempts reset; envelopes are indexed by id again. By id, the most recent
// death of that id is requeued and older versions are skipped; All walks each
// slot's dead set in order of death. The error wraps ErrNotFound when a
// member or id names nothing dead.
func (q *Queue) Requeue(ctx context.Context, t Topic, ref Ref) (RequeueResult, error) {
	if err := ref.one(true); err != nil {
		return RequeueResult{}, fmt.Errorf("requeue: %w", err)
	}
	var r RequeueResult
	if ref.All {
		for s := range t.SlotCount() {
			if err := q.requeueSlot(ctx, t, s, &r); err != nil {
				return r, err
			}
		}
		return r, nil
	}
	found, err := q.DeadFind(ctx, t, ref)
	if err != nil {
		return r, fmt.Errorf("requeue: %w", err)
	}
	if len(found) == 0 {
		return r, fmt.Errorf("requeue %s in %s: %w", ref, t.Name, ErrNotFound)
	}
	for _, d := range found { // newest first: the newest version of an id wins
		if err := q.requeue(ctx, t, d.Slot, []DeadMessage{d}, &r); err != nil {
			return r, err
		}
	}
	return r, nil
}

// requeueSlot requeues every member dead in slot when it starts; members
// skipped stay in place, so the next page starts after them.
func (q *Queue) requeueSlot(ctx context.Context, t Topic, slot int, r *RequeueResult) error {
	key := t.Keys(slot).Dead
	total, err := q.rdb.ZCard(ctx, key).Result()
	if err != nil {
		return fmt.Errorf("requeue from %s: %w", key, err)
	}
	var offset, seen int64
	for seen < total {
		page, err := q.rdb.ZRangeWithScores(ctx, key, offset, offset+deadPage-1).Result()
		if err != nil {
			return fmt.Errorf("requeue from %s: %w", key, err)
		}
		if len(page) == 0 {
			return nil
		}
		dead := make([]DeadMessage, len(page))
		for i, z := range page {
			dead[i] = t.deadMessage(slot, z)
		}
		before := r.Skipped
		if err := q.requeue(ctx, t, slot, dead, r); err != nil {
			return err
		}
		offset += int64(r.Skipped - before)
		seen += int64(len(page))
	}
	return nil
}

// requeueScript moves dead members back to the scheduled set, due now.
//
// KEYS     -> slotKeys
// ARGV[1]  -> wake channel ("" publishes nothing)
// ARGV[2]  -> wake payload before the score
// ARGV[3…] -> member1, id1, member2, id2, … (id "" for raw or undecodable
// members)
//
// Each member still dead starts over: no attempts, due at Redis's now (a
// member the producer scheduled again meanwhile keeps the producer's score).
// An envelope whose id already names another scheduled or in-flight member
// (a newer version) stays dead and counts as skipped; otherwise its id names
// it again. Returns {requeued, skipped}.
var requeueScript = drainScript(nowLua, idsLua, `
local nowstr = string.format('%.0f', now)
local moved, skipped = 0, 0
for i = 3, #ARGV, 2 do
  local m, id = ARGV[i], ARGV[i + 1]
  if redis.call('ZSCORE', dead, m) then
    local cur = nil
    if id ~= '' then cur = lookup(id)[1] end
    if cur and cur ~= m then
      skipped = skipped + 1
    else
      redis.call('ZREM', dead, m)
      redis.call('HDEL', reasons, m)
      redis.call('HDEL', deadatts, m)
      redis.call('HDEL', dues, m)
      redis.call('HDEL', attempts, m)
      redis.call('ZADD', sched, 'NX', nowstr, m)
      if id ~= '' then index(m, id, redis.call('ZSCORE', sched, m)) end
      moved = moved + 1
    end
  end
end
if moved > 0 and ARGV[1] ~= '' then
  redis.call('PUBLISH', ARGV[1], ARGV[2] .. nowstr)
end
return {moved, skipped}
`)

func (q *Queue) requeue(ctx context.Context, t Topic, slot int, dead []DeadMessage, r *RequeueResult) error {
	k := t.Keys(slot)
	channel, prefix := t.wakeArgs(slot)
	args := []any{channel, prefix}
	for _, d := range dead {
		id := ""
		if t.envelope() {
			id = d.ID
		}
		args = append(args, d.Member, id)
	}
	res, err := requeueScript.Run(ctx, q.rdb, slotKeys(k), args...).Int64Slice()
	if err != nil {
		return fmt.Errorf("requeue from %s: %w", k.Dead, err)
	}
	if len(res) != 2 {
		return fmt.Errorf("requeue from %s: malformed reply of %d elements", k.Dead, len(res))
	}
	r.Requeued += int(res[0])
	r.Skipped += int(res[1])
	if t.Fair {
		members := make([]string, len(dead))
		for i, d := range dead {
			members[i] = d.Member
		}
		if err := q.fairIndex(ctx, t, slot, members); err != nil {
			return fmt.Errorf("requeue: %w", err)
		}
	}
	return nil
}
