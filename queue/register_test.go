package queue

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"
)

func TestRegisterRefusesAnotherLayoutWhileAReplicaIsLive(t *testing.T) {
	f := newFixture(t, FormatRaw, 1)
	prefix := f.tp.Prefix
	if _, err := f.q.Register(f.ctx, prefix, "a", layouts(prefix)); err != nil {
		t.Fatal(err)
	}
	if _, err := beat(f, prefix, "a"); err != nil {
		t.Fatal(err)
	}
	resized := layouts(prefix)
	resized[0].Slots = 4
	// Its own heartbeat (a restart under the same id) is not another replica.
	if _, err := beat(f, prefix, "b"); err != nil {
		t.Fatal(err)
	}
	_, err := f.q.Register(f.ctx, prefix, "b", resized)
	if !errors.Is(err, ErrLayoutMismatch) {
		t.Fatalf("Register = %v, want ErrLayoutMismatch", err)
	}
	for _, s := range []string{"registered (slots=8", "configured (slots=4", "live replicas a "} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not name %q", err, s)
		}
	}
	if l, _, _ := f.q.Layout(f.ctx, prefix, "orders"); l.Slots != 8 {
		t.Errorf("registry changed to %s after a refusal", l)
	}
	// A topic the live replica does not know is no conflict.
	extra := LayoutOf(Topic{Name: "extra", Slots: 2})
	if changes, err := f.q.Register(f.ctx, prefix, "b", []Layout{extra}); err != nil || len(changes) != 1 {
		t.Errorf("Register(new topic) = %+v, %v", changes, err)
	}
}

func TestRegisterTakesOverWithoutLiveReplicas(t *testing.T) {
	f := newFixture(t, FormatRaw, 1)
	prefix := f.tp.Prefix
	if _, err := f.q.Register(f.ctx, prefix, "a", layouts(prefix)); err != nil {
		t.Fatal(err)
	}
	// a's heartbeat expired; b is the restarted daemon itself.
	if err := f.rdb.ZAdd(f.ctx, ReplicasKey(prefix), redisZ(f.redisNow()-1, "a"), redisZ(f.redisNow()+60000, "b")).Err(); err != nil {
		t.Fatal(err)
	}
	resized := layouts(prefix)
	resized[0].Slots, resized[0].Exchange = 4, "events2"
	changes, err := f.q.Register(f.ctx, prefix, "b", resized)
	if err != nil {
		t.Fatalf("Register: %v", err)
	}
	want := []Change{{Old: layouts(prefix)[0], Replaced: true, New: resized[0]}}
	if diff := cmp.Diff(want, changes); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
	if l, _, _ := f.q.Layout(f.ctx, prefix, "orders"); !l.Same(resized[0]) {
		t.Errorf("registry holds %s, want %s", l, resized[0])
	}
}

// beat makes replica id live for a minute as its heartbeat would (package
// membership writes heartbeats; the registry only reads ReplicasKey).
func beat(f *fixture, prefix, id string) (int64, error) {
	deadline := time.Now().Add(time.Minute).UnixMilli()
	return f.q.Client().ZAdd(f.ctx, ReplicasKey(prefix), redis.Z{Score: float64(deadline), Member: id}).Result()
}
