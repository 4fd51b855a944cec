package queue

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// Tests of buryLua (scripts.go), straight against Redis: a member whose
// score no time can hold is dead-lettered with its reason by the script
// that finds it (claim for -inf, reap for +inf), never left to block its slot.

func TestMinusInfScoreIsDeadLetteredWithReason(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatRaw, 1)
	k := f.tp.Keys(0)
	f.zadd(0, math.Inf(-1), "never")
	f.zadd(0, f.redisNow()-1, "ok")
	c := f.claim(0, 10, time.Minute)
	if diff := cmp.Diff([]string{"ok"}, members(c)); diff != "" {
		t.Fatalf("claimed (-want +got):\n%s", diff)
	}
	if c.Dead != 1 {
		t.Errorf("claim reports %d dead-lettered, want 1", c.Dead)
	}
	if _, ok := f.zscore(k.Dead, "never"); !ok {
		t.Fatal("-inf member is not dead")
	}
	if reason, _ := f.hget(k.DeadReason, "never"); !strings.Contains(reason, "-inf") {
		t.Errorf("reason %q does not name -inf", reason)
	}
}

func TestPlusInfScoreIsDeadLetteredWithReason(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatRaw, 1)
	k := f.tp.Keys(0)
	f.zadd(0, math.Inf(1), "never")
	f.zadd(0, f.redisNow()+60_000, "later")
	r, err := f.q.Reap(f.ctx, f.tp, 0, 100, "0")
	if err != nil || r.Dead != 1 {
		t.Fatalf("Reap = %+v, %v; want 1 dead", r, err)
	}
	if reason, _ := f.hget(k.DeadReason, "never"); !strings.Contains(reason, "+inf") {
		t.Errorf("reason %q does not name +inf", reason)
	}
	if _, ok := f.zscore(k.Scheduled, "later"); !ok {
		t.Error("the finite member was touched")
	}
}
