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
//
// A front door acks what it buried, so Bury is an acceptance like Schedule:
// it waits for q's durability (WithDurability), refused with
// ErrTooFewReplicas while too few replicas are connected and answering
// ErrNotReplicated when the write is not confirmed; the caller then leaves
// the message with its broker.
func (q *Queue) Bury(ctx context.Context, t Topic, member []byte, reason string) (int, error) {
	slot := t.SlotOf(member)
	k := t.Keys(slot)
	cmd, confirm := q.runConfirmed(ctx, buryScript, slotKeys(k), member, reason)
	if err := cmd.Err(); err != nil {
		return 0, fmt.Errorf("bury in %s: %w", k.Dead, full(err))
	}
	if confirm != nil {
		return 0, fmt.Errorf("bury in %s: %w", k.Dead, confirm)
	}
	return slot, nil
}
