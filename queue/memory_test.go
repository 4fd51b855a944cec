package queue_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delaybridge/delaybridge/flowstate"
	"github.com/delaybridge/delaybridge/internal/testing/e2etest"
	"github.com/delaybridge/delaybridge/membership"
	"github.com/delaybridge/delaybridge/queue"
)

// fullRedis is a redis-server of the test's own with the given policy; the
// test fills it with e2etest.FillRedis.
func fullRedis(t *testing.T, policy string) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: e2etest.StartPolicyRedis(t, policy).Addr})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// TestEveryDrainingScriptRunsOnAFullRedis: a Redis at its maxmemory
// (noeviction) refuses the producers (of envelopes too, whose script's first
// write is a removal), with ErrRedisFull, and runs every step
// that frees memory or moves a message: claim, extend, ack, release, retry,
// dead-letter, reap, requeue, cancel, purge, heartbeat, and a daemon's
// held and environment reports. Each would be
// refused with OOM if its script were not declared allow-oom and its first
// write could grow memory.
func TestEveryDrainingScriptRunsOnAFullRedis(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rdb := fullRedis(t, "noeviction")
	q := queue.New(rdb)
	for _, format := range []queue.Format{queue.FormatRaw, queue.FormatEnvelope} {
		tp := queue.Topic{Name: "full-" + string(format), Slots: 1, Format: format}
		for i := range 12 {
			if _, err := q.Schedule(ctx, tp, message(format, fmt.Sprintf("m%02d", i)), queue.In(-time.Second)); err != nil {
				t.Fatalf("Schedule: %v", err)
			}
		}
	}
	e2etest.FillRedis(t, ctx, rdb)
	for _, format := range []queue.Format{queue.FormatRaw, queue.FormatEnvelope} {
		t.Run(string(format), func(t *testing.T) {
			drainFull(t, ctx, q, queue.Topic{Name: "full-" + string(format), Slots: 1, Format: format})
		})
	}
	if _, err := membership.New(q).Heartbeat(ctx, "dq", "replica-a", time.Minute); err != nil {
		t.Errorf("Heartbeat on a full Redis: %v", err)
	}
	// A daemon's reports (held, the limits its environment gives a topic)
	// are written on a full Redis too: stats shows what holds the topics
	// exactly when Redis is under pressure.
	tp := queue.Topic{Name: "full-raw", Slots: 1}
	env := flowstate.EnvLimits(300, "", 0)
	if err := flowstate.New(q).ReportEnv(ctx, tp, "replica-a", &env, time.Minute); err != nil {
		t.Errorf("ReportEnv on a full Redis: %v", err)
	} else if got, err := flowstate.New(q).EnvOf(ctx, []queue.Topic{tp}); err != nil || len(got[0]) != 1 || got[0][0].Rate != 300 {
		t.Errorf("EnvOf on a full Redis: %+v, %v; want replica-a's 300/s", got, err)
	}
	if err := flowstate.New(q).ReportHeld(ctx, tp, "replica-a", &flowstate.Held{Reasons: []string{flowstate.HeldRate}, Depth: -1}, time.Minute); err != nil {
		t.Errorf("ReportHeld on a full Redis: %v", err)
	}
	m, err := q.Memory(ctx)
	if err != nil || !m.Full() || m.Evicting() || m.Policy != "noeviction" {
		t.Errorf("Memory = %+v, %v; want full, noeviction", m, err)
	}
}

