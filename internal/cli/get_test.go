package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/queue"
)

type getOut struct {
	Topic string `json:"topic"`
	entryJSON
	Body    *string `json:"body"`
	BodyB64 *string `json:"body_b64"`
}

func (e *cliEnv) get(wantCode int, args ...string) getOut {
	e.t.Helper()
	code, out, errs := e.run("", append([]string{"get", "--json"}, args...)...)
	if code != wantCode {
		e.t.Fatalf("get %v: exit %d, want %d\n%s%s", args, code, wantCode, out, errs)
	}
	var g getOut
	if err := json.Unmarshal([]byte(out), &g); err != nil {
		e.t.Fatalf("get %v: %v\n%s", args, err, out)
	}
	return g
}

func TestGetShowsEveryState(t *testing.T) {
	e := newCLIEnv(t)
	sched := func(id string, in time.Duration) queue.Receipt {
		r, err := e.q.Schedule(e.ctx, e.orders, queue.Message{ID: id, Body: []byte("body of " + id)}, queue.In(in))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	sched("waiting", time.Hour)
	e.kill(e.orders, queue.Message{ID: "poison", Body: []byte("p")}, "rejected")
	r := sched("failing", -time.Second)
	c, _ := e.q.Claim(e.ctx, e.orders, r.Slot, 10, time.Minute)
	for _, m := range c.Messages {
		e.q.Retry(e.ctx, e.orders, r.Slot, queue.Failure{Member: m.Member, Backoff: time.Hour, Reason: "nack: no route"}, 10)
	}
	r = sched("flying", -time.Second)
	e.q.Claim(e.ctx, e.orders, r.Slot, 10, time.Minute)

	for id, want := range map[string]string{"waiting": "scheduled", "poison": "dead", "failing": "retrying", "flying": "inflight"} {
		g := e.get(exitOK, "orders", "--id", id)
		if g.State != want || g.ID != id || g.Slot != e.orders.SlotOfID(id) {
			t.Errorf("%s: %+v, want %s", id, g, want)
		}
		if want != "dead" && g.Due == nil {
			t.Errorf("%s: no due time", id)
		}
		if want == "inflight" && g.LeaseUntil == nil {
			t.Errorf("%s: no lease", id)
		}
	}
	if g := e.get(exitOK, "orders", "--id", "failing"); g.Attempts != 1 || g.LastError != "nack: no route" || g.Body == nil || *g.Body != "body of failing" {
		t.Errorf("failing: %+v", g)
	}
	if g := e.get(exitFail, "orders", "--id", "never"); g.State != "absent" {
		t.Errorf("never: %+v", g)
	}
	out := e.mustRun("", "get", "orders", "--id", "failing")
	for _, w := range []string{"state", "retrying", "last error", "nack: no route", "attempts"} {
		if !strings.Contains(out, w) {
			t.Errorf("text output lacks %q:\n%s", w, out)
		}
	}
}

func TestGetReadsARawMemberFromAFile(t *testing.T) {
	e := newCLIEnv(t)
	member := []byte("\x00\xffraw payload")
	e.q.ScheduleMember(e.ctx, e.legacy, member, queue.In(time.Minute))
	file := filepath.Join(t.TempDir(), "member")
	os.WriteFile(file, member, 0o600)
	g := e.get(exitOK, "legacy", "--member-file", file)
	if g.State != "scheduled" || g.ID != queue.MessageID(member) || g.MemberB64 == nil || g.BodyB64 == nil {
		t.Errorf("raw member: %+v", g)
	}
	code, out, _ := e.run(string(member), "get", "legacy", "--member-file", "-")
	if code != exitOK || !strings.Contains(out, "scheduled") {
		t.Errorf("from stdin: exit %d\n%s", code, out)
	}
}

func TestGetErrors(t *testing.T) {
	e := newCLIEnv(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"get", "orders"}, "exactly one of --id, --member or --member-file"},
		{[]string{"get", "orders", "--id", "a", "--member-file", "f"}, "exactly one of --id, --member or --member-file"},
		{[]string{"get", "--id", "a"}, "want exactly one TOPIC"},
		{[]string{"get", "nosuch", "--id", "a"}, "unknown topic"},
		{[]string{"get", "legacy", "--member-file", filepath.Join(t.TempDir(), "missing")}, "read --member-file"},
	} {
		code, _, errs := e.run("", c.args...)
		if code != exitConfig || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, code, errs, c.want)
		}
	}
}
