package main

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
)

// Costs are what one message cost, over a scenario's window.
type Costs struct {
	// Messages is what the costs are divided by.
	Messages int `json:"messages"`
	// DaemonCPUus is the daemon's CPU time per message (µs); RedisCPUus
	// Redis's (INFO cpu); RedisCmds the commands Redis executed per message,
	// those inside scripts and the producer's ZADDs included (see
	// Scenario.RedisWork).
	DaemonCPUus float64 `json:"daemon_cpu_us"`
	RedisCPUus  float64 `json:"redis_cpu_us"`
	RedisCmds   float64 `json:"redis_cmds"`
	// RabbitCPUus is RabbitMQ's (beam.smp) CPU per message while the daemon
	// published, RawRabbitCPUus the same under the raw publisher (mean of
	// the runs before and after), RabbitCPURatio the first over the second.
	RabbitCPUus    float64 `json:"rabbitmq_cpu_us,omitempty"`
	RawRabbitCPUus float64 `json:"raw_rabbitmq_cpu_us,omitempty"`
	RabbitCPURatio float64 `json:"rabbitmq_cpu_ratio,omitempty"`
	// RedisBytes is Redis's used_memory per message: in backlog per waiting
	// far-future message, in memory per raw member.
	RedisBytes float64 `json:"redis_bytes,omitempty"`
	// EnvelopeBytes is, in memory, used_memory per envelope message and
	// EnvelopeExtra its difference to RedisBytes.
	EnvelopeBytes float64 `json:"envelope_bytes,omitempty"`
	EnvelopeExtra float64 `json:"envelope_extra_bytes,omitempty"`
}

// Target is one of issue #15's targets and what this run measured.
type Target struct {
	What  string  `json:"what"`
	Want  string  `json:"want"` // "<= 50", ">= 0.9", "< 100" ...
	Got   float64 `json:"got"`
	Unit  string  `json:"unit,omitempty"`
	Met   bool    `json:"met"`
	Extra string  `json:"extra,omitempty"` // context, such as the reference compared with
}

// target records a target: got compared with limit by op (<=, <, >=, >).
func (r *Scenario) target(what string, got float64, op string, limit float64, unit string, extra ...string) {
	met := false
	switch op {
	case "<=":
		met = got <= limit
	case "<":
		met = got < limit
	case ">=":
		met = got >= limit
	case ">":
		met = got > limit
	}
	if math.IsNaN(got) {
		met = false
	}
	r.Targets = append(r.Targets, Target{What: what, Want: op + " " + trimFloat(limit), Got: round2(got), Unit: unit, Met: met, Extra: strings.Join(extra, "; ")})
}

// checkAlways records the targets of every scenario with a daemon: peak
// RSS under 64 MiB, nothing early, nothing lost.
func (r *Scenario) checkAlways() {
	if r.DaemonRSS > 0 {
		r.target("daemon peak RSS", float64(r.DaemonRSS)/(1<<20), "<", 64, "MiB")
	}
	r.target("early", float64(r.Early), "<=", 0, "")
	r.target("lost", float64(r.Lost), "<=", 0, "")
}

// costs divides the window's daemon CPU, Redis CPU and Redis commands by n
// messages.
func (r *Scenario) costs(n int) *Costs {
	if n <= 0 {
		return nil
	}
	c := &Costs{Messages: n,
		DaemonCPUus: round2(r.DaemonCPU * 1e6 / float64(n)),
		RedisCPUus:  round2(r.RedisCPU * 1e6 / float64(n)),
		RedisCmds:   round2(float64(r.RedisWork) / float64(n)),
	}
	r.PerMessage = c
	return c
}

func trimFloat(f float64) string {
	s := fmt.Sprintf("%.3f", f)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s
}

func (t Target) text() string {
	verdict := "missed"
	if t.Met {
		verdict = "met"
	}
	s := fmt.Sprintf("%s %s%s: %s %s", t.What, t.Want, spaceUnit(t.Unit), trimFloat(t.Got), verdict)
	if t.Extra != "" {
		s += " (" + t.Extra + ")"
	}
	return s
}

