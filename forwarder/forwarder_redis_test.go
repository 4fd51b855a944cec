package forwarder

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"

	"github.com/delaybridge/delaybridge/queue"
	"github.com/delaybridge/delaybridge/sinks"
)

func TestDeliversEveryMessageInScoreOrderNeverEarly(t *testing.T) {
	t.Parallel()
	q, prefix := testRedis(t)
	sink := newRecordSink()
	topic := queue.Topic{Name: "orders", Prefix: prefix, Slots: 1}
	ctx := context.Background()
	base := time.Now().Add(300 * time.Millisecond)
	const n = 300
	for i := range n {
		due := base.Add(time.Duration(i*3) * time.Millisecond)
		if _, err := q.ScheduleMember(ctx, topic, fmt.Appendf(nil, "m%04d", i), queue.At(due)); err != nil {
			t.Fatal(err)
		}
	}
	start(t, Options{Queue: q, Topics: []Topic{{topic, sink}}, KeyPrefix: prefix, AllSlots: true, BatchSize: 64, PollInterval: 50 * time.Millisecond})
	eventually(t, 20*time.Second, "all published", func() bool { return len(sink.published()) == n })
	got := sink.published()
	for i, p := range got {
		if want := fmt.Sprintf("m%04d", i); string(p.msg.Body) != want {
			t.Fatalf("message %d is %q, want %q (score order)", i, p.msg.Body, want)
		}
		if p.at.Before(p.msg.Due) {
			t.Errorf("message %s published %s before its due time", p.msg.Body, p.msg.Due.Sub(p.at))
		}
		if p.msg.Attempt != 1 || p.msg.ID != queue.MessageID(p.msg.Body) || p.msg.Topic != "orders" {
			t.Errorf("message %s: attempt %d, id %s, topic %s", p.msg.Body, p.msg.Attempt, p.msg.ID, p.msg.Topic)
		}
	}
	eventually(t, 10*time.Second, "redis empty after acks", func() bool { return len(keysLeft(t, q, prefix)) == 0 })
}

func TestBrokerRefusalsRetryWithBackoffThenDeadLetterWithReason(t *testing.T) {
	t.Parallel()
	q, prefix := testRedis(t)
	sink := newRecordSink()
	sink.fail = func(m sinks.Message) error { return fmt.Errorf("unroutable: 312 NO_ROUTE") }
	topic := queue.Topic{Name: "t", Prefix: prefix}
	ctx := context.Background()
	if _, err := q.ScheduleMember(ctx, topic, []byte("poison"), queue.At(time.Now())); err != nil {
		t.Fatal(err)
	}
	start(t, Options{Queue: q, Topics: []Topic{{topic, sink}}, KeyPrefix: prefix, AllSlots: true,
		MaxAttempts: 3, RetryBackoff: 20 * time.Millisecond, PollInterval: 20 * time.Millisecond})
	k := topic.Keys(0)
	eventually(t, 15*time.Second, "dead-lettered", func() bool {
		n, _ := q.Client().ZCard(ctx, k.Dead).Result()
		return n == 1
	})
	reason, err := q.Client().HGet(ctx, k.DeadReason, "poison").Result()
	if err != nil || reason != "unroutable: 312 NO_ROUTE" {
		t.Errorf("dead reason = %q, %v", reason, err)
	}
	sink.mu.Lock()
	calls := sink.calls
	sink.mu.Unlock()
	if calls != 3 {
		t.Errorf("published %d times, want 3 attempts", calls)
	}
	for _, key := range []string{k.Scheduled, k.Inflight} {
		if n, _ := q.Client().ZCard(ctx, key).Result(); n != 0 {
			t.Errorf("%s holds %d members", key, n)
		}
	}
	if n, _ := q.Client().HLen(ctx, k.Attempts).Result(); n != 0 {
		t.Errorf("attempts record kept after dead-lettering")
	}
	// get and ls --state dead showed "attempts 0" after refused publishes.
	if e, err := q.Inspect(ctx, topic, []byte("poison")); err != nil || e.State != "dead" || e.Attempts != 3 {
		t.Errorf("Inspect of the dead message = %+v, %v; want dead after 3 attempts", e, err)
	}
}

