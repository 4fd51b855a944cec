package flowstate

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/delaybridge/delaybridge/queue"
)

// Whether a topic is held by its flow control right now is known only to
// the replicas whose scanners wait; each one reports it in the topic's held
// HASH (FlowKeys.Held), a replica report (reports.go), so stats and the
// console can show it. The replica renews it while the topic stays held and
// deletes it when it is no longer held. Held reports cost nothing while no
// topic is held.

// Why a topic is held, as reports and the delaybridge_topic_held gauge say.
const (
	HeldRate  = "rate"  // the rate limit has no permit left
	HeldQueue = "queue" // the hold queue has more ready messages than hold-above
)

// Held is one replica's report that it holds a topic.
type Held struct {
	// Replica is the reporting replica's id.
	Replica string
	// Reasons are HeldRate and/or HeldQueue.
	Reasons []string
	// Depth is the hold queue's ready count as the replica last read it;
	// -1 when it does not know it (no hold queue, or the read failed).
	Depth int
	// Until is when the report expires unless renewed (Redis's clock).
	Until time.Time
}

// By reports whether reason is one of h's reasons.
func (h Held) By(reason string) bool {
	for _, r := range h.Reasons {
		if r == reason {
			return true
		}
	}
	return false
}

// ReportHeld records that replica holds t (h's Reasons and Depth), for
// ttl unless renewed; h nil deletes the replica's report.
func (s *Store) ReportHeld(ctx context.Context, t queue.Topic, replica string, h *Held, ttl time.Duration) error {
	v := ""
	if h != nil {
		v = strings.Join(h.Reasons, ",") + " " + strconv.Itoa(h.Depth)
	}
	if err := s.report(ctx, t.FlowKeys().Held, replica, v, ttl); err != nil {
		return fmt.Errorf("report %s held: %w", t.Name, err)
	}
	return nil
}

// HeldOf returns, for every topic of ts, the replicas that report holding
// it now (none: the topic is not held by its flow control), by replica id.
func (s *Store) HeldOf(ctx context.Context, ts []queue.Topic) ([][]Held, error) {
	out := make([][]Held, len(ts))
	for i, t := range ts {
		rs, err := s.reports(ctx, t.FlowKeys().Held)
		if err != nil {
			return nil, fmt.Errorf("read whether %s is held: %w", t.Name, err)
		}
		for _, r := range rs {
			if h, ok := parseHeld(r); ok {
				out[i] = append(out[i], h)
			}
		}
	}
	return out, nil
}

// parseHeld reads one report, "<reasons> <depth>".
func parseHeld(r replicaReport) (Held, bool) {
	f := strings.Fields(r.report)
	if len(f) != 2 {
		return Held{}, false
	}
	depth, err := strconv.Atoi(f[1])
	if err != nil {
		return Held{}, false
	}
	return Held{Replica: r.replica, Reasons: strings.Split(f[0], ","), Depth: depth, Until: r.until}, true
}
