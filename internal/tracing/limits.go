package tracing

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// DefaultValueLimit is the longest string attribute value, in characters,
// when neither OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT nor
// OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT is set: the SDK's own default is no
// limit, which lets whoever chooses a value (a request, a message's
// routing key) make every span as large as it likes.
const DefaultValueLimit = 256

// maxQueueBytes bounds, beside OTEL_BSP_MAX_QUEUE_SIZE, what the spans
// waiting for export (and those being exported) hold, by spanBytes: a
// collector that hangs holds the daemon's spans, never its memory.
const maxQueueBytes = 32 << 20

// readValueLimit reads the attribute value length limit:
// OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT, else OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT,
// else DefaultValueLimit. A bad value is an error naming its variable.
func readValueLimit(getenv func(string) string) (int, error) {
	for _, name := range []string{"OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT", "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT"} {
		s := strings.TrimSpace(getenv(name))
		if s == "" {
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			return DefaultValueLimit, fmt.Errorf("%s=%q: want a positive number of characters", name, s)
		}
		return n, nil
	}
	return DefaultValueLimit, nil
}

// spanLimits are the SDK's limits (counts from its defaults) with the
// value length limit read by readValueLimit.
func spanLimits(valueLimit int) sdktrace.SpanLimits {
	l := sdktrace.NewSpanLimits()
	l.AttributeValueLengthLimit = valueLimit
	return l
}

// cleanText is s as an OTLP string may hold it: valid UTF-8 (a collector
// refuses a whole batch over one invalid string), at most limit
// characters (limit ≤ 0: no bound). A valid string within the limit is
// returned as it is, without a copy.
func cleanText(s string, limit int) string {
	if limit > 0 && len(s) > limit {
		n := 0
		for i := range s {
			if n == limit {
				s = s[:i]
				break
			}
			n++
		}
	}
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	return s
}

// spanBytes estimates what a span holds in memory until it is exported:
// its strings and a fixed share for the rest.
func spanBytes(s sdktrace.ReadOnlySpan) int {
	n := 256 + len(s.Name()) + len(s.Status().Description)
	n += attrsBytes(s.Attributes())
	for _, ev := range s.Events() {
		n += 64 + len(ev.Name) + attrsBytes(ev.Attributes)
	}
	for _, l := range s.Links() {
		n += 64 + attrsBytes(l.Attributes)
	}
	return n
}

func attrsBytes(kvs []attribute.KeyValue) int {
	n := 0
	for _, kv := range kvs {
		n += 32 + len(kv.Key) + valueBytes(kv.Value)
	}
	return n
}

func valueBytes(v attribute.Value) int {
	switch v.Type() {
	case attribute.STRING, attribute.BYTESLICE:
		return len(v.AsString())
	case attribute.STRINGSLICE:
		n := 0
		for _, s := range v.AsStringSlice() {
			n += 16 + len(s)
		}
		return n
	case attribute.SLICE:
		n := 0
		for _, e := range v.AsSlice() {
			n += 16 + valueBytes(e)
		}
		return n
	case attribute.MAP:
		return attrsBytes(v.AsMap())
	case attribute.BOOLSLICE:
		return len(v.AsBoolSlice())
	case attribute.INT64SLICE:
		return 8 * len(v.AsInt64Slice())
	case attribute.FLOAT64SLICE:
		return 8 * len(v.AsFloat64Slice())
	}
	return 8
}
