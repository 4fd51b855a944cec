package intake

import (
	"encoding/binary"
	"fmt"
	"strings"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/delaybridge/delaybridge/queue"
)

// HeaderID is the Kafka record header that names the message's id.
const HeaderID = "x-delaybridge-id"

// recordItem turns a Kafka record into the message to schedule: value as
// body, key as routing key, headers (x-delay and delaybridge's own left
// out) as they came, all byte for byte (a binary key or header value, the
// empty key, which is not a null key); due when x-delaybridge-due says, or
// x-delay after the record's timestamp. The id is the x-delaybridge-id header, else
// "~kafka:<topic>/<partition>/<offset>" (queue.IntakeID), so a record read
// again is one message and no producer can take its id first.
func (t Target) recordItem(r kafkago.Message) item {
	it := item{msg: queue.Message{
		ID:   queue.IntakeID("kafka", fmt.Sprintf("%s/%d/%d", r.Topic, r.Partition, r.Offset)),
		Body: r.Value,
	}}
	if r.Key != nil && !t.OwnRoutingKey {
		it.msg.RoutingKey, it.msg.EmptyKey = string(r.Key), len(r.Key) == 0
	}
	if t.KeyFromRecord && r.Key != nil {
		it.msg.Key = string(r.Key)
	}
	var due, delay []byte
	for _, h := range r.Headers {
		switch name := strings.ToLower(h.Key); {
		case name == HeaderDelay:
			delay = h.Value
		case name == HeaderDue:
			due = h.Value
		case name == HeaderKey:
			it.msg.Key = string(h.Value)
		case name == HeaderID:
			if ownID(string(h.Value)) {
				it.msg.ID = string(h.Value)
			}
		case strings.HasPrefix(name, queue.ReservedHeaderPrefix):
		default:
			if it.msg.Headers == nil {
				it.msg.Headers = map[string]string{}
			}
			it.msg.Headers[h.Key] = string(h.Value)
		}
	}
	var err error
	switch {
	case due != nil:
		if it.when, err = dueAt(string(due)); err != nil {
			it.reject(ReasonBadDue, "header %s: %v", HeaderDue, err)
		}
	case delay != nil:
		if it.when, err = delayFrom(delayValue(delay), r.Time, time.Time{}); err != nil {
			it.reject(ReasonBadDelay, "header %s: %v", HeaderDelay, err)
		}
	}
	return it
}

// delayValue reads a Kafka x-delay value: decimal text, or the 8-byte
// big-endian integer a Java producer writes with Longs.toByteArray (8 bytes
// that are not all digits: as a number, 8 digits would be centuries of
// milliseconds, so the two never mix up).
func delayValue(v []byte) any {
	if len(v) == 8 && strings.Trim(string(v), "0123456789") != "" {
		return int64(binary.BigEndian.Uint64(v))
	}
	return string(v)
}
