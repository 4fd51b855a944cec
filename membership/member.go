package membership

import (
	"context"
	"slices"
	"time"
)

// Member is one replica's side of the protocol: each Beat renews its
// heartbeat and answers, in one call, the live replicas and who forwards
// what among them. A Member is used by one goroutine at a time.
type Member struct {
	s               *Store
	prefix, replica string
	topics          []string
	ttl             time.Duration

	// Beat's own: when this replica last reported the topics it forwards,
	// the live replicas then, and the reports last read.
	servedAt   time.Time
	servedLive []string
	seen       map[string][]string
}

// Member returns replica's side of the protocol in the replica set of
// prefix: it forwards topics, and its heartbeat lives ttl.
func (s *Store) Member(prefix, replica string, topics []string, ttl time.Duration) *Member {
	return &Member{s: s, prefix: prefix, replica: replica, topics: topics, ttl: ttl}
}

// View is what one beat saw.
type View struct {
	// Set is the replica set as the heartbeat left it.
	Set ReplicaSet
	// Forwarding is who forwards what among Set.Live.
	Forwarding Forwarding
	// Failed are what failed this beat without failing it: the report of
	// this replica's topics, the read of the others'. When the read failed,
	// Forwarding holds the reports last read (a replica absent from them
	// counts as forwarding every topic); the next beat repairs it.
	Failed []error
}

// Beat renews this replica's heartbeat (sent is when the caller asked for
// it) and returns the live replicas and who forwards what among them. It
// reports the topics this replica forwards when the live replicas change,
// else after three quarters of a TTL (the report lives a TTL), and has the
// report's answer then; on the other beats it reads the reports in the
// heartbeat's round trip (Store.Beat: one HGETALL beside the script, which
// drops expired replicas only when there are some). So a report that
// appears or changes moves the slots at the next heartbeat. err is the
// heartbeat's alone.
func (m *Member) Beat(ctx context.Context, sent time.Time) (View, error) {
	var (
		v       View
		readErr error
		err     error
	)
	due := time.Since(m.servedAt) >= m.ttl*3/4
	if due {
		v.Set, err = m.s.Heartbeat(ctx, m.prefix, m.replica, m.ttl)
	} else {
		var b Beat
		b, err = m.s.Beat(ctx, m.prefix, m.replica, m.ttl)
		v.Set, v.Forwarding, readErr = b.Set, b.Forwarding, b.ReadErr
	}
	if err != nil {
		return v, err
	}
	if due || !slices.Equal(v.Set.Live, m.servedLive) {
		fw, err := m.s.ReportServedAndRead(ctx, m.prefix, m.replica, m.topics, v.Set.Live, m.ttl)
		if err == nil {
			m.servedAt, m.servedLive, m.seen = sent, v.Set.Live, fw.Served
			v.Forwarding = fw
			return v, nil
		}
		v.Failed = append(v.Failed, err)
		if due {
			v.Forwarding, readErr = m.s.ServedBy(ctx, m.prefix, v.Set.Live)
		}
	}
	if readErr == nil {
		m.seen = v.Forwarding.Served
		return v, nil
	}
	v.Failed = append(v.Failed, readErr)
	v.Forwarding = Forwarding{Live: v.Set.Live, Served: map[string][]string{}}
	for _, id := range v.Set.Live {
		if ts, ok := m.seen[id]; ok {
			v.Forwarding.Served[id] = ts
		}
	}
	return v, nil
}

// Leave drops this replica from the replica set, so the others take its
// slots at once instead of after the TTL.
func (m *Member) Leave(ctx context.Context) error {
	_, err := m.s.Leave(ctx, m.prefix, m.replica)
	return err
}

// Unserve drops this replica's report of the topics it forwards. A report
// left behind is harmless: it counts only while its replica is live, and
// expires with its TTL.
func (m *Member) Unserve(ctx context.Context) error {
	return m.s.Unserve(ctx, m.prefix, m.replica)
}
