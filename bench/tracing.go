package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// tracingRounds is how many times tracing measures off and on: one
// round's difference moves by ±5 µs on the 2-core VM (the scheduler's
// spinning, the garbage collector's timing), so the median of 5 rather
// than 3.
const tracingRounds = 5

// tracingFor is how long each of tracing's runs lets messages fall due:
// steady's, 3 s (6,000 messages) with -quick and 15 s (30,000) at full size,
// so that the off runs are steady's runs and compare with its row. A run
// costs about 2 s more than that (its daemon's start and stop, the lead
// before the first message and the drain after the last): the ten runs take
// about 50 s with -quick and 2.8 minutes at full size on the 2-core VM.
func tracingFor(o options) time.Duration { return o.sizes.steadyFor }

// tracingVars decide whether a daemon traces: set for every daemon (by the
// bench's own environment, which the daemons inherit, or by -daemon-env,
// which wins over a scenario's variables), they would make the off runs
// trace or the on runs export elsewhere or sample otherwise.
var tracingVars = []string{
	"OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER",
	"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
	"OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG",
}

// tracingPreset is which of tracingVars environ (NAME=value) and daemonEnv
// (-daemon-env) set for every daemon.
func tracingPreset(environ, daemonEnv []string) []string {
	var out []string
	for _, kv := range slices.Concat(environ, daemonEnv) {
		name, _, _ := strings.Cut(kv, "=")
		if slices.Contains(tracingVars, name) && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}

// tracingOnFirst is whether round i (from 0) runs tracing on before off:
// the order alternates (off,on / on,off / off,on ...) so that a drift of
// the machine's load favours neither side.
func tracingOnFirst(i int) bool { return i%2 == 1 }

// runTracing: what tracing costs the daemon per message (issue #41: every
// message sampled costs at most 15 µs of daemon CPU more than tracing off).
// steady's traffic (steadyRate msg/s, each message due at its own
// millisecond) runs tracingRounds times with tracing off and on, the order
// alternating, each run through a daemon of its own. On is
// OTEL_TRACES_SAMPLER=always_on with OTLP/HTTP to an endpoint in the bench
// (otlpSink), the batch span processor at its defaults; off sets no OTEL_
// variable. An on run whose spans did not arrive, or an off run that
// exported, fails the scenario. The row is tracing on: the medians of its
// runs; Tracing has every run.
func runTracing(ctx context.Context, e *env) (Scenario, error) {
	r := Scenario{Ceiling: float64(e.o.sizes.steadyRate)}
	if set := tracingPreset(os.Environ(), e.o.daemonEnv); len(set) > 0 {
		return r, fmt.Errorf("%s set for every daemon (the bench's environment or -daemon-env): the off and on runs would not differ as the scenario says; unset them",
			strings.Join(set, ", "))
	}
	sink, err := startOTLPSink()
	if err != nil {
		return r, err
	}
	defer sink.close()
	on := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": sink.endpoint(), "OTEL_TRACES_SAMPLER": "always_on"}
	tc := &TracingCost{Sampler: "always_on"}
	for i := range tracingRounds {
		round := TracingRound{Round: i + 1, OnFirst: tracingOnFirst(i)}
		for _, traced := range []bool{round.OnFirst, !round.OnFirst} {
			run, notes, err := e.tracingRun(ctx, sink, round.Round, traced, on)
			r.Notes = append(r.Notes, notes...)
			if err != nil {
				return r, fmt.Errorf("round %d, tracing %s: %w", round.Round, onOff(traced), err)
			}
			if traced {
				round.On = run
			} else {
				round.Off = run
			}
		}
		round.OnMinusOffus = round2(round.On.DaemonCPUus - round.Off.DaemonCPUus)
		tc.Rounds = append(tc.Rounds, round)
	}
	tc.summarize()
	r.tracingVerdict(tc, e.steadyRun)
	return r, nil
}

// tracingRun is one of tracing's runs: steady through a daemon with the
// variables on when traced, and what the sink received meanwhile. The notes
// are the run's own, but for its noise (in the run) and histograms.
func (e *env) tracingRun(ctx context.Context, sink *otlpSink, round int, traced bool, on map[string]string) (TracingRun, []string, error) {
	var extra map[string]string
	if traced {
		extra = on
	}
	before := sink.counts()
	one, err := e.steadyThrough(ctx, fmt.Sprintf("tracing-%d-%s", round, onOff(traced)), 0, tracingFor(e.o), extra, nil)
	// steadyThrough stopped the daemon, which flushed its spans first.
	got := sink.counts().minus(before)
	run := TracingRun{Messages: one.Messages, Throughput: one.Throughput, DaemonCPU: one.DaemonCPU,
		Lateness: one.Lateness, Early: one.Early, Lost: one.Lost, Duplicates: one.Duplicates, DaemonRSS: one.DaemonRSS,
		Exports: got.Requests, ExportBytes: got.Bytes, Spans: got.Spans}
	if p := one.PerMessage; p != nil {
		run.DaemonCPUus, run.RedisCPUus, run.RedisCmds = p.DaemonCPUus, p.RedisCPUus, p.RedisCmds
	}
	label := fmt.Sprintf("round %d, tracing %s", round, onOff(traced))
	var notes []string
	for _, n := range one.Notes {
		switch {
		case strings.HasPrefix(n, "machine noise"):
			run.Noise = n
		case strings.HasPrefix(n, "daemon's own histograms"):
		default:
			notes = append(notes, label+": "+n)
		}
	}
	if got.Bad > 0 {
		notes = append(notes, fmt.Sprintf("%s: the OTLP endpoint refused %d requests", label, got.Bad))
	}
	if err != nil {
		return run, notes, err
	}
	switch {
	case traced && got.Requests == 0:
		return run, notes, errNoExport
	case !traced && got.Requests > 0:
		return run, notes, fmt.Errorf("tracing off, yet the bench's OTLP endpoint received %d exports", got.Requests)
	case traced && got.Spans < int64(run.Messages):
		notes = append(notes, fmt.Sprintf("%s: %d spans arrived for %d messages: the daemon dropped spans (its batch span processor's queue was full), so this run's cost is understated", label, got.Spans, run.Messages))
	}
	fmt.Fprintf(os.Stderr, "   %s: daemon %.1f µs/msg, p99 %.1f ms, %d exports, %d spans, %.0f KiB\n", label, run.DaemonCPUus, run.Lateness.P99, got.Requests, got.Spans, float64(got.Bytes)/1024)
	return run, notes, nil
}

// errNoExport is a tracing-on run whose spans never reached the sink.
var errNoExport = errors.New("the bench's OTLP endpoint received no export")

func onOff(traced bool) string {
	if traced {
		return "on"
	}
	return "off"
}

// TracingCost is the tracing scenario's runs and their medians.
type TracingCost struct {
	// Sampler is OTEL_TRACES_SAMPLER of the on runs.
	Sampler string         `json:"sampler"`
	Rounds  []TracingRound `json:"rounds"`
	// The medians of the off and the on runs' daemon CPU per message (µs)
	// and lateness p99 (ms); OnMinusOffus is the median of the rounds'
	// differences (on − off of the same round), not the difference of the
	// medians.
	OffDaemonCPUus float64 `json:"off_daemon_cpu_us"`
	OnDaemonCPUus  float64 `json:"on_daemon_cpu_us"`
	OnMinusOffus   float64 `json:"on_minus_off_daemon_cpu_us"`
	OffP99         float64 `json:"off_lateness_p99_ms"`
	OnP99          float64 `json:"on_lateness_p99_ms"`
}

// TracingRound is one off run and one on run, in the order OnFirst says.
type TracingRound struct {
	Round        int        `json:"round"`
	OnFirst      bool       `json:"on_first"`
	Off          TracingRun `json:"off"`
	On           TracingRun `json:"on"`
	OnMinusOffus float64    `json:"on_minus_off_daemon_cpu_us"`
}

// TracingRun is one steady run of the tracing scenario. Exports,
// ExportBytes and Spans are what the bench's OTLP endpoint received from
// its daemon (0 when tracing was off).
type TracingRun struct {
	Messages    int      `json:"messages"`
	Throughput  float64  `json:"throughput"`
	DaemonCPU   float64  `json:"daemon_cpu_s"`
	DaemonCPUus float64  `json:"daemon_cpu_us"`
	RedisCPUus  float64  `json:"redis_cpu_us"`
	RedisCmds   float64  `json:"redis_cmds"`
	Lateness    Lateness `json:"lateness_ms"`
	Early       int      `json:"early"`
	Lost        int      `json:"lost"`
	Duplicates  int      `json:"duplicates"`
	DaemonRSS   int64    `json:"daemon_rss_bytes"`
	Exports     int64    `json:"exports,omitempty"`
	ExportBytes int64    `json:"export_bytes,omitempty"`
	Spans       int64    `json:"spans,omitempty"`
	Noise       string   `json:"noise,omitempty"` // the machine's noise line during the run
}

// summarize computes tc's medians from its rounds.
func (tc *TracingCost) summarize() {
	of := func(f func(TracingRound) float64) float64 {
		vs := make([]float64, len(tc.Rounds))
		for i, r := range tc.Rounds {
			vs[i] = f(r)
		}
		return medianOf(vs)
	}
	tc.OffDaemonCPUus = of(func(r TracingRound) float64 { return r.Off.DaemonCPUus })
	tc.OnDaemonCPUus = of(func(r TracingRound) float64 { return r.On.DaemonCPUus })
	tc.OnMinusOffus = of(func(r TracingRound) float64 { return r.OnMinusOffus })
	tc.OffP99 = of(func(r TracingRound) float64 { return r.Off.Lateness.P99 })
	tc.OnP99 = of(func(r TracingRound) float64 { return r.On.Lateness.P99 })
}

// medianOf is the median of vs (the mean of the middle two of an even
// count; 0 for none), rounded to 0.01.
func medianOf(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	s := slices.Clone(vs)
	slices.SortFunc(s, cmp.Compare[float64])
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + m) / 2
	}
	return round2(m)
}

