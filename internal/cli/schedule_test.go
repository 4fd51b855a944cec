package cli

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/delaybridge/delaybridge/queue"
)

func TestScheduleCommandSchedulesAnEnvelopeWithIDHeadersAndRoutingKey(t *testing.T) {
	e := newCLIEnv(t)
	out := e.mustRun("", "schedule", "orders", "--in", "30m", "--id", "order-42", "--header", "tenant=eu-1",
		"--header", "kind=timeout", "--routing-key", "orders.eu", "--key", "tenant-eu-1", `{"order":42}`)
	if !strings.Contains(out, "scheduled order-42 on orders") || !strings.Contains(out, "in 30m") {
		t.Errorf("output %q", out)
	}
	info, err := e.q.Get(e.ctx, e.orders, "order-42")
	if err != nil {
		t.Fatal(err)
	}
	want := queue.Message{ID: "order-42", Body: []byte(`{"order":42}`),
		Headers: map[string]string{"tenant": "eu-1", "kind": "timeout"}, RoutingKey: "orders.eu", Key: "tenant-eu-1"}
	if diff := cmp.Diff(want, info.Message); diff != "" {
		t.Errorf("message (-want +got):\n%s", diff)
	}
	if d := time.Until(info.Due); d < 29*time.Minute || d > 31*time.Minute {
		t.Errorf("due in %v, want 30m", d)
	}
}

func TestScheduleCommandSameIDTwiceKeepsOneMessageAtTheLaterTime(t *testing.T) {
	e := newCLIEnv(t)
	e.mustRun("", "schedule", "orders", "--at", "2030-01-01T00:00:00Z", "--id", "a", "v1")
	out := e.mustRun("", "schedule", "orders", "--at", "2030-06-01T00:00:00Z", "--id", "a", "v2")
	if !strings.Contains(out, "replaced the message scheduled before") {
		t.Errorf("output %q does not say it replaced", out)
	}
	var total int64
	for s := range 4 {
		n, _ := e.rdb.ZCard(e.ctx, e.orders.Keys(s).Scheduled).Result()
		total += n
	}
	info, err := e.q.Get(e.ctx, e.orders, "a")
	if total != 1 || err != nil || string(info.Message.Body) != "v2" || info.Due.UTC().Format(time.RFC3339) != "2030-06-01T00:00:00Z" {
		t.Errorf("%d scheduled; Get = %+v, %v", total, info, err)
	}
}

func TestScheduleCommandReadsABinaryBodyFromStdin(t *testing.T) {
	e := newCLIEnv(t)
	body := "\x00\x01\xff\xfe binary"
	out := e.mustRun(body, "schedule", "orders", "--id", "bin", "--json")
	var res map[string]any
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("output %q is not JSON: %v", out, err)
	}
	if res["id"] != "bin" || res["topic"] != "orders" || res["replaced"] != "nothing" || res["due"] == nil {
		t.Errorf("JSON %v", res)
	}
	info, err := e.q.Get(e.ctx, e.orders, "bin")
	if err != nil || string(info.Message.Body) != body || !strings.Contains(info.Member, "body_b64") {
		t.Errorf("Get = %+v, %v", info, err)
	}
	if d := time.Since(info.Due); d < -time.Minute || d > time.Minute {
		t.Errorf("due %v, want now", info.Due)
	}

	e.mustRun("", "schedule", "legacy", "--in", "1h", "--base64", "AAH/")
	if _, err := e.rdb.ZScore(e.ctx, e.legacy.Keys(0).Scheduled, "\x00\x01\xff").Result(); err != nil {
		t.Errorf("raw --base64 body not scheduled byte for byte: %v", err)
	}
}

func TestScheduleCommandWithoutIDOnEnvelopeTopicMakesOneUp(t *testing.T) {
	e := newCLIEnv(t)
	out := e.mustRun("", "schedule", "--json", "orders", "--in", "1h", "--", "-starts-with-dash")
	var res struct{ ID string }
	json.Unmarshal([]byte(out), &res)
	info, err := e.q.Get(e.ctx, e.orders, res.ID)
	if len(res.ID) != 32 || err != nil || string(info.Message.Body) != "-starts-with-dash" {
		t.Errorf("id %q: Get = %+v, %v", res.ID, info, err)
	}
}

func TestScheduleCommandOnARawTopicSchedulesTheBodyAsTheMember(t *testing.T) {
	e := newCLIEnv(t)
	out := e.mustRun("", "schedule", "legacy", "--at", "4102444800000", `{"order":1}`)
	if !strings.Contains(out, queue.MessageID([]byte(`{"order":1}`))) {
		t.Errorf("output %q does not show the message id", out)
	}
	s, err := e.rdb.ZScore(e.ctx, e.legacy.Keys(0).Scheduled, `{"order":1}`).Result()
	if err != nil || s != 4102444800000 {
		t.Errorf("score %v, %v", s, err)
	}
}

func TestScheduleCommandRefusesBadUsageWithExit2(t *testing.T) {
	e := newCLIEnv(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"schedule"}, "want TOPIC"},
		{[]string{"schedule", "orders", "a", "b"}, "want TOPIC"},
		{[]string{"schedule", "nope", "x"}, `unknown topic "nope"`},
		{[]string{"schedule", "orders", "--at", "2030-01-01T00:00:00Z", "--in", "1h", "x"}, "not both"},
		{[]string{"schedule", "orders", "--at", "tomorrow", "x"}, "RFC 3339"},
		{[]string{"schedule", "orders", "--in", "soon", "x"}, "not a duration"},
		{[]string{"schedule", "orders", "--at", "1960-01-01T00:00:00Z", "--id", "a", "x"}, "before 1970"},
		{[]string{"schedule", "legacy", "--id", "a", "x"}, "not in envelope format"},
		{[]string{"schedule", "orders", "--id", strings.Repeat("i", 256), "x"}, "more than 255"},
		{[]string{"schedule", "orders", "--id", "~kafka:orders/0/1", "x"}, "reserved for the ids intakes generate"},
		{[]string{"schedule", "orders", "--header", "novalue", "x"}, "name=value"},
		{[]string{"schedule", "orders", "--bogus", "x"}, "unknown flag --bogus"},
		{[]string{"schedule", "orders", "--in"}, "flag --in needs a value"},
		{[]string{"schedule", "orders", "--id", "e"}, "the body is empty: give --empty"},
		{[]string{"schedule", "orders", "--id", "e", ""}, "the body is empty: give --empty"},
		{[]string{"schedule", "orders", "--base64", "!!"}, "not standard base64"},
	} {
		code, out, errs := e.run("", tc.args...)
		if code != exitConfig || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, code, errs, tc.want)
		}
		if out != "" {
			t.Errorf("%v: wrote %q to stdout", tc.args, out)
		}
		// One line that says what is wrong, one that says where help is.
		if lines := strings.Split(strings.TrimSuffix(errs, "\n"), "\n"); len(lines) != 2 || lines[1] != "see 'delaybridge schedule --help'" {
			t.Errorf("%v: stderr %q, want the error and a hint, not the help", tc.args, errs)
		}
	}
	for s := range 4 {
		if n, _ := e.rdb.ZCard(e.ctx, e.orders.Keys(s).Scheduled).Result(); n != 0 {
			t.Errorf("refused commands scheduled %d messages", n)
		}
	}
}
