package queue

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// A registry entry is written by the daemon at start (Register). An operator
// may also change or forget one by hand (`delaybridge topics`), but only
// while no replica is live: a live replica forwards by the layout it
// registered, and a registry that said otherwise would send producers'
// messages where it does not look.

// refuseWhileLive fails, wrapping ErrLayoutMismatch, when a replica of
// prefix is live.
func (q *Queue) refuseWhileLive(ctx context.Context, prefix, what string) error {
	live, err := q.LiveReplicas(ctx, prefix, "")
	if err != nil {
		return err
	}
	if len(live) > 0 {
		return fmt.Errorf("%s in %s: live replicas %s forward by the registered layouts: %w: "+
			"stop them first, or restart them with the new settings (with none live, the first to start takes the registry over)",
			what, TopicsKey(prefix), strings.Join(live, ", "), ErrLayoutMismatch)
	}
	return nil
}

// SetLayout writes l as the registered layout of l.Name under prefix,
// refused (ErrLayoutMismatch) while a replica is live. Messages already in
// slots the new count does not have are drained by the next daemon (see
// StrandedSlots); a changed format or key is the operator's to migrate.
func (q *Queue) SetLayout(ctx context.Context, prefix string, l Layout) error {
	if err := l.Topic(prefix).Validate(); err != nil {
		return fmt.Errorf("set layout: %w", err)
	}
	if err := q.refuseWhileLive(ctx, prefix, "set topic "+l.Name); err != nil {
		return err
	}
	l.Version = LayoutVersion
	doc, err := json.Marshal(l)
	if err != nil {
		return fmt.Errorf("set layout of %s: %w", l.Name, err)
	}
	if err := q.rdb.HSet(ctx, TopicsKey(prefix), l.Name, string(doc)).Err(); err != nil {
		return fmt.Errorf("set layout of %s in %s: %w", l.Name, TopicsKey(prefix), err)
	}
	return nil
}

// ForgetLayout removes topic name from the registry of prefix, refused
// (ErrLayoutMismatch) while a replica is live, and reports whether it was
// registered. The topic's messages stay in Redis.
func (q *Queue) ForgetLayout(ctx context.Context, prefix, name string) (bool, error) {
	if err := q.refuseWhileLive(ctx, prefix, "forget topic "+name); err != nil {
		return false, err
	}
	n, err := q.rdb.HDel(ctx, TopicsKey(prefix), name).Result()
	if err != nil {
		return false, fmt.Errorf("forget %s in %s: %w", name, TopicsKey(prefix), err)
	}
	return n == 1, nil
}
