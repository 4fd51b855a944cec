package queue

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/redis/go-redis/v9"
)

// setPast creates r as if at ago before Redis's now, so its first tick is
// already due.
func (f *fixture) setPast(r Recurrence, ago time.Duration) time.Time {
	f.t.Helper()
	now := MillisTime(f.redisNow()).Add(-ago)
	first, err := f.q.setRecurrence(f.ctx, f.tp, r, now)
	if err != nil {
		f.t.Fatalf("SetRecurrence: %v", err)
	}
	return first
}

// schedTicks lists the tick members waiting in slot's scheduled set.
func (f *fixture) schedTicks(slot int) map[string]float64 {
	f.t.Helper()
	zs, err := f.rdb.ZRangeWithScores(f.ctx, f.tp.Keys(slot).Scheduled, 0, -1).Result()
	if err != nil {
		f.t.Fatal(err)
	}
	out := map[string]float64{}
	for _, z := range zs {
		if m := z.Member.(string); IsTick(m) {
			out[m] = z.Score
		}
	}
	return out
}

func (f *fixture) settle(slot int, ms []string, confirmed bool, now time.Time) TickSettlement {
	f.t.Helper()
	st, err := f.q.SettleTicks(f.ctx, f.tp, slot, ms, confirmed, now)
	if err != nil {
		f.t.Fatalf("SettleTicks: %v", err)
	}
	return st
}

func digest() Recurrence {
	return Recurrence{ID: "digest", Spec: "@every 1s", Message: Message{
		Body: []byte("send the digest"), Headers: map[string]string{"tenant": "7"}, RoutingKey: "digests"}}
}

func TestRecurrenceSetListRemove(t *testing.T) {
	for _, format := range []Format{FormatRaw, FormatEnvelope} {
		f := newFixture(t, format, 4)
		r := digest()
		r.Zone = "Europe/Berlin"
		r.Spec = "0 9 * * *"
		first, err := f.q.SetRecurrence(f.ctx, f.tp, r)
		if err != nil {
			t.Fatal(err)
		}
		got, err := f.q.Recurrences(f.ctx, f.tp)
		if err != nil {
			t.Fatal(err)
		}
		want := []RecurrenceInfo{{Recurrence: r, Slot: f.tp.SlotOfID("digest"), Next: first}}
		if d := cmp.Diff(want, got, cmpopts.EquateEmpty()); d != "" {
			t.Errorf("%s: Recurrences (-want +got):\n%s", format, d)
		}
		if n, _ := f.q.RecurrenceCount(f.ctx, f.tp); n != 1 {
			t.Errorf("RecurrenceCount = %d, want 1", n)
		}
		if ok, err := f.q.RemoveRecurrence(f.ctx, f.tp, "digest"); !ok || err != nil {
			t.Fatalf("RemoveRecurrence = %v, %v", ok, err)
		}
		if ok, _ := f.q.RemoveRecurrence(f.ctx, f.tp, "digest"); ok {
			t.Error("second RemoveRecurrence found it")
		}
		if ticks := f.schedTicks(f.tp.SlotOfID("digest")); len(ticks) != 0 {
			t.Errorf("ticks left after remove: %v", ticks)
		}
	}
}

func TestSetRecurrenceRefusesBadInput(t *testing.T) {
	f := newFixture(t, FormatRaw, 1)
	for _, r := range []Recurrence{
		{ID: "", Spec: "@daily"},
		{ID: "x", Spec: "@every 10ms"},
		{ID: "x", Spec: "0 9 * * *", Zone: "Nowhere/Else"},
		{ID: "x", Spec: "0 9 * * *", Message: Message{Headers: map[string]string{"x-delaybridge-due": "1"}}},
	} {
		if _, err := f.q.SetRecurrence(f.ctx, f.tp, r); err == nil {
			t.Errorf("SetRecurrence(%+v) succeeded", r)
		}
	}
	if _, err := f.q.SetRecurrence(f.ctx, f.tp, Recurrence{ID: "x", Spec: "61 * * * *"}); !errors.Is(err, ErrBadSpec) {
		t.Errorf("bad spec: %v, want ErrBadSpec", err)
	}
}

func TestTickDecodesToTheRecurrencesMessage(t *testing.T) {
	f := newFixture(t, FormatRaw, 1)
	first := f.setPast(digest(), 5*time.Second)
	c := f.claim(0, 10, time.Minute)
	if len(c.Messages) != 1 {
		t.Fatalf("claimed %d, want 1 tick", len(c.Messages))
	}
	m, err := f.tp.Decode(c.Messages[0].Member)
	if err != nil {
		t.Fatal(err)
	}
	want := Message{ID: TickID("digest", first), Body: []byte("send the digest"), RoutingKey: "digests",
		Headers: map[string]string{"tenant": "7", HeaderRecurrence: "digest"}}
	if d := cmp.Diff(want, m, cmpopts.EquateEmpty()); d != "" {
		t.Errorf("Decode (-want +got):\n%s", d)
	}
	if !c.Messages[0].DueTime().Equal(first) {
		t.Errorf("due %s, want the tick %s", c.Messages[0].DueTime(), first)
	}
}

