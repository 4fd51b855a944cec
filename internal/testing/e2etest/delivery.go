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
	// Headers are the Kafka record's headers, or the AMQP delivery's
	// headers other than delaybridge's own x-delaybridge-*, as text.
	Headers map[string]string
	// At is the earliest time known that the broker had the message: the
	// consumer's receive time (AMQP) or the record's timestamp, set by the
	// producer when it wrote it (Kafka). A message is early when At is
	// before its due time.
	At time.Time
}

// received is what a consumer recorded, safe to read while it consumes.
// The numbers that arrived are kept apart, so a test can poll them while
// a hundred thousand messages flow without copying every delivery.
type received struct {
	mu      sync.Mutex
	got     []Delivery
	numbers map[int]struct{}
}

func (r *received) add(d Delivery) {
	n := Number(d.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, d)
	if n >= 0 {
		if r.numbers == nil {
			r.numbers = map[int]struct{}{}
		}
		r.numbers[n] = struct{}{}
	}
}

// Distinct is how many different numbered messages arrived so far.
func (r *received) Distinct() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.numbers)
}

// Arrived reports whether message n arrived.
func (r *received) Arrived(n int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.numbers[n]
	return ok
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
