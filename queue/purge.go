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
// Returns how many were dead. The reason goes with a member, unless the same
// bytes are scheduled or in flight again (then it is that copy's last error).
var purgeScript = drainScript(purgeLua, `
local n = 0
for i = 1, #ARGV do
  if purge(ARGV[i]) then n = n + 1 end
end
return n
`)

// purgeLua defines purge(m): remove m from the dead set and its reason
// unless m is live again; true when it was dead.
const purgeLua = `
local function purge(m)
  if redis.call('ZREM', dead, m) == 0 then return false end
  redis.call('HDEL', deadatts, m)
  if not redis.call('ZSCORE', sched, m) and not redis.call('ZSCORE', inflight, m) then
    redis.call('HDEL', reasons, m)
  end
  return true
end
`

// purgeAllScript deletes the oldest dead members of one slot.
//
// KEYS    -> slotKeys
// ARGV[1] -> most members to delete
//
// Returns {deleted, left}. The reasons HASH also holds the last errors of
// messages waiting to retry, so it is emptied member by member, a page per
// call, never dropped whole.
var purgeAllScript = drainScript(purgeLua, `
local page = redis.call('ZRANGE', dead, 0, tonumber(ARGV[1]) - 1)
for _, m in ipairs(page) do purge(m) end
return {#page, redis.call('ZCARD', dead)}
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
			for {
				res, err := purgeAllScript.Run(ctx, q.rdb, slotKeys(k), deadPage).Int64Slice()
				if err != nil {
					return n, fmt.Errorf("purge %s: %w", k.Dead, err)
				}
				if len(res) != 2 {
					return n, fmt.Errorf("purge %s: malformed reply of %d elements", k.Dead, len(res))
				}
				if n += int(res[0]); res[0] == 0 || res[1] == 0 {
					break
				}
			}
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
