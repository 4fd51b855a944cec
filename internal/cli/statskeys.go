package cli

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/delaybridge/delaybridge/config"
	"github.com/delaybridge/delaybridge/queue"
)

// keysJSON is one topic of `stats --keys --json`.
type keysJSON struct {
	Topic string           `json:"topic"`
	Top   []queue.KeyCount `json:"top"`
	// KeySlots is how many (key, slot) pairs hold messages: the keys with
	// messages waiting, a key counted once per slot it has messages in.
	KeySlots int64 `json:"key_slots"`
}

// statsFlagsProblem says what is wrong with stats' flags, "" when nothing.
func statsFlagsProblem(interval time.Duration, top int, keys, watch bool) string {
	switch {
	case interval <= 0:
		return "--interval must be positive"
	case top <= 0 || top > 1000:
		return "--top must be from 1 to 1000"
	case keys && watch:
		return "--keys does not take --watch"
	}
	return ""
}

// runStatsKeys is `stats --keys`: for each fair topic of topics, the top
// keys with the most messages scheduled (queue.TopKeys). A topic that is not
// fair is an error naming the setting that makes it one.
func runStatsKeys(ctx context.Context, c *cli, topics []queue.Topic, top int, named, asJSON bool) int {
	var fair []queue.Topic
	for _, t := range topics {
		if t.Fair {
			fair = append(fair, t)
		} else if named {
			return c.fail(fmt.Errorf("topic %s is not fair: it keeps no counts per key (%s_TOPIC_<NAME>_FAIR=true, docs/flow-control.md, \"Fair share\")", t.Name, config.Prefix))
		}
	}
	if len(fair) == 0 {
		return c.fail(fmt.Errorf("no fair topic: --keys shows the keys of topics with %s_TOPIC_<NAME>_FAIR=true (docs/flow-control.md, \"Fair share\")", config.Prefix))
	}
	out := make([]keysJSON, len(fair))
	for i, t := range fair {
		ks, slots, err := c.q.TopKeys(ctx, t, top)
		if err != nil {
			return c.fail(err)
		}
		out[i] = keysJSON{Topic: t.Name, Top: ks, KeySlots: slots}
		if out[i].Top == nil {
			out[i].Top = []queue.KeyCount{}
		}
	}
	if asJSON {
		if err := writeJSON(c.s.out, map[string]any{"topics": out}); err != nil {
			return c.fail(fmt.Errorf("write stats: %w", err))
		}
		return exitOK
	}
	tw := tabwriter.NewWriter(c.s.out, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "TOPIC\tKEY\tSCHEDULED\n")
	for _, o := range out {
		if len(o.Top) == 0 {
			fmt.Fprintf(tw, "%s\t-\t0\n", o.Topic)
		}
		for _, k := range o.Top {
			key := k.Key
			if key == "" {
				key = "(no key)"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\n", o.Topic, key, count(k.Count))
		}
	}
	if err := tw.Flush(); err != nil {
		return c.fail(fmt.Errorf("write stats: %w", err))
	}
	return exitOK
}

// keyLimits reads each fair topic's keys held by pause --key and the
// rates set by limit --key.
func (c *cli) keyLimits(ctx context.Context, topics []queue.Topic) ([][]queue.PausedKey, [][]queue.KeyRate, error) {
	paused := make([][]queue.PausedKey, len(topics))
	rates := make([][]queue.KeyRate, len(topics))
	for i, t := range topics {
		var err error
		if paused[i], err = c.q.PausedKeys(ctx, t); err != nil {
			return nil, nil, err
		}
		if rates[i], err = c.q.KeyRates(ctx, t); err != nil {
			return nil, nil, err
		}
	}
	return paused, rates, nil
}

// printKeyRates prints, per fair topic, its keys' rate limit and the keys
// with their own.
func printKeyRates(w io.Writer, topics []queue.Topic, rates [][]queue.KeyRate) {
	for i, t := range topics {
		var parts []string
		if t.KeyRateLimit > 0 {
			parts = append(parts, "each key "+strconv.FormatFloat(t.KeyRateLimit, 'f', -1, 64)+"/s")
		}
		for _, r := range rates[i] {
			v := "none"
			if r.Rate > 0 {
				v = strconv.FormatFloat(r.Rate, 'f', -1, 64) + "/s"
			}
			parts = append(parts, printable([]byte(r.Key), 40)+" "+v)
		}
		if len(parts) > 0 {
			fmt.Fprintf(w, "\nkey rate limits of %s: %s\n", t.Name, strings.Join(parts, ", "))
		}
	}
}

// pausedKeysJSON is what stats --json says of a topic's paused keys.
func pausedKeysJSON(keys []queue.PausedKey) []map[string]any {
	out := make([]map[string]any, len(keys))
	for i, k := range keys {
		out[i] = map[string]any{"key": k.Key, "since": jsonTime(k.Since)}
	}
	return out
}

// printPausedKeys lists the keys held by pause --key, per topic.
func printPausedKeys(w io.Writer, topics []queue.Topic, keys [][]queue.PausedKey) {
	for i, t := range topics {
		if len(keys[i]) == 0 {
			continue
		}
		parts := make([]string, len(keys[i]))
		for j, k := range keys[i] {
			parts[j] = printable([]byte(k.Key), 40) + " (since " + utcStamp(k.Since) + ")"
		}
		fmt.Fprintf(w, "\npaused keys of %s (resume %s --key KEY): %s\n", t.Name, t.Name, strings.Join(parts, ", "))
	}
}
