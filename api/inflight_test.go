package api

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/queue"
)

// TestRetryOfAnIDInFlightIsADuplicate: on a topic whose daemon registered
// a dedup window, a schedule of an id that is being delivered (claimed, not
// yet acked) answers 200 duplicate, not "replaced: in-flight", and after
// the ack nothing is left to deliver: one delivery.
func TestRetryOfAnIDInFlightIsADuplicate(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	l := queue.Layout{Version: queue.LayoutVersion, Name: "once", Slots: 1, Format: queue.FormatEnvelope, Sink: "amqp", DedupMs: time.Hour.Milliseconds()}
	if _, err := f.q.Register(ctx, f.prefix, "test-replica", []queue.Layout{l}); err != nil {
		t.Fatal(err)
	}
	tp := l.Topic(f.prefix)
	if tp.DedupWindow != time.Hour {
		t.Fatalf("the registry's topic has window %v; want 1h", tp.DedupWindow)
	}
	const post = "/v1/topics/once/messages"
	f.want(f.do("POST", post, fullToken, `{"id":"a","body":"x"}`), http.StatusCreated, "")
	c, err := f.q.Claim(ctx, tp, 0, 10, time.Minute)
	if err != nil || len(c.Messages) != 1 {
		t.Fatalf("Claim = %d messages, %v; want 1", len(c.Messages), err)
	}
	r := f.do("POST", post, fullToken, `{"id":"a","body":"x"}`)
	f.want(r, http.StatusOK, "")
	if r.json["duplicate"] != true || r.json["replaced"] != nil {
		t.Errorf("a retry of an id in flight answered %s; want duplicate true", r.raw)
	}
	if n, err := f.q.Ack(ctx, tp, 0, []string{c.Messages[0].Member}); err != nil || n != 1 {
		t.Fatalf("Ack = %d, %v", n, err)
	}
	if again, err := f.q.Claim(ctx, tp, 0, 10, time.Minute); err != nil || len(again.Messages) != 0 {
		t.Errorf("Claim after the ack = %d messages, %v; want none: one delivery", len(again.Messages), err)
	}
}
