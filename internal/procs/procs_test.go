package procs

import (
	"context"
	"io"
	"log/slog"
	"runtime"
	"sync"
	"testing"
	"time"
)

func TestGovernorStartsOnOneRaisesAtOnceAndLowersAfterAQuietSpell(t *testing.T) {
	p := Policy{Interval: time.Second, Raise: 0.75, Lower: 0.5, LowerAfter: 3 * time.Second}
	g := newGovernor(p)
	type want struct{ one, changed bool }
	for i, c := range []struct {
		cores float64
		want  want
	}{
		{0.7, want{true, false}},  // busy, but within one processor
		{0.76, want{false, true}}, // above the raise: the default at once
		{0.4, want{false, false}}, // quiet 1 s
		{0.4, want{false, false}}, // quiet 2 s
		{0.6, want{false, false}}, // busy again: the quiet spell starts over
		{0.1, want{false, false}}, // 1 s
		{0.1, want{false, false}}, // 2 s
		{0.1, want{true, true}},   // 3 s: one processor
		{0.74, want{true, false}},
	} {
		one, changed := g.step(c.cores, time.Second)
		if got := (want{one, changed}); got != c.want {
			t.Fatalf("sample %d (%.2f cores): one %v changed %v, want %+v", i, c.cores, one, changed, c.want)
		}
	}
}

// eventually polls cond every 10 ms until it holds or d passed.
func eventually(d time.Duration, cond func() bool) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// Run changes the process's GOMAXPROCS: not parallel with anything.
func TestRunFollowsTheProcessCPUUseAndRestoresTheDefault(t *testing.T) {
	t.Setenv("GOMAXPROCS", "")
	def := runtime.GOMAXPROCS(0)
	if def < 2 {
		t.Fatalf("this test needs a default of 2 processors or more, the runtime has %d", def)
	}
	// Low thresholds: on a loaded CI machine a busy thread may get only
	// part of a core.
	p := Policy{Interval: 50 * time.Millisecond, Raise: 0.3, Lower: 0.15, LowerAfter: 300 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); Run(ctx, p, slog.New(slog.NewTextHandler(io.Discard, nil))) }()
	t.Cleanup(func() { cancel(); <-done })
	procs := func() int { return runtime.GOMAXPROCS(0) }

	if !eventually(5*time.Second, func() bool { return procs() == 1 }) {
		t.Fatalf("GOMAXPROCS %d with nothing to do, want 1", procs())
	}
	// Keep one processor busy: the sampled use goes above the raise.
	burn, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for burn.Err() == nil {
				for i := 0; i < 1e5; i++ {
					_ = i * i
				}
			}
		}()
	}
	raised := eventually(10*time.Second, func() bool { return procs() == def })
	stop()
	wg.Wait()
	if !raised {
		t.Fatalf("GOMAXPROCS %d while the process kept a core busy, want the default %d", procs(), def)
	}
	if !eventually(10*time.Second, func() bool { return procs() == 1 }) {
		t.Fatalf("GOMAXPROCS %d after the load ended, want 1 again", procs())
	}
	cancel()
	<-done
	if procs() != def {
		t.Fatalf("GOMAXPROCS %d after Run ended, want the default %d back", procs(), def)
	}
}

func TestRunKeepsGOMAXPROCSSetInTheEnvironment(t *testing.T) {
	t.Setenv("GOMAXPROCS", "2")
	before := runtime.GOMAXPROCS(0)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	p := Policy{Interval: 10 * time.Millisecond, Raise: 0.6, Lower: 0.3, LowerAfter: 20 * time.Millisecond}
	returned := make(chan struct{})
	go func() { defer close(returned); Run(ctx, p, slog.New(slog.NewTextHandler(io.Discard, nil))) }()
	select {
	case <-returned:
	case <-time.After(200 * time.Millisecond):
		t.Fatal("Run kept running with GOMAXPROCS set")
	}
	if got := runtime.GOMAXPROCS(0); got != before {
		t.Fatalf("GOMAXPROCS %d, want %d kept", got, before)
	}
}
