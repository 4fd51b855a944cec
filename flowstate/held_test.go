package flowstate

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/delaybridge/delaybridge/queue"
)

func TestHeldReportsAreSeenUntilDeletedOrExpired(t *testing.T) {
	t.Parallel()
	f := newFixture(t, queue.FormatRaw, 1)
	other := queue.Topic{Name: "other", Prefix: f.tp.Prefix}
	if err := f.s.ReportHeld(f.ctx, f.tp, "a", &Held{Reasons: []string{HeldQueue}, Depth: 1234}, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := f.s.ReportHeld(f.ctx, f.tp, "b", &Held{Reasons: []string{HeldRate, HeldQueue}, Depth: -1}, 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	got, err := f.s.HeldOf(f.ctx, []queue.Topic{f.tp, other})
	if err != nil {
		t.Fatal(err)
	}
	want := [][]Held{{{Replica: "a", Reasons: []string{HeldQueue}, Depth: 1234}, {Replica: "b", Reasons: []string{HeldRate, HeldQueue}, Depth: -1}}, nil}
	sorted := cmpopts.SortSlices(func(x, y Held) bool { return x.Replica < y.Replica })
	if d := cmp.Diff(want, got, sorted, cmpopts.IgnoreFields(Held{}, "Until")); d != "" {
		t.Fatalf("held reports (-want +got):\n%s", d)
	}
	if got[0][0].Until.Before(time.Now()) {
		t.Errorf("report until %s, want in the future", got[0][0].Until)
	}
	// b's report expires without being deleted (a replica that died).
	time.Sleep(400 * time.Millisecond)
	got, err = f.s.HeldOf(f.ctx, []queue.Topic{f.tp})
	if err != nil || len(got[0]) != 1 || got[0][0].Replica != "a" || !got[0][0].By(HeldQueue) || got[0][0].By(HeldRate) {
		t.Fatalf("after b's report expired: %+v, %v; want only a's", got, err)
	}
	if err := f.s.ReportHeld(f.ctx, f.tp, "a", nil, time.Minute); err != nil {
		t.Fatal(err)
	}
	if n, err := f.rdb.Exists(f.ctx, f.tp.FlowKeys().Held).Result(); err != nil || n != 0 {
		t.Errorf("held key exists (%d, %v) after every report was deleted or expired", n, err)
	}
}

func TestHeldReportKeyExpiresWithItsReports(t *testing.T) {
	t.Parallel()
	f := newFixture(t, queue.FormatRaw, 1)
	if err := f.s.ReportHeld(f.ctx, f.tp, "a", &Held{Reasons: []string{HeldRate}, Depth: -1}, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	ttl, err := f.rdb.PTTL(f.ctx, f.tp.FlowKeys().Held).Result()
	if err != nil || ttl <= 0 || ttl > 2*time.Second+10*time.Millisecond {
		t.Errorf("held key's TTL = %s (%v), want at most the report's 2 s", ttl, err)
	}
}
