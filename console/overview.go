package console

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"time"

	"github.com/delaybridge/delaybridge/internal/opstext"
	"github.com/delaybridge/delaybridge/membership"
	"github.com/delaybridge/delaybridge/queue"
)

// overview is what the overview page, its live partial and /api/overview
// show. Error is set, and nothing else, when Redis could not be read: the
// page then says so instead of showing numbers that may be stale.
type overview struct {
	Time     time.Time    `json:"time"`
	Error    string       `json:"error,omitempty"`
	Topics   []topicRow   `json:"topics"`
	Replicas []replicaRow `json:"replicas"`
	// Redis is Redis's memory state, nil when INFO is not granted.
	Redis *redisMemory `json:"redis,omitempty"`
}

// redisMemory is what the overview says of Redis's memory: a full Redis
// refuses new messages, an evicting one may lose them (README, Operations).
type redisMemory struct {
	Used     int64  `json:"used_memory"`
	Max      int64  `json:"maxmemory"`
	Policy   string `json:"maxmemory_policy"`
	Full     bool   `json:"full"`
	Evicting bool   `json:"evicting"`
}

type topicRow struct {
	Name        string `json:"name"`
	Sink        string `json:"sink"`
	Destination string `json:"destination"`
	Slots       int    `json:"slots"`
	Scheduled   int64  `json:"scheduled"`
	Overdue     int64  `json:"overdue"`
	Retrying    int64  `json:"retrying"`
	Inflight    int64  `json:"inflight"`
	Dead        int64  `json:"dead"`
	// OldestOverdue is how late the most overdue message is (0: none).
	OldestOverdue time.Duration `json:"oldest_overdue_ns"`
	NextDue       time.Time     `json:"next_due"`
	Paused        bool          `json:"paused"`
	PauseReason   string        `json:"pause_reason,omitempty"`
	// Flow is the topic's flow control: limits in force, held now.
	Flow flowState `json:"flow"`
	// Unforwarded says why the topic's messages wait for no one: no live
	// replica forwards it ("" while one does).
	Unforwarded string `json:"unforwarded,omitempty"`
}

type replicaRow struct {
	ID        string           `json:"id"`
	ExpiresIn time.Duration    `json:"expires_in_ns"`
	Owned     map[string][]int `json:"owned"`
	Slots     []ownedSlots     `json:"-"`
}

type ownedSlots struct {
	Topic string
	Slots []int
	// NotRun: the replica does not forward the topic.
	NotRun bool
}

func (s *Server) overview(ctx context.Context) overview {
	ctx, cancel := context.WithTimeout(ctx, redisTimeout)
	defer cancel()
	ov, err := s.readOverview(ctx)
	if err != nil {
		s.opts.Log.Warn("console: read overview", "err", err)
		return overview{Time: time.Now(), Error: err.Error()}
	}
	return ov
}

func (s *Server) readOverview(ctx context.Context) (overview, error) {
	ls, err := s.layouts(ctx)
	if err != nil {
		return overview{}, err
	}
	ov := overview{Time: time.Now(), Topics: make([]topicRow, len(ls))}
	topics := make([]queue.Topic, len(ls))
	for i, l := range ls {
		topics[i] = l.Topic(s.opts.Prefix)
		stats, err := s.opts.Queue.TopicStats(ctx, topics[i])
		if err != nil {
			return overview{}, err
		}
		ov.Topics[i] = summarize(l, stats)
	}
	flows, err := s.flows(ctx, topics)
	if err != nil {
		return overview{}, err
	}
	for i := range flows {
		ov.Topics[i].Flow = flows[i]
	}
	set, err := membership.New(s.opts.Queue).Replicas(ctx, s.opts.Prefix)
	if err != nil {
		return overview{}, err
	}
	fw, err := membership.New(s.opts.Queue).Forwarding(ctx, s.opts.Prefix)
	if err != nil {
		return overview{}, err
	}
	for i, t := range topics {
		ov.Topics[i].Unforwarded = opstext.Unforwarded(fw, t.Name)
	}
	fw.Live = set.Live
	ov.Replicas = replicaRows(set, fw, topics, s.opts.OwnershipAll)
	if m, err := s.opts.Queue.Memory(ctx); err == nil {
		ov.Redis = &redisMemory{Used: m.Used, Max: m.Max, Policy: m.Policy, Full: m.Full(), Evicting: m.Evicting()}
	}
	return ov, nil
}

// summarize adds up a topic's slots.
func summarize(l queue.Layout, stats []queue.SlotStats) topicRow {
	r := topicRow{Name: l.Name, Sink: l.Sink, Destination: destination(l), Slots: len(stats)}
	for _, st := range stats {
		r.Scheduled += st.Scheduled
		r.Overdue += st.Overdue
		r.Retrying += st.Retrying
		r.Inflight += st.Inflight
		r.Dead += st.Dead
		if !st.OldestOverdue.IsZero() {
			r.OldestOverdue = max(r.OldestOverdue, st.Now.Sub(st.OldestOverdue))
		}
		if !st.NextDue.IsZero() && (r.NextDue.IsZero() || st.NextDue.Before(r.NextDue)) {
			r.NextDue = st.NextDue
		}
		if st.Pause.Paused {
			r.Paused, r.PauseReason = true, st.Pause.Reason
		}
	}
	return r
}

// replicaRows gives each live replica the slots it owns of each topic it
// forwards, shared among the live replicas that forward the topic: the
// assignment the daemons compute from the same reports
// (membership.Forwarding.Owned); a topic it does not run is listed as not run.
func replicaRows(set membership.ReplicaSet, fw membership.Forwarding, topics []queue.Topic, all bool) []replicaRow {
	owned := fw.Owned(topics, all)
	rows := make([]replicaRow, len(set.Live))
	for i, id := range set.Live {
		rows[i] = replicaRow{ID: id, ExpiresIn: set.Deadlines[id].Sub(set.Now), Owned: owned[i]}
		for _, t := range topics {
			slots, run := owned[i][t.Name]
			rows[i].Slots = append(rows[i].Slots, ownedSlots{Topic: t.Name, Slots: slices.Clip(slots), NotRun: !run})
		}
	}
	return rows
}

type overviewView struct {
	base
	overview
}

func (s *Server) overviewPage(w http.ResponseWriter, r *http.Request) {
	ov := s.overview(r.Context())
	s.render(w, http.StatusOK, "overview", "layout.html", overviewView{base: s.base(r, "Overview"), overview: ov})
}

// overviewLive is the part of the overview the page's script fetches every
// few seconds; 503 (with the banner) while Redis is unreachable.
func (s *Server) overviewLive(w http.ResponseWriter, r *http.Request) {
	ov := s.overview(r.Context())
	status := http.StatusOK
	if ov.Error != "" {
		status = http.StatusServiceUnavailable
	}
	s.render(w, status, "overview", "live", overviewView{base: s.base(r, "Overview"), overview: ov})
}

func (s *Server) overviewJSON(w http.ResponseWriter, r *http.Request) {
	ov := s.overview(r.Context())
	w.Header().Set("Content-Type", "application/json")
	if ov.Error != "" {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	_ = json.NewEncoder(w).Encode(ov)
}
