package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/delaybridge/delaybridge/queue"
)

const statsUsage = `usage: delaybridge stats [flags] [TOPIC...]

Shows the backlog of every configured topic (or the named ones): per topic a
total row ("all") and, for topics with several slots, one row per slot that
holds anything (--all-slots: every slot). Times are Redis's.

  SCHEDULED       waiting in the scheduled set, overdue ones included
  OVERDUE         scheduled with a due time already passed
  RETRYING        scheduled again after a failed attempt (part of SCHEDULED)
  IN FLIGHT       claimed, waiting for the broker's confirmation
  DEAD            in the dead set (see delaybridge dead list)
  PAUSED          yes while the topic is paused (delaybridge pause)
  NEXT DUE        the earliest due time still ahead
  OLDEST OVERDUE  how late the most overdue message is

Below the table, a line per topic with flow control: the rate limit and
hold-above in force and where they come from: "environment" is what the
running daemons were started with, as they report it (per group of
replicas where their environments differ; a live replica that reports
none runs the topic unlimited), "run time" what delaybridge limit set
over it, "environment here" this shell's own while no daemon is known
(none is live, none reports); and, while a replica holds the topic, HELD
and why: by the rate limit, or by hold-above with the hold queue's ready
count last read (--json: "limits", with each daemon's limits under
"replicas", and "held" per topic).

With --keys, for each fair topic (DELAYBRIDGE_TOPIC_<NAME>_FAIR=true) the keys
with the most messages scheduled (--top N, default 10), summed over slots;
a key that is in no slot's top N is not shown. Its work grows with slots ×
N, never with the number of keys.

Examples:
  delaybridge stats
  delaybridge stats --keys --top 20 orders
  delaybridge stats --watch --interval 1s orders
  delaybridge stats --json
`

// runStats is `delaybridge stats`.
func runStats(ctx context.Context, args []string, s stdio) int {
	fs := newFlags("stats", statsUsage, s)
	watch := fs.Bool("watch", false, "refresh until interrupted")
	interval := fs.Duration("interval", 2*time.Second, "refresh period with --watch")
	allSlots := fs.Bool("all-slots", false, "show every slot, empty ones too")
	asJSON := fs.Bool("json", false, "print JSON (with --watch: one object per line per refresh)")
	keys := fs.Bool("keys", false, "fair topics: the keys with the most messages scheduled")
	top := fs.Int("top", 10, "with --keys: how many keys per topic")
	names, code, ok := parseFlags(fs, args, s)
	if !ok {
		return code
	}
	if msg := statsFlagsProblem(*interval, *top, *keys, *watch); msg != "" {
		return badUsage(fs, s, "%s", msg)
	}
	c, topics, code := openTopics(fs, s, names)
	if c == nil {
		return code
	}
	defer c.close()
	if *keys {
		return runStatsKeys(ctx, c, topics, *top, len(names) > 0, *asJSON)
	}
	redraw := *watch && !*asJSON && isTerminal(s.out)
	tick := time.NewTicker(*interval)
	defer tick.Stop()
	for {
		v, err := c.readStats(ctx, topics)
		if err != nil {
			if *watch && ctx.Err() != nil {
				return exitOK
			}
			return c.fail(err)
		}
		if redraw {
			fmt.Fprint(s.out, "\033[H\033[2J")
		}
		err = writeStats(ctx, s, c, v, *asJSON, *allSlots, *watch)
		if err != nil {
			return c.fail(fmt.Errorf("write stats: %w", err))
		}
		if !*watch {
			return exitOK
		}
		select {
		case <-ctx.Done():
			return exitOK
		case <-tick.C:
		}
	}
}

// readStats reads one refresh of stats.
func (c *cli) readStats(ctx context.Context, topics []queue.Topic) (statsView, error) {
	v := statsView{topics: topics, slots: make([][]queue.SlotStats, len(topics))}
	var err error
	for i, t := range topics {
		if v.slots[i], err = c.q.TopicStats(ctx, t); err != nil {
			return v, err
		}
	}
	if v.limits, err = c.limitsInForce(ctx, topics); err != nil {
		return v, err
	}
	if v.held, err = c.heldNow(ctx, topics); err != nil {
		return v, err
	}
	if v.unforwarded, err = c.unforwarded(ctx, topics); err != nil {
		return v, err
	}
	v.pausedKeys, v.keyRates, err = c.keyLimits(ctx, topics)
	return v, err
}

// statsView is one refresh of stats: every topic's slots and limits.
type statsView struct {
	topics []queue.Topic
	slots  [][]queue.SlotStats
	limits []limitsJSON
	held   []heldJSON
	// unforwarded: why a topic's messages wait for no one, by name.
	unforwarded map[string]string
	// pausedKeys: each topic's keys held by pause --key; keyRates its
	// keys' rates set by limit --key.
	pausedKeys [][]queue.PausedKey
	keyRates   [][]queue.KeyRate
}

