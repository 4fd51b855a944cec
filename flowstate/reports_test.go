package flowstate

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/delaybridge/delaybridge/queue"
)

// TestReportsSkipExpiredAndMalformedFields: a report HASH may hold what no
// replica of this version wrote (a hand edit, a torn write); reports reads
// only live, well-formed reports and never fails on the rest.
func TestReportsSkipExpiredAndMalformedFields(t *testing.T) {
	t.Parallel()
	f := newFixture(t, queue.FormatRaw, 1)
	key := f.tp.FlowKeys().Held
	if err := f.s.report(f.ctx, key, "a", "rate -1", time.Minute); err != nil {
		t.Fatal(err)
	}
	// b's deadline passed; c has no deadline; d is a far deadline alone.
	if err := f.rdb.HSet(f.ctx, key, "b", "rate -1 1", "c", "rate", "d", "99999999999999").Err(); err != nil {
		t.Fatal(err)
	}
	got, err := f.s.reports(f.ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].replica != "a" || got[0].report != "rate -1" || !got[0].until.After(time.Now()) {
		t.Errorf("reports = %+v, want only a's live report", got)
	}
	// Deleting a's report sweeps the expired and undated fields with it.
	if err := f.s.report(f.ctx, key, "a", "", time.Minute); err != nil {
		t.Fatal(err)
	}
	fields, err := f.rdb.HKeys(f.ctx, key).Result()
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"d"}, fields); d != "" {
		t.Errorf("fields left after the delete (-want +got):\n%s", d)
	}
}
