package cli

import (
	"context"
	"flag"
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

With --key, on a fair topic, --rate is one key's deliveries per second over
every replica ("none": no limit for that key), overriding the topic's
DELAYBRIDGE_TOPIC_<NAME>_KEY_RATE_LIMIT; --off returns the key to it. A key
over its rate waits alone: every other key goes on.

Examples:
  delaybridge limit reminders --rate 300
  delaybridge limit reminders --hold-above 5000
  delaybridge limit reminders --rate none
  delaybridge limit reminders --off
  delaybridge limit notifications --key customer-42 --rate 5
  delaybridge limit notifications --key customer-42 --off
`

// runLimit is `delaybridge limit`.
func runLimit(ctx context.Context, args []string, s stdio) int {
	fs := newFlags("limit", limitUsage, s)
	rate := fs.String("rate", "", `deliveries per second over every replica, or "none"`)
	hold := fs.String("hold-above", "", `ready messages in HOLD_QUEUE above which the topic holds, or "none"`)
	off := fs.Bool("off", false, "remove the limits set at run time (the environment's apply)")
	key := fs.String("key", "", "a fair topic: limit this key's rate only")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	pos, code, ok := parseFlags(fs, args, s)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return badUsage(fs, s, "want exactly one TOPIC")
	}
	if flagSet(fs, "key") {
		return runLimitKey(ctx, fs, s, pos[0], *key, *rate, *hold, *off, *asJSON)
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

// runLimitKey is limit --key: one key's rate on a fair topic.
func runLimitKey(ctx context.Context, fs *flag.FlagSet, s stdio, topic, key, rate, hold string, off, asJSON bool) int {
	if hold != "" {
		return badUsage(fs, s, "--hold-above is the topic's; a key has only --rate")
	}
	if off && rate != "" {
		return badUsage(fs, s, "--off cannot be given with --rate")
	}
	var r float64
	if rate != "" && rate != "none" {
		var err error
		if r, err = strconv.ParseFloat(rate, 64); err != nil || r < flowstate.MinRate || r > 10_000_000 {
			return badUsage(fs, s, "--rate %q: want deliveries per second of the key, from 0.001 to 10000000, or none", rate)
		}
	}
	c, t, code := openTopic(fs, s, topic)
	if c == nil {
		return code
	}
	defer c.close()
	var err error
	switch {
	case off:
		err = c.q.ClearKeyRate(ctx, t, key)
	case rate != "":
		err = c.q.SetKeyRate(ctx, t, key, r)
	default:
		err = checkKeyTopic(t)
	}
	if err != nil {
		return c.fail(err)
	}
	rates, err := c.q.KeyRates(ctx, t)
	if err != nil {
		return c.fail(err)
	}
	var now *queue.KeyRate
	for i := range rates {
		if rates[i].Key == key {
			now = &rates[i]
		}
	}
	switch {
	case asJSON:
		var v any
		if now != nil {
			v = now.Rate
			if now.Rate == 0 {
				v = "none"
			}
		}
		writeJSON(s.out, map[string]any{"topic": t.Name, "key": key, "rate": v})
	case now == nil:
		fmt.Fprintf(s.out, "%s: key %q has no rate set at run time: the topic's KEY_RATE_LIMIT applies\n", t.Name, key)
	case now.Rate == 0:
		fmt.Fprintf(s.out, "%s: key %q: no rate limit (every replica, from its next claim; --key %s --off returns it to the topic's)\n", t.Name, key, key)
	default:
		fmt.Fprintf(s.out, "%s: key %q: rate limit %s/s over every replica (from each one's next claim; --key %s --off returns it to the topic's)\n",
			t.Name, key, strconv.FormatFloat(now.Rate, 'f', -1, 64), key)
	}
	return exitOK
}

// checkKeyTopic refuses a per-key command on a topic without fair share.
func checkKeyTopic(t queue.Topic) error {
	if !t.Fair {
		return fmt.Errorf("topic %s: %w", t.Name, queue.ErrNotFair)
	}
	return nil
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
