package forwarder

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	amqp091 "github.com/rabbitmq/amqp091-go"
	"github.com/redis/go-redis/v9"

	"github.com/delaybridge/delaybridge/queue"
	"github.com/delaybridge/delaybridge/sinks/amqp"
)

// rabbitDeliveries declares an exchange and queue named name on the test
// RabbitMQ and records every delivery's body with the local time it came.
type rabbitDeliveries struct {
	url string
	mu  sync.Mutex
	at  map[string][]time.Time
}

func (r *rabbitDeliveries) got() map[string][]time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string][]time.Time, len(r.at))
	for k, v := range r.at {
		out[k] = append([]time.Time(nil), v...)
	}
	return out
}

func consumeRabbit(t *testing.T, name string) *rabbitDeliveries {
	t.Helper()
	r := &rabbitDeliveries{at: map[string][]time.Time{}}
	r.url = consumeExchange(t, name, func(d amqp091.Delivery) {
		r.mu.Lock()
		r.at[string(d.Body)] = append(r.at[string(d.Body)], time.Now())
		r.mu.Unlock()
	})
	return r
}

// consumeExchange declares a direct exchange and a queue both named name
// (bound with routing key "k", auto-deleted), hands every delivery to got
// on a goroutine of its own, and deletes both at cleanup. It returns the
// broker's URL.
func consumeExchange(t *testing.T, name string, got func(amqp091.Delivery)) string {
	t.Helper()
	url := os.Getenv("DELAYBRIDGE_TEST_AMQP_URL")
	if url == "" {
		url = "amqp://guest:guest@127.0.0.1:5672/"
	}
	conn, err := amqp091.Dial(url)
	if err != nil {
		t.Fatalf("rabbitmq at %s is required: %v", url, err)
	}
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.ExchangeDeclare(name, "direct", false, true, false, false, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueueDeclare(name, false, true, false, false, nil); err != nil {
		t.Fatal(err)
	}
	if err := ch.QueueBind(name, "k", name, false, nil); err != nil {
		t.Fatal(err)
	}
	deliveries, err := ch.Consume(name, "", true, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for d := range deliveries {
			got(d)
		}
	}()
	t.Cleanup(func() {
		ch.QueueDelete(name, false, false, false)
		ch.ExchangeDelete(name, false, false)
		conn.Close()
		<-done
	})
	return url
}

// claimedSum is delaybridge_claimed_total of topic over the registries.
func claimedSum(t *testing.T, regs []*prometheus.Registry, topic string) float64 {
	t.Helper()
	sum := 0.0
	for _, reg := range regs {
		sum += gatherSeries(t, reg)[`delaybridge_claimed_total{topic="`+topic+`"}`]
	}
	return sum
}

func TestPauseUnderLoadStopsEveryReplicaAndResumeDeliversAllNoneEarly(t *testing.T) {
	q, prefix := testRedis(t)
	ctx := context.Background()
	topic := queue.Topic{Name: "paused", Prefix: prefix, Slots: 8}
	rabbit := consumeRabbit(t, prefix)
	var regs []*prometheus.Registry
	for i := range 3 {
		sink, err := amqp.New(amqp.Config{URL: rabbit.url, Exchange: prefix, RoutingKey: "k"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sink.Close() })
		reg := prometheus.NewRegistry()
		regs = append(regs, reg)
		start(t, Options{Queue: q, Topics: []Topic{{topic, sink}}, KeyPrefix: prefix, ReplicaID: fmt.Sprintf("r%d", i),
			HeartbeatInterval: 100 * time.Millisecond, HeartbeatTTL: 500 * time.Millisecond,
			PollInterval: 200 * time.Millisecond, BatchSize: 50, Metrics: NewMetrics(reg)})
	}

	// A producer schedules 40 messages every 20 ms for 4 s, each due 0 to
	// 1.5 s later; the topic is paused after 1 s and resumed after 3.5 s.
	due := map[string]time.Time{}
	var pausedAt, resumedAt time.Time
	var atPause1s float64
	begin := time.Now()
	for i := 0; time.Since(begin) < 4*time.Second; i++ {
		pipe := q.Client().Pipeline()
		for j := range 40 {
			m := fmt.Sprintf("m-%d-%d", i, j)
			d := time.Now().Add(time.Duration(j*37) * time.Millisecond)
			due[m] = d
			pipe.ZAdd(ctx, topic.Keys(queue.Slot([]byte(m), 8)).Scheduled, redis.Z{Score: float64(d.UnixMilli()), Member: m})
		}
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
		switch el := time.Since(begin); {
		case pausedAt.IsZero() && el > time.Second:
			if err := q.Pause(ctx, topic, "test"); err != nil {
				t.Fatal(err)
			}
			pausedAt = time.Now()
		case atPause1s == 0 && !pausedAt.IsZero() && time.Since(pausedAt) > time.Second:
			atPause1s = claimedSum(t, regs, "paused")
		case resumedAt.IsZero() && el > 3500*time.Millisecond:
			if got := claimedSum(t, regs, "paused"); got != atPause1s {
				t.Errorf("claimed %v between 1 s after the pause and the resume, want none", got-atPause1s)
			}
			if atPause1s == 0 {
				t.Errorf("nothing claimed before the pause: the test proves nothing")
			}
			resumedAt = time.Now() // deliveries may start once the first slot resumes
			if _, err := q.Resume(ctx, topic); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	eventually(t, 30*time.Second, "every message delivered", func() bool { return len(rabbit.got()) == len(due) })
	checkPausedDeliveries(t, rabbit.got(), due, pausedAt, resumedAt)
}

// checkPausedDeliveries: each message delivered (once: nothing crashed),
// none before its due time, none between 1 s after the pause and the resume.
func checkPausedDeliveries(t *testing.T, got map[string][]time.Time, due map[string]time.Time, pausedAt, resumedAt time.Time) {
	t.Helper()
	held := 0
	for m, d := range due {
		at := got[m]
		if len(at) != 1 {
			t.Errorf("%s delivered %d times, want once", m, len(at))
			continue
		}
		if at[0].Before(d.Truncate(time.Millisecond)) {
			t.Errorf("%s delivered %s before its due time", m, d.Sub(at[0]))
		}
		if at[0].After(pausedAt.Add(time.Second)) && at[0].Before(resumedAt) {
			t.Errorf("%s delivered %s after the pause, before the resume", m, at[0].Sub(pausedAt))
		}
		if d.After(pausedAt) && d.Before(resumedAt) {
			held++
		}
	}
	first := time.Time{}
	for _, at := range got {
		if len(at) > 0 && !at[0].Before(resumedAt) && (first.IsZero() || at[0].Before(first)) {
			first = at[0]
		}
	}
	// Resume wakes the scanners: the first delivery must not wait for a
	// poll interval (200 ms), let alone longer.
	if lag := first.Sub(resumedAt); first.IsZero() || lag > time.Second {
		t.Errorf("first delivery %s after the resume, want well within a second", lag)
	}
	if held == 0 {
		t.Errorf("no message fell due while paused: the test proves nothing")
	}
	t.Logf("%d messages, %d due while paused, first delivered %s after the resume", len(due), held, first.Sub(resumedAt))
}