// tracingVerdict fills r from tc: the row is tracing on (medians of its
// runs; early, lost and duplicates the sums of every run, peak RSS the
// highest), and records issue #41's target and every daemon's.
func (r *Scenario) tracingVerdict(tc *TracingCost, steady *Scenario) {
	r.Tracing = tc
	var on []TracingRun
	var diffs []string
	for _, rd := range tc.Rounds {
		on = append(on, rd.On)
		diffs = append(diffs, fmt.Sprintf("%+.1f", rd.OnMinusOffus))
		for _, run := range []TracingRun{rd.Off, rd.On} {
			r.Early += run.Early
			r.Lost += run.Lost
			r.Duplicates += run.Duplicates
			r.DaemonRSS = max(r.DaemonRSS, run.DaemonRSS)
		}
	}
	med := func(f func(TracingRun) float64) float64 {
		vs := make([]float64, len(on))
		for i, run := range on {
			vs[i] = f(run)
		}
		return medianOf(vs)
	}
	if len(on) > 0 {
		r.Messages = on[0].Messages
	}
	r.Throughput = med(func(t TracingRun) float64 { return t.Throughput })
	r.Ratio = ratio(r.Throughput, r.Ceiling)
	r.Lateness = Lateness{P50: med(func(t TracingRun) float64 { return t.Lateness.P50 }), P99: tc.OnP99,
		P999: med(func(t TracingRun) float64 { return t.Lateness.P999 }), Max: med(func(t TracingRun) float64 { return t.Lateness.Max })}
	r.DaemonCPU = med(func(t TracingRun) float64 { return t.DaemonCPU })
	r.PerMessage = &Costs{Messages: r.Messages, DaemonCPUus: tc.OnDaemonCPUus, RedisCPUus: med(func(t TracingRun) float64 { return t.RedisCPUus }),
		RedisCmds: med(func(t TracingRun) float64 { return t.RedisCmds })}
	r.Notes = append(r.Notes, fmt.Sprintf("the row is tracing on (OTEL_TRACES_SAMPLER=%s, OTLP/HTTP to the bench): medians of its %d runs, each lateness percentile on its own; off's medians: daemon %.1f µs/msg, p99 %.1f ms",
		tc.Sampler, len(on), tc.OffDaemonCPUus, tc.OffP99))
	if steady != nil && steady.PerMessage != nil && steady.Messages == r.Messages {
		r.Notes = append(r.Notes, fmt.Sprintf("steady in the same run (same size, tracing off): daemon %.1f µs/msg", steady.PerMessage.DaemonCPUus))
	}
	r.target("tracing on − off daemon CPU per message", tc.OnMinusOffus, "<=", 15, "µs",
		fmt.Sprintf("median of the rounds' differences %s µs; medians off %.1f, on %.1f µs", strings.Join(diffs, ", "), tc.OffDaemonCPUus, tc.OnDaemonCPUus))
	r.checkAlways()
}

