package chaos

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/redis/go-redis/v9"

	"github.com/delaybridge/delaybridge/internal/testing/e2etest"
	"github.com/delaybridge/delaybridge/queue"
)

// Three replicas consume an intake queue (messages with the delayed-message
// plugin's x-delay header) while a producer publishes to it; every second one
// replica is killed with SIGKILL and a new one takes its place. The
// deliveries a killed replica held unacknowledged go back to the queue and
// another replica takes them again, some after the first one had already
// scheduled them: the id must make that one message. So Redis never holds an
// id twice, every message arrives, none before its publish time + x-delay,
// and destination duplicates stay within what killed sinks can repeat.
//
// It does not run in parallel with the other scenarios: its three race-built
// replicas, twelve starts and a producer keep both cores busy, and the
// scenarios that judge lateness (the stalls, the poison members) failed
// their bounds beside it. As a sequential test it runs before the parallel
// ones resume.
func TestSIGKILLWhileConsumingTheIntakeSchedulesEveryIDOnce(t *testing.T) {
	r := report(t, "7 intake-sigkill-1-of-3-every-1s")
	b := newBridge(t, 8, nil).set("DELAYBRIDGE_LEASE", "2s")
	b.topic.Format = queue.FormatEnvelope
	in := newIntakeQueue(t, b.name+".intake")
	b.set("DELAYBRIDGE_TOPIC_ORDERS_FORMAT", "envelope",
		"DELAYBRIDGE_TOPIC_ORDERS_INTAKE", "amqp",
		"DELAYBRIDGE_TOPIC_ORDERS_INTAKE_QUEUE", in.name)
	b.mq.Consume(t)

	// Delays of 2 to 5 s, interleaved: a killed replica's deliveries mostly
	// come back before the copy it may have scheduled falls due, which is
	// the case the ids must handle. A few come back later (returned by two
	// or three kills in a row, behind a backlog): their first copy was
	// already published, so they arrive twice, with two due times; that is
	// a crash's at-least-once, counted in the duplicates and logged.
	const n = 3000
	const publishFor = 4 * time.Second
	delay := func(i int) time.Duration { return 2*time.Second + time.Duration(i*7919%3000)*time.Millisecond }

	replicas := make([]*e2etest.Daemon, 3)
	gen := 0
	launch := func(i int) {
		gen++
		b.vars["DELAYBRIDGE_REPLICA_ID"] = fmt.Sprintf("%s-r%d-%d", b.name, i, gen)
		replicas[i] = b.start()
	}
	for i := range replicas {
		launch(i)
	}

	doubled := &idWatch{}
	ctx, cancel := context.WithCancel(context.Background())
	waitSampler := sampleEvery(ctx, 250*time.Millisecond, func(ctx context.Context) { doubled.sample(ctx, b.rdb, b.topic) })
	stopSampler := sync.OnceFunc(func() { cancel(); waitSampler() })
	t.Cleanup(stopSampler)

	start := time.Now()
	type result struct {
		sent []time.Time
		err  error
	}
	published := make(chan result, 1)
	go func() {
		sent, err := in.publish(n, publishFor, delay)
		published <- result{sent, err}
	}()
	kills := 0
	for next := start.Add(time.Second); next.Before(start.Add(publishFor + 6*time.Second)); next = next.Add(time.Second) {
		until(next)
		i := kills % len(replicas)
		replicas[i].Kill()
		kills++
		launch(i)
	}
	res := <-published
	if res.err != nil {
		t.Fatalf("publish to the intake queue: %v", res.err)
	}
	// A message's due time is when the intake received it + x-delay; the
	// test knows only when it published it, which is earlier: a delivery
	// before publish time + x-delay is certainly early.
	plan := &e2etest.Plan{Due: make([]time.Time, n)}
	for i, at := range res.sent {
		plan.Due[i] = at.Add(delay(i)).Truncate(time.Millisecond)
	}

	b.settle(plan, b.mq.Deliveries, false, 40*time.Second)
	for _, d := range replicas {
		stop(t, d)
	}
	stopSampler()
	doubled.sample(context.Background(), b.rdb, b.topic)

	all := b.mq.Deliveries()
	rescheduled := dueTimesPerMessage(t, plan, all)
	got := checkIntakeDeliveries(t, plan, all)
	redelivered := redeliveredByQueue(plan, got)
	o := plan.Count(got, nil)
	// As in the SIGKILL scenario: a killed replica can have published,
	// unacknowledged, at most what it held in flight. With nine kills this
	// exceeds n, so it is a sanity bound only; what tests the intake is that
	// Redis never held an id twice and that n distinct ids arrived.
	bound := kills * b.inflightBound()
	r.count(t, o, fmt.Sprintf("%d SIGKILLs, %d replicas started; %d messages redelivered to the intake, %d of them delivered with two due times; Redis sampled %d× (no id twice); duplicate bound %d",
		kills, gen, redelivered, rescheduled, doubled.samples, bound))

	if len(doubled.ids) > 0 {
		t.Errorf("Redis held an id twice in a slot's scheduled and in-flight sets (the intake doubled it): %v", doubled.ids)
	}
	if o.Duplicates > bound {
		t.Errorf("%d duplicates after %d kills, more than %d (each kill can repeat at most %d in-flight messages)",
			o.Duplicates, kills, bound, b.inflightBound())
	}
	if redelivered == 0 {
		t.Errorf("no message arrived marked as redelivered by the intake queue (x-delivery-count): the kills never caught a replica holding deliveries, so this scenario proved nothing")
	}
	if kills < 5 {
		t.Errorf("only %d kills happened; the machine is too slow for this scenario", kills)
	}
	if dead := e2etest.DeadSet(t, b.rdb, b.topic); len(dead) > 0 {
		t.Errorf("%d messages dead-lettered, first: %+v", len(dead), dead[0])
	}
	b.expectDrained()
	for slot := range b.topic.SlotCount() {
		if k := b.topic.Keys(slot).IDs; b.rdb.Exists(context.Background(), k).Val() != 0 {
			t.Errorf("%s still exists after everything settled", k)
		}
		if ks := b.rdb.Keys(context.Background(), b.topic.Keys(slot).Index+":*").Val(); len(ks) != 0 {
			t.Errorf("id index buckets %v still exist after everything settled", ks)
		}
	}
	if left := in.depth(t); left != 0 {
		t.Errorf("%d messages left in the intake queue %s", left, in.name)
	}
}

