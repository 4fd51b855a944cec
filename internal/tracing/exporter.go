package tracing

import (
	"context"
	"fmt"
	"math"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// exporter is the OTLP span exporter of the daemon: it writes each batch's
// spans straight into OTLP protobuf wire bytes and hands them to the
// otlptracehttp client, which keeps everything the standard variables
// configure (endpoint, headers, TLS, timeout, compression, retries).
//
// The SDK's own exporter first builds a tree of tracepb messages (a span, a
// KeyValue and an AnyValue per attribute, ...) and then marshals it: at the
// daemon's rate that cost more CPU per message than starting and ending the
// span did, and most of the garbage. Here one reused buffer holds the batch,
// and the bytes travel to the client as the unknown fields of one
// tracepb.ResourceSpans per resource, which protobuf's marshal copies as
// they are. The wire format is the one the SDK's exporter sends (a test
// decodes both and compares them).
type exporter struct {
	client otlptrace.Client
	// limit bounds every string value in characters (cleanText), behind
	// the SDK's own AttributeValueLengthLimit; names and keys are made
	// valid UTF-8 too, so one span cannot make a collector refuse a batch.
	limit int

	mu     sync.Mutex
	enc    wireEncoder
	groups []spanGroup
	// res and resBytes cache the encoded Resource of the last resource
	// seen: a provider has one, so it is encoded once.
	res      *resource.Resource
	resBytes []byte
	// scopes caches encoded InstrumentationScopes (a daemon has a few).
	scopes []encodedScope

	stopOnce sync.Once
}

// spanGroup is one (resource, scope) pair of a batch, in the order the
// batch first names it.
type spanGroup struct {
	res   *resource.Resource
	scope instrumentation.Scope
}

type encodedScope struct {
	scope instrumentation.Scope
	bytes []byte
}

var _ sdktrace.SpanExporter = (*exporter)(nil)

// newExporter starts client and returns an exporter that uploads through
// it, bounding string values to limit characters (≤ 0: no bound).
func newExporter(ctx context.Context, client otlptrace.Client, limit int) (*exporter, error) {
	if err := client.Start(ctx); err != nil {
		return nil, fmt.Errorf("start OTLP client: %w", err)
	}
	return &exporter{client: client, limit: limit, enc: wireEncoder{limit: limit}}, nil
}

// ExportSpans encodes spans and uploads them in one request.
func (e *exporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	rss := e.encode(spans)
	if len(rss) == 0 {
		return nil
	}
	if err := e.client.UploadTraces(ctx, rss); err != nil {
		return fmt.Errorf("traces export: %w", err)
	}
	return nil
}

// Shutdown stops the client; spans exported after it fail.
func (e *exporter) Shutdown(ctx context.Context) error {
	var err error
	e.stopOnce.Do(func() { err = e.client.Stop(ctx) })
	return err
}

// encode writes spans as OTLP ResourceSpans, one per resource: spans
// grouped by instrumentation scope in the order the batch first names
// each, spans in batch order within a scope (the SDK exporter's layout).
// The messages returned share e.enc's buffer: valid until the next call.
func (e *exporter) encode(spans []sdktrace.ReadOnlySpan) []*tracepb.ResourceSpans {
	e.groups = e.groups[:0]
	for _, s := range spans {
		if s == nil {
			continue
		}
		g := spanGroup{res: s.Resource(), scope: s.InstrumentationScope()}
		if !containsGroup(e.groups, g) {
			e.groups = append(e.groups, g)
		}
	}
	if len(e.groups) == 0 {
		return nil
	}
	w := &e.enc
	w.b = w.b[:0]
	var bounds []int // start and end of each ResourceSpans in w.b
	for i, g := range e.groups {
		if resourceSeen(e.groups[:i], g.res) {
			continue
		}
		start := len(w.b)
		if g.res != nil {
			w.raw(1, e.resource(g.res))
		}
		for _, sg := range e.groups[i:] {
			if sg.res != g.res {
				continue
			}
			ss := w.open(2) // ResourceSpans.scope_spans
			if sg.scope != (instrumentation.Scope{}) {
				w.raw(1, e.scopeBytes(sg.scope))
			}
			for _, s := range spans {
				if s != nil && s.Resource() == sg.res && s.InstrumentationScope() == sg.scope {
					sp := w.open(2) // ScopeSpans.spans
					w.span(s)
					w.close(sp)
				}
			}
			w.str(3, sg.scope.SchemaURL)
			w.close(ss)
		}
		if g.res != nil {
			w.str(3, g.res.SchemaURL())
		}
		bounds = append(bounds, start, len(w.b))
	}
	rss := make([]*tracepb.ResourceSpans, 0, len(bounds)/2)
	for i := 0; i < len(bounds); i += 2 {
		rs := &tracepb.ResourceSpans{}
		rs.ProtoReflect().SetUnknown(protoreflect.RawFields(w.b[bounds[i]:bounds[i+1]:bounds[i+1]]))
		rss = append(rss, rs)
	}
	return rss
}

func containsGroup(gs []spanGroup, g spanGroup) bool {
	for _, h := range gs {
		if h.res == g.res && h.scope == g.scope {
			return true
		}
	}
	return false
}

func resourceSeen(gs []spanGroup, r *resource.Resource) bool {
	for _, h := range gs {
		if h.res == r {
			return true
		}
	}
	return false
}

// resource returns r encoded as an OTLP Resource.
func (e *exporter) resource(r *resource.Resource) []byte {
	if r != e.res {
		w := wireEncoder{limit: e.limit}
		w.keyValuesIter(1, r.Iter())
		e.res, e.resBytes = r, w.b
	}
	return e.resBytes
}

// scopeBytes returns s encoded as an OTLP InstrumentationScope.
func (e *exporter) scopeBytes(s instrumentation.Scope) []byte {
	for _, c := range e.scopes {
		if c.scope == s {
			return c.bytes
		}
	}
	w := wireEncoder{limit: e.limit}
	w.str(1, s.Name)
	w.str(2, s.Version)
	w.keyValuesIter(3, s.Attributes.Iter())
	if len(e.scopes) < 64 {
		e.scopes = append(e.scopes, encodedScope{scope: s, bytes: w.b})
	}
	return w.b
}

// wireEncoder appends protobuf wire format to b. Scalars at their zero value
// are left out, as proto3 does; a field of a oneof is always written.
// Every string it writes is valid UTF-8, at most limit characters
// (cleanText; limit ≤ 0: no bound).
type wireEncoder struct {
	b     []byte
	limit int
}

// open starts a length-delimited field num and returns where its content
// starts; close writes the length once the content is known.
func (w *wireEncoder) open(num protowire.Number) int {
	w.b = protowire.AppendTag(w.b, num, protowire.BytesType)
	w.b = append(w.b, 0)
	return len(w.b)
}

func (w *wireEncoder) close(start int) {
	n := len(w.b) - start
	if n < 0x80 {
		w.b[start-1] = byte(n)
		return
	}
	size := protowire.SizeVarint(uint64(n))
	for range size - 1 {
		w.b = append(w.b, 0)
	}
	copy(w.b[start-1+size:], w.b[start:start+n])
	protowire.AppendVarint(w.b[:start-1], uint64(n))
}

func (w *wireEncoder) raw(num protowire.Number, msg []byte) {
	w.b = protowire.AppendTag(w.b, num, protowire.BytesType)
	w.b = protowire.AppendBytes(w.b, msg)
}

func (w *wireEncoder) str(num protowire.Number, s string) {
	if s != "" {
		w.b = protowire.AppendTag(w.b, num, protowire.BytesType)
		w.b = protowire.AppendString(w.b, cleanText(s, w.limit))
	}
}

func (w *wireEncoder) bytes(num protowire.Number, v []byte) {
	if len(v) > 0 {
		w.b = protowire.AppendTag(w.b, num, protowire.BytesType)
		w.b = protowire.AppendBytes(w.b, v)
	}
}

func (w *wireEncoder) uvarint(num protowire.Number, v uint64) {
	if v != 0 {
		w.b = protowire.AppendTag(w.b, num, protowire.VarintType)
		w.b = protowire.AppendVarint(w.b, v)
	}
}

func (w *wireEncoder) fixed64(num protowire.Number, v uint64) {
	if v != 0 {
		w.b = protowire.AppendTag(w.b, num, protowire.Fixed64Type)
		w.b = protowire.AppendFixed64(w.b, v)
	}
}

func (w *wireEncoder) fixed32(num protowire.Number, v uint32) {
	if v != 0 {
		w.b = protowire.AppendTag(w.b, num, protowire.Fixed32Type)
		w.b = protowire.AppendFixed32(w.b, v)
	}
}

// OTLP span flags: the low 8 bits are the W3C trace flags.
const (
	flagHasIsRemote = 0x100
	flagIsRemote    = 0x200
)

func spanFlags(tf trace.TraceFlags, parent trace.SpanContext) uint32 {
	f := uint32(tf) | flagHasIsRemote
	if parent.IsRemote() {
		f |= flagIsRemote
	}
	return f
}

// span writes the fields of an OTLP Span.
func (w *wireEncoder) span(s sdktrace.ReadOnlySpan) {
	sc := s.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	w.bytes(1, tid[:])
	w.bytes(2, sid[:])
	w.str(3, sc.TraceState().String())
	parent := s.Parent()
	if psid := parent.SpanID(); psid.IsValid() {
		w.bytes(4, psid[:])
	}
	w.str(5, s.Name())
	w.uvarint(6, uint64(spanKind(s.SpanKind())))
	w.fixed64(7, unixNano(s.StartTime().UnixNano()))
	w.fixed64(8, unixNano(s.EndTime().UnixNano()))
	w.keyValues(9, s.Attributes())
	w.uvarint(10, uint64(clampUint32(s.DroppedAttributes())))
	for _, ev := range s.Events() {
		at := w.open(11)
		w.fixed64(1, unixNano(ev.Time.UnixNano()))
		w.str(2, ev.Name)
		w.keyValues(3, ev.Attributes)
		w.uvarint(4, uint64(clampUint32(ev.DroppedAttributeCount)))
		w.close(at)
	}
	w.uvarint(12, uint64(clampUint32(s.DroppedEvents())))
	for _, l := range s.Links() {
		at := w.open(13)
		ltid, lsid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
		w.bytes(1, ltid[:])
		w.bytes(2, lsid[:])
		w.str(3, l.SpanContext.TraceState().String())
		w.keyValues(4, l.Attributes)
		w.uvarint(5, uint64(clampUint32(l.DroppedAttributeCount)))
		w.fixed32(6, spanFlags(l.SpanContext.TraceFlags(), l.SpanContext))
		w.close(at)
	}
	w.uvarint(14, uint64(clampUint32(s.DroppedLinks())))
	st := s.Status()
	at := w.open(15) // always present, as the SDK exporter sends it
	w.str(2, st.Description)
	w.uvarint(3, uint64(statusCode(st.Code)))
	w.close(at)
	w.fixed32(16, spanFlags(sc.TraceFlags(), parent))
}

// spanKind maps a span kind to OTLP's SpanKind (the same numbers, but an
// unknown kind is UNSPECIFIED).
func spanKind(k trace.SpanKind) int {
	switch k {
	case trace.SpanKindInternal, trace.SpanKindServer, trace.SpanKindClient,
		trace.SpanKindProducer, trace.SpanKindConsumer:
		return int(k)
	}
	return 0
}

// statusCode maps a status code to OTLP's: UNSET 0, OK 1, ERROR 2.
func statusCode(c codes.Code) int {
	switch c {
	case codes.Ok:
		return 1
	case codes.Error:
		return 2
	}
	return 0
}

func unixNano(ns int64) uint64 { return uint64(max(0, ns)) }

func clampUint32(v int) uint32 {
	return uint32(min(max(v, 0), math.MaxUint32))
}

// keyValues writes each attribute as a KeyValue field num.
func (w *wireEncoder) keyValues(num protowire.Number, kvs []attribute.KeyValue) {
	for _, kv := range kvs {
		w.keyValue(num, kv)
	}
}

func (w *wireEncoder) keyValuesIter(num protowire.Number, it attribute.Iterator) {
	for it.Next() {
		w.keyValue(num, it.Attribute())
	}
}

func (w *wireEncoder) keyValue(num protowire.Number, kv attribute.KeyValue) {
	at := w.open(num)
	w.str(1, string(kv.Key))
	v := w.open(2)
	w.anyValue(kv.Value)
	w.close(v)
	w.close(at)
}

// anyValue writes the fields of an OTLP AnyValue.
func (w *wireEncoder) anyValue(v attribute.Value) {
	switch v.Type() {
	case attribute.BOOL:
		w.b = protowire.AppendTag(w.b, 2, protowire.VarintType)
		w.b = protowire.AppendVarint(w.b, protowire.EncodeBool(v.AsBool()))
	case attribute.INT64:
		w.b = protowire.AppendTag(w.b, 3, protowire.VarintType)
		w.b = protowire.AppendVarint(w.b, uint64(v.AsInt64()))
	case attribute.FLOAT64:
		w.b = protowire.AppendTag(w.b, 4, protowire.Fixed64Type)
		w.b = protowire.AppendFixed64(w.b, math.Float64bits(v.AsFloat64()))
	case attribute.STRING:
		w.b = protowire.AppendTag(w.b, 1, protowire.BytesType)
		w.b = protowire.AppendString(w.b, cleanText(v.AsString(), w.limit))
	case attribute.BYTESLICE:
		w.b = protowire.AppendTag(w.b, 7, protowire.BytesType)
		w.b = protowire.AppendBytes(w.b, v.AsByteSlice())
	case attribute.BOOLSLICE:
		array(w, v.AsBoolSlice(), attribute.BoolValue)
	case attribute.INT64SLICE:
		array(w, v.AsInt64Slice(), attribute.Int64Value)
	case attribute.FLOAT64SLICE:
		array(w, v.AsFloat64Slice(), attribute.Float64Value)
	case attribute.STRINGSLICE:
		array(w, v.AsStringSlice(), attribute.StringValue)
	case attribute.SLICE:
		array(w, v.AsSlice(), func(v attribute.Value) attribute.Value { return v })
	case attribute.MAP:
		at := w.open(6) // AnyValue.kvlist_value
		w.keyValues(1, v.AsMap())
		w.close(at)
	case attribute.EMPTY:
	default:
		w.b = protowire.AppendTag(w.b, 1, protowire.BytesType)
		w.b = protowire.AppendString(w.b, "INVALID")
	}
}

// array writes vs as AnyValue.array_value.
func array[T any](w *wireEncoder, vs []T, value func(T) attribute.Value) {
	at := w.open(5)
	for _, x := range vs {
		e := w.open(1)
		w.anyValue(value(x))
		w.close(e)
	}
	w.close(at)
}