// tracingRows are tc's rounds and medians as table rows.
func (tc *TracingCost) rows() [][]string {
	var rows [][]string
	for _, rd := range tc.Rounds {
		order := "off, on"
		if rd.OnFirst {
			order = "on, off"
		}
		spans := "–"
		if rd.On.Messages > 0 {
			spans = fmt.Sprintf("%.2f", float64(rd.On.Spans)/float64(rd.On.Messages))
		}
		rows = append(rows, []string{fmt.Sprint(rd.Round), order,
			fmt.Sprintf("%.1f", rd.Off.DaemonCPUus), fmt.Sprintf("%.1f", rd.On.DaemonCPUus), fmt.Sprintf("%+.1f", rd.OnMinusOffus),
			fmt.Sprintf("%.1f", rd.Off.Lateness.P99), fmt.Sprintf("%.1f", rd.On.Lateness.P99),
			fmt.Sprint(rd.On.Exports), spans, fmt.Sprintf("%d / %d", rd.Off.Early+rd.On.Early, rd.Off.Lost+rd.On.Lost)})
	}
	return append(rows, []string{"median", "",
		fmt.Sprintf("%.1f", tc.OffDaemonCPUus), fmt.Sprintf("%.1f", tc.OnDaemonCPUus), fmt.Sprintf("%+.1f", tc.OnMinusOffus),
		fmt.Sprintf("%.1f", tc.OffP99), fmt.Sprintf("%.1f", tc.OnP99), "", "", ""})
}

