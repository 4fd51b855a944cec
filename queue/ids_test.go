package queue

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"
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

func TestScheduleSameIDTwiceKeepsOneMessageAtTheLaterTime(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatEnvelope, 4)
	first := time.Now().Add(time.Hour).Truncate(time.Millisecond)
	second := first.Add(24 * time.Hour)
	r1, err := f.q.Schedule(f.ctx, f.tp, Message{ID: "order-42", Body: []byte("v1")}, At(first))
	if err != nil || r1.Replaced != ReplacedNothing {
		t.Fatalf("first Schedule = %+v, %v", r1, err)
	}
	r2, err := f.q.Schedule(f.ctx, f.tp, Message{ID: "order-42", Body: []byte("v2")}, At(second))
	if err != nil || r2.Replaced != ReplacedScheduled {
		t.Fatalf("second Schedule = %+v, %v; want it to replace the scheduled one", r2, err)
	}
	k := f.tp.Keys(r2.Slot)
	zs, err := f.rdb.ZRangeWithScores(f.ctx, k.Scheduled, 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	want := []redis.Z{{Member: r2.Member, Score: float64(second.UnixMilli())}}
	if diff := cmp.Diff(want, zs); diff != "" {
		t.Fatalf("scheduled (-want +got):\n%s", diff)
	}
	info, err := f.q.Get(f.ctx, f.tp, "order-42")
	if err != nil || string(info.Message.Body) != "v2" || !info.Due.Equal(second) {
		t.Errorf("Get = %+v, %v; want v2 due %v", info, err, second)
	}
	f.checkIndex()
}

func TestScheduleSameEnvelopeTwiceMovesItAndResetsItsAttempts(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatEnvelope, 1)
	m, _ := f.scheduleNow("a", "x")
	f.claim(0, 1, time.Minute)
	if _, err := f.q.Retry(f.ctx, f.tp, 0, Failure{Member: m, Backoff: time.Hour}, 5); err != nil {
		t.Fatal(err)
	}
	m2, _ := f.scheduleNow("a", "x")
	if m2 != m {
		t.Fatalf("same message encoded differently: %s vs %s", m, m2)
	}
	c := f.claim(0, 1, time.Minute)
	if len(c.Messages) != 1 || c.Messages[0].Attempts != 0 {
		t.Fatalf("claim after rescheduling = %+v, want a fresh message", c.Messages)
	}
	f.checkIndex()
}

func TestScheduleIDWhileInFlightSchedulesNewOneAndOldDeliveryIsNeverRetried(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatEnvelope, 1)
	old, _ := f.scheduleNow("a", "v1")
	c := f.claim(0, 1, time.Millisecond)
	if len(c.Messages) != 1 {
		t.Fatal("nothing claimed")
	}
	r, err := f.q.Schedule(f.ctx, f.tp, Message{ID: "a", Body: []byte("v2")}, In(time.Hour))
	if err != nil || r.Replaced != ReplacedInFlight {
		t.Fatalf("Schedule = %+v, %v; want it to supersede the in-flight one", r, err)
	}
	// The old delivery goes on: its ack, retry, release and the reaper leave
	// the new message alone and do not bring the old one back.
	if out, err := f.q.Retry(f.ctx, f.tp, 0, Failure{Member: old, Backoff: time.Millisecond}, 5); err != nil || out != NotInflight {
		t.Errorf("Retry of the superseded delivery = %v, %v", out, err)
	}
	if n, _ := f.q.Release(f.ctx, f.tp, 0, []string{old}); n != 0 {
		t.Errorf("Release of the superseded delivery returned %d", n)
	}
	if n, _ := f.q.Ack(f.ctx, f.tp, 0, []string{old}); n != 0 {
		t.Errorf("Ack of the superseded delivery returned %d", n)
	}
	time.Sleep(5 * time.Millisecond) // past the old lease
	if rr, _ := f.q.Reap(f.ctx, f.tp, 0, 100, "0"); rr.Reaped != 0 {
		t.Errorf("Reap brought back %d", rr.Reaped)
	}
	k := f.tp.Keys(0)
	ms, _ := f.rdb.ZRange(f.ctx, k.Scheduled, 0, -1).Result()
	if diff := cmp.Diff([]string{r.Member}, ms); diff != "" {
		t.Errorf("scheduled (-want +got):\n%s", diff)
	}
	for _, key := range []string{k.Due, k.Attempts} {
		if _, ok := f.hget(key, old); ok {
			t.Errorf("%s still holds the superseded member", key)
		}
	}
	f.checkIndex()
}

func TestCancelByIDOfClaimedMessageReportsInFlightAndChangesNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatEnvelope, 8)
	m, slot := f.scheduleNow("order-7", "x")
	f.claim(slot, 10, time.Minute)
	k := f.tp.Keys(slot)
	before := f.dump(slot)

	ok, err := f.q.CancelID(f.ctx, f.tp, "order-7")
	if ok || !errors.Is(err, ErrInFlight) {
		t.Fatalf("CancelID = %v, %v; want ErrInFlight", ok, err)
	}
	if _, err := f.q.Cancel(f.ctx, f.tp, []byte(m)); !errors.Is(err, ErrInFlight) {
		t.Fatalf("Cancel by member = %v; want ErrInFlight", err)
	}
	if _, err := f.q.Reschedule(f.ctx, f.tp, ByID("order-7"), In(time.Hour)); !errors.Is(err, ErrInFlight) {
		t.Fatalf("Reschedule = %v; want ErrInFlight", err)
	}
	if diff := cmp.Diff(before, f.dump(slot)); diff != "" {
		t.Errorf("keys changed (-before +after):\n%s", diff)
	}
	if _, ok := f.zscore(k.Inflight, m); !ok {
		t.Error("the message left the in-flight set")
	}
	f.checkIndex()
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

