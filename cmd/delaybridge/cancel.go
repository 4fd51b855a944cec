package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/delaybridge/delaybridge/queue"
)

const cancelUsage = `usage: delaybridge cancel [flags] TOPIC (--id ID | MEMBER)

Cancels a message that is not yet claimed: by id on an envelope topic, or by
its member, byte for byte (MEMBER "-" reads it from standard input). A message
already claimed is being delivered: cancel then changes nothing, says so and
exits 1, as it does when there is no such message.

Examples:
  delaybridge cancel orders --id order-42
  delaybridge cancel legacy '{"order":42,"event":"payment-timeout"}'
`

// runCancel is `delaybridge cancel`.
func runCancel(ctx context.Context, args []string, s stdio) int {
	fs := newFlags("cancel", cancelUsage, s)
	id := fs.String("id", "", "envelope topics: the message `id`")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	pos, code, ok := parseFlags(fs, args, s)
	if !ok {
		return code
	}
	if len(pos) != 1+boolInt(*id == "") {
		return badUsage(fs, s, "want TOPIC and either --id or MEMBER")
	}
	c, t, code := openTopic(fs, s, pos[0])
	if c == nil {
		return code
	}
	defer c.close()
	var (
		cancelled bool
		err       error
	)
	what := "id " + *id
	if *id != "" {
		cancelled, err = c.q.CancelID(ctx, t, *id)
	} else {
		member, rerr := readInput(s, pos[1], true)
		if rerr != nil {
			return c.fail(rerr)
		}
		what = "member " + printable(member, 80)
		cancelled, err = c.q.Cancel(ctx, t, member)
	}
	result := "cancelled"
	switch {
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
