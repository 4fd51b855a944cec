package amqp

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
			d := newDest(t, nil)
			// A direct exchange: a per-message key reaches the queue only
			// through its own binding, so the routing decision is checked
			// too (an unroutable mandatory message fails the publish).
			d.bind(t, o.Keys...)
			c := d.consume(t)
			return newSink(t, testURL(), d, int64(o.MaxMessageSize)), c.read
		},
		WantKey: func(m sinks.Message) string {
			if m.RoutingKey != "" {
				return m.RoutingKey
			}
			return testKey
		},
	})
}
