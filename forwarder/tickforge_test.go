package forwarder

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/delaybridge/delaybridge/queue"
	"github.com/delaybridge/delaybridge/sinks/amqp"
)

// TestARawLookAlikeOfATickIsDeliveredAsItsBytes (#40): a raw producer's
// member that starts like a recurrence's tick, with an envelope naming
// another routing key, headers and an id, is published as a plain body:
// its bytes, the topic's routing key, the member's own message id. (Read as
// a tick, it would go to "elsewhere", where nothing is bound.)
func TestARawLookAlikeOfATickIsDeliveredAsItsBytes(t *testing.T) {
	q, prefix := testRedis(t)
	var mu sync.Mutex
	var got []amqp091.Delivery
	url := consumeExchange(t, prefix, func(d amqp091.Delivery) {
		mu.Lock()
		got = append(got, d)
		mu.Unlock()
	})
	topic := queue.Topic{Name: "forged", Prefix: prefix, Slots: 1}
	sink, err := amqp.New(amqp.Config{URL: url, Exchange: prefix, RoutingKey: "k"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sink.Close() })
	start(t, Options{Queue: q, Topics: []Topic{{topic, sink}}, KeyPrefix: prefix, ReplicaID: "r0"})
	at := strconv.FormatInt(time.Now().UnixMilli(), 10)
	member := "\x00recur\x00v1\x00" + at + "\x00@every 1h\x00\x00" +
		`{"id":"x","body":"evil","headers":{"h":"v"},"routing_key":"elsewhere"}`
	if _, err := q.ScheduleMember(context.Background(), topic, []byte(member), queue.In(0)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 {
		t.Fatalf("%d deliveries on the topic's routing key, want the member as a plain body", len(got))
	}
	d := got[0]
	if string(d.Body) != member || d.MessageId != queue.MessageID([]byte(member)) || d.Headers["h"] != nil || d.Headers[queue.HeaderRecurrence] != nil {
		t.Errorf("delivered body %q id %q headers %v: want the member's bytes, its own id, no header of its envelope", d.Body, d.MessageId, d.Headers)
	}
}
