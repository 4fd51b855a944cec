package redis

import (
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/sinks"
	"github.com/delaybridge/delaybridge/sinks/sinktest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	sinktest.Run(t, sinktest.Harness{
		New: func(t *testing.T, o sinktest.Options) (sinks.Sink, func(*testing.T, int, time.Duration) []sinktest.Received) {
			admin := adminClient(t)
			stream := uniqueStream(t, admin)
			s := openSink(t, testOptions(t), Config{Stream: stream, MaxMessageSize: o.MaxMessageSize})
			return s, reader(admin, stream)
		},
		// A stream keeps every message's routing key, in the routing_key
		// field; a message without one has no such field.
		WantKey: func(m sinks.Message) string { return m.RoutingKey },
	})
}
