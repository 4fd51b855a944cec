package forwarder

import (
	"io"
	"log/slog"
	"net"
	"strings"
	"syscall"
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

// TestAFailureJustAfterAnOutageEndedStartsNoNewOne: the heartbeat's pool
// reconnects first and ends the outage; the data path's pool answers its
// last dial error for up to a second more (go-redis). Such a failure,
// within blipUnder of the end, is no new outage: no second WARN and no
// second "reachable again" (a 10 s outage logged 5 lines). One after it
// is announced as before.
func TestAFailureJustAfterAnOutageEndedStartsNoNewOne(t *testing.T) {
	var logs lockedBuffer
	log := slog.New(slog.NewJSONHandler(&logs, nil))
	h := newRedisHealth(logrepeat.New(log, time.Minute), log, time.Hour)
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	h.failed("", "heartbeat failed", refused)
	h.ok(time.Now())
	h.failed("", "claim failed", refused)
	h.ok(time.Now())
	if n, m := strings.Count(logs.String(), "does not answer"), strings.Count(logs.String(), "reachable again"); n != 1 || m != 1 {
		t.Fatalf("an outage and a stale dial error after its end logged %d WARNs and %d INFOs, want 1 and 1:\n%s", n, m, logs.String())
	}
	time.Sleep(blipUnder)
	h.failed("", "claim failed", refused)
	if n := strings.Count(logs.String(), "does not answer"); n != 2 {
		t.Errorf("a failure %s after the end was not announced as a new outage:\n%s", blipUnder, logs.String())
	}
}
