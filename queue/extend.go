package queue

import (
	"context"
	"fmt"
	"time"
)

// extendChunk is how many members one ZADD of extendScript carries, well
// below Lua's unpack() limit (about 8000 values).
const extendChunk = 256

// extendScript renews the lease of members this replica still holds, so a
// live replica's slow batch is never reaped from under it: only a replica
// that died (or lost Redis) lets its leases expire.
//
// KEYS     -> slotKeys
// ARGV[1] -> lease, ms
// ARGV[2…] -> members
//
// Returns how many leases it moved later. One variadic ZADD XX GT CH per
// chunk of extendChunk members: XX leaves members no longer in flight
// alone (never adds one), GT never shortens a lease, CH counts the leases
// moved.
var extendScript = drainScript(nowLua, fmt.Sprintf("local chunk = %d\n", extendChunk), `
local deadline = now + tonumber(ARGV[1])
local n = 0
for c = 2, #ARGV, chunk do
  local zs = {}
  for i = c, math.min(c + chunk - 1, #ARGV) do
    zs[#zs + 1] = deadline
    zs[#zs + 1] = ARGV[i]
  end
  n = n + redis.call('ZADD', inflight, 'XX', 'GT', 'CH', unpack(zs))
end
return n
`)

// Extend renews the lease of claimed members that are still in flight and
// returns how many leases it moved later (a lease is never shortened).
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
