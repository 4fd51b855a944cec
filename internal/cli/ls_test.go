package cli

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delaybridge/delaybridge/queue"
)

type lsPage struct {
	Topic    string      `json:"topic"`
	State    string      `json:"state"`
	Messages []entryJSON `json:"messages"`
	Next     *string     `json:"next"`
}

func (e *cliEnv) ls(args ...string) lsPage {
	e.t.Helper()
	var p lsPage
	out := e.mustRun("", append([]string{"ls", "--json"}, args...)...)
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		e.t.Fatalf("ls %v: %v\n%s", args, err, out)
	}
	return p
}

func TestLsPagesOver100000WaitingMessagesReturningEachOnce(t *testing.T) {
	e := newCLIEnv(t)
	t.Setenv("DELAYBRIDGE_TOPICS", "orders,legacy,bulk")
	t.Setenv("DELAYBRIDGE_TOPIC_BULK_SLOTS", "8")
	bulk := queue.Topic{Name: "bulk", Prefix: e.orders.Prefix, Slots: 8}
	const n = 100_000
	due := float64(time.Now().Add(time.Hour).UnixMilli())
	for from := 0; from < n; from += 10_000 {
		pipe := e.rdb.Pipeline()
		for i := from; i < from+10_000; i++ {
			m := fmt.Sprintf("message %06d", i)
			pipe.ZAdd(e.ctx, bulk.Keys(queue.Slot([]byte(m), 8)).Scheduled, redis.Z{Score: due + float64(i/10), Member: m})
		}
		if _, err := pipe.Exec(e.ctx); err != nil {
			t.Fatal(err)
		}
	}
	loaded := time.Now()
	seen := make(map[string]int, n)
	cursor, pages := "", 0
	for {
		args := []string{"bulk", "--limit", "1000"}
		if cursor != "" {
			args = append(args, "--after", cursor)
		}
		p := e.ls(args...)
		pages++
		for _, m := range p.Messages {
			seen[m.BodyPreview]++
			if m.State != "scheduled" || m.DueMS == nil {
				t.Fatalf("entry %+v", m)
			}
		}
		if p.Next == nil {
			break
		}
		cursor = *p.Next
	}
	if len(seen) != n {
		t.Errorf("saw %d distinct messages, want %d", len(seen), n)
	}
	for m, c := range seen {
		if c != 1 {
			t.Errorf("%s listed %d times", m, c)
		}
	}
	t.Logf("%d pages in %s", pages, time.Since(loaded).Round(time.Millisecond))
}

func TestLsShowsStatesLastErrorsAndBinaryBodiesSafely(t *testing.T) {
	e := newCLIEnv(t)
	e.kill(e.orders, queue.Message{ID: "poison", Body: []byte("p")}, "rejected by broker")
	e.q.ScheduleMember(e.ctx, e.legacy, []byte("\xff\x00binary\nbody"), queue.In(time.Hour))
	out := e.mustRun("", "ls", "legacy")
	if !strings.Contains(out, `"\xff\x00binary\nbody"`) || !strings.Contains(out, "no more") {
		t.Errorf("ls legacy:\n%s", out)
	}
	dead := e.ls("orders", "--state", "dead")
	if len(dead.Messages) != 1 || dead.Messages[0].ID != "poison" || dead.Messages[0].LastError != "rejected by broker" || dead.Messages[0].Died == nil {
		t.Errorf("dead listing %+v", dead)
	}
	if p := e.ls("orders", "--state", "retrying"); len(p.Messages) != 0 || p.Next != nil {
		t.Errorf("retrying listing %+v, want empty", p)
	}
}

func TestLsErrors(t *testing.T) {
	e := newCLIEnv(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"ls"}, "want exactly one TOPIC"},
		{[]string{"ls", "nosuch"}, "unknown topic"},
		{[]string{"ls", "orders", "--state", "sleeping"}, `unknown --state "sleeping"`},
		{[]string{"ls", "orders", "--after", "not-a-cursor!"}, "bad cursor"},
		{[]string{"ls", "orders", "--after", "c2NoZWR1bGVkCjk5CgptZW1iZXI"}, "bad cursor"},
		{[]string{"ls", "orders", "--state", "dead", "--after", "c2NoZWR1bGVkCjAKCg"}, "bad cursor"},
		{[]string{"ls", "orders", "--limit", "0"}, "--limit 0"},
		{[]string{"ls", "orders", "--limit", "5000"}, "--limit 5000"},
		{[]string{"ls", "orders", "--due-before", "tomorrow"}, "--due-before"},
		{[]string{"ls", "orders", "--state", "dead", "--due-before", "0"}, "does not apply to dead"},
	} {
		code, _, errs := e.run("", c.args...)
		if code != exitConfig || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, code, errs, c.want)
		}
	}
}

func TestInspectionAndPauseCommandsPrintHelpWithJSON(t *testing.T) {
	for _, name := range []string{"ls", "get", "replicas", "pause", "resume"} {
		var out, errb strings.Builder
		code := dispatch(t.Context(), []string{name, "--help"}, stdio{in: strings.NewReader(""), out: &out, err: &errb})
		if code != exitOK || !strings.Contains(out.String(), "delaybridge "+name+" [flags] ") || !strings.Contains(out.String(), "-json") {
			t.Errorf("%s --help: exit %d\n%s", name, code, out.String())
		}
	}
}
