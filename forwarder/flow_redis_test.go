package forwarder

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/delaybridge/delaybridge/flowstate"
	"github.com/delaybridge/delaybridge/internal/testing/redistest"
	"github.com/delaybridge/delaybridge/queue"
)

// scheduleNow schedules n members of t, all due at one instant just past.
func scheduleNow(t *testing.T, q *queue.Queue, tp queue.Topic, n int, name string) {
	t.Helper()
	ctx := context.Background()
	at := queue.At(time.Now().Add(-time.Millisecond))
	for i := range n {
		if _, err := q.ScheduleMember(ctx, tp, []byte(fmt.Sprintf("%s-%d", name, i)), at); err != nil {
			t.Fatal(err)
		}
	}
}

// perSecond counts the deliveries in each 1-second window starting every
// 100 ms from the first delivery + 1 s (the first second may hold the
// bucket's burst) to the last delivery.
func worstSecond(got []published) (worst int) {
	if len(got) == 0 {
		return 0
	}
	first, last := got[0].at, got[len(got)-1].at
	for from := first.Add(time.Second); !from.Add(time.Second).After(last); from = from.Add(100 * time.Millisecond) {
		n := 0
		for _, p := range got {
			if !p.at.Before(from) && p.at.Before(from.Add(time.Second)) {
				n++
			}
		}
		worst = max(worst, n)
	}
	return worst
}

func TestRateLimitedTopicKeepsItsRateAndAnUnlimitedOneIsNotHeldBehindIt(t *testing.T) {
	t.Parallel()
	q, prefix := testRedis(t)
	limited := queue.Topic{Name: "campaign", Prefix: prefix, Slots: 4}
	free := queue.Topic{Name: "orders", Prefix: prefix, Slots: 4}
	const rate, n = 200.0, 800
	scheduleNow(t, q, limited, n, "c")
	// The unlimited topic's messages fall due while the limited one is held.
	due := time.Now().Add(1500 * time.Millisecond)
	for i := range 100 {
		if _, err := q.ScheduleMember(context.Background(), free, []byte(fmt.Sprintf("o-%d", i)), queue.At(due.Add(time.Duration(i)*10*time.Millisecond))); err != nil {
			t.Fatal(err)
		}
	}
	ls, fs := newRecordSink(), newRecordSink()
	m := NewMetrics(prometheus.NewRegistry())
	start(t, Options{Queue: q, Topics: []Topic{{Topic: limited, Sink: ls}, {Topic: free, Sink: fs}}, KeyPrefix: prefix,
		AllSlots: true, BatchSize: 100, Flow: map[string]Flow{"campaign": {RateLimit: rate}}, Metrics: m})
	eventually(t, 20*time.Second, "every limited message delivered", func() bool { return len(ls.published()) == n })
	// A claim's tail beyond the limit goes back and is claimed again: it
	// is counted released, so claimed - released is what was delivered.
	claimed, released := testutil.ToFloat64(m.Claimed.WithLabelValues("campaign")), testutil.ToFloat64(m.Released.WithLabelValues("campaign"))
	t.Logf("limited topic: claimed %v, released %v", claimed, released)
	if claimed-released != n {
		t.Errorf("claimed %v - released %v = %v, want the %d messages delivered", claimed, released, claimed-released, n)
	}
	got := ls.published()
	took := got[n-1].at.Sub(got[0].at).Seconds()
	worst := worstSecond(got)
	t.Logf("%d messages at %v/s took %.2f s (%.0f/s); worst 1-second window after the first: %d", n, rate, took, float64(n-1)/took, worst)
	if float64(worst) > 1.1*rate {
		t.Errorf("a 1-second window held %d deliveries, more than the limit %v + 10 %%", worst, rate)
	}
	// n messages at rate take (n - burst)/rate after the first.
	if want := (n - BurstOfRate(rate)) / rate; took < 0.9*want || took > 1.1*want {
		t.Errorf("delivering took %.2f s, want %.2f s ± 10 %% (the long-run rate off the limit)", took, want)
	}
	for _, p := range append(got, fs.published()...) {
		if p.at.Before(p.msg.Due) {
			t.Errorf("%s delivered %s before its due time", p.msg.Body, p.msg.Due.Sub(p.at))
		}
	}
	eventually(t, 5*time.Second, "every unlimited message delivered", func() bool { return len(fs.published()) == 100 })
	// Held behind the limited topic, the unlimited one would be seconds
	// late (the limited one takes 4 s). Its p99 here is 50-100 ms with
	// -race on the loaded 2-core machine (cluster/flow_test.go holds the
	// daemons to 100 ms); the p50 bound leaves room for that load.
	p50, p99 := lateness(fs.published(), 0.5), lateness(fs.published(), 0.99)
	t.Logf("the unlimited topic's lateness: p50 %s, p99 %s", p50, p99)
	if p50 > 50*time.Millisecond || p99 > time.Second {
		t.Errorf("the unlimited topic's lateness p50 %s, p99 %s beside the limited topic; want at most 50 ms and 1 s", p50, p99)
	}
}

