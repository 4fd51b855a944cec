package forwarder

import (
	"testing"
	"time"
)

// TestPaceSizesFairClaimsByTheSlotsDrainRate: a fair slot's claims start
// at fairBatchMin, follow the rate at which full claims come (each waits
// for room, so that is the slot's drain rate), stay within fairBatchMin and
// BatchSize, and a claim that was not full teaches nothing.
func TestPaceSizesFairClaimsByTheSlotsDrainRate(t *testing.T) {
	t.Parallel()
	var p pace
	if got := p.batch(500); got != fairBatchMin {
		t.Fatalf("unmeasured: batch %d, want %d", got, fairBatchMin)
	}
	t0 := time.Now()
	p.claimed(32, 32, t0)
	p.claimed(32, 32, t0.Add(2*time.Millisecond)) // 32 drained in 2 ms: 16,000/s
	if want := int(16000 * fairClaimTime.Seconds()); p.batch(500) != want {
		t.Errorf("at 16,000/s: batch %d, want %d", p.batch(500), want)
	}
	if got := p.batch(100); got != 100 {
		t.Errorf("BatchSize 100: batch %d, want 100", got)
	}

	// A claim that took less than its limit: the next interval is not the
	// slot draining (it may have idled), so it is not a sample.
	p.claimed(5, 240, t0.Add(3*time.Millisecond))
	before := p.rate
	p.claimed(240, 240, t0.Add(time.Hour))
	if p.rate != before {
		t.Errorf("a claim after one that was not full moved the rate from %.0f to %.0f", before, p.rate)
	}

	// A slow drain: 240 messages a second apart brings the claims down, to
	// fairBatchMin at the least.
	for i := range 20 {
		p.claimed(240, 240, t0.Add(time.Hour+time.Duration(i+1)*time.Second))
	}
	if got := p.batch(500); got != fairBatchMin {
		t.Errorf("at 240/s: batch %d, want %d", got, fairBatchMin)
	}
}

// TestOnlyAFairTopicIsPaced: a plain topic claims BatchSize whatever its
// rate, MaxInflightBatches of them in flight; a fair one starts at
// fairBatchMin, as many in flight, and one while the slot is backlogged.
func TestOnlyAFairTopicIsPaced(t *testing.T) {
	t.Parallel()
	plain := claimBudget{batch: 500, most: 1000}
	for _, backlogged := range []bool{false, true} {
		if b, m := plain.sizes(backlogged); b != 500 || m != 1000 {
			t.Errorf("plain topic, backlogged %v: batch %d, most %d; want 500, 1000", backlogged, b, m)
		}
	}
	fair := claimBudget{batch: 500, most: 1000, pace: &pace{}}
	if b, m := fair.sizes(false); b != fairBatchMin || m != 2*fairBatchMin {
		t.Errorf("fair topic: batch %d, most %d; want %d, %d", b, m, fairBatchMin, 2*fairBatchMin)
	}
	if b, m := fair.sizes(true); b != fairBatchMin || m != fairBatchMin {
		t.Errorf("fair topic, backlogged: batch %d, most %d; want %d, %d", b, m, fairBatchMin, fairBatchMin)
	}
}
