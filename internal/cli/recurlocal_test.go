package cli

import (
	"strings"
	"testing"
)

// TestRecurSetRefusesLocalZone: `recur set --tz Local` (any case) exits 2
// with a clear error and stores nothing: each replica would tick in its own
// machine's zone. It is refused before Redis is reached: with a Redis that
// cannot be reached the zone is still what the error names.
func TestRecurSetRefusesLocalZone(t *testing.T) {
	e := newCLIEnv(t)
	for _, tz := range []string{"Local", "local", "LOCAL"} {
		code, _, stderr := e.run("", "recur", "set", "orders", "hb", "@daily", "--tz", tz, "body")
		if code != exitConfig {
			t.Errorf("--tz %s: exit %d, want %d", tz, code, exitConfig)
		}
		if !strings.Contains(stderr, "zone \""+tz+"\"") || !strings.Contains(stderr, "IANA zone") {
			t.Errorf("--tz %s: stderr %q does not say why", tz, stderr)
		}
	}
	if rs, err := e.q.Recurrences(e.ctx, e.orders); err != nil || len(rs) != 0 {
		t.Errorf("stored: %v, %v", rs, err)
	}

	t.Setenv("DELAYBRIDGE_REDIS_URL", "redis://127.0.0.1:1/0")
	code, _, stderr := e.run("", "recur", "set", "orders", "hb", "@daily", "--tz", "Local", "body")
	if code != exitConfig || !strings.Contains(stderr, `zone "Local"`) || strings.Contains(stderr, "127.0.0.1:1") {
		t.Errorf("without Redis: exit %d, stderr %q; want %d naming the zone, not Redis", code, stderr, exitConfig)
	}
}
