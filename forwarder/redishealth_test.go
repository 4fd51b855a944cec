package forwarder

import (
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/internal/logrepeat"
)

// TestASuccessSentBeforeAnOutageDoesNotEndIt: a call sent before the
// outage's first failure, answered after it (its answer was on the way when
// a cut closed the next call's connection), ends nothing; one sent after
// the failure ends it with one INFO. Before, the late answer wrote "redis
// reachable again" 3 ms into a cut, and the outage's end was logged twice.
func TestASuccessSentBeforeAnOutageDoesNotEndIt(t *testing.T) {
	var logs lockedBuffer
	log := slog.New(slog.NewJSONHandler(&logs, nil))
	h := newRedisHealth(logrepeat.New(log, time.Minute), log, time.Hour)
	sentBefore := time.Now()
	time.Sleep(time.Millisecond)
	h.failed("", "claim failed", io.EOF)
	h.ok(sentBefore)
	if !h.down.Load() || strings.Contains(logs.String(), "reachable again") {
		t.Fatalf("a success sent before the failure ended the outage:\n%s", logs.String())
	}
	h.ok(time.Now())
	if h.down.Load() || strings.Count(logs.String(), "reachable again") != 1 {
		t.Errorf("a success sent after the failure did not end the outage once:\n%s", logs.String())
	}
}
