package cli

import (
	"context"
	"flag"
	"fmt"

	"github.com/delaybridge/delaybridge/queue"
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

With --key, on a fair topic (DELAYBRIDGE_TOPIC_<NAME>_FAIR=true), only the
messages of that key (a tenant, customer or group) are held; every other key
goes on. stats lists the paused keys.

Examples:
  delaybridge pause orders --reason "broker maintenance"
  delaybridge resume orders
  delaybridge pause notifications --key customer-42
  delaybridge resume notifications --key customer-42
`

// runPause is `delaybridge pause`.
func runPause(ctx context.Context, args []string, s stdio) int {
	fs := newFlags("pause", pauseUsage, s)
	reason := fs.String("reason", "", "why, shown by stats")
	key := fs.String("key", "", "hold only this key's messages (a fair topic)")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	pos, code, ok := parseFlags(fs, args, s)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return badUsage(fs, s, "want exactly one TOPIC")
	}
	if flagSet(fs, "key") && *reason != "" {
		return badUsage(fs, s, "--reason is for a topic's pause; a key's pause keeps no reason")
	}
	c, t, code := openTopic(fs, s, pos[0])
	if c == nil {
		return code
	}
	defer c.close()
	if flagSet(fs, "key") {
		return pauseKey(ctx, c, t, *key, true, *asJSON, s)
	}
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
	key := fs.String("key", "", "resume only this key's messages (a fair topic)")
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
	if flagSet(fs, "key") {
		return pauseKey(ctx, c, t, *key, false, *asJSON, s)
	}
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

// pauseKey is pause --key (pause true) and resume --key.
func pauseKey(ctx context.Context, c *cli, t queue.Topic, key string, pause, asJSON bool, s stdio) int {
	op, verb := c.q.ResumeKey, "resumed"
	if pause {
		op, verb = c.q.PauseKey, "paused"
	}
	changed, err := op(ctx, t, key)
	if err != nil {
		return c.fail(err)
	}
	switch {
	case asJSON:
		writeJSON(s.out, map[string]any{"topic": t.Name, "key": key, "paused": pause, "changed": changed})
	case !changed && pause:
		fmt.Fprintf(s.out, "key %q of %s was paused already\n", key, t.Name)
	case !changed:
		fmt.Fprintf(s.out, "key %q of %s was not paused\n", key, t.Name)
	case pause:
		fmt.Fprintf(s.out, "paused key %q of %s: its messages wait, every other key goes on, until delaybridge resume %s --key %s\n", key, t.Name, t.Name, key)
	default:
		fmt.Fprintf(s.out, "%s key %q of %s: what fell due meanwhile goes out now, in order\n", verb, key, t.Name)
	}
	return exitOK
}

// flagSet reports whether the command line set flag name.
func flagSet(fs *flag.FlagSet, name string) (set bool) {
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
