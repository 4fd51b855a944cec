package queue

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// listAll pages through t until Next is "", returning the members in order.
func (f *fixture) listAll(opt ListOptions) []string {
	f.t.Helper()
	var out []string
	for i := 0; ; i++ {
		p, err := f.q.List(f.ctx, f.tp, opt)
		if err != nil {
			f.t.Fatalf("List: %v", err)
		}
		for _, e := range p.Entries {
			out = append(out, e.Member)
		}
		if p.Next == "" {
			return out
		}
		opt.Cursor = p.Next
		if i > 10000 {
			f.t.Fatal("List never ends")
		}
	}
}

func TestListPagesThroughEqualScoresAcrossSlotsEachOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatRaw, 4)
	var want []string
	for s := range 4 {
		for i := range 7 {
			m := fmt.Sprintf("s%d-%02d", s, i)
			f.zadd(s, 1000, m) // equal scores: member order
			want = append(want, m)
		}
	}
	if diff := cmp.Diff(want, f.listAll(ListOptions{Limit: 3})); diff != "" {
		t.Errorf("pages (-want +got):\n%s", diff)
	}
}

func TestListContinuesAfterTheLastMemberWhenItWasClaimedMeanwhile(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatRaw, 1)
	f.zadd(0, 10, "a", "b", "c", "d", "e")
	f.zadd(0, 5, "first")
	p, err := f.q.List(f.ctx, f.tp, ListOptions{Limit: 3})
	if err != nil || len(p.Entries) != 3 || p.Entries[2].Member != "b" {
		t.Fatalf("first page %+v, %v", p, err)
	}
	f.rdb.ZRem(f.ctx, f.tp.Keys(0).Scheduled, "first", "b") // claimed or cancelled
	p, err = f.q.List(f.ctx, f.tp, ListOptions{Limit: 3, Cursor: p.Next})
	var got []string
	for _, e := range p.Entries {
		got = append(got, e.Member)
	}
	if diff := cmp.Diff([]string{"c", "d", "e"}, got); diff != "" || err != nil {
		t.Errorf("second page (%v) (-want +got):\n%s", err, diff)
	}
}

func TestListFiltersRetryingAndDueBeforeAndShowsLastErrors(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatRaw, 1)
	now := f.redisNow()
	f.retryOnce("failing", "nack: queue full")
	f.zadd(0, now+60_000, "later")
	f.zadd(0, now-5, "soon")
	p, err := f.q.List(f.ctx, f.tp, ListOptions{State: ListRetrying})
	if err != nil || len(p.Entries) != 1 {
		t.Fatalf("retrying = %+v, %v", p, err)
	}
	if e := p.Entries[0]; e.Member != "failing" || e.State != "retrying" || e.Attempts != 1 || e.LastError != "nack: queue full" {
		t.Errorf("retrying entry %+v", e)
	}
	got := f.listAll(ListOptions{DueBefore: MillisTime(now + 30_000)})
	if diff := cmp.Diff([]string{"soon"}, got); diff != "" {
		t.Errorf("due before now+30s (-want +got):\n%s", diff)
	}
	f.claim(0, 10, time.Minute) // soon goes in flight
	if p, _ := f.q.List(f.ctx, f.tp, ListOptions{State: ListInflight}); len(p.Entries) != 1 || p.Entries[0].Due != MillisTime(now-5) || p.Entries[0].LeaseUntil.IsZero() {
		t.Errorf("inflight = %+v", p.Entries)
	}
}

func TestListRefusesBadCursorsStatesAndLimits(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatRaw, 2)
	f.zadd(0, 1, "a", "b")
	p, _ := f.q.List(f.ctx, f.tp, ListOptions{Limit: 1})
	for name, opt := range map[string]ListOptions{
		"not base64":     {Cursor: "!!"},
		"other state":    {State: ListDead, Cursor: p.Next},
		"slot too large": {Cursor: listPos{slot: 2}.encode(ListScheduled)},
	} {
		if _, err := f.q.List(f.ctx, f.tp, opt); !errors.Is(err, ErrBadCursor) {
			t.Errorf("%s: err %v, want ErrBadCursor", name, err)
		}
	}
	for _, opt := range []ListOptions{{State: "sleeping"}, {Limit: MaxListLimit + 1}, {State: ListDead, DueBefore: time.Now()}} {
		if _, err := f.q.List(f.ctx, f.tp, opt); err == nil {
			t.Errorf("%+v: no error", opt)
		}
	}
}