func TestPermanentFailureDeadLettersAtOnceAndOthersFlow(t *testing.T) {
	t.Parallel()
	q, prefix := testRedis(t)
	sink := newRecordSink()
	sink.fail = func(m sinks.Message) error {
		if string(m.Body) == "huge" {
			return sinks.Permanent(errors.New("message of 9 bytes exceeds max 8"))
		}
		return nil
	}
	topic := queue.Topic{Name: "t", Prefix: prefix}
	ctx := context.Background()
	now := time.Now()
	for i, m := range []string{"a", "huge", "b"} {
		if _, err := q.ScheduleMember(ctx, topic, []byte(m), queue.At(now.Add(time.Duration(i)*time.Millisecond))); err != nil {
			t.Fatal(err)
		}
	}
	start(t, Options{Queue: q, Topics: []Topic{{topic, sink}}, KeyPrefix: prefix, AllSlots: true, MaxAttempts: 10, PollInterval: 20 * time.Millisecond})
	eventually(t, 10*time.Second, "a and b published", func() bool { return len(sink.published()) == 2 })
	k := topic.Keys(0)
	eventually(t, 10*time.Second, "huge dead-lettered", func() bool {
		r, _ := q.Client().HGet(ctx, k.DeadReason, "huge").Result()
		return r != ""
	})
	if r, _ := q.Client().HGet(ctx, k.DeadReason, "huge").Result(); r != "permanent failure: message of 9 bytes exceeds max 8" {
		t.Errorf("reason %q", r)
	}
}

func TestMinusInfMemberDeadLetteredByTheClaimIsCounted(t *testing.T) {
	t.Parallel()
	q, prefix := testRedis(t)
	sink := newRecordSink()
	topic := queue.Topic{Name: "t", Prefix: prefix}
	ctx := context.Background()
	k := topic.Keys(0)
	// Only a raw ZADD can write -inf: the producer API refuses it.
	if err := q.Client().ZAdd(ctx, k.Scheduled, redis.Z{Score: math.Inf(-1), Member: "never"}).Err(); err != nil {
		t.Fatal(err)
	}
	m := NewMetrics(prometheus.NewRegistry())
	start(t, Options{Queue: q, Topics: []Topic{{topic, sink}}, KeyPrefix: prefix, AllSlots: true, Metrics: m, PollInterval: 20 * time.Millisecond})
	eventually(t, 10*time.Second, "the -inf member counted in dead_total", func() bool {
		return testutil.ToFloat64(m.Dead.WithLabelValues("t")) == 1
	})
	if _, err := q.Client().ZScore(ctx, k.Dead, "never").Result(); err != nil {
		t.Errorf("never is not in the dead set: %v", err)
	}
	if n := len(sink.published()); n != 0 {
		t.Errorf("%d messages published, want none", n)
	}
}

func TestConnectionLossUsesNoAttemptAndClaimsNothingUntilReconnected(t *testing.T) {
	t.Parallel()
	q, prefix := testRedis(t)
	sink := newRecordSink()
	sink.connected = false
	topic := queue.Topic{Name: "t", Prefix: prefix}
	ctx := context.Background()
	if _, err := q.ScheduleMember(ctx, topic, []byte("m"), queue.At(time.Now())); err != nil {
		t.Fatal(err)
	}
	start(t, Options{Queue: q, Topics: []Topic{{topic, sink}}, KeyPrefix: prefix, AllSlots: true, MaxAttempts: 1, PollInterval: 20 * time.Millisecond})
	time.Sleep(500 * time.Millisecond)
	k := topic.Keys(0)
	if n, _ := q.Client().ZCard(ctx, k.Inflight).Result(); n != 0 {
		t.Errorf("claimed %d while the sink was down", n)
	}
	// Connected again but the first publish loses the connection: still no attempt used.
	sink.set(func(s *recordSink) {
		s.connected = true
		first := true
		s.fail = func(sinks.Message) error {
			if first {
				first = false
				return sinks.NotConnected(errors.New("connection reset"))
			}
			return nil
		}
	})
	eventually(t, 10*time.Second, "published after reconnect", func() bool { return len(sink.published()) == 1 })
	if p := sink.published()[0]; p.msg.Attempt != 1 {
		t.Errorf("attempt %d after a connection loss, want 1", p.msg.Attempt)
	}
	if n, _ := q.Client().ZCard(ctx, k.Dead).Result(); n != 0 {
		t.Errorf("a connection loss dead-lettered %d (MaxAttempts=1)", n)
	}
}

