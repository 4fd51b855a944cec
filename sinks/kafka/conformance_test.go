package kafka

import (
	"strconv"
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/sinks"
	"github.com/delaybridge/delaybridge/sinks/sinktest"
)

func TestConformance(t *testing.T) {
	sinktest.Run(t, sinktest.Harness{
		New: func(t *testing.T, o sinktest.Options) (sinks.Sink, func(t *testing.T, n int, timeout time.Duration) []sinktest.Received) {
			topic := uniqueTopic(t)
			c := newCluster(t, topic, 1) // one partition keeps the order of publication
			cfg := Config{Brokers: []string{addr(c)}, Topic: topic, MaxMessageSize: o.MaxMessageSize}
			if len(o.Keys) > 0 {
				// Only the envelope mode keys records with the message's own key.
				cfg.KeyMode = KeyEnvelope
			}
			s := newSink(t, cfg)
			cons := newConsumer(t, addr(c), topic)
			read := func(t *testing.T, n int, timeout time.Duration) []sinktest.Received {
				t.Helper()
				recs := cons.read(t, n, timeout)
				if len(recs) > n {
					t.Fatalf("read %d records, want %d", len(recs), n)
				}
				out := make([]sinktest.Received, len(recs))
				for i, r := range recs {
					h := headers(r)
					attempt, _ := strconv.Atoi(h[sinks.HeaderAttempt])
					out[i] = sinktest.Received{
						Body:       r.Value,
						ID:         h[sinks.HeaderID],
						Topic:      h[sinks.HeaderTopic],
						Due:        atoi(t, h[sinks.HeaderDue]),
						Attempt:    attempt,
						Headers:    h,
						RoutingKey: string(r.Key),
					}
				}
				return out
			}
			return s, read
		},
		WantKey: func(m sinks.Message) string {
			return m.RoutingKey
		},
	})
}