// An ack writes exactly one next tick, one period on; a duplicate ack (a
// second claimer after a lease expiry) writes none.
func TestTickAckWritesExactlyOneNextTick(t *testing.T) {
	f := newFixture(t, FormatEnvelope, 1)
	first := f.setPast(digest(), 2*time.Second)
	m := members(f.claim(0, 10, time.Minute))
	st := f.settle(0, m, true, first.Add(5*time.Millisecond))
	if st.Advanced != 1 || st.Skipped != 0 || !st.Earliest.Equal(first.Add(time.Second)) {
		t.Errorf("settle = %+v, want 1 advanced, 0 skipped, the next tick a second on", st)
	}
	st = f.settle(0, m, true, first.Add(7*time.Millisecond))
	if st.Advanced != 0 {
		t.Errorf("duplicate ack advanced %d", st.Advanced)
	}
	ticks := f.schedTicks(0)
	if len(ticks) != 1 {
		t.Fatalf("%d ticks scheduled, want 1", len(ticks))
	}
	for _, score := range ticks {
		if want := float64(first.Add(time.Second).UnixMilli()); score != want {
			t.Errorf("next tick at %v, want %v", score, want)
		}
	}
	info, _ := f.q.Recurrences(f.ctx, f.tp)
	if !info[0].Last.Equal(first) || !info[0].Next.Equal(first.Add(time.Second)) {
		t.Errorf("last %s next %s, want %s and a second later", info[0].Last, info[0].Next, first)
	}
	if n, _ := f.rdb.ZCard(f.ctx, f.tp.Keys(0).Inflight).Result(); n != 0 {
		t.Errorf("%d left in flight", n)
	}
}

// After a gap one tick goes out and the next is the first after now.
func TestTickAckAfterAGapSkipsToTheSchedule(t *testing.T) {
	f := newFixture(t, FormatRaw, 1)
	first := f.setPast(digest(), 10*time.Second)
	m := members(f.claim(0, 10, time.Minute))
	now := first.Add(6500 * time.Millisecond)
	if st := f.settle(0, m, true, now); st.Advanced != 1 || st.Skipped != 6 {
		t.Errorf("settle = %+v, want 1 advanced, 6 skipped", st)
	}
	for _, score := range f.schedTicks(0) {
		if want := float64(first.Add(7 * time.Second).UnixMilli()); score != want {
			t.Errorf("next tick at %v, want %v", score, want)
		}
	}
}

// Remove or replace between the claim and the ack: the ack writes no next
// tick of the old version, and exactly the new version's tick waits.
func TestRemoveOrReplaceDuringAFlightNeverResurrects(t *testing.T) {
	f := newFixture(t, FormatRaw, 1)
	first := f.setPast(digest(), 2*time.Second)
	m := members(f.claim(0, 10, time.Minute))
	if _, err := f.q.RemoveRecurrence(f.ctx, f.tp, "digest"); err != nil {
		t.Fatal(err)
	}
	if st := f.settle(0, m, true, first); st.Advanced != 0 || len(f.schedTicks(0)) != 0 {
		t.Errorf("ack after remove: %+v, ticks %v", st, f.schedTicks(0))
	}

	first = f.setPast(digest(), 2*time.Second)
	m = members(f.claim(0, 10, time.Minute))
	r := digest()
	r.Spec = "@every 1h"
	if _, err := f.q.SetRecurrence(f.ctx, f.tp, r); err != nil {
		t.Fatal(err)
	}
	before := f.schedTicks(0)
	if st := f.settle(0, m, true, first); st.Advanced != 0 {
		t.Errorf("ack after replace advanced %d", st.Advanced)
	}
	if d := cmp.Diff(before, f.schedTicks(0)); d != "" || len(before) != 1 {
		t.Errorf("ticks after the old version's ack (-before +after):\n%s", d)
	}
}