func TestShutdownReturnsUnconfirmedMessagesWithinTimeout(t *testing.T) {
	t.Parallel()
	q, prefix := testRedis(t)
	sink := newRecordSink()
	sink.block = true
	topic := queue.Topic{Name: "t", Prefix: prefix}
	ctx := context.Background()
	due := time.Now()
	if _, err := q.ScheduleMember(ctx, topic, []byte("m"), queue.At(due)); err != nil {
		t.Fatal(err)
	}
	stop := start(t, Options{Queue: q, Topics: []Topic{{topic, sink}}, KeyPrefix: prefix, AllSlots: true,
		ShutdownTimeout: 300 * time.Millisecond, PollInterval: 20 * time.Millisecond})
	k := topic.Keys(0)
	eventually(t, 10*time.Second, "claimed", func() bool {
		n, _ := q.Client().ZCard(ctx, k.Inflight).Result()
		return n == 1
	})
	began := time.Now()
	if err := stop(); err != nil {
		t.Fatalf("run: %v", err)
	}
	if took := time.Since(began); took > 5*time.Second {
		t.Errorf("shutdown took %s with a 300ms timeout", took)
	}
	if n, _ := q.Client().ZCard(ctx, k.Inflight).Result(); n != 0 {
		t.Errorf("%d left in flight after shutdown", n)
	}
	score, err := q.Client().ZScore(ctx, k.Scheduled, "m").Result()
	if err != nil {
		t.Fatalf("message not back in the scheduled set: %v", err)
	}
	if want := float64(due.UnixMilli()); score > want+1 {
		t.Errorf("returned with score %f, want its due time %f", score, want)
	}
}

func TestReaperReturnsLeaseOfDeadClaimer(t *testing.T) {
	t.Parallel()
	q, prefix := testRedis(t)
	topic := queue.Topic{Name: "t", Prefix: prefix}
	ctx := context.Background()
	if _, err := q.ScheduleMember(ctx, topic, []byte("orphan"), queue.At(time.Now().Add(-time.Second))); err != nil {
		t.Fatal(err)
	}
	// A replica that dies right after claiming.
	c, err := q.Claim(ctx, topic, 0, 10, 200*time.Millisecond)
	if err != nil || len(c.Messages) != 1 {
		t.Fatalf("claim: %v %v", c, err)
	}
	sink := newRecordSink()
	start(t, Options{Queue: q, Topics: []Topic{{topic, sink}}, KeyPrefix: prefix, AllSlots: true, Lease: 200 * time.Millisecond, PollInterval: 20 * time.Millisecond})
	eventually(t, 10*time.Second, "reaped and published", func() bool { return len(sink.published()) == 1 })
	if p := sink.published()[0]; p.msg.Due.UnixMilli() != c.Messages[0].DueTime().UnixMilli() {
		t.Errorf("due after reap %s, want the original %s", p.msg.Due, c.Messages[0].DueTime())
	}
}

