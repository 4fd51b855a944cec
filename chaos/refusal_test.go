package chaos

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/delaybridge/delaybridge/internal/testing/e2etest"
)

// Settings of the refusal scenarios: a refused message is retried after
// 200ms, 400ms, then dead-lettered at its third refusal (0.6 s after the
// first), so both outcomes happen within a few seconds.
var refusalVars = []string{
	"DELAYBRIDGE_RETRY_BACKOFF", "200ms",
	"DELAYBRIDGE_RETRY_BACKOFF_MAX", "1s",
	"DELAYBRIDGE_MAX_ATTEMPTS", "3",
}

// The queue holds at most 100 messages and refuses more (overflow
// reject-publish: RabbitMQ nacks the publish). Nobody consumes at first, so
// the queue fills, the next messages are nacked, retried, and dead-lettered
// with the broker's answer; once the consumer drains the queue, retries and
// later messages are delivered. Every message is either delivered or in the
// dead set with a reason.
func TestRabbitMQQueueFullNacksAreRetriedThenDeadLettered(t *testing.T) {
	t.Parallel()
	r := report(t, "4a rabbitmq-queue-full-nacks")
	b := newBridge(t, defaultSlots, amqp.Table{"x-max-length": int64(100), "x-overflow": "reject-publish"}).set(refusalVars...)

	const n = 2000
	start := time.Now()
	plan := e2etest.NewPlan(n, start.Add(2*time.Second), 8*time.Second)
	plan.Schedule(t, b.rdb, b.topic, e2etest.RawMember, nil)
	d := b.start()
	// Consume once refusals have dead-lettered some messages, while others
	// wait for a retry and more are still to fall due.
	e2etest.WaitFor(t, 60*time.Second, "messages refused by the full queue dead-lettered", func() bool {
		return len(e2etest.DeadSet(t, b.rdb, b.topic)) >= 20
	})
	b.mq.Consume(t)

	b.settle(plan, b.mq.Deliveries, true, 120*time.Second)
	stop(t, d)
	dead, others := e2etest.DeadNumbers(t, b.rdb, b.topic)
	o := plan.Count(b.mq.Deliveries(), dead)
	retried := retriedDeliveries(b.mq.Deliveries())
	r.count(t, o, fmt.Sprintf("x-max-length 100, reject-publish; %d delivered on a retry; dead: %s", retried, kinds(o.Reasons)))
	for _, m := range others {
		t.Errorf("dead set holds a member that is not a message of this test: %.80q (%s)", m.Member, m.Reason)
	}
	if o.Dead == 0 {
		t.Errorf("no message was dead-lettered: the queue never refused long enough")
	}
	if retried == 0 {
		t.Errorf("no message was delivered on a retry")
	}
	for reason := range o.Reasons {
		if !strings.Contains(reason, "nack") {
			t.Errorf("dead-letter reason %q does not say the broker nacked the message", reason)
		}
	}
	if o.Duplicates > 0 {
		t.Errorf("%d duplicates: a nacked message was not stored, a retry must not repeat one", o.Duplicates)
	}
	b.expectDrained()
}

