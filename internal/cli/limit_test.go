package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/delaybridge/delaybridge/flowstate"
)

func TestLimitCommandSetsShowsAndClearsRunTimeLimits(t *testing.T) {
	e := newCLIEnv(t)
	if out := e.mustRun("", "limit", "orders", "--rate", "300"); !strings.Contains(out, "rate limit 300/s") {
		t.Errorf("limit --rate printed %q", out)
	}
	e.mustRun("", "limit", "orders", "--hold-above", "none")
	o, err := flowstate.New(e.q).Limits(e.ctx, e.orders)
	if err != nil {
		t.Fatal(err)
	}
	if o.Rate == nil || *o.Rate != 300 || o.HoldAbove == nil || *o.HoldAbove != -1 {
		t.Fatalf("stored limits = %+v, want rate 300 and no hold", o)
	}
	var res map[string]any
	if err := json.Unmarshal([]byte(e.mustRun("", "limit", "orders", "--json")), &res); err != nil || res["rate"] != 300.0 || res["hold_above"] != "none" {
		t.Errorf("limit --json = %v (%v)", res, err)
	}
	if out := e.mustRun("", "stats", "orders"); !strings.Contains(out, "orders: rate limit 300/s (run time)") {
		t.Errorf("stats does not show the limit in force:\n%s", out)
	}
	var st struct {
		Topics []struct {
			Limits struct {
				Rate   float64 `json:"rate_limit"`
				Source string  `json:"source"`
			}
		}
	}
	if err := json.Unmarshal([]byte(e.mustRun("", "stats", "--json", "orders")), &st); err != nil || len(st.Topics) != 1 ||
		st.Topics[0].Limits.Rate != 300 || st.Topics[0].Limits.Source != "run time" {
		t.Errorf("stats --json = %+v (%v), want rate_limit 300 set at run time", st, err)
	}
	if out := e.mustRun("", "limit", "orders", "--off"); !strings.Contains(out, "the environment's apply") {
		t.Errorf("limit --off printed %q", out)
	}
	if o, err := flowstate.New(e.q).Limits(e.ctx, e.orders); err != nil || !o.IsZero() {
		t.Errorf("limits after --off = %+v, %v; want none", o, err)
	}
}

func TestLimitCommandErrors(t *testing.T) {
	e := newCLIEnv(t)
	for _, args := range [][]string{
		{"limit"}, {"limit", "nosuch", "--rate", "5"}, {"limit", "orders", "--rate", "0"}, {"limit", "orders", "--rate", "fast"},
		{"limit", "orders", "--hold-above", "-3"}, {"limit", "orders", "--off", "--rate", "5"},
	} {
		code, _, errs := e.run("", args...)
		if code != exitConfig || !strings.Contains(errs, "delaybridge limit: ") {
			t.Errorf("%v: exit %d, stderr %q; want 2 with the problem", args, code, errs)
		}
	}
}
