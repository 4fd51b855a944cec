package queue

import (
	"math"
	"testing"
	"time"
)

func TestStatsCountsScheduledOverdueInFlightAndDead(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatRaw, 2)
	now := f.redisNow()
	slot := Slot([]byte("late"), 2)
	var sameSlot []string
	for i := 0; len(sameSlot) < 3; i++ {
		if m := string(rune('a' + i)); Slot([]byte(m), 2) == slot {
			sameSlot = append(sameSlot, m)
		}
	}
	f.zadd(slot, now-60_000, "late")
	f.zadd(slot, now-1_000, sameSlot[0])
	f.zadd(slot, now+3_600_000, sameSlot[1])
	f.zadd(slot, now-120_000, sameSlot[2])
	f.claim(slot, 1, time.Minute) // sameSlot[2], the oldest
	f.rdb.ZAdd(f.ctx, f.tp.Keys(slot).Dead, redisZ(now, "dead"))

	st, err := f.q.Stats(f.ctx, f.tp, slot)
	if err != nil {
		t.Fatal(err)
	}
	if st.Slot != slot || st.Scheduled != 3 || st.Overdue != 2 || st.Inflight != 1 || st.Dead != 1 {
		t.Errorf("stats %+v", st)
	}
	// Due times are found from counts to the millisecond, rounded up
	// (firstScoreLua): the fractional scores here read as the next one.
	if st.NextDue.UnixMilli() != int64(math.Ceil(now+3_600_000)) || st.OldestOverdue.UnixMilli() != int64(math.Ceil(now-60_000)) {
		t.Errorf("next %v oldest %v", st.NextDue, st.OldestOverdue)
	}
	all, err := f.q.TopicStats(f.ctx, f.tp)
	if err != nil || len(all) != 2 || all[1-slot].Scheduled != 0 || !all[1-slot].NextDue.IsZero() {
		t.Errorf("TopicStats = %+v, %v", all, err)
	}
}

func TestScheduleOnAnAdoptedKeyWritesThatKeyAndItsTaggedKeys(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatEnvelope, 1)
	f.tp.Key = "{" + f.tp.Prefix + "}:delayqueue"
	r, err := f.q.Schedule(f.ctx, f.tp, Message{ID: "a", Body: []byte("x")}, In(-time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := f.zscore(f.tp.Key, r.Member); !ok {
		t.Fatalf("not in the adopted key %s", f.tp.Key)
	}
	if got, _ := f.hget(bucketKey(f.tp.Keys(0), "a"), "a"); got != indexValue(r.Score) {
		t.Errorf("index of the adopted key holds %q, want the score %v", got, r.Score)
	}
	if c := f.claim(0, 1, time.Minute); len(c.Messages) != 1 {
		t.Errorf("claim from the adopted key = %+v", c)
	}
	f.checkIndex()
}

func TestStatsCountsRetryingOnlyForScheduledMembersWithAttempts(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatRaw, 1)
	k := f.tp.Keys(0)
	now := f.redisNow()
	f.zadd(0, now+60_000, "waits", "rescheduled", "fresh")
	f.rdb.ZAdd(f.ctx, k.Inflight, redisZ(now+30_000, "claimed again"))
	// "cancelled" left its record behind until the reaper's sweep.
	f.rdb.HSet(f.ctx, k.Attempts, "waits", 1, "rescheduled", 3, "claimed again", 2, "cancelled", 1)

	st, err := f.q.Stats(f.ctx, f.tp, 0)
	if err != nil {
		t.Fatal(err)
	}
	if st.Retrying != 2 || st.Scheduled != 3 || st.Inflight != 1 {
		t.Errorf("retrying %d scheduled %d inflight %d, want 2, 3, 1", st.Retrying, st.Scheduled, st.Inflight)
	}
}

func TestStatsRetryingOfARealFailureAndOfAnEmptySlot(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatRaw, 1)
	if st, err := f.q.Stats(f.ctx, f.tp, 0); err != nil || st.Retrying != 0 {
		t.Fatalf("empty slot: retrying %d, %v", st.Retrying, err)
	}
	f.zadd(0, f.redisNow()-1, "m")
	f.claim(0, 1, time.Minute)
	if out, err := f.q.Retry(f.ctx, f.tp, 0, Failure{Member: "m", Backoff: time.Minute, Reason: "nack"}, 10); err != nil || out != Retrying {
		t.Fatalf("Retry = %v, %v", out, err)
	}
	st, err := f.q.Stats(f.ctx, f.tp, 0)
	if err != nil || st.Retrying != 1 || st.Overdue != 0 || st.Inflight != 0 {
		t.Errorf("after a failure: %+v, %v", st, err)
	}
}

func TestRetryingSamplesAboveItsLimit(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatRaw, 1)
	k := f.tp.Keys(0)
	now := f.redisNow()
	for i := range 40 {
		m := "m" + string(rune('A'+i))
		f.rdb.HSet(f.ctx, k.Attempts, m, 1)
		if i < 20 {
			f.zadd(0, now+60_000, m)
		}
	}
	if st, exact, err := f.q.stats(f.ctx, k, 0, 40, true); err != nil || st.Retrying != 20 || !exact {
		t.Errorf("at the limit: %d exact=%v %v, want 20 exact", st.Retrying, exact, err)
	}
	// Above the limit, the hits of a random sample of 10 scale to 40.
	st, exact, err := f.q.stats(f.ctx, k, 0, 10, true)
	if n := st.Retrying; err != nil || exact || n < 0 || n > 40 || n%4 != 0 {
		t.Errorf("sampled: %d exact=%v %v, want an estimate in steps of 40/10", n, exact, err)
	}
	for i := 20; i < 40; i++ {
		f.zadd(0, now+60_000, "m"+string(rune('A'+i)))
	}
	if st, exact, err := f.q.stats(f.ctx, k, 0, 10, true); err != nil || st.Retrying != 40 || exact {
		t.Errorf("sampled, all scheduled: %d exact=%v %v, want 40 estimated", st.Retrying, exact, err)
	}
}
