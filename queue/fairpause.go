package queue

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"
)

// Pausing one key of a fair topic holds that key's messages while every
// other key goes on: the fair claim (fair_take) takes a paused key out of
// its turn when it comes up, and the key stays out until ResumeKey puts it
// back. As for a topic's pause, the claim script itself reads each slot's
// paused keys (SlotKeys.FairPaused), so a replica that never heard of the
// pause claims none of the key's messages; producers keep scheduling, and
// what falls due meanwhile is delivered after ResumeKey, in due order,
// never early. Messages already claimed when the pause lands (a claim
// ahead) still go out.

// ErrNotFair: a per-key operation on a topic without fair share
// (Topic.Fair), which keeps no state per key.
var ErrNotFair = errors.New("the topic is not fair: a key's pause or rate needs fair share")

// pauseKeyScript pauses one key in one slot.
//
// KEYS    -> slotKeys
// ARGV[1] -> the key
//
// Sets the key's since (now, ms) unless it is paused already. Returns 1
// when it was not paused.
var pauseKeyScript = slotScript(nowLua, `
if redis.call('HGET', fpaused, ARGV[1]) then return 0 end
redis.call('HSET', fpaused, ARGV[1], string.format('%.0f', now))
return 1
`)

// resumeKeyScript resumes one key in one slot and wakes its scanner.
//
// KEYS    -> slotKeys
// ARGV[1] -> the key
// ARGV[2] -> wake channel
// ARGV[3] -> wake payload before the score
//
// Drops the key's paused field; a key that has messages and no turn is put
// in waiting as due (the next claim gives it a turn at the tail, and its
// turn places it by its real head). Returns 1 when the key was paused.
var resumeKeyScript = slotScript(nowLua, `
local n = redis.call('HDEL', fpaused, ARGV[1])
if n == 1 and redis.call('ZSCORE', fcount, ARGV[1]) and not redis.call('ZSCORE', fready, ARGV[1]) then
  redis.call('ZADD', fwait, '-inf', ARGV[1])
  redis.call('PUBLISH', ARGV[2], ARGV[3] .. string.format('%.0f', now))
end
return n
`)

// PauseKey holds key's messages on fair topic t, in every slot, until
// ResumeKey; it reports whether the key was not paused already.
func (q *Queue) PauseKey(ctx context.Context, t Topic, key string) (bool, error) {
	if err := checkKeyOp(t, key); err != nil {
		return false, err
	}
	n := 0
	err := q.eachSlot(ctx, t, "pause key", func(s int) error {
		c, err := pauseKeyScript.Run(ctx, q.rdb, slotKeys(t.Keys(s)), key).Int()
		n += c
		return err
	})
	return n > 0, err
}

// ResumeKey lets key's messages on fair topic t be claimed again and wakes
// the scanners; it reports whether the key was paused.
func (q *Queue) ResumeKey(ctx context.Context, t Topic, key string) (bool, error) {
	if err := checkKeyOp(t, key); err != nil {
		return false, err
	}
	n := 0
	err := q.eachSlot(ctx, t, "resume key", func(s int) error {
		channel, prefix := t.wakeArgs(s)
		c, err := resumeKeyScript.Run(ctx, q.rdb, slotKeys(t.Keys(s)), key, channel, prefix).Int()
		n += c
		return err
	})
	return n > 0, err
}

// PausedKey is one key PauseKey holds.
type PausedKey struct {
	Key   string
	Since time.Time // Redis's clock
}

// PausedKeys lists the keys of t that PauseKey holds, by key (PauseKey
// sets every slot, so slot 0 says it: one HGETALL).
func (q *Queue) PausedKeys(ctx context.Context, t Topic) ([]PausedKey, error) {
	if !t.Fair {
		return nil, nil
	}
	all, err := q.rdb.HGetAll(ctx, t.Keys(0).FairPaused).Result()
	if err != nil {
		return nil, fmt.Errorf("read paused keys of %s: %w", t.Name, err)
	}
	out := make([]PausedKey, 0, len(all))
	for k, v := range all {
		p := PausedKey{Key: k}
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			p.Since = MillisTime(f)
		}
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// checkKeyOp refuses a key no per-key operation (a pause, a rate) can
// name: t is not fair, or key is empty (messages without a key share one
// turn, which would hold every such producer at once: use the topic's) or
// longer than any message's key.
func checkKeyOp(t Topic, key string) error {
	switch {
	case !t.Fair:
		return fmt.Errorf("topic %s: %w", t.Name, ErrNotFair)
	case key == "":
		return fmt.Errorf("topic %s: the key is empty", t.Name)
	case len(key) > MaxFairKeyLen:
		return fmt.Errorf("topic %s: the key is %d bytes, longer than a message's key may be (%d)", t.Name, len(key), MaxFairKeyLen)
	}
	return nil
}
