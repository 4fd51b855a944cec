package cli

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/delaybridge/delaybridge/queue"
)

const getUsage = `usage: delaybridge get [flags] TOPIC (--id ID | --member MEMBER | --member-file FILE)

Shows one message wherever it is: scheduled, retrying, inflight, dead or
absent (delivered, cancelled or never scheduled), with its slot, due time,
attempts and last error. Exits 1 when the message is absent.

` + memberHelp + `
Examples:
  delaybridge get orders --id order-42
  delaybridge get legacy --member '{"order":42}'
  delaybridge get legacy --member-file payload.bin --json
`

// runGet is `delaybridge get`.
func runGet(ctx context.Context, args []string, s stdio) int {
	fs := newFlags("get", getUsage, s)
	mf := addMemberFlags(fs)
	asJSON := fs.Bool("json", false, "print JSON")
	pos, code, ok := parseFlags(fs, args, s)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return badUsage(fs, s, "want exactly one TOPIC")
	}
	if err := mf.check(false); err != nil {
		return badUsage(fs, s, "%v", err)
	}
	c, t, code := openTopic(fs, s, pos[0])
	if c == nil {
		return code
	}
	defer c.close()
	ref, err := mf.ref(ctx, c, t, nil)
	if errors.Is(err, queue.ErrNotFound) {
		fmt.Fprintf(s.err, "delaybridge get: %v\n", err)
		return exitFail
	}
	if err != nil {
		return c.fail(err)
	}
	var e queue.Entry
	if ref.ID != "" {
		e, err = c.q.InspectID(ctx, t, ref.ID)
	} else {
		e, err = c.q.Inspect(ctx, t, ref.Member)
	}
	if err != nil {
		return c.fail(err)
	}
	if *asJSON {
		err = writeJSON(s.out, getJSON(t, e))
	} else {
		err = printGet(s.out, t, e, ref.ID)
	}
	if err != nil {
		return c.fail(fmt.Errorf("write message: %w", err))
	}
	if e.State == "absent" {
		return exitFail
	}
	return exitOK
}

func readMemberFile(s stdio, name string) ([]byte, error) {
	if name == "-" {
		return readInput(s, "-", false)
	}
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("read --member-file: %w", err)
	}
	return b, nil
}

type getJSONOut struct {
	Topic string `json:"topic"`
	entryJSON
	Body    *string `json:"body,omitempty"`
	BodyB64 *string `json:"body_b64,omitempty"`
}

func getJSON(t queue.Topic, e queue.Entry) getJSONOut {
	j := getJSONOut{Topic: t.Name, entryJSON: toEntryJSON(t, e)}
	if e.State == "absent" {
		j.BodyPreview = ""
		return j
	}
	j.Member, j.MemberB64 = textOrB64([]byte(e.Member))
	_, body := describeMember(t, e.Member)
	j.Body, j.BodyB64 = textOrB64(body)
	return j
}

// textOrB64 is b as a JSON string when it is UTF-8, else its base64.
func textOrB64(b []byte) (text, b64 *string) {
	if utf8.Valid(b) {
		s := string(b)
		return &s, nil
	}
	s := base64.StdEncoding.EncodeToString(b)
	return nil, &s
}

// getBodyBytes is how much of a body get prints.
const getBodyBytes = 4096

func printGet(w io.Writer, t queue.Topic, e queue.Entry, askedID string) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	id, body := describeMember(t, e.Member)
	if id == "" {
		id = askedID
	}
	now := time.Now()
	line := func(k, v string) { fmt.Fprintf(tw, "%s\t%s\n", k, v) }
	line("topic", t.Name)
	line("id", printable([]byte(id), 255))
	line("slot", fmt.Sprint(e.Slot))
	line("state", e.State)
	stamp := func(k string, at time.Time) {
		if !at.IsZero() {
			line(k, utcStamp(at)+" ("+relative(at, now)+")")
		}
	}
	stamp("due", e.Due)
	stamp("lease until", e.LeaseUntil)
	stamp("died", e.Died)
	if e.State != "absent" {
		line("attempts", fmt.Sprint(e.Attempts))
		if e.LastError != "" {
			line("last error", printable([]byte(e.LastError), 1024))
		}
		printEnvelopeFields(line, t, e.Member)
		line("body", printable(body, getBodyBytes))
	}
	return tw.Flush()
}

// printEnvelopeFields adds an envelope's routing key and headers (sorted),
// which get's human output left to --json.
func printEnvelopeFields(line func(k, v string), t queue.Topic, member string) {
	m, err := t.Decode(member)
	if err != nil {
		return
	}
	if m.RoutingKey != "" {
		line("routing key", printable([]byte(m.RoutingKey), 255))
	}
	for _, k := range slices.Sorted(maps.Keys(m.Headers)) {
		line("header "+printable([]byte(k), 255), printable([]byte(m.Headers[k]), 1024))
	}
}
