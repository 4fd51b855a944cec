package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/delaybridge/delaybridge/forwarder"
	"github.com/delaybridge/delaybridge/sinks"
)

// How often the daemon asks the brokers whether each topic's destination
// exists, how often it asks again while some destination has not been
// checked yet (its sink was still connecting), and how often it logs one
// that is still missing.
const (
	destinationCheckEvery = 5 * time.Second
	destinationFirstEvery = 250 * time.Millisecond
	destinationLogEvery   = time.Minute
)

// destinationWatch checks, periodically, that every topic's destination
// exists (sinks.Checker): an exchange or Kafka topic nobody created fails
// every publish. The daemon keeps running meanwhile (it may be created
// later); /readyz reads the last result, so a probe costs no broker round
// trip, and an ERROR line says which destination is missing once per
// destinationLogEvery, not once per message. Until a topic's destination
// has been checked once, /readyz says so ("checking"): readiness does not
// claim what it does not know yet.
type destinationWatch struct {
	topics     []forwarder.Topic
	log        *slog.Logger
	every      time.Duration
	firstEvery time.Duration
	logEvery   time.Duration

	mu      sync.Mutex
	missing map[string]error     // topic → why its destination is unusable
	logged  map[string]time.Time // topic → when that was last logged
	checked map[string]bool      // topic → its destination has an answer
}

func newDestinationWatch(topics []forwarder.Topic, log *slog.Logger) *destinationWatch {
	return &destinationWatch{
		topics: topics, log: log,
		every: destinationCheckEvery, firstEvery: destinationFirstEvery, logEvery: destinationLogEvery,
		missing: map[string]error{}, logged: map[string]time.Time{}, checked: map[string]bool{},
	}
}

// run checks at once, then every w.every (every w.firstEvery while some
// destination has no answer yet), until ctx ends.
func (w *destinationWatch) run(ctx context.Context) {
	for {
		w.checkAll(ctx)
		wait := w.every
		if w.unchecked() != "" {
			wait = w.firstEvery
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// unchecked is the first topic whose destination has no answer yet, or "".
func (w *destinationWatch) unchecked() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, t := range w.topics {
		if _, ok := t.Sink.(sinks.Checker); ok && !w.checked[t.Name] {
			return t.Name
		}
	}
	return ""
}

// checkAll checks every topic whose sink is a sinks.Checker. A sink that
// cannot be asked now (not connected) keeps its last result: /readyz
// reports the connection through Ping.
func (w *destinationWatch) checkAll(ctx context.Context) {
	for _, t := range w.topics {
		c, ok := t.Sink.(sinks.Checker)
		if !ok {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := c.CheckDestination(cctx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		if err != nil && errors.Is(err, sinks.ErrNotConnected) && !errors.Is(err, sinks.ErrAuth) {
			continue
		}
		w.record(t.Name, err)
	}
}

// record keeps the result of one topic and logs a change, or a destination
// still missing once per w.logEvery.
func (w *destinationWatch) record(topic string, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.checked[topic] = true
	_, was := w.missing[topic]
	if err == nil {
		if was {
			delete(w.missing, topic)
			delete(w.logged, topic)
			w.log.Info("destination is back", "topic", topic)
		}
		return
	}
	w.missing[topic] = err
	if last, ok := w.logged[topic]; !ok || time.Since(last) >= w.logEvery {
		w.logged[topic] = time.Now()
		if errors.Is(err, sinks.ErrAuth) {
			// Not a missing destination: the broker refused who we are,
			// and no publish of this sink goes through until the
			// credentials or permissions are fixed.
			w.log.Error("broker refused the credentials: every publish of this topic fails until they are fixed", "topic", topic, "err", err)
		} else {
			w.log.Error("destination missing: every publish of this topic fails until it is created", "topic", topic, "err", err)
		}
	}
}

// errNotChecked says a destination has not been checked yet.
var errNotChecked = errors.New("checking: not checked yet")

// err is why some destination is unusable or not known to be usable yet,
// naming each topic, or nil.
func (w *destinationWatch) err() error {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	var errs []error
	for _, t := range w.topics { // in configuration order
		if _, ok := t.Sink.(sinks.Checker); ok && !w.checked[t.Name] {
			errs = append(errs, fmt.Errorf("destination of topic %s: %w", t.Name, errNotChecked))
		} else if err, ok := w.missing[t.Name]; ok {
			errs = append(errs, fmt.Errorf("destination of topic %s: %w", t.Name, err))
		}
	}
	return errors.Join(errs...)
}
