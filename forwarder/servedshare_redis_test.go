package forwarder

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/membership"
	"github.com/delaybridge/delaybridge/queue"
)

// servedShare runs forwarders with different topics on one prefix and
// looks at what each owns against what membership.Forwarding.Owned says.
type servedShare struct {
	t      *testing.T
	q      *queue.Queue
	prefix string
	topics []queue.Topic
	fwd    map[string]*Forwarder
	sinks  map[string]*recordSink
}

// Options of every forwarder of these tests: a heartbeat every 100 ms, so
// a change is applied within a tenth of a second of the next beat.
const (
	shareEvery = 100 * time.Millisecond
	shareTTL   = time.Second
)

func newServedShare(t *testing.T, topics ...queue.Topic) *servedShare {
	q, prefix := testRedis(t)
	for i := range topics {
		topics[i].Prefix = prefix
	}
	return &servedShare{t: t, q: q, prefix: prefix, topics: topics, fwd: map[string]*Forwarder{}, sinks: map[string]*recordSink{}}
}

// start runs replica id forwarding the named topics.
func (s *servedShare) start(id string, names ...string) {
	s.t.Helper()
	sink := newRecordSink()
	var ts []Topic
	for _, tp := range s.topics {
		if slices.Contains(names, tp.Name) {
			ts = append(ts, Topic{tp, sink})
		}
	}
	f, _ := startF(s.t, Options{Queue: s.q, Topics: ts, KeyPrefix: s.prefix, ReplicaID: id,
		HeartbeatInterval: shareEvery, HeartbeatTTL: shareTTL, PollInterval: 50 * time.Millisecond}, nil)
	s.fwd[id], s.sinks[id] = f, sink
}

// owns is what forwarder id scans now: topic → sorted slots.
func (s *servedShare) owns(id string) map[string][]int {
	f := s.fwd[id]
	out := map[string][]int{}
	for _, k := range f.ownedSlots() {
		name := f.opt.Topics[k.topic].Name
		out[name] = append(out[name], k.slot)
	}
	for name := range out {
		slices.Sort(out[name])
	}
	return out
}

// disagreement is "" when every running forwarder scans exactly what
// Forwarding.Owned gives it, every slot of every topic is owned by one
// live replica, and the live replicas are live; else what differs.
func (s *servedShare) disagreement(live ...string) string {
	fw, err := membership.New(s.q).Forwarding(context.Background(), s.prefix)
	if err != nil {
		return err.Error()
	}
	if !slices.Equal(fw.Live, live) {
		return fmt.Sprintf("live replicas %v, want %v", fw.Live, live)
	}
	owned := fw.Owned(s.topics, false)
	for i, id := range fw.Live {
		if _, ok := s.fwd[id]; !ok {
			continue // a replica the test heartbeats for: it scans nothing
		}
		want := map[string][]int{}
		for name, slots := range owned[i] {
			if len(slots) > 0 {
				want[name] = slots
			}
		}
		if got := s.owns(id); !maps.EqualFunc(got, want, slices.Equal) {
			return fmt.Sprintf("%s scans %v, Forwarding.Owned gives it %v", id, got, want)
		}
	}
	for _, tp := range s.topics {
		count := make([]int, tp.SlotCount())
		for i := range fw.Live {
			for _, sl := range owned[i][tp.Name] {
				count[sl]++
			}
		}
		for sl, n := range count {
			if n != 1 {
				return fmt.Sprintf("%s slot %d has %d owners", tp.Name, sl, n)
			}
		}
	}
	return ""
}