func TestCancelByIDRemovesTheMessageAndItsID(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatEnvelope, 4)
	if _, err := f.q.Schedule(f.ctx, f.tp, Message{ID: "a", Body: []byte("x")}, In(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if ok, err := f.q.CancelID(f.ctx, f.tp, "a"); !ok || err != nil {
		t.Fatalf("CancelID = %v, %v", ok, err)
	}
	if ok, err := f.q.CancelID(f.ctx, f.tp, "a"); ok || err != nil {
		t.Fatalf("second CancelID = %v, %v; want not found", ok, err)
	}
	if _, err := f.q.Get(f.ctx, f.tp, "a"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get after cancel = %v, want ErrNotFound", err)
	}
	f.checkIndex()
}

func TestCancelByMemberOfEnvelopeDropsItsID(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatEnvelope, 4)
	r, err := f.q.Schedule(f.ctx, f.tp, Message{ID: "a", Body: []byte("x")}, In(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := f.q.Cancel(f.ctx, f.tp, []byte(r.Member)); !ok || err != nil {
		t.Fatalf("Cancel = %v, %v", ok, err)
	}
	if _, ok := f.idNames(r.Slot, "a"); ok {
		t.Error("the id survived the cancel")
	}
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

func TestAckKeepsTheIDOfAMemberScheduledAgainMeanwhile(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatEnvelope, 1)
	m, _ := f.scheduleNow("a", "x")
	f.claim(0, 1, time.Minute)
	// A producer writes the same bytes again without the API (plain ZADD).
	f.zadd(0, f.redisNow()+60_000, m)
	if n, _ := f.q.Ack(f.ctx, f.tp, 0, []string{m}); n != 1 {
		t.Fatalf("Ack = %d", n)
	}
	if got, _ := f.idNames(0, "a"); got != m {
		t.Errorf("ack dropped the id of a still scheduled member")
	}
	f.checkIndex()
}

func TestInvalidEnvelopeIsDeadLetteredWithTheDecodeErrorAndNeverBlocksTheSlot(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatEnvelope, 1)
	now := f.redisNow()
	f.zadd(0, now-20, `{"order":42}`)
	f.scheduleNow("good", "x")

	// What the forwarder does with a claimed batch.
	c := f.claim(0, 10, time.Minute)
	var delivered []string
	for _, cm := range c.Messages {
		msg, err := f.tp.Decode(cm.Member)
		if err != nil {
			out, err := f.q.Retry(f.ctx, f.tp, 0, Failure{Member: cm.Member, Permanent: true, Reason: err.Error()}, 10)
			if err != nil || out != Dead {
				t.Fatalf("Retry = %v, %v", out, err)
			}
			continue
		}
		delivered = append(delivered, msg.ID)
		f.q.Ack(f.ctx, f.tp, 0, []string{cm.Member})
	}
	if diff := cmp.Diff([]string{"good"}, delivered); diff != "" {
		t.Errorf("delivered (-want +got):\n%s", diff)
	}
	dead, err := f.q.DeadList(f.ctx, f.tp, 0, 10)
	if err != nil || len(dead) != 1 {
		t.Fatalf("DeadList = %+v, %v", dead, err)
	}
	if dead[0].Member != `{"order":42}` || dead[0].ID != "" || !strings.Contains(dead[0].Reason, `unknown field "order"`) {
		t.Errorf("dead entry %+v", dead[0])
	}
	f.checkIndex()
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

func TestReapSweepDropsIDsWhoseMemberIsGone(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatEnvelope, 1)
	k := f.tp.Keys(0)
	m, _ := f.scheduleNow("gone", "x")
	f.scheduleNow("kept", "y")
	f.rdb.ZRem(f.ctx, k.Scheduled, m) // a producer that skipped the index

	cursor, swept, calls := "0", 0, 0
	for {
		r, err := f.q.Reap(f.ctx, f.tp, 0, 1, cursor)
		if err != nil {
			t.Fatal(err)
		}
		swept += r.Swept
		calls++
		if cursor = r.Cursor; cursor == "0" || calls > 100 {
			break
		}
	}
	if swept != 1 || cursor != "0" {
		t.Errorf("swept %d (cursor %q after %d calls), want 1 and a finished sweep", swept, cursor, calls)
	}
	if _, ok := f.idNames(0, "gone"); ok {
		t.Error("the stale id survived the sweep")
	}
	f.checkIndex()
}

func TestRequeueOfEnvelopeIndexesItAgain(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatEnvelope, 4)
	m, slot := f.scheduleNow("a", "x")
	f.claim(slot, 1, time.Minute)
	f.q.Retry(f.ctx, f.tp, slot, Failure{Member: m, Permanent: true, Reason: "no route"}, 5)
	if _, ok := f.idNames(slot, "a"); ok {
		t.Fatal("a dead message kept its id")
	}
	r, err := f.q.Requeue(f.ctx, f.tp, ByID("a"))
	if err != nil || r.Requeued != 1 {
		t.Fatalf("Requeue = %+v, %v", r, err)
	}
	if info, err := f.q.Get(f.ctx, f.tp, "a"); err != nil || info.State != StateScheduled || info.Attempts != 0 {
		t.Errorf("Get after requeue = %+v, %v", info, err)
	}
	f.checkIndex()
}
