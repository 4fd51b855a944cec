package queue

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"
)

// countCalls counts the commands a client sends one at a time.
type countCalls struct{ n *int }

func (countCalls) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c countCalls) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		*c.n++
		return next(ctx, cmd)
	}
}
func (countCalls) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func TestRetryAllRecordsEveryFailureOfAGroupInOneCall(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatEnvelope, 1)
	k := f.tp.Keys(0)
	members := map[string]string{}
	for _, id := range []string{"nacked", "large", "acked", "last"} {
		members[id], _ = f.scheduleNow(id, "x")
	}
	if c := f.claim(0, 10, time.Minute); len(c.Messages) != 4 {
		t.Fatalf("claimed %d, want 4", len(c.Messages))
	}
	if _, err := f.q.Ack(f.ctx, f.tp, 0, []string{members["acked"]}); err != nil {
		t.Fatal(err)
	}
	if err := f.rdb.HSet(f.ctx, k.Attempts, members["last"], 2).Err(); err != nil {
		t.Fatal(err)
	}
	if err := retryScript.Load(f.ctx, f.rdb).Err(); err != nil {
		t.Fatal(err)
	}
	var calls int
	f.rdb.AddHook(countCalls{&calls})
	out, err := f.q.RetryAll(f.ctx, f.tp, 0, []Failure{
		{Member: members["nacked"], ID: "nacked", Backoff: time.Hour, Reason: "nack"},
		{Member: members["large"], Permanent: true, Reason: "too large"}, // id read from the member
		{Member: members["acked"], ID: "acked", Reason: "late nack"},
		{Member: members["last"], ID: "last", Backoff: time.Hour, Reason: "nack 3"},
	}, 3)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]Outcome{Retrying, Dead, NotInflight, Dead}, out); diff != "" {
		t.Errorf("RetryAll (-want +got):\n%s", diff)
	}
	if calls != 1 {
		t.Errorf("RetryAll of 4 failures sent %d commands, want 1", calls)
	}
	if _, ok := f.zscore(k.Scheduled, members["nacked"]); !ok {
		t.Error("the nacked member is not scheduled again")
	}
	for id, why := range map[string]string{"large": "too large", "last": "nack 3"} {
		if reason, _ := f.hget(k.DeadReason, members[id]); reason != why {
			t.Errorf("%s: dead reason %q, want %q", id, reason, why)
		}
	}
	if f.zcard(k.Inflight) != 0 {
		t.Error("a member is still in flight")
	}
	f.checkIndex()
}
