package queue

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// StrandedSlot is a slot at or beyond its topic's slot count that still
// holds scheduled or claimed messages: the topic was resized down, or a
// producer wrote with another slot count. Nothing claims them unless the
// forwarder adds the slot to the ones it scans.
type StrandedSlot struct {
	Slot int
	// Messages are the slot's scheduled and in-flight messages.
	Messages int64
}

// strandedScanCount is the COUNT of each SCAN: a few round trips per
// hundred thousand keys.
const strandedScanCount = 1000

// StrandedSlots finds the slots of t beyond its slot count that hold
// messages, in slot order. It walks the keyspace with SCAN over the topic's
// key pattern (<prefix>:{<topic>:*}, on every master of a cluster), never
// KEYS, so a large Redis is not blocked: it costs a pass over the keyspace,
// which is why the forwarder runs it only every few minutes. An adopted key
// has no slots: none.
func (q *Queue) StrandedSlots(ctx context.Context, t Topic) ([]StrandedSlot, error) {
	seen, err := q.slotsBeyond(ctx, t)
	if err != nil {
		return nil, fmt.Errorf("find stranded slots of %s: %w", t.Name, err)
	}
	return q.CountStranded(ctx, t, seen)
}

// CountStranded counts the scheduled and in-flight messages of the given
// slots of t (two ZCARDs each, no SCAN) and returns those that hold some:
// cheap enough to follow the drain of slots StrandedSlots found.
func (q *Queue) CountStranded(ctx context.Context, t Topic, slots []int) ([]StrandedSlot, error) {
	out := make([]StrandedSlot, 0, len(slots))
	for _, slot := range slots {
		k := t.Keys(slot)
		sched, err := q.rdb.ZCard(ctx, k.Scheduled).Result()
		if err == nil {
			var inflight int64
			inflight, err = q.rdb.ZCard(ctx, k.Inflight).Result()
			sched += inflight
		}
		if err != nil {
			return nil, fmt.Errorf("count stranded slot %s: %w", k.Scheduled, err)
		}
		if sched > 0 {
			out = append(out, StrandedSlot{Slot: slot, Messages: sched})
		}
	}
	return out, nil
}

// slotsBeyond lists the slots of t at or beyond its slot count that have a
// scheduled, in-flight, paused or recur key, in slot order (SCAN, as
// StrandedSlots). An adopted key has no slots: none.
func (q *Queue) slotsBeyond(ctx context.Context, t Topic) ([]int, error) {
	if t.Key != "" {
		return nil, nil
	}
	base := t.KeyPrefix() + ":{" + t.Name + ":"
	keys, err := q.scanKeys(ctx, globEscape(base)+"*")
	if err != nil {
		return nil, err
	}
	seen := map[int]bool{}
	for _, k := range keys {
		if slot, ok := parseSlotKey(k, base); ok && slot >= t.SlotCount() {
			seen[slot] = true
		}
	}
	return slices.Sorted(maps.Keys(seen)), nil
}

// parseSlotKey reads the slot of a scheduled, in-flight, paused or recur
// key of a topic whose slot keys begin with base ("<prefix>:{<topic>:").
// Other keys (the records, the dead set, a topic whose name continues base)
// are not.
func parseSlotKey(key, base string) (int, bool) {
	rest, ok := strings.CutPrefix(key, base)
	if !ok {
		return 0, false
	}
	digits, suffix, ok := strings.Cut(rest, "}")
	if !ok || (suffix != "" && suffix != ":inflight" && suffix != ":paused" && suffix != ":recur") {
		return 0, false
	}
	n, err := strconv.Atoi(digits)
	if err != nil || n < 0 || strconv.Itoa(n) != digits {
		return 0, false
	}
	return n, true
}

// globEscape quotes s for a Redis glob pattern: every character the
// matcher treats specially (*, ?, [, ], \, and ^ inside brackets) and the
// braces, for good measure, get a backslash (an escaped character matches
// itself).
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '*', '?', '[', ']', '\\', '{', '}', '^':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// scanKeys returns the keys matching pattern, from every master of a
// cluster (a cluster's SCAN walks one node only).
func (q *Queue) scanKeys(ctx context.Context, pattern string) ([]string, error) {
	scan := func(ctx context.Context, c redis.Cmdable) ([]string, error) {
		var out []string
		iter := c.Scan(ctx, 0, pattern, strandedScanCount).Iterator()
		for iter.Next(ctx) {
			out = append(out, iter.Val())
		}
		if err := iter.Err(); err != nil {
			return nil, fmt.Errorf("scan %s: %w", pattern, err)
		}
		return out, nil
	}
	cc, ok := q.rdb.(*redis.ClusterClient)
	if !ok {
		return scan(ctx, q.rdb)
	}
	var mu sync.Mutex
	var all []string
	err := cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		keys, err := scan(ctx, c)
		mu.Lock()
		all = append(all, keys...)
		mu.Unlock()
		return err
	})
	return all, err
}