// writeStats prints one refresh, with Redis's memory state when it can be
// read.
func writeStats(ctx context.Context, s stdio, c *cli, v statsView, asJSON, allSlots, watch bool) error {
	mem, memErr := c.q.Memory(ctx)
	if asJSON {
		out := statsJSON(v.topics, v.slots)
		for i, l := range v.limits {
			out["topics"].([]map[string]any)[i]["limits"] = l
			out["topics"].([]map[string]any)[i]["held"] = v.held[i]
			if w := v.unforwarded[v.topics[i].Name]; w != "" {
				out["topics"].([]map[string]any)[i]["unforwarded"] = w
			}
			if len(v.pausedKeys[i]) > 0 {
				out["topics"].([]map[string]any)[i]["paused_keys"] = pausedKeysJSON(v.pausedKeys[i])
			}
			if r := v.topics[i].KeyRateLimit; r > 0 {
				out["topics"].([]map[string]any)[i]["key_rate_limit"] = r
			}
			if len(v.keyRates[i]) > 0 {
				out["topics"].([]map[string]any)[i]["key_rates"] = v.keyRates[i]
			}
		}
		if memErr == nil {
			out["redis"] = memoryJSON(mem)
		}
		return writeJSON(s.out, out)
	}
	if err := printStats(s.out, v.topics, v.slots, allSlots, watch, v.unforwarded); err != nil {
		return err
	}
	printUnforwarded(s.out, v.topics, v.unforwarded)
	printRecurring(s.out, v.topics, v.slots)
	printDedupIDs(s.out, v.topics, v.slots)
	printPausedKeys(s.out, v.topics, v.pausedKeys)
	printKeyRates(s.out, v.topics, v.keyRates)
	printLimits(s.out, v.topics, v.limits, v.held)
	if memErr != nil {
		return nil
	}
	return printPressure(s.out, mem)
}

// total sums the slots of one topic into one row.
func total(slots []queue.SlotStats) queue.SlotStats {
	t := queue.SlotStats{Slot: -1}
	for _, s := range slots {
		t.Scheduled += s.Scheduled
		t.Overdue += s.Overdue
		t.Inflight += s.Inflight
		t.Dead += s.Dead
		t.Retrying += s.Retrying
		t.Recurring += s.Recurring
		t.DedupIDs += s.DedupIDs
		if s.Pause.Paused && !t.Pause.Paused {
			t.Pause = s.Pause
		}
		if t.Now.Before(s.Now) {
			t.Now = s.Now
		}
		if !s.NextDue.IsZero() && (t.NextDue.IsZero() || s.NextDue.Before(t.NextDue)) {
			t.NextDue = s.NextDue
		}
		if !s.OldestOverdue.IsZero() && (t.OldestOverdue.IsZero() || s.OldestOverdue.Before(t.OldestOverdue)) {
			t.OldestOverdue = s.OldestOverdue
		}
	}
	return t
}

func printStats(w io.Writer, topics []queue.Topic, all [][]queue.SlotStats, allSlots, watch bool, unf map[string]string) error {
	var now time.Time
	if len(all) > 0 && len(all[0]) > 0 {
		now = all[0][0].Now
	}
	if watch {
		fmt.Fprintf(w, "delaybridge stats at %s (Ctrl-C stops)\n\n", now.UTC().Format(time.RFC3339))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "TOPIC\tSLOT\tSCHEDULED\tOVERDUE\tRETRYING\tIN FLIGHT\tDEAD\tPAUSED\tNEXT DUE\tOLDEST OVERDUE\n")
	for i, t := range topics {
		row := func(slot string, st queue.SlotStats, note string) {
			next, oldest, paused := "-", "-", "-"
			if !st.NextDue.IsZero() {
				next = "in " + shortDuration(st.NextDue.Sub(st.Now))
			}
			if !st.OldestOverdue.IsZero() {
				oldest = shortDuration(st.Now.Sub(st.OldestOverdue))
			}
			if st.Pause.Paused {
				paused = "yes"
				if st.Pause.Reason != "" {
					paused = "yes: " + printable([]byte(st.Pause.Reason), 40)
				}
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", t.Name, slot, count(st.Scheduled), count(st.Overdue),
				count(st.Retrying), count(st.Inflight), count(st.Dead), paused, next, oldest+note)
		}
		note := ""
		if unf[t.Name] != "" {
			note = " (no forwarder: see below)"
		}
		row("all", total(all[i]), note)
		if len(all[i]) == 1 {
			continue
		}
		for _, st := range all[i] {
			if allSlots || st.Scheduled+st.Inflight+st.Dead > 0 {
				row(strconv.Itoa(st.Slot), st, "")
			}
		}
	}
	return tw.Flush()
}

