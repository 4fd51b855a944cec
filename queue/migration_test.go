package queue

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Data written by the previous version (its :ids hash, id -> member) and a
// rolling mix of its scripts (previous_test.go) with this version's.

// prevPut schedules an envelope with the previous version's script, due at
// score, and returns its member.
func (f *fixture) prevPut(id, body string, score float64) string {
	f.t.Helper()
	m, err := EncodeEnvelope(Message{ID: id, Body: []byte(body)})
	if err != nil {
		f.t.Fatal(err)
	}
	k := f.tp.Keys(f.tp.SlotOfID(id))
	if err := prevSchedule.Run(f.ctx, f.rdb, slotKeys(k), m, id, "at",
		strconv.FormatFloat(score, 'f', -1, 64), "", "").Err(); err != nil {
		f.t.Fatalf("previous schedule of %s: %v", id, err)
	}
	return string(m)
}

func TestDataOfThePreviousVersionIsDeliveredCancelledAndRescheduledByID(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatEnvelope, 4)
	now, later := f.redisNow(), f.redisNow()+3_600_000
	for _, id := range []string{"keep", "cancel", "move", "replace", "rescheduled by member"} {
		f.prevPut(id, "v1", later)
	}
	deliver, retry := f.prevPut("deliver", "d", now-2000), f.prevPut("retry", "r", now-1000)
	if got, _ := f.hget(f.tp.Keys(f.tp.SlotOfID("keep")).IDs, "keep"); !strings.Contains(got, `"keep"`) {
		t.Fatalf("the previous version's :ids holds %q for keep", got)
	}

	if info, err := f.q.Get(f.ctx, f.tp, "keep"); err != nil || string(info.Message.Body) != "v1" || info.State != StateScheduled {
		t.Errorf("Get(keep) = %+v, %v", info, err)
	}
	if ok, err := f.q.CancelID(f.ctx, f.tp, "cancel"); !ok || err != nil {
		t.Errorf("CancelID = %v, %v", ok, err)
	}
	if _, err := f.q.Get(f.ctx, f.tp, "cancel"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get after CancelID = %v, want ErrNotFound", err)
	}
	at := time.UnixMilli(int64(later) + 60_000)
	if _, err := f.q.Reschedule(f.ctx, f.tp, ByID("move"), At(at)); err != nil {
		t.Errorf("Reschedule by id: %v", err)
	}
	if info, err := f.q.Get(f.ctx, f.tp, "move"); err != nil || !info.Due.Equal(at) {
		t.Errorf("Get after Reschedule = %+v, %v; want due %v", info, err, at)
	}
	m, _ := EncodeEnvelope(Message{ID: "rescheduled by member", Body: []byte("v1")})
	if _, err := f.q.Reschedule(f.ctx, f.tp, ByMember(m), At(at)); err != nil {
		t.Errorf("Reschedule by member: %v", err)
	}
	r, err := f.q.Schedule(f.ctx, f.tp, Message{ID: "replace", Body: []byte("v2")}, In(time.Hour))
	if err != nil || r.Replaced != ReplacedScheduled {
		t.Errorf("Schedule over the previous version's id = %+v, %v; want it replaced", r, err)
	}
	if _, ok := f.hget(f.tp.Keys(r.Slot).IDs, "replace"); ok {
		t.Error("the replaced id is still in :ids; want it moved to the index")
	}
	if info, err := f.q.Get(f.ctx, f.tp, "replace"); err != nil || string(info.Message.Body) != "v2" {
		t.Errorf("Get(replace) = %+v, %v", info, err)
	}

	for _, id := range []string{"deliver", "retry"} {
		slot := f.tp.SlotOfID(id)
		for _, c := range f.claim(slot, 10, time.Minute).Messages {
			switch c.Member {
			case deliver:
				if n, err := f.q.Ack(f.ctx, f.tp, slot, []string{c.Member}); n != 1 || err != nil {
					t.Errorf("Ack = %d, %v", n, err)
				}
			case retry:
				if out, err := f.q.Retry(f.ctx, f.tp, slot, Failure{Member: c.Member, Backoff: time.Hour}, 5); out != Retrying || err != nil {
					t.Errorf("Retry = %v, %v", out, err)
				}
			}
		}
	}
	if _, err := f.q.Get(f.ctx, f.tp, "deliver"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get of a delivered message = %v, want ErrNotFound", err)
	}
	if info, err := f.q.Get(f.ctx, f.tp, "retry"); err != nil || info.State != StateRetrying {
		t.Errorf("Get(retry) = %+v, %v; want retrying", info, err)
	}
	f.checkIndex()
}

