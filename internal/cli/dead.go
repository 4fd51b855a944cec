package cli

import (
	"bufio"
	"context"
	"encoding/base64"
	"flag"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/delaybridge/delaybridge/queue"
)

const deadUsage = `usage: delaybridge dead list [flags] [TOPIC...]
       delaybridge dead requeue [flags] [TOPIC...] (--id ID | --member MEMBER | --all)
       delaybridge dead purge [flags] [TOPIC...] (--id ID | --member MEMBER | --all) [--yes]

Messages that failed every attempt, or that can never be delivered (a
permanent broker refusal, an invalid envelope, an infinite score), wait in the
dead set with the reason. list shows them, most recent deaths first; requeue
schedules them again, due now, with their attempts reset; purge deletes them
for good, after a confirmation (--yes skips it).

--id is an envelope's id, or on a raw topic the delivered message id (the
x-delaybridge-id header). --member is the member byte for byte ("-" reads it
from standard input). --id and --member need one TOPIC; --all and list take
any number (none: every configured topic).

Examples:
  delaybridge dead list orders --limit 5
  delaybridge dead requeue orders --id order-42
  delaybridge dead requeue --all
  delaybridge dead purge orders --all --yes
`

// runDead is `delaybridge dead list|requeue|purge`.
func runDead(ctx context.Context, args []string, s stdio) int {
	if len(args) == 0 {
		return misused(s.err, "dead", "want list, requeue or purge")
	}
	switch args[0] {
	case "list":
		return runDeadList(ctx, args[1:], s)
	case "requeue", "purge":
		return runDeadRepair(ctx, args[0], args[1:], s)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(s.out, deadUsage)
		return exitOK
	}
	return misused(s.err, "dead", fmt.Sprintf("unknown command %q: want list, requeue or purge", args[0]))
}

type deadJSON struct {
	Topic     string  `json:"topic"`
	Slot      int     `json:"slot"`
	ID        string  `json:"id"`
	Died      *string `json:"died"`
	DiedMS    int64   `json:"died_ms"`
	Reason    string  `json:"reason"`
	Member    *string `json:"member,omitempty"`
	MemberB64 *string `json:"member_b64,omitempty"`
}

func toDeadJSON(d queue.DeadMessage) deadJSON {
	j := deadJSON{Topic: d.Topic, Slot: d.Slot, ID: d.ID, Died: jsonTime(d.Died), DiedMS: d.Died.UnixMilli(), Reason: d.Reason}
	m := d.Member
	if utf8.ValidString(m) {
		j.Member = &m
	} else {
		b := base64.StdEncoding.EncodeToString([]byte(m))
		j.MemberB64 = &b
	}
	return j
}

func runDeadList(ctx context.Context, args []string, s stdio) int {
	fs := newFlags("dead list", deadUsage, s)
	slot := fs.Int("slot", queue.AllSlots, "only this `slot` (default: every slot)")
	limit := fs.Int("limit", 20, "most messages shown per topic (0: all)")
	id := fs.String("id", "", "only the dead messages with this `id`")
	asJSON := fs.Bool("json", false, "print JSON")
	names, code, ok := parseFlags(fs, args, s)
	if !ok {
		return code
	}
	c, topics, code := openTopics(fs, s, names)
	if c == nil {
		return code
	}
	defer c.close()
	var shown []queue.DeadMessage
	counts := map[string]int64{}
	for _, t := range topics {
		var (
			dead []queue.DeadMessage
			err  error
		)
		if *id != "" {
			dead, err = c.q.DeadFind(ctx, t, queue.ByID(*id))
			if err == nil && *limit > 0 && len(dead) > *limit {
				dead = dead[:*limit]
			}
		} else {
			dead, err = c.q.DeadList(ctx, t, *slot, *limit)
		}
		if err == nil {
			counts[t.Name], err = c.q.DeadCount(ctx, t)
		}
		if err != nil {
			return c.fail(err)
		}
		shown = append(shown, dead...)
	}
	if *asJSON {
		out := make([]deadJSON, len(shown))
		for i, d := range shown {
			out[i] = toDeadJSON(d)
		}
		writeJSON(s.out, map[string]any{"messages": out, "dead": counts})
		return exitOK
	}
	now := time.Now()
	for _, d := range shown {
		id := d.ID
		if id == "" {
			id = "(not a valid envelope)"
		}
		fmt.Fprintf(s.out, "%s  slot %d  id %s  died %s (%s)\n  reason: %s\n  member: %s\n",
			d.Topic, d.Slot, id, utcStamp(d.Died), relative(d.Died, now), d.Reason, printable([]byte(d.Member), 200))
	}
	for _, t := range topics {
		n := 0
		for _, d := range shown {
			if d.Topic == t.Name {
				n++
			}
		}
		fmt.Fprintf(s.out, "%s: %d dead, %d shown\n", t.Name, counts[t.Name], n)
	}
	return exitOK
}

