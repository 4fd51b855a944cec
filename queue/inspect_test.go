package queue

import (
	"testing"
	"time"
)

func TestInspectFindsEveryState(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatEnvelope, 2)
	sched := func(id string, in time.Duration) Receipt {
		r, err := f.q.Schedule(f.ctx, f.tp, Message{ID: id, Body: []byte(id)}, In(in))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	sched("waiting", time.Hour)
	r := sched("flying", -time.Second)
	f.claim(r.Slot, 10, time.Minute)
	r = sched("failing", -time.Second)
	c2 := f.claim(r.Slot, 10, time.Minute)
	for _, m := range c2.Messages {
		if id, _ := EnvelopeID([]byte(m.Member)); id == "failing" {
			f.q.Retry(f.ctx, f.tp, r.Slot, Failure{Member: m.Member, Backoff: time.Hour, Reason: "nack"}, 10)
		}
	}
	r = sched("poison", -time.Second)
	for _, m := range f.claim(r.Slot, 10, time.Minute).Messages {
		f.q.Retry(f.ctx, f.tp, r.Slot, Failure{Member: m.Member, Permanent: true, Reason: "too large"}, 10)
	}
	for id, want := range map[string]Entry{
		"waiting": {State: "scheduled"},
		"flying":  {State: "inflight"},
		"failing": {State: "retrying", Attempts: 1, LastError: "nack"},
		"poison":  {State: "dead", Attempts: 1, LastError: "too large"},
		"never":   {State: "absent"},
	} {
		e, err := f.q.InspectID(f.ctx, f.tp, id)
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		if e.State != want.State || e.Attempts != want.Attempts || e.LastError != want.LastError || e.Slot != f.tp.SlotOfID(id) {
			t.Errorf("%s: %+v, want %+v", id, e, want)
		}
		if e.State != "absent" && e.State != "dead" && e.Due.IsZero() {
			t.Errorf("%s: no due time", id)
		}
		if e.State != "absent" {
			byMember, err := f.q.Inspect(f.ctx, f.tp, []byte(e.Member))
			if err != nil || byMember.State != e.State {
				t.Errorf("%s by member: %+v, %v", id, byMember, err)
			}
		}
	}
}
