package cli

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/delaybridge/delaybridge/queue"
)

const scheduleUsage = `usage: delaybridge schedule [flags] TOPIC [BODY]

Schedules a message on TOPIC. The body is BODY, or standard input when BODY is
absent or "-" (any bytes; on an envelope topic a binary body travels as
body_b64), but never a terminal: pipe it. Put "--" before a BODY that starts
with "-". An empty body is refused unless --empty is given.

On an envelope topic (DELAYBRIDGE_TOPIC_<NAME>_FORMAT=envelope) the message has
an id: scheduling an id that exists replaces that message. Without --id a
random id is made up and printed. On a raw topic the body is the member: the
same bytes scheduled twice are one message, moved to the later call's time.

Examples:
  delaybridge schedule orders --in 30m '{"order":42}'
  delaybridge schedule orders --at 2030-01-02T15:04:05Z --id order-42 --header tenant=eu < body.json
  delaybridge schedule orders --in 1h --json --base64 AAEC
`

// runSchedule is `delaybridge schedule`.
func runSchedule(ctx context.Context, args []string, s stdio) int {
	fs := newFlags("schedule", scheduleUsage, s)
	at := fs.String("at", "", "due `time`: RFC 3339 (2030-01-02T15:04:05Z) or Unix milliseconds")
	in := fs.String("in", "", "due after this `duration` (90s, 15m, 36h) from Redis's clock (default: now)")
	id := fs.String("id", "", "envelope topics: the message `id` (1-255 bytes)")
	headers := headerFlags{}
	fs.Var(headers, "header", "envelope topics: a header `name=value` (repeatable)")
	routingKey := fs.String("routing-key", "", "envelope topics: this message's AMQP routing `key` or Kafka record key")
	key := fs.String("key", "", "envelope topics: the message's fair-share `key` (tenant, customer, group; up to 256 bytes)")
	b64 := fs.Bool("base64", false, "the body is base64 text: decode it first")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	empty := fs.Bool("empty", false, "allow an empty body (refused otherwise: usually a mistake)")
	pos, code, ok := parseFlags(fs, args, s)
	if !ok {
		return code
	}
	if len(pos) < 1 || len(pos) > 2 {
		return badUsage(fs, s, "want TOPIC and at most one BODY, got %d arguments", len(pos))
	}
	when, given, err := parseWhen(*at, *in)
	if err != nil {
		return badUsage(fs, s, "%v", err)
	}
	if !given {
		when = queue.In(0)
	}
	if (len(pos) < 2 || pos[1] == "-") && readsTerminal(s.in) {
		return badUsage(fs, s, "no BODY given and standard input is a terminal: pass the body as an argument or pipe it (echo '{...}' | delaybridge schedule %s)", pos[0])
	}
	c, t, code := openTopic(fs, s, pos[0])
	if c == nil {
		return code
	}
	defer c.close()
	body, err := readInput(s, argOr(pos, 1), len(pos) == 2)
	if err != nil {
		return c.fail(err)
	}
	if *b64 {
		if body, err = base64.StdEncoding.DecodeString(string(body)); err != nil {
			return badUsage(fs, s, "the body is not standard base64: %v", err)
		}
	}
	if len(body) == 0 && !*empty {
		return badUsage(fs, s, "the body is empty: give --empty to schedule an empty message")
	}
	msg := queue.Message{ID: *id, Body: body, Headers: headers, RoutingKey: *routingKey, Key: *key}
	if t.Format == queue.FormatEnvelope && msg.ID == "" {
		msg.ID = randomID()
	}
	r, err := c.q.Schedule(envTraceContext(ctx), t, msg, when)
	if err != nil {
		if queue.Unconfirmed(err) && t.Format == queue.FormatEnvelope {
			fmt.Fprintf(s.err, "delaybridge schedule: the message's id is %s: repeat with --id %s\n", msg.ID, msg.ID)
		}
		return c.fail(err)
	}
	if err := printReceipt(s, r, *asJSON); err != nil {
		return c.fail(fmt.Errorf("write result: %w", err))
	}
	c.warnUnforwarded(ctx, t)
	return exitOK
}

// printReceipt tells where a scheduled message went, or that it was a
// duplicate: its id delivered within the topic's dedup window, nothing
// scheduled.
func printReceipt(s stdio, r queue.Receipt, asJSON bool) error {
	if asJSON && r.Duplicate {
		// Nothing was scheduled: no due time, nothing replaced (it printed
		// "replaced":"nothing" and the due time asked for, as if scheduled).
		return writeJSON(s.out, map[string]any{"topic": r.Topic, "id": r.ID, "duplicate": true, "scheduled": false})
	}
	if asJSON {
		return writeJSON(s.out, map[string]any{
			"topic": r.Topic, "slot": r.Slot, "id": r.ID,
			"due": jsonTime(r.Due()), "due_ms": r.Score, "replaced": r.Replaced.String(),
			"duplicate": false, "scheduled": true,
		})
	}
	if r.Duplicate {
		_, err := fmt.Fprintf(s.out, "not scheduled: %s on %s was delivered already (or is being delivered), within the topic's dedup window; nothing was scheduled\n", r.ID, r.Topic)
		return err
	}
	_, err := fmt.Fprintf(s.out, "scheduled %s on %s (slot %d), due %s (%s)%s\n", r.ID, r.Topic, r.Slot,
		utcStamp(r.Due()), relative(r.Due(), time.Now()), replacedNote(r.Replaced))
	return err
}

func replacedNote(r queue.Replaced) string {
	switch r {
	case queue.ReplacedScheduled:
		return "; replaced the message scheduled before"
	case queue.ReplacedInFlight:
		return "; the previous version is being delivered and will not be retried"
	}
	return ""
}

func argOr(pos []string, i int) string {
	if i < len(pos) {
		return pos[i]
	}
	return ""
}

// randomID is an id for an envelope scheduled without one.
func randomID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
