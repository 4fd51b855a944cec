package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/delaybridge/delaybridge/queue"
)

func TestRecurCommandsSetListAndRemove(t *testing.T) {
	e := newCLIEnv(t)
	out := e.mustRun("", "recur", "set", "orders", "daily-digest", "0 9 * * *", "--tz", "Europe/Berlin",
		"--header", "tenant=eu", "--routing-key", "digests", "--key", "eu", `{"kind":"digest"}`)
	if !strings.Contains(out, "recurrence daily-digest on orders") || !strings.Contains(out, "first tick") {
		t.Errorf("set printed %q", out)
	}
	e.mustRun("beat", "recur", "set", "legacy", "hb", "@every 1s")
	rs, err := e.q.Recurrences(e.ctx, e.orders)
	if err != nil || len(rs) != 1 {
		t.Fatalf("Recurrences = %v, %v", rs, err)
	}
	want := queue.Recurrence{ID: "daily-digest", Spec: "0 9 * * *", Zone: "Europe/Berlin",
		Message: queue.Message{Body: []byte(`{"kind":"digest"}`), Headers: map[string]string{"tenant": "eu"}, RoutingKey: "digests", Key: "eu"}}
	if d := cmp.Diff(want, rs[0].Recurrence, cmpopts.EquateEmpty()); d != "" {
		t.Errorf("stored (-want +got):\n%s", d)
	}

	var j recurJSON
	if err := json.Unmarshal([]byte(e.mustRun("", "recur", "ls", "--json", "legacy")), &j); err != nil {
		t.Fatal(err)
	}
	if j.ID != "hb" || j.Spec != "@every 1s" || j.Zone != "UTC" || j.Next == nil || j.Last != nil || j.BodyBytes != 4 {
		t.Errorf("ls --json = %+v", j)
	}
	if out := e.mustRun("", "recur", "ls", "orders"); !strings.Contains(out, "daily-digest") || !strings.Contains(out, "Europe/Berlin") {
		t.Errorf("ls printed %q", out)
	}

	e.mustRun("", "recur", "rm", "orders", "daily-digest")
	if code, _, _ := e.run("", "recur", "rm", "orders", "daily-digest"); code != exitFail {
		t.Errorf("second rm exit %d, want %d", code, exitFail)
	}
	if rs, _ := e.q.Recurrences(e.ctx, e.orders); len(rs) != 0 {
		t.Errorf("left after rm: %v", rs)
	}
}

func TestRecurCommandUsageErrorsExitTwo(t *testing.T) {
	e := newCLIEnv(t)
	for _, args := range [][]string{
		{"recur"},
		{"recur", "frob"},
		{"recur", "set", "orders", "x"},
		{"recur", "set", "orders", "x", "61 * * * *", "body"},
		{"recur", "set", "orders", "x", "@every 10ms", "body"},
		{"recur", "set", "orders", "x", "@daily", "--tz", "Nowhere/Else", "body"},
		{"recur", "set", "orders", "x", "@daily", "--header", "x-delaybridge-due=1", "body"},
		{"recur", "rm", "orders"},
		{"recur", "ls"},
	} {
		if code, _, errs := e.run("", args...); code != exitConfig {
			t.Errorf("%v: exit %d, want %d (%s)", args, code, exitConfig, errs)
		}
	}
	if code, out, _ := e.run("", "recur", "--help"); code != exitOK || !strings.Contains(out, "@every") {
		t.Errorf("recur --help: exit %d, %q", code, out)
	}
}

func TestStatsCountsRecurrences(t *testing.T) {
	e := newCLIEnv(t)
	e.mustRun("", "recur", "set", "orders", "a", "@daily", "x")
	e.mustRun("", "recur", "set", "orders", "b", "@hourly", "x")
	if out := e.mustRun("", "stats"); !strings.Contains(out, "recurring (delaybridge recur ls TOPIC): orders 2") {
		t.Errorf("stats printed:\n%s", out)
	}
	var res struct {
		Topics []struct {
			Total struct {
				Recurring int64 `json:"recurring"`
			} `json:"total"`
		} `json:"topics"`
	}
	out := e.mustRun("", "stats", "--json", "orders")
	if err := json.Unmarshal([]byte(out), &res); err != nil || len(res.Topics) != 1 || res.Topics[0].Total.Recurring != 2 {
		t.Errorf("stats --json: %v\n%s", err, out)
	}
}
