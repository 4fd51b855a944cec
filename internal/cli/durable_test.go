package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/internal/testing/e2etest"
)

// durableEnv points the commands at a private master with one replica
// (through a proxy the test holds), with a redis-stream topic "events".
func durableEnv(t *testing.T, waitReplicas string) *e2etest.Replicated {
	t.Helper()
	r := e2etest.StartReplicated(t)
	t.Setenv("DELAYBRIDGE_REDIS_URL", "redis://"+r.Master.Addr)
	t.Setenv("DELAYBRIDGE_AMQP_URL", "")
	t.Setenv("DELAYBRIDGE_TOPICS", "events")
	t.Setenv("DELAYBRIDGE_TOPIC_EVENTS_SINK", "redis")
	t.Setenv("DELAYBRIDGE_TOPIC_EVENTS_FORMAT", "envelope")
	t.Setenv("DELAYBRIDGE_TOPIC_EVENTS_STREAM", "events-out")
	t.Setenv("DELAYBRIDGE_REDIS_WAIT_REPLICAS", waitReplicas)
	t.Setenv("DELAYBRIDGE_REDIS_WAIT_TIMEOUT", "1s")
	return r
}

// TestCheckPrintsTheDurabilityPosture: check prints the master's role,
// its replicas in step and what an acknowledgement waits for; it fails
// when WAIT_REPLICAS asks for more replicas than are in step, and when
// WAIT_AOF asks for WAITAOF of a Redis before 7.2; it warns when Redis
// persists nothing.
func TestCheckPrintsTheDurabilityPosture(t *testing.T) {
	durableEnv(t, "1")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	code, out, errs := runCmd(ctx, "", "check")
	for _, s := range []string{"redis durability: ok (role master, 1 replica(s) in step of 1 connected", "lag ", "appendonly no", "acknowledges after WAIT 1 (1s)", "warning: Redis persists nothing"} {
		if !strings.Contains(out, s) {
			t.Errorf("check output lacks %q", s)
		}
	}
	if code != exitOK || t.Failed() {
		t.Fatalf("check with WAIT_REPLICAS=1 and one replica: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	t.Setenv("DELAYBRIDGE_REDIS_WAIT_REPLICAS", "2")
	code, out, errs = runCmd(ctx, "", "check")
	if code != exitFail || !strings.Contains(out, "redis durability: FAILED: DELAYBRIDGE_REDIS_WAIT_REPLICAS=2 but 1 replica(s) are in step") {
		t.Fatalf("check with WAIT_REPLICAS=2 and one replica: exit %d, want %d\nstdout: %s\nstderr: %s", code, exitFail, out, errs)
	}
	t.Setenv("DELAYBRIDGE_REDIS_WAIT_REPLICAS", "1")
	t.Setenv("DELAYBRIDGE_REDIS_WAIT_AOF", "true")
	code, out, errs = runCmd(ctx, "", "check")
	if code != exitFail || !strings.Contains(out, "DELAYBRIDGE_REDIS_WAIT_AOF=true: waiting for the AOF fsync needs WAITAOF, Redis 7.2 or later; this server is 7.0") {
		t.Fatalf("check with WAIT_AOF on Redis 7.0: exit %d, want %d\nstdout: %s\nstderr: %s", code, exitFail, out, errs)
	}
	code, out, errs = runCmd(ctx, "", "schedule", "--id", "a", "--in", "1h", "events", "x")
	if code != exitConfig || !strings.Contains(errs, "DELAYBRIDGE_REDIS_WAIT_AOF=true") {
		t.Fatalf("schedule with WAIT_AOF on Redis 7.0: exit %d, want %d\nstdout: %s\nstderr: %s", code, exitConfig, out, errs)
	}
}

// TestScheduleCommandFailsWhenTheReplicaDoesNotConfirm: with
// WAIT_REPLICAS=1, `delaybridge schedule` succeeds while the replica is in
// step and, with its link held, exits 1 saying the write was not
// acknowledged, the id to repeat it with, and that repeating is safe.
func TestScheduleCommandFailsWhenTheReplicaDoesNotConfirm(t *testing.T) {
	r := durableEnv(t, "1")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if code, out, errs := runCmd(ctx, "", "schedule", "--id", "a", "--in", "1h", "events", "x"); code != exitOK {
		t.Fatalf("schedule with the replica in step: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	r.Link.Stall()
	code, out, errs := runCmd(ctx, "", "schedule", "--in", "1h", "events", "x")
	if code != exitFail || !strings.Contains(errs, "not acknowledged") || !strings.Contains(errs, "repeat with --id ") ||
		!strings.Contains(errs, "repeating with the same id is safe") {
		t.Fatalf("schedule with the link held: exit %d, want %d\nstdout: %s\nstderr: %s", code, exitFail, out, errs)
	}
}
