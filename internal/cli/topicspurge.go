package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/delaybridge/delaybridge/membership"
)

// purgeTopic is `topics purge TOPIC`: after a confirmation, it deletes
// every key of the topic's data (queue.Queue.PurgeTopic), refused while a
// live replica forwards the topic. `topics forget` left the messages, the
// id index and the delivered set: a user deleted 7 keys by hand.
func (c *cli) purgeTopic(ctx context.Context, name string, yes bool) int {
	t, err := c.topic(name)
	if err != nil {
		return c.fail(err)
	}
	fw, err := membership.New(c.q).Forwarding(ctx, c.cfg.KeyPrefix)
	if err != nil {
		return c.fail(err)
	}
	if ids := fw.Forwarders(t.Name); len(ids) > 0 {
		return c.fail(fmt.Errorf("topic %s is forwarded by live replica(s) %s: stop them, or take %s out of their DELAYBRIDGE_TOPICS, "+
			"then purge it (a replica would publish what it claimed and write recurrences' next ticks again); nothing was deleted",
			t.Name, strings.Join(ids, ", "), t.Name))
	}
	keys, err := c.q.TopicKeys(ctx, t)
	if err != nil {
		return c.fail(err)
	}
	if len(keys) == 0 {
		fmt.Fprintf(c.s.out, "topic %s holds nothing: no key to delete\n", t.Name)
		return exitOK
	}
	what := fmt.Sprintf("delete topic %s's data: %s (its scheduled, in-flight, retrying and dead messages, ids, delivered set, "+
		"recurrences, pause and limits); the registry entry stays (delaybridge topics forget %s removes it)", t.Name, plural(len(keys), "key"), t.Name)
	return c.confirmed(yes, what, func() error {
		n, err := c.q.PurgeTopic(ctx, t)
		if err != nil {
			return err
		}
		if n == 0 {
			return errors.New("no key was deleted: another command deleted them meanwhile")
		}
		return nil
	})
}
