package forwarder

import (
	"context"
	"maps"
	"math/rand/v2"
	"testing"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/delaybridge/delaybridge/queue"
)

// TestSetTraceContextWritesWhatInjectWrites: the headers setTraceContext
// leaves are those the W3C propagator's Inject leaves after the held trace
// context is removed, for every flag byte, with and without a tracestate,
// and for an invalid span context.
func TestSetTraceContextWritesWhatInjectWrites(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	states := []string{"", "vendor=x", "a=1,b=2,c@t=3"}
	var cases []trace.SpanContext
	for i := range 600 {
		var cfg trace.SpanContextConfig
		for j := range cfg.TraceID {
			cfg.TraceID[j] = byte(r.IntN(256))
		}
		for j := range cfg.SpanID {
			cfg.SpanID[j] = byte(r.IntN(256))
		}
		cfg.TraceFlags = trace.TraceFlags(i % 256)
		ts, err := trace.ParseTraceState(states[i%len(states)])
		if err != nil {
			t.Fatal(err)
		}
		cfg.TraceState = ts
		cases = append(cases, trace.NewSpanContext(cfg))
	}
	cases = append(cases, trace.SpanContext{})
	held := map[string]string{queue.HeaderTraceParent: sampled, queue.HeaderTraceState: "old=1", "other": "kept"}
	for _, sc := range cases {
		want := maps.Clone(held)
		delete(want, queue.HeaderTraceState)
		propagation.TraceContext{}.Inject(trace.ContextWithSpanContext(context.Background(), sc), propagation.MapCarrier(want))
		got := maps.Clone(held)
		setTraceContext(got, sc)
		if !maps.Equal(got, want) {
			t.Fatalf("span context %v: setTraceContext wrote %v, Inject %v", sc, got, want)
		}
	}
}

// TestSetTraceContextDropsTraceHeadersOfAnyCase: a message's own headers
// named Traceparent or TRACESTATE (header names are case-insensitive to
// HTTP and to many consumers) never reach the consumer beside the
// daemon's traceparent; other headers stay.
func TestSetTraceContextDropsTraceHeadersOfAnyCase(t *testing.T) {
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2}, TraceFlags: trace.FlagsSampled})
	h := map[string]string{"Traceparent": "00-ffffffffffffffffffffffffffffffff-ffffffffffffffff-01", "TRACESTATE": "evil=1",
		"TraceState": "x=2", "traceparentx": "kept", "other": "kept"}
	setTraceContext(h, sc)
	want := map[string]string{queue.HeaderTraceParent: "00-01000000000000000000000000000000-0200000000000000-01", "traceparentx": "kept", "other": "kept"}
	if !maps.Equal(h, want) {
		t.Errorf("headers %v, want %v", h, want)
	}
}
