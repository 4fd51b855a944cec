package forwarder

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delaybridge/delaybridge/internal/testing/redistest"
	"github.com/delaybridge/delaybridge/queue"
	"github.com/delaybridge/delaybridge/sinks"
)

// memberCalls counts the Redis commands that carry any of a set of members
// as an argument: the writes that settle them.
type memberCalls struct {
	mu      sync.Mutex
	members map[string]bool
	n       int
}

func (c *memberCalls) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *memberCalls) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.mu.Lock()
		for _, a := range cmd.Args() {
			if s, ok := a.(string); ok && c.members[s] {
				c.n++
				break
			}
		}
		c.mu.Unlock()
		return next(ctx, cmd)
	}
}
func (c *memberCalls) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			c.ProcessHook(func(context.Context, redis.Cmder) error { return nil })(ctx, cmd)
		}
		return next(ctx, cmds)
	}
}

func (c *memberCalls) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// TestOneBatchIsSettledInOneAckAndOneRetryCallByTheIDsItWasDecodedWith:
// half of an envelope batch is confirmed and half refused for good; the
// acks go to Redis in one call and so do the refusals, and both leave the
// ids index by the ids decoded for publishing.
func TestOneBatchIsSettledInOneAckAndOneRetryCallByTheIDsItWasDecodedWith(t *testing.T) {
	t.Parallel()
	rdb, prefix := redistest.New(t)
	q := queue.New(rdb)
	topic := queue.Topic{Name: "t", Prefix: prefix, Format: queue.FormatEnvelope}
	ctx := context.Background()
	calls := &memberCalls{members: map[string]bool{}}
	const n = 40
	for i := range n {
		r, err := q.Schedule(ctx, topic, queue.Message{ID: fmt.Sprintf("id-%d", i), Body: []byte(fmt.Sprint(i))}, queue.In(-time.Second))
		if err != nil {
			t.Fatal(err)
		}
		calls.members[r.Member] = true
	}
	rdb.AddHook(calls)
	sink := newRecordSink()
	sink.fail = func(m sinks.Message) error {
		var i int
		fmt.Sscan(string(m.Body), &i)
		if i%2 == 1 {
			return sinks.Permanent(errors.New("refused"))
		}
		return nil
	}
	start(t, Options{Queue: q, Topics: []Topic{{topic, sink}}, KeyPrefix: prefix, AllSlots: true, BatchSize: 2 * n})
	k := topic.Keys(0)
	eventually(t, 10*time.Second, "every message settled", func() bool {
		dead, _ := rdb.ZCard(ctx, k.Dead).Result()
		inflight, _ := rdb.ZCard(ctx, k.Inflight).Result()
		return len(sink.published()) == n/2 && dead == n/2 && inflight == 0
	})
	if got := calls.count(); got != 2 {
		t.Errorf("%d Redis commands carried the batch's members, want 2 (one ack, one retry)", got)
	}
	if ids, _ := rdb.HLen(ctx, k.IDs).Result(); ids != 0 {
		t.Errorf("the ids index still holds %d ids of settled messages", ids)
	}
}
