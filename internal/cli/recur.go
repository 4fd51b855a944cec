package cli

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/delaybridge/delaybridge/queue"
)

const recurUsage = `usage: delaybridge recur set [flags] TOPIC ID SPEC [BODY]
       delaybridge recur rm TOPIC ID
       delaybridge recur ls [--json] TOPIC

A recurrence delivers the same message at every tick of SPEC: a 5-field cron
expression ("0 9 * * 1-5"), a 6-field one whose first field is seconds
("*/10 * * * * *"), @hourly, @daily, @weekly, @monthly, @yearly, or
"@every DURATION" (Go syntax, at least 1s). Cron fields are read in the zone
--tz (IANA, default UTC). Each tick carries the headers
x-delaybridge-recurrence (the ID) and x-delaybridge-due (the tick, Unix ms),
and a message id "ID@<tick ms>" that stays the same for every delivery of
one tick.

set creates the recurrence, or replaces the one of the same ID (its waiting
tick is dropped; the new one ticks from now). The body is BODY, or standard
input when BODY is absent or "-". Headers and the routing key work on raw
topics too. rm stops it: a tick a daemon claimed already (up to 100 ms before
it falls due) is still delivered, no later one. ls lists them with the next
tick and the last delivered one.

Missed ticks are not replayed: after a gap (broker down, topic paused, a tick
waiting to be retried), one tick from inside it is delivered, then the
schedule continues. A tick that dies does not stop its recurrence. A local time
that daylight saving skips fires once at the end of the gap; one it repeats
fires once, at its first occurrence.

Examples:
  delaybridge recur set digests daily-digest '0 9 * * *' --tz Europe/Berlin '{"kind":"digest"}'
  delaybridge recur set heartbeats hb '@every 1s' --routing-key hb ping
  delaybridge recur ls digests
  delaybridge recur rm digests daily-digest
`

// runRecur is `delaybridge recur set|rm|ls`.
func runRecur(ctx context.Context, args []string, s stdio) int {
	if len(args) == 0 {
		return misused(s.err, "recur", "want set, rm or ls")
	}
	switch args[0] {
	case "set":
		return runRecurSet(ctx, args[1:], s)
	case "rm":
		return runRecurRm(ctx, args[1:], s)
	case "ls":
		return runRecurLs(ctx, args[1:], s)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(s.out, recurUsage)
		return exitOK
	}
	return misused(s.err, "recur", fmt.Sprintf("unknown command %q: want set, rm or ls", args[0]))
}

func runRecurSet(ctx context.Context, args []string, s stdio) int {
	fs := newFlags("recur set", recurUsage, s)
	tz := fs.String("tz", "", "the IANA time `zone` cron fields are read in (default UTC)")
	headers := headerFlags{}
	fs.Var(headers, "header", "a header `name=value` of every tick (repeatable)")
	routingKey := fs.String("routing-key", "", "every tick's AMQP routing `key` or Kafka record key")
	key := fs.String("key", "", "every tick's fair-share `key` (tenant, customer, group; up to 256 bytes)")
	empty := fs.Bool("empty", false, "allow an empty body (refused otherwise: usually a mistake)")
	pos, code, ok := parseFlags(fs, args, s)
	if !ok {
		return code
	}
	if len(pos) < 3 || len(pos) > 4 {
		return badUsage(fs, s, "want TOPIC, ID, SPEC and at most one BODY, got %d arguments", len(pos))
	}
	// ParseSpec takes Local (a recurrence stored with it keeps ticking);
	// a new one is refused here, before a body is read or Redis reached.
	if err := queue.CheckNewZone(*tz); err != nil {
		return badUsage(fs, s, "%v", err)
	}
	if _, err := queue.ParseSpec(pos[2], *tz); err != nil {
		return badUsage(fs, s, "%v", err)
	}
	if (len(pos) < 4 || pos[3] == "-") && readsTerminal(s.in) {
		return badUsage(fs, s, "no BODY given and standard input is a terminal: pass the body as an argument or pipe it")
	}
	c, t, code := openTopic(fs, s, pos[0])
	if c == nil {
		return code
	}
	defer c.close()
	body, err := readInput(s, argOr(pos, 3), len(pos) == 4)
	if err != nil {
		return c.fail(err)
	}
	if len(body) == 0 && !*empty {
		return badUsage(fs, s, "the body is empty: give --empty to send an empty message")
	}
	r := queue.Recurrence{ID: pos[1], Spec: pos[2], Zone: *tz,
		Message: queue.Message{Body: body, Headers: headers, RoutingKey: *routingKey, Key: *key}}
	first, err := c.q.SetRecurrence(envTraceContext(ctx), t, r)
	if err != nil {
		return c.fail(err)
	}
	fmt.Fprintf(s.out, "recurrence %s on %s (slot %d): %s %s, first tick %s (%s)\n", r.ID, t.Name, t.SlotOfID(r.ID),
		r.Spec, zoneName(r.Zone), utcStamp(first)+localStamp(first, r.Zone), relative(first, time.Now()))
	c.warnUnforwarded(ctx, t)
	return exitOK
}

