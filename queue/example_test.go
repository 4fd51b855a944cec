package queue_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delaybridge/delaybridge/internal/testing/redistest"
	"github.com/delaybridge/delaybridge/queue"
)

// exampleRedis connects to the Redis the tests use; in a program this is
// redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"}) or the client you
// already have (standalone, Sentinel or Cluster).
func exampleRedis() *redis.Client {
	opt, err := redis.ParseURL(redistest.URL())
	if err != nil {
		panic(err)
	}
	return redis.NewClient(opt)
}

// exampleTopic is a topic under a key prefix of its own, deleted by cleanup.
func exampleTopic(rdb *redis.Client, format queue.Format, slots int) (queue.Topic, func()) {
	prefix := "example:" + redistest.Suffix()
	return queue.Topic{Name: "orders", Prefix: prefix, Slots: slots, Format: format}, func() {
		_ = redistest.DeleteKeys(context.Background(), rdb, prefix)
		rdb.Close()
	}
}

// A raw topic's member is the message body itself: what any producer can
// ZADD. queue.In counts from Redis's clock, the one the forwarder uses.
func ExampleQueue_Schedule() {
	ctx := context.Background()
	rdb := exampleRedis()
	topic, cleanup := exampleTopic(rdb, queue.FormatRaw, 16)
	defer cleanup()
	q := queue.New(rdb)

	r, err := q.Schedule(ctx, topic, queue.Message{Body: []byte(`{"order":42,"event":"payment-timeout"}`)}, queue.In(30*time.Minute))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("slot:", r.Slot, "= CRC32 of the member & 15:", queue.Slot([]byte(r.Member), 16))
	fmt.Println("id:", r.ID)
	// Output:
	// slot: 4 = CRC32 of the member & 15: 4
	// id: e38c1516a817487eafede07a7a4a15b1
}

// On an envelope topic every message has an id: scheduling the same id again
// replaces the message (idempotent producers), and headers and a routing key
// travel with it.
func ExampleQueue_Schedule_envelope() {
	ctx := context.Background()
	rdb := exampleRedis()
	topic, cleanup := exampleTopic(rdb, queue.FormatEnvelope, 8)
	defer cleanup()
	q := queue.New(rdb)

	due := time.Date(2030, 1, 2, 15, 4, 5, 0, time.UTC)
	msg := queue.Message{
		ID:         "order-42/payment-timeout",
		Body:       []byte(`{"order":42}`),
		Headers:    map[string]string{"tenant": "eu-1"},
		RoutingKey: "orders.eu",
	}
	r, err := q.Schedule(ctx, topic, msg, queue.At(due))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(r.Member)
	fmt.Println("due", r.Due().UTC(), "replaced", r.Replaced)

	r, _ = q.Schedule(ctx, topic, msg, queue.At(due.Add(time.Hour)))
	fmt.Println("due", r.Due().UTC(), "replaced", r.Replaced)
	// Output:
	// {"id":"order-42/payment-timeout","body":"{\"order\":42}","headers":{"tenant":"eu-1"},"routing_key":"orders.eu"}
	// due 2030-01-02 15:04:05 +0000 UTC replaced nothing
	// due 2030-01-02 16:04:05 +0000 UTC replaced scheduled
}

// Cancel by id works until the forwarder claims the message; after that the
// delivery is under way and Cancel reports ErrInFlight.
func ExampleQueue_CancelID() {
	ctx := context.Background()
	rdb := exampleRedis()
	topic, cleanup := exampleTopic(rdb, queue.FormatEnvelope, 1)
	defer cleanup()
	q := queue.New(rdb)

	q.Schedule(ctx, topic, queue.Message{ID: "reminder-1", Body: []byte("hi")}, queue.In(time.Hour))
	ok, err := q.CancelID(ctx, topic, "reminder-1")
	fmt.Println("cancelled:", ok, err)

	q.Schedule(ctx, topic, queue.Message{ID: "reminder-2", Body: []byte("hi")}, queue.In(-time.Second))
	q.Claim(ctx, topic, 0, 10, time.Minute) // what the forwarder does
	_, err = q.CancelID(ctx, topic, "reminder-2")
	fmt.Println("in flight:", errors.Is(err, queue.ErrInFlight))
	// Output:
	// cancelled: true <nil>
	// in flight: true
}

// Reschedule moves a scheduled message, found by id (or by member on raw
// topics), to a new time.
func ExampleQueue_Reschedule() {
	ctx := context.Background()
	rdb := exampleRedis()
	topic, cleanup := exampleTopic(rdb, queue.FormatEnvelope, 1)
	defer cleanup()
	q := queue.New(rdb)

	q.Schedule(ctx, topic, queue.Message{ID: "trial-ends/u7", Body: []byte("{}")}, queue.In(24*time.Hour))
	r, err := q.Reschedule(ctx, topic, queue.ByID("trial-ends/u7"), queue.At(time.Date(2031, 3, 1, 0, 0, 0, 0, time.UTC)))
	fmt.Println(r.Due().UTC(), err)

	_, err = q.Reschedule(ctx, topic, queue.ByID("unknown"), queue.In(time.Hour))
	fmt.Println(errors.Is(err, queue.ErrNotFound))
	// Output:
	// 2031-03-01 00:00:00 +0000 UTC <nil>
	// true
}

