package forwarder

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/delaybridge/delaybridge/flowstate"
	"github.com/delaybridge/delaybridge/queue"
)

// A replica reports the limits its environment gives each topic it limits,
// renews the report while it runs (it lives HeartbeatTTL) and deletes it
// when it stops; a replica or topic without limits writes nothing.
func TestReplicasReportTheLimitsTheirEnvironmentGivesEachTopic(t *testing.T) {
	t.Parallel()
	q, prefix := testRedis(t)
	tp := queue.Topic{Name: "campaign", Prefix: prefix, Slots: 2}
	free := queue.Topic{Name: "orders", Prefix: prefix}
	opt := func(id string, flow map[string]Flow) Options {
		return Options{Queue: q, Topics: []Topic{{Topic: tp, Sink: newRecordSink()}, {Topic: free, Sink: newRecordSink()}},
			KeyPrefix: prefix, BatchSize: 10, ReplicaID: id, Flow: flow,
			HeartbeatInterval: 100 * time.Millisecond, HeartbeatTTL: 600 * time.Millisecond}
	}
	a, stopA := startF(t, opt("a", map[string]Flow{"campaign": {RateLimit: 300, HoldQueue: "campaign work", HoldAbove: 1000}}),
		func(f *Forwarder) { f.envReports.passed = make(passes, 1) })
	start(t, opt("b", nil))
	reports := func() [][]flowstate.ReplicaLimits {
		t.Helper()
		r, err := flowstate.New(q).EnvOf(context.Background(), []queue.Topic{tp, free})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	want := [][]flowstate.ReplicaLimits{{{Replica: "a", Rate: 300, HoldQueue: "campaign work", HoldAbove: 1000}}, nil}
	same := func() bool {
		return cmp.Diff(want, reports(), cmpopts.IgnoreFields(flowstate.ReplicaLimits{}, "Until")) == ""
	}
	waitPasses(t, a.envReports.passed, 5*time.Second, "a's report", same)
	// Renewed: still there well after one TTL.
	time.Sleep(1500 * time.Millisecond)
	if d := cmp.Diff(want, reports(), cmpopts.IgnoreFields(flowstate.ReplicaLimits{}, "Until")); d != "" {
		t.Fatalf("reports after 2.5 TTLs (-want +got):\n%s", d)
	}
	if err := stopA(); err != nil {
		t.Fatal(err)
	}
	if r := reports(); len(r[0]) != 0 || len(r[1]) != 0 {
		t.Errorf("reports after a stopped: %+v, want none", r)
	}
	if n, err := q.Client().Exists(context.Background(), tp.FlowKeys().Env, free.FlowKeys().Env).Result(); err != nil || n != 0 {
		t.Errorf("env keys exist (%d, %v) with no report", n, err)
	}
}
