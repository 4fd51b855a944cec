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
		New: func(t *testing.T, maxMessageSize int) (sinks.Sink, func(*testing.T, int, time.Duration) []sinktest.Received) {
			d := newDest(t, nil)
			c := d.consume(t)
			return newSink(t, testURL(), d, int64(maxMessageSize)), c.read
		},
	})
}
