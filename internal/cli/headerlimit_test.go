package cli

import (
	"strings"
	"testing"

	"github.com/delaybridge/delaybridge/queue"
)

// TestScheduleCommandRefusesHeadersBeyondTheFrameLimit: a header no broker
// frame takes is refused with exit 2 naming the limit, and nothing is
// written (before, it was scheduled and stalled its slot at delivery).
func TestScheduleCommandRefusesHeadersBeyondTheFrameLimit(t *testing.T) {
	e := newCLIEnv(t)
	code, _, errs := e.run("", "schedule", "orders", "--id", "big", "--header", "h="+strings.Repeat("x", 200<<10), "x")
	if code != exitConfig || !strings.Contains(errs, "headers and properties take") {
		t.Fatalf("exit %d, stderr %.200q; want 2 and the header limit", code, errs)
	}
	if _, err := e.q.Get(e.ctx, e.orders, "big"); err == nil {
		t.Fatal("refused, yet scheduled")
	}
	if _, err := queue.EncodeEnvelope(queue.Message{ID: "ok", Headers: map[string]string{"h": strings.Repeat("x", queue.MaxHeaderBytes/2)}}); err != nil {
		t.Fatalf("a header of half the limit: %v", err)
	}
}