func spaceUnit(u string) string {
	if u == "" {
		return ""
	}
	return " " + u
}

// printCosts prints the per-message costs and the targets of rs.
func printCosts(w io.Writer, rs []Scenario) {
	any := false
	for _, r := range rs {
		any = any || r.PerMessage != nil
	}
	if any {
		fmt.Fprintln(w, "\nper message:")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "scenario\tmessages\tdaemon cpu µs\tredis cpu µs\tredis cmds\trabbitmq cpu µs\traw rabbitmq cpu µs\trabbitmq ratio\tredis bytes\tenvelope bytes\t")
		for _, r := range rs {
			if c := r.PerMessage; c != nil {
				fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.1f\t%.2f\t%.1f\t%.1f\t%.2f\t%.0f\t%.0f\t\n", r.Name, c.Messages, c.DaemonCPUus, c.RedisCPUus, c.RedisCmds,
					c.RabbitCPUus, c.RawRabbitCPUus, c.RabbitCPURatio, c.RedisBytes, c.EnvelopeBytes)
			}
		}
		tw.Flush()
	}
	for _, r := range rs {
		if len(r.Targets) > 0 {
			fmt.Fprintf(w, "\ntargets of %s:\n", r.Name)
		}
		for _, t := range r.Targets {
			fmt.Fprintf(w, "  %s\n", t.text())
		}
	}
}

// printCostsMarkdown renders the per-message costs and targets of rep, when
// it has any (results of older benches have none and print nothing).
func printCostsMarkdown(w io.Writer, rep Report) {
	var rows, targets []string
	for _, r := range rep.Scenarios {
		if c := r.PerMessage; c != nil {
			rows = append(rows, fmt.Sprintf("| %s | %d | %.1f | %.1f | %.2f | %s | %s | %s | %s |", r.Name, c.Messages, c.DaemonCPUus, c.RedisCPUus, c.RedisCmds,
				dash(c.RabbitCPUus, "%.1f"), dash(c.RawRabbitCPUus, "%.1f"), dash(c.RabbitCPURatio, "%.2f"), bytesText(c)))
		}
		for _, t := range r.Targets {
			verdict := "missed"
			if t.Met {
				verdict = "**met**"
			}
			extra := ""
			if t.Extra != "" {
				extra = " (" + t.Extra + ")"
			}
			targets = append(targets, fmt.Sprintf("| %s | %s | %s%s | %s%s |", r.Name, t.What, t.Want, spaceUnit(t.Unit), trimFloat(t.Got), extra)+" "+verdict+" |")
		}
	}
	markdownTable(w, rows,
		"| scenario | per | daemon CPU (µs) | Redis CPU (µs) | Redis commands | RabbitMQ CPU (µs) | raw RabbitMQ CPU (µs) | RabbitMQ ratio | Redis bytes |",
		"| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
	markdownTable(w, targets,
		"| scenario | target | want | got | |",
		"| --- | --- | --- | --- | --- |")
}

// markdownRow is cells as a Markdown table row.
func markdownRow(cells []string) string { return "| " + strings.Join(cells, " | ") + " |" }

// markdownTable prints rows under header and its alignment line, after a
// blank line; nothing when there are no rows.
func markdownTable(w io.Writer, rows []string, header, align string) {
	if len(rows) == 0 {
		return
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, header)
	fmt.Fprintln(w, align)
	for _, l := range rows {
		fmt.Fprintln(w, l)
	}
}

func dash(v float64, format string) string {
	if v == 0 {
		return "–"
	}
	return fmt.Sprintf(format, v)
}

func bytesText(c *Costs) string {
	switch {
	case c.EnvelopeBytes > 0:
		return fmt.Sprintf("raw %.0f, envelope %.0f (+%.0f)", c.RedisBytes, c.EnvelopeBytes, c.EnvelopeExtra)
	case c.RedisBytes > 0:
		return fmt.Sprintf("%.0f per waiting message", c.RedisBytes)
	}
	return "–"
}
