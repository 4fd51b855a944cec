package membership

import (
	"github.com/redis/go-redis/v9"

	"github.com/delaybridge/delaybridge/queue"
)

// Store runs the membership protocol over one queue's Redis.
type Store struct {
	q   *queue.Queue
	rdb redis.UniversalClient
}

// New returns the membership protocol over q's Redis.
func New(q *queue.Queue) *Store { return &Store{q: q, rdb: q.Client()} }

// flag is a script's boolean argument.
func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}