var tracingHeader = []string{"round", "order", "off daemon µs/msg", "on daemon µs/msg", "on − off µs", "off p99 ms", "on p99 ms", "exports", "spans/msg", "early / lost"}

// printTracing prints the tracing scenario's rounds, if rs has it.
func printTracing(w io.Writer, rs []Scenario) {
	for _, r := range rs {
		tc := r.Tracing
		if tc == nil {
			continue
		}
		fmt.Fprintf(w, "\n%s: daemon CPU per message, tracing off vs on (%s, OTLP/HTTP to the bench):\n", r.Name, tc.Sampler)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, strings.Join(tracingHeader, "\t")+"\t")
		for _, row := range tc.rows() {
			fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
		}
		tw.Flush()
	}
}

// printTracingMarkdown is printTracing as a Markdown table; nothing when
// rep has no tracing run.
func printTracingMarkdown(w io.Writer, rep Report) {
	for _, r := range rep.Scenarios {
		if tc := r.Tracing; tc != nil {
			var rows []string
			for _, row := range tc.rows() {
				rows = append(rows, markdownRow(row))
			}
			align := "| --- | --- |" + strings.Repeat(" ---: |", len(tracingHeader)-2)
			markdownTable(w, rows, "| "+r.Name+" "+strings.Join(tracingHeader, " | ")+" |", align)
		}
	}
}
