package queue

import (
	"context"
	"fmt"
)

// buryScript dead-letters a member that was never scheduled.
//
// KEYS    -> slotKeys
// ARGV[1] -> member
// ARGV[2] -> reason
//
// Returns 1. The member goes to the dead set at now with its reason; the
// scheduled and in-flight sets and the ids index are left alone, so a
// scheduled message with the same id (an earlier, good copy) stays
// scheduled.
var buryScript = growScript(nowLua, `
redis.call('ZADD', dead, now, ARGV[1])
redis.call('HSET', reasons, ARGV[1], ARGV[2])
redis.call('HDEL', deadatts, ARGV[1])
return 1
`)

// Bury puts member straight into t's dead set with reason, without ever
// scheduling it: for a message that arrived (through an intake) but cannot
// be scheduled, so that it is kept, with the reason, instead of lost. The
// dead set's tools (list, requeue, purge) then apply to it. It returns the
// slot the member went to: its id's on envelope topics when it is a valid
// envelope, else its bytes'.
func (q *Queue) Bury(ctx context.Context, t Topic, member []byte, reason string) (int, error) {
	slot := t.SlotOf(member)
	k := t.Keys(slot)
	if err := buryScript.Run(ctx, q.rdb, slotKeys(k), member, reason).Err(); err != nil {
		return 0, fmt.Errorf("bury in %s: %w", k.Dead, full(err))
	}
	return slot, nil
}
