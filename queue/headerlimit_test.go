package queue

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestScheduleRefusesHeadersBeyondTheFrameLimit: the Go API refuses an
// envelope whose headers or properties exceed MaxHeaderBytes (no broker
// frame would carry them), and takes one just under it.
func TestScheduleRefusesHeadersBeyondTheFrameLimit(t *testing.T) {
	f := newFixture(t, FormatEnvelope, 1)
	q, ctx, topic := f.q, f.ctx, f.tp
	big := Message{ID: "big", Body: []byte("b"), Headers: map[string]string{"h": strings.Repeat("x", 200<<10)}}
	if _, err := q.Schedule(ctx, topic, big, In(time.Hour)); !errors.Is(err, ErrInvalidEnvelope) || !strings.Contains(err.Error(), "headers and properties take") {
		t.Fatalf("200 KB header: %v, want ErrInvalidEnvelope naming the limit", err)
	}
	many := map[string]string{}
	for i := range 300 {
		many[strings.Repeat("n", 200)+string(rune('a'+i%26))+strings.Repeat("k", i/26)] = strings.Repeat("v", 200)
	}
	if _, err := q.Schedule(ctx, topic, Message{ID: "many", Headers: many}, In(time.Hour)); !errors.Is(err, ErrInvalidEnvelope) {
		t.Fatalf("300 headers of 400 bytes: %v, want ErrInvalidEnvelope", err)
	}
	fits := Message{ID: "fits", Headers: map[string]string{"h": strings.Repeat("x", MaxHeaderBytes-200)}}
	if _, err := q.Schedule(ctx, topic, fits, In(time.Hour)); err != nil {
		t.Fatalf("a header just under the limit: %v", err)
	}
}
