package cluster

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/internal/testing/e2etest"
)

// replica is one running delaybridge process and its replica id.
type replica struct {
	*e2etest.Daemon
	id string
}

// ownershipChange is one "ownership changed" log line of a daemon.
type ownershipChange struct {
	At       time.Time `json:"time"`
	Replicas int       `json:"replicas"`
	Owned    int       `json:"owned"`
	Gained   int       `json:"gained"`
	Lost     int       `json:"lost"`
}

// startReplica runs the binary as replica id with the backend's Redis
// variables plus vars, and waits until it serves HTTP.
func startReplica(t *testing.T, b *backend, id string, vars map[string]string) *replica {
	t.Helper()
	all := map[string]string{
		"DELAYBRIDGE_AMQP_URL":   e2etest.AMQPURL(),
		"DELAYBRIDGE_REPLICA_ID": id,
	}
	if os.Getenv("GORACE") == "" {
		all["GORACE"] = "atexit_sleep_ms=0" // exit at once, not a second later
	}
	maps.Copy(all, b.vars)
	maps.Copy(all, vars)
	return &replica{Daemon: e2etest.Start(t, binary, all), id: id}
}

// changesSince are the ownership changes logged at or after from.
func (r *replica) changesSince(from time.Time) []ownershipChange {
	var out []ownershipChange
	for _, line := range r.Records("ownership changed") {
		var c ownershipChange
		if json.Unmarshal(line, &c) == nil && !c.At.Before(from) {
			out = append(out, c)
		}
	}
	return out
}

// owned is the delaybridge_owned_slots gauge of topic; -1 when it cannot be
// read (the daemon is busy or gone). A gauge not exposed yet is 0.
func (r *replica) owned(topic string) int {
	v, _, err := e2etest.Metric(context.Background(), r.Addr(), "delaybridge_owned_slots", "topic="+topic)
	if err != nil {
		return -1
	}
	return int(v)
}

// counter is a counter of topic (0 before it is exposed); the test fails
// when it cannot be read.
func (r *replica) counter(t *testing.T, name, topic string) float64 {
	t.Helper()
	v, _, err := e2etest.Metric(context.Background(), r.Addr(), name, "topic="+topic)
	if err != nil {
		t.Fatalf("read %s of %s: %v", name, r.id, err)
	}
	return v
}
