package queue

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestAckOfMemberAnotherReplicaHandledChangesNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatRaw, 1)
	f.zadd(0, f.redisNow()-1, "m")
	f.claim(0, 1, time.Minute)
	if n, err := f.q.Ack(f.ctx, f.tp, 0, []string{"m"}); err != nil || n != 1 {
		t.Fatalf("first Ack = %d, %v; want 1", n, err)
	}
	f.zadd(0, f.redisNow()+60_000, "m") // the producer schedules the same bytes again
	if n, err := f.q.Ack(f.ctx, f.tp, 0, []string{"m", "never-claimed"}); err != nil || n != 0 {
		t.Fatalf("second Ack = %d, %v; want 0", n, err)
	}
	if _, ok := f.zscore(f.tp.Keys(0).Scheduled, "m"); !ok {
		t.Error("the second Ack removed the newly scheduled copy")
	}
}

func TestRetryOfMemberNoLongerInFlightChangesNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatRaw, 1)
	k := f.tp.Keys(0)
	f.zadd(0, f.redisNow()-1, "m")
	f.claim(0, 1, time.Minute)
	if _, err := f.q.Ack(f.ctx, f.tp, 0, []string{"m"}); err != nil {
		t.Fatal(err)
	}
	for _, fail := range []Failure{{Member: "m", Reason: "late nack"}, {Member: "m", Permanent: true, Reason: "late"}} {
		out, err := f.q.Retry(f.ctx, f.tp, 0, fail, 3)
		if err != nil || out != NotInflight {
			t.Fatalf("Retry(%+v) = %v, %v; want not-inflight", fail, out, err)
		}
	}
	if f.zcard(k.Scheduled)+f.zcard(k.Dead)+f.zcard(k.Inflight) != 0 {
		t.Error("a late Retry changed the sets")
	}
	if _, ok := f.hget(k.Attempts, "m"); ok {
		t.Error("a late Retry counted an attempt")
	}
}

func TestFailedAttemptsReachDeadSetWithReason(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatRaw, 1)
	k := f.tp.Keys(0)
	f.zadd(0, f.redisNow()-1, "m")
	const maxAttempts = 3
	for attempt := 1; attempt <= maxAttempts; attempt++ {
		var c Claim
		eventually(t, "the retry falls due", func() bool {
			c = f.claim(0, 1, time.Minute)
			return len(c.Messages) == 1
		})
		if c.Messages[0].Attempts != attempt-1 {
			t.Fatalf("attempt %d: claim says %d attempts before", attempt, c.Messages[0].Attempts)
		}
		out, err := f.q.Retry(f.ctx, f.tp, 0, Failure{Member: "m", Backoff: time.Millisecond, Reason: "nack #" + string(rune('0'+attempt))}, maxAttempts)
		want := Retrying
		if attempt == maxAttempts {
			want = Dead
		}
		if err != nil || out != want {
			t.Fatalf("attempt %d: Retry = %v, %v; want %v", attempt, out, err, want)
		}
	}
	if _, ok := f.zscore(k.Dead, "m"); !ok {
		t.Fatal("m is not in the dead set")
	}
	if reason, _ := f.hget(k.DeadReason, "m"); reason != "nack #3" {
		t.Errorf("reason %q, want the last error", reason)
	}
	for _, key := range []string{k.Due, k.Attempts} {
		if _, ok := f.hget(key, "m"); ok {
			t.Errorf("%s still holds m", key)
		}
	}
	if f.zcard(k.Scheduled)+f.zcard(k.Inflight) != 0 {
		t.Error("m is still scheduled or in flight")
	}
}

func TestPermanentFailureDeadLettersAtOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatRaw, 1)
	f.zadd(0, f.redisNow()-1, "m")
	f.claim(0, 1, time.Minute)
	out, err := f.q.Retry(f.ctx, f.tp, 0, Failure{Member: "m", Permanent: true, Reason: "message too large"}, 10)
	if err != nil || out != Dead {
		t.Fatalf("Retry = %v, %v; want dead", out, err)
	}
	if reason, _ := f.hget(f.tp.Keys(0).DeadReason, "m"); reason != "message too large" {
		t.Errorf("reason %q", reason)
	}
}

func TestRetryKeepsTheProducersRescheduleWhileInFlight(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatRaw, 1)
	f.zadd(0, f.redisNow()-1, "m")
	f.claim(0, 1, time.Minute)
	later := f.redisNow() + 3_600_000
	f.zadd(0, later, "m")
	if out, err := f.q.Retry(f.ctx, f.tp, 0, Failure{Member: "m", Backoff: time.Millisecond}, 5); err != nil || out != Retrying {
		t.Fatalf("Retry = %v, %v", out, err)
	}
	if s, _ := f.zscore(f.tp.Keys(0).Scheduled, "m"); s != later {
		t.Errorf("score %v, want the producer's %v", s, later)
	}
}

func TestReleaseReturnsMessagesAtTheirDueWithoutAnAttempt(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatRaw, 1)
	k := f.tp.Keys(0)
	due := f.redisNow() - 200
	f.zadd(0, due, "a", "b")
	f.claim(0, 2, time.Minute)
	n, err := f.q.Release(f.ctx, f.tp, 0, []string{"a", "b", "unknown"})
	if err != nil || n != 2 {
		t.Fatalf("Release = %d, %v; want 2", n, err)
	}
	c := f.claim(0, 10, time.Minute)
	if diff := cmp.Diff([]string{"a", "b"}, members(c)); diff != "" {
		t.Fatalf("reclaimed (-want +got):\n%s", diff)
	}
	for _, m := range c.Messages {
		if m.Attempts != 0 || m.Due != due {
			t.Errorf("%s: attempts %d due %v after release", m.Member, m.Attempts, m.Due)
		}
	}
	if _, ok := f.hget(k.Attempts, "a"); ok {
		t.Error("Release counted an attempt")
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
