package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/delaybridge/delaybridge/queue"
)

// TestRawMessageIsNamedTheSameWayInEveryCommand: schedule printed an id
// that get refused ("topic is not in envelope format"), get wanted
// --member-file where cancel wanted the member as an argument. Now get,
// reschedule and cancel take --id (found by a bounded scan on a raw topic),
// --member and --member-file alike, and an id that names nothing says how
// else to name the message.
func TestRawMessageIsNamedTheSameWayInEveryCommand(t *testing.T) {
	e := newCLIEnv(t)
	body := `{"order":42}`
	id := queue.MessageID([]byte(body))
	if out := e.mustRun("", "schedule", "legacy", "--in", "1h", body); !strings.Contains(out, id) {
		t.Fatalf("schedule printed %q, want the id %s", out, id)
	}
	if out := e.mustRun("", "get", "legacy", "--id", id); !strings.Contains(out, "scheduled") {
		t.Errorf("get --id on a raw topic: %s", out)
	}
	if out := e.mustRun("", "get", "legacy", "--member", body); !strings.Contains(out, "scheduled") {
		t.Errorf("get --member: %s", out)
	}
	if out := e.mustRun("", "reschedule", "legacy", "--id", id, "--in", "2h"); !strings.Contains(out, "rescheduled") {
		t.Errorf("reschedule --id on a raw topic: %s", out)
	}
	file := filepath.Join(t.TempDir(), "member")
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	if out := e.mustRun("", "cancel", "legacy", "--member-file", file); !strings.Contains(out, "cancelled") {
		t.Errorf("cancel --member-file: %s", out)
	}
	for _, cmd := range [][]string{
		{"get", "legacy", "--id", id},
		{"cancel", "legacy", "--id", id},
		{"reschedule", "legacy", "--id", id, "--in", "1h"},
	} {
		code, out, errs := e.run("", cmd...)
		if code != exitFail || !strings.Contains(errs, "--member or --member-file") {
			t.Errorf("%v of a cancelled raw message: exit %d, want 1 naming --member and --member-file\nstdout: %s\nstderr: %s", cmd, code, out, errs)
		}
	}
	if code, _, errs := e.run("", "get", "legacy", "--id", id, "--member", body); code != exitConfig || !strings.Contains(errs, "exactly one of --id, --member or --member-file") {
		t.Errorf("get with two names: exit %d, want 2\nstderr: %s", code, errs)
	}
}
