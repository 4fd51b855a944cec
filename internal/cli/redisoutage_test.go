package cli

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// privateRedis is a redis-server of the test's own on port, keeping its
// data across a restart (append-only file, fsync always), so an outage
// test can stop and start it again where the daemon looks for it.
type privateRedis struct {
	t    *testing.T
	port int
	dir  string
	cmd  *exec.Cmd
}

func (p *privateRedis) start() {
	p.t.Helper()
	p.cmd = exec.Command("redis-server", "--port", fmt.Sprint(p.port), "--bind", "127.0.0.1", "--dir", p.dir,
		"--save", "", "--appendonly", "yes", "--appendfsync", "always")
	if err := p.cmd.Start(); err != nil {
		p.t.Fatalf("redis-server is required for a Redis of the test's own: %v", err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: p.addr()})
	defer rdb.Close()
	for deadline := time.Now().Add(20 * time.Second); rdb.Ping(context.Background()).Err() != nil; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			p.t.Fatalf("redis-server on %s does not answer", p.addr())
		}
	}
}

func (p *privateRedis) stop() {
	if p.cmd != nil && p.cmd.Process != nil {
		_ = p.cmd.Process.Kill()
		_ = p.cmd.Wait()
		p.cmd = nil
	}
}

func (p *privateRedis) addr() string { return fmt.Sprintf("127.0.0.1:%d", p.port) }

// TestARedisOutageOfTenSecondsLogsAtMostThreeLines: Redis stopped for 10 s
// under a running daemon wrote 23 go-redis "failed to dial" lines and a
// line per loop and scanner, none saying where the daemon looks for Redis.
// Now the outage is at most three lines (Redis does not answer, with the
// address, the variable and check; the heartbeat lost; reachable again),
// and the daemon is ready again after it.
func TestARedisOutageOfTenSecondsLogsAtMostThreeLines(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	r := &privateRedis{t: t, port: port, dir: t.TempDir()}
	r.start()
	t.Cleanup(r.stop)

	exchange := uniqueName("dbtest.outage.")
	amqpTopicEnv(t, exchange)
	declareBound(t, exchange)
	t.Setenv("DELAYBRIDGE_REDIS_URL", "redis://"+r.addr())
	d := startDaemon(t)
	waitReady := func(within time.Duration) {
		t.Helper()
		d.waitReadyz(within, "200", func(code int, _ string) bool { return code == http.StatusOK })
	}
	waitReady(30 * time.Second)
	time.Sleep(2 * time.Second) // start-up's lines are written
	mark := len(d.logs.String())

	r.stop()
	time.Sleep(10 * time.Second)
	r.start()
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(d.logs.String()[mark:], "redis reachable again"); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no \"redis reachable again\" 30 s after Redis restarted; logs since the stop:\n%s", d.logs.String()[mark:])
		}
	}
	waitReady(30 * time.Second)
	time.Sleep(3 * time.Second) // what the recovery logs after the line

	lines := strings.Split(strings.TrimSpace(d.logs.String()[mark:]), "\n")
	t.Logf("the outage's lines:\n%s", strings.Join(lines, "\n"))
	if len(lines) > 3 {
		t.Errorf("a 10 s outage logged %d lines, want at most 3:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	first := lines[0]
	for _, want := range []string{"redis does not answer", r.addr(), "DELAYBRIDGE_REDIS_URL", "delaybridge check"} {
		if !strings.Contains(first, want) {
			t.Errorf("the outage's first line lacks %q: %s", want, first)
		}
	}
}

// TestCheckDoesNotCallDurabilityOKWhileRedisIsDown: with Redis down, check
// said "redis durability: ok (posture unknown …)" under "redis: FAILED".
func TestCheckDoesNotCallDurabilityOKWhileRedisIsDown(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	amqpTopicEnv(t, "")
	t.Setenv("DELAYBRIDGE_REDIS_URL", "redis://"+addr)
	e := &cliEnv{t: t, ctx: context.Background()}
	code, out, errs := e.run("", "check")
	if code != exitFail || !strings.Contains(out, "redis: FAILED") || !strings.Contains(out, "redis durability: FAILED: unknown: Redis does not answer") {
		t.Fatalf("check with Redis down: exit %d, want %d and both Redis lines FAILED\nstdout: %s\nstderr: %s", code, exitFail, out, errs)
	}
}
