package cli

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/queue"
)

func TestDeadListCommandShowsReasonsNewestFirst(t *testing.T) {
	e := newCLIEnv(t)
	e.kill(e.orders, queue.Message{ID: "first", Body: []byte("x")}, "NO_ROUTE: exchange orders")
	time.Sleep(2 * time.Millisecond)
	e.kill(e.orders, queue.Message{ID: "second", Body: []byte{0xff}}, "message too large")
	e.kill(e.legacy, queue.Message{Body: []byte("raw body")}, "nack")

	out := e.mustRun("", "dead", "list", "orders")
	if i, j := strings.Index(out, "id second"), strings.Index(out, "id first"); i < 0 || j < 0 || i > j {
		t.Errorf("want second before first:\n%s", out)
	}
	for _, want := range []string{"reason: NO_ROUTE: exchange orders", "reason: message too large", "orders: 2 dead, 2 shown"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	out = e.mustRun("", "dead", "list", "--json", "--limit", "1")
	var res struct {
		Messages []struct {
			Topic, ID, Reason string
			Member            *string
			MemberB64         *string `json:"member_b64"`
		}
		Dead map[string]int64
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%q: %v", out, err)
	}
	if len(res.Messages) != 2 || res.Dead["orders"] != 2 || res.Dead["legacy"] != 1 {
		t.Fatalf("JSON %s", out)
	}
	if m := res.Messages[0]; m.ID != "second" || m.Member == nil || !strings.Contains(*m.Member, "body_b64") {
		t.Errorf("orders entry %+v", m)
	}
	if m := res.Messages[1]; m.Topic != "legacy" || m.ID != queue.MessageID([]byte("raw body")) || *m.Member != "raw body" {
		t.Errorf("legacy entry %+v", m)
	}
	out = e.mustRun("", "dead", "list", "orders", "--id", "first")
	if !strings.Contains(out, "id first") || strings.Contains(out, "id second") {
		t.Errorf("--id first:\n%s", out)
	}
}

func TestDeadRequeueCommandPutsTheMessageBackWithAttemptsReset(t *testing.T) {
	e := newCLIEnv(t)
	r, _ := e.q.Schedule(e.ctx, e.orders, queue.Message{ID: "a", Body: []byte("x")}, queue.In(-time.Second))
	for range 3 { // three failed attempts, the last one kills it
		deadline := time.Now().Add(30 * time.Second)
		for {
			c, _ := e.q.Claim(e.ctx, e.orders, r.Slot, 1, time.Minute)
			if len(c.Messages) == 1 || time.Now().After(deadline) {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		e.q.Retry(e.ctx, e.orders, r.Slot, queue.Failure{Member: r.Member, Backoff: time.Millisecond, Reason: "nack"}, 3)
	}
	if n, _ := e.q.DeadCount(e.ctx, e.orders); n != 1 {
		t.Fatalf("%d dead, want 1", n)
	}
	out := e.mustRun("", "dead", "requeue", "orders", "--id", "a")
	if !strings.Contains(out, "requeued 1 dead message,") {
		t.Errorf("output %q", out)
	}
	info, err := e.q.Get(e.ctx, e.orders, "a")
	if err != nil || info.State != queue.StateScheduled || info.Attempts != 0 || time.Since(info.Due) > time.Minute {
		t.Errorf("Get = %+v, %v; want scheduled now with 0 attempts", info, err)
	}
	if code, _, errs := e.run("", "dead", "requeue", "orders", "--id", "a"); code != exitFail || !strings.Contains(errs, "no such message") {
		t.Errorf("second requeue: exit %d, %q", code, errs)
	}

	e.kill(e.legacy, queue.Message{Body: []byte("r1")}, "x")
	e.kill(e.orders, queue.Message{ID: "b", Body: []byte("y")}, "x")
	out = e.mustRun("", "dead", "requeue", "--all", "--json")
	var res map[string]map[string]int
	if err := json.Unmarshal([]byte(out), &res); err != nil || res["legacy"]["requeued"] != 1 || res["orders"]["requeued"] != 1 {
		t.Errorf("requeue --all JSON %q: %v", out, err)
	}
}

func TestDeadPurgeCommandAsksForConfirmation(t *testing.T) {
	e := newCLIEnv(t)
	e.kill(e.orders, queue.Message{ID: "a", Body: []byte("x")}, "r")
	e.kill(e.orders, queue.Message{ID: "b", Body: []byte("x")}, "r")
	e.kill(e.legacy, queue.Message{Body: []byte("m")}, "r")

	code, _, errs := e.run("n\n", "dead", "purge", "orders", "--all")
	if code != exitFail || !strings.Contains(errs, "purge 2 dead messages of orders for good?") || !strings.Contains(errs, "nothing purged") {
		t.Errorf("answer n: exit %d, %q", code, errs)
	}
	if code, _, errs := e.run("", "dead", "purge", "orders", "--all"); code != exitFail || !strings.Contains(errs, "--yes") {
		t.Errorf("no answer: exit %d, %q", code, errs)
	}
	if n, _ := e.q.DeadCount(e.ctx, e.orders); n != 2 {
		t.Fatalf("%d dead after refusals, want 2", n)
	}
	out := e.mustRun("yes\n", "dead", "purge", "orders", "--id", "a")
	if !strings.Contains(out, "purged 1") {
		t.Errorf("purge --id: %q", out)
	}
	out = e.mustRun("", "dead", "purge", "--all", "--yes")
	if !strings.Contains(out, "orders: purged 1") || !strings.Contains(out, "legacy: purged 1") {
		t.Errorf("purge --all --yes: %q", out)
	}
	if out := e.mustRun("", "dead", "purge", "--all"); !strings.Contains(out, "nothing to purge") {
		t.Errorf("empty purge: %q", out)
	}
}

func TestDeadCommandRefusesBadUsageWithExit2(t *testing.T) {
	e := newCLIEnv(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"dead"}, "want list, requeue or purge"},
		{[]string{"dead", "bury"}, `unknown command "bury"`},
		{[]string{"dead", "requeue", "orders"}, "exactly one of --id, --member or --all"},
		{[]string{"dead", "purge", "orders", "--id", "a", "--all"}, "exactly one of"},
		{[]string{"dead", "requeue", "--id", "a"}, "need exactly one TOPIC"},
		{[]string{"dead", "list", "nope"}, `unknown topic "nope"`},
		{[]string{"dead", "list", "orders", "--slot", "9"}, "has no slot 9"},
	} {
		code, _, errs := e.run("", tc.args...)
		want := exitConfig
		if tc.args[len(tc.args)-1] == "9" {
			want = exitFail // a slot that does not exist is found out by the queue
		}
		if code != want || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.args, code, errs, want, tc.want)
		}
	}
}