// lateness is the q quantile of the deliveries' lateness.
func lateness(got []published, q float64) time.Duration {
	ls := make([]time.Duration, len(got))
	for i, p := range got {
		ls[i] = p.at.Sub(p.msg.Due)
	}
	slices.Sort(ls)
	return ls[min(len(ls)-1, int(q*float64(len(ls))))]
}

// BurstOfRate is flowstate.BurstOf in messages.
func BurstOfRate(rate float64) float64 { return float64(int(flowstate.BurstOf(rate))) }

func TestRunTimeLimitChangesARunningTopicWithinASecond(t *testing.T) {
	t.Parallel()
	rdb, prefix := redistest.New(t)
	q := queue.New(rdb)
	tp := queue.Topic{Name: "reminders", Prefix: prefix, Slots: 2}
	scheduleNow(t, q, tp, 3000, "r")
	sink := newRecordSink()
	m := NewMetrics(prometheus.NewRegistry())
	start(t, Options{Queue: q, Topics: []Topic{{Topic: tp, Sink: sink}}, KeyPrefix: prefix, AllSlots: true, BatchSize: 50,
		Metrics: m, Flow: map[string]Flow{"reminders": {RateLimit: 20}}})
	time.Sleep(1500 * time.Millisecond)
	if n := len(sink.published()); n > 60 {
		t.Fatalf("%d delivered in 1.5 s at 20/s", n)
	}
	fast := 1000.0
	changed := time.Now()
	if err := flowstate.New(q).SetLimits(context.Background(), tp, flowstate.Override{Rate: &fast}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "200 more delivered at the new rate", func() bool { return len(sink.published()) > 260 })
	var took time.Duration
	for _, p := range sink.published() {
		if p.at.After(changed) {
			took = p.at.Sub(changed)
			break
		}
	}
	// At 20/s the 200 after the change would take 10 s: when the 200th
	// came is when the new rate was in force, plus 0.2 s of deliveries.
	reached := sink.published()[260].at.Sub(changed)
	t.Logf("first delivery after the change %s, 200 more %s after it; gauge %v", took, reached, testutil.ToFloat64(m.RateLimit.WithLabelValues("reminders")))
	if reached > 1200*time.Millisecond {
		t.Errorf("the new rate took %s to take effect, more than 1 s (+ 0.2 s of deliveries)", reached)
	}
	if g := testutil.ToFloat64(m.RateLimit.WithLabelValues("reminders")); g != fast {
		t.Errorf("delaybridge_topic_rate_limit = %v, want %v", g, fast)
	}
	if _, err := flowstate.New(q).ClearLimits(context.Background(), tp); err != nil {
		t.Fatal(err)
	}
}

// depthSink is a recordSink behind a queue with a consumer that takes
// perSecond messages a second: QueueDepth is what it has not taken yet.
type depthSink struct {
	*recordSink
	perSecond float64
	began     time.Time
	mu        sync.Mutex
	reads     int
}

func (s *depthSink) depth(at time.Time) int {
	consumed := int(at.Sub(s.began).Seconds() * s.perSecond)
	n := 0
	for i, p := range s.published() {
		if i >= consumed || p.at.After(at) {
			n++
		}
	}
	return min(n, max(0, len(s.published())-consumed))
}

