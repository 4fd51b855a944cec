package flowstate

import (
	"testing"

	"github.com/delaybridge/delaybridge/queue"
)

func TestRunTimeLimitsOverrideTheEnvironmentUntilCleared(t *testing.T) {
	t.Parallel()
	f := newFixture(t, queue.FormatRaw, 1)
	rate, hold := 50.0, -1
	if err := f.s.SetLimits(f.ctx, f.tp, Override{Rate: &rate}); err != nil {
		t.Fatal(err)
	}
	if err := f.s.SetLimits(f.ctx, f.tp, Override{HoldAbove: &hold}); err != nil {
		t.Fatal(err)
	}
	o, err := f.s.Limits(f.ctx, f.tp)
	if err != nil {
		t.Fatal(err)
	}
	if o.Rate == nil || *o.Rate != 50 || o.HoldAbove == nil || *o.HoldAbove != -1 || o.Since.IsZero() {
		t.Fatalf("limits = %+v, want rate 50 and no hold, stamped", o)
	}
	if r, h := o.Effective(300, 1000); r != 50 || h != -1 {
		t.Errorf("effective = %v, %d; want 50, -1", r, h)
	}
	if ok, err := f.s.ClearLimits(f.ctx, f.tp); err != nil || !ok {
		t.Fatalf("clear = %v, %v", ok, err)
	}
	o, err = f.s.Limits(f.ctx, f.tp)
	if err != nil || !o.IsZero() {
		t.Fatalf("limits after clear = %+v, %v; want none", o, err)
	}
	if r, h := o.Effective(300, 1000); r != 300 || h != 1000 {
		t.Errorf("effective after clear = %v, %d; want the environment's 300, 1000", r, h)
	}
}
