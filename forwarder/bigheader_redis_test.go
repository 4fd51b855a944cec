package forwarder

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delaybridge/delaybridge/internal/testing/e2etest"
	"github.com/delaybridge/delaybridge/internal/testing/redistest"
	"github.com/delaybridge/delaybridge/queue"
	"github.com/delaybridge/delaybridge/sinks/amqp"
)

// TestHeaderTooLargeForTheFrameIsDeadLetteredAndTheSlotFlows: an envelope
// written around the front doors (a raw ZADD) with a 200 KB header, which
// no RabbitMQ frame carries, goes to the dead set with a reason naming the
// frame, and the ordinary message due just after it in the same slot is
// delivered promptly. Before, RabbitMQ closed the connection over it
// (FRAME_ERROR), the sink reconnected about 7 times a second and the
// message went back without an attempt, so the slot stalled forever.
func TestHeaderTooLargeForTheFrameIsDeadLetteredAndTheSlotFlows(t *testing.T) {
	t.Parallel()
	q, prefix := testRedis(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r := e2etest.NewTransientRabbit(t, "delaybridge-bighdr-"+redistest.Suffix())
	r.Consume(t)
	sink, err := amqp.New(amqp.Config{URL: e2etest.AMQPURL(), Exchange: r.Exchange, RoutingKey: r.Queue}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sink.Close() })
	topic := queue.Topic{Name: "t", Prefix: prefix, Slots: 1, Format: queue.FormatEnvelope}
	big, _ := json.Marshal(map[string]any{"id": "big", "body": "big", "headers": map[string]string{"h": strings.Repeat("x", 200<<10)}})
	small, _ := json.Marshal(map[string]any{"id": "small", "body": "small"})
	now := float64(time.Now().UnixMilli())
	if err := q.Client().ZAdd(ctx, topic.Keys(0).Scheduled, redis.Z{Score: now - 2, Member: big}, redis.Z{Score: now - 1, Member: small}).Err(); err != nil {
		t.Fatal(err)
	}
	start(t, Options{Queue: q, Topics: []Topic{{topic, sink}}, KeyPrefix: prefix, AllSlots: true,
		MaxAttempts: 5, RetryBackoff: 10 * time.Millisecond, RetryBackoffMax: 10 * time.Millisecond, PollInterval: 10 * time.Millisecond})
	begin := time.Now()
	eventually(t, 10*time.Second, "the message behind the big header delivered", func() bool { return len(r.Deliveries()) == 1 })
	if d := r.Deliveries()[0]; string(d.Body) != "small" || time.Since(begin) > 5*time.Second {
		t.Fatalf("delivered %q after %s, want small, promptly", d.Body, time.Since(begin))
	}
	var dead []queue.DeadMessage
	eventually(t, 10*time.Second, "the big header dead-lettered", func() bool {
		dead, err = q.DeadList(ctx, topic, 0, 0)
		return err == nil && len(dead) == 1
	})
	if dead[0].ID != "big" || !strings.Contains(dead[0].Reason, "frame") {
		t.Fatalf("dead %s with reason %q, want big with a reason naming the frame", dead[0].ID, dead[0].Reason)
	}
}