// checkIntakeDeliveries checks what only an intake's deliveries can tell:
// the id is the producer's message id, the x-delaybridge-due the intake
// computed is not before the plan's due time (the earliest the producer's
// x-delay allows: publish time + x-delay on a queue, the record's timestamp
// + x-delay on a Kafka topic), and the delivery is not before that due
// time. It returns the deliveries with the plan's due time in place of the
// intake's (which it checked), for Count.
func checkIntakeDeliveries(t *testing.T, plan *e2etest.Plan, got []e2etest.Delivery) []e2etest.Delivery {
	t.Helper()
	ids := map[string]bool{}
	var badID, dueEarly, beforeOwnDue []int
	for i := range got {
		d := &got[i]
		k := e2etest.Number(d.Body)
		if k < 0 || k >= plan.Len() {
			continue // Count reports it as foreign
		}
		ids[d.ID] = true
		if d.ID != "msg-"+strconv.Itoa(k) {
			badID = append(badID, k)
		}
		if d.Due < plan.Due[k].UnixMilli() {
			dueEarly = append(dueEarly, k)
		}
		if d.At.Before(time.UnixMilli(d.Due)) {
			beforeOwnDue = append(beforeOwnDue, k)
		}
		d.Due = plan.Due[k].UnixMilli()
	}
	if len(badID) > 0 {
		t.Errorf("%d deliveries whose message id is not the producer's, first: %v", len(badID), badID[:min(10, len(badID))])
	}
	if len(dueEarly) > 0 {
		t.Errorf("%d deliveries with an x-delaybridge-due before the producer's time + x-delay, first: %v", len(dueEarly), dueEarly[:min(10, len(dueEarly))])
	}
	if len(beforeOwnDue) > 0 {
		t.Errorf("%d deliveries before their own x-delaybridge-due, first: %v", len(beforeOwnDue), beforeOwnDue[:min(10, len(beforeOwnDue))])
	}
	if len(ids) != plan.Len() {
		t.Errorf("%d distinct message ids delivered, want %d", len(ids), plan.Len())
	}
	return got
}

