package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/delaybridge/delaybridge/flowstate"
	"github.com/delaybridge/delaybridge/internal/flowtext"
	"github.com/delaybridge/delaybridge/queue"
)

const limitUsage = `usage: delaybridge limit [flags] TOPIC

limit changes a running topic's flow control on every replica within a
second, overriding DELAYBRIDGE_TOPIC_<NAME>_RATE_LIMIT and _HOLD_ABOVE until
--off. --rate is deliveries per second summed over every replica (a decimal;
"none" lifts the limit); --hold-above is how many ready messages the topic's
HOLD_QUEUE may hold before the topic holds ("none" lifts it; the queue itself
is configured by DELAYBRIDGE_TOPIC_<NAME>_HOLD_QUEUE). --off removes what
limit set: the environment's limits apply again. Held messages wait in the
scheduled set, late but never lost; pause still wins over both. Without a
flag, limit shows what is set. stats and the console show the limits in force.

Examples:
  delaybridge limit reminders --rate 300
  delaybridge limit reminders --hold-above 5000
  delaybridge limit reminders --rate none
  delaybridge limit reminders --off
`

// runLimit is `delaybridge limit`.
func runLimit(ctx context.Context, args []string, s stdio) int {
	fs := newFlags("limit", limitUsage, s)
	rate := fs.String("rate", "", `deliveries per second over every replica, or "none"`)
	hold := fs.String("hold-above", "", `ready messages in HOLD_QUEUE above which the topic holds, or "none"`)
	off := fs.Bool("off", false, "remove the limits set at run time (the environment's apply)")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	pos, code, ok := parseFlags(fs, args, s)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return badUsage(fs, s, "want exactly one TOPIC")
	}
	o, err := limitOverride(*rate, *hold)
	if err != nil {
		return badUsage(fs, s, "%v", err)
	}
	if *off && !o.IsZero() {
		return badUsage(fs, s, "--off cannot be given with --rate or --hold-above")
	}
	c, t, code := openTopic(fs, s, pos[0])
	if c == nil {
		return code
	}
	defer c.close()
	switch {
	case *off:
		if _, err := c.flow.ClearLimits(ctx, t); err != nil {
			return c.fail(err)
		}
	case !o.IsZero():
		if err := c.flow.SetLimits(ctx, t, o); err != nil {
			return c.fail(err)
		}
	}
	now, err := c.flow.Limits(ctx, t)
	if err != nil {
		return c.fail(err)
	}
	if *asJSON {
		writeJSON(s.out, map[string]any{"topic": t.Name, "rate": overrideRate(now), "hold_above": overrideHold(now), "since": jsonTime(now.Since)})
		return exitOK
	}
	if now.IsZero() {
		fmt.Fprintf(s.out, "%s: no limits set at run time: the environment's apply\n", t.Name)
		return exitOK
	}
	fmt.Fprintf(s.out, "%s: %s (every replica within 1 s; delaybridge limit %s --off returns to the environment's)\n", t.Name, describeOverride(now), t.Name)
	return exitOK
}

// limitOverride parses --rate and --hold-above ("" leaves a field unset).
func limitOverride(rate, hold string) (flowstate.Override, error) {
	o, err := flowtext.ParseOverride(rate, hold)
	if err != nil {
		return o, fmt.Errorf("--%w", err)
	}
	return o, nil
}

// overrideRate is the JSON of a run-time rate: null when not set, "none"
// when lifted, else the number.
func overrideRate(o flowstate.Override) any {
	switch {
	case o.Rate == nil:
		return nil
	case *o.Rate == 0:
		return "none"
	}
	return *o.Rate
}

func overrideHold(o flowstate.Override) any {
	switch {
	case o.HoldAbove == nil:
		return nil
	case *o.HoldAbove < 0:
		return "none"
	}
	return *o.HoldAbove
}

// describeOverride says what o sets, for people.
func describeOverride(o flowstate.Override) string {
	var parts []string
	switch v := overrideRate(o).(type) {
	case string:
		parts = append(parts, "no rate limit")
	case float64:
		parts = append(parts, "rate limit "+strconv.FormatFloat(v, 'f', -1, 64)+"/s")
	}
	switch v := overrideHold(o).(type) {
	case string:
		parts = append(parts, "no hold")
	case int:
		parts = append(parts, fmt.Sprintf("hold above %d ready", v))
	}
	return strings.Join(parts, ", ")
}

// limitsJSON is a topic's flow control in force, as stats shows it.
type limitsJSON = flowstate.Limits

// limitsInForce are the topics' limits in force: what each live daemon's
// environment gives the topic (its report, or none), overridden by those
// set at run time. While no daemon is known (none reports, none is live),
// this shell's configuration stands in (Source "here"; a topic it does not
// configure has only the run-time ones).
func (c *cli) limitsInForce(ctx context.Context, ts []queue.Topic) ([]limitsJSON, error) {
	return c.flow.LimitsShown(ctx, c.cfg.KeyPrefix, ts, func(t queue.Topic) flowstate.Limits {
		for _, ct := range c.cfg.Topics {
			if ct.Name == t.Name {
				return flowstate.EnvLimits(ct.RateLimit, ct.HoldQueue, ct.HoldAbove)
			}
		}
		return flowstate.EnvLimits(0, "", 0)
	})
}

// printLimits prints one line per topic with a limit in force or held
// now, and why it is held.
func printLimits(w io.Writer, ts []queue.Topic, ls []limitsJSON, hs []heldJSON) {
	for i, l := range ls {
		line := flowtext.Limits(l)
		if held := describeHeld(hs[i], l); held != "" {
			line = strings.TrimPrefix(line+"; "+held, "; ")
		}
		if line != "" {
			fmt.Fprintf(w, "%s: %s\n", ts[i].Name, line)
		}
	}
}
