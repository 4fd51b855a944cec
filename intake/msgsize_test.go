package intake

import (
	"context"
	"strings"
	"testing"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/delaybridge/delaybridge/queue"
)

// TestIntakesDeadLetterBodiesOverTheTopicLimit: a body over the topic's
// message size limit (DELAYBRIDGE_MAX_MESSAGE_SIZE), within the
// destination's, is dead-lettered at once by either intake, with the
// reason naming the limit; a body at the limit is scheduled.
func TestIntakesDeadLetterBodiesOverTheTopicLimit(t *testing.T) {
	t.Parallel()
	const limit = 100
	over, at := strings.Repeat("b", limit+1), strings.Repeat("a", limit)
	for _, intake := range []string{"amqp", "kafka"} {
		t.Run(intake, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, 1)
			f.topic.MaxMessageSize = limit
			if intake == "amqp" {
				r := newRabbit(t)
				f.startAMQP(t, r, f.rdb, 1<<20)
				r.publish(t, "k", amqp091.Publishing{MessageId: "big", Headers: amqp091.Table{"x-delay": 60000}, Body: []byte(over)})
				r.publish(t, "k", amqp091.Publishing{MessageId: "fits", Headers: amqp091.Table{"x-delay": 60000}, Body: []byte(at)})
			} else {
				addr, produce := kafkaCluster(t, "delays")
				produce(&kgo.Record{Value: []byte(over), Headers: hdr("x-delay", "60000", "x-delaybridge-id", "big")},
					&kgo.Record{Value: []byte(at), Headers: hdr("x-delay", "60000", "x-delaybridge-id", "fits")})
				f.startKafka(t, addr, "delays", f.rdb)
			}
			q := queue.New(f.rdb)
			var dead []queue.DeadMessage
			waitFor(t, 20*time.Second, "one dead message and one scheduled", func() bool {
				dead, _ = q.DeadList(context.Background(), f.topic, queue.AllSlots, 0)
				return len(dead) == 1 && f.scheduled(t) == 1
			})
			if dead[0].ID != "big" || !strings.Contains(dead[0].Reason, "message size limit of 100 bytes") {
				t.Errorf("dead %s with reason %q; want big, naming the limit", dead[0].ID, dead[0].Reason)
			}
			if got := f.counter(f.metrics.Rejected, "orders", ReasonTooLarge); got != 1 {
				t.Errorf("rejected{too_large} = %v; want 1", got)
			}
		})
	}
}
