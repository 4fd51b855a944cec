package cli

import (
	"context"
	"slices"
	"strings"

	"github.com/delaybridge/delaybridge/flowstate"
	"github.com/delaybridge/delaybridge/internal/flowtext"
	"github.com/delaybridge/delaybridge/queue"
)

// heldJSON is whether a topic's flow control holds it now, as the replicas
// that hold it report (flowstate.HeldOf): stats and the console show it.
type heldJSON struct {
	Held bool `json:"held"`
	// Reasons are "rate" (the rate limit) and "queue" (the hold queue has
	// more ready messages than hold-above), over every replica.
	Reasons []string `json:"reasons"`
	// Depth is the hold queue's ready count last read (the highest any
	// replica reports); null unless held by the queue and read.
	Depth    *int              `json:"hold_queue_depth"`
	Replicas []heldReplicaJSON `json:"replicas"`
}

type heldReplicaJSON struct {
	Replica string   `json:"replica"`
	Reasons []string `json:"reasons"`
	Depth   *int     `json:"hold_queue_depth"`
	Until   *string  `json:"until"`
}

// heldNow reads whether each topic of ts is held now.
func (c *cli) heldNow(ctx context.Context, ts []queue.Topic) ([]heldJSON, error) {
	hs, err := c.flow.HeldOf(ctx, ts)
	if err != nil {
		return nil, err
	}
	out := make([]heldJSON, len(ts))
	for i, h := range hs {
		out[i] = toHeldJSON(h)
	}
	return out, nil
}

func toHeldJSON(hs []flowstate.Held) heldJSON {
	j := heldJSON{Held: len(hs) > 0, Reasons: []string{}, Replicas: []heldReplicaJSON{}}
	slices.SortFunc(hs, func(a, b flowstate.Held) int { return strings.Compare(a.Replica, b.Replica) })
	for _, h := range hs {
		r := heldReplicaJSON{Replica: h.Replica, Reasons: h.Reasons, Until: jsonTime(h.Until)}
		if h.By(flowstate.HeldQueue) && h.Depth >= 0 {
			d := h.Depth
			r.Depth = &d
			if j.Depth == nil || *j.Depth < d {
				j.Depth = &d
			}
		}
		for _, why := range h.Reasons {
			if !slices.Contains(j.Reasons, why) {
				j.Reasons = append(j.Reasons, why)
			}
		}
		j.Replicas = append(j.Replicas, r)
	}
	slices.Sort(j.Reasons)
	return j
}

// describeHeld says why a held topic is held, for people: "" when it is not.
func describeHeld(h heldJSON, l limitsJSON) string {
	if !h.Held {
		return ""
	}
	depth := ""
	if h.Depth != nil {
		depth = count(int64(*h.Depth))
	}
	return "HELD " + flowtext.HeldWhy(h.Reasons, l.HoldQueue, depth)
}
