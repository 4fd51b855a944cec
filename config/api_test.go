package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestAPIWithoutTokenIsRefusedNamingTheVariableUnlessInsecure(t *testing.T) {
	setEnv(t, map[string]string{"TOPICS": "orders", "API_ADDR": ":8090"})
	_, err := Load()
	if err == nil || !strings.Contains(err.Error(), "DELAYBRIDGE_API_TOKENS") || !strings.Contains(err.Error(), "DELAYBRIDGE_API_INSECURE") {
		t.Fatalf("Load = %v, want an error naming DELAYBRIDGE_API_TOKENS and the way out", err)
	}
	setEnv(t, map[string]string{"TOPICS": "orders", "API_ADDR": ":8090", "API_INSECURE": "true"})
	if _, err := Load(); err != nil {
		t.Fatalf("insecure on purpose: %v", err)
	}
	// No API address: no API, no token needed.
	setEnv(t, map[string]string{"TOPICS": "orders"})
	c, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.API.Check(); err == nil || !strings.Contains(err.Error(), "DELAYBRIDGE_API_TOKENS") {
		t.Errorf("Check (delaybridge api) = %v", err)
	}
}

func TestAPITokensReadFromFileWithTheirTopics(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(path, []byte("a-long-enough-token-1:orders+reminders,a-long-enough-token-2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	setEnv(t, map[string]string{"TOPICS": "orders", "API_ADDR": "127.0.0.1:0", "API_TOKENS_FILE": path})
	c, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	want := []APIToken{{Token: "a-long-enough-token-1", Topics: []string{"orders", "reminders"}}, {Token: "a-long-enough-token-2"}}
	if diff := cmp.Diff(want, c.API.Tokens); diff != "" {
		t.Errorf("tokens (-want +got):\n%s", diff)
	}
	if r := c.Redacted()["DELAYBRIDGE_API_TOKENS"]; strings.Contains(r, "a-long-enough") {
		t.Errorf("tokens are not redacted: %q", r)
	}
}

func TestAPITokensRefusedWithoutShowingThem(t *testing.T) {
	for _, tokens := range []string{"short", "a-long-enough-token-1:", "a-long-enough-token-1,a-long-enough-token-1", "a long enough token with spaces"} {
		setEnv(t, map[string]string{"TOPICS": "orders", "API_ADDR": ":8090", "API_TOKENS": tokens})
		_, err := Load()
		if err == nil || !strings.Contains(err.Error(), "DELAYBRIDGE_API_TOKENS") {
			t.Errorf("API_TOKENS=%q: Load = %v", tokens, err)
			continue
		}
		if strings.Contains(err.Error(), "a-long-enough") || strings.Contains(err.Error(), "short") && tokens == "short" && strings.Contains(err.Error(), `"short"`) {
			t.Errorf("the error shows the token: %v", err)
		}
	}
	setEnv(t, map[string]string{"TOPICS": "orders", "API_ADDR": "nope", "API_TLS_CERT_FILE": "/nonexistent", "API_INSECURE": "true"})
	_, err := Load()
	for _, v := range []string{"DELAYBRIDGE_API_ADDR", "DELAYBRIDGE_API_TLS_CERT_FILE"} {
		if err == nil || !strings.Contains(err.Error(), v) {
			t.Errorf("Load = %v, want it to name %s", err, v)
		}
	}
}
