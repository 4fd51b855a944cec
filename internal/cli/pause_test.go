package cli

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/queue"
)

func TestPauseAndResumeCommandsStopAndRestartClaims(t *testing.T) {
	e := newCLIEnv(t)
	r, err := e.q.Schedule(e.ctx, e.orders, queue.Message{ID: "a", Body: []byte("x")}, queue.In(-time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if out := e.mustRun("", "pause", "orders", "--reason", "maintenance"); !strings.Contains(out, "paused orders (4 slots)") {
		t.Errorf("pause printed %q", out)
	}
	if c, _ := e.q.Claim(e.ctx, e.orders, r.Slot, 10, time.Minute); len(c.Messages) != 0 || !c.Paused {
		t.Fatalf("claim while paused = %+v", c)
	}
	var st struct {
		Topics []struct {
			Topic string
			Total struct {
				Paused      bool   `json:"paused"`
				PauseReason string `json:"pause_reason"`
			}
		}
	}
	if err := json.Unmarshal([]byte(e.mustRun("", "stats", "--json", "orders")), &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Topics) != 1 || !st.Topics[0].Total.Paused || st.Topics[0].Total.PauseReason != "maintenance" {
		t.Errorf("stats --json = %+v, want orders paused for maintenance", st)
	}
	var res map[string]any
	if err := json.Unmarshal([]byte(e.mustRun("", "resume", "orders", "--json")), &res); err != nil || res["resumed_slots"] != 4.0 {
		t.Errorf("resume --json = %v (%v), want 4 resumed slots", res, err)
	}
	if c, _ := e.q.Claim(e.ctx, e.orders, r.Slot, 10, time.Minute); len(c.Messages) != 1 {
		t.Errorf("claim after resume = %+v, want the message", c)
	}
	if out := e.mustRun("", "resume", "orders"); !strings.Contains(out, "was not paused") {
		t.Errorf("second resume printed %q", out)
	}
}

func TestPauseCommandErrors(t *testing.T) {
	newCLIEnv(t)
	e := newCLIEnv(t)
	for _, args := range [][]string{{"pause"}, {"pause", "nosuch"}, {"resume", "orders", "legacy"}, {"pause", "orders", "--bogus"}} {
		code, _, errs := e.run("", args...)
		if code != exitConfig || !strings.Contains(errs, "delaybridge "+args[0]+": ") {
			t.Errorf("%v: exit %d, stderr %q; want 2 with the problem", args, code, errs)
		}
	}
}
