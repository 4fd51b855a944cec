package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/delaybridge/delaybridge/internal/flowtext"
	"github.com/delaybridge/delaybridge/internal/opstext"
	"github.com/delaybridge/delaybridge/membership"
	"github.com/delaybridge/delaybridge/queue"
)

const topicsUsage = `usage: delaybridge topics [--json]
       delaybridge topics set TOPIC [--slots N] [--format raw|envelope] [--key KEY] [--yes]
       delaybridge topics forget TOPIC [--yes]
       delaybridge topics purge TOPIC [--yes]

Shows the topic registry (<prefix>:topics): the layout (slots, format, key)
and destination each daemon recorded at start, which producers and the CLI
agree on, and whether this shell's DELAYBRIDGE_TOPIC_* settings agree; and
each topic's flow control: the limits in force (set by delaybridge limit,
else those the running daemons report their environments give the topic,
per group of replicas where they differ; this shell's own only while no
daemon reports them) and, while a replica holds the topic, why.

set changes a topic's slots, format or key (a topic not registered yet is
added); forget removes it (its messages stay in Redis). Both ask for a
confirmation on standard input unless --yes is given, and both are refused
while a daemon replica is live: it forwards by the registered layout. To
change a topic a daemon forwards, restart every replica with the new
settings instead: with none left on the old ones, the first to start takes
the registry over.

purge deletes a topic's data: every key of the topic (scheduled, in-flight,
retrying and dead messages, the id index, the delivered set, recurrences,
pause and limits), not the registry entry, and nothing of another topic. It
asks for a confirmation unless --yes is given, and is refused while a live
replica forwards the topic (a daemon run with DELAYBRIDGE_OWNERSHIP=all does
not heartbeat: stop it first).

Examples:
  delaybridge topics
  delaybridge topics set orders --format envelope
  delaybridge topics forget old-orders --yes
  delaybridge topics purge old-orders
`

// runTopics is `delaybridge topics`.
func runTopics(ctx context.Context, args []string, s stdio) int {
	fs := newFlags("topics", topicsUsage, s)
	asJSON := fs.Bool("json", false, "print the registry as JSON")
	slots := fs.String("slots", "", "set: the slot `count` (a power of two)")
	format := fs.String("format", "", "set: the member `format` (raw or envelope)")
	key := fs.String("key", "", "set: the adopted `key` (one slot)")
	yes := fs.Bool("yes", false, "set, forget, purge: change without asking")
	pos, code, ok := parseFlags(fs, args, s)
	if !ok {
		return code
	}
	c, code := openCLI("topics", s)
	if c == nil {
		return code
	}
	defer c.close()
	switch {
	case len(pos) == 0:
		return c.listTopics(ctx, *asJSON)
	case pos[0] == "set" && len(pos) == 2:
		l, had, err := c.registered(ctx, pos[1])
		if err != nil {
			return c.fail(err)
		}
		next, err := edited(l, *slots, *format, *key)
		if err != nil {
			return badUsage(fs, s, "%v", err)
		}
		what := fmt.Sprintf("register topic %s: %s", pos[1], next)
		if had {
			what = fmt.Sprintf("change topic %s in the registry: %s -> %s", pos[1], l, next)
		}
		return c.confirmed(*yes, what, func() error { return c.q.SetLayout(ctx, c.cfg.KeyPrefix, next) })
	case pos[0] == "forget" && len(pos) == 2:
		l, had, err := c.registered(ctx, pos[1])
		if err != nil {
			return c.fail(err)
		}
		if !had {
			return c.fail(fmt.Errorf("topic %s is not in the registry %s", pos[1], queue.TopicsKey(c.cfg.KeyPrefix)))
		}
		what := fmt.Sprintf("forget topic %s (%s); its messages stay in Redis", pos[1], l)
		return c.confirmed(*yes, what, func() error {
			_, err := c.q.ForgetLayout(ctx, c.cfg.KeyPrefix, pos[1])
			return err
		})
	}
	if len(pos) == 2 && pos[0] == "purge" {
		return c.purgeTopic(ctx, pos[1], *yes)
	}
	return badUsage(fs, s, "want no argument, set TOPIC, forget TOPIC or purge TOPIC")
}

// registered is the registry's entry of name, or a new one-slot raw entry.
func (c *cli) registered(ctx context.Context, name string) (queue.Layout, bool, error) {
	l, had, err := c.q.Layout(ctx, c.cfg.KeyPrefix, name)
	if !had {
		l = queue.Layout{Name: name, Slots: 1, Format: queue.FormatRaw}
	}
	return l, had, err
}

// edited is l with the settings given on the command line.
func edited(l queue.Layout, slots, format, key string) (queue.Layout, error) {
	if slots != "" {
		n, err := strconv.Atoi(slots)
		if err != nil {
			return l, fmt.Errorf("--slots %q is not a number", slots)
		}
		l.Slots = n
	}
	if format != "" {
		l.Format = queue.Format(format)
	}
	if key != "" {
		l.Key = key
	}
	return l, l.Topic("").Validate()
}

