package intake

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/delaybridge/delaybridge/queue"
)

// HeaderID is the Kafka record header that names the message's id.
const HeaderID = "x-delaybridge-id"

// recordItem turns a Kafka record into the message to schedule: value as
// body, key as routing key, headers (x-delay and delaybridge's own left
// out) as they came; due when x-delaybridge-due says, or x-delay after the
// record's timestamp. The id is the x-delaybridge-id header, else
// <topic>/<partition>/<offset>, so a record read again is one message.
func (t Target) recordItem(r kafkago.Message) item {
	it := item{msg: queue.Message{
		ID:   fmt.Sprintf("%s/%d/%d", r.Topic, r.Partition, r.Offset),
		Body: r.Value,
	}}
	if len(r.Key) > 0 && !t.OwnRoutingKey {
		if !utf8.Valid(r.Key) {
			it.reject(ReasonInvalid, "record key is not valid UTF-8")
		}
		it.msg.RoutingKey = string(r.Key)
	}
	var due, delay []byte
	for _, h := range r.Headers {
		switch name := strings.ToLower(h.Key); {
		case name == HeaderDelay:
			delay = h.Value
		case name == HeaderDue:
			due = h.Value
		case name == HeaderID:
			if queue.CheckID(string(h.Value)) == nil {
				it.msg.ID = string(h.Value)
			}
		case strings.HasPrefix(name, queue.ReservedHeaderPrefix):
		case !utf8.Valid(h.Value):
			it.reject(ReasonInvalid, "header %q is not valid UTF-8", h.Key)
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
		if it.when, err = delayFrom(string(delay), r.Time, time.Time{}); err != nil {
			it.reject(ReasonBadDelay, "header %s: %v", HeaderDelay, err)
		}
	}
	return it
}
