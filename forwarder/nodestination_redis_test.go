package forwarder

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/queue"
	"github.com/delaybridge/delaybridge/sinks"
)

// lockedBuffer is a log destination safe for the forwarder's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestMissingDestinationRetriesAreLoggedAtWarn: a publish refused because
// the exchange or topic does not exist is something an operator must fix,
// so its retry is a WARN naming the topic and the reason, not an INFO.
func TestMissingDestinationRetriesAreLoggedAtWarn(t *testing.T) {
	t.Parallel()
	q, prefix := testRedis(t)
	sink := newRecordSink()
	sink.fail = func(sinks.Message) error {
		return sinks.NoDestination(fmt.Errorf(`exchange "orders" not found`))
	}
	topic := queue.Topic{Name: "t", Prefix: prefix}
	if _, err := q.ScheduleMember(context.Background(), topic, []byte("m"), queue.At(time.Now())); err != nil {
		t.Fatal(err)
	}
	var logs lockedBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	start(t, Options{Queue: q, Topics: []Topic{{topic, sink}}, KeyPrefix: prefix, AllSlots: true, Log: log,
		MaxAttempts: 100, RetryBackoff: 20 * time.Millisecond, PollInterval: 20 * time.Millisecond})
	eventually(t, 10*time.Second, "a WARN about the missing destination", func() bool {
		out := logs.String()
		return strings.Contains(out, "level=WARN") && strings.Contains(out, "destination missing") &&
			strings.Contains(out, "topic=t") && strings.Contains(out, `exchange \"orders\" not found`)
	})
}
