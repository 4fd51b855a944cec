package forwarder

import (
	"context"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/delaybridge/delaybridge/queue"
	"github.com/delaybridge/delaybridge/sinks"
)

// budgetSink is a sink whose hold queue holds depth messages; it publishes
// nothing (the claim budget never publishes).
type budgetSink struct{ depth atomic.Int64 }

func (s *budgetSink) Publish(context.Context, []sinks.Message) error { return nil }
func (s *budgetSink) Close() error                                   { return nil }
func (s *budgetSink) QueueDepth(context.Context) (int, error)        { return int(s.depth.Load()), nil }

// budget is one slot's claim budget over a topic with flow, on a replica
// forwarding every slot alone, with no Redis: the limits it exercises
// (room in flight, hold-above) are this replica's.
func budget(t *testing.T, flow Flow, sink sinks.Sink, batch, most int) *claimBudget {
	t.Helper()
	topic := Topic{Topic: queue.Topic{Name: "b"}, Sink: sink}
	f := &Forwarder{
		opt: Options{AllSlots: true, Flow: map[string]Flow{"b": flow}},
		m:   NewMetrics(prometheus.NewRegistry()),
		log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	ft := newFlowTopic(f, topic)
	return &claimBudget{in: newInflight(&ft.unsettled), batch: batch, most: most, flow: ft, topic: topic.Topic, m: f.m, log: f.log}
}

// TestClaimBudgetAdmitsTheRoomInFlightAtMostABatch: on a topic without
// limits a claim may take a batch, or what the cap leaves; at the cap,
// without waiting, none.
func TestClaimBudgetAdmitsTheRoomInFlightAtMostABatch(t *testing.T) {
	g := budget(t, Flow{}, &budgetSink{}, 10, 25)
	ctx := context.Background()
	for _, tt := range []struct{ out, want int }{{0, 10}, {20, 5}, {25, 0}} {
		g.in.n = tt.out
		p, ok := g.admit(ctx, false, false)
		if !ok || p.n != tt.want || p.after || p.granted != 0 {
			t.Errorf("with %d of 25 out: admit = %+v, %v; want n %d", tt.out, p, ok, tt.want)
		}
	}
	if refused := g.takeBack(ctx, permit{n: 5}, 2, 0, true); refused != 0 {
		t.Errorf("takeBack without limits refused %d", refused)
	}
}

// TestClaimBudgetWaitsForRoomThenEndsWithCtx: with wait, admit returns only
// once a settlement made room (no sleep: the in-flight count signals that
// the claimer waits), and not at all once ctx ended.
func TestClaimBudgetWaitsForRoomThenEndsWithCtx(t *testing.T) {
	g := budget(t, Flow{}, &budgetSink{}, 10, 10)
	g.in.add(10)
	got := make(chan permit, 1)
	go func() {
		p, _ := g.admit(context.Background(), true, false)
		got <- p
	}()
	<-g.in.wanted
	g.in.settle(4)
	if p := <-got; p.n != 4 {
		t.Errorf("admit after 4 settled = %d, want 4", p.n)
	}
	g.in.add(4) // at the cap again
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, ok := g.admit(ctx, true, false); ok {
		t.Error("admit at the cap with an ended ctx returned ok")
	}
}

// TestClaimBudgetSharesTheHoldQueuesRoomAndTakesBackWhatAClaimLeft: under
// a hold-above limit the budget admits what the queue's room leaves, counts
// it as claimed since the reading, and takeBack returns what a claim did not
// use (all of it when the claim failed); above the limit it admits none.
func TestClaimBudgetSharesTheHoldQueuesRoomAndTakesBackWhatAClaimLeft(t *testing.T) {
	sink := &budgetSink{}
	sink.depth.Store(80)
	g := budget(t, Flow{HoldQueue: "q", HoldAbove: 100}, sink, 15, 100)
	ctx := context.Background()
	p, ok := g.admit(ctx, false, false)
	if !ok || p.n != 15 {
		t.Fatalf("admit with room 20 = %+v, %v; want a batch of 15", p, ok)
	}
	if refused := g.takeBack(ctx, p, 3, 1, true); refused != 0 || g.flow.since != 4 {
		t.Errorf("takeBack of a claim that took 3 and buried 1: refused %d, claimed since the reading %d; want 0, 4", refused, g.flow.since)
	}
	p, _ = g.admit(ctx, false, false)
	if p.n != 15 || g.flow.since != 19 {
		t.Errorf("second admit = %d (since %d), want 15 (19)", p.n, g.flow.since)
	}
	g.takeBack(ctx, p, 0, 0, false)
	if g.flow.since != 4 {
		t.Errorf("a failed claim gave back %d, want all 15 (since 4)", 19-g.flow.since)
	}
	sink.depth.Store(101)
	g.flow.reading.at = g.flow.reading.at.AddDate(0, 0, -1) // the next admit reads the depth again
	if p, ok := g.admit(ctx, false, false); !ok || p.n != 0 {
		t.Errorf("admit above the hold limit = %+v, %v; want none, ok", p, ok)
	}
}
