package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/delaybridge/delaybridge/internal/testing/e2etest"
	"github.com/delaybridge/delaybridge/queue"
)

// policyEnv points the commands at a private Redis whose policy is policy,
// with one topic delivered into a stream of that Redis (no broker needed).
func policyEnv(t *testing.T, policy string) *redis.Client {
	t.Helper()
	s := e2etest.StartPolicyRedis(t, policy)
	t.Setenv("DELAYBRIDGE_REDIS_URL", "redis://"+s.Addr)
	t.Setenv("DELAYBRIDGE_AMQP_URL", "")
	t.Setenv("DELAYBRIDGE_TOPICS", "events")
	t.Setenv("DELAYBRIDGE_TOPIC_EVENTS_SINK", "redis")
	t.Setenv("DELAYBRIDGE_TOPIC_EVENTS_STREAM", "events-out")
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

func runCmd(ctx context.Context, stdin string, args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = dispatch(ctx, args, stdio{in: strings.NewReader(stdin), out: &out, err: &errb})
	return code, out.String(), errb.String()
}

// TestCheckFailsOnAnEvictingRedis: allkeys-* would delete scheduled
// messages when Redis fills: check exits 1 naming the policy and the fix.
// volatile-* evicts only keys with a TTL (delaybridge sets none) and
// noeviction keeps everything: both pass, saying the policy.
func TestCheckFailsOnAnEvictingRedis(t *testing.T) {
	for _, tc := range []struct {
		policy string
		code   int
		says   []string
	}{
		{"allkeys-lru", exitFail, []string{"redis: FAILED: maxmemory-policy allkeys-lru", "set maxmemory-policy noeviction"}},
		{"volatile-lru", exitOK, []string{"redis: ok (maxmemory-policy volatile-lru", "never evicted"}},
		{"noeviction", exitOK, []string{"redis: ok (maxmemory-policy noeviction)"}},
	} {
		t.Run(tc.policy, func(t *testing.T) {
			policyEnv(t, tc.policy)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			code, out, errs := runCmd(ctx, "", "check")
			for _, s := range tc.says {
				if !strings.Contains(out, s) {
					t.Errorf("check output lacks %q", s)
				}
			}
			if code != tc.code || t.Failed() {
				t.Fatalf("check with %s: exit %d, want %d\nstdout: %s\nstderr: %s", tc.policy, code, tc.code, out, errs)
			}
		})
	}
}

// TestScheduleOnAFullRedisSaysSo: a producer command refused for memory
// exits 1 and says what is wrong and what to do.
func TestScheduleOnAFullRedisSaysSo(t *testing.T) {
	rdb := policyEnv(t, "noeviction")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e2etest.FillRedis(t, ctx, rdb)
	code, out, errs := runCmd(ctx, "", "schedule", "--in", "1m", "events", "hello")
	if code != exitFail || !strings.Contains(errs, "Redis is full, nothing was written: raise its maxmemory") {
		t.Fatalf("schedule on a full Redis: exit %d, want %d saying Redis is full\nstdout: %s\nstderr: %s", code, exitFail, out, errs)
	}
}

// TestDaemonStartedOnAFullRedisDeliversTheBacklog: a daemon that starts on
// a Redis at its maxmemory (its registry never written) does not wait for
// the registry write: it delivers the whole backlog, whose memory Redis frees,
// and /readyz says Redis is full while it is.
func TestDaemonStartedOnAFullRedisDeliversTheBacklog(t *testing.T) {
	const n = 3000
	c, err := kfake.NewCluster(kfake.Ports(0), kfake.SeedTopics(1, "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rdb := policyEnv(t, "noeviction")
	t.Setenv("DELAYBRIDGE_KAFKA_BROKERS", c.ListenAddrs()[0])
	t.Setenv("DELAYBRIDGE_TOPIC_EVENTS_SINK", "kafka")
	t.Setenv("DELAYBRIDGE_TOPIC_EVENTS_STREAM", "")
	t.Setenv("DELAYBRIDGE_TOPIC_EVENTS_KAFKA_TOPIC", "out")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	events := queue.Topic{Name: "events", Slots: 1, Format: queue.FormatRaw}
	items := make([]queue.Item, n)
	for i := range items {
		items[i] = queue.Item{Message: queue.Message{Body: fmt.Appendf(nil, "message %04d %s", i, strings.Repeat("x", 200))}, When: queue.In(-time.Second)}
	}
	if _, err := queue.New(rdb).ScheduleBatch(ctx, events, items); err != nil {
		t.Fatal(err)
	}
	before, beforeKeys := usedMemory(t, ctx, rdb), keyMemory(t, ctx, rdb)
	if err := rdb.ConfigSet(ctx, "maxmemory", strconv.FormatInt(before-64<<10, 10)).Err(); err != nil {
		t.Fatal(err)
	}

	d := startDaemon(t)
	d.waitReadyz(20*time.Second, "503: redis full", func(code int, body string) bool {
		return code == http.StatusServiceUnavailable && strings.Contains(body, "redis full")
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()[0]), kgo.ConsumeTopics("out"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	got := map[string]bool{}
	for len(got) < n && ctx.Err() == nil {
		for _, r := range cl.PollFetches(ctx).Records() {
			got[string(r.Value)] = true
		}
	}
	if len(got) < n {
		t.Fatalf("delivered %d of %d from a full Redis; logs:\n%s", len(got), n, d.logs.String())
	}
	k := events.Keys(0)
	for ctx.Err() == nil && (rdb.ZCard(ctx, k.Scheduled).Val() > 0 || rdb.ZCard(ctx, k.Inflight).Val() > 0) {
		time.Sleep(20 * time.Millisecond)
	}
	after := keyMemory(t, ctx, rdb)
	if backlog := int64(n * 200); after > beforeKeys-backlog {
		t.Errorf("memory of the keys %d after the drain, %d before: want it to fall by the backlog's %d bytes of bodies at least", after, beforeKeys, backlog)
	}
	if !strings.Contains(d.logs.String(), "Redis is full: the topic registry is written once it has room") {
		t.Errorf("no WARN that the registry waits for room:\n%s", d.logs.String())
	}
	t.Logf("memory of the keys %d → %d bytes; maxmemory %d (used memory %d before, %d after)", beforeKeys, after, before-64<<10, before, usedMemory(t, ctx, rdb))
}

// keyMemory is what Redis's keys take (MEMORY USAGE of every key, all of
// its elements counted). Redis's used memory does not say whether the
// backlog's memory was freed: it counts the Lua heap, whose garbage from the
// drain's scripts is collected lazily (0.4 to 1.5 MB after this test's
// drain), and the clients' buffers, which the drain's pipelines grow and
// Redis shrinks lazily; and used_memory_lua is not what used_memory counts
// of the heap (used_memory_dataset less it went below zero).
func keyMemory(t *testing.T, ctx context.Context, rdb *redis.Client) int64 {
	t.Helper()
	var sum int64
	iter := rdb.Scan(ctx, 0, "*", 1000).Iterator()
	for iter.Next(ctx) {
		n, err := rdb.MemoryUsage(ctx, iter.Val(), 0).Result()
		if err != nil && err != redis.Nil {
			t.Fatalf("MEMORY USAGE %s: %v", iter.Val(), err)
		}
		sum += n
	}
	if err := iter.Err(); err != nil {
		t.Fatalf("SCAN: %v", err)
	}
	return sum
}

func usedMemory(t *testing.T, ctx context.Context, rdb *redis.Client) int64 {
	t.Helper()
	m, err := queue.New(rdb).Memory(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return m.Used
}

// TestDaemonReportsAnEvictingRedis: with allkeys-lru the daemon logs an
// ERROR naming the policy at start and exports it, and keeps delivering.
func TestDaemonReportsAnEvictingRedis(t *testing.T) {
	policyEnv(t, "allkeys-lru")
	d := startDaemon(t)
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(d.logs.String(), `"level":"ERROR","msg":"Redis may evict scheduled messages`) {
		if time.Now().After(deadline) {
			t.Fatalf("no ERROR about the evicting policy; logs:\n%s", d.logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(d.logs.String(), "maxmemory-policy allkeys-lru") {
		t.Errorf("the ERROR does not name the policy:\n%s", d.logs.String())
	}
	res, err := http.Get("http://" + d.addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if !strings.Contains(string(b), `delaybridge_redis_evicting{policy="allkeys-lru"} 1`) {
		t.Errorf("/metrics lacks delaybridge_redis_evicting 1 for allkeys-lru:\n%s", grepLines(string(b), "delaybridge_redis_"))
	}
	// The destination's first check may still be under way (a loaded
	// machine): wait it out, then an evicting Redis must not be a reason.
	code, body := d.readyz()
	for code != http.StatusOK && strings.Contains(body, "not checked yet") && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		code, body = d.readyz()
	}
	if code != http.StatusOK {
		t.Errorf("/readyz %d %q: an evicting Redis is reported, not a reason to stop", code, body)
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestStatsShowsAFullAndAnEvictingRedis: stats says when Redis is full or
// may evict messages, in text and in JSON.
func TestStatsShowsAFullAndAnEvictingRedis(t *testing.T) {
	for _, tc := range []struct {
		policy, says, json string
	}{
		{"noeviction", "REDIS FULL:", `"full":true`},
		{"allkeys-lru", "REDIS EVICTING: maxmemory-policy allkeys-lru", `"evicting":true`},
	} {
		t.Run(tc.policy, func(t *testing.T) {
			rdb := policyEnv(t, tc.policy)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if tc.policy == "noeviction" {
				e2etest.FillRedis(t, ctx, rdb)
			}
			if code, out, errs := runCmd(ctx, "", "stats"); code != exitOK || !strings.Contains(out, tc.says) {
				t.Errorf("stats: exit %d, want 0 saying %q\nstdout: %s\nstderr: %s", code, tc.says, out, errs)
			}
			if code, out, errs := runCmd(ctx, "", "stats", "--json"); code != exitOK || !strings.Contains(out, tc.json) {
				t.Errorf("stats --json: exit %d, want 0 with %s\nstdout: %s\nstderr: %s", code, tc.json, out, errs)
			}
		})
	}
}
