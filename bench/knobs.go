package main

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
)

// knobs' grid: every MAX_INFLIGHT_BATCHES with every BATCH_SIZE.
var (
	knobsInflight = []int{1, 2, 4, 8, 16}
	knobsBatch    = []int{100, 500, 2000}
)

// The daemon's defaults (config/env.go), measured first, in the middle and
// last: the machine is noisy, so the grid is compared with their median.
const (
	defaultInflight = 2
	defaultBatch    = 500
)

// KnobRun is one burst of the knobs scenario.
type KnobRun struct {
	MaxInflightBatches int     `json:"max_inflight_batches"`
	BatchSize          int     `json:"batch_size"`
	GOMAXPROCS         int     `json:"gomaxprocs,omitempty"` // set for the daemon; 0: its own choice
	Throughput         float64 `json:"throughput"`
	DaemonCPUus        float64 `json:"daemon_cpu_us_per_message"`
	DaemonRSS          int64   `json:"daemon_rss_bytes"`
	Early              int     `json:"early"`
	Lost               int     `json:"lost"`
	Noise              string  `json:"noise,omitempty"` // the machine's noise line during the burst
}

func (k KnobRun) isDefault() bool {
	return k.MaxInflightBatches == defaultInflight && k.BatchSize == defaultBatch && k.GOMAXPROCS == 0
}

func (k KnobRun) label() string {
	s := fmt.Sprintf("MAX_INFLIGHT_BATCHES=%d BATCH_SIZE=%d", k.MaxInflightBatches, k.BatchSize)
	if k.GOMAXPROCS > 0 {
		s += fmt.Sprintf(" GOMAXPROCS=%d", k.GOMAXPROCS)
	}
	return s
}

// knobsPlan is the order of the runs: the default first, in the middle and
// last, the grid between, and the default with GOMAXPROCS=16 (a stand-in
// for a 16-core node on a small one) before the last. -quick runs the
// default twice and the grid's corners.
func knobsPlan(quick bool) []KnobRun {
	var grid []KnobRun
	for _, in := range knobsInflight {
		for _, b := range knobsBatch {
			if in == defaultInflight && b == defaultBatch {
				continue
			}
			if quick && !(in == knobsInflight[0] || in == knobsInflight[len(knobsInflight)-1] || in == 8) {
				continue
			}
			grid = append(grid, KnobRun{MaxInflightBatches: in, BatchSize: b})
		}
	}
	def := KnobRun{MaxInflightBatches: defaultInflight, BatchSize: defaultBatch}
	half := len(grid) / 2
	plan := []KnobRun{def}
	plan = append(plan, grid[:half]...)
	if !quick {
		plan = append(plan, def)
	}
	plan = append(plan, grid[half:]...)
	plan = append(plan, KnobRun{MaxInflightBatches: defaultInflight, BatchSize: defaultBatch, GOMAXPROCS: 16})
	return append(plan, def)
}

// runKnobs: burst (knobsBurst messages due at one instant over burstSlots
// slots) with every combination of MAX_INFLIGHT_BATCHES and BATCH_SIZE, each
// against the defaults measured in the same run (issue #32: raising a knob
// must not make the daemon slower or costlier per message).
func runKnobs(ctx context.Context, e *env) (Scenario, error) {
	n, slots := e.o.sizes.knobsBurst, e.o.sizes.burstSlots
	r := Scenario{Messages: n, Ceilings: map[string]float64{}}
	_, rawTarget, drop, err := e.space("knobs-raw")
	if err != nil {
		return r, err
	}
	defer drop()
	if _, _, err := e.aroundRaw(ctx, &r, rawTarget, n, func() error {
		for i, k := range knobsPlan(e.o.quick) {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			run, err := e.knobRun(ctx, i, k, slots, n)
			if err != nil {
				return fmt.Errorf("%s: %w", k.label(), err)
			}
			fmt.Fprintf(os.Stderr, "   %s: %.0f msg/s, daemon %.1f µs/msg, peak RSS %.1f MiB\n", k.label(), run.Throughput, run.DaemonCPUus, float64(run.DaemonRSS)/(1<<20))
			r.Knobs = append(r.Knobs, run)
		}
		return nil
	}); err != nil {
		return r, err
	}
	r.knobsVerdict()
	return r, nil
}