// daemon is one replica in the rolling mix: the previous version's scripts
// or this version's Queue.
type daemon struct {
	f    *fixture
	prev bool
}

// claim takes up to limit due members of slot.
func (d daemon) claim(slot, limit int, lease time.Duration) []string {
	f := d.f
	if !d.prev {
		return members(f.claim(slot, limit, lease))
	}
	res, err := prevClaim.Run(f.ctx, f.rdb, slotKeys(f.tp.Keys(slot)), limit, lease.Milliseconds(), "1", 0).StringSlice()
	if err != nil {
		f.t.Fatalf("previous claim: %v", err)
	}
	c, err := parseClaim(res)
	if err != nil {
		f.t.Fatal(err)
	}
	return members(c)
}

func (d daemon) ack(slot int, m string) {
	f := d.f
	var err error
	if d.prev {
		err = prevAck.Run(f.ctx, f.rdb, slotKeys(f.tp.Keys(slot)), m, f.tp.memberID(m)).Err()
	} else {
		_, err = f.q.Ack(f.ctx, f.tp, slot, []string{m})
	}
	if err != nil {
		f.t.Fatalf("ack (previous %v): %v", d.prev, err)
	}
}

func (d daemon) retry(slot int, m string) {
	f := d.f
	var err error
	if d.prev {
		err = prevRetry.Run(f.ctx, f.rdb, slotKeys(f.tp.Keys(slot)), m, 0, 10, "0", "nack", f.tp.memberID(m)).Err()
	} else {
		_, err = f.q.Retry(f.ctx, f.tp, slot, Failure{Member: m, Reason: "nack"}, 10)
	}
	if err != nil {
		f.t.Fatalf("retry (previous %v): %v", d.prev, err)
	}
}

func (d daemon) release(slot int, m string) {
	f := d.f
	var err error
	if d.prev {
		err = prevRelease.Run(f.ctx, f.rdb, slotKeys(f.tp.Keys(slot)), m).Err()
	} else {
		_, err = f.q.Release(f.ctx, f.tp, slot, []string{m})
	}
	if err != nil {
		f.t.Fatalf("release (previous %v): %v", d.prev, err)
	}
}

func (d daemon) reap(slot int) {
	f := d.f
	var err error
	if d.prev {
		err = prevReap.Run(f.ctx, f.rdb, slotKeys(f.tp.Keys(slot)), 100, "0", "due", "1").Err()
		if err == nil { // and its sweep of :ids, which must leave this version's index alone
			err = prevReap.Run(f.ctx, f.rdb, slotKeys(f.tp.Keys(slot)), 100, "0", "ids", "1").Err()
		}
	} else {
		_, err = f.q.Reap(f.ctx, f.tp, slot, 100, "0")
	}
	if err != nil {
		f.t.Fatalf("reap (previous %v): %v", d.prev, err)
	}
}

