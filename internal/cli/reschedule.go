package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/delaybridge/delaybridge/queue"
)

const rescheduleUsage = `usage: delaybridge reschedule [flags] TOPIC (--id ID | --member MEMBER | --member-file FILE | MEMBER) (--at TIME | --in DURATION)

Moves a scheduled message to a new due time. A message already claimed is
being delivered: reschedule then changes nothing, says so and exits 1, as it
does when there is no such message.

` + memberHelp + `  MEMBER             as --member ("-": standard input)

Examples:
  delaybridge reschedule orders --id order-42 --in 2h
  delaybridge reschedule legacy --at 2030-01-02T15:04:05Z '{"order":42}'
`

// runReschedule is `delaybridge reschedule`.
func runReschedule(ctx context.Context, args []string, s stdio) int {
	fs := newFlags("reschedule", rescheduleUsage, s)
	mf := addMemberFlags(fs)
	at := fs.String("at", "", "new due `time`: RFC 3339 or Unix milliseconds")
	in := fs.String("in", "", "new due time as a `duration` from Redis's clock (90s, 15m, 36h)")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	pos, code, ok := parseFlags(fs, args, s)
	if !ok {
		return code
	}
	if len(pos) < 1 || len(pos) > 2 {
		return badUsage(fs, s, "want TOPIC and one of --id, --member, --member-file or MEMBER")
	}
	if err := mf.check(len(pos) == 2); err != nil {
		return badUsage(fs, s, "%v", err)
	}
	when, given, err := parseWhen(*at, *in)
	if err != nil {
		return badUsage(fs, s, "%v", err)
	}
	if !given {
		return badUsage(fs, s, "give the new time with --at or --in")
	}
	c, t, code := openTopic(fs, s, pos[0])
	if c == nil {
		return code
	}
	defer c.close()
	ref, err := mf.ref(ctx, c, t, positionalMember(pos))
	var r queue.Receipt
	switch {
	case errors.Is(err, queue.ErrNotFound):
		fmt.Fprintf(s.err, "delaybridge reschedule: %v\n", err)
	case err != nil:
		return c.fail(err)
	default:
		r, err = c.q.Reschedule(ctx, t, ref, when)
	}
	result := "rescheduled"
	switch {
	case errors.Is(err, queue.ErrInFlight):
		result = "in-flight"
	case errors.Is(err, queue.ErrNotFound):
		result = "not-found"
	case err != nil:
		return c.fail(err)
	}
	if *asJSON {
		out := map[string]any{"topic": t.Name, "result": result}
		if err == nil {
			out["id"], out["slot"], out["due"], out["due_ms"] = r.ID, r.Slot, jsonTime(r.Due()), r.Score
		}
		writeJSON(s.out, out)
	} else {
		switch result {
		case "rescheduled":
			fmt.Fprintf(s.out, "rescheduled %s on %s (slot %d), due %s (%s)\n", r.ID, t.Name, r.Slot,
				utcStamp(r.Due()), relative(r.Due(), time.Now()))
		case "in-flight":
			fmt.Fprintf(s.out, "not rescheduled: %s on %s is in flight (being delivered now)\n", ref, t.Name)
		default:
			fmt.Fprintf(s.out, "not rescheduled: no scheduled %s on %s\n", ref, t.Name)
		}
	}
	if result != "rescheduled" {
		return exitFail
	}
	return exitOK
}
