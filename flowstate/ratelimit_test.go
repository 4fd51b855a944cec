package flowstate

import (
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
// replica with a backlog, together get the rate and no more.
func TestAcquireSharesOneRateAmongReplicas(t *testing.T) {
	t.Parallel()
	f := newFixture(t, queue.FormatRaw, 1)
	const rate, run = 400.0, 1500 * time.Millisecond
	var mu sync.Mutex
	total := 0
	var wg sync.WaitGroup
	start := time.Now()
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Since(start) < run {
				g, err := f.s.Acquire(f.ctx, f.tp, rate, 100, 0)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				total += g.Permits
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
	least := 0.9 * rate * run.Seconds()
	t.Logf("4 clients got %d permits in %.2f s at %v/s", total, elapsed, rate)
	if float64(total) > most || float64(total) < least {
		t.Errorf("granted %d permits in %.2f s, want %.0f to %.0f", total, elapsed, least, most)
	}
}
