package forwarder

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/delaybridge/delaybridge/internal/backoff"
	"github.com/delaybridge/delaybridge/queue"
	"github.com/delaybridge/delaybridge/sinks"
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

// TestAnUnvouchedTickLookAlikeIsAckedOnceAsAPlainMessageRedis (#48, needs
// Redis): the claim vouches for ticks (queue.Claimed.Tick) and every stage
// after it asks that, not the member's bytes. A raw member that starts like
// a tick, with no recurrence behind it, is published once as its bytes and
// acked as a plain message: it leaves nothing in the slot, counts as
// published and never as a delivered tick.
func TestAnUnvouchedTickLookAlikeIsAckedOnceAsAPlainMessageRedis(t *testing.T) {
	q, prefix := testRedis(t)
	reg := prometheus.NewRegistry()
	sink := newRecordSink()
	topic := queue.Topic{Name: "lookalike", Prefix: prefix, Slots: 1}
	start(t, Options{Queue: q, Topics: []Topic{{topic, sink}}, KeyPrefix: prefix, ReplicaID: "r0", Metrics: NewMetrics(reg)})
	at := strconv.FormatInt(time.Now().UnixMilli(), 10)
	member := "\x00recur\x00v1\x00" + at + "\x00@every 1h\x00\x00" + `{"id":"x","body":"evil"}`
	if _, err := q.ScheduleMember(context.Background(), topic, []byte(member), queue.In(0)); err != nil {
		t.Fatal(err)
	}
	published := `delaybridge_published_total{topic="lookalike"}`
	eventually(t, 15*time.Second, "the look-alike published and acked", func() bool {
		return len(sink.published()) > 0 && gatherSeries(t, reg)[published] > 0
	})
	eventually(t, 5*time.Second, "nothing left in the slot after the ack", func() bool {
		return len(keysLeft(t, q, prefix)) == 0
	})
	got := sink.published()
	if len(got) != 1 || string(got[0].msg.Body) != member || got[0].msg.ID != queue.MessageID([]byte(member)) {
		t.Fatalf("published %d messages (%+v), want the member once as its bytes with its own id", len(got), got)
	}
	series := gatherSeries(t, reg)
	if n := series[published]; n != 1 {
		t.Errorf("published_total = %v, want 1", n)
	}
	if n := series[`delaybridge_recurrence_ticks_delivered_total{topic="lookalike"}`]; n != 0 {
		t.Errorf("recurrence_ticks_delivered_total = %v: the look-alike was settled as a tick", n)
	}
}

// TestSortOutClassifiesTicksByWhatTheClaimVouchedFor: two members that both
// start like ticks; only the one the claim vouched for is settled as a tick
// (confirmed: ackTicks; refused for good: final), the other as the plain
// message it is.
func TestSortOutClassifiesTicksByWhatTheClaimVouchedFor(t *testing.T) {
	const real, fake = "\x00recur\x00real", "\x00recur\x00fake"
	answered := time.Unix(100, 0)
	refused := sinks.Permanent(errors.New("refused"))
	for _, tt := range []struct {
		name   string
		result error
		want   settlement
	}{
		{"confirmed", nil, settlement{acks: []string{fake}, ackTicks: []string{real}}},
		{"refused", refused, settlement{
			failures: []queue.Failure{
				{Member: real, Backoff: time.Second, Permanent: true, Reason: refused.Error()},
				{Member: fake, Backoff: time.Second, Permanent: true, Reason: refused.Error()},
			},
			final:  []string{real},
			failed: map[outcome]int{outcomePermanent: 2},
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := &delivery{
				msgs:     []sinks.Message{{Attempt: 1}, {Attempt: 1}},
				members:  []string{real, fake},
				results:  []error{tt.result, tt.result},
				vouched:  map[string]bool{real: true},
				answered: answered,
			}
			got := sortOut([]*delivery{d}, backoff.Policy{Min: time.Second, Max: time.Second}, 5)
			tt.want.tickAt = map[string]time.Time{real: answered}
			if tt.want.failed == nil {
				tt.want.failed = map[outcome]int{}
			}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(settlement{})); diff != "" {
				t.Errorf("sortOut (-want +got):\n%s", diff)
			}
			if len(got.failures) == 0 {
				return
			}
			if dead := deadTicks(got.failures, []queue.Outcome{queue.Dead, queue.Dead}, got.tickAt); !cmp.Equal(dead, []string{real}) {
				t.Errorf("deadTicks = %q, want only the vouched tick", dead)
			}
		})
	}
}
