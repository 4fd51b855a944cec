package console_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delaybridge/delaybridge/console"
	"github.com/delaybridge/delaybridge/internal/testing/redistest"
	"github.com/delaybridge/delaybridge/queue"
)

// fixture is a console over a test prefix with two registered topics:
// "orders" (raw, 2 slots, amqp) and "events" (envelope, 1 slot).
type fixture struct {
	t      *testing.T
	rdb    *redis.Client
	q      *queue.Queue
	prefix string
	orders queue.Topic
	events queue.Topic
	srv    *console.Server
	token  string
}

func newFixture(t *testing.T, token string) *fixture {
	t.Helper()
	rdb := redistest.Connect(t)
	prefix := redistest.Prefix(t, rdb)
	q := queue.New(rdb)
	ls := []queue.Layout{
		{Version: queue.LayoutVersion, Name: "orders", Slots: 2, Format: queue.FormatRaw, Sink: "amqp", Exchange: "events", RoutingKey: "orders"},
		{Version: queue.LayoutVersion, Name: "events", Slots: 1, Format: queue.FormatEnvelope, Sink: "kafka", KafkaTopic: "events"},
	}
	if _, err := q.Register(context.Background(), prefix, "test-replica", ls); err != nil {
		t.Fatalf("register: %v", err)
	}
	srv, err := console.New(console.Options{Queue: q, Prefix: prefix, Token: token, Hosts: []string{"example.com"}})
	if err != nil {
		t.Fatalf("console.New: %v", err)
	}
	return &fixture{t: t, rdb: rdb, q: q, prefix: prefix, orders: ls[0].Topic(prefix), events: ls[1].Topic(prefix), srv: srv, token: token}
}

// do serves one request; form (may be nil) is sent as a POST body.
func (f *fixture) do(method, target string, form url.Values, hdr map[string]string) (*http.Response, string) {
	f.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	r := httptest.NewRequest(method, target, body)
	if form != nil {
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range hdr {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	f.srv.ServeHTTP(w, r)
	res := w.Result()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

func (f *fixture) bearer() map[string]string {
	return map[string]string{"Authorization": "Bearer " + f.token}
}

func (f *fixture) schedule(t queue.Topic, member string, in time.Duration) queue.Receipt {
	f.t.Helper()
	r, err := f.q.ScheduleMember(context.Background(), t, []byte(member), queue.In(in))
	if err != nil {
		f.t.Fatalf("schedule %q: %v", member, err)
	}
	return r
}

// kill dead-letters a member: scheduled due now, claimed, failed for good.
func (f *fixture) kill(t queue.Topic, member string) queue.Receipt {
	f.t.Helper()
	r := f.schedule(t, member, 0)
	ctx := context.Background()
	if _, err := f.q.Claim(ctx, t, r.Slot, 100, time.Minute); err != nil {
		f.t.Fatalf("claim: %v", err)
	}
	out, err := f.q.Retry(ctx, t, r.Slot, queue.Failure{Member: r.Member, Permanent: true, Reason: "NOT_FOUND - no exchange"}, 1)
	if err != nil || out != queue.Dead {
		f.t.Fatalf("retry %q = %v, %v; want dead", member, out, err)
	}
	return r
}

func (f *fixture) paused(t queue.Topic) bool {
	f.t.Helper()
	st, err := f.q.Stats(context.Background(), t, 0)
	if err != nil {
		f.t.Fatal(err)
	}
	return st.Pause.Paused
}

func wantStatus(t *testing.T, res *http.Response, body string, want int) {
	t.Helper()
	if res.StatusCode != want {
		t.Fatalf("status %d, want %d; body:\n%s", res.StatusCode, want, body)
	}
}

func wantContains(t *testing.T, body string, subs ...string) {
	t.Helper()
	for _, s := range subs {
		if !strings.Contains(body, s) {
			t.Errorf("page lacks %q:\n%s", s, body)
		}
	}
}
