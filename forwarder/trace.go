package forwarder

import (
	"context"
	"encoding/hex"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/delaybridge/delaybridge/queue"
)

// Tracing makes the forwarder emit a publish span per delivered message.
// The zero Tracing emits none and costs nothing on the hot path.
type Tracing struct {
	// Tracer starts the spans; nil: no spans.
	Tracer trace.Tracer
	// Destinations says, by topic name, where a topic's messages go: the
	// messaging.system and messaging.destination.name of its spans.
	Destinations map[string]Destination
}

// Destination is where a topic publishes, in the messaging semantic
// conventions' words.
type Destination struct {
	// System is messaging.system: "rabbitmq", "kafka" or "redis".
	System string
	// Name is messaging.destination.name: the exchange, Kafka topic or
	// stream key.
	Name string
}

// Attributes of the publish span beyond the messaging conventions.
const (
	AttrTopic     = "delaybridge.topic"
	AttrSlot      = "delaybridge.slot"
	AttrAttempt   = "delaybridge.attempt"
	AttrDue       = "delaybridge.due"         // RFC 3339, the time the producer asked for
	AttrLateness  = "delaybridge.lateness_ms" // publish start - due, on Redis's clock
	AttrOutcome   = "delaybridge.outcome"     // why a publish failed (outcome.String)
	AttrRecurring = "delaybridge.recurrence"  // a tick's recurrence id
	AttrReason    = "delaybridge.dead_reason" // a dead-lettering's reason
)

// publishAttrs is how many attributes a publish span starts with (one more
// on a tick, its recurrence; one more on a refusal, its outcome).
const publishAttrs = 8

// w3c reads and writes the trace context an envelope carries.
var w3c = propagation.TraceContext{}

// publishSpans are the spans of one delivery, spans[i] for msgs[i].
type publishSpans struct {
	spans []trace.Span
	// one holds spans for a delivery of one message, steady traffic's
	// usual batch: no allocation for it.
	one [1]trace.Span
}

// spanKit is what a scanner's publish spans share, built at its first
// delivery: the same for every batch, it costs nothing per message. Only
// the scanner's claim loop uses it.
type spanKit struct {
	name string
	// attrs holds the slot's attributes (the first slotAttrs), then each
	// message's: reused, as the SDK copies them into the span.
	attrs     []attribute.KeyValue
	slotAttrs int
	opts      []trace.SpanStartOption
}

// kit is the scanner's spanKit.
func (s *scanner) kit() *spanKit {
	if s.spans != nil {
		return s.spans
	}
	dest := s.cfg.Tracing.Destinations[s.topic.Name]
	k := &spanKit{name: "send " + dest.Name, attrs: make([]attribute.KeyValue, 0, publishAttrs+1)}
	k.attrs = append(k.attrs,
		attribute.String("messaging.system", dest.System),
		attribute.String("messaging.destination.name", dest.Name),
		attribute.String("messaging.operation.type", "send"),
		attribute.Int(AttrSlot, s.key.slot))
	k.slotAttrs = len(k.attrs)
	s.spans = k
	return k
}

// startSpans starts a producer span per message of d, each a child of the
// trace context its envelope carries (a recurrence's tick: a new trace
// linked to the recurrence's context), and writes the span's traceparent
// into the message's headers in place of the producer's, so the consumer's
// span is its child. It returns nil, doing nothing, when tracing is off.
//
// Its cost is per message (docs/performance.md): what is the same for
// every batch is the scanner's spanKit, what is the same for the batch is
// built once, and the attributes are set on the started span from one
// reused slice, so that the SDK copies them once. (The samplers the
// daemon configures, OTEL_TRACES_SAMPLER's, do not read attributes.) A
// delivered message's span has publishAttrs attributes, no more: the SDK
// deduplicates a span's attributes through a map when it ends, and a map of
// up to 8 keys costs one small allocation where 9 or more cost a table
// (3.9 µs per message more with 10, BenchmarkPublishSpansExported). The
// topic is on the dead-letter span and the API's span; the destination and
// the slot are here.
func (s *scanner) startSpans(d *delivery) *publishSpans {
	tr := s.cfg.Tracing
	if tr.Tracer == nil || len(d.msgs) == 0 {
		return nil
	}
	k := s.kit()
	redisNow := d.began.Add(d.b.skew)
	k.opts = append(k.opts[:0], trace.WithSpanKind(trace.SpanKindProducer), trace.WithTimestamp(d.began))
	ps := &d.spanStore
	if len(d.msgs) == 1 {
		ps.spans = ps.one[:]
	} else {
		ps.spans = make([]trace.Span, len(d.msgs))
	}
	for i := range d.msgs {
		m := &d.msgs[i]
		parent := w3c.Extract(context.Background(), propagation.MapCarrier(m.Headers))
		attrs := append(k.attrs[:k.slotAttrs],
			attribute.String("messaging.message.id", m.ID),
			attribute.Int(AttrAttempt, m.Attempt),
			attribute.String(AttrDue, formatDue(m.Due)),
			attribute.Int64(AttrLateness, redisNow.Sub(m.Due).Milliseconds()))
		var span trace.Span
		if rec := m.Headers[queue.HeaderRecurrence]; rec != "" {
			// A tick starts its own trace: one trace per recurrence would
			// never end.
			tick := append(k.opts[:len(k.opts):len(k.opts)], trace.WithNewRoot())
			if sc := trace.SpanContextFromContext(parent); sc.IsValid() {
				tick = append(tick, trace.WithLinks(trace.Link{SpanContext: sc}))
			}
			attrs = append(attrs, attribute.String(AttrRecurring, rec))
			_, span = tr.Tracer.Start(parent, k.name, tick...)
		} else {
			_, span = tr.Tracer.Start(parent, k.name, k.opts...)
		}
		span.SetAttributes(attrs...)
		ps.spans[i] = span
		if m.Headers == nil {
			m.Headers = make(map[string]string, 2)
		}
		setTraceContext(m.Headers, span.SpanContext())
	}
	return ps
}

