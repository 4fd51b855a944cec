package cli

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/membership"
	"github.com/delaybridge/delaybridge/queue"
)

// TestTopicsPurgeDeletesOneTopicsDataAfterAConfirmation: topics forget left
// a topic's messages, index keys and delivered set (a user deleted 7 keys
// by hand). purge asks first ("n" changes nothing), is refused while a
// live replica forwards the topic, and then deletes every key of the topic
// (scheduled, dead, ids, recurrence, pause) and nothing of another topic.
func TestTopicsPurgeDeletesOneTopicsDataAfterAConfirmation(t *testing.T) {
	e := newCLIEnv(t)
	prefix := e.orders.Prefix
	e.mustRun("", "topics", "set", "orders", "--format", "envelope", "--slots", "4", "--yes")
	e.mustRun("", "schedule", "orders", "--in", "1h", "--id", "order-1", `{"order":1}`)
	e.mustRun("", "schedule", "orders", "--in", "2h", "--id", "order-2", `{"order":2}`)
	e.kill(e.orders, queue.Message{ID: "order-3", Body: []byte("x")}, "NO_ROUTE")
	e.mustRun("", "recur", "set", "orders", "hb", "@every 1h", "ping")
	e.mustRun("", "pause", "orders")
	e.mustRun("", "schedule", "legacy", "--in", "1h", "keep me")
	keysOf := func(pattern string) []string {
		t.Helper()
		ks, err := e.rdb.Keys(e.ctx, pattern).Result()
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(ks)
		return ks
	}
	legacy := keysOf(prefix + ":{legacy*")
	if len(keysOf(prefix+":{orders*")) < 5 || len(legacy) == 0 {
		t.Fatalf("the setup wrote orders keys %q and legacy keys %q", keysOf(prefix+":{orders*"), legacy)
	}

	if code, out, _ := e.run("n\n", "topics", "purge", "orders"); code != exitFail || !strings.Contains(out, "proceed?") || !strings.Contains(out, "nothing changed") {
		t.Errorf("purge answered n: exit %d, want %d and nothing changed:\n%s", code, exitFail, out)
	}
	live := []string{"pod-a", "pod-b"}
	for _, id := range live {
		if _, err := membership.New(e.q).Heartbeat(e.ctx, prefix, id, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	for id, topics := range map[string][]string{"pod-a": {"legacy", "orders"}, "pod-b": {"legacy"}} {
		if err := membership.New(e.q).ReportServed(e.ctx, prefix, id, topics, live, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	if code, _, errs := e.run("", "topics", "purge", "orders", "--yes"); code != exitFail || !strings.Contains(errs, "forwarded by live replica(s) pod-a") || !strings.Contains(errs, "nothing was deleted") {
		t.Errorf("purge while pod-a forwards orders: exit %d, want %d naming pod-a:\n%s", code, exitFail, errs)
	}
	if n := len(keysOf(prefix + ":{orders*")); n < 5 {
		t.Fatalf("a refused or unconfirmed purge deleted orders keys: %d left", n)
	}
	if _, err := membership.New(e.q).Leave(e.ctx, prefix, "pod-a"); err != nil {
		t.Fatal(err)
	}

	out := e.mustRun("", "topics", "purge", "orders", "--yes")
	if !strings.Contains(out, "done: delete topic orders's data") {
		t.Errorf("purge said %q", out)
	}
	if left := keysOf(prefix + ":{orders*"); len(left) != 0 {
		t.Errorf("purge left orders keys %q", left)
	}
	if got := keysOf(prefix + ":{legacy*"); !slices.Equal(got, legacy) {
		t.Errorf("purge of orders touched legacy: keys %q, were %q", got, legacy)
	}
	if !e.rdb.HExists(e.ctx, queue.TopicsKey(prefix), "orders").Val() {
		t.Error("purge removed orders' registry entry; forget does that")
	}
	if out := e.mustRun("", "topics", "purge", "orders", "--yes"); !strings.Contains(out, "holds nothing") {
		t.Errorf("a second purge said %q", out)
	}
}
