package forwarder

import (
	"context"
	"errors"
	"time"

	"github.com/delaybridge/delaybridge/queue"
	"github.com/delaybridge/delaybridge/sinks"
)

// delivery is one claimed batch on its way through the pipeline.
type delivery struct {
	b        batch
	msgs     []sinks.Message
	members  []string        // members[i] carries msgs[i]
	failures []queue.Failure // members that did not decode
	// indexed: msgs[i].ID is members[i]'s envelope id, which the ids index
	// holds (envelope topics; the same for every delivery of a scanner).
	// Settling passes it on, so a member is decoded once.
	indexed bool
	unsent  bool // returned without publishing (slot order)

	began   time.Time
	done    <-chan struct{}
	result  func() error
	results []error       // the sink's answer per message, once awaited
	spans   *publishSpans // nil unless tracing (trace.go)
	// spanStore is what spans points to: no allocation of its own.
	spanStore publishSpans
	// vouched are the members the claim vouched for as recurrences' ticks
	// (queue.Claimed.Tick; nil: none), whose next ticks are computed from
	// the moment of the sink's answer (the gap rule). Every stage after the
	// claim asks this set, never the member's bytes: a member that only
	// looks like a tick is the plain message it is.
	vouched map[string]bool
	// came is the local time the sink's answer came, once done is closed;
	// zero when not stamped (await then takes its own time).
	came time.Time
	// answered is when the sink's answer came, on Redis's clock (set by
	// await): the moment the ticks among msgs were confirmed or refused.
	answered time.Time
}

// closed is a done channel for answers known at once.
var closed = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// publish prepares a claimed batch and starts publishing it, unless an
// earlier batch went back meanwhile (then it goes back too, unpublished, to
// keep the slot's order). ctx is the drain context.
func (s *scanner) publish(ctx context.Context, b batch) *delivery {
	d := s.prepare(b)
	if s.in.stale(b.epoch) {
		d.unsent = true
		d.finish(s.clock, nil)
		return d
	}
	s.start(ctx, d)
	return d
}

// prepare decodes a claimed batch into the messages to publish.
func (s *scanner) prepare(b batch) *delivery {
	d := &delivery{b: b, msgs: make([]sinks.Message, 0, len(b.claimed)), members: make([]string, 0, len(b.claimed)),
		indexed: s.topic.Format == queue.FormatEnvelope}
	for _, c := range b.claimed {
		if c.Tick {
			if d.vouched == nil {
				d.vouched = map[string]bool{}
			}
			d.vouched[c.Member] = true
		}
		dm, err := s.topic.DecodeClaimed(c)
		if err != nil {
			d.failures = append(d.failures, queue.Failure{Member: c.Member, Permanent: true, Reason: err.Error()})
			continue
		}
		m := sinks.Message{
			ID:         dm.ID,
			Topic:      s.topic.Name,
			Body:       dm.Body,
			Due:        c.DueTime(),
			Attempt:    c.Attempts + 1,
			Headers:    dm.Headers,
			RoutingKey: dm.RoutingKey,
			EmptyKey:   dm.EmptyKey,
			Properties: sinks.Properties(dm.Properties),
			Key:        dm.Key,
		}
		d.msgs = append(d.msgs, m)
		d.members = append(d.members, c.Member)
	}
	return d
}

// indexID is the envelope id of the ith message for the ids index, or ""
// (raw topics have none).
func (d *delivery) indexID(i int) string {
	if !d.indexed {
		return ""
	}
	return d.msgs[i].ID
}

// finish records an answer known without waiting, come now on c.
func (d *delivery) finish(c clock, err error) {
	d.came = c.Now()
	d.done = closed
	d.result = func() error { return err }
}

// stampAnswer has the moment the sink's answer comes recorded in d.came,
// not the moment the settler takes it, which is later while the settler
// writes earlier answers to Redis: d.done closes once came is set. The
// goroutine ends with the answer or ctx (the settler's await then ends on
// ctx too). came is on c.
func (d *delivery) stampAnswer(ctx context.Context, c clock) {
	answered, done := d.done, make(chan struct{})
	d.done = done
	go func() {
		select {
		case <-answered:
			d.came = c.Now()
			close(done)
		case <-ctx.Done():
		}
	}()
}

// start hands d to the sink: a sinks.Starter returns once the batch is sent,
// any other sink once it is confirmed.
func (s *scanner) start(ctx context.Context, d *delivery) {
	d.began = s.clock.Now()
	if len(d.msgs) == 0 {
		d.finish(s.clock, nil)
		return
	}
	d.spans = s.startSpans(d)
	if st, ok := s.topic.Sink.(sinks.Starter); ok {
		d.done, d.result = st.Start(ctx, d.msgs)
		if len(d.vouched) > 0 {
			d.stampAnswer(ctx, s.clock)
		}
		return
	}
	err := s.topic.Sink.Publish(ctx, d.msgs)
	d.finish(s.clock, err)
	if err != nil && anyLost(sinks.Results(err, len(d.msgs))) {
		s.in.breakOrder() // before the next batch is published
	}
}

// outcome is what a sink's error about one message means for it. Its String
// is the outcome label of the publish failures metric.
type outcome int

const (
	// broker: the broker's answer about the message (nack, return,
	// rejection). It counts an attempt.
	outcomeBroker outcome = iota
	// permanent: no retry can fix it; the message is dead-lettered at once.
	outcomePermanent
	// connection: the connection failed, not the message. It goes back
	// without an attempt.
	outcomeConnection
	// timeout: the wait for the answer was cut short (shutdown, a
	// deadline); the message may be published. It goes back without an
	// attempt.
	outcomeTimeout
)

// outcomeOf classifies a sink's error about one message. A lost connection
// or wait wins over sinks.ErrPermanent: a message never dies of its
// connection.
func outcomeOf(err error) outcome {
	switch {
	case errors.Is(err, sinks.ErrNotConnected), errors.Is(err, sinks.ErrClosed):
		return outcomeConnection
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return outcomeTimeout
	case errors.Is(err, sinks.ErrPermanent):
		return outcomePermanent
	default:
		return outcomeBroker
	}
}

// lost reports whether the message goes back without using an attempt.
func (o outcome) lost() bool { return o == outcomeConnection || o == outcomeTimeout }

func (o outcome) String() string {
	switch o {
	case outcomePermanent:
		return "permanent"
	case outcomeConnection:
		return "connection"
	case outcomeTimeout:
		return "timeout"
	default:
		return "broker"
	}
}

// anyLost reports whether a result says the connection, not the message,
// failed: the batches claimed after it must go back too (slot order).
func anyLost(results []error) bool {
	for _, e := range results {
		if e != nil && outcomeOf(e).lost() {
			return true
		}
	}
	return false
}