// waitAgree waits until disagreement is "" and returns how long it took.
func (s *servedShare) waitAgree(within time.Duration, live ...string) time.Duration {
	s.t.Helper()
	start := time.Now()
	deadline := start.Add(within)
	for {
		d := s.disagreement(live...)
		if d == "" {
			return time.Since(start)
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("not within %s: %s", within, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// owned is Forwarding.Owned's map for replica id.
func (s *servedShare) owned(id string) map[string][]int {
	s.t.Helper()
	fw, err := membership.New(s.q).Forwarding(context.Background(), s.prefix)
	if err != nil {
		s.t.Fatal(err)
	}
	i := slices.Index(fw.Live, id)
	if i < 0 {
		s.t.Fatalf("%s is not live (%v)", id, fw.Live)
	}
	return fw.Owned(s.topics, false)[i]
}

// scheduleEverySlot schedules one message due now to each slot of topic and
// returns the members.
func (s *servedShare) scheduleEverySlot(tp queue.Topic, tag string) []string {
	s.t.Helper()
	var members []string
	seen := map[int]bool{}
	for i := 0; len(seen) < tp.SlotCount(); i++ {
		m := fmt.Sprintf("%s-%s-%d", tp.Name, tag, i)
		if sl := tp.SlotOf([]byte(m)); !seen[sl] {
			seen[sl] = true
			members = append(members, m)
			if _, err := s.q.ScheduleMember(context.Background(), tp, []byte(m), queue.At(time.Now())); err != nil {
				s.t.Fatal(err)
			}
		}
	}
	return members
}

// arrive waits until every member has been published by a replica that
// runs its topic, and returns how long that took.
func (s *servedShare) arrive(within time.Duration, tp queue.Topic, members []string) time.Duration {
	s.t.Helper()
	start := time.Now()
	deadline := start.Add(within)
	for {
		got := map[string]string{}
		for id, sink := range s.sinks {
			for _, p := range sink.published() {
				if p.msg.Topic != tp.Name {
					continue
				}
				if !slices.Contains(s.fwd[id].topicNames(), tp.Name) {
					s.t.Fatalf("%s published %s of %s, a topic it does not run", id, p.msg.Body, tp.Name)
				}
				got[string(p.msg.Body)] = id
			}
		}
		var missing []string
		for _, m := range members {
			if _, ok := got[m]; !ok {
				missing = append(missing, fmt.Sprintf("%s (slot %d)", m, tp.SlotOf([]byte(m))))
			}
		}
		if len(missing) == 0 {
			return time.Since(start)
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("not published within %s: %v", within, missing)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// oldReplica heartbeats as replica id, as a daemon older than the reports
// would: it never reports the topics it forwards until report is called.
type oldReplica struct {
	mu     sync.Mutex
	topics []string // nil: no report
	cancel context.CancelFunc
	done   chan struct{}
}

func (s *servedShare) startOld(id string) *oldReplica {
	ctx, cancel := context.WithCancel(context.Background())
	o := &oldReplica{cancel: cancel, done: make(chan struct{})}
	beat := func() {
		set, err := membership.New(s.q).Heartbeat(ctx, s.prefix, id, shareTTL)
		o.mu.Lock()
		topics := o.topics
		o.mu.Unlock()
		if err == nil && topics != nil {
			err = membership.New(s.q).ReportServed(ctx, s.prefix, id, topics, set.Live, shareTTL)
		}
		if err != nil && ctx.Err() == nil {
			s.t.Errorf("replica %s: %v", id, err)
		}
	}
	beat()
	go func() {
		defer close(o.done)
		for sleep(ctx, shareEvery, nil) {
			beat()
		}
	}()
	s.t.Cleanup(func() { s.stopOld(id, o) })
	return o
}

// report makes the old replica report topics now and with every beat.
func (s *servedShare) report(id string, o *oldReplica, topics ...string) {
	s.t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	o.topics = topics
	set, err := membership.New(s.q).Replicas(context.Background(), s.prefix)
	if err == nil {
		err = membership.New(s.q).ReportServed(context.Background(), s.prefix, id, topics, set.Live, shareTTL)
	}
	if err != nil {
		s.t.Fatal(err)
	}
}

func (s *servedShare) stopOld(id string, o *oldReplica) {
	o.cancel()
	<-o.done
	if _, err := membership.New(s.q).Leave(context.Background(), s.prefix, id); err != nil {
		s.t.Error(err)
	}
	if err := membership.New(s.q).Unserve(context.Background(), s.prefix, id); err != nil {
		s.t.Error(err)
	}
}

// TestServedTopicSlotsAreSharedOnlyAmongTheReplicasThatForwardIt: replica a
// forwards orders and digests, b only orders. Every digests slot is a's
// (before, b owned about half of them and their messages waited for no one
// while it lived), orders are shared by both, and Forwarding.Owned (what
// replicas, stats and the console show) is what each scans. A replica with
// no report (an older daemon, or one whose first report is not written)
// counts as forwarding every topic and gets its share of both; once its
// report says it forwards orders only, the digests slots come back to a
// within a heartbeat or so, with no change of the live replicas.
func TestServedTopicSlotsAreSharedOnlyAmongTheReplicasThatForwardIt(t *testing.T) {
	t.Parallel()
	orders, digests := queue.Topic{Name: "orders", Slots: 8}, queue.Topic{Name: "digests", Slots: 8}
	s := newServedShare(t, orders, digests)
	orders, digests = s.topics[0], s.topics[1]
	s.start("a", "orders", "digests")
	s.start("b", "orders")
	took := s.waitAgree(10*time.Second, "a", "b")
	t.Logf("a and b agree with Forwarding.Owned %s after start", took.Round(time.Millisecond))
	if got := s.owns("a")["digests"]; len(got) != 8 {
		t.Errorf("a scans digests slots %v, want all 8: b does not forward digests", got)
	}
	if n := len(s.owns("b")["orders"]); n != 4 {
		t.Errorf("b scans %d orders slots, want 4 of 8", n)
	}
	if _, ok := s.owned("b")["digests"]; ok {
		t.Errorf("Forwarding.Owned gives b digests slots %v, want digests absent (not run)", s.owned("b")["digests"])
	}
	t.Logf("digests: every slot published in %s", s.arrive(10*time.Second, digests, s.scheduleEverySlot(digests, "1")).Round(time.Millisecond))
	t.Logf("orders: every slot published in %s", s.arrive(10*time.Second, orders, s.scheduleEverySlot(orders, "1")).Round(time.Millisecond))

	old := s.startOld("old")
	took = s.waitAgree(10*time.Second, "a", "b", "old")
	t.Logf("a replica without a report joined: agreed after %s", took.Round(time.Millisecond))
	got := s.owned("old")
	if len(got["orders"]) == 0 || len(got["digests"]) == 0 {
		t.Errorf("a replica without a report owns %v, want a share of every topic", got)
	}
	if n := len(s.owns("a")["digests"]); n != 4 {
		t.Errorf("a scans %d digests slots beside a replica without a report, want 4 of 8", n)
	}

	s.report("old", old, "orders")
	moved := s.waitAgree(5*time.Second, "a", "b", "old")
	if got := s.owns("a")["digests"]; len(got) != 8 {
		t.Errorf("a scans digests slots %v after the old replica reported orders only, want all 8", got)
	}
	t.Logf("the old replica's report moved its digests slots to a in %s (heartbeat every %s)", moved.Round(time.Millisecond), shareEvery)
	// a reads the report at its next heartbeat (≤ 100 ms) and the scanners
	// start at once; 2 s is room for two loaded cores.
	if moved > 2*time.Second {
		t.Errorf("a took %s to take the digests slots after the report, want within a few heartbeats", moved)
	}
	if _, ok := s.owned("old")["digests"]; ok {
		t.Errorf("Forwarding.Owned gives the old replica digests after it reported orders only")
	}
	t.Logf("digests after the report: every slot published in %s", s.arrive(10*time.Second, digests, s.scheduleEverySlot(digests, "2")).Round(time.Millisecond))

	s.stopOld("old", old)
	s.waitAgree(10*time.Second, "a", "b")
}

// TestServedThreeReplicasEachTopicForwardedByThoseThatRunIt: a runs orders,
// b digests, c both. Every slot of each topic is scanned by one of the two
// replicas that run it, each scans what Forwarding.Owned gives it, and a
// message in every slot of either topic is published by one that runs it.
func TestServedThreeReplicasEachTopicForwardedByThoseThatRunIt(t *testing.T) {
	t.Parallel()
	s := newServedShare(t, queue.Topic{Name: "orders", Slots: 16}, queue.Topic{Name: "digests", Slots: 8})
	orders, digests := s.topics[0], s.topics[1]
	s.start("a", "orders")
	s.start("b", "digests")
	s.start("c", "orders", "digests")
	took := s.waitAgree(10*time.Second, "a", "b", "c")
	t.Logf("three replicas agree with Forwarding.Owned %s after start", took.Round(time.Millisecond))
	for id, want := range map[string]map[string]int{"a": {"orders": 8}, "b": {"digests": 4}, "c": {"orders": 8, "digests": 4}} {
		got := map[string]int{}
		for name, slots := range s.owns(id) {
			got[name] = len(slots)
		}
		if !maps.Equal(got, want) {
			t.Errorf("%s scans %v slots, want %v", id, got, want)
		}
	}
	t.Logf("orders: every slot published in %s", s.arrive(10*time.Second, orders, s.scheduleEverySlot(orders, "1")).Round(time.Millisecond))
	t.Logf("digests: every slot published in %s", s.arrive(10*time.Second, digests, s.scheduleEverySlot(digests, "1")).Round(time.Millisecond))
}
