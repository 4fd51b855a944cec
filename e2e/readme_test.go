package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/internal/testing/e2etest"
	"github.com/delaybridge/delaybridge/internal/testing/redistest"
)

// quickStartBlock is the README's "run the daemon yourself" block.
func quickStartBlock(t *testing.T) []string {
	t.Helper()
	doc, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "\nTo run the daemon yourself")
	if !ok {
		t.Fatal(`README.md has no "To run the daemon yourself" paragraph`)
	}
	var out []string
	for _, l := range strings.Split(rest, "\n")[1:] {
		switch {
		case strings.HasPrefix(l, "    "):
			out = append(out, strings.TrimPrefix(l, "    "))
		case len(out) > 0:
			return out
		}
	}
	return out
}

// TestReadmeQuickStartRunsAndLeavesNothing runs the README's quick start as
// a user pastes it, in one shell, and checks what it leaves: no key under
// its prefix (the daemon's registry entry made the README's next example
// fail), no queue, no process. Only what would collide with other tests
// is changed: the key prefix, the queue (the routing key), the HTTP port,
// the log file and the binary (the one the suite built; `make build` is
// left out).
func TestReadmeQuickStartRunsAndLeavesNothing(t *testing.T) {
	t.Parallel()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	name := "dbtest-readme-" + hex.EncodeToString(b)
	logFile := filepath.Join(t.TempDir(), "delaybridge.log")
	var script []string
	for _, l := range quickStartBlock(t) {
		if strings.HasPrefix(l, "make build") {
			continue
		}
		l = strings.ReplaceAll(l, "bin/delaybridge", binary)
		l = strings.ReplaceAll(l, "/tmp/delaybridge.log", logFile)
		for _, verb := range []string{"declare", "get", "delete"} {
			l = strings.ReplaceAll(l, "amqpqueue "+verb+" orders", "amqpqueue "+verb+" "+name)
		}
		script = append(script, l)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-e", "-c", strings.Join(script, "\n"))
	cmd.Dir = ".."
	cmd.Env = append(e2etest.CleanEnv(),
		"DELAYBRIDGE_REDIS_URL="+e2etest.RedisURL(),
		"DELAYBRIDGE_AMQP_URL="+e2etest.AMQPURL(),
		"DELAYBRIDGE_KEY_PREFIX="+name,
		"DELAYBRIDGE_TOPIC_ORDERS_ROUTING_KEY="+name,
		"DELAYBRIDGE_HTTP_ADDR=127.0.0.1:0",
	)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		logs, _ := os.ReadFile(logFile)
		t.Fatalf("the quick start failed: %v\nscript:\n%s\noutput:\n%s\ndaemon log:\n%s", err, strings.Join(script, "\n"), out.String(), logs)
	}
	for _, want := range []string{"topic orders (amqp): ok", `{"order":42}`, "x-delaybridge-id=", "deleted queue " + name, "done: forget topic orders"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the quick start's output lacks %q:\n%s", want, out.String())
		}
	}
	rdb := redistest.Connect(t)
	expectEmpty(t, rdb, name)
}