// The route disappears mid-stream twice: first the queue is unbound (the
// exchange returns the messages as unroutable: 312 NO_ROUTE), then the
// exchange itself is deleted (the broker closes the channel: 404 NOT_FOUND).
// Each time the route comes back after a while. Messages refused longer than
// their attempts are dead-lettered with the broker's reason; the others are
// delivered, once, but for a message routed just before the deletion whose
// confirm the closing channel never sent (see duplicatesBy).
func TestRabbitMQRouteVanishesMidStreamRetriesThenDeadLetters(t *testing.T) {
	t.Parallel()
	r := report(t, "4b rabbitmq-unroutable-and-exchange-deleted")
	b := newBridge(t, defaultSlots, nil).set(refusalVars...)
	b.mq.Consume(t)

	const n = 2000
	start := time.Now()
	plan := e2etest.NewPlan(n, start.Add(2*time.Second), 14*time.Second)
	plan.Schedule(t, b.rdb, b.topic, e2etest.RawMember, nil)
	d := b.start()

	// Each outage lasts until a message has been dead-lettered for it, and
	// at least 2 s; messages keep falling due through both.
	outage := func(what, reason string, breakRoute func(ch *amqp.Channel) error) (began, back time.Time) {
		began = time.Now()
		if err := b.mq.Do(breakRoute); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		e2etest.WaitFor(t, 60*time.Second, "a message dead-lettered with "+reason, func() bool {
			for _, m := range e2etest.DeadSet(t, b.rdb, b.topic) {
				if strings.Contains(m.Reason, reason) {
					return true
				}
			}
			return false
		})
		until(began.Add(2 * time.Second))
		if err := b.mq.Declare(); err != nil {
			t.Fatalf("bring the route back after %s: %v", what, err)
		}
		back = time.Now()
		t.Logf("%s: from %s to %s after the start", what, began.Sub(start).Round(time.Millisecond), back.Sub(start).Round(time.Millisecond))
		return began, back
	}
	until(start.Add(4 * time.Second))
	unbindBegan, unbindBack := outage("unbind the queue", "NO_ROUTE", func(ch *amqp.Channel) error {
		return ch.QueueUnbind(b.mq.Queue, b.mq.Queue, b.mq.Exchange, nil)
	})
	time.Sleep(2 * time.Second)
	deleteBegan, deleteBack := outage("delete the exchange", "NOT_FOUND", func(ch *amqp.Channel) error {
		return ch.ExchangeDelete(b.mq.Exchange, false, false)
	})

	b.settle(plan, b.mq.Deliveries, true, 120*time.Second)
	stop(t, d)
	dead, others := e2etest.DeadNumbers(t, b.rdb, b.topic)
	o := plan.Count(b.mq.Deliveries(), dead)
	unknown, repeated := duplicatesBy(b.mq.Deliveries(), deleteBegan.Add(-unknownFateMargin), deleteBack)
	r.count(t, o, fmt.Sprintf("unbound %s, exchange deleted %s; %d delivered on a retry; dead: %s; %d repeated after a lost confirm",
		ms(unbindBack.Sub(unbindBegan)), ms(deleteBack.Sub(deleteBegan)), retriedDeliveries(b.mq.Deliveries()), kinds(o.Reasons), unknown))
	for _, m := range others {
		t.Errorf("dead set holds a member that is not a message of this test: %.80q (%s)", m.Member, m.Reason)
	}
	var noRoute, notFound bool
	for reason := range o.Reasons {
		switch {
		case strings.Contains(reason, "NO_ROUTE"):
			noRoute = true
		case strings.Contains(reason, "NOT_FOUND"):
			notFound = true
		default:
			t.Errorf("dead-letter reason %q is neither unroutable nor a missing exchange", reason)
		}
	}
	if !noRoute {
		t.Errorf("no message was dead-lettered as unroutable (312 NO_ROUTE) while the queue was unbound")
	}
	if !notFound {
		t.Errorf("no message was dead-lettered for the missing exchange (404 NOT_FOUND)")
	}
	if len(repeated) > 0 {
		t.Errorf("%d messages delivered more than once outside the exchange's deletion: a refused message was not stored, a retry must not repeat one", len(repeated))
		for _, ds := range repeated {
			for _, d := range ds {
				t.Logf("message %d delivered %s after the start, attempt %d", e2etest.Number(d.Body), d.At.Sub(start).Round(time.Millisecond), d.Attempt)
			}
		}
	}
	b.expectDrained()
}

// unknownFateMargin: a message published this long before the exchange was
// deleted may still have been unconfirmed when the broker closed the
// channel (the confirm round trip of a loaded machine is milliseconds to a
// few hundred).
const unknownFateMargin = time.Second

// duplicatesBy sorts the messages delivered more than once by their first
// delivery. A refused message was not stored, so its retry must not repeat
// it. But when RabbitMQ closes the channel over a publish to the deleted
// exchange, it sends no confirm for the messages it had routed just before
// the deletion and not yet confirmed: the sink cannot tell them from the
// refused ones, their fate is unknown, and at least once lets their retry
// deliver them again once the exchange is back. Such a message was first
// delivered between from (a margin before the deletion) and to (the
// exchange back): unknown counts those; repeated holds the deliveries of
// every other message delivered more than once.
func duplicatesBy(got []e2etest.Delivery, from, to time.Time) (unknown int, repeated [][]e2etest.Delivery) {
	byNumber := map[int][]e2etest.Delivery{}
	for _, d := range got {
		n := e2etest.Number(d.Body)
		byNumber[n] = append(byNumber[n], d)
	}
	for _, ds := range byNumber {
		if len(ds) < 2 {
			continue
		}
		first := slices.MinFunc(ds, func(a, b e2etest.Delivery) int { return a.At.Compare(b.At) })
		if !first.At.Before(from) && first.At.Before(to) {
			unknown++
			continue
		}
		repeated = append(repeated, ds)
	}
	return unknown, repeated
}

// kinds summarises dead-letter reasons by the broker's code in them.
func kinds(reasons map[string]int) string {
	byKind := map[string]int{}
	for reason, n := range reasons {
		kind := "other"
		for _, k := range []string{"nack", "NO_ROUTE", "NOT_FOUND", "invalid envelope", "-inf", "+inf", "exceeds max"} {
			if strings.Contains(reason, k) {
				kind = k
				break
			}
		}
		byKind[kind] += n
	}
	var parts []string
	for _, k := range e2etest.SortedReasons(byKind) {
		parts = append(parts, fmt.Sprintf("%d %s", byKind[k], k))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// retriedDeliveries counts deliveries whose attempt number is above 1.
func retriedDeliveries(got []e2etest.Delivery) int {
	n := 0
	for _, d := range got {
		if d.Attempt > 1 {
			n++
		}
	}
	return n
}
