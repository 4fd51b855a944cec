package intake

import (
	"testing"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"
	kafkago "github.com/segmentio/kafka-go"

	"github.com/delaybridge/delaybridge/queue"
)

// TestIntakesTakeTheFairShareKey: the x-delaybridge-key header names the
// message's key on either intake (and is not kept as a header); a Kafka
// record's key is the message's key only when the topic says so, and the
// header wins over it.
func TestIntakesTakeTheFairShareKey(t *testing.T) {
	tp := Target{Topic: queue.Topic{Name: "t", Format: queue.FormatEnvelope}}
	it := tp.deliveryItem(amqp091.Delivery{Body: []byte("b"), Headers: amqp091.Table{HeaderKey: "tenant-1", "k": "v"}}, time.Now())
	if it.msg.Key != "tenant-1" || it.msg.Headers[HeaderKey] != "" || it.msg.Headers["k"] != "v" {
		t.Errorf("amqp: key %q, headers %v", it.msg.Key, it.msg.Headers)
	}
	rec := kafkago.Message{Topic: "in", Key: []byte("record-key"), Value: []byte("b")}
	if it := tp.recordItem(rec); it.msg.Key != "" {
		t.Errorf("kafka without KeyFromRecord: key %q, want none", it.msg.Key)
	}
	tp.KeyFromRecord = true
	if it := tp.recordItem(rec); it.msg.Key != "record-key" || it.msg.RoutingKey != "record-key" {
		t.Errorf("kafka with KeyFromRecord: key %q, routing key %q", it.msg.Key, it.msg.RoutingKey)
	}
	rec.Headers = []kafkago.Header{{Key: HeaderKey, Value: []byte("from-header")}}
	if it := tp.recordItem(rec); it.msg.Key != "from-header" || it.msg.Headers[HeaderKey] != "" {
		t.Errorf("kafka header: key %q, headers %v", it.msg.Key, it.msg.Headers)
	}
}
