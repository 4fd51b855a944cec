package queue

import (
	"errors"
	"testing"
	"time"
)

func TestPurgeByMemberByIDAndAllCountsWhatItDeleted(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatEnvelope, 2)
	a := f.kill(Message{ID: "a", Body: []byte("x")}, "r")
	f.kill(Message{ID: "b", Body: []byte("x")}, "r")
	f.kill(Message{ID: "c", Body: []byte("x")}, "r")
	f.kill(Message{ID: "d", Body: []byte("x")}, "r")

	if n, err := f.q.Purge(f.ctx, f.tp, ByMember([]byte(a.Member))); err != nil || n != 1 {
		t.Fatalf("Purge by member = %d, %v", n, err)
	}
	if n, err := f.q.Purge(f.ctx, f.tp, ByID("b")); err != nil || n != 1 {
		t.Fatalf("Purge by id = %d, %v", n, err)
	}
	if _, err := f.q.Purge(f.ctx, f.tp, ByID("b")); !errors.Is(err, ErrNotFound) {
		t.Errorf("second Purge by id = %v, want ErrNotFound", err)
	}
	if n, err := f.q.Purge(f.ctx, f.tp, Ref{All: true}); err != nil || n != 2 {
		t.Fatalf("Purge all = %d, %v", n, err)
	}
	for s := range 2 {
		k := f.tp.Keys(s)
		if n, _ := f.rdb.Exists(f.ctx, k.Dead, k.DeadReason).Result(); n != 0 {
			t.Errorf("slot %d: dead keys remain", s)
		}
	}
	if _, err := f.q.Purge(f.ctx, f.tp, Ref{ID: "x", All: true}); err == nil {
		t.Error("Purge with two selectors accepted")
	}
}

func TestPurgeAllEmptiesALargeDeadSetPageByPage(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatRaw, 1)
	k := f.tp.Keys(0)
	pipe := f.rdb.Pipeline()
	for i := range 3*deadPage + 7 {
		m := "d" + string(rune('a'+i%26)) + time.Duration(i).String()
		pipe.ZAdd(f.ctx, k.Dead, redisZ(float64(i), m))
		pipe.HSet(f.ctx, k.DeadReason, m, "x")
	}
	if _, err := pipe.Exec(f.ctx); err != nil {
		t.Fatal(err)
	}
	n, err := f.q.Purge(f.ctx, f.tp, Ref{All: true})
	if err != nil || n != 3*deadPage+7 {
		t.Fatalf("Purge = %d, %v", n, err)
	}
	if c, _ := f.rdb.HLen(f.ctx, k.DeadReason).Result(); c != 0 || f.zcard(k.Dead) != 0 {
		t.Errorf("left %d reasons, %d dead", c, f.zcard(k.Dead))
	}
}
