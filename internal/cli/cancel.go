package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/delaybridge/delaybridge/queue"
)

const cancelUsage = `usage: delaybridge cancel [flags] TOPIC (--id ID | --member MEMBER | --member-file FILE | MEMBER)

Cancels a message that is not yet claimed. A message already claimed is
being delivered: cancel then changes nothing, says so and exits 1, as it
does when there is no such message.

` + memberHelp + `  MEMBER             as --member ("-": standard input)

Examples:
  delaybridge cancel orders --id order-42
  delaybridge cancel legacy '{"order":42,"event":"payment-timeout"}'
`

// runCancel is `delaybridge cancel`.
func runCancel(ctx context.Context, args []string, s stdio) int {
	fs := newFlags("cancel", cancelUsage, s)
	mf := addMemberFlags(fs)
	id := mf.id
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
	c, t, code := openTopic(fs, s, pos[0])
	if c == nil {
		return code
	}
	defer c.close()
	ref, err := mf.ref(ctx, c, t, positionalMember(pos))
	if err != nil && !errors.Is(err, queue.ErrNotFound) {
		return c.fail(err)
	}
	var cancelled bool
	what := "id " + *id
	switch {
	case err != nil:
		fmt.Fprintf(s.err, "delaybridge cancel: %v\n", err)
	case ref.ID != "":
		cancelled, err = c.q.CancelID(ctx, t, ref.ID)
	default:
		if *id == "" {
			what = "member " + printable(ref.Member, 80)
		}
		cancelled, err = c.q.Cancel(ctx, t, ref.Member)
	}
	result := "cancelled"
	switch {
	case errors.Is(err, queue.ErrNotFound):
		result = "not-found"
	case errors.Is(err, queue.ErrInFlight):
		result = "in-flight"
	case err != nil:
		return c.fail(err)
	case !cancelled:
		result = "not-found"
	}
	if *asJSON {
		writeJSON(s.out, map[string]any{"topic": t.Name, "id": *id, "result": result})
	} else {
		switch result {
		case "cancelled":
			fmt.Fprintf(s.out, "cancelled %s on %s\n", what, t.Name)
		case "in-flight":
			fmt.Fprintf(s.out, "not cancelled: %s on %s is in flight (being delivered now)\n", what, t.Name)
		default:
			fmt.Fprintf(s.out, "not cancelled: no scheduled %s on %s\n", what, t.Name)
		}
	}
	if result != "cancelled" {
		return exitFail
	}
	return exitOK
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