// knobRun is one burst of n through a daemon set to k, in a space of its own.
func (e *env) knobRun(ctx context.Context, i int, k KnobRun, slots, n int) (KnobRun, error) {
	prefix, target, drop, err := e.space(fmt.Sprintf("knobs-%d", i))
	if err != nil {
		return k, err
	}
	defer drop()
	vars := amqpVars(prefix, target, slots)
	vars["DELAYBRIDGE_MAX_INFLIGHT_BATCHES"] = strconv.Itoa(k.MaxInflightBatches)
	vars["DELAYBRIDGE_BATCH_SIZE"] = strconv.Itoa(k.BatchSize)
	if k.GOMAXPROCS > 0 {
		vars["GOMAXPROCS"] = strconv.Itoa(k.GOMAXPROCS)
	}
	var one Scenario
	if err := e.burstThroughDaemon(ctx, &one, prefix, vars, slots, n, 0, func(tr *tracker) (func(), error) {
		return e.consume(target, tr)
	}); err != nil {
		return k, err
	}
	k.Throughput = one.Throughput
	k.DaemonCPUus = round2(one.DaemonCPU * 1e6 / float64(n))
	k.DaemonRSS = one.DaemonRSS
	k.Early, k.Lost = one.Early, one.Lost
	for _, n := range one.Notes {
		if strings.HasPrefix(n, "machine noise") {
			k.Noise = n
		}
	}
	return k, nil
}

// knobsVerdict compares every run of r.Knobs with the median of the
// default's runs and records the targets: every combination at least 0.9 ×
// the default's throughput and at most 1.2 × its daemon CPU per message,
// and GOMAXPROCS=16 within 1.5 × its CPU per message.
func (r *Scenario) knobsVerdict() {
	var defs []KnobRun
	for _, k := range r.Knobs {
		if k.isDefault() {
			defs = append(defs, k)
		}
		r.Early += k.Early
		r.Lost += k.Lost
	}
	if len(defs) == 0 {
		r.Notes = append(r.Notes, "the default setting did not run")
		return
	}
	rate := median(defs, func(k KnobRun) float64 { return k.Throughput })
	cpu := median(defs, func(k KnobRun) float64 { return k.DaemonCPUus })
	rss := median(defs, func(k KnobRun) float64 { return float64(k.DaemonRSS) })
	r.Throughput, r.DaemonRSS = rate, int64(rss)
	r.Ratio = ratio(rate, r.Ceiling)
	r.PerMessage = &Costs{Messages: r.Messages, DaemonCPUus: cpu}
	r.Notes = append(r.Notes, fmt.Sprintf("the default (MAX_INFLIGHT_BATCHES=%d BATCH_SIZE=%d) ran %d times: median %.0f msg/s, %.1f µs/msg; its row in the table is that median", defaultInflight, defaultBatch, len(defs), rate, cpu))
	var slowest, costliest KnobRun
	for _, k := range r.Knobs {
		r.Notes = append(r.Notes, fmt.Sprintf("%s: %.0f msg/s (%.2f× the default, %.2f× the ceiling), daemon %.1f µs/msg (%.2f×), peak RSS %.1f MiB",
			k.label(), k.Throughput, ratio(k.Throughput, rate), ratio(k.Throughput, r.Ceiling), k.DaemonCPUus, ratio(k.DaemonCPUus, cpu), float64(k.DaemonRSS)/(1<<20)))
		if k.isDefault() || k.GOMAXPROCS > 0 {
			continue
		}
		if slowest.Throughput == 0 || k.Throughput < slowest.Throughput {
			slowest = k
		}
		if k.DaemonCPUus > costliest.DaemonCPUus {
			costliest = k
		}
	}
	if slowest.Throughput > 0 {
		r.target("slowest setting's throughput / the default's", ratio(slowest.Throughput, rate), ">=", 0.9, "",
			fmt.Sprintf("%s: %.0f vs %.0f msg/s", slowest.label(), slowest.Throughput, rate))
		r.target("costliest setting's daemon CPU per message / the default's", ratio(costliest.DaemonCPUus, cpu), "<=", 1.2, "",
			fmt.Sprintf("%s: %.1f vs %.1f µs", costliest.label(), costliest.DaemonCPUus, cpu))
	}
	for _, k := range r.Knobs {
		if k.GOMAXPROCS > 0 {
			r.target(fmt.Sprintf("daemon CPU per message with GOMAXPROCS=%d / the default's", k.GOMAXPROCS), ratio(k.DaemonCPUus, cpu), "<=", 1.5, "",
				fmt.Sprintf("%.1f vs %.1f µs", k.DaemonCPUus, cpu))
		}
	}
	r.checkAlways()
}

// median is the median of f over ks (the lower middle of an even count).
func median(ks []KnobRun, f func(KnobRun) float64) float64 {
	vs := make([]float64, len(ks))
	for i, k := range ks {
		vs[i] = f(k)
	}
	slices.SortFunc(vs, cmp.Compare[float64])
	return vs[(len(vs)-1)/2]
}
