package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
)

// rateLimitCostRate is rate-limit-cost's rate limit: the most RATE_LIMIT
// accepts, far above what a daemon delivers, so the limiter runs its
// script before every claim and never holds a message.
const rateLimitCostRate = 10_000_000

// runRateLimitCost: the price of a rate limit per message. The burst's
// messages fall due at one instant twice in the same run, through a daemon
// of their own each time: first on a topic without a limit, then on one
// limited to rateLimitCostRate. The row is the limited run's (its ceiling
// the unlimited run's throughput); RateLimitCost has both runs' costs per
// message and per batch, and their ratios. The target is issue #27's "at
// most one extra Redis round trip per batch": the limited run's script
// calls per published batch at most the unlimited run's plus one.
func runRateLimitCost(ctx context.Context, e *env) (Scenario, error) {
	n, slots := e.o.sizes.burst, e.o.sizes.burstSlots
	free, err := e.rateCostRun(ctx, "rate-limit-cost-free", n, slots, 0)
	if err != nil {
		return free, fmt.Errorf("unlimited run: %w", err)
	}
	r, err := e.rateCostRun(ctx, "rate-limit-cost", n, slots, rateLimitCostRate)
	if err != nil {
		return r, fmt.Errorf("limited run: %w", err)
	}
	r.Ceiling = free.Throughput
	r.Ceilings = map[string]float64{"unlimited": free.Throughput, "rate_limit": rateLimitCostRate}
	r.Ratio = ratio(r.Throughput, free.Throughput)
	c := &RateLimitCost{Unlimited: costRunOf(free), Limited: costRunOf(r)}
	c.Ratios = c.Limited.over(c.Unlimited)
	r.RateLimitCost = c
	r.Notes = append(r.Notes, "unlimited run: "+strings.Join(free.Notes, "; "))
	r.target("Redis script calls per batch, limited − unlimited", c.Limited.ScriptCallsPerBatch-c.Unlimited.ScriptCallsPerBatch, "<=", 1, "",
		fmt.Sprintf("%.2f vs %.2f per batch; %.4f vs %.4f per message", c.Limited.ScriptCallsPerBatch, c.Unlimited.ScriptCallsPerBatch,
			c.Limited.ScriptCalls, c.Unlimited.ScriptCalls))
	r.checkAlways()
	return r, nil
}

// rateCostRun is one run of rate-limit-cost: the burst through a daemon,
// with RATE_LIMIT rate (0: none), and its costs per message.
func (e *env) rateCostRun(ctx context.Context, name string, n, slots int, rate float64) (Scenario, error) {
	r := Scenario{Messages: n}
	prefix, target, drop, err := e.space(name)
	if err != nil {
		return r, err
	}
	defer drop()
	vars := amqpVars(prefix, target, slots)
	if rate > 0 {
		vars["DELAYBRIDGE_TOPIC_BENCH_RATE_LIMIT"] = strconv.FormatFloat(rate, 'f', -1, 64)
	}
	if err := e.burstThroughDaemon(ctx, &r, prefix, vars, slots, n, 0, func(tr *tracker) (func(), error) {
		return e.consume(target, tr)
	}); err != nil {
		return r, err
	}
	r.costs(n)
	return r, nil
}

// RateLimitCost is rate-limit-cost's two runs side by side.
type RateLimitCost struct {
	Unlimited CostRun `json:"unlimited"`
	Limited   CostRun `json:"limited"`
	// Ratios are limited / unlimited, field by field.
	Ratios CostRun `json:"ratios"`
}

// CostRun is what one run of rate-limit-cost cost per message (and, for
// script calls, per published batch).
type CostRun struct {
	Throughput          float64 `json:"throughput"`
	DaemonCPUus         float64 `json:"daemon_cpu_us"`
	RedisCPUus          float64 `json:"redis_cpu_us"`
	RedisCmds           float64 `json:"redis_cmds"`
	ScriptCalls         float64 `json:"redis_script_calls"`
	Batches             float64 `json:"batches"`
	ScriptCallsPerBatch float64 `json:"redis_script_calls_per_batch"`
}

