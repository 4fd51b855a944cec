package queue

import (
	"context"
	"fmt"
	"maps"
	"slices"
)

// purgeScript deletes dead members for good.
//
// KEYS -> slotKeys
// ARGV -> members
//
// Returns how many were dead.
var purgeScript = slotScript(`
local n = 0
for i = 1, #ARGV do
  if redis.call('ZREM', dead, ARGV[i]) == 1 then
    redis.call('HDEL', reasons, ARGV[i])
    n = n + 1
  end
end
return n
`)

// purgeAllScript empties the dead set of one slot.
//
// KEYS -> slotKeys
//
// Returns how many members it held.
var purgeAllScript = slotScript(`
local n = redis.call('ZCARD', dead)
redis.call('UNLINK', dead, reasons)
return n
`)

// Purge deletes dead messages for good and returns how many. The error wraps
// ErrNotFound when a member or id names nothing dead.
func (q *Queue) Purge(ctx context.Context, t Topic, ref Ref) (int, error) {
	if err := ref.one(true); err != nil {
		return 0, fmt.Errorf("purge: %w", err)
	}
	n := 0
	if ref.All {
		for s := range t.SlotCount() {
			k := t.Keys(s)
			c, err := purgeAllScript.Run(ctx, q.rdb, slotKeys(k)).Int()
			if err != nil {
				return n, fmt.Errorf("purge %s: %w", k.Dead, err)
			}
			n += c
		}
		return n, nil
	}
	found, err := q.DeadFind(ctx, t, ref)
	if err != nil {
		return 0, fmt.Errorf("purge: %w", err)
	}
	if len(found) == 0 {
		return 0, fmt.Errorf("purge %s in %s: %w", ref, t.Name, ErrNotFound)
	}
	bySlot := map[int][]any{}
	for _, d := range found {
		bySlot[d.Slot] = append(bySlot[d.Slot], d.Member)
	}
	for _, s := range slices.Sorted(maps.Keys(bySlot)) {
		k := t.Keys(s)
		c, err := purgeScript.Run(ctx, q.rdb, slotKeys(k), bySlot[s]...).Int()
		if err != nil {
			return n, fmt.Errorf("purge from %s: %w", k.Dead, err)
		}
		n += c
	}
	return n, nil
}
