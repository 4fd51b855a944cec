package flowstate

import (
	"github.com/redis/go-redis/v9"

	"github.com/delaybridge/delaybridge/internal/luakeys"
	"github.com/delaybridge/delaybridge/queue"
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

// The scripts' preambles are luakeys's: nowLua reads Redis's clock, as the
// queue's scripts do; allowOOMLua lets a script run on a full Redis (flow
// state is a few small keys per topic, and a limited or held topic must keep
// draining the backlog that filled Redis).
const (
	nowLua      = luakeys.NowLua
	allowOOMLua = luakeys.AllowOOMLua
)