func (s *depthSink) QueueDepth(context.Context) (int, error) {
	s.mu.Lock()
	s.reads++
	s.mu.Unlock()
	return s.depth(time.Now()), nil
}

func TestHoldAboveKeepsTheQueueWithinOneBatchPerSlotOfTheLimit(t *testing.T) {
	t.Parallel()
	q, prefix := testRedis(t)
	tp := queue.Topic{Name: "work", Prefix: prefix, Slots: 4}
	const n, hold, batch = 3000, 1000, 100
	scheduleNow(t, q, tp, n, "w")
	sink := &depthSink{recordSink: newRecordSink(), perSecond: 300, began: time.Now()}
	m := NewMetrics(prometheus.NewRegistry())
	start(t, Options{Queue: q, Topics: []Topic{{Topic: tp, Sink: sink}}, KeyPrefix: prefix, AllSlots: true, BatchSize: batch,
		Metrics: m, Flow: map[string]Flow{"work": {HoldQueue: "work", HoldAbove: hold}}})
	worst := 0
	sawHeld := false
	deadline := time.Now().Add(30 * time.Second)
	for len(sink.published()) < n && time.Now().Before(deadline) {
		worst = max(worst, sink.depth(time.Now()))
		sawHeld = sawHeld || testutil.ToFloat64(m.Held.WithLabelValues("work", heldQueue)) == 1
		time.Sleep(100 * time.Millisecond)
	}
	sink.mu.Lock()
	reads := sink.reads
	sink.mu.Unlock()
	t.Logf("%d delivered; deepest queue %d (limit %d + 4 slots × %d); %d depth reads", len(sink.published()), worst, hold, batch, reads)
	if len(sink.published()) != n {
		t.Fatalf("%d of %d delivered within 30 s", len(sink.published()), n)
	}
	if worst > hold+4*batch {
		t.Errorf("the queue held %d, more than %d + 4 × %d", worst, hold, batch)
	}
	if !sawHeld {
		t.Error("delaybridge_topic_held{reason=queue} never showed the topic held")
	}
	if s := testutil.ToFloat64(m.HeldSeconds.WithLabelValues("work", heldQueue)); s <= 0 {
		t.Errorf("held seconds = %v, want > 0", s)
	}
}

// A rate limit that does not bind costs a trickle one Acquire per claim
// that took something and nothing to give back: the claim runs first and
// asks for what it took. Asking first for a whole batch cost a second call
// per claim to give back what it did not take.
func TestRateLimitedTrickleAsksForWhatItClaimedAndGivesNothingBack(t *testing.T) {
	t.Parallel()
	rdb, prefix := redistest.New(t)
	q := queue.New(rdb)
	tp := queue.Topic{Name: "reminders", Prefix: prefix, Slots: 2}
	const n = 40
	first := time.Now().Add(time.Second)
	for i := range n {
		if _, err := q.ScheduleMember(context.Background(), tp, []byte(fmt.Sprintf("r-%d", i)), queue.At(first.Add(time.Duration(i)*25*time.Millisecond))); err != nil {
			t.Fatal(err)
		}
	}
	log := tp.FlowKeys().Bucket + ":log"
	var mu sync.Mutex
	var given []string
	stop := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			entries, _ := rdb.ZRange(context.Background(), log, 0, -1).Result()
			mu.Lock()
			for _, e := range entries {
				if strings.Contains(e, ":-") && !slices.Contains(given, e) {
					given = append(given, e)
				}
			}
			mu.Unlock()
		}
	}()
	s := newRecordSink()
	start(t, Options{Queue: q, Topics: []Topic{{Topic: tp, Sink: s}}, KeyPrefix: prefix,
		AllSlots: true, BatchSize: 100, Flow: map[string]Flow{"reminders": {RateLimit: 100000}}})
	eventually(t, 20*time.Second, "every message delivered", func() bool { return len(s.published()) == n })
	close(stop)
	<-watched
	for _, p := range s.published() {
		if p.at.Before(p.msg.Due) {
			t.Errorf("%s delivered %s before its due time", p.msg.Body, p.msg.Due.Sub(p.at))
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(given) > 0 {
		t.Errorf("the trickle gave permits back %d times (%v): its claims asked for more than they took", len(given), given[:min(len(given), 5)])
	}
}