// Get reads a message by id while it is scheduled, waiting to retry or in
// flight.
func ExampleQueue_Get() {
	ctx := context.Background()
	rdb := exampleRedis()
	topic, cleanup := exampleTopic(rdb, queue.FormatEnvelope, 4)
	defer cleanup()
	q := queue.New(rdb)

	q.Schedule(ctx, topic, queue.Message{ID: "invoice-9", Body: []byte{0xca, 0xfe}}, queue.At(time.Date(2030, 6, 1, 0, 0, 0, 0, time.UTC)))
	info, err := q.Get(ctx, topic, "invoice-9")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s %s %x slot %d\n", info.State, info.Due.UTC().Format(time.RFC3339), info.Message.Body, info.Slot)
	fmt.Println(info.Member)
	// Output:
	// scheduled 2030-06-01T00:00:00Z cafe slot 3
	// {"id":"invoice-9","body_b64":"yv4="}
}

// ScheduleBatch writes many messages in pipelined round trips.
func ExampleQueue_ScheduleBatch() {
	ctx := context.Background()
	rdb := exampleRedis()
	topic, cleanup := exampleTopic(rdb, queue.FormatEnvelope, 4)
	defer cleanup()
	q := queue.New(rdb)

	var items []queue.Item
	for i := range 1000 {
		items = append(items, queue.Item{
			Message: queue.Message{ID: fmt.Sprintf("user-%d/digest", i), Body: []byte("weekly digest")},
			When:    queue.In(time.Duration(i) * time.Second),
		})
	}
	receipts, err := q.ScheduleBatch(ctx, topic, items)
	if err != nil {
		fmt.Println(err)
		return
	}
	perSlot := map[int]int{}
	for _, r := range receipts {
		perSlot[r.Slot]++
	}
	fmt.Println(len(receipts), "scheduled over", len(perSlot), "slots")
	// Output:
	// 1000 scheduled over 4 slots
}

// Dead messages keep the reason they died; Requeue sends them again with
// their attempts reset, Purge deletes them.
func ExampleQueue_Requeue() {
	ctx := context.Background()
	rdb := exampleRedis()
	topic, cleanup := exampleTopic(rdb, queue.FormatEnvelope, 1)
	defer cleanup()
	q := queue.New(rdb)

	// A message the broker refused for good (what the forwarder does).
	r, _ := q.Schedule(ctx, topic, queue.Message{ID: "order-7", Body: []byte("x")}, queue.In(-time.Second))
	q.Claim(ctx, topic, 0, 10, time.Minute)
	q.Retry(ctx, topic, 0, queue.Failure{Member: r.Member, Permanent: true, Reason: "NO_ROUTE: exchange orders"}, 10)

	dead, _ := q.DeadList(ctx, topic, queue.AllSlots, 10)
	for _, d := range dead {
		fmt.Println(d.ID, "died:", d.Reason)
	}
	res, err := q.Requeue(ctx, topic, queue.ByID("order-7"))
	fmt.Println("requeued:", res.Requeued, err)
	info, _ := q.Get(ctx, topic, "order-7")
	fmt.Println(info.State, "attempts", info.Attempts)
	// Output:
	// order-7 died: NO_ROUTE: exchange orders
	// requeued: 1 <nil>
	// scheduled attempts 0
}

// Any language computes a member's slot the same way.
func ExampleSlot() {
	fmt.Println(queue.Slot([]byte(`{"order":42}`), 8))
	// An envelope's slot comes from its id.
	fmt.Println(queue.Slot([]byte("order-42"), 8))
	// Output:
	// 1
	// 6
}

// EncodeEnvelope writes text bodies as JSON strings and binary ones as
// base64; DecodeEnvelope reads both.
func ExampleEncodeEnvelope() {
	text, _ := queue.EncodeEnvelope(queue.Message{ID: "a", Body: []byte("héllo")})
	bin, _ := queue.EncodeEnvelope(queue.Message{ID: "b", Body: []byte{0, 0xff}})
	fmt.Println(string(text))
	fmt.Println(string(bin))
	m, _ := queue.DecodeEnvelope([]byte(`{"id":"c","body":{"order":42}}`))
	fmt.Println(string(m.Body))
	// Output:
	// {"id":"a","body":"héllo"}
	// {"id":"b","body_b64":"AP8="}
	// {"order":42}
}