func drainFull(t *testing.T, ctx context.Context, q *queue.Queue, tp queue.Topic) {
	_, err := q.Schedule(ctx, tp, message(tp.Format, "new"), queue.In(time.Second))
	if !errors.Is(err, queue.ErrRedisFull) {
		t.Fatalf("Schedule on a full Redis: %v, want ErrRedisFull", err)
	}
	if _, err := q.ScheduleBatch(ctx, tp, []queue.Item{{Message: message(tp.Format, "new"), When: queue.In(time.Second)}}); !errors.Is(err, queue.ErrRedisFull) {
		t.Fatalf("ScheduleBatch on a full Redis: %v, want ErrRedisFull", err)
	}
	c, err := q.Claim(ctx, tp, 0, 8, time.Minute)
	if err != nil || len(c.Messages) != 8 {
		t.Fatalf("Claim on a full Redis: %d messages, %v; want 8", len(c.Messages), err)
	}
	ms := make([]string, len(c.Messages))
	for i, m := range c.Messages {
		ms[i] = m.Member
	}
	if n, err := q.Extend(ctx, tp, 0, ms, 2*time.Minute); err != nil || n != len(ms) {
		t.Errorf("Extend on a full Redis: %d, %v", n, err)
	}
	if g, err := flowstate.New(q).Acquire(ctx, tp, 1000, 2, 0); err != nil || g.Permits != 2 {
		t.Errorf("Acquire (rate limit) on a full Redis: %+v, %v", g, err)
	}
	if n, err := q.Ack(ctx, tp, 0, ms[:3]); err != nil || n != 3 {
		t.Errorf("Ack on a full Redis: %d, %v", n, err)
	}
	if n, err := q.Release(ctx, tp, 0, ms[3:4]); err != nil || n != 1 {
		t.Errorf("Release on a full Redis: %d, %v", n, err)
	}
	if o, err := q.Retry(ctx, tp, 0, queue.Failure{Member: ms[4], Backoff: time.Hour, Reason: "nack"}, 5); err != nil || o != queue.Retrying {
		t.Errorf("Retry on a full Redis: %v, %v", o, err)
	}
	if o, err := q.Retry(ctx, tp, 0, queue.Failure{Member: ms[5], Permanent: true, Reason: "too large"}, 5); err != nil || o != queue.Dead {
		t.Errorf("Retry (permanent) on a full Redis: %v, %v", o, err)
	}
	if o, err := q.Retry(ctx, tp, 0, queue.Failure{Member: ms[6], Permanent: true, Reason: "invalid"}, 5); err != nil || o != queue.Dead {
		t.Errorf("Retry (permanent) on a full Redis: %v, %v", o, err)
	}
	if _, err := q.Bury(ctx, tp, []byte("poison"), "malformed"); !errors.Is(err, queue.ErrRedisFull) {
		t.Errorf("Bury of a new member on a full Redis: %v, want ErrRedisFull", err)
	}
	short, err := q.Claim(ctx, tp, 0, 1, time.Millisecond)
	if err != nil || len(short.Messages) != 1 {
		t.Fatalf("Claim on a full Redis: %d messages, %v", len(short.Messages), err)
	}
	time.Sleep(10 * time.Millisecond)
	if r, err := q.Reap(ctx, tp, 0, 100, "0"); err != nil || r.Reaped != 1 {
		t.Errorf("Reap on a full Redis: %+v, %v", r, err)
	}
	if r, err := q.Requeue(ctx, tp, queue.ByMember([]byte(ms[5]))); err != nil || r.Requeued != 1 {
		t.Errorf("Requeue on a full Redis: %+v, %v", r, err)
	}
	if n, err := q.Purge(ctx, tp, queue.Ref{All: true}); err != nil || n != 1 {
		t.Errorf("Purge on a full Redis: %d, %v", n, err)
	}
	if ok, err := q.Cancel(ctx, tp, []byte(ms[3])); err != nil || !ok {
		t.Errorf("Cancel on a full Redis: %v, %v", ok, err)
	}
}

// TestRegisterOnAFullRedis: a registry that agrees needs no write, so a full
// Redis does not refuse it; a new topic's write is refused with
// ErrRedisFull.
func TestRegisterOnAFullRedis(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rdb := fullRedis(t, "noeviction")
	q := queue.New(rdb)
	orders := queue.LayoutOf(queue.Topic{Name: "orders", Slots: 2})
	if _, err := q.Register(ctx, "dq", "r1", []queue.Layout{orders}); err != nil {
		t.Fatalf("Register: %v", err)
	}
	e2etest.FillRedis(t, ctx, rdb)
	if ch, err := q.Register(ctx, "dq", "r1", []queue.Layout{orders}); err != nil || len(ch) != 0 {
		t.Errorf("Register of an agreeing layout on a full Redis: %v, %v; want no change", ch, err)
	}
	_, err := q.Register(ctx, "dq", "r1", []queue.Layout{queue.LayoutOf(queue.Topic{Name: "reminders"})})
	if !errors.Is(err, queue.ErrRedisFull) {
		t.Errorf("Register of a new topic on a full Redis: %v, want ErrRedisFull", err)
	}
}

// TestMemoryReadsThePolicy: INFO memory's policy, and which ones evict the
// queue's keys.
func TestMemoryReadsThePolicy(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, tc := range []struct {
		policy   string
		evicting bool
	}{{"noeviction", false}, {"volatile-lru", false}, {"allkeys-lru", true}, {"allkeys-lfu", true}} {
		t.Run(tc.policy, func(t *testing.T) {
			q := queue.New(fullRedis(t, tc.policy))
			m, err := q.Memory(ctx)
			if err != nil {
				t.Fatalf("Memory: %v", err)
			}
			if m.Policy != tc.policy || m.Evicting() != tc.evicting || (m.EvictingError() != nil) != tc.evicting || m.Full() {
				t.Errorf("Memory = %+v: Evicting %v, EvictingError %v, Full %v; want policy %s evicting %v, not full",
					m, m.Evicting(), m.EvictingError(), m.Full(), tc.policy, tc.evicting)
			}
		})
	}
}

// message is a message of a topic in format: an envelope needs an id.
func message(format queue.Format, body string) queue.Message {
	if format == queue.FormatEnvelope {
		return queue.Message{ID: "id-" + body, Body: []byte(body)}
	}
	return queue.Message{Body: []byte(body)}
}
