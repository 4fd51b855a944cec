package queue

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// Pausing a topic stops every replica from claiming its messages while
// leaving everything else running: the claim script itself checks each
// slot's paused key (KEYS[8]), so a replica that never heard of the pause
// still claims nothing, and on a Redis Cluster the key sits in the slot's
// own hash tag. Leases keep being reaped (the reaped messages wait in the
// scheduled set), producers keep scheduling, and messages that fall due
// while paused are delivered after Resume, in score order, never early.

// PauseState is what one slot's paused key says.
type PauseState struct {
	Paused bool
	// Since is when Pause ran (Redis's clock); Reason is its text.
	Since  time.Time
	Reason string
}

// The paused key is a HASH (since → Unix ms, reason → text), not a string:
// the daemon's scripts read it with HLEN and HMGET, commands its minimal
// Redis ACL grants already (docs/operations-security.md), where GET or
// EXISTS would widen it.

// parsePause reads the paused key's since and reason fields (since "" when
// the key does not exist).
func parsePause(since, reason string) PauseState {
	if since == "" {
		return PauseState{}
	}
	p := PauseState{Paused: true, Reason: reason}
	if f, err := strconv.ParseFloat(since, 64); err == nil {
		p.Since = MillisTime(f)
	}
	return p
}

// pauseScript pauses one slot.
//
// KEYS    -> slotKeys
// ARGV[1] -> reason
//
// Sets the paused HASH's since (now, ms) and reason (a second pause replaces
// both). Returns 1.
var pauseScript = slotScript(nowLua, `
redis.call('HSET', paused, 'since', string.format('%.0f', now), 'reason', ARGV[1])
return 1
`)

// Pause stops claims of every slot of t until Resume. Claims that started
// before it finish normally (their messages are delivered); no claim that
// starts after it returns a message. Pausing a paused topic replaces the
// reason. On an error some slots may be paused: Pause again, or Resume.
//
// The slots beyond the topic's slot count that hold messages (stranded by
// a resize or a producer with other settings, which the daemon drains) are
// paused too: they are found with SCAN (see StrandedSlots), after the
// topic's own slots. A slot beyond the count that receives its first
// message after the pause is not paused.
func (q *Queue) Pause(ctx context.Context, t Topic, reason string) error {
	return q.eachSlot(ctx, t, "pause", func(s int) error {
		return pauseScript.Run(ctx, q.rdb, slotKeys(t.Keys(s)), reason).Err()
	})
}

// eachSlot runs fn on every slot of t, then on its slots beyond the slot
// count (slotsBeyond), stopping at the first error.
func (q *Queue) eachSlot(ctx context.Context, t Topic, op string, fn func(slot int) error) error {
	for s := range t.SlotCount() {
		if err := fn(s); err != nil {
			return fmt.Errorf("%s %s: %w", op, t.Keys(s).Scheduled, err)
		}
	}
	beyond, err := q.slotsBeyond(ctx, t)
	if err != nil {
		return fmt.Errorf("%s the slots of %s beyond its %d: %w", op, t.Name, t.SlotCount(), err)
	}
	for _, s := range beyond {
		if err := fn(s); err != nil {
			return fmt.Errorf("%s %s: %w", op, t.Keys(s).Scheduled, err)
		}
	}
	return nil
}

// resumeScript resumes one slot and wakes its scanner.
//
// KEYS    -> slotKeys
// ARGV[1] -> wake channel
// ARGV[2] -> wake payload before the score
//
// Deletes the paused key and announces the slot due now, so the scanner
// that sleeps through the pause (at most its poll interval) looks at once.
// Returns 1 when the slot was paused, else 0.
var resumeScript = slotScript(nowLua, `
local n = redis.call('DEL', paused)
redis.call('PUBLISH', ARGV[1], ARGV[2] .. string.format('%.0f', now))
return n
`)

// Resume lets every slot of t be claimed again, those beyond its slot
// count included (see Pause), and wakes their scanners; it returns how many
// slots were paused.
func (q *Queue) Resume(ctx context.Context, t Topic) (int, error) {
	n := 0
	err := q.eachSlot(ctx, t, "resume", func(s int) error {
		channel, prefix := t.wakeArgs(s)
		c, err := resumeScript.Run(ctx, q.rdb, slotKeys(t.Keys(s)), channel, prefix).Int()
		n += c
		return err
	})
	return n, err
}

// IsPaused reports whether t is paused: Pause sets every slot, so slot 0's
// paused key says it (one EXISTS).
func (q *Queue) IsPaused(ctx context.Context, t Topic) (bool, error) {
	n, err := q.rdb.Exists(ctx, t.Keys(0).Paused).Result()
	if err != nil {
		return false, fmt.Errorf("read pause of %s: %w", t.Name, err)
	}
	return n > 0, nil
}
