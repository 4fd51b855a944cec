package cli

import (
	"context"
	"fmt"

	"github.com/delaybridge/delaybridge/internal/opstext"
	"github.com/delaybridge/delaybridge/membership"
	"github.com/delaybridge/delaybridge/queue"
)

// warnUnforwarded tells, on stderr, that t's messages wait because no live
// replica forwards it (internal/opstext.Unforwarded). The message was
// accepted all the same (exit 0): a daemon with t may be on its way, and
// scheduling ahead of it is legitimate. A failure to find out says nothing:
// the message is in Redis, which is what the command was asked.
func (c *cli) warnUnforwarded(ctx context.Context, t queue.Topic) {
	f, _ := membership.New(c.q).CheckForwarded(ctx, t)
	if w := opstext.Unforwarded(f, t.Name); w != "" {
		fmt.Fprintf(c.s.err, "delaybridge %s: warning: %s\n", c.name, w)
	}
}

// unforwarded are, by topic name, the reasons why topics' messages wait for
// no one (absent: a live replica forwards it).
func (c *cli) unforwarded(ctx context.Context, topics []queue.Topic) (map[string]string, error) {
	f, err := membership.New(c.q).Forwarding(ctx, c.cfg.KeyPrefix)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, t := range topics {
		if w := opstext.Unforwarded(f, t.Name); w != "" {
			out[t.Name] = w
		}
	}
	return out, nil
}
