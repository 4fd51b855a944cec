package e2etest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeDaemon is a script that logs as `delaybridge run` does once it serves
// HTTP, then waits for a signal.
func fakeDaemon(t *testing.T, script string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "delaybridge")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

func TestLaunchWaitsForTheHTTPListenerAndStopEndsTheProcess(t *testing.T) {
	bin := fakeDaemon(t, `trap 'exit 0' TERM
echo "{\"msg\":\"http listening\",\"addr\":\"127.0.0.1:1\",\"redis\":\"$DELAYBRIDGE_REDIS_URL\"}" >&2
while :; do sleep 0.05; done
`)
	d, err := Launch(bin, map[string]string{"DELAYBRIDGE_REDIS_URL": "redis://x"})
	if err != nil {
		t.Fatal(err)
	}
	if d.Addr() != "127.0.0.1:1" {
		t.Errorf("addr %q, want 127.0.0.1:1", d.Addr())
	}
	if err := d.Stop(5 * time.Second); err != nil {
		t.Errorf("stop: %v", err)
	}
	if !strings.Contains(d.Log(), `"redis":"redis://x"`) {
		t.Errorf("log %q does not show the variable passed", d.Log())
	}
}

func TestLaunchReportsADaemonThatExitsBeforeServing(t *testing.T) {
	d, err := Launch(fakeDaemon(t, "echo 'bad config' >&2; exit 2\n"), nil)
	if err == nil || d == nil || !strings.Contains(err.Error(), "bad config") {
		t.Errorf("Launch = %v, %v; want the exit reported with the log", d, err)
	}
}
