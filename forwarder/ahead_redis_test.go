package forwarder

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/delaybridge/delaybridge/queue"
)

// holdRig is one slot's scanner, driven by hand: the test claims ahead
// itself and calls handOver.
type holdRig struct {
	q     *queue.Queue
	topic queue.Topic
	s     *scanner
}

func newHoldRig(t *testing.T) *holdRig {
	t.Helper()
	q, prefix := testRedis(t)
	topic := queue.Topic{Name: "held", Prefix: prefix}
	f, err := New(Options{Queue: q, Topics: []Topic{{topic, newRecordSink()}}, KeyPrefix: prefix, AllSlots: true,
		Metrics: NewMetrics(prometheus.NewRegistry())})
	if err != nil {
		t.Fatal(err)
	}
	return &holdRig{q: q, topic: topic, s: f.newScanner(slotKey{}, newAlarm())}
}

// claimAheadOf schedules member due in d and claims it ahead.
func (r *holdRig) claimAheadOf(t *testing.T, member string, d time.Duration) (queue.Claim, time.Time) {
	t.Helper()
	ctx := context.Background()
	if _, err := r.q.ScheduleMember(ctx, r.topic, []byte(member), queue.In(d)); err != nil {
		t.Fatal(err)
	}
	c, err := r.q.ClaimAhead(ctx, r.topic, 0, 10, time.Minute, 2*d)
	after := time.Now()
	if err != nil || len(c.Messages) != 1 {
		t.Fatalf("claim ahead: %v, %d messages", err, len(c.Messages))
	}
	r.s.in.add(1)
	return c, after
}

func TestMessageClaimedAheadIsHandedOverNoEarlierThanItsScore(t *testing.T) {
	t.Parallel()
	r := newHoldRig(t)
	c, after := r.claimAheadOf(t, "m", 300*time.Millisecond)
	score := queue.MillisTime(c.Messages[0].Score)
	if !score.After(c.Now) {
		t.Fatalf("score %v not after the claim's now %v: nothing was claimed ahead", score, c.Now)
	}
	var handed []time.Time
	held := []aheadClaim{{msgs: c.Messages, now: c.Now, after: after}}
	rest, ok := r.s.handOver(context.Background(), held, false, func(batch) { handed = append(handed, time.Now()) })
	if !ok || len(rest) != 0 || len(handed) != 1 {
		t.Fatalf("handOver = %v, handed %d batches; want true, 1", ok, len(handed))
	}
	redisNow, err := r.q.Client().Time(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	// Redis's clock when the batch was handed over: no earlier than the
	// score. The local clock is Redis's here (same machine), so compare
	// both ways: the hand-over time and Redis's TIME after it.
	if handed[0].Before(score) || redisNow.Before(score) {
		t.Errorf("handed over at %v (Redis now %v), before the score %v", handed[0], redisNow, score)
	}
}

func TestStopWhileHoldingReturnsTheMessageUnpublishedAtItsDue(t *testing.T) {
	t.Parallel()
	r := newHoldRig(t)
	c, after := r.claimAheadOf(t, "m", 10*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	handed := 0
	held := []aheadClaim{{msgs: c.Messages, now: c.Now, after: after}}
	if _, ok := r.s.handOver(ctx, held, false, func(batch) { handed++ }); ok {
		t.Fatal("handOver returned true after its context ended")
	}
	if handed != 0 {
		t.Fatalf("handed over %d batches of a message due in 10 s", handed)
	}
	k := r.topic.Keys(0)
	bg := context.Background()
	if n, _ := r.q.Client().ZCard(bg, k.Inflight).Result(); n != 0 {
		t.Errorf("%d left in flight", n)
	}
	score, err := r.q.Client().ZScore(bg, k.Scheduled, "m").Result()
	if err != nil || score != c.Messages[0].Score {
		t.Errorf("back in scheduled with score %v (%v), want %v", score, err, c.Messages[0].Score)
	}
	if r.s.in.n != 0 {
		t.Errorf("in flight count %d after the return, want 0", r.s.in.n)
	}
}

func TestAnnouncedEarlierMessageEndsTheHold(t *testing.T) {
	t.Parallel()
	r := newHoldRig(t)
	c, after := r.claimAheadOf(t, "m", time.Second)
	held := []aheadClaim{{msgs: c.Messages, now: c.Now, after: after}}
	go func() {
		time.Sleep(50 * time.Millisecond)
		r.s.alarm.ring(queue.Millis(time.Now())) // due now, before the held one
	}()
	handed := 0
	start := time.Now()
	rest, ok := r.s.handOver(context.Background(), held, true, func(batch) { handed++ })
	if !ok || handed != 0 || len(rest) != 1 || len(rest[0].msgs) != 1 {
		t.Fatalf("handOver = %d held, %v, handed %d; want the message still held, true, 0", len(rest), ok, handed)
	}
	if took := time.Since(start); took > 900*time.Millisecond {
		t.Errorf("the hold ended after %s, when its message fell due, not when the earlier one was announced", took)
	}
}

func TestAnnouncedLaterMessageDoesNotEndTheHold(t *testing.T) {
	t.Parallel()
	r := newHoldRig(t)
	c, after := r.claimAheadOf(t, "m", 300*time.Millisecond)
	held := []aheadClaim{{msgs: c.Messages, now: c.Now, after: after}}
	go func() {
		time.Sleep(50 * time.Millisecond)
		r.s.alarm.ring(c.Messages[0].Score + 10_000) // due after the held one
	}()
	handed := 0
	rest, ok := r.s.handOver(context.Background(), held, true, func(batch) { handed++ })
	if !ok || handed != 1 || len(rest) != 0 {
		t.Fatalf("handOver = %d held, %v, handed %d; want nothing held, true, 1", len(rest), ok, handed)
	}
}

// A plain ZADD with no wake-up is seen by the next claim only, promised
// within the poll interval while slots are polled: a claim never looks (and
// so never holds) further ahead than that, nor past a tenth of the lease.
func TestLookAheadIsCappedByPollIntervalWhilePollingAndByLease(t *testing.T) {
	t.Parallel()
	q, prefix := testRedis(t)
	topic := queue.Topic{Name: "ahead", Prefix: prefix}
	for _, c := range []struct {
		name        string
		poll, lease time.Duration
		mode        string
		want        time.Duration
	}{
		{"defaults", time.Second, 30 * time.Second, modePoll, claimAhead},
		{"poll interval shorter, polling", claimAhead / 4, 30 * time.Second, modePoll, claimAhead / 4},
		{"poll interval shorter, keyspace notifications", claimAhead / 4, 30 * time.Second, modeZset, claimAhead},
		{"short lease", time.Second, claimAhead * 5, modePoll, claimAhead / 2},
	} {
		f, err := New(Options{Queue: q, Topics: []Topic{{topic, newRecordSink()}}, KeyPrefix: prefix, AllSlots: true,
			PollInterval: c.poll, Lease: c.lease, Metrics: NewMetrics(prometheus.NewRegistry())})
		if err != nil {
			t.Fatal(err)
		}
		f.keyspace.setMode(c.mode, "")
		if got := f.newScanner(slotKey{}, newAlarm()).lookAhead(); got != c.want {
			t.Errorf("%s: look-ahead %s, want %s", c.name, got, c.want)
		}
	}
}
