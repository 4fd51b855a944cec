package queue_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/internal/testing/redistest"
	"github.com/delaybridge/delaybridge/queue"
)

// TestEnvelopeStoresABodyNearItsSize: an envelope holds a body of text at
// about its size, and a body of control bytes or of bytes that are not
// UTF-8 at no more than base64's 4/3 (not six bytes per control byte, as
// JSON's \u0001 escapes would), measured as Redis stores the member; every
// body comes back byte for byte.
func TestEnvelopeStoresABodyNearItsSize(t *testing.T) {
	t.Parallel()
	rdb, prefix := redistest.New(t)
	q := queue.New(rdb)
	tp := queue.Topic{Name: "sizes", Prefix: prefix, Format: queue.FormatEnvelope}
	const n = 64 << 10
	binary := make([]byte, n)
	for i := range binary {
		binary[i] = byte(i*7 + 0x80)
	}
	for _, tt := range []struct {
		name  string
		body  []byte
		ratio float64
	}{
		{"text", []byte(strings.Repeat("plain text, ", n/12)), 1.05},
		{"text with newlines", []byte(strings.Repeat("a line\n", n/7)), 1.2},
		{"control bytes", bytes.Repeat([]byte{1}, n), 4.0 / 3},
		{"not UTF-8", binary, 4.0 / 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			member, err := queue.EncodeEnvelope(queue.Message{ID: tt.name, Body: tt.body})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := q.ScheduleMember(t.Context(), tp, member, queue.In(time.Hour)); err != nil {
				t.Fatal(err)
			}
			if max := tt.ratio*float64(len(tt.body)) + 100; float64(len(member)) > max {
				t.Errorf("a %d-byte body is a %d-byte member; want at most %.0f", len(tt.body), len(member), max)
			}
			got, err := q.Get(t.Context(), tp, tt.name)
			if err != nil || !bytes.Equal(got.Message.Body, tt.body) {
				t.Errorf("Get = %d bytes, %v; want the body back", len(got.Message.Body), err)
			}
		})
	}
}
