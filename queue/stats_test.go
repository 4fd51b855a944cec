package queue

import (
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
	if st.NextDue.UnixMilli() != int64(now+3_600_000) || st.OldestOverdue.UnixMilli() != int64(now-60_000) {
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
	if got, _ := f.hget(f.tp.Key+":ids", "a"); got != r.Member {
		t.Errorf("ids of the adopted key = %q", got)
	}
	if c := f.claim(0, 1, time.Minute); len(c.Messages) != 1 {
		t.Errorf("claim from the adopted key = %+v", c)
	}
	f.checkIndex()
}
