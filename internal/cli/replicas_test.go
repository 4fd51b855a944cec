package cli

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delaybridge/delaybridge/membership"
)

func TestReplicasListsLiveReplicasAndTheSlotsTheyOwn(t *testing.T) {
	e := newCLIEnv(t)
	if out := e.mustRun("", "replicas"); !strings.Contains(out, "no live replicas") {
		t.Errorf("empty set:\n%s", out)
	}
	for _, id := range []string{"pod-a", "pod-b", "pod-c"} {
		if _, err := membership.New(e.q).Heartbeat(e.ctx, e.orders.Prefix, id, 5*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	e.rdb.ZAdd(e.ctx, e.orders.Prefix+":replicas", redis.Z{Score: 1, Member: "expired"})
	var res struct {
		Replicas []replicaRow `json:"replicas"`
	}
	if err := json.Unmarshal([]byte(e.mustRun("", "replicas", "--json")), &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Replicas) != 3 {
		t.Fatalf("replicas %+v, want pod-a, pod-b, pod-c", res.Replicas)
	}
	owners := membership.Assign([]string{"pod-a", "pod-b", "pod-c"}, "orders", 4)
	total := 0
	for _, r := range res.Replicas {
		if r.HeartbeatAgeMS < 0 || r.HeartbeatAgeMS > 2000 || r.ExpiresInMS < 3000 {
			t.Errorf("%s: age %d ms, expires in %d ms", r.ID, r.HeartbeatAgeMS, r.ExpiresInMS)
		}
		for _, s := range r.Owned["orders"] {
			if owners[s] != r.ID {
				t.Errorf("%s owns orders slot %d, Assign says %s", r.ID, s, owners[s])
			}
		}
		total += len(r.Owned["orders"])
		if len(r.Owned["legacy"]) > 1 {
			t.Errorf("%s owns %v of legacy", r.ID, r.Owned["legacy"])
		}
	}
	if total != 4 {
		t.Errorf("%d orders slots owned, want 4", total)
	}
	out := e.mustRun("", "replicas")
	if !strings.Contains(out, "REPLICA") || !strings.Contains(out, "ORDERS") || !strings.Contains(out, "pod-b") || strings.Contains(out, "expired") {
		t.Errorf("table:\n%s", out)
	}
}
