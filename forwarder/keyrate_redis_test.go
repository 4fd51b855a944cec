package forwarder

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/queue"
)

// TestAKeysRateHoldsOnlyThatKeyAcrossReplicas: two replicas share a fair
// topic of 4 slots whose keys may each go at 40/s (KeyRateLimit). A key
// with 240 due messages is delivered at that rate over both replicas (each
// slot's bucket gives it 10/s, a second's burst first), while another
// key's messages falling due meanwhile go out on time: the limited key
// holds only itself.
func TestAKeysRateHoldsOnlyThatKeyAcrossReplicas(t *testing.T) {
	t.Parallel()
	q, prefix := testRedis(t)
	ctx := context.Background()
	topic := queue.Topic{Name: "tenants", Prefix: prefix, Slots: 4, Format: queue.FormatEnvelope, Fair: true, KeyRateLimit: 40}
	const n = 240
	var items []queue.Item
	for i := range n {
		items = append(items, queue.Item{Message: queue.Message{ID: fmt.Sprintf("big-%04d", i), Key: "big", Body: []byte("x")}, When: queue.In(-time.Millisecond)})
	}
	due := time.Now().Add(1500 * time.Millisecond)
	for i := range 20 {
		items = append(items, queue.Item{Message: queue.Message{ID: fmt.Sprintf("small-%02d", i), Key: "small", Body: []byte("x")},
			When: queue.At(due.Add(time.Duration(i) * 50 * time.Millisecond))})
	}
	if _, err := q.ScheduleBatch(ctx, topic, items); err != nil {
		t.Fatal(err)
	}
	sinks := []*recordSink{newRecordSink(), newRecordSink()}
	for i, sink := range sinks {
		start(t, Options{Queue: q, Topics: []Topic{{Topic: topic, Sink: sink}}, KeyPrefix: prefix, ReplicaID: fmt.Sprintf("r%d", i),
			HeartbeatInterval: 100 * time.Millisecond, HeartbeatTTL: 500 * time.Millisecond, PollInterval: 200 * time.Millisecond, BatchSize: 50})
	}
	all := func() (big, small []published) {
		for _, s := range sinks {
			for _, p := range s.published() {
				if p.msg.Key == "big" {
					big = append(big, p)
				} else {
					small = append(small, p)
				}
			}
		}
		return big, small
	}
	eventually(t, 30*time.Second, "every message delivered", func() bool {
		big, small := all()
		return len(big) == n && len(small) == 20
	})
	big, small := all()
	first, last := big[0].at, big[0].at
	for _, p := range big {
		first, last = minTime(first, p.at), maxTime(last, p.at)
	}
	// 240 at 40/s after a burst of 40: at least 5 s, by the token arithmetic.
	took := last.Sub(first)
	t.Logf("the limited key's %d messages took %v over two replicas", n, took)
	if took < 4500*time.Millisecond {
		t.Errorf("the limited key's %d messages went out in %v, want at least 4.5 s at 40/s", n, took)
	}
	var worst time.Duration
	for _, p := range small {
		at := due
		var i int
		if _, err := fmt.Sscanf(p.msg.ID, "small-%02d", &i); err == nil {
			at = due.Add(time.Duration(i) * 50 * time.Millisecond)
		}
		// early on the wall clock, Redis's (its scores are wall-clock
		// milliseconds): a monotonic comparison counts a step of the wall
		// clock during the test as earliness (CI saw all of them 4-8 ms
		// "early" at once)
		if wall, due := p.at.Round(0), at.Round(0).Truncate(time.Millisecond); wall.Before(due) {
			t.Errorf("%s delivered %v early", p.msg.ID, due.Sub(wall))
		}
		worst = max(worst, p.at.Sub(at))
	}
	t.Logf("the other key's messages were at most %v late", worst)
	if worst > time.Second {
		t.Errorf("the other key's messages were up to %v late behind the limited key, want well under its 5 s", worst)
	}
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
