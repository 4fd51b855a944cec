package forwarder

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delaybridge/delaybridge/internal/testing/e2etest"
	"github.com/delaybridge/delaybridge/internal/testing/redistest"
	"github.com/delaybridge/delaybridge/queue"
	"github.com/delaybridge/delaybridge/sinks"
)

// memberCalls counts the Redis commands that carry any of a set of members
// as an argument: the writes that settle them. A script call that Redis
// answers NOSCRIPT ran nothing and is not counted: go-redis's Script.Run
// (and queue's evalAll, after SCRIPT LOAD) then sends the call again, and
// that one is the write. Whether Redis still caches a script depends on what
// ran on it before (a fresh or restarted server, SCRIPT FLUSH), so counting
// the refused EVALSHA made the count depend on other tests: it read 3 when
// the ack script was cached and the retry script not.
//
// A command is counted as it is sent, since the test reads the count once
// the write shows in Redis, which may be before its reply reaches the
// client; a NOSCRIPT reply takes it back before the command that replaces
// it is sent.
type memberCalls struct {
	mu      sync.Mutex
	members map[string]bool
	n       int
	seen    []string // the names of the commands sent, for the failure message
	refused int      // member-carrying calls answered NOSCRIPT (not counted)
}

func (c *memberCalls) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *memberCalls) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		sent := c.send(cmd)
		err := next(ctx, cmd) // go-redis sets cmd's error from it after the hooks
		c.answered(sent, err)
		return err
	}
}
func (c *memberCalls) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		sent := make([]bool, len(cmds))
		for i, cmd := range cmds {
			sent[i] = c.send(cmd)
		}
		err := next(ctx, cmds)
		for i, cmd := range cmds {
			c.answered(sent[i], cmd.Err())
		}
		return err
	}
}

// send counts cmd if it carries a member, and says whether it did.
func (c *memberCalls) send(cmd redis.Cmder) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, a := range cmd.Args() {
		if s, ok := a.(string); ok && c.members[s] {
			c.n++
			c.seen = append(c.seen, cmd.Name())
			return true
		}
	}
	return false
}

// answered takes a counted command back when Redis answered it NOSCRIPT.
func (c *memberCalls) answered(sent bool, err error) {
	if !sent || !noScript(err) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n--
	c.refused++
}

// noScript reports whether err is Redis's NOSCRIPT: an EVALSHA of a script
// it does not cache, which ran nothing.
func noScript(err error) bool {
	return err != nil && (errors.Is(err, redis.ErrNoScript) || redis.HasErrorPrefix(err, "NOSCRIPT"))
}

func (c *memberCalls) count() (n int, seen []string, refused int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n, append([]string(nil), c.seen...), c.refused
}

// TestOneBatchIsSettledInOneAckAndOneRetryCallByTheIDsItWasDecodedWith:
// half of an envelope batch is confirmed and half refused for good; the
// acks go to Redis in one call and so do the refusals, and both leave the
// ids index by the ids decoded for publishing.
func TestOneBatchIsSettledInOneAckAndOneRetryCallByTheIDsItWasDecodedWith(t *testing.T) {
	t.Parallel()
	rdb, prefix := redistest.New(t)
	settleOneBatch(t, rdb, prefix)
}

// TestOneBatchIsSettledInOneAckAndOneRetryCallOnARedisWithoutTheScripts is
// the same on a redis-server of the test's own that has cached no script, so
// each settling call is an EVALSHA answered NOSCRIPT and then an EVAL (what
// the shared Redis does after a restart): still one ack and one retry.
func TestOneBatchIsSettledInOneAckAndOneRetryCallOnARedisWithoutTheScripts(t *testing.T) {
	t.Parallel()
	srv := e2etest.StartPolicyRedis(t, "noeviction")
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { _ = rdb.Close() })
	if n, err := rdb.Info(context.Background(), "memory").Result(); err != nil || !strings.Contains(n, "number_of_cached_scripts:0") {
		t.Fatalf("a fresh redis-server caches scripts (%v): %s", err, n)
	}
	calls := settleOneBatch(t, rdb, "test:settle-noscript:"+redistest.Suffix())
	if _, _, refused := calls.count(); refused != 2 {
		t.Errorf("%d settling script calls answered NOSCRIPT, want 2 (ack and retry, neither cached)", refused)
	}
}

// settleOneBatch runs the scenario on rdb under prefix and checks that the
// batch's members went to Redis in one ack and one retry call; it returns
// the hook that counted them.
func settleOneBatch(t *testing.T, rdb *redis.Client, prefix string) *memberCalls {
	t.Helper()
	q := queue.New(rdb)
	topic := queue.Topic{Name: "t", Prefix: prefix, Format: queue.FormatEnvelope}
	ctx := context.Background()
	calls := &memberCalls{members: map[string]bool{}}
	const n = 40
	for i := range n {
		r, err := q.Schedule(ctx, topic, queue.Message{ID: fmt.Sprintf("id-%d", i), Body: []byte(fmt.Sprint(i))}, queue.In(-time.Second))
		if err != nil {
			t.Fatal(err)
		}
		calls.members[r.Member] = true
	}
	rdb.AddHook(calls)
	sink := newRecordSink()
	sink.fail = func(m sinks.Message) error {
		var i int
		fmt.Sscan(string(m.Body), &i)
		if i%2 == 1 {
			return sinks.Permanent(errors.New("refused"))
		}
		return nil
	}
	start(t, Options{Queue: q, Topics: []Topic{{topic, sink}}, KeyPrefix: prefix, AllSlots: true, BatchSize: 2 * n})
	k := topic.Keys(0)
	eventually(t, 10*time.Second, "every message settled", func() bool {
		dead, _ := rdb.ZCard(ctx, k.Dead).Result()
		inflight, _ := rdb.ZCard(ctx, k.Inflight).Result()
		return len(sink.published()) == n/2 && dead == n/2 && inflight == 0
	})
	if got, seen, refused := calls.count(); got != 2 {
		t.Errorf("%d Redis commands carried the batch's members (sent: %v, of which %d answered NOSCRIPT, not counted), want 2 (one ack, one retry)", got, seen, refused)
	}
	if ids, _ := rdb.HLen(ctx, k.IDs).Result(); ids != 0 {
		t.Errorf("the ids index still holds %d ids of settled messages", ids)
	}
	return calls
}