// TestReaperReturnsLeaseOfDeadClaimerWhileItsSweepGoesOn: an envelope
// topic's sweep has two phases, so the reap on acquisition leaves it half
// done; the sweep's pace (5 s) must not put off the reap of a lease that
// expires sooner.
func TestReaperReturnsLeaseOfDeadClaimerWhileItsSweepGoesOn(t *testing.T) {
	t.Parallel()
	q, prefix := testRedis(t)
	topic := queue.Topic{Name: "t", Prefix: prefix, Format: queue.FormatEnvelope}
	ctx := context.Background()
	if _, err := q.Schedule(ctx, topic, queue.Message{ID: "orphan", Body: []byte("b")}, queue.At(time.Now().Add(-time.Second))); err != nil {
		t.Fatal(err)
	}
	const lease = time.Second
	c, err := q.Claim(ctx, topic, 0, 10, lease) // a replica that dies right after claiming
	if err != nil || len(c.Messages) != 1 {
		t.Fatalf("claim: %v %v", c, err)
	}
	claimed := time.Now()
	sink := newRecordSink()
	// Polled: a keyspace subscription's sweep would reap again at once
	// and finish the sweep, hiding the pace.
	start(t, Options{Queue: q, Topics: []Topic{{topic, sink}}, KeyPrefix: prefix, AllSlots: true, Lease: lease,
		PollInterval: 20 * time.Millisecond, KeyspaceEvents: "off"})
	eventually(t, 10*time.Second, "reaped and published", func() bool { return len(sink.published()) == 1 })
	// Lease, the reaper's grace (an eighth of it) and room for a loaded
	// machine; the sweep's pace would make it 5 s.
	if took := time.Since(claimed); took > lease+lease/8+2*time.Second {
		t.Errorf("reaped %s after the claim, with a lease of %s", took, lease)
	}
}

// TestWakeUpDeliversEarlierMessageBeforePollInterval: a scanner asleep for
// an hour is woken by a wake-up for a message due sooner; one whose score
// does not read (a producer of its own that writes ZADD and a malformed
// payload) still names its slot, which is looked at once.
func TestWakeUpDeliversEarlierMessageBeforePollInterval(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		payload func(score float64) string
	}{
		{"due score", func(score float64) string { return fmt.Sprintf("t\n0\n%.0f", score) }},
		{"score not a number", func(float64) string { return "t\n0\nsoon" }},
		{"score NaN", func(float64) string { return "t\n0\nNaN" }},
		{"no score", func(float64) string { return "t\n0" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			q, prefix := testRedis(t)
			sink := newRecordSink()
			topic := queue.Topic{Name: "t", Prefix: prefix}
			start(t, Options{Queue: q, Topics: []Topic{{topic, sink}}, KeyPrefix: prefix, AllSlots: true, PollInterval: time.Hour})
			time.Sleep(300 * time.Millisecond) // the scanner is asleep for an hour now
			ctx := context.Background()
			// A plain ZADD, as a producer without the Go API writes it: no
			// wake-up of its own.
			score, _ := queue.Score(time.Now().Add(100 * time.Millisecond))
			if err := q.Client().ZAdd(ctx, topic.Keys(0).Scheduled, redis.Z{Score: score, Member: "soon"}).Err(); err != nil {
				t.Fatal(err)
			}
			if err := q.Client().Publish(ctx, queue.WakeChannel(prefix), tc.payload(score)).Err(); err != nil {
				t.Fatal(err)
			}
			eventually(t, 10*time.Second, "woken and published", func() bool { return len(sink.published()) == 1 })
		})
	}
}

func TestSlowBatchKeepsItsLeaseAndIsPublishedOnce(t *testing.T) {
	t.Parallel()
	q, prefix := testRedis(t)
	sink := newRecordSink()
	sink.delay = 1500 * time.Millisecond // five leases
	topic := queue.Topic{Name: "t", Prefix: prefix}
	ctx := context.Background()
	if _, err := q.ScheduleMember(ctx, topic, []byte("slow"), queue.At(time.Now().Add(-time.Second))); err != nil {
		t.Fatal(err)
	}
	start(t, Options{Queue: q, Topics: []Topic{{topic, sink}}, KeyPrefix: prefix, AllSlots: true,
		Lease: 300 * time.Millisecond, PollInterval: 20 * time.Millisecond})
	eventually(t, 15*time.Second, "published and acked", func() bool {
		return len(sink.published()) >= 1 && len(keysLeft(t, q, prefix)) == 0
	})
	time.Sleep(500 * time.Millisecond)
	sink.mu.Lock()
	calls := sink.calls
	sink.mu.Unlock()
	if calls != 1 || len(sink.published()) != 1 {
		t.Errorf("published %d times in %d calls: the live claimer's lease expired under it", len(sink.published()), calls)
	}
}
