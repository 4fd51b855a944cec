package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

func TestTracingAlternatesTheOrderOfItsRounds(t *testing.T) {
	var got []string
	for i := range tracingRounds {
		first, second := "off", "on"
		if tracingOnFirst(i) {
			first, second = second, first
		}
		got = append(got, first+","+second)
	}
	if want := []string{"off,on", "on,off", "off,on", "on,off", "off,on"}; !slices.Equal(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
}

func TestMedianOf(t *testing.T) {
	for _, c := range []struct {
		vs   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{5}, 5},
		{[]float64{9, 1, 5}, 5},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{-3, 20, 7}, 7},
	} {
		if got := medianOf(c.vs); got != c.want {
			t.Errorf("medianOf(%v) = %v, want %v", c.vs, got, c.want)
		}
	}
}

// TestTracingComparesRunsOfTheSameRound: on − off is the median of the
// rounds' own differences, not the difference of the medians, and the
// verdict records issue #41's target with early and lost of every run.
func TestTracingComparesRunsOfTheSameRound(t *testing.T) {
	run := func(us, p99 float64) TracingRun {
		return TracingRun{Messages: 6000, Throughput: 2000, DaemonCPUus: us, Lateness: Lateness{P99: p99}, DaemonRSS: 20 << 20}
	}
	tc := &TracingCost{Sampler: "always_on", Rounds: []TracingRound{
		{Round: 1, Off: run(100, 2), On: run(130, 3)},                  // +30
		{Round: 2, OnFirst: true, Off: run(140, 2.5), On: run(150, 4)}, // +10
		{Round: 3, Off: run(120, 1), On: run(132, 2)},                  // +12
	}}
	for i := range tc.Rounds {
		tc.Rounds[i].OnMinusOffus = tc.Rounds[i].On.DaemonCPUus - tc.Rounds[i].Off.DaemonCPUus
	}
	tc.Rounds[2].Off.Lost = 1
	tc.summarize()
	if tc.OffDaemonCPUus != 120 || tc.OnDaemonCPUus != 132 || tc.OnMinusOffus != 12 || tc.OffP99 != 2 || tc.OnP99 != 3 {
		t.Fatalf("summary %+v; want off 120, on 132, on − off 12 (not 132 − 120 by chance: the rounds' +30, +10, +12), p99 2 and 3", tc)
	}
	var r Scenario
	r.Ceiling = 2000
	r.tracingVerdict(tc, nil)
	if r.Messages != 6000 || r.PerMessage.DaemonCPUus != 132 || r.Lost != 1 || r.Lateness.P99 != 3 || r.Ratio != 1 {
		t.Errorf("row: messages %d, per message %+v, lost %d, p99 %v, ratio %v", r.Messages, r.PerMessage, r.Lost, r.Lateness.P99, r.Ratio)
	}
	met := map[string]bool{}
	for _, tg := range r.Targets {
		met[tg.What] = tg.Met
	}
	if !met["tracing on − off daemon CPU per message"] || met["lost"] || !met["early"] {
		t.Errorf("targets %+v: want on − off (12 µs) met, lost missed, early met", r.Targets)
	}
	var out bytes.Buffer
	printTracing(&out, []Scenario{r})
	for _, want := range []string{"on, off", "+30.0", "median", "+12.0"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("printed table lacks %q:\n%s", want, out.String())
		}
	}
}

func TestTracingRefusesTracingVariablesSetForEveryDaemon(t *testing.T) {
	got := tracingPreset([]string{"HOME=/root", "OTEL_SERVICE_NAME=x", "OTEL_TRACES_SAMPLER=always_off"},
		[]string{"OTEL_BSP_SCHEDULE_DELAY=100", "OTEL_EXPORTER_OTLP_ENDPOINT=http://x:4318", "OTEL_TRACES_SAMPLER=always_on"})
	if want := []string{"OTEL_TRACES_SAMPLER", "OTEL_EXPORTER_OTLP_ENDPOINT"}; !slices.Equal(got, want) {
		t.Errorf("tracingPreset = %v, want %v (OTEL_SERVICE_NAME and OTEL_BSP_* apply to both sides alike)", got, want)
	}
}