func TestRollingMixOfPreviousAndNewVersionsLosesNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatEnvelope, 2)
	now := f.redisNow()
	const n = 40
	want := map[string]string{} // id -> the body its last version carries
	for i := range n {
		id := fmt.Sprintf("m%d", i)
		if i%2 == 0 {
			if _, err := f.q.Schedule(f.ctx, f.tp, Message{ID: id, Body: []byte("v1")}, At(time.UnixMilli(int64(now)-1000))); err != nil {
				t.Fatal(err)
			}
		} else {
			f.prevPut(id, "v1", now-1000)
		}
		want[id] = "v1"
	}
	// Each version replaces ids the other wrote.
	for _, id := range []string{"m1", "m3"} {
		if _, err := f.q.Schedule(f.ctx, f.tp, Message{ID: id, Body: []byte("v2")}, At(time.UnixMilli(int64(now)-500))); err != nil {
			t.Fatal(err)
		}
		want[id] = "v2"
	}
	for _, id := range []string{"m6", "m8"} {
		f.prevPut(id, "v2", now-500) // the previous version cannot see v1: both stay
		want[id] = "v2"
	}
	// This version cancels and reschedules by id what either wrote.
	for _, id := range []string{"m5", "m10"} {
		if ok, err := f.q.CancelID(f.ctx, f.tp, id); !ok || err != nil {
			t.Fatalf("CancelID(%s) = %v, %v", id, ok, err)
		}
		delete(want, id)
	}
	for _, id := range []string{"m7", "m12"} {
		if _, err := f.q.Reschedule(f.ctx, f.tp, ByID(id), At(time.UnixMilli(int64(now)-200))); err != nil {
			t.Fatalf("Reschedule(%s): %v", id, err)
		}
	}

	delivered := map[string][]string{} // id -> bodies delivered, in order
	tries := map[string]int{}
	daemons := []daemon{{f, true}, {f, false}}
	for round := 0; round < 200 && f.live() > 0; round++ {
		d := daemons[round%2]
		for slot := range f.tp.SlotCount() {
			if round%9 == 4 {
				// A daemon dies holding a claim: the other one reaps it.
				d.claim(slot, 3, time.Millisecond)
				time.Sleep(5 * time.Millisecond)
				daemons[(round+1)%2].reap(slot)
				continue
			}
			for _, m := range d.claim(slot, 3, time.Minute) {
				msg, err := f.tp.Decode(m)
				if err != nil {
					t.Fatal(err)
				}
				tries[m]++
				switch {
				case tries[m] == 1 && len(msg.ID)%2 == 0:
					d.retry(slot, m)
				case tries[m] == 2 && strings.HasSuffix(msg.ID, "3"):
					d.release(slot, m)
				default:
					d.ack(slot, m)
					delivered[msg.ID] = append(delivered[msg.ID], string(msg.Body))
				}
			}
		}
	}
	if n := f.live(); n != 0 {
		t.Fatalf("%d messages left scheduled or in flight", n)
	}
	for id, body := range want {
		wantBodies := []string{body}
		if id == "m6" || id == "m8" {
			wantBodies = []string{"v1", "v2"} // both versions, v1 due first
		}
		if got := delivered[id]; strings.Join(got, ",") != strings.Join(wantBodies, ",") {
			t.Errorf("%s: delivered %q, want %q", id, got, wantBodies)
		}
	}
	retried := 0
	for _, n := range tries {
		if n > 1 {
			retried++
		}
	}
	if retried < n/4 {
		t.Errorf("only %d messages were claimed more than once: the mix did not retry and release", retried)
	}
	for id, got := range delivered {
		if _, ok := want[id]; !ok {
			t.Errorf("%s was cancelled but delivered %q", id, got)
		}
	}
	// Index entries that the previous version's acks left behind are swept.
	for slot := range f.tp.SlotCount() {
		for cursor, calls := "0", 0; calls == 0 || cursor != "0"; calls++ {
			r, err := f.q.Reap(f.ctx, f.tp, slot, 100, cursor)
			if err != nil || calls > 50 {
				t.Fatalf("Reap = %+v, %v after %d calls", r, err, calls)
			}
			cursor = r.Cursor
		}
		if left := f.named(slot); len(left) != 0 {
			t.Errorf("slot %d: ids left after the sweep: %v", slot, left)
		}
	}
}

// live counts the members scheduled or in flight in every slot.
func (f *fixture) live() int64 {
	f.t.Helper()
	var n int64
	for slot := range f.tp.SlotCount() {
		k := f.tp.Keys(slot)
		n += f.zcard(k.Scheduled) + f.zcard(k.Inflight)
	}
	return n
}
