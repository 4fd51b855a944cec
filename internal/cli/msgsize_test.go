package cli

import (
	"strings"
	"testing"

	"github.com/delaybridge/delaybridge/queue"
)

// TestScheduleOverTheMessageSizeLimitExits1: schedule and recur set refuse a
// body over the topic's message size limit with exit 1, naming the size,
// the limit and the variable, and write nothing; the limit of a topic known
// only from the registry is its own variable's too.
func TestScheduleOverTheMessageSizeLimitExits1(t *testing.T) {
	e := newCLIEnv(t)
	t.Setenv("DELAYBRIDGE_TOPIC_ORDERS_MAX_MESSAGE_SIZE", "8")
	t.Setenv("DELAYBRIDGE_TOPIC_REG_MAX_MESSAGE_SIZE", "5")
	reg := queue.Layout{Version: queue.LayoutVersion, Name: "reg", Slots: 1, Format: queue.FormatRaw, Sink: "amqp"}
	if _, err := e.q.Register(e.ctx, e.orders.Prefix, "test-replica", []queue.Layout{reg}); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"schedule", "orders", "--id", "big", "123456789"},
		{"recur", "set", "orders", "big", "@daily", "123456789"},
		{"schedule", "reg", "123456"},
	} {
		code, out, errs := e.run("", args...)
		if code != exitFail {
			t.Errorf("%v: exit %d, want 1\nstdout: %s\nstderr: %s", args, code, out, errs)
		}
		if !strings.Contains(errs, "over the topic's message size limit") || !strings.Contains(errs, "DELAYBRIDGE_MAX_MESSAGE_SIZE") {
			t.Errorf("%v: stderr %q does not name the limit and its variable", args, errs)
		}
	}
	if keys := e.rdb.Keys(e.ctx, e.orders.Prefix+":{*").Val(); len(keys) != 0 {
		t.Errorf("refused, yet Redis holds %v", keys)
	}
	e.mustRun("", "schedule", "orders", "--id", "fits", "12345678")
}
