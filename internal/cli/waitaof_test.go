package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delaybridge/delaybridge/internal/testing/e2etest"
)

// aofEnv points the commands at the private server addr with
// DELAYBRIDGE_REDIS_WAIT_AOF=true and a redis-stream topic "events".
func aofEnv(t *testing.T, addr string) {
	t.Helper()
	t.Setenv("DELAYBRIDGE_REDIS_URL", "redis://"+addr)
	t.Setenv("DELAYBRIDGE_AMQP_URL", "")
	t.Setenv("DELAYBRIDGE_TOPICS", "events")
	t.Setenv("DELAYBRIDGE_TOPIC_EVENTS_SINK", "redis")
	t.Setenv("DELAYBRIDGE_TOPIC_EVENTS_FORMAT", "envelope")
	t.Setenv("DELAYBRIDGE_TOPIC_EVENTS_STREAM", "events-out")
	t.Setenv("DELAYBRIDGE_REDIS_WAIT_AOF", "true")
	t.Setenv("DELAYBRIDGE_REDIS_WAIT_TIMEOUT", "1s")
	t.Setenv("DELAYBRIDGE_HTTP_ADDR", "127.0.0.1:0")
}

// hasWaitAOF reports whether the server at addr knows WAITAOF.
func hasWaitAOF(t *testing.T, addr string) bool {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	v, err := rdb.Do(t.Context(), "command", "info", "waitaof").Slice()
	if err != nil {
		t.Fatalf("COMMAND INFO WAITAOF: %v", err)
	}
	return len(v) == 1 && v[0] != nil
}

// TestRunRefusesAWaitAOFTheServerCannotGive: `delaybridge run` with
// WAIT_AOF=true against a server that could never confirm a write exits 2
// at start, naming the variable and what the server lacks: WAITAOF itself
// on a server before 7.2 (make test's Redis 7.0), appendonly no on one
// that has WAITAOF (make compat). `check` fails with the same reason.
func TestRunRefusesAWaitAOFTheServerCannotGive(t *testing.T) {
	srv := e2etest.StartPolicyRedis(t, "noeviction") // appendonly no
	aofEnv(t, srv.Addr)
	lacks := "has no WAITAOF"
	if hasWaitAOF(t, srv.Addr) {
		lacks = "appendonly no"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	code, out, errs := runCmd(ctx, "", "run")
	if code != exitConfig || !strings.Contains(errs, "DELAYBRIDGE_REDIS_WAIT_AOF=true") || !strings.Contains(errs, lacks) {
		t.Fatalf("run with WAIT_AOF on a server that %s: exit %d, want %d naming the variable and %q\nstdout: %s\nstderr: %s", lacks, code, exitConfig, lacks, out, errs)
	}
	code, out, errs = runCmd(ctx, "", "check")
	if code != exitFail || !strings.Contains(out, "redis durability: FAILED: DELAYBRIDGE_REDIS_WAIT_AOF=true") || !strings.Contains(out, lacks) {
		t.Fatalf("check with WAIT_AOF on a server that %s: exit %d, want %d\nstdout: %s\nstderr: %s", lacks, code, exitFail, out, errs)
	}
}

// TestWaitAOFOffAtRunTimeIsNotReady: the daemon with WAIT_AOF=true on a
// server with WAITAOF and appendonly yes is ready and check passes; with
// appendonly turned off at run time /readyz answers 503 saying so and
// check fails, as they do for too few replicas; turned on again, ready.
// Skipped on a server without WAITAOF: make compat runs it.
func TestWaitAOFOffAtRunTimeIsNotReady(t *testing.T) {
	srv := e2etest.StartAOFRedis(t, "aof", t.TempDir())
	e2etest.SkipWithoutWaitAOF(t, srv.Addr)
	aofEnv(t, srv.Addr)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if code, out, errs := runCmd(ctx, "", "check"); code != exitOK || !strings.Contains(out, "WAITAOF 1 0 (1s)") {
		t.Fatalf("check with appendonly yes: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	d := startDaemon(t)
	d.waitReadyz(20*time.Second, "200 ready", func(code int, _ string) bool { return code == 200 })

	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { _ = rdb.Close() })
	if err := rdb.ConfigSet(ctx, "appendonly", "no").Err(); err != nil {
		t.Fatal(err)
	}
	d.waitReadyz(20*time.Second, "503 naming appendonly", func(code int, body string) bool {
		return code == 503 && strings.Contains(body, "appendonly is off") && strings.Contains(body, "DELAYBRIDGE_REDIS_WAIT_AOF")
	})
	if code, out, errs := runCmd(ctx, "", "check"); code != exitFail || !strings.Contains(out, "appendonly no") {
		t.Fatalf("check with appendonly turned off: exit %d, want %d\nstdout: %s\nstderr: %s", code, exitFail, out, errs)
	}
	if err := rdb.ConfigSet(ctx, "appendonly", "yes").Err(); err != nil {
		t.Fatal(err)
	}
	d.waitReadyz(30*time.Second, "200 ready again", func(code int, _ string) bool { return code == 200 })
	e2etest.WaitAOFRewritten(t, srv.Addr)
}
