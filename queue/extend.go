package queue

import (
	"context"
	"fmt"
	"time"
)

// extendScript renews the lease of members this replica still holds, so a
// live replica's slow batch is never reaped from under it: only a replica
// that died (or lost Redis) lets its leases expire.
//
// KEYS     -> slotKeys
// ARGV[1] -> lease, ms
// ARGV[2…] -> members
//
// Returns how many were still in flight (and were extended). Members no
// longer in flight are left alone.
var extendScript = slotScript(nowLua, `
local deadline = now + tonumber(ARGV[1])
local n = 0
for i = 2, #ARGV do
  if redis.call('ZSCORE', inflight, ARGV[i]) then
    redis.call('ZADD', inflight, 'XX', deadline, ARGV[i])
    n = n + 1
  end
end
return n
`)

// Extend renews the lease of claimed members that are still in flight and
// returns how many were.
func (q *Queue) Extend(ctx context.Context, t Topic, slot int, members []string, lease time.Duration) (int, error) {
	if len(members) == 0 {
		return 0, nil
	}
	k := t.Keys(slot)
	args := make([]any, 0, len(members)+1)
	args = append(args, lease.Milliseconds())
	for _, m := range members {
		args = append(args, m)
	}
	n, err := extendScript.Run(ctx, q.rdb, slotKeys(k), args...).Int()
	if err != nil {
		return 0, fmt.Errorf("extend %d leases in %s: %w", len(members), k.Inflight, err)
	}
	return n, nil
}
