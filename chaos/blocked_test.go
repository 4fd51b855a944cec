package chaos

import (
	"context"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/internal/testing/e2etest"
)

// TestRabbitMQMemoryAlarmHoldsThePipeline: RabbitMQ blocks every publishing
// connection while a memory alarm lasts (connection.blocked). The alarm is
// raised on a node of the test's own (it would block every other test's
// publishers on the shared broker) for longer than the lease, mid-stream:
// nothing more is claimed, the leases of what is in flight are kept (no
// duplicate from the reaper), no attempt is used and nothing is
// dead-lettered; /readyz answers 503 and delaybridge_sink_blocked names the
// reason; one WARN marks the start and one the end; once the alarm lifts
// everything is delivered, nothing early.
func TestRabbitMQMemoryAlarmHoldsThePipeline(t *testing.T) {
	t.Parallel()
	r := report(t, "2c rabbitmq-memory-alarm")
	node := e2etest.StartRabbitNode(t)
	name := e2etest.Unique(t)
	b := newBridgeOn(t, name, defaultSlots, e2etest.NewRabbitAt(t, node.URL, name, nil), node.URL)
	const lease = 2 * time.Second
	b.set("DELAYBRIDGE_LEASE", lease.String(), "DELAYBRIDGE_MAX_ATTEMPTS", "1")
	b.mq.Consume(t)
	ctx := context.Background()
	watermark, err := node.Ctl(ctx, "eval", "vm_memory_monitor:get_vm_memory_high_watermark().")
	if err != nil {
		t.Fatal(err)
	}
	restore := func() {
		if _, err := node.Ctl(context.Background(), "set_vm_memory_high_watermark", watermark); err != nil {
			t.Errorf("restore the memory watermark: %v", err)
		}
	}
	t.Cleanup(restore) // every exit path; the node is the test's own anyway

	start := time.Now()
	plan := e2etest.NewPlan(3000, start.Add(2*time.Second), 14*time.Second)
	plan.Schedule(t, b.rdb, b.topic, e2etest.RawMember, nil)
	d := b.start()

	until(start.Add(5 * time.Second))
	if _, err := node.Ctl(ctx, "set_vm_memory_high_watermark", "0.0000001"); err != nil {
		t.Fatal(err)
	}
	blockedAt := time.Now()
	e2etest.WaitFor(t, 10*time.Second, "/readyz 503 naming the block", func() bool {
		code, body, err := e2etest.Get(ctx, d.Addr(), "/readyz")
		return err == nil && code == http.StatusServiceUnavailable && strings.Contains(body, "broker blocks publishing: low on memory")
	})
	e2etest.WaitFor(t, 5*time.Second, "delaybridge_sink_blocked naming the reason", func() bool {
		return metric(t, d, `delaybridge_sink_blocked{reason="low on memory",topic="orders"}`) == 1
	})
	claimedBefore := metric(t, d, `delaybridge_claimed_total{topic="orders"}`)
	until(blockedAt.Add(3 * lease)) // leases of what is in flight must be kept meanwhile
	if claimed := metric(t, d, `delaybridge_claimed_total{topic="orders"}`); claimed != claimedBefore {
		t.Errorf("claimed %v messages while the broker blocked publishing, want none", claimed-claimedBefore)
	}
	if reaped := metric(t, d, `delaybridge_reaped_total{topic="orders"}`); reaped != 0 {
		t.Errorf("the reaper took back %v leases during the block: their batches were still in flight", reaped)
	}
	restore()
	lifted := time.Now()

	b.settle(plan, b.mq.Deliveries, false, 60*time.Second)
	o := plan.Count(b.mq.Deliveries(), nil)
	dead, _ := e2etest.DeadNumbers(t, b.rdb, b.topic)
	r.count(t, o, "alarm "+ms(lifted.Sub(blockedAt))+", lease "+ms(lease)+"; backlog delivered "+
		ms(drained(plan, o, lifted).Sub(lifted))+" after the alarm lifted")
	if o.Duplicates > 0 || len(dead) > 0 {
		t.Errorf("%d duplicates and %d dead-lettered across a broker block, want none", o.Duplicates, len(dead))
	}
	if got := drained(plan, o, lifted).Sub(lifted); got > 10*time.Second {
		t.Errorf("the backlog took %s to arrive after the alarm lifted", got)
	}
	if n := metric(t, d, `delaybridge_sink_blocked{reason="low on memory",topic="orders"}`); n != 0 {
		t.Errorf("delaybridge_sink_blocked still %v after the block lifted", n)
	}
	starts := len(d.Records("amqp broker blocks publishing: claiming nothing for its topics until it lifts; in-flight messages keep their leases"))
	ends := len(d.Records("amqp broker lifted its block: claiming again"))
	if starts != 1 || ends != 1 || strings.Contains(d.Log(), `"msg":"sink not connected, not claiming"`) {
		t.Errorf("%d WARNs at the block's start and %d at its end, want one each and no per-slot warning; log tail:\n%s", starts, ends, d.Tail(40))
	}
	stop(t, d)
	b.expectDrained()
}

// metric reads one sample of the daemon's /metrics (0 when absent).
func metric(t *testing.T, d *e2etest.Daemon, series string) float64 {
	t.Helper()
	_, body, err := e2etest.Get(context.Background(), d.Addr(), "/metrics")
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`).FindStringSubmatch(body)
	if m == nil {
		return 0
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatalf("parse %s: %v", series, err)
	}
	return v
}
