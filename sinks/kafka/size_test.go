package kafka

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/delaybridge/delaybridge/sinks"
)

// TestSoloBatchSizeIsWhatTheBrokerCounts checks the size estimate against
// the broker: a record of exactly message.max.bytes is taken, one byte over
// is refused.
func TestSoloBatchSizeIsWhatTheBrokerCounts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		key  string
		msg  sinks.Message
	}{
		{"tiny", KeyNone, sinks.Message{ID: "a", Body: []byte("x")}},
		{"keyed with headers", KeyID, sinks.Message{ID: "0123456789abcdef0123456789abcdef", Topic: "orders", Attempt: 12,
			Body: bytes.Repeat([]byte("b"), 200), Headers: map[string]string{"x-trace": "abc", "x-empty": ""}}},
		{"two-byte varints", KeyEnvelope, sinks.Message{ID: "m", RoutingKey: strings.Repeat("k", 300),
			Body: bytes.Repeat([]byte("v"), 5000)}},
		{"three-byte varints", KeyNone, sinks.Message{ID: "m", Body: bytes.Repeat([]byte("v"), 70000)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			probe, err := New(Config{Brokers: []string{"127.0.0.1:1"}, Topic: "x", KeyMode: tt.key}, nil)
			if err != nil {
				t.Fatalf("new: %v", err)
			}
			r := probe.record(&tt.msg, time.Now())
			n := soloBatchSize(&r)
			if err := probe.Close(); err != nil {
				t.Fatalf("close: %v", err)
			}

			for _, limit := range []int{n, n - 1} {
				topic := uniqueTopic(t)
				c := newCluster(t, topic, 1, kfake.BrokerConfigs(map[string]string{"message.max.bytes": strconv.Itoa(limit)}))
				s := newSink(t, Config{Brokers: []string{addr(c)}, Topic: topic, KeyMode: tt.key})
				err := publish(t, s, []sinks.Message{tt.msg})
				switch {
				case limit == n && err != nil:
					t.Errorf("record of %d bytes at a limit of %d: %v", n, limit, err)
				case limit < n && !errorsIsPermanentTooLarge(err):
					t.Errorf("record of %d bytes at a limit of %d: %v, want permanent MESSAGE_TOO_LARGE", n, limit, err)
				}
			}
		})
	}
}

func errorsIsPermanentTooLarge(err error) bool {
	e := sinks.Results(err, 1)[0]
	return class(e) == "permanent" && errors.Is(e, kafkago.MessageSizeTooLarge)
}

func TestVarintSize(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		v    int64
		want int
	}{{0, 1}, {-1, 1}, {63, 1}, {64, 2}, {-64, 1}, {-65, 2}, {8191, 2}, {8192, 3}, {1 << 20, 4}, {1 << 27, 5}} {
		if got := varintSize(tt.v); got != tt.want {
			t.Errorf("varintSize(%d) = %d, want %d", tt.v, got, tt.want)
		}
	}
}
