package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Scenario is the outcome of one scenario, as written to results.json.
type Scenario struct {
	Name     string `json:"name"`
	Messages int    `json:"messages"`
	// Throughput is messages received per second: for a burst from the due
	// time to the last receipt, for steady traffic over the span of due times.
	Throughput float64 `json:"throughput"`
	// Ceiling is what Throughput is compared with (see Ceilings for each raw
	// measurement); Ratio is Throughput / Ceiling.
	Ceiling  float64  `json:"ceiling"`
	Ratio    float64  `json:"ratio"`
	Lateness Lateness `json:"lateness_ms"`
	// Early counts messages received before their due time; Lost those never
	// received; Duplicates the extra receipts.
	Early      int `json:"early"`
	Lost       int `json:"lost"`
	Duplicates int `json:"duplicates"`
	// DaemonCPU is the CPU time the daemon used during the scenario's
	// window; DaemonRSS its peak resident set (VmHWM) since it started.
	DaemonCPU float64 `json:"daemon_cpu_s"`
	DaemonRSS int64   `json:"daemon_rss_bytes"`
	// RedisCmds is Redis's total_commands_processed per second during the
	// window: every command of every client, commands run inside Lua
	// scripts included. RedisCalls counts only the commands clients sent
	// (a script call is one). In idle both are the daemon's alone.
	RedisCmds  float64 `json:"redis_cmds_per_s"`
	RedisCalls float64 `json:"redis_calls_per_s"`
	// DrainS is, in kafka-stall, how long after the stall ended every
	// message due before its end had arrived.
	DrainS float64 `json:"drain_s,omitempty"`
	// RedisCPU is the CPU time (s) Redis reports it used during the window
	// (INFO cpu: used_cpu_sys + used_cpu_user). RedisWork is the commands
	// Redis executed during the window by INFO commandstats, commands run
	// inside scripts included, the producer's ZADDs included, the bench's
	// own PINGs (noise probe) and INFO reads excluded.
	RedisCPU  float64 `json:"redis_cpu_s,omitempty"`
	RedisWork int64   `json:"redis_commands,omitempty"`
	// PerMessage is the cost of one message; Targets the targets
	// this scenario checks, with what it measured.
	PerMessage *Costs   `json:"per_message,omitempty"`
	Targets    []Target `json:"targets,omitempty"`
	// CPU is the CPU time (s) each process on this machine used during the
	// window: delaybridge, redis, rabbitmq, devkafka, and the bench itself
	// (its producer and consumer).
	CPU map[string]float64 `json:"cpu_s_by_process,omitempty"`
	// WindowS is how long the measured window lasted, in seconds.
	WindowS float64 `json:"window_s"`
	// RawLateness is, for steady traffic, the lateness of the same messages
	// published straight to RabbitMQ at their due times, with the same
	// consumer: the floor this machine and broker put under the daemon's.
	RawLateness *Lateness `json:"raw_rabbitmq_lateness_ms,omitempty"`
	// RawCPU is, for each raw ceiling measured with the broker, the CPU
	// time (s) each process used during that measurement.
	RawCPU map[string]map[string]float64 `json:"raw_cpu_s_by_process,omitempty"`
	// Trickle is, in fairness, the trickle topic beside the burst: its
	// Lateness above is the trickle's while the burst drained.
	Trickle *TrickleResult `json:"trickle,omitempty"`
	// RateLimitCost is rate-limit-cost's unlimited and limited runs.
	RateLimitCost *RateLimitCost `json:"rate_limit_cost,omitempty"`
	// Tracing is the tracing scenario's runs, off and on.
	Tracing *TracingCost `json:"tracing,omitempty"`
	// RedisScriptCalls is the script calls (EVALSHA, EVAL) Redis ran during
	// the window; Batches the batches the daemon published (its
	// publish_duration_seconds count), where measured.
	RedisScriptCalls int64 `json:"redis_script_calls,omitempty"`
	Batches          int64 `json:"batches,omitempty"`
	// HTTP is the api scenario's measurements.
	HTTP *HTTPResult `json:"http,omitempty"`
	// Knobs are the knobs scenario's bursts, one per daemon setting.
	Knobs []KnobRun `json:"knobs,omitempty"`
	// Ceilings are the raw rates measured in the same run (messages/s).
	Ceilings map[string]float64 `json:"ceilings,omitempty"`
	Notes    []string           `json:"notes,omitempty"`
	Error    string             `json:"error,omitempty"`
}

// Lateness are percentiles of receive time − due time, in milliseconds.
type Lateness struct {
	P50  float64 `json:"p50"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p999"`
	Max  float64 `json:"max"`
}

