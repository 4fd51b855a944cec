package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestTinyRateLimitIsRefused: a rate below flowstate.MinRate (1e-300 was
// accepted and stopped its topic silently: the limiter's waits overflowed
// or lasted years) is refused naming the variable and the minimum; the
// minimum itself is taken.
func TestTinyRateLimitIsRefused(t *testing.T) {
	for _, rate := range []string{"1e-300", "1e-9", "0.0009"} {
		setEnv(t, map[string]string{"TOPICS": "orders", "TOPIC_ORDERS_RATE_LIMIT": rate})
		_, err := Load()
		if err == nil {
			t.Fatalf("rate %s accepted", rate)
		}
		if diff := cmp.Diff([]string{Prefix + "_TOPIC_ORDERS_RATE_LIMIT"}, varsNamed(t, err)); diff != "" {
			t.Errorf("rate %s: variables named (-want +got):\n%s", rate, diff)
		}
		if p := fieldErrors(t, err)[0].Problem; !strings.Contains(p, "at least 0.001") {
			t.Errorf("rate %s: problem %q does not name the minimum", rate, p)
		}
	}
	setEnv(t, map[string]string{"TOPICS": "orders", "TOPIC_ORDERS_RATE_LIMIT": "0.001"})
	if _, err := Load(); err != nil {
		t.Errorf("the minimum refused: %v", err)
	}
}