// A failed tick advances its recurrence before it is retried: its own ack
// later writes nothing more, and a dead tick leaves the recurrence going.
func TestFailedTickAdvancesOnceAndDeadTickKeepsTheRecurrence(t *testing.T) {
	f := newFixture(t, FormatRaw, 1)
	first := f.setPast(digest(), 2*time.Second)
	m := members(f.claim(0, 10, time.Minute))
	if st := f.settle(0, m, false, first); st.Advanced != 1 {
		t.Errorf("failed tick advanced %d, want 1", st.Advanced)
	}
	out, err := f.q.Retry(f.ctx, f.tp, 0, Failure{Member: m[0], Permanent: true, Reason: "nack"}, 5)
	if err != nil || out != Dead {
		t.Fatalf("Retry = %v, %v", out, err)
	}
	if st := f.settle(0, m, true, first); st.Advanced != 0 {
		t.Errorf("late ack advanced %d", st.Advanced)
	}
	ticks := f.schedTicks(0)
	if len(ticks) != 1 {
		t.Fatalf("%d ticks, want the next one", len(ticks))
	}
	if n, _ := f.rdb.ZCard(f.ctx, f.tp.Keys(0).Dead).Result(); n != 1 {
		t.Errorf("dead set holds %d, want the dead tick", n)
	}
}

// After a resize, setting a recurrence again moves it to its new slot (one
// tick, not two), and remove finds it in the slot of the old count.
func TestRecurrenceAfterAResizeIsMovedOrRemovedNotDoubled(t *testing.T) {
	f := newFixture(t, FormatRaw, 1)
	id := "r0"
	for i := 0; (Topic{Slots: 8}).SlotOfID(id) == 0; i++ {
		id = "r" + string(rune('a'+i))
	}
	r := digest()
	r.ID = id
	if _, err := f.q.SetRecurrence(f.ctx, f.tp, r); err != nil {
		t.Fatal(err)
	}
	big := f.tp
	big.Slots = 8
	ticks := func() int {
		n := 0
		for slot := range 8 {
			n += len(f.schedTicks(slot))
		}
		return n
	}
	if _, err := f.q.SetRecurrence(f.ctx, big, r); err != nil {
		t.Fatal(err)
	}
	if rs, _ := f.q.Recurrences(f.ctx, big); len(rs) != 1 || rs[0].Slot != big.SlotOfID(id) || ticks() != 1 {
		t.Errorf("after set with 8 slots: %+v, %d ticks", rs, ticks())
	}
	if ok, err := f.q.RemoveRecurrence(f.ctx, f.tp, id); !ok || err != nil || ticks() != 0 {
		t.Errorf("remove with 1 slot: %v, %v, %d ticks left", ok, err, ticks())
	}
}

// After a resize down, a recurrence left in a slot beyond the count (its
// tick still there, drained by the daemon) is listed by AllRecurrences
// (recur ls), with its slot.
func TestRecurrenceInASlotBeyondTheCountIsListed(t *testing.T) {
	f := newFixture(t, FormatRaw, 8)
	ids := []string{}
	for i := 0; len(ids) < 2; i++ {
		if id := fmt.Sprintf("r%d", i); f.tp.SlotOfID(id) > 0 {
			ids = append(ids, id)
		}
	}
	for _, id := range ids {
		r := digest()
		r.ID = id
		if _, err := f.q.SetRecurrence(f.ctx, f.tp, r); err != nil {
			t.Fatal(err)
		}
	}
	small := f.tp
	small.Slots = 1
	rs, err := f.q.AllRecurrences(f.ctx, small)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rs {
		got = append(got, fmt.Sprintf("%s@%d", r.ID, r.Slot))
	}
	want := []string{fmt.Sprintf("%s@%d", ids[0], f.tp.SlotOfID(ids[0])), fmt.Sprintf("%s@%d", ids[1], f.tp.SlotOfID(ids[1]))}
	if !slices.Equal(got, want) {
		t.Errorf("recurrences listed with 1 slot after 8: %v, want %v", got, want)
	}
}

func TestTickMemberIsInItsRecurrencesSlot(t *testing.T) {
	f := newFixture(t, FormatRaw, 8)
	f.setPast(digest(), 2*time.Second)
	slot := f.tp.SlotOfID("digest")
	for m := range f.schedTicks(slot) {
		if got := f.tp.SlotOf([]byte(m)); got != slot {
			t.Errorf("SlotOf(tick) = %d, want %d", got, slot)
		}
		return
	}
	t.Fatal("no tick scheduled")
}

// A tick that failed once and is then confirmed leaves no attempts or reason
// behind.
func TestRetriedTickAckForgetsItsRecords(t *testing.T) {
	f := newFixture(t, FormatRaw, 1)
	first := f.setPast(digest(), 2*time.Second)
	m := members(f.claim(0, 10, time.Minute))
	if out, err := f.q.Retry(f.ctx, f.tp, 0, Failure{Member: m[0], Reason: "nack"}, 5); err != nil || out != Retrying {
		t.Fatalf("Retry = %v, %v", out, err)
	}
	m = members(f.claim(0, 10, time.Minute))
	if st := f.settle(0, m, true, first.Add(time.Millisecond)); st.Advanced != 1 {
		t.Errorf("ack advanced %d, want 1", st.Advanced)
	}
	k := f.tp.Keys(0)
	for _, key := range []string{k.Attempts, k.DeadReason, k.Due} {
		if n, _ := f.rdb.HLen(f.ctx, key).Result(); n != 0 {
			t.Errorf("%s holds %d records after the ack", key, n)
		}
	}
}