// redeliveredByQueue is how many numbered messages arrived marked by the
// intake queue as redelivered (x-delivery-count): a killed replica held
// them unacknowledged.
func redeliveredByQueue(plan *e2etest.Plan, got []e2etest.Delivery) int {
	redelivered := map[int]bool{}
	for _, d := range got {
		if k := e2etest.Number(d.Body); k >= 0 && k < plan.Len() && d.Headers["x-delivery-count"] != "" {
			redelivered[k] = true
		}
	}
	return len(redelivered)
}

// dueTimesPerMessage counts the messages delivered with more than one
// x-delaybridge-due: the intake scheduled them again (a redelivery, its due
// counted from the new receipt) after their first copy was already claimed.
// Redis never held both, but the destination gets both: the at-least-once
// of a crash, which the duplicate bound covers; the count shows how often.
// (A Kafka record read again keeps its due, its timestamp + x-delay: there
// the count must be 0.)
func dueTimesPerMessage(t *testing.T, plan *e2etest.Plan, got []e2etest.Delivery) int {
	dues := map[int]map[int64]bool{}
	for _, d := range got {
		k := e2etest.Number(d.Body)
		if dues[k] == nil {
			dues[k] = map[int64]bool{}
		}
		dues[k][d.Due] = true
	}
	n := 0
	for k, s := range dues {
		if len(s) < 2 {
			continue
		}
		if n++; n <= 5 {
			var copies []string
			for _, d := range got {
				if e2etest.Number(d.Body) == k {
					copies = append(copies, fmt.Sprintf("due +%s at +%s (x-delivery-count %q)", ms(time.UnixMilli(d.Due).Sub(plan.Due[k])),
						ms(d.At.Sub(plan.Due[k])), d.Headers["x-delivery-count"]))
				}
			}
			t.Logf("message %d, due no earlier than publish + x-delay = %s, arrived: %s", k, plan.Due[k].Format("15:04:05.000"), strings.Join(copies, "; "))
		}
	}
	return n
}

// idWatch samples a topic's slots for an id held twice: in the scheduled
// and in-flight sets together, each slot's read in one MULTI so a member
// moving between them is not seen in both.
type idWatch struct {
	// key names a member's message; nil names it by its id. A scenario
	// whose bodies are numbered can name it by number, so one message
	// held under two ids (in two slots, most likely) counts too.
	key func(queue.Message) string

	mu      sync.Mutex
	samples int
	ids     []string // "<key> (slot <n>)", the first ones found
}

func (w *idWatch) sample(ctx context.Context, rdb *redis.Client, t queue.Topic) {
	var found []string
	seen := map[string]int{}
	for slot := range t.SlotCount() {
		k := t.Keys(slot)
		var sched, inflight *redis.StringSliceCmd
		_, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			sched = p.ZRange(ctx, k.Scheduled, 0, -1)
			inflight = p.ZRange(ctx, k.Inflight, 0, -1)
			return nil
		})
		if err != nil {
			return // ctx ended; a sample is all or nothing
		}
		for _, m := range append(sched.Val(), inflight.Val()...) {
			id := m
			if msg, err := t.Decode(m); err == nil {
				id = msg.ID
				if w.key != nil {
					id = w.key(msg)
				}
			}
			if seen[id]++; seen[id] == 2 {
				found = append(found, fmt.Sprintf("%s (slot %d)", id, slot))
			}
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.samples++
	if len(w.ids) < 10 {
		w.ids = append(w.ids, found[:min(len(found), 10-len(w.ids))]...)
	}
}

