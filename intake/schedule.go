package intake

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"go.opentelemetry.io/otel/trace"

	"github.com/delaybridge/delaybridge/queue"
)

// Target is the topic an intake schedules on.
type Target struct {
	// Topic is the topic's data model; it must be in envelope format.
	Topic queue.Topic
	// MaxBody is the largest body the topic's destination accepts, in
	// bytes; a larger message goes to the dead set at once. 0: no limit.
	MaxBody int
	// OwnRoutingKey is true when the topic routes every message with its own
	// routing key (or Kafka key): the message's original one is then not
	// kept.
	OwnRoutingKey bool
	// KeyFromRecord: the Kafka intake takes a record's key as the
	// message's fair-share key too (an x-delaybridge-key header wins).
	KeyFromRecord bool
	// Tracer starts a receive span per message (trace.go); nil: none.
	Tracer trace.Tracer
}

func (t Target) validate() error {
	if t.Topic.Format != queue.FormatEnvelope {
		return fmt.Errorf("intake for topic %s: %w", t.Topic.Name, queue.ErrNotEnvelope)
	}
	return t.Topic.Validate()
}

// item is one message taken from a broker, on its way to Redis. An item
// with a reason cannot be scheduled: it goes to the dead set, why saying
// what is wrong.
type item struct {
	msg    queue.Message
	when   queue.When
	reason string
	why    string
}

func (it *item) reject(reason, format string, args ...any) {
	if it.reason == "" { // the first problem found is the one reported
		it.reason, it.why = reason, fmt.Sprintf(format, args...)
	}
}

// scheduler writes items to Redis.
type scheduler struct {
	q       *queue.Queue
	target  Target
	metrics *Metrics
	log     *slog.Logger
	source  source // for spans
}

// put writes every item to Redis: a good one to the scheduled set, a bad
// one to the dead set. errs[i] is nil when item i is in Redis, and the
// Redis error when it is not: the caller must hand that item back to its
// broker (or retry it), never drop it.
func (s *scheduler) put(ctx context.Context, items []item) []error {
	errs := make([]error, len(items))
	spans := s.startSpans(items)
	defer endSpans(spans, items, errs)
	var good []int
	for i := range items {
		s.check(&items[i])
		if items[i].reason == "" {
			good = append(good, i)
		}
	}
	s.schedule(ctx, items, good, errs)
	for i := range items {
		if items[i].reason != "" && errs[i] == nil {
			errs[i] = s.bury(ctx, &items[i])
		}
	}
	return errs
}

// check rejects a body over the destination's limit. What an envelope cannot
// carry, queue.ScheduleEach reports.
func (s *scheduler) check(it *item) {
	if max := s.target.MaxBody; max > 0 && len(it.msg.Body) > max {
		it.reject(ReasonTooLarge, "body of %d bytes is over the destination's limit of %d", len(it.msg.Body), max)
	}
}

// schedule writes the good items in one round trip (a script call per slot,
// see queue.ScheduleEach). An item Redis refuses (a due time it cannot
// honour), one over the topic's message size limit or one an envelope
// cannot carry is rejected, for the dead set; an item Redis failed gets the
// error.
func (s *scheduler) schedule(ctx context.Context, items []item, good []int, errs []error) {
	if len(good) == 0 {
		return
	}
	batch := make([]queue.Item, len(good))
	for j, i := range good {
		batch[j] = queue.Item{Message: items[i].msg, When: items[i].when}
	}
	receipts, each := s.q.ScheduleIntake(ctx, s.target.Topic, batch)
	scheduled, dups := 0, 0
	for j, i := range good {
		switch err := each[j]; {
		case err == nil && receipts[j].Duplicate:
			dups++ // accepted: acked like the rest, delivered once already
		case err == nil:
			scheduled++
		case errors.Is(err, queue.ErrBadDueTime):
			items[i].reject(ReasonBadDue, "%v", err)
		case errors.Is(err, queue.ErrTooLarge): // DELAYBRIDGE_MAX_MESSAGE_SIZE
			items[i].reject(ReasonTooLarge, "%v", err)
		case errors.Is(err, queue.ErrInvalidEnvelope), errors.Is(err, queue.ErrNotEnvelope):
			items[i].reject(ReasonInvalid, "%v", err)
		default:
			errs[i] = err
		}
	}
	s.metrics.Scheduled.WithLabelValues(s.target.Topic.Name).Add(float64(scheduled))
	s.metrics.Duplicates.WithLabelValues(s.target.Topic.Name).Add(float64(dups))
}

// bury puts a rejected item in the dead set, with its reason. A message an
// envelope cannot carry as it is goes there with its id and body only.
func (s *scheduler) bury(ctx context.Context, it *item) error {
	member, err := s.target.Topic.EncodeIntake(it.msg)
	if err != nil {
		id := it.msg.ID
		if queue.CheckID(id) != nil {
			id = queue.MessageID(it.msg.Body)
		}
		member, err = s.target.Topic.EncodeIntake(queue.Message{ID: id, Body: it.msg.Body})
		if err != nil && id != queue.MessageID(it.msg.Body) { // an id the topic refuses (a tick's form)
			member, err = s.target.Topic.EncodeIntake(queue.Message{ID: queue.MessageID(it.msg.Body), Body: it.msg.Body})
		}
		if err != nil {
			return fmt.Errorf("bury in %s: %w", s.target.Topic.Name, err)
		}
	}
	if _, err := s.q.Bury(ctx, s.target.Topic, member, "intake: "+it.why); err != nil {
		return err
	}
	s.metrics.Rejected.WithLabelValues(s.target.Topic.Name, it.reason).Inc()
	s.log.Warn("intake dead-lettered a message", "id", it.msg.ID, "reason", it.reason, "err", it.why)
	return nil
}