// A tick whose spec this daemon cannot read (a zone it lacks) is settled
// without a next tick and reported, never left to hold its slot.
func TestUnreadableTickIsSettledAndReported(t *testing.T) {
	f := newFixture(t, FormatRaw, 1)
	env, _ := EncodeEnvelope(Message{ID: "x", Body: []byte("b")})
	m := tickPrefix + "v1\x001000\x00@daily\x00Nowhere/Else\x00" + string(env)
	if err := f.rdb.ZAdd(f.ctx, f.tp.Keys(0).Inflight, redis.Z{Score: 1, Member: m}).Err(); err != nil {
		t.Fatal(err)
	}
	st := f.settle(0, []string{m}, true, time.Now())
	if st.Unreadable != 1 || !errors.Is(st.Err, ErrBadSpec) || st.Advanced != 0 {
		t.Errorf("settle = %+v, want 1 unreadable with ErrBadSpec", st)
	}
	if n, _ := f.rdb.ZCard(f.ctx, f.tp.Keys(0).Inflight).Result(); n != 0 {
		t.Errorf("%d left in flight", n)
	}
}

// A dead tick is found and requeued by the id it was delivered with,
// though that id's own slot is not its recurrence's.
func TestDeadTickIsRequeuedByItsID(t *testing.T) {
	f := newFixture(t, FormatEnvelope, 8)
	var r Recurrence
	var tickID string
	var first time.Time
	for i := 0; tickID == ""; i++ {
		r = digest()
		r.ID = "digest-" + string(rune('a'+i))
		first = f.setPast(r, 2*time.Second)
		if id := TickID(r.ID, first); f.tp.SlotOfID(id) != f.tp.SlotOfID(r.ID) {
			tickID = id
			break
		}
		if _, err := f.q.RemoveRecurrence(f.ctx, f.tp, r.ID); err != nil {
			t.Fatal(err)
		}
	}
	slot := f.tp.SlotOfID(r.ID)
	// InspectID finds the tick by its id wherever it is: its recurrence's
	// slot, not its id's.
	inspect := func(when, want string) {
		t.Helper()
		e, err := f.q.InspectID(f.ctx, f.tp, tickID)
		if err != nil || e.State != want || e.Slot != slot {
			t.Errorf("%s: InspectID(%s) = state %q slot %d, %v; want %q in slot %d", when, tickID, e.State, e.Slot, err, want, slot)
		}
	}
	inspect("waiting", "scheduled")
	if ok, err := f.q.CancelID(f.ctx, f.tp, tickID); ok || !errors.Is(err, ErrTick) {
		t.Errorf("CancelID(waiting tick %s) = %v, %v; want ErrTick", tickID, ok, err)
	}
	m := members(f.claim(slot, 10, time.Minute))
	if len(m) != 1 {
		t.Fatalf("claimed %d, want the tick", len(m))
	}
	inspect("claimed", "inflight")
	f.settle(slot, m, false, first)
	if out, err := f.q.Retry(f.ctx, f.tp, slot, Failure{Member: m[0], Permanent: true, Reason: "nack"}, 5); err != nil || out != Dead {
		t.Fatalf("Retry = %v, %v", out, err)
	}
	inspect("dead", "dead")
	found, err := f.q.DeadFind(f.ctx, f.tp, ByID(tickID))
	if err != nil || len(found) != 1 || found[0].ID != tickID {
		t.Fatalf("DeadFind(%s) = %+v, %v; want the dead tick", tickID, found, err)
	}
	res, err := f.q.Requeue(f.ctx, f.tp, ByID(tickID))
	if err != nil || res.Requeued != 1 {
		t.Fatalf("Requeue(%s) = %+v, %v", tickID, res, err)
	}
	if _, ok := f.zscore(f.tp.Keys(slot).Scheduled, m[0]); !ok {
		t.Error("the requeued tick is not scheduled")
	}
	if _, ok := recurrenceOfTick("plain-id"); ok {
		t.Error("an id without @<ms> read as a tick's")
	}
	if _, ok := recurrenceOfTick("mail@example.com"); ok {
		t.Error("an id with a non-numeric @ suffix read as a tick's")
	}
}