// intakeQueue is the queue a scenario's intake consumes, with a publisher.
// It is a quorum queue: RabbitMQ marks a message it delivers again with
// x-delivery-count, which the intake keeps as a header, so the destination
// shows, without asking Redis, which messages a killed replica left behind.
type intakeQueue struct {
	name string
	conn *amqp.Connection
	ch   *amqp.Channel
}

// newIntakeQueue declares the queue name and a confirming channel to
// publish to it; both go at cleanup.
func newIntakeQueue(t *testing.T, name string) *intakeQueue {
	t.Helper()
	conn, err := amqp.Dial(e2etest.AMQPURL())
	if err != nil {
		t.Fatalf("rabbitmq at %s is required: %v", e2etest.AMQPURL(), err)
	}
	q := &intakeQueue{name: name, conn: conn}
	t.Cleanup(func() {
		if ch, err := conn.Channel(); err == nil {
			_, _ = ch.QueueDelete(name, false, false, false)
			_ = ch.Close()
		}
		_ = conn.Close()
	})
	if q.ch, err = conn.Channel(); err != nil {
		t.Fatalf("channel: %v", err)
	}
	if _, err := q.ch.QueueDeclare(name, true, false, false, false, amqp.Table{"x-queue-type": "quorum"}); err != nil {
		t.Fatalf("declare %s: %v", name, err)
	}
	if err := q.ch.Confirm(false); err != nil {
		t.Fatalf("confirm mode: %v", err)
	}
	return q
}

// publish sends messages 0…n-1 evenly over about over, as a producer of
// the delayed-message plugin would (id msg-<i>, body e2etest.Body(i),
// header x-delay), waiting for the broker's confirms every 50. It returns
// when each was sent, taken just before its publish.
func (q *intakeQueue) publish(n int, over time.Duration, delay func(i int) time.Duration) ([]time.Time, error) {
	ctx, cancel := context.WithTimeout(context.Background(), over+30*time.Second)
	defer cancel()
	const chunk = 50
	sent := make([]time.Time, n)
	start := time.Now()
	for from := 0; from < n; from += chunk {
		until(start.Add(over * time.Duration(from) / time.Duration(n)))
		var confirms []*amqp.DeferredConfirmation
		for i := from; i < min(from+chunk, n); i++ {
			sent[i] = time.Now()
			c, err := q.ch.PublishWithDeferredConfirmWithContext(ctx, "", q.name, false, false, amqp.Publishing{
				MessageId:    "msg-" + strconv.Itoa(i),
				DeliveryMode: amqp.Persistent,
				ContentType:  "application/json",
				Headers:      amqp.Table{"x-delay": int32(delay(i).Milliseconds())},
				Body:         []byte(e2etest.Body(i)),
			})
			if err != nil {
				return nil, fmt.Errorf("message %d: %w", i, err)
			}
			confirms = append(confirms, c)
		}
		for j, c := range confirms {
			ok, err := c.WaitContext(ctx)
			if err != nil || !ok {
				return nil, fmt.Errorf("message %d not confirmed (nack or %v)", from+j, err)
			}
		}
	}
	return sent, nil
}

// depth is the number of messages in the queue (ready; with no consumer
// left, the unacknowledged are ready again).
func (q *intakeQueue) depth(t *testing.T) int {
	t.Helper()
	ch, err := q.conn.Channel()
	if err != nil {
		t.Fatalf("channel: %v", err)
	}
	defer ch.Close()
	st, err := ch.QueueDeclarePassive(q.name, true, false, false, false, amqp.Table{"x-queue-type": "quorum"})
	if err != nil {
		t.Fatalf("inspect %s: %v", q.name, err)
	}
	return st.Messages
}
