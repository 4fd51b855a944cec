package queue_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delaybridge/delaybridge/internal/testing/e2etest"
	. "github.com/delaybridge/delaybridge/queue"
)

// waitAOFCalls is WAITAOF's call count on rdb's server (INFO commandstats).
func waitAOFCalls(t *testing.T, rdb *redis.Client) int {
	t.Helper()
	info, err := rdb.Info(t.Context(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(info, "cmdstat_waitaof:calls=")
	if !ok {
		return 0
	}
	n, _ := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
	return n
}

// aofBytes is what the server's append-only files in dir hold.
func aofBytes(t *testing.T, dir string) []byte {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "appendonlydir", "*.aof"))
	legacy, _ := filepath.Glob(filepath.Join(dir, "*.aof"))
	var all []byte
	for _, f := range append(files, legacy...) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, b...)
	}
	return all
}

// TestWaitAOFConfirmsEachWriteOnce: with Durability.AOF, on a server with
// WAITAOF and appendonly yes, a batch of 50 and a single schedule are
// acknowledged after one WAITAOF each (counted per pipeline, as WAIT is),
// which the master answered with its own fsync (numlocal 1); their ids are
// in its append-only file when the acknowledgement comes. With appendonly
// turned off at run time, acceptance stops before writing (ErrAOFOff,
// Unconfirmed) and Acceptance says why; turned on again, it goes on.
// Skipped on a server without WAITAOF (make test's Redis 7.0): make compat
// runs it.
func TestWaitAOFConfirmsEachWriteOnce(t *testing.T) {
	dir := t.TempDir()
	srv := e2etest.StartAOFRedis(t, "aof", dir)
	e2etest.SkipWithoutWaitAOF(t, srv.Addr)
	ctx := t.Context()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { _ = rdb.Close() })
	var missed int
	q := New(rdb).WithDurability(Durability{AOF: true, Timeout: 2 * time.Second, Unconfirmed: func(n int) { missed += n }})
	if err := q.CheckDurability(ctx); err != nil {
		t.Fatalf("CheckDurability with appendonly yes: %v", err)
	}
	tp := Topic{Name: "orders", Prefix: "aof", Slots: 4, Format: FormatEnvelope}
	if _, err := q.Schedule(ctx, tp, Message{ID: "warm", Body: []byte("x")}, In(time.Hour)); err != nil {
		t.Fatalf("first schedule: %v", err) // registers the topic: its own writes
	}

	batch := func(name string) []Item {
		items := make([]Item, 50)
		for i := range items {
			items[i] = Item{Message: Message{ID: fmt.Sprintf("%s-%02d", name, i), Body: []byte("x")}, When: In(time.Hour)}
		}
		return items
	}
	// A first batch loads the batch script: its EVALSHA answered NOSCRIPT
	// runs the pipeline again, WAITAOF included.
	if _, err := q.ScheduleBatch(ctx, tp, batch("aof-warm")); err != nil {
		t.Fatalf("first batch: %v", err)
	}
	items := batch("aof-batch")
	before := waitAOFCalls(t, rdb)
	if _, err := q.ScheduleBatch(ctx, tp, items); err != nil {
		t.Fatalf("batch with appendonly yes: %v", err)
	}
	if got := waitAOFCalls(t, rdb) - before; got != 1 {
		t.Errorf("a batch of 50 ran WAITAOF %d times, want once", got)
	}
	aof := aofBytes(t, dir)
	for _, it := range items {
		if !bytes.Contains(aof, []byte(it.Message.ID)) {
			t.Fatalf("acknowledged %s is not in the append-only file", it.Message.ID)
		}
	}
	before = waitAOFCalls(t, rdb)
	if _, err := q.Schedule(ctx, tp, Message{ID: "aof-single", Body: []byte("x")}, In(time.Hour)); err != nil {
		t.Fatalf("schedule with appendonly yes: %v", err)
	}
	if got := waitAOFCalls(t, rdb) - before; got != 1 {
		t.Errorf("a schedule ran WAITAOF %d times, want once", got)
	}
	if !bytes.Contains(aofBytes(t, dir), []byte("aof-single")) {
		t.Fatal("acknowledged aof-single is not in the append-only file")
	}
	if missed != 0 {
		t.Fatalf("%d writes counted unconfirmed with appendonly yes", missed)
	}

	if err := rdb.ConfigSet(ctx, "appendonly", "no").Err(); err != nil {
		t.Fatal(err)
	}
	if a := q.Acceptance(ctx); !errors.Is(a.Err, ErrAOFOff) || !a.AOFOff {
		t.Fatalf("Acceptance with appendonly no: %+v, want ErrAOFOff", a)
	}
	if err := q.CheckDurability(ctx); err == nil || !strings.Contains(err.Error(), "appendonly no") {
		t.Errorf("CheckDurability with appendonly no: %v, want a refusal naming appendonly no", err)
	}
	e2etest.WaitFor(t, 5*time.Second, "acceptance to stop", func() bool {
		_, err := q.Schedule(ctx, tp, Message{ID: "aof-refused", Body: []byte("x")}, In(time.Hour))
		return errors.Is(err, ErrAOFOff) && Unconfirmed(err)
	})
	if _, err := q.Get(ctx, tp, "aof-refused"); !errors.Is(err, ErrNotFound) {
		t.Errorf("a schedule refused with appendonly no was written: %v", err)
	}
	if err := rdb.ConfigSet(ctx, "appendonly", "yes").Err(); err != nil {
		t.Fatal(err)
	}
	e2etest.WaitFor(t, 20*time.Second, "acceptance to go on with appendonly yes", func() bool {
		_, err := q.Schedule(ctx, tp, Message{ID: "aof-back", Body: []byte("x")}, In(time.Hour))
		return err == nil
	})
	e2etest.WaitAOFRewritten(t, srv.Addr)
}