// printUnforwarded says, below the table, why a topic's messages wait for
// no one: no live replica forwards it.
func printUnforwarded(w io.Writer, topics []queue.Topic, unf map[string]string) {
	for _, t := range topics {
		if r := unf[t.Name]; r != "" {
			fmt.Fprintf(w, "\n%s: %s\n", t.Name, r)
		}
	}
}

// printRecurring says how many recurring messages each topic has, when any
// has one (their waiting ticks are counted in SCHEDULED).
func printRecurring(w io.Writer, topics []queue.Topic, all [][]queue.SlotStats) {
	var parts []string
	for i, t := range topics {
		if n := total(all[i]).Recurring; n > 0 {
			parts = append(parts, t.Name+" "+count(n))
		}
	}
	if len(parts) > 0 {
		fmt.Fprintf(w, "\nrecurring (delaybridge recur ls TOPIC): %s\n", strings.Join(parts, ", "))
	}
}

// printDedupIDs says how many ids each topic with a dedup window remembers,
// when any remembers one.
func printDedupIDs(w io.Writer, topics []queue.Topic, all [][]queue.SlotStats) {
	var parts []string
	for i, t := range topics {
		if n := total(all[i]).DedupIDs; n > 0 {
			parts = append(parts, t.Name+" "+count(n))
		}
	}
	if len(parts) > 0 {
		fmt.Fprintf(w, "\ndedup ids remembered (DEDUP_WINDOW): %s\n", strings.Join(parts, ", "))
	}
}

// count prints a number with thousands separators.
func count(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

type slotJSON struct {
	Slot               *int    `json:"slot,omitempty"`
	Scheduled          int64   `json:"scheduled"`
	Overdue            int64   `json:"overdue"`
	Inflight           int64   `json:"inflight"`
	Dead               int64   `json:"dead"`
	NextDue            *string `json:"next_due"`
	OldestOverdue      *string `json:"oldest_overdue"`
	OldestOverdueAgeMS int64   `json:"oldest_overdue_age_ms"`
	Retrying           int64   `json:"retrying"`
	Paused             bool    `json:"paused"`
	PauseReason        string  `json:"pause_reason,omitempty"`
	PausedSince        *string `json:"paused_since,omitempty"`
	Recurring          int64   `json:"recurring"`
	DedupIDs           int64   `json:"dedup_ids"`
}

func toSlotJSON(st queue.SlotStats, withSlot bool) slotJSON {
	j := slotJSON{Scheduled: st.Scheduled, Overdue: st.Overdue, Inflight: st.Inflight, Dead: st.Dead,
		NextDue: jsonTime(st.NextDue), OldestOverdue: jsonTime(st.OldestOverdue),
		Retrying: st.Retrying, Paused: st.Pause.Paused, PauseReason: st.Pause.Reason, PausedSince: jsonTime(st.Pause.Since),
		Recurring: st.Recurring, DedupIDs: st.DedupIDs}
	if withSlot {
		slot := st.Slot
		j.Slot = &slot
	}
	if !st.OldestOverdue.IsZero() {
		j.OldestOverdueAgeMS = st.Now.Sub(st.OldestOverdue).Milliseconds()
	}
	return j
}

func statsJSON(topics []queue.Topic, all [][]queue.SlotStats) map[string]any {
	var now time.Time
	out := make([]map[string]any, len(topics))
	for i, t := range topics {
		slots := make([]slotJSON, len(all[i]))
		for j, st := range all[i] {
			slots[j] = toSlotJSON(st, true)
		}
		tot := total(all[i])
		now = tot.Now
		out[i] = map[string]any{"topic": t.Name, "total": toSlotJSON(tot, false), "slots": slots}
	}
	return map[string]any{"time": jsonTime(now), "topics": out}
}

// isTerminal reports whether w is a character device (a terminal), where
// --watch redraws the screen instead of appending.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// printPressure adds a line when Redis is full or may evict messages: the
// states an operator must act on (README, Operations).
func printPressure(w io.Writer, m queue.Memory) error {
	var err error
	switch {
	case m.Evicting():
		_, err = fmt.Fprintf(w, "\nREDIS EVICTING: %v\n", m.EvictingError())
	case m.Full():
		_, err = fmt.Fprintf(w, "\nREDIS FULL: %s of maxmemory %s used (policy %s): new messages are refused; the backlog still drains\n",
			count(m.Used), count(m.Max), m.Policy)
	}
	return err
}

// memoryJSON is Redis's memory state in stats --json.
func memoryJSON(m queue.Memory) map[string]any {
	return map[string]any{"used_memory": m.Used, "maxmemory": m.Max, "maxmemory_policy": m.Policy, "full": m.Full(), "evicting": m.Evicting()}
}
