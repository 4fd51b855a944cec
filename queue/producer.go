package queue

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Schedule adds a raw member to its slot of t, due at due. Scheduling a
// member that is already scheduled moves it to the new time (members are
// unique: the same bytes are one message).
func (q *Queue) Schedule(ctx context.Context, t Topic, member []byte, due time.Time) error {
	score, err := Score(due)
	if err != nil {
		return fmt.Errorf("schedule in %s: %w", t.Name, err)
	}
	k := t.Keys(t.SlotOf(member))
	if err := q.rdb.ZAdd(ctx, k.Scheduled, redis.Z{Score: score, Member: member}).Err(); err != nil {
		return fmt.Errorf("schedule in %s: %w", k.Scheduled, err)
	}
	return nil
}

// Cancel removes a raw member that is not yet claimed. It reports whether the
// member was scheduled; a member already claimed is not cancelled.
func (q *Queue) Cancel(ctx context.Context, t Topic, member []byte) (bool, error) {
	k := t.Keys(t.SlotOf(member))
	n, err := q.rdb.ZRem(ctx, k.Scheduled, member).Result()
	if err != nil {
		return false, fmt.Errorf("cancel in %s: %w", k.Scheduled, err)
	}
	return n > 0, nil
}
