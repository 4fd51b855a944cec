package intake

import (
	"testing"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"
)

// TestAMQPIntakeRetryOfADeliveredMessageIsOneDelivery, end to end over the
// real RabbitMQ: a message taken in, forwarded and confirmed, then published
// again with the same id within the topic's dedup window (a producer's
// retry) is acked and counted as a duplicate, and arrives once; after the
// window the same id is delivered again.
func TestAMQPIntakeRetryOfADeliveredMessageIsOneDelivery(t *testing.T) {
	t.Parallel()
	const window = 3 * time.Second
	f, r := newFixture(t, 2), newRabbit(t)
	f.topic.DedupWindow = window
	arrivals := r.consumeDest(t)
	f.startAMQP(t, r, f.rdb, 0)
	f.startForwarder(t, r)
	send := func(body string) {
		r.publish(t, "k", amqp091.Publishing{MessageId: "retried", Headers: amqp091.Table{"x-delay": 0}, Body: []byte(body)})
	}
	expect := func(body string) time.Time {
		t.Helper()
		select {
		case a := <-arrivals:
			if string(a.d.Body) != body {
				t.Fatalf("delivered %q; want %q", a.d.Body, body)
			}
			return a.at
		case <-time.After(20 * time.Second):
			t.Fatalf("%q was not delivered", body)
		}
		return time.Time{}
	}
	send("first")
	first := expect("first")
	// The forwarder acks in Redis right after the broker confirmed; wait
	// until it has, so the retry below comes after the delivery.
	waitFor(t, 10*time.Second, "the delivery acked", func() bool {
		return f.rdb.Exists(t.Context(), f.topic.Keys(f.topic.SlotOfID("retried")).Delivered).Val() == 1
	})
	send("retry")
	waitFor(t, 10*time.Second, "the retry taken in as a duplicate", func() bool {
		return f.counter(f.metrics.Duplicates, "orders") == 1 && r.depth(t, r.Queue) == 0
	})
	select {
	case a := <-arrivals:
		t.Fatalf("the retry was delivered again: %q", a.d.Body)
	case <-time.After(time.Second):
	}
	if n := f.counter(f.metrics.Scheduled, "orders"); n != 1 {
		t.Errorf("intake_scheduled_total = %v; want 1", n)
	}

	// The window counts from the forwarder's ack (Redis's clock), a moment
	// after the arrival: wait until Redis's clock has passed it.
	until := f.rdb.ZScore(t.Context(), f.topic.Keys(f.topic.SlotOfID("retried")).Delivered, "retried").Val()
	if d := time.UnixMilli(int64(until)).Sub(first); d < window-time.Second || d > window+time.Second {
		t.Errorf("the id is known until %v after its arrival; want about the window, %v", d, window)
	}
	waitFor(t, 2*window, "the window to pass", func() bool {
		now, err := f.rdb.Time(t.Context()).Result()
		return err == nil && float64(now.UnixMilli()) > until
	})
	send("after")
	expect("after")
}
