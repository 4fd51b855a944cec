package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestTargetVerdicts(t *testing.T) {
	cases := []struct {
		got   float64
		op    string
		limit float64
		met   bool
	}{
		{50, "<=", 50, true},
		{50.01, "<=", 50, false},
		{99, "<", 100, true},
		{100, "<", 100, false},
		{0.9, ">=", 0.9, true},
		{0.899, ">=", 0.9, false},
		{math.NaN(), "<=", 50, false},
	}
	for _, c := range cases {
		var r Scenario
		r.target("x", c.got, c.op, c.limit, "")
		if r.Targets[0].Met != c.met {
			t.Errorf("%v %s %v: met %v, want %v", c.got, c.op, c.limit, r.Targets[0].Met, c.met)
		}
	}
}

func TestCostsDivideTheWindowByMessages(t *testing.T) {
	r := Scenario{DaemonCPU: 1.5, RedisCPU: 0.6, RedisWork: 60_000}
	c := r.costs(30_000)
	if c.DaemonCPUus != 50 || c.RedisCPUus != 20 || c.RedisCmds != 2 {
		t.Errorf("costs %+v, want 50 µs, 20 µs, 2 commands", *c)
	}
	if r.PerMessage != c {
		t.Error("costs did not record the per-message costs in the scenario")
	}
}

// TestStallOutcomeJudgesOnlyMessagesDueAfterTheStall: lateness is that of
// the messages due stallJudged after the restore, the drain time that of the
// last message due before it.
func TestStallOutcomeJudgesOnlyMessagesDueAfterTheStall(t *testing.T) {
	restored := time.UnixMilli(1_000_000_000)
	ms := func(d time.Duration) int64 { return restored.Add(d).UnixMilli() }
	check := func(lateAfter time.Duration, met bool) {
		t.Helper()
		tr := newTracker(4)
		// Due during the stall, delivered 700 ms after the restore.
		tr.got(body(0, ms(-5*time.Second), 64), restored.Add(700*time.Millisecond).UnixNano())
		// Due right after the restore, 1.5 s late: not judged.
		tr.got(body(1, ms(time.Second), 64), restored.Add(2500*time.Millisecond).UnixNano())
		// Due 2 s and 3 s after: judged.
		tr.got(body(2, ms(2*time.Second), 64), restored.Add(2*time.Second+5*time.Millisecond).UnixNano())
		tr.got(body(3, ms(3*time.Second), 64), restored.Add(3*time.Second+lateAfter).UnixNano())
		var r Scenario
		r.stallOutcome(tr, restored)
		if r.Lateness.Max != float64(lateAfter.Milliseconds()) {
			t.Errorf("max lateness %v ms, want %v", r.Lateness.Max, lateAfter.Milliseconds())
		}
		if r.DrainS != 0.7 {
			t.Errorf("drained after %v s, want 0.7", r.DrainS)
		}
		if r.Targets[0].Met != met {
			t.Errorf("%s late: target met %v, want %v", lateAfter, r.Targets[0].Met, met)
		}
	}
	check(150*time.Millisecond, true)
	check(300*time.Millisecond, false)
}

// TestMarkdownAddsCostsAndTargetsOnlyWhenMeasured: a results file with
// per-message costs and targets renders them after the main table; one
// without (older runs, bench/results.json today) renders the main table
// alone, as docs/performance.md shows it.
func TestMarkdownAddsCostsAndTargetsOnlyWhenMeasured(t *testing.T) {
	dir := t.TempDir()
	render := func(rep Report) string {
		t.Helper()
		b, err := json.Marshal(rep)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "r.json")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := printMarkdown(&out, path); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	plain := Scenario{Name: "steady", Messages: 6000, Throughput: 2000}
	if got := render(Report{Scenarios: []Scenario{plain}}); strings.Contains(got, "| target |") || strings.Contains(got, "daemon CPU (µs)") {
		t.Errorf("a run without costs rendered cost tables:\n%s", got)
	}
	withCosts := plain
	withCosts.DaemonCPU, withCosts.RedisCPU, withCosts.RedisWork = 0.75, 0.3, 30_000
	withCosts.costs(6000)
	withCosts.target("daemon CPU per message", withCosts.PerMessage.DaemonCPUus, "<=", 50, "µs")
	got := render(Report{Scenarios: []Scenario{withCosts}})
	for _, want := range []string{
		"| steady | 6000 | 125.0 | 50.0 | 5.00 | – | – | – | – |",
		"| steady | daemon CPU per message | <= 50 µs | 125 | missed |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("markdown lacks %q:\n%s", want, got)
		}
	}
}

// rate-limit-cost compares its two runs per message and per batch, and its
// Markdown shows both with their ratios.
func TestRateLimitCostComparesTheRunsPerMessageAndPerBatch(t *testing.T) {
	run := func(cpu float64, calls, batches int64) Scenario {
		r := Scenario{Messages: 10_000, Throughput: 20_000, DaemonCPU: cpu, RedisCPU: 0.1, RedisWork: 1000, RedisScriptCalls: calls, Batches: batches}
		r.costs(r.Messages)
		return r
	}
	free, limited := costRunOf(run(0.1, 60, 20)), costRunOf(run(0.12, 80, 20))
	if free.DaemonCPUus != 10 || free.ScriptCalls != 0.006 || free.ScriptCallsPerBatch != 3 || limited.ScriptCallsPerBatch != 4 {
		t.Fatalf("costs: unlimited %+v, limited %+v", free, limited)
	}
	c := &RateLimitCost{Unlimited: free, Limited: limited, Ratios: limited.over(free)}
	if c.Ratios.DaemonCPUus != 1.2 || c.Ratios.Throughput != 1 || c.Ratios.ScriptCallsPerBatch != 1.333 {
		t.Errorf("ratios %+v", c.Ratios)
	}
	var out bytes.Buffer
	printRateLimitCostMarkdown(&out, Report{Scenarios: []Scenario{{Name: "rate-limit-cost", RateLimitCost: c}}})
	for _, want := range []string{"| rate-limit-cost | unlimited | limited | limited / unlimited |", "| daemon CPU µs/msg | 10.00 | 12.00 | 1.20 |", "| Redis script calls/batch | 3.00 | 4.00 | 1.33 |"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, out.String())
		}
	}
}
