package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/internal/testing/redistest"
	"github.com/delaybridge/delaybridge/membership"
	"github.com/delaybridge/delaybridge/queue"
)

// TestLayoutMismatchNamesTheWayOutAndTopicsChangesTheRegistry: the README's
// "From the command line" after the quick start exited 2 on a registry
// holding the quick start's raw layout, without saying how to recover. The
// error names the way out; `topics` shows the registry and that this
// shell's settings differ; `topics set` changes it after a confirmation,
// refused while a replica is live; `topics forget` removes it.
func TestLayoutMismatchNamesTheWayOutAndTopicsChangesTheRegistry(t *testing.T) {
	rdb, prefix := redistest.New(t)
	ctx := context.Background()
	q := queue.New(rdb)
	t.Setenv("DELAYBRIDGE_REDIS_URL", redistest.URL())
	t.Setenv("DELAYBRIDGE_KEY_PREFIX", prefix)
	t.Setenv("DELAYBRIDGE_TOPICS", "orders")
	t.Setenv("DELAYBRIDGE_TOPIC_ORDERS_FORMAT", "envelope")
	quickStart := queue.Layout{Name: "orders", Slots: 1, Format: queue.FormatRaw, Sink: "amqp", RoutingKey: "orders"}
	if _, err := q.Register(ctx, prefix, "quick-start", []queue.Layout{quickStart}); err != nil {
		t.Fatal(err)
	}
	e := &cliEnv{t: t, ctx: ctx}
	code, _, errs := e.run("", "schedule", "orders", "--in", "30m", "--id", "order-42", "x")
	if code != exitConfig || !strings.Contains(errs, "restart every daemon replica with the new ones") || !strings.Contains(errs, "delaybridge topics set orders") {
		t.Fatalf("schedule against another layout: exit %d, want 2 naming the way out\nstderr: %s", code, errs)
	}
	if out := e.mustRun("", "topics"); !strings.Contains(out, "orders") || !strings.Contains(out, "format=raw") || !strings.Contains(out, "DIFFER (slots=1 format=envelope)") {
		t.Errorf("topics:\n%s", out)
	}
	if _, err := membership.New(q).Heartbeat(ctx, prefix, "live-replica", time.Minute); err != nil {
		t.Fatal(err)
	}
	code, _, errs = e.run("", "topics", "set", "orders", "--format", "envelope", "--yes")
	if code != exitFail || !strings.Contains(errs, "live replicas live-replica") {
		t.Fatalf("topics set with a live replica: exit %d, want 1 naming it\nstderr: %s", code, errs)
	}
	if _, err := membership.New(q).Leave(ctx, prefix, "live-replica"); err != nil {
		t.Fatal(err)
	}
	if code, out, _ := e.run("n\n", "topics", "set", "orders", "--format", "envelope"); code != exitFail || !strings.Contains(out, "nothing changed") {
		t.Fatalf("topics set answered no: exit %d\n%s", code, out)
	}
	if out := e.mustRun("y\n", "topics", "set", "orders", "--format", "envelope"); !strings.Contains(out, "slots=1 format=raw sink=amqp routing_key=orders -> slots=1 format=envelope sink=amqp routing_key=orders") {
		t.Errorf("topics set answered yes:\n%s", out)
	}
	e.mustRun("", "schedule", "orders", "--in", "30m", "--id", "order-42", "x")
	e.mustRun("", "topics", "forget", "orders", "--yes")
	if _, ok, err := q.Layout(ctx, prefix, "orders"); ok || err != nil {
		t.Errorf("orders still registered after forget (%v)", err)
	}
}

// TestUnknownTopicErrorSaysItOnce: the error said "not … registered in
// dq:topics" and then, from its cause, "topic is not in the registry".
func TestUnknownTopicErrorSaysItOnce(t *testing.T) {
	e := newCLIEnv(t)
	code, _, errs := e.run("", "stats", "nope")
	if code != exitConfig || !strings.Contains(errs, `unknown topic "nope"`) || strings.Contains(errs, "topic is not in the registry") {
		t.Errorf("stats of an unknown topic: exit %d, stderr %q", code, errs)
	}
}
