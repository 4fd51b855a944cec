package queue

import (
	"context"
	"errors"
	"fmt"
)

// Finding a member by its MessageID lets a tool name a message without its
// bytes (the web console puts the id in a URL, never the body). No index maps
// MessageID to member, so the slot's sets are scanned with ZSCAN, a page at a
// time, and the scan stops after MaxFindScan members: it costs time in the
// size of the slot, bounded, and never blocks Redis.

// MaxFindScan bounds the members FindMessageID reads in one slot.
const MaxFindScan = 200000

// ErrScanLimit is wrapped by FindMessageID's error when the slot holds more
// members than it reads and none of them matched.
var ErrScanLimit = errors.New("scan limit reached")

// findPage is how many members one ZSCAN call asks for.
const findPage = 1000

// FindMessageID returns the member of slot whose MessageID is id (in flight,
// scheduled or dead, in that order), as Inspect reports it. The error wraps
// ErrNotFound when no member matches, ErrScanLimit when the slot was too
// large to read whole.
func (q *Queue) FindMessageID(ctx context.Context, t Topic, slot int, id string) (Entry, error) {
	if slot < 0 || slot >= t.SlotCount() {
		return Entry{}, fmt.Errorf("find %s: topic %s has no slot %d", id, t.Name, slot)
	}
	k := t.Keys(slot)
	scanned := 0
	for _, key := range []string{k.Inflight, k.Scheduled, k.Dead} {
		var cursor uint64
		for {
			kv, next, err := q.rdb.ZScan(ctx, key, cursor, "", findPage).Result()
			if err != nil {
				return Entry{}, fmt.Errorf("find %s in %s: %w", id, key, err)
			}
			for i := 0; i < len(kv); i += 2 {
				if MessageID([]byte(kv[i])) == id {
					e, _, err := q.inspect(ctx, t, slot, kv[i], "")
					return e, err
				}
			}
			scanned += len(kv) / 2
			if cursor = next; cursor == 0 {
				break
			}
			if scanned >= MaxFindScan {
				return Entry{}, fmt.Errorf("find %s in %s after %d members: %w", id, key, scanned, ErrScanLimit)
			}
		}
	}
	return Entry{}, fmt.Errorf("find %s in slot %d of %s: %w", id, slot, t.Name, ErrNotFound)
}
