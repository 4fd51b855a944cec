package config

import (
	"strings"
	"testing"
)

// TestShortAPITokenGivesOneClearProblem: a short token said it was too
// short and, beside it, that DELAYBRIDGE_API_TOKENS is required.
func TestShortAPITokenGivesOneClearProblem(t *testing.T) {
	t.Setenv("DELAYBRIDGE_TOPICS", "orders")
	t.Setenv("DELAYBRIDGE_API_ADDR", ":0")
	t.Setenv("DELAYBRIDGE_API_TOKENS", "short")
	_, err := Load()
	if err == nil || !strings.Contains(err.Error(), "shorter than") || strings.Contains(err.Error(), "is required") {
		t.Errorf("Load = %v, want only that the token is too short", err)
	}
}