// setTraceContext writes sc into headers as W3C trace context, as
// propagation.TraceContext's Inject does (a test holds them equal), in place
// of the trace context headers held (an invalid sc leaves the traceparent
// held): the traceparent formatted into one string without a builder.
//
// A held header whose name is a trace context header's in another case
// (Traceparent, TRACESTATE) goes too: a consumer that reads names without
// regard to case would otherwise see two, and might take the producer's.
func setTraceContext(headers map[string]string, sc trace.SpanContext) {
	delete(headers, queue.HeaderTraceState)
	for name := range headers {
		if (len(name) == len(queue.HeaderTraceParent) || len(name) == len(queue.HeaderTraceState)) &&
			name != queue.HeaderTraceParent && (strings.EqualFold(name, queue.HeaderTraceParent) || strings.EqualFold(name, queue.HeaderTraceState)) {
			delete(headers, name)
		}
	}
	if !sc.IsValid() {
		return
	}
	if ts := sc.TraceState(); ts.Len() > 0 {
		headers[queue.HeaderTraceState] = ts.String()
	}
	var b [len("00-") + 32 + 1 + 16 + 1 + 2]byte
	tid, sid := sc.TraceID(), sc.SpanID()
	copy(b[:], "00-")
	hex.Encode(b[3:35], tid[:])
	b[35] = '-'
	hex.Encode(b[36:52], sid[:])
	b[52] = '-'
	hex.Encode(b[53:55], []byte{byte(sc.TraceFlags() & (trace.FlagsSampled | trace.FlagsRandom))})
	headers[queue.HeaderTraceParent] = string(b[:])
}

// formatDue is t.UTC().Format(time.RFC3339Nano) without the layout's
// interpretation: every publish span carries its message's due time, and
// the general formatter cost a tenth of the span's own CPU.
func formatDue(t time.Time) string {
	t = t.UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return t.Format(time.RFC3339Nano)
	}
	hour, minute, sec := t.Clock()
	var b [len("2006-01-02T15:04:05.999999999Z")]byte
	put := func(at, v, width int) {
		for i := at + width - 1; i >= at; i-- {
			b[i] = byte('0' + v%10)
			v /= 10
		}
	}
	put(0, year, 4)
	b[4] = '-'
	put(5, int(month), 2)
	b[7] = '-'
	put(8, day, 2)
	b[10] = 'T'
	put(11, hour, 2)
	b[13] = ':'
	put(14, minute, 2)
	b[16] = ':'
	put(17, sec, 2)
	n := 19
	if ns := t.Nanosecond(); ns != 0 {
		b[19] = '.'
		put(20, ns, 9)
		n = 29
		for b[n-1] == '0' {
			n--
		}
	}
	b[n] = 'Z'
	return string(b[:n+1])
}

// end ends every span at the broker's answer: an error's span has status
// error with the reason and the outcome.
func (ps *publishSpans) end(results []error, answered time.Time) {
	if ps == nil {
		return
	}
	opts := []trace.SpanEndOption{trace.WithTimestamp(answered)}
	for i, span := range ps.spans {
		if i < len(results) && results[i] != nil {
			span.SetAttributes(attribute.String(AttrOutcome, outcomeOf(results[i]).String()))
			span.SetStatus(codes.Error, results[i].Error())
		}
		span.End(opts...)
	}
}

// traceDead records each dead-lettering among outs (what became of
// failures) as a span, child of the publish span whose refusal killed the
// message. Members that never decoded have no span to follow.
func (s *scanner) traceDead(group []*delivery, failures []queue.Failure, outs []queue.Outcome) {
	tr := s.cfg.Tracing.Tracer
	if tr == nil {
		return
	}
	var spans map[string]trace.SpanContext
	for i, out := range outs {
		if out != queue.Dead {
			continue
		}
		if spans == nil {
			spans = publishedSpans(group)
		}
		sc, ok := spans[failures[i].Member]
		if !ok {
			continue
		}
		ctx := trace.ContextWithSpanContext(context.Background(), sc)
		_, span := tr.Start(ctx, "dead-letter "+s.topic.Name, trace.WithAttributes(
			attribute.String(AttrTopic, s.topic.Name),
			attribute.Int(AttrSlot, s.key.slot),
			attribute.String(AttrReason, failures[i].Reason)))
		span.SetStatus(codes.Error, failures[i].Reason)
		span.End()
	}
}

// publishedSpans maps the members of group to their publish spans.
func publishedSpans(group []*delivery) map[string]trace.SpanContext {
	out := map[string]trace.SpanContext{}
	for _, d := range group {
		if d.spans == nil {
			continue
		}
		for i, span := range d.spans.spans {
			out[d.members[i]] = span.SpanContext()
		}
	}
	return out
}
