package queue

import (
	"time"

	"github.com/redis/go-redis/v9"
)

// Queue runs the data model's operations against one Redis deployment
// (standalone, Sentinel or Cluster: every call touches one hash tag).
type Queue struct {
	rdb redis.UniversalClient
	// checks remembers the topics whose producer settings agreed with the
	// registry (see checkLayout).
	checks *layoutChecks
	// durable is what acceptance waits for (see WithDurability); gate
	// counts the replicas connected for it.
	durable Durability
	gate    *replicaGate
}

// New returns a Queue over rdb.
func New(rdb redis.UniversalClient) *Queue {
	return &Queue{rdb: rdb, checks: &layoutChecks{ok: map[checkKey]time.Time{}}, gate: &replicaGate{}}
}

// Client is the underlying Redis client.
func (q *Queue) Client() redis.UniversalClient { return q.rdb }
