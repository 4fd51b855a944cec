package flowstate

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/delaybridge/delaybridge/internal/testing/redistest"
	"github.com/delaybridge/delaybridge/queue"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fixture is one test's flow state and topic.
type fixture struct {
	t   *testing.T
	ctx context.Context
	rdb *redis.Client
	s   *Store
	tp  queue.Topic
}

func newFixture(t *testing.T, format queue.Format, slots int) *fixture {
	t.Helper()
	rdb, prefix := redistest.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return &fixture{t: t, ctx: ctx, rdb: rdb, s: New(queue.New(rdb)), tp: queue.Topic{Name: "orders", Prefix: prefix, Slots: slots, Format: format}}
}
