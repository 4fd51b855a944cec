package queue

import (
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// Tests of the envelope paths of every script: the :ids index must name a
// member exactly while it is scheduled or in flight.

// checkIndex fails the test unless, in every slot, each id names a scheduled
// or in-flight member carrying that id, and each scheduled or in-flight
// envelope is named by its id.
func (f *fixture) checkIndex() {
	f.t.Helper()
	for slot := range f.tp.SlotCount() {
		k := f.tp.Keys(slot)
		ids := f.named(slot)
		live := map[string]bool{}
		for _, key := range []string{k.Scheduled, k.Inflight} {
			ms, err := f.rdb.ZRange(f.ctx, key, 0, -1).Result()
			if err != nil {
				f.t.Fatalf("ZRANGE %s: %v", key, err)
			}
			for _, m := range ms {
				live[m] = true
			}
		}
		for id, m := range ids {
			if !live[m] {
				f.t.Errorf("slot %d: id %q names %s, which is neither scheduled nor in flight", slot, id, m)
			}
			if got, _ := EnvelopeID([]byte(m)); got != id {
				f.t.Errorf("slot %d: id %q names %s, whose id is %q", slot, id, m, got)
			}
			if want := f.tp.SlotOfID(id); want != slot {
				f.t.Errorf("id %q is indexed in slot %d, its slot is %d", id, slot, want)
			}
		}
		for m := range live {
			id, err := EnvelopeID([]byte(m))
			if err != nil {
				continue // not an envelope: nothing to index
			}
			if ids[id] != m {
				f.t.Errorf("slot %d: live %s is not named by its id %q (index has %q)", slot, m, id, ids[id])
			}
		}
	}
}

// scheduleNow schedules an envelope due at once and returns its member and slot.
func (f *fixture) scheduleNow(id, body string) (string, int) {
	f.t.Helper()
	return f.scheduleAgo(id, body, time.Second)
}

// scheduleAgo schedules an envelope that fell due ago before Redis's now.
func (f *fixture) scheduleAgo(id, body string, ago time.Duration) (string, int) {
	f.t.Helper()
	r, err := f.q.Schedule(f.ctx, f.tp, Message{ID: id, Body: []byte(body)}, In(-ago))
	if err != nil {
		f.t.Fatalf("Schedule %s: %v", id, err)
	}
	return r.Member, r.Slot
}

// dump reads every key of a slot, to compare before and after.
func (f *fixture) dump(slot int) map[string]any {
	f.t.Helper()
	k := f.tp.Keys(slot)
	out := map[string]any{}
	for _, key := range []string{k.Scheduled, k.Inflight, k.Dead} {
		zs, _ := f.rdb.ZRangeWithScores(f.ctx, key, 0, -1).Result()
		out[key] = zs
	}
	for _, key := range []string{k.Due, k.Attempts, k.DeadReason, k.IDs} {
		h, _ := f.rdb.HGetAll(f.ctx, key).Result()
		out[key] = h
	}
	out[k.Index] = f.indexEntries(slot)
	return out
}

func TestIDsIndexAfterReleaseAckRetryDeadAndReap(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatEnvelope, 1)
	released, _ := f.scheduleAgo("released", "0", 5*time.Second)
	acked, _ := f.scheduleAgo("acked", "1", 4*time.Second)
	retried, _ := f.scheduleAgo("retried", "2", 3*time.Second)
	dead, _ := f.scheduleAgo("dead", "3", 2*time.Second)
	reaped, _ := f.scheduleAgo("reaped", "4", time.Second)
	f.claim(0, 4, time.Minute)
	f.claim(0, 1, time.Millisecond) // "reaped", with a short lease
	f.checkIndex()

	if n, err := f.q.Release(f.ctx, f.tp, 0, []string{released}); err != nil || n != 1 {
		t.Fatalf("Release = %d, %v", n, err)
	}
	if n, err := f.q.Ack(f.ctx, f.tp, 0, []string{acked}); err != nil || n != 1 {
		t.Fatalf("Ack = %d, %v", n, err)
	}
	if out, _ := f.q.Retry(f.ctx, f.tp, 0, Failure{Member: retried, Backoff: time.Hour}, 5); out != Retrying {
		t.Fatalf("Retry = %v", out)
	}
	if out, _ := f.q.Retry(f.ctx, f.tp, 0, Failure{Member: dead, Permanent: true, Reason: "rejected"}, 5); out != Dead {
		t.Fatalf("Retry permanent = %v", out)
	}
	eventually(t, "the short lease is reaped", func() bool {
		r, _ := f.q.Reap(f.ctx, f.tp, 0, 100, "0")
		return r.Reaped == 1
	})
	f.checkIndex()
	want := map[string]string{"released": released, "retried": retried, "reaped": reaped}
	got := f.named(0)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ids (-want +got):\n%s", diff)
	}
}

func TestInfiniteScoresOfEnvelopesLeaveTheIndex(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatEnvelope, 1)
	k := f.tp.Keys(0)
	// Ids that need escaping, to check Lua's cjson reads them as Go wrote them.
	low, _ := f.scheduleNow(`ördér "low"/\`, "x")
	high, _ := f.scheduleNow("✓ high\u2028", "y")
	f.zadd(0, math.Inf(-1), low)
	f.zadd(0, math.Inf(1), high)
	if c := f.claim(0, 10, time.Minute); len(c.Messages) != 0 {
		t.Fatalf("claimed %v", members(c))
	}
	if r, err := f.q.Reap(f.ctx, f.tp, 0, 100, "0"); err != nil || r.Dead != 1 {
		t.Fatalf("Reap = %+v, %v", r, err)
	}
	if n := f.zcard(k.Dead); n != 2 {
		t.Fatalf("dead holds %d, want 2", n)
	}
	if ids := f.named(0); len(ids) != 0 {
		t.Errorf("ids still hold %v", ids)
	}
}
