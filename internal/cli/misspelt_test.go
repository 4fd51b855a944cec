package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/internal/testing/redistest"
)

// TestRunSuggestsAMisspeltVariableWhenTheConfigurationFails: with
// DELAYBRIDGE_TOPIC (required: DELAYBRIDGE_TOPICS) and DELAYBRIDGE_REDIS_ULR,
// run exits 2 and says which variables were meant. Before, only check said
// so, and only when the rest of the configuration was valid.
func TestRunSuggestsAMisspeltVariableWhenTheConfigurationFails(t *testing.T) {
	t.Setenv("DELAYBRIDGE_TOPIC", "orders")
	t.Setenv("DELAYBRIDGE_REDIS_ULR", "redis://127.0.0.1:6379")
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	code := dispatch(ctx, []string{"run"}, stdio{in: strings.NewReader(""), out: &out, err: &errb})
	if code != exitConfig {
		t.Errorf("exit %d, want %d", code, exitConfig)
	}
	for _, want := range []string{"DELAYBRIDGE_REDIS_ULR is not a variable: did you mean DELAYBRIDGE_REDIS_URL?",
		"DELAYBRIDGE_TOPIC is not a variable: did you mean DELAYBRIDGE_TOPICS?"} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, errb.String())
		}
	}
}

// TestScheduleSuggestsAMisspeltVariable: schedule read its configuration
// without a word about a variable nothing reads; like check and run it
// names the variable meant, and still schedules.
func TestScheduleSuggestsAMisspeltVariable(t *testing.T) {
	_, prefix := redistest.New(t)
	t.Setenv("DELAYBRIDGE_REDIS_URL", redistest.URL())
	t.Setenv("DELAYBRIDGE_KEY_PREFIX", prefix)
	t.Setenv("DELAYBRIDGE_TOPICS", "orders")
	t.Setenv("DELAYBRIDGE_LOG_LEVLE", "debug")
	e := &cliEnv{t: t, ctx: context.Background()}
	code, out, errs := e.run("", "schedule", "orders", "--in", "1h", "hello")
	if code != exitOK {
		t.Fatalf("schedule: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	if want := "DELAYBRIDGE_LOG_LEVLE is not used by this configuration: did you mean DELAYBRIDGE_LOG_LEVEL?"; !strings.Contains(errs, want) {
		t.Errorf("stderr lacks %q:\n%s", want, errs)
	}
}
