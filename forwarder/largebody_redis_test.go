package forwarder

import (
	"context"
	"crypto/rand"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delaybridge/delaybridge/internal/testing/e2etest"
	"github.com/delaybridge/delaybridge/queue"
)

// TestLargeBodiesWaitingCostRedisLittle: five 6 MiB bodies (random bytes,
// stored as base64) wait an hour while a forwarder polls their slot, reaps
// it and reads its backlog (each every second, keyspace notifications off):
// Redis spends at most 5 % of a core on them and logs no command of 10 ms
// or more (docs/architecture.md, Message size), but for the index sweep,
// which counts each entry's score once a sweep. Before the claim, the
// index sweep and stats learned due times from counts, each poll read the
// slot's head, copying 8 MiB through a script: about 130 ms a claim, 13 %
// of a core. A redis-server of the test's own: the test sets its SLOWLOG.
func TestLargeBodiesWaitingCostRedisLittle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := e2etest.StartPolicyRedis(t, "noeviction")
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { _ = rdb.Close() })
	q := queue.New(rdb)
	topic := queue.Topic{Name: "large", Prefix: "large", Format: queue.FormatEnvelope, MaxMessageSize: 8 << 20}
	for i := range 5 {
		body := make([]byte, 6<<20)
		_, _ = rand.Read(body)
		if _, err := q.Schedule(ctx, topic, queue.Message{ID: "large-" + strconv.Itoa(i), Body: body}, queue.In(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	sink := newRecordSink()
	start(t, Options{Queue: q, Topics: []Topic{{topic, sink}}, KeyPrefix: "large", ReplicaID: "r",
		KeyspaceEvents: "off", PollInterval: time.Second, BacklogInterval: time.Second})
	time.Sleep(2 * time.Second) // the scripts load, the slot is owned
	for _, c := range [][]any{{"CONFIG", "SET", "slowlog-log-slower-than", "10000"}, {"SLOWLOG", "RESET"}} {
		if err := rdb.Do(ctx, c...).Err(); err != nil {
			t.Fatal(err)
		}
	}
	const watch = 10 * time.Second
	cpu0 := serverCPU(t, ctx, rdb)
	time.Sleep(watch)
	used := serverCPU(t, ctx, rdb) - cpu0
	t.Logf("Redis CPU over %v: %.0f ms (%.1f %% of a core)", watch, used*1000, used*100/watch.Seconds())
	if share := used / watch.Seconds(); share > 0.05 {
		t.Errorf("Redis spent %.1f %% of a core on five waiting 6 MiB bodies, want at most 5 %%", share*100)
	}
	slow, err := rdb.SlowLogGet(ctx, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range slow {
		if len(e.Args) > 0 && (strings.EqualFold(e.Args[0], "slowlog") || strings.EqualFold(e.Args[0], "config")) {
			continue
		}
		if sweep(e.Args) {
			// The index sweep counts each entry's score, and Redis 7.0's
			// ZCOUNT compares the member at a range's ends with itself:
			// ~10 ms per 8 MiB member here, once per sweep (Message size).
			t.Logf("the index sweep took %v", e.Duration)
			continue
		}
		shown := e.Args
		if len(shown) > 24 {
			shown = append(shown[:2:2], shown[len(shown)-6:]...) // the script, its last keys and ARGV
		}
		t.Errorf("a command took %v: %.200q", e.Duration, strings.Join(shown, " "))
	}
	if got := sink.published(); len(got) != 0 {
		t.Errorf("%d messages due in an hour were published", len(got))
	}
}

// sweep reports whether a SLOWLOG entry's arguments are the reaper's index
// sweep (queue.Reap's "idx" phase) or a command it ran.
func sweep(args []string) bool {
	if len(args) > 0 && strings.EqualFold(args[0], "ZCOUNT") && len(args) == 4 && args[2] == args[3] {
		return true // ZCOUNT key s s: the sweep's check of one entry
	}
	// queue.Reap's ARGV: limit, cursor, phase, envelopes, fair.
	return len(args) > 3 && strings.HasPrefix(strings.ToLower(args[0]), "eval") && args[len(args)-3] == "idx"
}

// serverCPU is the CPU seconds redis-server has used (user and system).
func serverCPU(t *testing.T, ctx context.Context, rdb *redis.Client) float64 {
	t.Helper()
	info, err := rdb.Info(ctx, "cpu").Result()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && (k == "used_cpu_sys" || k == "used_cpu_user") {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("INFO cpu %s: %v", k, err)
			}
			sum += f
		}
	}
	return sum
}
