package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/internal/testing/redistest"
	"github.com/delaybridge/delaybridge/membership"
	"github.com/delaybridge/delaybridge/queue"
)

// daemonEnv configures a daemon of one topic, "events", of slots slots,
// that appends to a stream of the test's own, under a prefix of its own.
func daemonEnv(t *testing.T, slots string) (*queue.Queue, string) {
	t.Helper()
	rdb, prefix := redistest.New(t)
	t.Setenv("DELAYBRIDGE_REDIS_URL", redistest.URL())
	t.Setenv("DELAYBRIDGE_KEY_PREFIX", prefix)
	t.Setenv("DELAYBRIDGE_AMQP_URL", "")
	t.Setenv("DELAYBRIDGE_HTTP_ADDR", "127.0.0.1:0")
	t.Setenv("DELAYBRIDGE_REPLICA_ID", "b")
	t.Setenv("DELAYBRIDGE_TOPICS", "events")
	t.Setenv("DELAYBRIDGE_TOPIC_EVENTS_SINK", "redis")
	t.Setenv("DELAYBRIDGE_TOPIC_EVENTS_STREAM", prefix+":stream")
	t.Setenv("DELAYBRIDGE_TOPIC_EVENTS_SLOTS", slots)
	return queue.New(rdb), prefix
}

// registerOld records "events" with 2 slots, as an earlier daemon did.
func registerOld(t *testing.T, q *queue.Queue, prefix string) {
	t.Helper()
	old := queue.LayoutOf(queue.Topic{Name: "events", Slots: 2})
	old.Sink, old.Stream = "redis", prefix+":stream"
	if _, err := q.Register(context.Background(), prefix, "a", []queue.Layout{old}); err != nil {
		t.Fatal(err)
	}
}

func TestDaemonRefusesALayoutThatALiveReplicaDisagreesWith(t *testing.T) {
	q, prefix := daemonEnv(t, "4")
	registerOld(t, q, prefix)
	if _, err := membership.New(q).Heartbeat(context.Background(), prefix, "a", time.Minute); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out, errb syncBuffer
	code := dispatch(ctx, []string{"run"}, stdio{in: strings.NewReader(""), out: &out, err: &errb})
	if code != exitConfig {
		t.Fatalf("run: exit %d, want %d\nstderr: %s", code, exitConfig, errb.String())
	}
	for _, s := range []string{"registered (slots=2", "configured (slots=4", "live replicas a"} {
		if !strings.Contains(errb.String(), s) {
			t.Errorf("stderr does not name %q:\n%s", s, errb.String())
		}
	}
	if l, _, _ := q.Layout(context.Background(), prefix, "events"); l.Slots != 2 {
		t.Errorf("registry holds %s after a refusal", l)
	}
}

func TestDaemonTakesTheRegistryOverWithoutLiveReplicasAndLogsTheChange(t *testing.T) {
	q, prefix := daemonEnv(t, "4")
	registerOld(t, q, prefix)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out, errb syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- dispatch(ctx, []string{"run"}, stdio{in: strings.NewReader(""), out: &out, err: &errb})
	}()
	for {
		if l, _, _ := q.Layout(ctx, prefix, "events"); l.Slots == 4 {
			break
		}
		select {
		case code := <-done:
			t.Fatalf("run ended with exit %d before registering\nstderr: %s", code, errb.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	cancel()
	if code := <-done; code != exitOK {
		t.Errorf("run: exit %d\nstderr: %s", code, errb.String())
	}
	var warned bool
	for _, line := range strings.Split(errb.String(), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) != nil || rec["topic"] != "events" || rec["level"] != "WARN" {
			continue
		}
		old, _ := rec["old"].(string)
		now, _ := rec["new"].(string)
		warned = strings.HasPrefix(old, "slots=2 ") && strings.HasPrefix(now, "slots=4 ") &&
			strings.Contains(rec["msg"].(string), "taking the registry over")
	}
	if !warned {
		t.Errorf("no WARN record of the layout change:\n%s", errb.String())
	}
}

func TestCommandsReadTheRegistryWithoutTopicVariables(t *testing.T) {
	e := newCLIEnv(t)
	t.Setenv("DELAYBRIDGE_TOPICS", "")
	reg := queue.LayoutOf(e.orders)
	reg.Sink, reg.Exchange, reg.RoutingKey = "amqp", "x", "orders"
	if _, err := e.q.Register(e.ctx, e.orders.Prefix, "a", []queue.Layout{reg}); err != nil {
		t.Fatal(err)
	}
	e.mustRun("", "schedule", "orders", "--id", "o-1", "--in", "1h", "body")
	if _, err := e.q.Get(e.ctx, e.orders, "o-1"); err != nil {
		t.Errorf("Get(o-1) after schedule: %v", err)
	}
	if out := e.mustRun("", "stats"); !strings.Contains(out, "orders") {
		t.Errorf("stats without topic variables:\n%s", out)
	}
	if code, _, errs := e.run("", "schedule", "legacy", "x"); code != exitConfig || !strings.Contains(errs, "registered: orders") {
		t.Errorf("schedule on an unregistered topic: exit %d, stderr %s", code, errs)
	}
}

func TestScheduleCommandRefusesSettingsThatDisagreeWithTheRegistry(t *testing.T) {
	e := newCLIEnv(t) // orders: 4 slots here
	reg := queue.LayoutOf(e.orders)
	reg.Slots = 8
	if _, err := e.q.Register(e.ctx, e.orders.Prefix, "a", []queue.Layout{reg}); err != nil {
		t.Fatal(err)
	}
	code, _, errs := e.run("", "schedule", "orders", "--id", "o-1", "body")
	if code != exitConfig || !strings.Contains(errs, "local settings (slots=4 format=envelope)") ||
		!strings.Contains(errs, "(slots=8 format=envelope)") {
		t.Errorf("schedule: exit %d, stderr %s", code, errs)
	}
}
