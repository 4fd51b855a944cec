package forwarder

import (
	"bufio"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/delaybridge/delaybridge/internal/testing/e2etest"
	"github.com/delaybridge/delaybridge/internal/testing/redistest"
	"github.com/delaybridge/delaybridge/queue"
	"github.com/delaybridge/delaybridge/sinks/amqp"
)

// TestRepeatedRefusalsAreLoggedOncePerIntervalWithTheirCount: a steady
// stream of publishes to an exchange that does not exist (RabbitMQ answers
// 404 for each) writes one WARN at once and then one per interval per
// topic, each with the count since the last, whatever the rate; the counts
// add up to the retried metric. Before, each refused batch wrote a line
// (333 lines in 8 s), and so did the sink for each channel closed by a 404.
func TestRepeatedRefusalsAreLoggedOncePerIntervalWithTheirCount(t *testing.T) {
	t.Parallel()
	q, prefix := testRedis(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var logs lockedBuffer
	log := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	sink, err := amqp.New(amqp.Config{URL: e2etest.AMQPURL(), Exchange: "delaybridge-missing-" + redistest.Suffix(), RoutingKey: "k"}, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sink.Close() })
	if err := sink.WaitConnected(ctx); err != nil {
		t.Fatal(err)
	}
	topic := queue.Topic{Name: "t", Prefix: prefix, Slots: 4}
	for i := range 200 {
		if _, err := q.ScheduleMember(ctx, topic, []byte("m"+strings.Repeat("x", i)), queue.At(time.Now())); err != nil {
			t.Fatal(err)
		}
	}
	m := NewMetrics(prometheus.NewRegistry())
	const every, runFor = 500 * time.Millisecond, 2 * time.Second
	stop := start(t, Options{Queue: q, Topics: []Topic{{topic, sink}}, KeyPrefix: prefix, AllSlots: true, Metrics: m,
		Log: log, logEvery: every,
		MaxAttempts: 1_000_000, RetryBackoff: 5 * time.Millisecond, RetryBackoffMax: 5 * time.Millisecond, PollInterval: 5 * time.Millisecond})
	time.Sleep(runFor)
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	var lines, counted, sinkLines int
	sc := bufio.NewScanner(strings.NewReader(logs.String()))
	for sc.Scan() {
		var l struct {
			Msg   string `json:"msg"`
			Topic string `json:"topic"`
			Count int    `json:"count"`
			Err   string `json:"err"`
		}
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			continue
		}
		if strings.HasPrefix(l.Msg, "amqp channel closed") {
			sinkLines++
		}
		if !strings.Contains(l.Msg, "destination missing") {
			continue
		}
		lines++
		counted += l.Count
		if l.Topic != "t" || !strings.Contains(l.Err, "404") {
			t.Errorf("line %s: want topic t and the 404", sc.Text())
		}
	}
	retried := int(testutil.ToFloat64(m.Retried.WithLabelValues("t")))
	if retried < 200 {
		t.Fatalf("%d publishes refused in %s, want a steady stream (at least 200); logs:\n%s", retried, runFor, logs.String())
	}
	// One at once, one per interval (4 in 2 s), one at stop; a loaded
	// machine may stretch the run, never add lines per refusal.
	if maxLines := 2 + int(runFor/every) + 2; lines < 2 || lines > maxLines {
		t.Errorf("%d WARN lines for %d refusals in %s, want 2 to %d (one per %s)", lines, retried, runFor, maxLines, every)
	}
	// The sink's own line about each channel the broker closed (every
	// refused publish) is limited alike: the first, then one per 10 s.
	if sinkLines > 1 {
		t.Errorf("%d lines about closed channels in %s, want 1", sinkLines, runFor)
	}
	if counted != retried {
		t.Errorf("the lines' counts add up to %d, the metric says %d", counted, retried)
	}
}
