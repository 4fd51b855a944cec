package cli

import (
	"strings"
	"testing"
)

// TestUnreachableRedisIsNamedWithItsVariable: with nothing listening at
// DELAYBRIDGE_REDIS_URL, a command's error names Redis, the address, the
// variable and check, not only "load registry …: connection refused".
func TestUnreachableRedisIsNamedWithItsVariable(t *testing.T) {
	e := newCLIEnv(t)
	t.Setenv("DELAYBRIDGE_REDIS_URL", "redis://127.0.0.1:1")
	code, _, stderr := e.run("", "stats", "orders")
	for _, want := range []string{"Redis at 127.0.0.1:1 does not answer", "DELAYBRIDGE_REDIS_URL", "delaybridge check"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if code != exitFail {
		t.Errorf("exit %d, want %d", code, exitFail)
	}
}