func runRecurRm(ctx context.Context, args []string, s stdio) int {
	fs := newFlags("recur rm", recurUsage, s)
	pos, code, ok := parseFlags(fs, args, s)
	if !ok {
		return code
	}
	if len(pos) != 2 {
		return badUsage(fs, s, "want TOPIC and ID, got %d arguments", len(pos))
	}
	c, t, code := openTopic(fs, s, pos[0])
	if c == nil {
		return code
	}
	defer c.close()
	found, err := c.q.RemoveRecurrence(ctx, t, pos[1])
	if err != nil {
		return c.fail(err)
	}
	if !found {
		fmt.Fprintf(s.err, "delaybridge recur rm: no recurrence %s on %s\n", pos[1], t.Name)
		return exitFail
	}
	fmt.Fprintf(s.out, "removed recurrence %s from %s\n", pos[1], t.Name)
	return exitOK
}

// recurJSON is one line of `recur ls --json`.
type recurJSON struct {
	Topic      string            `json:"topic"`
	Slot       int               `json:"slot"`
	ID         string            `json:"id"`
	Spec       string            `json:"spec"`
	Zone       string            `json:"zone"`
	Next       *string           `json:"next"`
	NextMS     int64             `json:"next_ms,omitempty"`
	Last       *string           `json:"last"`
	LastMS     int64             `json:"last_ms,omitempty"`
	Headers    map[string]string `json:"headers,omitempty"`
	RoutingKey string            `json:"routing_key,omitempty"`
	BodyBytes  int               `json:"body_bytes"`
}

func runRecurLs(ctx context.Context, args []string, s stdio) int {
	fs := newFlags("recur ls", recurUsage, s)
	asJSON := fs.Bool("json", false, "print one JSON object per recurrence")
	pos, code, ok := parseFlags(fs, args, s)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return badUsage(fs, s, "want one TOPIC, got %d arguments", len(pos))
	}
	c, t, code := openTopic(fs, s, pos[0])
	if c == nil {
		return code
	}
	defer c.close()
	rs, err := c.q.AllRecurrences(ctx, t)
	if err != nil {
		return c.fail(err)
	}
	if *asJSON {
		for _, r := range rs {
			j := recurJSON{Topic: t.Name, Slot: r.Slot, ID: r.ID, Spec: r.Spec, Zone: zoneName(r.Zone),
				Next: jsonTime(r.Next), Last: jsonTime(r.Last), Headers: r.Message.Headers,
				RoutingKey: r.Message.RoutingKey, BodyBytes: len(r.Message.Body)}
			if !r.Next.IsZero() {
				j.NextMS = r.Next.UnixMilli()
			}
			if !r.Last.IsZero() {
				j.LastMS = r.Last.UnixMilli()
			}
			if err := writeJSON(s.out, j); err != nil {
				return c.fail(fmt.Errorf("write result: %w", err))
			}
		}
		return exitOK
	}
	w := tabwriter.NewWriter(s.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tSPEC\tZONE\tNEXT\tLAST")
	now := time.Now()
	for _, r := range rs {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", r.ID, r.Spec, zoneName(r.Zone), stampOrDash(r.Next, now)+localStamp(r.Next, r.Zone), stampOrDash(r.Last, now))
	}
	if err := w.Flush(); err != nil {
		return c.fail(fmt.Errorf("write result: %w", err))
	}
	return exitOK
}

// localStamp is " = 2030-01-02 10:00 CET" when zone is not UTC: a
// recurrence's spec reads in its zone's wall time, and UTC alone made the
// operator convert.
func localStamp(t time.Time, zone string) string {
	if t.IsZero() || zone == "" || zone == "UTC" {
		return ""
	}
	loc, err := time.LoadLocation(zone)
	if err != nil {
		return ""
	}
	return " = " + t.In(loc).Format("2006-01-02 15:04:05 MST")
}

func zoneName(z string) string {
	if z == "" {
		return "UTC"
	}
	return z
}

func stampOrDash(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return utcStamp(t) + " (" + relative(t, now) + ")"
}
