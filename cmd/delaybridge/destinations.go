package main

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
// exists, and how often it logs one that is still missing.
const (
	destinationCheckEvery = 5 * time.Second
	destinationLogEvery   = time.Minute
)

// destinationWatch checks, periodically, that every topic's destination
// exists (sinks.Checker): an exchange or Kafka topic nobody created fails
// every publish. The daemon keeps running meanwhile (it may be created
// later); /readyz reads the last result, so a probe costs no broker round
// trip, and an ERROR line says which destination is missing once per
// destinationLogEvery, not once per message.
type destinationWatch struct {
	topics   []forwarder.Topic
	log      *slog.Logger
	every    time.Duration
	logEvery time.Duration

	mu      sync.Mutex
	missing map[string]error     // topic → why its destination is unusable
	logged  map[string]time.Time // topic → when that was last logged
}

func newDestinationWatch(topics []forwarder.Topic, log *slog.Logger) *destinationWatch {
	return &destinationWatch{
		topics: topics, log: log,
		every: destinationCheckEvery, logEvery: destinationLogEvery,
		missing: map[string]error{}, logged: map[string]time.Time{},
	}
}

// run checks at once, then every w.every, until ctx ends.
func (w *destinationWatch) run(ctx context.Context) {
	t := time.NewTicker(w.every)
	defer t.Stop()
	for {
		w.checkAll(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
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

// err is why some destination is unusable, naming each topic, or nil.
func (w *destinationWatch) err() error {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	var errs []error
	for _, t := range w.topics { // in configuration order
		if err, ok := w.missing[t.Name]; ok {
			errs = append(errs, fmt.Errorf("destination of topic %s: %w", t.Name, err))
		}
	}
	return errors.Join(errs...)
}
