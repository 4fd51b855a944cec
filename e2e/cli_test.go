package e2e

import (
	"bytes"
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/delaybridge/delaybridge/internal/testing/e2etest"
)

// TestCheckOfAnUnreachableRedisSaysItOnce: go-redis's own pool lines
// ("redis: … pool.go:…: failed to dial after 5 attempts") came before
// check's clear line; a one-shot command says it once, in its own words.
func TestCheckOfAnUnreachableRedisSaysItOnce(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(binary, "check")
	cmd.Env = append(e2etest.CleanEnv(),
		"DELAYBRIDGE_REDIS_URL=redis://127.0.0.1:1",
		"DELAYBRIDGE_AMQP_URL="+e2etest.AMQPURL(),
		"DELAYBRIDGE_TOPICS=orders",
	)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(stdout.String(), "redis: FAILED") {
		t.Fatalf("check of an unreachable Redis: %v, want exit 1 saying redis FAILED\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	if strings.Contains(stderr.String(), "pool.go") {
		t.Errorf("go-redis's pool lines reached the user:\n%s", stderr.String())
	}
}