// runDeadRepair is `dead requeue` and `dead purge`.
func runDeadRepair(ctx context.Context, verb string, args []string, s stdio) int {
	fs := newFlags("dead "+verb, deadUsage, s)
	id := fs.String("id", "", "the dead message(s) with this `id`")
	member := fs.String("member", "", "the dead `member`, byte for byte (\"-\": standard input)")
	all := fs.Bool("all", false, "every dead message")
	yes := fs.Bool("yes", false, "purge: do not ask for confirmation")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	memberSet := false
	names, code, ok := parseFlags(fs, args, s)
	if !ok {
		return code
	}
	fs.Visit(func(f *flag.Flag) { memberSet = memberSet || f.Name == "member" })
	if boolInt(*id != "")+boolInt(memberSet)+boolInt(*all) != 1 {
		return badUsage(fs, s, "give exactly one of --id, --member or --all")
	}
	if !*all && len(names) != 1 {
		return badUsage(fs, s, "--id and --member need exactly one TOPIC")
	}
	c, topics, code := openTopics(fs, s, names)
	if c == nil {
		return code
	}
	defer c.close()
	ref := queue.Ref{ID: *id, All: *all}
	if memberSet {
		m, err := readInput(s, *member, true)
		if err != nil {
			return c.fail(err)
		}
		ref = queue.ByMember(m)
	}
	if verb == "purge" && !*yes {
		if code, ok := c.confirmPurge(ctx, topics, ref); !ok {
			return code
		}
	}
	results := map[string]any{}
	for _, t := range topics {
		res, line, err := c.repair(ctx, verb, t, ref)
		if err != nil {
			return c.fail(err)
		}
		results[t.Name] = res
		if !*asJSON {
			fmt.Fprintln(s.out, line)
		}
	}
	if *asJSON {
		writeJSON(s.out, results)
	}
	return exitOK
}

// repair requeues or purges what ref names in t, and returns the counts and
// the line that reports them.
func (c *cli) repair(ctx context.Context, verb string, t queue.Topic, ref queue.Ref) (map[string]int, string, error) {
	if verb == "purge" {
		n, err := c.q.Purge(ctx, t, ref)
		if err != nil {
			return nil, "", err
		}
		return map[string]int{"purged": n}, fmt.Sprintf("%s: purged %s", t.Name, plural(n, "dead message")), nil
	}
	r, err := c.q.Requeue(ctx, t, ref)
	if err != nil {
		return nil, "", err
	}
	line := fmt.Sprintf("%s: requeued %s, due now", t.Name, plural(r.Requeued, "dead message"))
	if r.Skipped > 0 {
		line += fmt.Sprintf("; %d skipped: their id names a newer scheduled or in-flight message", r.Skipped)
	}
	return map[string]int{"requeued": r.Requeued, "skipped": r.Skipped}, line, nil
}

// confirmPurge counts what a purge would delete and asks on stderr; ok false
// means stop with code.
func (c *cli) confirmPurge(ctx context.Context, topics []queue.Topic, ref queue.Ref) (int, bool) {
	var n int64
	var where []string
	for _, t := range topics {
		var k int64
		if ref.All {
			var err error
			if k, err = c.q.DeadCount(ctx, t); err != nil {
				return c.fail(err), false
			}
		} else {
			found, err := c.q.DeadFind(ctx, t, ref)
			if err != nil {
				return c.fail(err), false
			}
			k = int64(len(found))
		}
		n += k
		where = append(where, t.Name)
	}
	if n == 0 {
		if ref.All {
			fmt.Fprintln(c.s.out, "nothing to purge")
			return exitOK, false
		}
		return c.fail(fmt.Errorf("purge %s: %w", ref, queue.ErrNotFound)), false
	}
	fmt.Fprintf(c.s.err, "purge %s of %s for good? [y/N] ", plural(n, "dead message"), strings.Join(where, ", "))
	answer, err := bufio.NewReader(c.s.in).ReadString('\n')
	answer = strings.ToLower(strings.TrimSpace(answer))
	if answer != "y" && answer != "yes" {
		if err != nil && answer == "" {
			fmt.Fprintln(c.s.err, "\nno answer on standard input: nothing purged (--yes skips the question)")
		} else {
			fmt.Fprintln(c.s.err, "nothing purged")
		}
		return exitFail, false
	}
	return 0, true
}
