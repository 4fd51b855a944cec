package cli

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/membership"
)

// TestReplicasShareATopicsSlotsAmongThoseThatForwardIt: pod-a reports
// orders, pod-b legacy, pod-c nothing (an older daemon: it counts as
// forwarding every topic). replicas shares orders' slots between pod-a and
// pod-c and legacy's between pod-b and pod-c, as the daemons do
// (Forwarding.Assign), and lists the topic a replica does not run as not
// run; before, pod-b was given orders slots that no one scanned.
func TestReplicasShareATopicsSlotsAmongThoseThatForwardIt(t *testing.T) {
	e := newCLIEnv(t)
	prefix := e.orders.Prefix
	for _, id := range []string{"pod-a", "pod-b", "pod-c"} {
		if _, err := membership.New(e.q).Heartbeat(e.ctx, prefix, id, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	live := []string{"pod-a", "pod-b", "pod-c"}
	for id, topics := range map[string][]string{"pod-a": {"orders"}, "pod-b": {"legacy"}} {
		if err := membership.New(e.q).ReportServed(e.ctx, prefix, id, topics, live, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	var res struct {
		Replicas []replicaRow `json:"replicas"`
	}
	if err := json.Unmarshal([]byte(e.mustRun("", "replicas", "--json")), &res); err != nil {
		t.Fatal(err)
	}
	forwarders := map[string][]string{"orders": {"pod-a", "pod-c"}, "legacy": {"pod-b", "pod-c"}}
	for name, ids := range forwarders {
		slots := 4
		if name == "legacy" {
			slots = 1
		}
		owners := membership.Assign(ids, name, slots)
		total := 0
		for _, r := range res.Replicas {
			got, ok := r.Owned[name]
			if ok != slices.Contains(ids, r.ID) {
				t.Errorf("%s: %s lists it: %t, want only %v to", name, r.ID, ok, ids)
			}
			for _, s := range got {
				if owners[s] != r.ID {
					t.Errorf("%s: %s owns slot %d, Assign among %v says %s", name, r.ID, s, ids, owners[s])
				}
			}
			total += len(got)
		}
		if total != slots {
			t.Errorf("%s: %d slots owned, want %d", name, total, slots)
		}
	}
	if n := len(res.Replicas[2].Owned["orders"]); res.Replicas[2].ID != "pod-c" || n != 2 {
		t.Errorf("pod-c (no report) owns %d orders slots, want 2 of 4", n)
	}
	out := e.mustRun("", "replicas")
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "pod-b") && !strings.Contains(line, "not run") {
			t.Errorf("pod-b's row %q: ORDERS must read \"not run\"", line)
		}
	}
}
