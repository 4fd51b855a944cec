package forwarder

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"

	"github.com/delaybridge/delaybridge/queue"
	"github.com/delaybridge/delaybridge/sinks"
)

// fakeSlot is an in-memory slotStore of one slot: a scheduled set (member →
// score), the in-flight members, and what was acked and dead-lettered. It
// keeps the rules the scanner relies on (a claim takes due members in score
// order, at most its limit; a settlement of a member no longer in flight
// changes nothing) and counts what the tests assert on.
type fakeSlot struct {
	mu        sync.Mutex
	scheduled map[string]float64
	inflight  map[string]queue.Claimed
	attempts  map[string]int
	acked     []string
	dead      map[string]string // member → reason
	// failClaims is how many claims fail before the next one succeeds.
	failClaims int
	claims     int // claims that ran (not the failed ones)
	mostClaim  int // the largest claim's size
	// counted, when set, reads the scanner's in-flight count (what its
	// cap bounds: confirmed members waiting for their ack are out of it);
	// mostCounted is its largest value with a claim's members added.
	counted     func() int
	mostCounted int
	// settled is signalled after every ack or dead-letter.
	settled chan struct{}
	// now is the fake's Redis clock (TIME): time.Now unless a test gives
	// its fake clock's. extended receives the members of every Extend.
	now      func() time.Time
	extended chan []string
}

func newFakeSlot(members map[string]float64) *fakeSlot {
	return &fakeSlot{scheduled: members, inflight: map[string]queue.Claimed{}, attempts: map[string]int{},
		dead: map[string]string{}, settled: make(chan struct{}, 1), now: time.Now, extended: make(chan []string, 16)}
}

func (f *fakeSlot) signal() {
	select {
	case f.settled <- struct{}{}:
	default:
	}
}

func (f *fakeSlot) ClaimWith(_ context.Context, _ queue.Topic, _ int, o queue.ClaimOptions) (queue.Claim, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failClaims > 0 {
		f.failClaims--
		return queue.Claim{}, errors.New("fake: claim refused")
	}
	f.claims++
	now := f.now()
	horizon := queue.Millis(now.Add(o.Ahead))
	due := make([]string, 0, len(f.scheduled))
	for m, sc := range f.scheduled {
		if sc <= horizon {
			due = append(due, m)
		}
	}
	sort.Slice(due, func(i, j int) bool { return f.scheduled[due[i]] < f.scheduled[due[j]] })
	c := queue.Claim{Now: now}
	for _, m := range due[:min(len(due), o.Limit)] {
		cl := queue.Claimed{Member: m, Due: f.scheduled[m], Score: f.scheduled[m], Attempts: f.attempts[m]}
		delete(f.scheduled, m)
		f.inflight[m] = cl
		c.Messages = append(c.Messages, cl)
	}
	f.mostClaim = max(f.mostClaim, len(c.Messages))
	if f.counted != nil {
		f.mostCounted = max(f.mostCounted, f.counted()+len(c.Messages))
	}
	if len(c.Messages) < o.Limit {
		for _, sc := range f.scheduled {
			if !c.HasNext || sc < c.Next {
				c.Next, c.HasNext = sc, true
			}
		}
	}
	return c, nil
}

func (f *fakeSlot) Extend(_ context.Context, _ queue.Topic, _ int, members []string, _ time.Duration) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, m := range members {
		if _, ok := f.inflight[m]; ok {
			n++
		}
	}
	select {
	case f.extended <- slices.Clone(members):
	default:
	}
	return n, nil
}

func (f *fakeSlot) AckIDs(_ context.Context, _ queue.Topic, _ int, members, _ []string) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, m := range members {
		if _, ok := f.inflight[m]; ok {
			delete(f.inflight, m)
			f.acked = append(f.acked, m)
			n++
		}
	}
	f.signal()
	return n, nil
}

func (f *fakeSlot) RetryAll(_ context.Context, _ queue.Topic, _ int, fs []queue.Failure, maxAttempts int) ([]queue.Outcome, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	outs := make([]queue.Outcome, len(fs))
	for i, fl := range fs {
		cl, ok := f.inflight[fl.Member]
		if !ok {
			continue // NotInflight
		}
		delete(f.inflight, fl.Member)
		f.attempts[fl.Member]++
		if fl.Permanent || f.attempts[fl.Member] >= maxAttempts {
			f.dead[fl.Member] = fl.Reason
			outs[i] = queue.Dead
			continue
		}
		f.scheduled[fl.Member] = max(cl.Score, queue.Millis(f.now().Add(fl.Backoff)))
		outs[i] = queue.Retrying
	}
	f.signal()
	return outs, nil
}

func (f *fakeSlot) Release(_ context.Context, _ queue.Topic, _ int, members []string) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, m := range members {
		if cl, ok := f.inflight[m]; ok {
			delete(f.inflight, m)
			f.scheduled[m] = cl.Score
			n++
		}
	}
	return n, nil
}

func (f *fakeSlot) SettleTicksAt(context.Context, queue.Topic, int, []queue.TickAt, bool) (queue.TickSettlement, error) {
	return queue.TickSettlement{}, errors.New("fake: a plain topic has no ticks")
}

// done reports whether every member was acked or dead-lettered.
func (f *fakeSlot) done() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.scheduled) == 0 && len(f.inflight) == 0
}

