package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestShortConsoleTokenIsRefused: a console token shorter than the API's
// minimum (a 1-character one was accepted) is refused naming the variable,
// without showing the token.
func TestShortConsoleTokenIsRefused(t *testing.T) {
	setEnv(t, map[string]string{"TOPICS": "orders", "CONSOLE_TOKEN": "x"})
	_, err := Load()
	if err == nil {
		t.Fatal("a 1-character console token accepted")
	}
	if diff := cmp.Diff([]string{Prefix + "_CONSOLE_TOKEN"}, varsNamed(t, err)); diff != "" {
		t.Errorf("variables named (-want +got):\n%s", diff)
	}
	if p := fieldErrors(t, err)[0].Problem; !strings.Contains(p, "shorter than 16") {
		t.Errorf("problem %q does not name the minimum", p)
	}
	setEnv(t, map[string]string{"TOPICS": "orders", "CONSOLE_TOKEN": strings.Repeat("k", MinAPITokenLen)})
	if _, err := Load(); err != nil {
		t.Errorf("a token of the minimum length refused: %v", err)
	}
}