func costRunOf(r Scenario) CostRun {
	c := CostRun{Throughput: r.Throughput, Batches: float64(r.Batches)}
	if p := r.PerMessage; p != nil {
		c.DaemonCPUus, c.RedisCPUus, c.RedisCmds = p.DaemonCPUus, p.RedisCPUus, p.RedisCmds
	}
	if r.Messages > 0 {
		c.ScriptCalls = math.Round(float64(r.RedisScriptCalls)/float64(r.Messages)*1e4) / 1e4
	}
	if r.Batches > 0 {
		c.ScriptCallsPerBatch = round2(float64(r.RedisScriptCalls) / float64(r.Batches))
	}
	return c
}

// over is c / base, field by field.
func (c CostRun) over(base CostRun) CostRun {
	return CostRun{
		Throughput: ratio(c.Throughput, base.Throughput), DaemonCPUus: ratio(c.DaemonCPUus, base.DaemonCPUus),
		RedisCPUus: ratio(c.RedisCPUus, base.RedisCPUus), RedisCmds: ratio(c.RedisCmds, base.RedisCmds),
		ScriptCalls: ratio(c.ScriptCalls, base.ScriptCalls), Batches: ratio(c.Batches, base.Batches),
		ScriptCallsPerBatch: ratio(c.ScriptCallsPerBatch, base.ScriptCallsPerBatch),
	}
}

// rows are c's fields as table rows: name, unlimited, limited, ratio.
func (c *RateLimitCost) rows() [][4]string {
	f := func(v float64, format string) string { return fmt.Sprintf(format, v) }
	row := func(name, format string, get func(CostRun) float64) [4]string {
		return [4]string{name, f(get(c.Unlimited), format), f(get(c.Limited), format), f(get(c.Ratios), "%.2f")}
	}
	return [][4]string{
		row("msg/s", "%.0f", func(r CostRun) float64 { return r.Throughput }),
		row("daemon CPU µs/msg", "%.2f", func(r CostRun) float64 { return r.DaemonCPUus }),
		row("Redis CPU µs/msg", "%.2f", func(r CostRun) float64 { return r.RedisCPUus }),
		row("Redis commands/msg", "%.3f", func(r CostRun) float64 { return r.RedisCmds }),
		row("Redis script calls/msg", "%.4f", func(r CostRun) float64 { return r.ScriptCalls }),
		row("batches published", "%.0f", func(r CostRun) float64 { return r.Batches }),
		row("Redis script calls/batch", "%.2f", func(r CostRun) float64 { return r.ScriptCallsPerBatch }),
	}
}

// printRateLimitCost prints the rate-limit-cost comparison of rs, if any.
func printRateLimitCost(w io.Writer, rs []Scenario) {
	for _, r := range rs {
		c := r.RateLimitCost
		if c == nil {
			continue
		}
		fmt.Fprintf(w, "\n%s: unlimited vs rate limit %d/s (never reached):\n", r.Name, rateLimitCostRate)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "\tunlimited\tlimited\tratio\t")
		for _, row := range c.rows() {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t\n", row[0], row[1], row[2], row[3])
		}
		tw.Flush()
	}
}

// printRateLimitCostMarkdown is printRateLimitCost as a Markdown table;
// nothing when rep has no rate-limit-cost run.
func printRateLimitCostMarkdown(w io.Writer, rep Report) {
	for _, r := range rep.Scenarios {
		if c := r.RateLimitCost; c != nil {
			var rows []string
			for _, row := range c.rows() {
				rows = append(rows, markdownRow(row[:]))
			}
			markdownTable(w, rows, "| "+r.Name+" | unlimited | limited | limited / unlimited |", "| --- | ---: | ---: | ---: |")
		}
	}
}
