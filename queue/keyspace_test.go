package queue

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"
)

func TestParseKeyspaceFlagsNeedsKeyspaceAndSortedSetEvents(t *testing.T) {
	for _, c := range []struct {
		flags string
		want  KeyspaceSupport
	}{
		{"", KeyspaceSupport{}},
		{"Ez", KeyspaceSupport{}}, // keyevent channels only
		{"Kh", KeyspaceSupport{}},
		{"Kz", KeyspaceSupport{Zset: true}},
		{"zK", KeyspaceSupport{Zset: true}},
		{"Kzh", KeyspaceSupport{Zset: true}},
		{"Kghz", KeyspaceSupport{Zset: true, All: true}},
		{"KA", KeyspaceSupport{Zset: true, All: true}},
		{"AKE", KeyspaceSupport{Zset: true, All: true}},
	} {
		if got := ParseKeyspaceFlags(c.flags); got != c.want {
			t.Errorf("ParseKeyspaceFlags(%q) = %+v, want %+v", c.flags, got, c.want)
		}
	}
}

func TestKeyspacePatternsCoverSlottedTopicsAndAdoptedKeys(t *testing.T) {
	q := New(redis.NewClient(&redis.Options{Addr: "127.0.0.1:0", DB: 3}))
	defer q.Client().Close()
	got := q.KeyspacePatterns([]Topic{
		{Name: "a", Prefix: "dq", Slots: 4},
		{Name: "b", Prefix: "dq"},
		{Name: "legacy", Key: "delay*queue"},
		{Name: "tagged", Key: "jobs:{q}"},
	})
	want := []string{
		`__keyspace@3__:dq:\{*`,
		`__keyspace@3__:delay\*queue`,
		`__keyspace@3__:\{delay\*queue\}:*`,
		`__keyspace@3__:jobs:\{q\}`,
		`__keyspace@3__:jobs:\{q\}:*`,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("patterns (-want +got):\n%s", d)
	}
	if k := KeyspaceKey("__keyspace@3__:dq:{a:1}:inflight"); k != "dq:{a:1}:inflight" {
		t.Errorf("KeyspaceKey = %q", k)
	}
}

func TestReapReturnsTheEarliestLeaseLeftInFlight(t *testing.T) {
	t.Parallel()
	f := newFixture(t, FormatRaw, 1)
	r, err := f.q.Reap(f.ctx, f.tp, 0, 100, "0")
	if err != nil || r.HasNext || r.Now.IsZero() {
		t.Fatalf("Reap of an empty slot = %+v, %v; want no lease and Redis's time", r, err)
	}
	now := f.redisNow()
	f.zadd(0, now-1, "m1", "m2")
	f.claim(0, 1, time.Minute)
	f.claim(0, 1, 2*time.Minute)
	r, err = f.q.Reap(f.ctx, f.tp, 0, 100, "0")
	if err != nil || !r.HasNext {
		t.Fatalf("Reap = %+v, %v; want the earliest lease", r, err)
	}
	if left := r.NextLease.Sub(r.Now); left < 59*time.Second || left > time.Minute {
		t.Errorf("earliest lease %s after Redis's now, want the first claim's (1m)", left)
	}
}
