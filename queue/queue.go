package queue

import "github.com/redis/go-redis/v9"

// Queue runs the data model's operations against one Redis deployment
// (standalone, Sentinel or Cluster: every call touches one hash tag).
type Queue struct {
	rdb redis.UniversalClient
}

// New returns a Queue over rdb.
func New(rdb redis.UniversalClient) *Queue { return &Queue{rdb: rdb} }

// Client is the underlying Redis client.
func (q *Queue) Client() redis.UniversalClient { return q.rdb }