// confirmed runs change after the user said yes (or with --yes), and says
// what it did.
func (c *cli) confirmed(yes bool, what string, change func() error) int {
	if !yes {
		fmt.Fprintf(c.s.out, "%s\nproceed? [y/N] ", what)
		line, _ := bufio.NewReader(c.s.in).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(line)); a != "y" && a != "yes" {
			fmt.Fprintln(c.s.out, "nothing changed")
			return exitFail
		}
	}
	if err := change(); err != nil {
		return c.fail(err)
	}
	fmt.Fprintf(c.s.out, "done: %s\n", what)
	return exitOK
}

// listTopics prints the registry, and for each topic configured here
// whether its settings agree.
func (c *cli) listTopics(ctx context.Context, asJSON bool) int {
	ls, err := c.q.Layouts(ctx, c.cfg.KeyPrefix)
	if err != nil {
		return c.fail(err)
	}
	local := map[string]queue.Layout{}
	for _, t := range c.cfg.Topics {
		local[t.Name] = queue.LayoutOf(t.Queue(c.cfg.KeyPrefix))
	}
	ts := make([]queue.Topic, len(ls))
	for i, l := range ls {
		ts[i] = l.Topic(c.cfg.KeyPrefix)
	}
	limits, err := c.limitsInForce(ctx, ts)
	var held []heldJSON
	if err == nil {
		held, err = c.heldNow(ctx, ts)
	}
	var notes []topicNote
	if err == nil {
		notes, err = c.topicNotes(ctx, ts)
	}
	if err != nil {
		return c.fail(err)
	}
	if asJSON {
		out := []map[string]any{}
		for i, l := range ls {
			out = append(out, map[string]any{"topic": l.Name, "layout": l, "here": agreement(l, local), "limits": limits[i], "held": held[i]})
		}
		return c.written(writeJSON(c.s.out, map[string]any{"registry": queue.TopicsKey(c.cfg.KeyPrefix), "topics": out, "unforwarded": notes}))
	}
	if err := printTopics(c.s.out, queue.TopicsKey(c.cfg.KeyPrefix), ls, local, limits, held); err != nil {
		return c.written(err)
	}
	for _, n := range notes {
		fmt.Fprintf(c.s.out, "%s: %s\n", n.Topic, n.Note)
	}
	return exitOK
}

// topicNote is a topic no live replica forwards, as topics lists it below
// the registry's: registered ones, the ones this shell configures that no
// daemon registered, and those a producer scheduled to (queue.Waiting).
type topicNote struct {
	Topic      string `json:"topic"`
	Registered bool   `json:"registered"`
	Note       string `json:"note"`
}

// topicNotes are the topics of registered, of this shell's configuration
// and of queue.Waiting that no live replica forwards.
func (c *cli) topicNotes(ctx context.Context, registered []queue.Topic) ([]topicNote, error) {
	f, err := membership.New(c.q).Forwarding(ctx, c.cfg.KeyPrefix)
	var waiting []queue.Layout
	if err == nil {
		waiting, err = c.q.Waiting(ctx, c.cfg.KeyPrefix)
	}
	if err != nil {
		return nil, err
	}
	var out []topicNote
	seen := map[string]bool{}
	for _, t := range registered {
		seen[t.Name] = true
		if w := opstext.Unforwarded(f, t.Name); w != "" {
			out = append(out, topicNote{t.Name, true, w})
		}
	}
	unregistered := func(name, where string) {
		if seen[name] {
			return
		}
		seen[name] = true
		note := "not registered: no daemon with it in DELAYBRIDGE_TOPICS has started, so nothing forwards it"
		if w := opstext.Unforwarded(f, name); w != "" {
			note = "not registered; " + w
		}
		out = append(out, topicNote{name, false, where + note})
	}
	for _, t := range c.cfg.Topics {
		unregistered(t.Name, "in this shell's DELAYBRIDGE_TOPICS, ")
	}
	for _, l := range waiting {
		unregistered(l.Name, "scheduled to by a producer, ")
	}
	return out, nil
}

func printTopics(w io.Writer, key string, ls []queue.Layout, local map[string]queue.Layout, limits []limitsJSON, held []heldJSON) error {
	if len(ls) == 0 {
		_, err := fmt.Fprintf(w, "%s is empty: a daemon registers its topics when it starts\n", key)
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TOPIC\tLAYOUT\tSETTINGS HERE\tFLOW CONTROL")
	for i, l := range ls {
		flow := "-"
		if t := flowtext.Limits(limits[i]); t != "" {
			flow = t
		}
		if h := describeHeld(held[i], limits[i]); h != "" {
			flow = strings.TrimPrefix(flow+"; "+h, "-; ")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", l.Name, l, agreement(l, local), flow)
	}
	return tw.Flush()
}

// agreement says whether this shell's settings of l's topic agree with it.
func agreement(l queue.Layout, local map[string]queue.Layout) string {
	mine, ok := local[l.Name]
	switch {
	case !ok:
		return "-"
	case mine.SameData(l):
		return "agree"
	}
	return fmt.Sprintf("DIFFER (%s): see delaybridge topics --help", mine)
}

func (c *cli) written(err error) int {
	if err != nil {
		return c.fail(fmt.Errorf("write: %w", err))
	}
	return exitOK
}