// latenessOf computes the percentiles of lateness samples in ms.
func latenessOf(ms []float64) Lateness {
	if len(ms) == 0 {
		return Lateness{}
	}
	s := slices.Clone(ms)
	slices.Sort(s)
	return Lateness{P50: pct(s, 0.50), P99: pct(s, 0.99), P999: pct(s, 0.999), Max: round2(s[len(s)-1])}
}

// pct is the nearest-rank percentile of sorted s.
func pct(s []float64, p float64) float64 {
	i := int(math.Ceil(p*float64(len(s)))) - 1
	return round2(s[max(0, min(i, len(s)-1))])
}

func round2(f float64) float64 { return math.Round(f*100) / 100 }

func ratio(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return math.Round(a/b*1000) / 1000
}

// perSecond is n over d, rounded.
func perSecond(n float64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return math.Round(n / d.Seconds())
}

func printTable(w io.Writer, rs []Scenario) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\tmessages\tmsg/s\tceiling\tratio\tp50 ms\tp99 ms\tp99.9 ms\tmax ms\tearly\tlost\tdup\tcpu s\trss MiB\tredis cmd/s\tredis calls/s\t")
	for _, r := range rs {
		if r.Error != "" {
			fmt.Fprintf(tw, "%s\t(failed: %s)\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\n", r.Name, short(r.Error))
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.0f\t%.2f\t%.1f\t%.1f\t%.1f\t%.1f\t%d\t%d\t%d\t%.2f\t%.1f\t%.0f\t%.0f\t\n",
			r.Name, r.Messages, r.Throughput, r.Ceiling, r.Ratio,
			r.Lateness.P50, r.Lateness.P99, r.Lateness.P999, r.Lateness.Max,
			r.Early, r.Lost, r.Duplicates, r.DaemonCPU, float64(r.DaemonRSS)/(1<<20), r.RedisCmds, r.RedisCalls)
	}
	tw.Flush()
	defer printTracing(w, rs)
	defer printRateLimitCost(w, rs)
	defer printCosts(w, rs)
	for _, r := range rs {
		if len(r.CPU) > 0 {
			fmt.Fprintf(w, "  %s: cpu s %s\n", r.Name, cpuText(r.CPU))
		}
		for _, n := range r.Notes {
			fmt.Fprintf(w, "  %s: %s\n", r.Name, n)
		}
	}
}

// cpuText lists CPU seconds by process, largest first.
func cpuText(cpu map[string]float64) string {
	names := make([]string, 0, len(cpu))
	for n := range cpu {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int { return cmp.Compare(cpu[b], cpu[a]) })
	var sb strings.Builder
	for i, n := range names {
		if i > 0 {
			sb.WriteString(", ")
		}
		fmt.Fprintf(&sb, "%s %.2f", n, cpu[n])
	}
	return sb.String()
}

func short(s string) string {
	if len(s) > 60 {
		return s[:57] + "..."
	}
	return s
}

// printMarkdown renders the scenarios of a results.json file as the table
// of docs/performance.md.
func printMarkdown(w io.Writer, path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var rep Report
	if err := json.Unmarshal(b, &rep); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	fmt.Fprintln(w, "| scenario | messages | msg/s | ceiling msg/s | ratio | lateness p50 / p99 / p99.9 / max (ms) | early | lost | daemon CPU (s) | daemon peak RSS (MiB) | Redis commands/s (calls/s) |")
	fmt.Fprintln(w, "| --- | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | --- |")
	for _, r := range rep.Scenarios {
		if r.Error != "" {
			fmt.Fprintf(w, "| %s | failed: %s | | | | | | | | | |\n", r.Name, r.Error)
			continue
		}
		late := "–"
		if r.Messages > 0 && r.Lateness != (Lateness{}) { // intake measures no lateness
			late = fmt.Sprintf("%.1f / %.1f / %.1f / %.1f", r.Lateness.P50, r.Lateness.P99, r.Lateness.P999, r.Lateness.Max)
		}
		fmt.Fprintf(w, "| %s | %d | %.0f | %.0f | %.2f | %s | %d | %d | %.2f | %.1f | %.0f (%.0f) |\n",
			r.Name, r.Messages, r.Throughput, r.Ceiling, r.Ratio, late, r.Early, r.Lost, r.DaemonCPU, float64(r.DaemonRSS)/(1<<20), r.RedisCmds, r.RedisCalls)
	}
	printCostsMarkdown(w, rep)
	printRateLimitCostMarkdown(w, rep)
	printTracingMarkdown(w, rep)
	return nil
}
