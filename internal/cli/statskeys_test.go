package cli

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/queue"
)

// newFairCLIEnv is newCLIEnv with orders fair.
func newFairCLIEnv(t *testing.T) *cliEnv {
	e := newCLIEnv(t)
	t.Setenv("DELAYBRIDGE_TOPIC_ORDERS_FAIR", "true")
	e.orders.Fair = true
	return e
}

// scheduleKeys schedules n messages of each key of orders, due in an hour.
func (e *cliEnv) scheduleKeys(counts map[string]int) {
	e.t.Helper()
	var items []queue.Item
	for k, n := range counts {
		for i := range n {
			items = append(items, queue.Item{Message: queue.Message{ID: fmt.Sprintf("%s-%d", k, i), Key: k, Body: []byte("x")}, When: queue.In(time.Hour)})
		}
	}
	if _, err := e.q.ScheduleBatch(e.ctx, e.orders, items); err != nil {
		e.t.Fatal(err)
	}
}

func TestStatsKeysListsTheKeysWithTheMostWaitingMostFirst(t *testing.T) {
	e := newFairCLIEnv(t)
	e.scheduleKeys(map[string]int{"acme": 1200, "globex": 30, "initech": 3, "": 5, "hooli": 1})

	out := e.mustRun("", "stats", "--keys", "--top", "3")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	want := []string{"TOPIC KEY SCHEDULED", "orders acme 1,200", "orders globex 30", "orders (no key) 5"}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), out)
	}
	for i, w := range want {
		if got := strings.Join(strings.Fields(lines[i]), " "); got != w {
			t.Errorf("line %d = %q, want %q", i, got, w)
		}
	}

	var got struct {
		Topics []struct {
			Topic    string           `json:"topic"`
			Top      []queue.KeyCount `json:"top"`
			KeySlots int64            `json:"key_slots"`
		} `json:"topics"`
	}
	if err := json.Unmarshal([]byte(e.mustRun("", "stats", "--keys", "--json", "orders")), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Topics) != 1 || len(got.Topics[0].Top) != 5 || got.Topics[0].Top[0] != (queue.KeyCount{Key: "acme", Count: 1200}) ||
		got.Topics[0].Top[4] != (queue.KeyCount{Key: "hooli", Count: 1}) {
		t.Errorf("--json: %+v", got)
	}
	if ks := got.Topics[0].KeySlots; ks < 5 || ks > 4*5 {
		t.Errorf("key_slots %d, want 5 keys over 4 slots (5…20)", ks)
	}
}

func TestStatsKeysOfATopicThatIsNotFairSaysHowToMakeItOne(t *testing.T) {
	e := newCLIEnv(t)
	code, _, errs := e.run("", "stats", "--keys", "orders")
	if code != exitFail || !strings.Contains(errs, "orders is not fair") || !strings.Contains(errs, "_FAIR=true") {
		t.Errorf("exit %d, stderr %q: want 1 and a message naming the setting", code, errs)
	}
	code, _, errs = e.run("", "stats", "--keys")
	if code != exitFail || !strings.Contains(errs, "no fair topic") {
		t.Errorf("no fair topic: exit %d, stderr %q", code, errs)
	}
	if code, _, _ := e.run("", "stats", "--keys", "--top", "0"); code != 2 {
		t.Errorf("--top 0: exit %d, want 2", code)
	}
}
