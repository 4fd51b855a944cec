package forwarder

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/delaybridge/delaybridge/flowstate"
	"github.com/delaybridge/delaybridge/queue"
)

// TestLimitsReaderPutsTheRunTimeLimitsInForceInOnePass: one pass of the
// limits reader puts a limit set at run time in force over the
// environment's, and a pass after it is cleared goes back to the
// environment's.
func TestLimitsReaderPutsTheRunTimeLimitsInForceInOnePass(t *testing.T) {
	t.Parallel()
	q, prefix := testRedis(t)
	tp := queue.Topic{Name: "campaign", Prefix: prefix}
	f, err := New(Options{Queue: q, Topics: []Topic{{Topic: tp, Sink: newRecordSink()}}, KeyPrefix: prefix, AllSlots: true,
		Flow: map[string]Flow{"campaign": {RateLimit: 50}}, Metrics: NewMetrics(prometheus.NewRegistry())})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ft := f.flows[0]
	if r := ft.rateNow(); r != 50 {
		t.Fatalf("rate before any pass %v, want the environment's 50", r)
	}
	rate := 7.0
	if err := flowstate.New(q).SetLimits(ctx, tp, flowstate.Override{Rate: &rate}); err != nil {
		t.Fatal(err)
	}
	if r := ft.rateNow(); r != 50 {
		t.Fatalf("rate %v before the reader's pass, want 50 still", r)
	}
	if p := f.limits.runOnce(ctx); p.err != nil || p.done != 1 {
		t.Fatalf("pass applied the limits of %d topics (%v), want 1", p.done, p.err)
	}
	if r := ft.rateNow(); r != 7 {
		t.Errorf("rate after a pass %v, want the run-time 7", r)
	}
	if _, err := flowstate.New(q).ClearLimits(ctx, tp); err != nil {
		t.Fatal(err)
	}
	f.limits.runOnce(ctx)
	if r := ft.rateNow(); r != 50 {
		t.Errorf("rate after the override was cleared %v, want the environment's 50", r)
	}
}
