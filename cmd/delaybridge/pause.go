package main

import (
	"context"
	"fmt"
)

const pauseUsage = `usage: delaybridge pause [flags] TOPIC
       delaybridge resume [flags] TOPIC

pause stops every replica from claiming the topic's messages: the claim
itself checks a flag in each slot, so no replica claims within a second, even
one that missed every notification. Batches claimed before the pause are
still delivered; expired leases are still returned; producers keep
scheduling. resume clears the flag and wakes the scanners: messages that fell
due meanwhile are delivered at once, in order, none early. stats shows the
pause; the delaybridge_topic_paused gauge is 1 while it lasts.

Examples:
  delaybridge pause orders --reason "broker maintenance"
  delaybridge resume orders
`

// runPause is `delaybridge pause`.
func runPause(ctx context.Context, args []string, s stdio) int {
	fs := newFlags("pause", pauseUsage, s)
	reason := fs.String("reason", "", "why, shown by stats")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	pos, code, ok := parseFlags(fs, args, s)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return badUsage(fs, s, "want exactly one TOPIC")
	}
	c, t, code := openTopic(fs, s, pos[0])
	if c == nil {
		return code
	}
	defer c.close()
	if err := c.q.Pause(ctx, t, *reason); err != nil {
		return c.fail(err)
	}
	if *asJSON {
		writeJSON(s.out, map[string]any{"topic": t.Name, "paused": true, "slots": t.SlotCount(), "reason": *reason})
	} else {
		fmt.Fprintf(s.out, "paused %s (%s): no replica claims its messages until delaybridge resume %s\n", t.Name, plural(t.SlotCount(), "slot"), t.Name)
	}
	return exitOK
}

// runResume is `delaybridge resume`.
func runResume(ctx context.Context, args []string, s stdio) int {
	fs := newFlags("resume", pauseUsage, s)
	asJSON := fs.Bool("json", false, "print the result as JSON")
	pos, code, ok := parseFlags(fs, args, s)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return badUsage(fs, s, "want exactly one TOPIC")
	}
	c, t, code := openTopic(fs, s, pos[0])
	if c == nil {
		return code
	}
	defer c.close()
	n, err := c.q.Resume(ctx, t)
	if err != nil {
		return c.fail(err)
	}
	if *asJSON {
		writeJSON(s.out, map[string]any{"topic": t.Name, "paused": false, "resumed_slots": n})
	} else if n == 0 {
		fmt.Fprintf(s.out, "%s was not paused\n", t.Name)
	} else {
		fmt.Fprintf(s.out, "resumed %s (%d of %s paused)\n", t.Name, n, plural(t.SlotCount(), "slot"))
	}
	return exitOK
}
