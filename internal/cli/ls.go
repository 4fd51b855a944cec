package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/delaybridge/delaybridge/queue"
)

const lsUsage = `usage: delaybridge ls [flags] TOPIC

Lists a topic's messages in one state, slot after slot: scheduled (by due
time, retrying ones included), retrying (scheduled again after a failed
attempt), inflight (claimed, awaiting the broker) or dead (oldest death
first). Each row: id, slot, state, due time, attempts, last error and the
start of the body (text as is, anything else escaped).

A page ends with a cursor; --after CURSOR shows the next one. Every Redis
call reads at most --limit members, so listing never blocks Redis, however
large the topic.

Examples:
  delaybridge ls orders
  delaybridge ls orders --state retrying --limit 50
  delaybridge ls orders --due-before 2030-01-02T15:04:05Z --json
  delaybridge ls orders --after eyJ...
`

// runLs is `delaybridge ls`.
func runLs(ctx context.Context, args []string, s stdio) int {
	fs := newFlags("ls", lsUsage, s)
	state := fs.String("state", "scheduled", "scheduled, retrying, inflight or dead")
	dueBefore := fs.String("due-before", "", "only messages due before this `time` (RFC 3339 or Unix ms)")
	limit := fs.Int("limit", 20, fmt.Sprintf("most messages per page (1 to %d)", queue.MaxListLimit))
	after := fs.String("after", "", "continue after this `cursor` (from the last page)")
	asJSON := fs.Bool("json", false, "print JSON")
	pos, code, ok := parseFlags(fs, args, s)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return badUsage(fs, s, "want exactly one TOPIC")
	}
	opt := queue.ListOptions{State: queue.ListState(*state), Limit: *limit, Cursor: *after}
	switch opt.State {
	case queue.ListScheduled, queue.ListRetrying, queue.ListInflight, queue.ListDead:
	default:
		return badUsage(fs, s, "unknown --state %q: want scheduled, retrying, inflight or dead", *state)
	}
	if *limit < 1 || *limit > queue.MaxListLimit {
		return badUsage(fs, s, "--limit %d is not from 1 to %d", *limit, queue.MaxListLimit)
	}
	if *dueBefore != "" {
		t, err := parseTime(*dueBefore)
		if err != nil {
			return badUsage(fs, s, "--due-before %q is neither RFC 3339 nor Unix milliseconds", *dueBefore)
		}
		if opt.State == queue.ListDead {
			return badUsage(fs, s, "--due-before does not apply to dead messages")
		}
		opt.DueBefore = t
	}
	c, t, code := openTopic(fs, s, pos[0])
	if c == nil {
		return code
	}
	defer c.close()
	page, err := c.q.List(ctx, t, opt)
	if err != nil {
		if errors.Is(err, queue.ErrBadCursor) {
			return badUsage(fs, s, "%v", err)
		}
		return c.fail(err)
	}
	if *asJSON {
		err = writeJSON(s.out, lsJSON(t, opt.State, page))
	} else {
		err = printLs(s.out, t, page)
	}
	if err != nil {
		return c.fail(fmt.Errorf("write listing: %w", err))
	}
	return exitOK
}

// entryJSON is one message of ls and get.
type entryJSON struct {
	ID          string  `json:"id"`
	Slot        int     `json:"slot"`
	State       string  `json:"state"`
	Due         *string `json:"due"`
	DueMS       *int64  `json:"due_ms"`
	LeaseUntil  *string `json:"lease_until,omitempty"`
	Died        *string `json:"died,omitempty"`
	Attempts    int     `json:"attempts"`
	LastError   string  `json:"last_error"`
	BodyPreview string  `json:"body_preview"`
	BodyBytes   int     `json:"body_bytes"`
	Member      *string `json:"member,omitempty"`
	MemberB64   *string `json:"member_b64,omitempty"`
}

// previewBytes is how much of a body ls shows.
const previewBytes = 60

func toEntryJSON(t queue.Topic, e queue.Entry) entryJSON {
	id, body := describeMember(t, e.Member)
	j := entryJSON{ID: id, Slot: e.Slot, State: e.State, Due: jsonTime(e.Due), LeaseUntil: jsonTime(e.LeaseUntil),
		Died: jsonTime(e.Died), Attempts: e.Attempts, LastError: e.LastError,
		BodyPreview: printable(body, previewBytes), BodyBytes: len(body)}
	if !e.Due.IsZero() {
		ms := e.Due.UnixMilli()
		j.DueMS = &ms
	}
	return j
}

// describeMember is a member's id (the envelope's, or MessageID) and body;
// a member that does not decode shows as its own bytes.
func describeMember(t queue.Topic, member string) (id string, body []byte) {
	m, err := t.Decode(member)
	if err != nil {
		return "", []byte(member)
	}
	return m.ID, m.Body
}

func lsJSON(t queue.Topic, state queue.ListState, p queue.Page) map[string]any {
	if state == "" {
		state = queue.ListScheduled
	}
	out := make([]entryJSON, len(p.Entries))
	for i, e := range p.Entries {
		out[i] = toEntryJSON(t, e)
	}
	var next *string
	if p.Next != "" {
		next = &p.Next
	}
	return map[string]any{"topic": t.Name, "state": state, "messages": out, "next": next}
}

func printLs(w io.Writer, t queue.Topic, p queue.Page) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "ID\tSLOT\tSTATE\tDUE\tATTEMPTS\tLAST ERROR\tBODY\n")
	now := time.Now()
	for _, e := range p.Entries {
		id, body := describeMember(t, e.Member)
		when := "-"
		switch {
		case !e.Due.IsZero():
			when = relative(e.Due, now)
		case !e.Died.IsZero():
			when = "died " + relative(e.Died, now)
		}
		lastErr := "-"
		if e.LastError != "" {
			lastErr = printable([]byte(e.LastError), 40)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%d\t%s\t%s\n", printable([]byte(id), 40), e.Slot, e.State, when, e.Attempts, lastErr, printable(body, previewBytes))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if p.Next != "" {
		_, err := fmt.Fprintf(w, "\nmore: delaybridge ls %s --after %s\n", t.Name, p.Next)
		return err
	}
	_, err := fmt.Fprintf(w, "\n%s shown; no more\n", plural(len(p.Entries), "message"))
	return err
}
