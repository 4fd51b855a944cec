package flowstate

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/queue"
)

func TestAcquireGrantsABurstThenTellsHowLongToWait(t *testing.T) {
	t.Parallel()
	f := newFixture(t, queue.FormatRaw, 1)
	const rate = 100 // burst 10, a permit every 10 ms
	g, err := f.s.Acquire(f.ctx, f.tp, rate, 50, 0)
	if err != nil {
		t.Fatal(err)
	}
	if g.Permits != 10 {
		t.Fatalf("first grant = %d permits, want the burst, 10", g.Permits)
	}
	slow := queue.Topic{Name: "slow", Prefix: f.tp.Prefix}
	const slowRate = 2 // burst 1, a permit every 500 ms
	if g, err := f.s.Acquire(f.ctx, slow, slowRate, 50, 0); err != nil || g.Permits != 1 {
		t.Fatalf("first grant at 2/s = %+v, %v; want 1", g, err)
	}
	g, err = f.s.Acquire(f.ctx, slow, slowRate, 50, 0)
	if err != nil {
		t.Fatal(err)
	}
	if g.Permits != 0 || g.Wait <= 0 || g.Wait > 500*time.Millisecond {
		t.Fatalf("second grant at 2/s = %+v, want none and a wait of at most 500 ms", g)
	}
	time.Sleep(g.Wait)
	g, err = f.s.Acquire(f.ctx, slow, slowRate, 50, 0)
	if err != nil {
		t.Fatal(err)
	}
	if g.Permits != 1 {
		t.Errorf("after the wait: %d permits, want 1", g.Permits)
	}
}

func TestAcquireTakesBackUnusedPermits(t *testing.T) {
	t.Parallel()
	f := newFixture(t, queue.FormatRaw, 1)
	const rate = 0.5 // burst 1, one permit every 2 s
	if g, err := f.s.Acquire(f.ctx, f.tp, rate, 10, 0); err != nil || g.Permits != 1 {
		t.Fatalf("first grant = %+v, %v; want 1 permit", g, err)
	}
	if g, err := f.s.Acquire(f.ctx, f.tp, rate, 1, 0); err != nil || g.Permits != 0 || g.Wait < time.Second {
		t.Fatalf("second grant = %+v, %v; want none and a wait of about 2 s", g, err)
	}
	// The claim found nothing due: its permit goes back, and the next
	// grant has it at once.
	if g, err := f.s.Acquire(f.ctx, f.tp, rate, 0, 1); err != nil || g.Permits != 0 {
		t.Fatalf("giving back = %+v, %v", g, err)
	}
	if g, err := f.s.Acquire(f.ctx, f.tp, rate, 1, 0); err != nil || g.Permits != 1 {
		t.Fatalf("grant after the give-back = %+v, %v; want the permit given back", g, err)
	}
}

// TestAcquireSharesOneRateAmongReplicas: four clients, each as greedy as a
// replica with a backlog, together get the rate and no more. The most is
// the limiter's promise (rate × time + one burst). The least is the rate
// less what the bucket could not hold: it keeps one burst (100 ms of
// permits), so while no client asks for longer than that (a loaded host
// oversleeping every client's wait) the rest is lost by design, and the
// floor leaves it out, as measured from the clients' calls.
func TestAcquireSharesOneRateAmongReplicas(t *testing.T) {
	t.Parallel()
	f := newFixture(t, queue.FormatRaw, 1)
	const rate, run = 400.0, 1500 * time.Millisecond
	var mu sync.Mutex
	total := 0
	var calls []time.Duration // each call's midpoint, from start
	var wg sync.WaitGroup
	start := time.Now()
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Since(start) < run {
				sent := time.Since(start)
				g, err := f.s.Acquire(f.ctx, f.tp, rate, 100, 0)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				total += g.Permits
				calls = append(calls, (sent+time.Since(start))/2)
				mu.Unlock()
				if g.Permits == 0 {
					time.Sleep(g.Wait)
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	most := rate*elapsed + BurstOf(rate)
	unasked := unaskedBeyondBurst(calls, run, time.Duration(BurstOf(rate)/rate*float64(time.Second)))
	least := 0.9 * rate * (run - unasked).Seconds()
	t.Logf("4 clients got %d permits in %.2f s at %v/s (%d calls, %v with no call beyond a burst)", total, elapsed, rate, len(calls), unasked)
	if float64(total) > most || float64(total) < least {
		t.Errorf("granted %d permits in %.2f s, want %.0f to %.0f", total, elapsed, least, most)
	}
}

// unaskedBeyondBurst is how long, within run, no call came for more than
// fill (the time the bucket takes to fill from empty) after the one before:
// the time whose permits a full bucket could not keep.
func unaskedBeyondBurst(calls []time.Duration, run, fill time.Duration) time.Duration {
	slices.Sort(calls)
	var lost time.Duration
	prev := time.Duration(0)
	for _, c := range append(calls, run) {
		c = min(c, run)
		if gap := c - prev; gap > fill {
			lost += gap - fill
		}
		prev = max(prev, c)
	}
	return lost
}
