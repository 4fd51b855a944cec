package e2etest

import (
	"sync"
	"time"
)

// Delivery is one message a consumer received.
type Delivery struct {
	Body    []byte
	ID      string // message id (AMQP MessageId, Kafka x-delaybridge-id)
	Due     int64  // x-delaybridge-due, Unix ms
	Attempt int64  // x-delaybridge-attempt
	Key     string // Kafka record key, AMQP routing key
	// Headers are the Kafka record's headers (the AMQP consumer, which
	// chaos/ times, does not copy them).
	Headers map[string]string
	// At is the earliest time known that the broker had the message: the
	// consumer's receive time (AMQP) or the record's timestamp, set by the
	// producer when it wrote it (Kafka). A message is early when At is
	// before its due time.
	At time.Time
}

// received is what a consumer recorded, safe to read while it consumes.
type received struct {
	mu  sync.Mutex
	got []Delivery
}

func (r *received) add(d Delivery) {
	r.mu.Lock()
	r.got = append(r.got, d)
	r.mu.Unlock()
}

// Deliveries is a copy of what was received so far.
func (r *received) Deliveries() []Delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Delivery(nil), r.got...)
}

// Received is how many deliveries arrived so far.
func (r *received) Received() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.got)
}
