package forwarder

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/queue"
)

// fakeClock is a clock the test moves by hand: its timers and tickers fire
// when Advance passes their time, never on their own.
type fakeClock struct {
	mu    sync.Mutex
	now   time.Time
	waits []*fakeWait
	// set is signalled whenever a timer or ticker is set.
	set chan struct{}
}

// fakeWait is one timer (every 0) or ticker of a fakeClock.
type fakeWait struct {
	clock *fakeClock
	c     chan time.Time
	at    time.Time
	every time.Duration
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.UnixMilli(1_800_000_000_000), set: make(chan struct{}, 1)}
}

func (f *fakeClock) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *fakeClock) add(d, every time.Duration) *fakeWait {
	f.mu.Lock()
	defer f.mu.Unlock()
	w := &fakeWait{clock: f, c: make(chan time.Time, 1), at: f.now.Add(d), every: every}
	f.waits = append(f.waits, w)
	select {
	case f.set <- struct{}{}:
	default:
	}
	return w
}

func (f *fakeClock) NewTimer(d time.Duration) timer   { return fakeTimer{f.add(d, 0)} }
func (f *fakeClock) NewTicker(d time.Duration) ticker { return fakeTicker{f.add(d, d)} }

// stop removes w; it reports whether w was still set.
func (f *fakeClock) stop(w *fakeWait) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	i := slices.Index(f.waits, w)
	if i >= 0 {
		f.waits = slices.Delete(f.waits, i, i+1)
	}
	return i >= 0
}

// Advance moves the clock by d and fires what falls due: a timer once, a
// ticker once per period passed (as time.Ticker, a tick not read is
// dropped).
func (f *fakeClock) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
	kept := f.waits[:0]
	for _, w := range f.waits {
		for !w.at.After(f.now) {
			select {
			case w.c <- f.now:
			default:
			}
			if w.every == 0 {
				break
			}
			w.at = w.at.Add(w.every)
		}
		if w.every > 0 || w.at.After(f.now) {
			kept = append(kept, w)
		}
	}
	f.waits = kept
}

// pending is how many timers and tickers are set.
func (f *fakeClock) pending() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.waits)
}

// waitPending waits (in real time, at most 10 s) until at least n timers
// and tickers are set: what the scanner waits on has been reached.
func (f *fakeClock) waitPending(t *testing.T, n int) {
	t.Helper()
	guard := time.NewTimer(10 * time.Second)
	defer guard.Stop()
	for f.pending() < n {
		select {
		case <-f.set:
		case <-guard.C:
			t.Fatalf("%d timers or tickers set within 10 s, want %d", f.pending(), n)
		}
	}
}

type fakeTimer struct{ w *fakeWait }

func (t fakeTimer) C() <-chan time.Time { return t.w.c }
func (t fakeTimer) Stop() bool          { return t.w.clock.stop(t.w) }

type fakeTicker struct{ w *fakeWait }

func (t fakeTicker) C() <-chan time.Time { return t.w.c }
func (t fakeTicker) Stop()               { t.w.clock.stop(t.w) }

// receive waits (in real time, at most 10 s) for what c carries.
func receive[T any](t *testing.T, c <-chan T, what string) T {
	t.Helper()
	guard := time.NewTimer(10 * time.Second)
	defer guard.Stop()
	select {
	case v := <-c:
		return v
	case <-guard.C:
		t.Fatalf("no %s within 10 s", what)
		panic("unreachable")
	}
}

// clockedScanner runs fakeScanner on fc, which is also the store's Redis
// clock, until the test ends.
func clockedScanner(t *testing.T, fc *fakeClock, store *fakeSlot, sink *recordSink, opt Options) {
	t.Helper()
	store.now = fc.Now
	s, _ := fakeScanner(t, store, sink, opt)
	s.clock = fc
	ctx, cancel := context.WithCancel(context.Background())
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		s.run(ctx)
	}()
	t.Cleanup(func() { cancel(); <-ended })
}

// TestScannerRenewsASlowBatchsLeaseEveryThirdOfALeaseOnItsClock: while the
// sink holds a batch, the scanner renews its lease at its first tick after
// a third of a lease (not before), and again within two thirds of a lease
// of that renewal, before it would expire. No sleep: the test moves the
// scanner's clock.
func TestScannerRenewsASlowBatchsLeaseEveryThirdOfALeaseOnItsClock(t *testing.T) {
	const lease = 30 * time.Second
	fc := newFakeClock()
	store := newFakeSlot(map[string]float64{"a": queue.Millis(fc.Now()) - 10, "b": queue.Millis(fc.Now()) - 5})
	sink := newRecordSink()
	sink.block = true
	clockedScanner(t, fc, store, sink, Options{BatchSize: 16, MaxInflightBatches: 1, Lease: lease,
		PollInterval: time.Hour, ShutdownTimeout: 50 * time.Millisecond})

	// The claim leased a and b and started the keeper (its ticker) and,
	// with nothing more due, the claimer's nap (its timer).
	fc.waitPending(t, 2)
	fc.Advance(lease/3 - time.Millisecond)
	select {
	case m := <-store.extended:
		t.Fatalf("renewed %v before a third of the lease had passed", m)
	default:
	}
	fc.Advance(2 * time.Millisecond)
	if got := receive(t, store.extended, "renewal after a third of the lease"); !slices.Equal(sorted(got), []string{"a", "b"}) {
		t.Fatalf("renewed %v, want [a b]", got)
	}
	// The tick a third later finds the batch renewed exactly a third ago,
	// not more; the one after renews it, a third of a lease before it
	// would expire.
	fc.Advance(lease / 3)
	fc.Advance(lease / 3)
	if got := receive(t, store.extended, "second renewal"); !slices.Equal(sorted(got), []string{"a", "b"}) {
		t.Fatalf("renewed %v the second time, want [a b]", got)
	}
}

// TestScannerNapsUntilTheDueTimeOnItsClock: a message due in a minute is
// not published a millisecond before (the scanner naps on its clock, which
// the store's Redis clock follows), and is published once that minute has
// passed. No sleep: the test moves the clock.
func TestScannerNapsUntilTheDueTimeOnItsClock(t *testing.T) {
	fc := newFakeClock()
	store := newFakeSlot(map[string]float64{"m": queue.Millis(fc.Now().Add(time.Minute))})
	sink := newRecordSink()
	clockedScanner(t, fc, store, sink, Options{BatchSize: 16, PollInterval: time.Hour})

	fc.waitPending(t, 1) // napping (or holding m claimed ahead) until m is due
	fc.Advance(time.Minute - time.Millisecond)
	fc.waitPending(t, 1)
	if n := len(sink.published()); n != 0 {
		t.Fatalf("published %d messages a millisecond before their due time", n)
	}
	fc.Advance(time.Millisecond)
	receive(t, store.settled, "the ack of m once it fell due")
	if p := sink.published(); len(p) != 1 || string(p[0].msg.Body) != "m" {
		t.Fatalf("published %v, want m once", p)
	}
}

func sorted(s []string) []string { return slices.Sorted(slices.Values(s)) }
