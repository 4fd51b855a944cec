package config

import (
	"strings"
	"testing"
)

// TestAPITokenHoldingAColonIsRefused: a token with a second ':' (or with
// a ':' followed by what no topic name can be) was cut silently at the
// first one, the rest taken as its topics; it is refused naming the
// variable. A scoped token still works.
func TestAPITokenHoldingAColonIsRefused(t *testing.T) {
	for _, tokens := range []string{"secret-0123456789:abc:def", "secret-0123456789:a/b=="} {
		setEnv(t, map[string]string{"TOPICS": "orders", "API_ADDR": ":8090", "API_TOKENS": tokens})
		_, err := Load()
		if err == nil || !strings.Contains(err.Error(), "DELAYBRIDGE_API_TOKENS") || !strings.Contains(err.Error(), "may not contain ':'") {
			t.Errorf("API_TOKENS=%q: Load = %v, want refused", tokens, err)
		}
	}
	setEnv(t, map[string]string{"TOPICS": "orders", "API_ADDR": ":8090", "API_TOKENS": "secret-0123456789:orders+order-events"})
	if _, err := Load(); err != nil {
		t.Errorf("a scoped token refused: %v", err)
	}
}
