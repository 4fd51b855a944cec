package queue

import (
	"testing"
	"time"
)

// TestAKeyOverItsRateHoldsOnlyThatKey: on a fair topic with a key rate of
// 20/s, a key with 200 due messages gets its burst (one second's worth)
// and then about 20 a second, while another key's 10 due messages go out
// in the first claim; a claim that leaves the limited key waiting reports
// its next token as Next (the scanner wakes for it); a rate set at run
// time for the key wins (0: none), and clearing it returns to the topic's.
func TestAKeyOverItsRateHoldsOnlyThatKey(t *testing.T) {
	t.Parallel()
	f := newFairFixture(t)
	f.tp.KeyRateLimit = 20
	now := f.redisNow()
	f.scheduleItems(fairItems("burst", 200, now-1000))
	f.scheduleItems(fairItems("b", 10, now-900))
	first := f.claim(0, 100, time.Minute)
	got := map[string]int{}
	for _, m := range first.Messages {
		d, _ := f.tp.Decode(m.Member)
		got[d.Key]++
	}
	if got["b"] != 10 || got["burst"] != 20 {
		t.Fatalf("first claim took %v, want b's 10 and burst's 20 (its burst)", got)
	}
	if !first.HasNext || first.Next-Millis(first.Now) > 60 || first.Next < Millis(first.Now) {
		t.Errorf("first claim: next %v (has %v) at %v; want burst's next token within 50 ms", first.Next, first.HasNext, Millis(first.Now))
	}
	start := first.Now
	var last time.Time
	for time.Since(start) < time.Second {
		time.Sleep(20 * time.Millisecond)
		c := f.claim(0, 100, time.Minute)
		last = c.Now
		for _, m := range c.Messages {
			d, _ := f.tp.Decode(m.Member)
			got[d.Key]++
		}
	}
	elapsed := last.Sub(start).Seconds()
	if most := 20 + int(20*elapsed) + 1; got["burst"] > most || got["burst"] < most-5 {
		t.Errorf("burst delivered %d in %.2f s at 20/s after a burst of 20, want %d or a few fewer", got["burst"], elapsed, most)
	}
	if err := f.q.SetKeyRate(f.ctx, f.tp, "burst", 0); err != nil {
		t.Fatal(err)
	}
	if rates, err := f.q.KeyRates(f.ctx, f.tp); err != nil || len(rates) != 1 || rates[0] != (KeyRate{Key: "burst", Rate: 0}) {
		t.Errorf("KeyRates = %+v, %v", rates, err)
	}
	if c := f.claim(0, 500, time.Minute); len(c.Messages) != 200-got["burst"] {
		t.Errorf("with no rate for the key a claim took %d, want the %d left", len(c.Messages), 200-got["burst"])
	}
	if err := f.q.ClearKeyRate(f.ctx, f.tp, "burst"); err != nil {
		t.Fatal(err)
	}
	if rates, err := f.q.KeyRates(f.ctx, f.tp); err != nil || len(rates) != 0 {
		t.Errorf("KeyRates after clear = %+v, %v", rates, err)
	}
	if err := f.q.SetKeyRate(f.ctx, f.tp, "burst", -1); err == nil {
		t.Error("a negative rate was taken")
	}
}
