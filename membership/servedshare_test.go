package membership

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/internal/testing/redistest"
	"github.com/delaybridge/delaybridge/queue"
)

// TestForwardingSharesATopicsSlotsOnlyAmongItsForwarders: x has not
// reported (it counts as forwarding every topic), y forwards orders, z
// digests. Each topic's slots go to its forwarders alone, as Assign shares
// them among those, every slot has one owner, and a replica that does not
// run a topic has it absent from its map.
func TestForwardingSharesATopicsSlotsOnlyAmongItsForwarders(t *testing.T) {
	t.Parallel()
	f := Forwarding{Live: []string{"x", "y", "z"}, Served: map[string][]string{"y": {"orders"}, "z": {"digests", "other"}}}
	topics := []queue.Topic{{Name: "orders", Slots: 8}, {Name: "digests", Slots: 16}, {Name: "nobody", Slots: 4}}
	forwarders := map[string][]string{"orders": {"x", "y"}, "digests": {"x", "z"}, "nobody": {"x"}}
	owned := f.Owned(topics, false)
	for _, tp := range topics {
		if got := f.Forwarders(tp.Name); !slices.Equal(got, forwarders[tp.Name]) {
			t.Errorf("%s: forwarders %v, want %v", tp.Name, got, forwarders[tp.Name])
		}
		owners := Assign(forwarders[tp.Name], tp.Name, tp.SlotCount())
		if got := f.Assign(tp.Name, tp.SlotCount()); !slices.Equal(got, owners) {
			t.Errorf("%s: Forwarding.Assign %v, want Assign among its forwarders %v", tp.Name, got, owners)
		}
		for s := range tp.SlotCount() + 3 { // and stranded slots beyond the count
			if got, want := f.Owner(tp.Name, s), Owner(forwarders[tp.Name], tp.Name, s); got != want {
				t.Errorf("%s slot %d: Forwarding.Owner %s, want %s", tp.Name, s, got, want)
			}
		}
		seen := 0
		for i, id := range f.Live {
			slots, ok := owned[i][tp.Name]
			if run := slices.Contains(forwarders[tp.Name], id); ok != run {
				t.Errorf("%s: %s has it in its map: %t, forwards it: %t", tp.Name, id, ok, run)
			}
			if ok && slots == nil {
				t.Errorf("%s: %s's slots are nil, want a list", tp.Name, id)
			}
			for _, s := range slots {
				if owners[s] != id {
					t.Errorf("%s: %s owns slot %d, its forwarders' Assign says %s", tp.Name, id, s, owners[s])
				}
			}
			seen += len(slots)
		}
		if seen != tp.SlotCount() {
			t.Errorf("%s: %d slots owned, want %d", tp.Name, seen, tp.SlotCount())
		}
	}
	if got := len(owned[0]["nobody"]); got != 4 {
		t.Errorf("the replica with no report owns %d slots of a topic no one reports, want all 4", got)
	}
	all := f.Owned(topics, true)
	if got := all[1]["orders"]; len(got) != 8 {
		t.Errorf("all: y scans %v of orders, want every slot", got)
	}
	if _, ok := all[1]["digests"]; ok {
		t.Error("all: y has digests, which it does not run")
	}
	// With no report at all, every live replica shares every topic, as
	// before the reports (OwnedSlots).
	bare := Forwarding{Live: f.Live}
	if !slices.EqualFunc(bare.Owned(topics, false), OwnedSlots(f.Live, topics, false), func(a, b map[string][]int) bool {
		return maps.EqualFunc(a, b, slices.Equal)
	}) {
		t.Error("with no reports Owned differs from OwnedSlots")
	}
}

// TestReportServedAndReadAnswersWhatForwardingReads: the report's answer,
// ServedBy and Beat are the reports of the live replicas
// Forwarding reads, a replica without one absent; the report drops a
// replica no longer live.
func TestReportServedAndReadAnswersWhatForwardingReads(t *testing.T) {
	t.Parallel()
	rdb, prefix := redistest.New(t)
	q := New(queue.New(rdb))
	ctx := context.Background()
	for _, id := range []string{"gone", "old", "b"} {
		if _, err := q.Heartbeat(ctx, prefix, id, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	set, err := q.Heartbeat(ctx, prefix, "a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := q.ReportServed(ctx, prefix, "gone", []string{"digests"}, set.Live, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := q.ReportServed(ctx, prefix, "b", []string{"orders"}, set.Live, time.Minute); err != nil {
		t.Fatal(err)
	}
	live, err := q.Leave(ctx, prefix, "gone")
	if err != nil {
		t.Fatal(err)
	}
	got, err := q.ReportServedAndRead(ctx, prefix, "a", []string{"orders", "digests"}, live, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{"a": {"orders", "digests"}, "b": {"orders"}}
	if !slices.Equal(got.Live, []string{"a", "b", "old"}) || !maps.EqualFunc(got.Served, want, slices.Equal) {
		t.Errorf("report's answer %+v, want live a, b, old and served %v", got, want)
	}
	by, err := q.ServedBy(ctx, prefix, live)
	if err != nil {
		t.Fatal(err)
	}
	read, err := q.Forwarding(ctx, prefix)
	if err != nil {
		t.Fatal(err)
	}
	b, err := q.Beat(ctx, prefix, "a", time.Minute)
	if err != nil || b.ReadErr != nil || !slices.Equal(b.Set.Live, got.Live) {
		t.Fatalf("Beat: live %v, %v, %v; want %v", b.Set.Live, b.ReadErr, err, got.Live)
	}
	for name, f := range map[string]Forwarding{"ServedBy": by, "Forwarding": read, "Beat": b.Forwarding} {
		if !slices.Equal(f.Live, got.Live) || !maps.EqualFunc(f.Served, want, slices.Equal) {
			t.Errorf("%s %+v, want the report's answer %+v", name, f, got)
		}
	}
	if n, err := rdb.HLen(ctx, ServedKey(prefix)).Result(); err != nil || n != 2 {
		t.Errorf("served reports left: %d, %v; want 2 (gone's dropped)", n, err)
	}
}

// TestHeartbeatRemovesExpiredReplicasFromTheSet: the heartbeat drops an
// expired replica from the set itself, not only from its answer (it calls
// ZREMRANGEBYSCORE only then).
func TestHeartbeatRemovesExpiredReplicasFromTheSet(t *testing.T) {
	t.Parallel()
	rdb, prefix := redistest.New(t)
	q := New(queue.New(rdb))
	ctx := context.Background()
	if _, err := q.Heartbeat(ctx, prefix, "short", 20*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	set, err := q.Heartbeat(ctx, prefix, "a", time.Minute)
	if err != nil || !slices.Equal(set.Live, []string{"a"}) {
		t.Fatalf("live %v, %v; want a", set.Live, err)
	}
	if members, err := rdb.ZRange(ctx, queue.ReplicasKey(prefix), 0, -1).Result(); err != nil || !slices.Equal(members, []string{"a"}) {
		t.Errorf("replica set %v, %v; want a alone", members, err)
	}
}
