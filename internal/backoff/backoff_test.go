package backoff

import (
	"testing"
	"time"
)

func TestDelayGrowsByFactorUpToMax(t *testing.T) {
	tests := []struct {
		name string
		p    Policy
		want []time.Duration // Delay(0), Delay(1), …
	}{
		{"doubles by default", Policy{Min: time.Second, Max: 5 * time.Minute},
			[]time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second}},
		{"capped at max", Policy{Min: 50 * time.Millisecond, Max: 300 * time.Millisecond},
			[]time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond, 300 * time.Millisecond, 300 * time.Millisecond}},
		{"factor three", Policy{Min: time.Millisecond, Max: time.Second, Factor: 3},
			[]time.Duration{time.Millisecond, 3 * time.Millisecond, 9 * time.Millisecond}},
		{"max below min wins", Policy{Min: time.Second, Max: 100 * time.Millisecond},
			[]time.Duration{100 * time.Millisecond, 100 * time.Millisecond}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for n, want := range tt.want {
				if got := tt.p.Delay(n); got != want {
					t.Errorf("Delay(%d) = %v, want %v", n, got, want)
				}
			}
		})
	}
}

func TestDelayOfAHugeStepIsMaxNotAnOverflow(t *testing.T) {
	p := Policy{Min: time.Second, Max: 5 * time.Minute}
	for _, n := range []int{62, 63, 64, 1000, 1 << 30} {
		if got := p.Delay(n); got != p.Max {
			t.Errorf("Delay(%d) = %v, want %v", n, got, p.Max)
		}
	}
	if got := p.Delay(-3); got != p.Min {
		t.Errorf("Delay(-3) = %v, want Min %v", got, p.Min)
	}
}

func TestJitterStaysWithinItsFractionAndUnderMax(t *testing.T) {
	p := Policy{Min: 100 * time.Millisecond, Max: time.Second, Jitter: 0.2}
	for n := range 8 {
		step := p.step(n)
		lo, hi := step-step/5, step
		seen := map[time.Duration]bool{}
		for range 200 {
			d := p.Delay(n)
			if d < lo || d > hi {
				t.Fatalf("Delay(%d) = %v outside [%v, %v]", n, d, lo, hi)
			}
			if d > p.Max {
				t.Fatalf("Delay(%d) = %v above Max %v", n, d, p.Max)
			}
			seen[d] = true
		}
		if len(seen) < 10 {
			t.Errorf("Delay(%d): %d distinct values in 200, want a spread", n, len(seen))
		}
	}
}

func TestJitterOutOfRangeIsClamped(t *testing.T) {
	for _, j := range []float64{-1, 0, 5} {
		p := Policy{Min: 10 * time.Millisecond, Max: time.Second, Jitter: j}
		for range 100 {
			if d := p.Delay(0); d < 0 || d > p.Min {
				t.Fatalf("jitter %v: Delay(0) = %v outside [0, %v]", j, d, p.Min)
			}
		}
	}
}

func TestBackoffGrowsWithinBoundsAndResets(t *testing.T) {
	b := New(Policy{Min: 100 * time.Millisecond, Max: time.Second, Jitter: 0.2})
	for i := range 20 {
		d := b.Next()
		if d < 80*time.Millisecond || d > time.Second {
			t.Fatalf("step %d: %v outside [min-20%%, max]", i, d)
		}
		if i == 19 && d < 800*time.Millisecond {
			t.Fatalf("after 20 steps %v, want near max", d)
		}
	}
	b.Reset()
	if d := b.Next(); d > 100*time.Millisecond {
		t.Fatalf("after reset %v, want at most min", d)
	}
}

func TestBackoffAtTheCapStaysThere(t *testing.T) {
	b := New(Policy{Min: time.Millisecond, Max: 4 * time.Millisecond})
	want := []time.Duration{1, 2, 4, 4, 4}
	for i, w := range want {
		if got := b.Next(); got != w*time.Millisecond {
			t.Fatalf("Next #%d = %v, want %v", i, got, w*time.Millisecond)
		}
	}
	if b.n != 2 {
		t.Errorf("step counter %d after reaching the cap, want it to stop at 2", b.n)
	}
}