// TestWaitAOFKeepsAcknowledgedThroughAKill: producers schedule singly and
// in batches through a Queue that waits for WAITAOF on a master with
// appendonly yes; the master is SIGKILLed under that load and started again
// on its directory, from its append-only file: every schedule acknowledged
// before the kill is there. (A process kill leaves what was written in the
// kernel's page cache; WAITAOF's fsync is what also covers a crash of the
// machine, which a test cannot stage: see docs/installation.md.) Skipped on
// a server without WAITAOF: make compat runs it.
func TestWaitAOFKeepsAcknowledgedThroughAKill(t *testing.T) {
	dir := t.TempDir()
	srv := e2etest.StartAOFRedis(t, "aof", dir)
	e2etest.SkipWithoutWaitAOF(t, srv.Addr)
	ctx := t.Context()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1})
	q := New(rdb).WithDurability(Durability{AOF: true, Timeout: 2 * time.Second})
	tp := Topic{Name: "orders", Prefix: "aofkill", Slots: 4, Format: FormatEnvelope}
	if _, err := q.Schedule(ctx, tp, Message{ID: "warm", Body: []byte("x")}, In(time.Hour)); err != nil {
		t.Fatalf("first schedule: %v", err)
	}

	var (
		mu    sync.Mutex
		acked []string
		wg    sync.WaitGroup
	)
	stop := make(chan struct{})
	for p := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				var ids []string
				var err error
				if i%2 == 0 {
					id := fmt.Sprintf("p%d-%d", p, i)
					ids = []string{id}
					_, err = q.Schedule(ctx, tp, Message{ID: id, Body: []byte("x")}, In(time.Hour))
				} else {
					items := make([]Item, 10)
					for k := range items {
						id := fmt.Sprintf("p%d-%d-%d", p, i, k)
						ids = append(ids, id)
						items[k] = Item{Message: Message{ID: id, Body: []byte("x")}, When: In(time.Hour)}
					}
					_, err = q.ScheduleBatch(ctx, tp, items)
				}
				if err == nil {
					mu.Lock()
					acked = append(acked, ids...)
					mu.Unlock()
				}
			}
		})
	}
	e2etest.WaitFor(t, 30*time.Second, "300 acknowledged schedules", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(acked) >= 300
	})
	mu.Lock()
	srv.Kill() // SIGKILL, with the producers mid-write; acked frozen meanwhile
	before := append([]string(nil), acked...)
	mu.Unlock()
	close(stop)
	_ = rdb.Close()
	wg.Wait()

	back := e2etest.StartAOFRedis(t, "aof-restarted", dir)
	rdb2 := redis.NewClient(&redis.Options{Addr: back.Addr})
	t.Cleanup(func() { _ = rdb2.Close() })
	q2 := New(rdb2)
	var lost []string
	for _, id := range before {
		if _, err := q2.Get(ctx, tp, id); err != nil {
			lost = append(lost, id)
		}
	}
	if len(lost) > 0 {
		t.Fatalf("%d of %d acknowledged schedules lost through the kill, e.g. %v", len(lost), len(before), lost[:min(5, len(lost))])
	}
	t.Logf("%d acknowledged schedules all kept through SIGKILL and a restart from the AOF", len(before))
}
