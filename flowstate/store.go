package flowstate

import (
	"github.com/delaybridge/delaybridge/queue"
	"github.com/redis/go-redis/v9"
)

// Store reads and writes the flow state of the topics of one queue: it
// shares the queue's Redis client and its replica set, and touches only the
// topics' topic-wide keys (queue.FlowKeys).
type Store struct {
	q   *queue.Queue
	rdb redis.UniversalClient
}

// New returns the flow state over q's Redis.
func New(q *queue.Queue) *Store { return &Store{q: q, rdb: q.Client()} }

// nowLua sets the local "now" (ms, integer-valued float) from TIME, as the
// queue's scripts do: every replica reads one clock, Redis's.
const nowLua = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
`

// allowOOMLua, the first line of a script's source, lets the script run
// while Redis is at its maxmemory (Redis 7.0 or later): flow state is a few
// small keys per topic, and a limited or held topic must keep draining the
// backlog that filled Redis.
const allowOOMLua = "#!lua flags=allow-oom\n"
