package queue

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/delaybridge/delaybridge/internal/testing/redistest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fixture is one test's queue and topic.
type fixture struct {
	t   *testing.T
	ctx context.Context
	rdb *redis.Client
	q   *Queue
	tp  Topic
}

func newFixture(t *testing.T, format Format, slots int) *fixture {
	t.Helper()
	rdb, prefix := redistest.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return &fixture{t: t, ctx: ctx, rdb: rdb, q: New(rdb), tp: Topic{Name: "orders", Prefix: prefix, Slots: slots, Format: format}}
}

// redisNow is Redis's TIME in ms.
func (f *fixture) redisNow() float64 {
	f.t.Helper()
	now, err := f.rdb.Time(f.ctx).Result()
	if err != nil {
		f.t.Fatalf("TIME: %v", err)
	}
	return float64(now.UnixMilli())
}

// zadd writes members straight into a slot's scheduled set, as a producer in
// another language would.
func (f *fixture) zadd(slot int, score float64, members ...string) {
	f.t.Helper()
	zs := make([]redis.Z, len(members))
	for i, m := range members {
		zs[i] = redis.Z{Score: score, Member: m}
	}
	if err := f.rdb.ZAdd(f.ctx, f.tp.Keys(slot).Scheduled, zs...).Err(); err != nil {
		f.t.Fatalf("ZADD: %v", err)
	}
}

func (f *fixture) claim(slot, limit int, lease time.Duration) Claim {
	f.t.Helper()
	c, err := f.q.Claim(f.ctx, f.tp, slot, limit, lease)
	if err != nil {
		f.t.Fatalf("Claim: %v", err)
	}
	return c
}

func members(c Claim) []string {
	var out []string
	for _, m := range c.Messages {
		out = append(out, m.Member)
	}
	return out
}

// zscore is a member's score in key, or ok false.
func (f *fixture) zscore(key, member string) (float64, bool) {
	f.t.Helper()
	s, err := f.rdb.ZScore(f.ctx, key, member).Result()
	if err == redis.Nil {
		return 0, false
	}
	if err != nil {
		f.t.Fatalf("ZSCORE %s: %v", key, err)
	}
	return s, true
}

func (f *fixture) hget(key, field string) (string, bool) {
	f.t.Helper()
	v, err := f.rdb.HGet(f.ctx, key, field).Result()
	if err == redis.Nil {
		return "", false
	}
	if err != nil {
		f.t.Fatalf("HGET %s: %v", key, err)
	}
	return v, true
}

func (f *fixture) zcard(key string) int64 {
	f.t.Helper()
	n, err := f.rdb.ZCard(f.ctx, key).Result()
	if err != nil {
		f.t.Fatalf("ZCARD %s: %v", key, err)
	}
	return n
}

// eventually polls cond until it holds or 30 s pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func redisZ(score float64, member string) redis.Z { return redis.Z{Score: score, Member: member} }
