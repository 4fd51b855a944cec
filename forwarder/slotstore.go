package forwarder

import (
	"context"
	"time"

	"github.com/delaybridge/delaybridge/queue"
)

// slotStore is what a scanner does to its slot's keys: claim what is due,
// renew the leases of what it holds, settle what the sink answered and send
// back what it did not try. *queue.Queue is the implementation (the slot
// scripts, docs/architecture.md "Scripts"); the scanner's unit tests run it
// against an in-memory fake (slotstore_test.go), so the claim loop, the
// claim budget and the in-flight count are exercised without Redis.
type slotStore interface {
	ClaimWith(ctx context.Context, t queue.Topic, slot int, o queue.ClaimOptions) (queue.Claim, error)
	Extend(ctx context.Context, t queue.Topic, slot int, members []string, lease time.Duration) (int, error)
	AckIDs(ctx context.Context, t queue.Topic, slot int, members, ids []string) (int, error)
	RetryAll(ctx context.Context, t queue.Topic, slot int, fs []queue.Failure, maxAttempts int) ([]queue.Outcome, error)
	Release(ctx context.Context, t queue.Topic, slot int, members []string) (int, error)
	SettleTicksAt(ctx context.Context, t queue.Topic, slot int, ticks []queue.TickAt, confirmed bool) (queue.TickSettlement, error)
}

var _ slotStore = (*queue.Queue)(nil)
