package queue_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delaybridge/delaybridge/internal/testing/e2etest"
	"github.com/delaybridge/delaybridge/internal/testing/redistest"
	. "github.com/delaybridge/delaybridge/queue"
)

// durableFixture is a private master and replica (link through a proxy) and
// a Queue that waits for one replica.
type durableFixture struct {
	r            *e2etest.Replicated
	master, repl *redis.Client
	q            *Queue
	tp           Topic
	missed       atomic.Int64
	timeout      time.Duration
	ctx          context.Context
}

func newDurableFixture(t *testing.T) *durableFixture {
	t.Helper()
	f := &durableFixture{r: e2etest.StartReplicated(t), timeout: time.Second, ctx: t.Context()}
	f.master = redis.NewClient(&redis.Options{Addr: f.r.Master.Addr})
	f.repl = redis.NewClient(&redis.Options{Addr: f.r.Replica.Addr})
	t.Cleanup(func() { _ = f.master.Close(); _ = f.repl.Close() })
	f.q = New(f.master).WithDurability(Durability{Replicas: 1, Timeout: f.timeout, Unconfirmed: func(n int) { f.missed.Add(int64(n)) }})
	f.tp = Topic{Name: "orders", Prefix: "dur", Slots: 2, Format: FormatEnvelope}
	return f
}

func (f *durableFixture) schedule(id string) (Receipt, error) {
	return f.q.Schedule(f.ctx, f.tp, Message{ID: id, Body: []byte("b-" + id)}, In(time.Hour))
}

// onReplica reports whether the replica has the message id (its index
// entry).
func (f *durableFixture) scheduledOn(t *testing.T, rdb *redis.Client) int64 {
	t.Helper()
	var n int64
	for slot := range f.tp.Slots {
		c, err := rdb.ZCard(f.ctx, f.tp.Keys(slot).Scheduled).Result()
		if err != nil {
			t.Fatal(err)
		}
		n += c
	}
	return n
}

// TestDurableAcceptanceWaitsForTheReplica: with Replicas 1, every
// acceptance path is acknowledged while the replica is in step (and the
// replica has the writes when it is); while its link is held, a write is
// made but reported ErrNotReplicated within about the timeout, and once
// the master counts the replica lagging, acceptance stops
// (ErrTooFewReplicas, nothing written); with the link back, it goes on.
func TestDurableAcceptanceWaitsForTheReplica(t *testing.T) {
	f := newDurableFixture(t)
	if _, err := f.schedule("up-1"); err != nil {
		t.Fatalf("schedule with the replica in step: %v", err)
	}
	items := make([]Item, 40)
	for i := range items {
		items[i] = Item{Message: Message{ID: fmt.Sprintf("batch-%d", i), Body: []byte("x")}, When: In(time.Hour)}
	}
	if _, err := f.q.ScheduleBatch(f.ctx, f.tp, items); err != nil {
		t.Fatalf("batch with the replica in step: %v", err)
	}
	if _, err := f.q.SetRecurrence(f.ctx, f.tp, Recurrence{ID: "rec", Spec: "@every 1h", Message: Message{Body: []byte("r")}}); err != nil {
		t.Fatalf("recurrence with the replica in step: %v", err)
	}
	// Acknowledged means on the replica: no waiting for it to catch up.
	if got := f.scheduledOn(t, f.repl); got != 42 {
		t.Fatalf("the replica has %d scheduled members right after the acknowledgements, want 42", got)
	}

	f.r.Link.Stall()
	start := time.Now()
	rc, err := f.schedule("held-1")
	took := time.Since(start)
	if !errors.Is(err, ErrNotReplicated) || !Unconfirmed(err) {
		t.Fatalf("schedule with the link held: err %v, want ErrNotReplicated", err)
	}
	if took > f.timeout+time.Second {
		t.Errorf("ErrNotReplicated took %s, timeout %s", took, f.timeout)
	}
	if rc.ID != "held-1" {
		t.Errorf("receipt of a write not confirmed: %+v, want the id written", rc)
	}
	if _, err := f.q.Bury(f.ctx, f.tp, []byte(`{"id":"held-bad","body":"x"}`), "intake: bad"); !errors.Is(err, ErrNotReplicated) {
		t.Errorf("bury with the link held: err %v, want ErrNotReplicated", err)
	}
	_, each := f.q.ScheduleEach(f.ctx, f.tp, items[:5])
	for i, err := range each {
		if !Unconfirmed(err) {
			t.Errorf("batch item %d with the link held: err %v, want it unconfirmed", i, err)
		}
	}
	if _, err := New(f.master).Schedule(f.ctx, f.tp, Message{ID: "nowait", Body: []byte("x")}, In(time.Hour)); err != nil {
		t.Errorf("a Queue that waits for nothing is refused with the link held: %v", err)
	}

	// The master's lag count passes ReplicaMaxLag: acceptance stops.
	e2etest.WaitFor(t, 10*time.Second, "acceptance to stop", func() bool {
		return errors.Is(f.q.Acceptance(f.ctx).Err, ErrTooFewReplicas)
	})
	before := f.scheduledOn(t, f.master)
	if _, err := f.schedule("refused-1"); !errors.Is(err, ErrTooFewReplicas) {
		t.Fatalf("schedule with too few replicas: err %v, want ErrTooFewReplicas", err)
	}
	if after := f.scheduledOn(t, f.master); after != before {
		t.Errorf("a refused schedule wrote: %d members before, %d after", before, after)
	}
	// A front door's dead-lettering is an acceptance too: refused alike,
	// nothing written.
	deadKey := f.tp.Keys(f.tp.SlotOfID("bad-1")).Dead
	deadBefore := f.master.ZCard(f.ctx, deadKey).Val()
	if _, err := f.q.Bury(f.ctx, f.tp, []byte(`{"id":"bad-1","body":"x"}`), "intake: bad"); !errors.Is(err, ErrTooFewReplicas) {
		t.Errorf("bury with too few replicas: err %v, want ErrTooFewReplicas", err)
	}
	if n := f.master.ZCard(f.ctx, deadKey).Val(); n != deadBefore {
		t.Errorf("a refused bury wrote: %d dead members before, %d after", deadBefore, n)
	}
	if f.missed.Load() < 9 {
		t.Errorf("Unconfirmed counted %d, want at least 9 (1 + 1 + 5 + 1 + 1)", f.missed.Load())
	}

	f.r.Link.Restore()
	f.r.WaitInSync(t, 20*time.Second)
	e2etest.WaitFor(t, 5*time.Second, "acceptance to go on", func() bool {
		_, err := f.schedule("back-1")
		return err == nil
	})
	if f.q.Acceptance(f.ctx).Err != nil {
		t.Errorf("acceptance with the link back: %v", f.q.Acceptance(f.ctx).Err)
	}
}

