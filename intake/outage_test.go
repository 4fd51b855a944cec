package intake

import (
	"context"
	"fmt"
	"testing"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"
	"github.com/redis/go-redis/v9"

	"github.com/delaybridge/delaybridge/internal/testing/faultproxy"
	"github.com/delaybridge/delaybridge/internal/testing/redistest"
	"github.com/delaybridge/delaybridge/queue"
)

func TestAMQPIntakeLosesNothingWhileRedisIsCut(t *testing.T) {
	t.Parallel()
	f, r := newFixture(t, 4), newRabbit(t)
	viaProxy, proxy := proxiedRedis(t)
	stop := f.startAMQP(t, r, viaProxy, 0)
	t.Cleanup(stop) // before the client closes

	send := func(from, to int) {
		for i := from; i < to; i++ {
			r.publish(t, "k", amqp091.Publishing{MessageId: fmt.Sprint("m", i), Headers: amqp091.Table{"x-delay": 60000}, Body: []byte("x")})
		}
	}
	send(0, 10)
	waitFor(t, 10*time.Second, "10 scheduled", func() bool { return f.scheduled(t) == 10 })

	proxy.Cut()
	send(10, 40)
	time.Sleep(6 * time.Second)
	if n := f.scheduled(t); n != 10 {
		t.Fatalf("scheduled %d while Redis was cut, want 10", n)
	}
	received := f.counter(f.metrics.Received, "orders")
	if received <= 10 {
		t.Errorf("received %v while Redis was cut: the intake stopped taking deliveries", received)
	}
	if received > 10+30*10 {
		t.Errorf("received %v in 6s while Redis was cut: no back-off", received)
	}
	proxy.Restore()

	waitFor(t, 30*time.Second, "all 40 scheduled and the queue empty", func() bool {
		return f.scheduled(t) == 40 && r.depth(t, r.Queue) == 0
	})
	dead, err := queue.New(f.rdb).DeadCount(context.Background(), f.topic)
	if err != nil || dead != 0 {
		t.Errorf("dead = %d, %v; want none", dead, err)
	}
	t.Logf("received %v deliveries for 40 messages (redeliveries after nacks)", f.counter(f.metrics.Received, "orders"))
}

// proxiedRedis is a client of the test Redis through a fault proxy, with
// short timeouts and no retries.
func proxiedRedis(t *testing.T) (*redis.Client, *faultproxy.Proxy) {
	t.Helper()
	opts := redistest.Options(t)
	proxy, err := faultproxy.New(context.Background(), opts.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proxy.Close() })
	opts.Addr = proxy.Addr()
	opts.DialTimeout, opts.ReadTimeout, opts.WriteTimeout, opts.MaxRetries = time.Second, time.Second, time.Second, -1
	c := redis.NewClient(opts)
	t.Cleanup(func() { _ = c.Close() })
	return c, proxy
}