// fakeScanner is the scanner of slot 0 of a one-slot raw topic over store,
// publishing to sink, built by New with a Redis client that is never dialled
// (nothing but store is asked).
func fakeScanner(t *testing.T, store slotStore, sink sinks.Sink, opt Options) (*scanner, *Metrics) {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	opt.Queue = queue.New(rdb)
	opt.Topics = []Topic{{Topic: queue.Topic{Name: "fake", Slots: 1}, Sink: sink}}
	opt.AllSlots = true
	opt.Metrics = NewMetrics(prometheus.NewRegistry())
	opt.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	f, err := New(opt)
	if err != nil {
		t.Fatal(err)
	}
	f.slots = store
	return f.newScanner(slotKey{topic: 0, slot: 0}, newAlarm()), f.m
}

// runUntil runs s until store is done (every member acked or dead), then
// stops it and waits for it to end.
func runUntil(t *testing.T, s *scanner, store *fakeSlot) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		s.run(ctx)
	}()
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	for !store.done() {
		select {
		case <-store.settled:
		case <-deadline.C:
			cancel()
			<-ended
			store.mu.Lock()
			defer store.mu.Unlock()
			t.Fatalf("not done within 30 s: %d scheduled, %d in flight", len(store.scheduled), len(store.inflight))
		}
	}
	cancel()
	<-ended
}

// pastMembers are n members m000… due in the past, in name order.
func pastMembers(n int) map[string]float64 {
	base := queue.Millis(time.Now().Add(-time.Minute))
	ms := map[string]float64{}
	for i := range n {
		ms[fmt.Sprintf("m%03d", i)] = base + float64(i)
	}
	return ms
}

// TestScannerDeliversEveryDueMessageOnceInScoreOrderWithAFake: the whole
// pipeline of one slot (claim, hand over, publish, settle) against the fake:
// each member published once, in score order, and acked; no claim larger
// than a batch and never more in the scanner's in-flight count than the cap
// (MaxInflightBatches × BatchSize).
func TestScannerDeliversEveryDueMessageOnceInScoreOrderWithAFake(t *testing.T) {
	store := newFakeSlot(pastMembers(250))
	sink := newRecordSink()
	s, m := fakeScanner(t, store, sink, Options{BatchSize: 16, MaxInflightBatches: 2})
	store.counted = func() int {
		s.in.mu.Lock()
		defer s.in.mu.Unlock()
		return s.in.n
	}
	runUntil(t, s, store)

	var got []string
	for _, p := range sink.published() {
		got = append(got, string(p.msg.Body))
	}
	want := slices.Sorted(func(yield func(string) bool) {
		for k := range pastMembers(250) {
			if !yield(k) {
				return
			}
		}
	})
	if !slices.Equal(got, want) {
		t.Fatalf("published %d members, want the 250 once each in score order; first ten: %v", len(got), got[:min(10, len(got))])
	}
	if !slices.Equal(store.acked, want) {
		t.Errorf("acked %d members, want the 250 in order", len(store.acked))
	}
	if store.mostClaim > 16 || store.mostCounted > 32 {
		t.Errorf("largest claim %d (batch 16), most in flight %d (cap 32)", store.mostClaim, store.mostCounted)
	}
	if n := testutil.ToFloat64(m.Published.WithLabelValues("fake")); n != 250 {
		t.Errorf("published counter %v, want 250", n)
	}
	if s.in.n != 0 {
		t.Errorf("the in-flight count is %d after every message settled, want 0", s.in.n)
	}
}

// TestScannerRetriesThenDeadLettersARefusedMessageWithAFake: a member the
// sink refuses every time is retried until MaxAttempts, then dead-lettered
// with the sink's reason; its neighbours are delivered once.
func TestScannerRetriesThenDeadLettersARefusedMessageWithAFake(t *testing.T) {
	store := newFakeSlot(pastMembers(20))
	sink := newRecordSink()
	sink.fail = func(m sinks.Message) error {
		if string(m.Body) == "m007" {
			return errors.New("refused by the test")
		}
		return nil
	}
	s, m := fakeScanner(t, store, sink, Options{BatchSize: 8, MaxAttempts: 3, RetryBackoff: time.Millisecond, RetryBackoffMax: time.Millisecond})
	runUntil(t, s, store)

	if reason, ok := store.dead["m007"]; !ok || reason == "" {
		t.Fatalf("m007 not dead-lettered with a reason: dead %v", store.dead)
	}
	if store.attempts["m007"] != 3 {
		t.Errorf("m007 attempted %d times, want MaxAttempts 3", store.attempts["m007"])
	}
	if len(store.acked) != 19 || slices.Contains(store.acked, "m007") {
		t.Errorf("acked %d members (want the 19 others): %v", len(store.acked), store.acked)
	}
	if n := testutil.ToFloat64(m.Dead.WithLabelValues("fake")); n != 1 {
		t.Errorf("dead counter %v, want 1", n)
	}
	if n := testutil.ToFloat64(m.Retried.WithLabelValues("fake")); n != 2 {
		t.Errorf("retried counter %v, want 2 (attempts 1 and 2)", n)
	}
}

// TestScannerClaimsAgainAfterAFailedClaimWithAFake: claims that fail are
// counted as Redis errors and retried with the back-off; nothing is lost or
// delivered twice.
func TestScannerClaimsAgainAfterAFailedClaimWithAFake(t *testing.T) {
	store := newFakeSlot(pastMembers(10))
	store.failClaims = 2
	sink := newRecordSink()
	s, m := fakeScanner(t, store, sink, Options{BatchSize: 4})
	runUntil(t, s, store)

	if got := len(sink.published()); got != 10 || len(store.acked) != 10 {
		t.Errorf("published %d, acked %d; want 10 each", got, len(store.acked))
	}
	if n := testutil.ToFloat64(m.RedisErrs.WithLabelValues("claim")); n != 2 {
		t.Errorf("claim errors counted %v, want 2", n)
	}
}