// TestDurabilityRefusesWaitAOFBefore72: WAITAOF needs Redis 7.2; on an
// older server CheckDurability says so, on a newer one it accepts when
// appendonly is on and says that it is off otherwise.
func TestDurabilityRefusesWaitAOFBefore72(t *testing.T) {
	rdb := redistest.Connect(t)
	ctx := t.Context()
	info, err := rdb.Info(ctx, "server").Result()
	if err != nil {
		t.Fatal(err)
	}
	_, v, _ := strings.Cut(info, "redis_version:")
	v, _, _ = strings.Cut(v, "\r\n")
	err = New(rdb).WithDurability(Durability{AOF: true}).CheckDurability(ctx)
	var major, minor int
	_, _ = fmt.Sscanf(v, "%d.%d", &major, &minor)
	old := major < 7 || major == 7 && minor < 2
	switch {
	case old && (err == nil || !strings.Contains(err.Error(), "7.2") || !strings.Contains(err.Error(), v)):
		t.Fatalf("WAITAOF on Redis %s: err %v, want a refusal naming 7.2 and %s", v, err, v)
	case !old:
		p, perr := rdb.Info(ctx, "persistence").Result()
		if perr != nil {
			t.Fatal(perr)
		}
		aofOff := strings.Contains(p, "aof_enabled:0")
		if aofOff && (err == nil || !strings.Contains(err.Error(), "appendonly no")) || !aofOff && err != nil {
			t.Fatalf("WAITAOF on Redis %s (appendonly off: %v): err %v", v, aofOff, err)
		}
	}
	if err := New(rdb).WithDurability(Durability{Replicas: 1}).CheckDurability(ctx); err != nil {
		t.Errorf("WAIT alone refused: %v", err)
	}
}

func TestCountReplicas(t *testing.T) {
	info := "role:master\r\nconnected_slaves:3\r\nslave0:ip=127.0.0.1,port=1,state=online,offset=10,lag=0\r\n" +
		"slave1:ip=127.0.0.1,port=2,state=online,offset=10,lag=7\r\nslave2:ip=127.0.0.1,port=3,state=wait_bgsave,offset=0,lag=0\r\nslave_expected:x\r\n" +
		"slave3:ip=127.0.0.1,port=4,state=online,offset=10,lag=1,type=replica\r\n" // Valkey 8 adds type
	if n := CountReplicas(info, ReplicaMaxLag); n != 2 {
		t.Fatalf("CountReplicas = %d, want 2 (one lags, one is not online)", n)
	}
}
