package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/queue"
)

// fillForStats leaves in orders' slot of id "a": 1 overdue (2 min late),
// 1 future (in 1h), 1 in flight and 1 dead message, and 1 overdue in legacy.
func fillForStats(e *cliEnv) int {
	e.t.Helper()
	slot := e.orders.SlotOfID("a")
	same := func(prefix string) string { // another id in the same slot
		for i := 0; ; i++ {
			id := prefix + strings.Repeat("x", i)
			if e.orders.SlotOfID(id) == slot {
				return id
			}
		}
	}
	e.kill(e.orders, queue.Message{ID: "a", Body: []byte("dead")}, "rejected")
	if _, err := e.q.Schedule(e.ctx, e.orders, queue.Message{ID: same("b"), Body: []byte("x")}, queue.In(-time.Second)); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.q.Claim(e.ctx, e.orders, slot, 1, time.Minute); err != nil {
		e.t.Fatal(err)
	}
	e.q.Schedule(e.ctx, e.orders, queue.Message{ID: same("c"), Body: []byte("x")}, queue.In(-2*time.Minute))
	e.q.Schedule(e.ctx, e.orders, queue.Message{ID: same("d"), Body: []byte("x")}, queue.In(time.Hour))
	e.q.Schedule(e.ctx, e.legacy, queue.Message{Body: []byte("old")}, queue.In(-time.Second))
	return slot
}

func TestStatsCommandPrintsATableOfEveryTopicAndBusySlotWithin100Columns(t *testing.T) {
	e := newCLIEnv(t)
	slot := fillForStats(e)
	out := e.mustRun("", "stats")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for _, l := range lines {
		if n := len([]rune(l)); n > 100 {
			t.Errorf("line of %d columns: %q", n, l)
		}
	}
	want := []string{
		"TOPIC SLOT SCHEDULED OVERDUE RETRYING IN FLIGHT DEAD PAUSED NEXT DUE OLDEST OVERDUE",
		"orders all 2 1 0 1 1 - in ",
		"orders " + string(rune('0'+slot)) + " 2 1 0 1 1 - in ",
		"legacy all 1 1 0 0 0 - -",
	}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), out)
	}
	for i, w := range want {
		if got := strings.Join(strings.Fields(lines[i]), " "); !strings.HasPrefix(got, w) {
			t.Errorf("line %d = %q, want it to start %q", i, got, w)
		}
	}
	f := strings.Fields(lines[1])
	if next := f[len(f)-2]; next != "1h0m" && next != "59m59s" {
		t.Errorf("next due in %q, want 1h", next)
	}
	if oldest := f[len(f)-1]; oldest != "2m0s" && oldest != "2m1s" {
		t.Errorf("oldest overdue %q, want 2m", oldest)
	}
	all := e.mustRun("", "stats", "--all-slots", "orders")
	if n := len(strings.Split(strings.TrimSpace(all), "\n")); n != 1+1+4 {
		t.Errorf("--all-slots orders: %d lines, want header, total and 4 slots:\n%s", n, all)
	}
}

func TestStatsCommandJSONHasEverySlot(t *testing.T) {
	e := newCLIEnv(t)
	slot := fillForStats(e)
	out := e.mustRun("", "stats", "--json", "orders")
	var res struct {
		Topics []struct {
			Topic string
			Total struct {
				Scheduled, Overdue, Inflight, Dead int64
				NextDue                            *string `json:"next_due"`
				AgeMS                              int64   `json:"oldest_overdue_age_ms"`
			}
			Slots []struct {
				Slot      int
				Scheduled int64
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%q: %v", out, err)
	}
	if len(res.Topics) != 1 || len(res.Topics[0].Slots) != 4 {
		t.Fatalf("JSON %s", out)
	}
	tot := res.Topics[0].Total
	if tot.Scheduled != 2 || tot.Overdue != 1 || tot.Inflight != 1 || tot.Dead != 1 || tot.NextDue == nil || tot.AgeMS < 119_000 {
		t.Errorf("total %+v", tot)
	}
	if res.Topics[0].Slots[slot].Scheduled != 2 {
		t.Errorf("slot %d: %+v", slot, res.Topics[0].Slots[slot])
	}
}

func TestStatsWatchRefreshesUntilInterrupted(t *testing.T) {
	e := newCLIEnv(t)
	var out, errb syncBuffer
	ctx, cancel := context.WithCancel(e.ctx)
	done := make(chan int)
	go func() {
		done <- runStats(ctx, []string{"--watch", "--interval", "10ms", "legacy"}, stdio{in: strings.NewReader(""), out: &out, err: &errb})
	}()
	deadline := time.Now().Add(30 * time.Second)
	for strings.Count(out.String(), "TOPIC") < 3 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if code := <-done; code != exitOK {
		t.Errorf("exit %d, stderr %q", code, errb.String())
	}
	if n := strings.Count(out.String(), "delaybridge stats at"); n < 3 {
		t.Errorf("%d refreshes, want at least 3:\n%s", n, out.String())
	}
}

func TestStatsCommandRefusesAnUnknownTopic(t *testing.T) {
	e := newCLIEnv(t)
	if code, _, errs := e.run("", "stats", "nope"); code != exitConfig || !strings.Contains(errs, `unknown topic "nope"`) {
		t.Errorf("exit %d, %q", code, errs)
	}
}

func TestStatsTableStaysAlignedForLongTopicNames(t *testing.T) {
	now := time.Now()
	topics := []queue.Topic{{Name: "a"}, {Name: strings.Repeat("very-long-topic-name-", 3)}}
	all := [][]queue.SlotStats{
		{{Now: now, Scheduled: 1234567, Retrying: 3, Pause: queue.PauseState{Paused: true}}},
		{{Now: now, Scheduled: 5, NextDue: now.Add(time.Hour)}},
	}
	var b strings.Builder
	if err := printStats(&b, topics, all, false, false, nil); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	col := strings.Index(lines[0], "SCHEDULED")
	for _, l := range lines[1:] {
		if l[col-2:col] != "  " || l[col] == ' ' {
			t.Errorf("SCHEDULED column not at %d in %q:\n%s", col, l, b.String())
		}
	}
	if !strings.Contains(lines[1], "1,234,567") || !strings.Contains(lines[1], "yes") {
		t.Errorf("row %q lacks the count or the pause", lines[1])
	}
}
