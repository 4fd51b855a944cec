package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/delaybridge/delaybridge/flowstate"
	"github.com/delaybridge/delaybridge/queue"
)

// statsHeld is the held state of stats --json's only topic.
type statsHeld struct {
	Topics []struct {
		Held heldJSON `json:"held"`
	}
}

// A running daemon whose hold queue has more ready messages than
// HOLD_ABOVE holds its topic: stats says so, why, and the queue's depth;
// once the consumers drain the queue the topic delivers and stats no longer
// says held.
func TestStatsShowsATopicHeldAboveItsHoldQueueAndClearsItAfter(t *testing.T) {
	exchange := uniqueName("dbtest.held.")
	q, tp := amqpTopicEnv(t, exchange)
	ch, hq := declareBound(t, exchange)
	for i := range 5 {
		if err := ch.PublishWithContext(context.Background(), exchange, "k", false, false, amqp091.Publishing{Body: []byte(fmt.Sprint("before-", i))}); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("DELAYBRIDGE_TOPIC_ORDERS_HOLD_QUEUE", hq)
	t.Setenv("DELAYBRIDGE_TOPIC_ORDERS_HOLD_ABOVE", "2")
	if _, err := q.ScheduleMember(context.Background(), tp, []byte("waits"), queue.In(0)); err != nil {
		t.Fatal(err)
	}
	startDaemon(t)
	e := &cliEnv{t: t, ctx: context.Background()}
	var out string
	within(t, 10*time.Second, "stats to say orders is held by hold-above with 5 ready", func() bool {
		out = e.mustRun("", "stats", "orders")
		return strings.Contains(out, "orders: holds while "+hq+" has more than 2 ready (environment); HELD by hold-above ("+hq+": 5 ready)")
	})
	var st statsHeld
	if err := json.Unmarshal([]byte(e.mustRun("", "stats", "--json", "orders")), &st); err != nil {
		t.Fatal(err)
	}
	h := st.Topics[0].Held
	if !h.Held || len(h.Reasons) != 1 || h.Reasons[0] != "queue" || h.Depth == nil || *h.Depth != 5 || len(h.Replicas) != 1 {
		t.Fatalf("stats --json held = %+v, want held by the queue at depth 5 by one replica", h)
	}
	if _, err := ch.QueuePurge(hq, false); err != nil {
		t.Fatal(err)
	}
	within(t, 10*time.Second, "the held message delivered once the queue is drained", func() bool {
		qs, err := ch.QueueDeclarePassive(hq, false, false, false, false, nil)
		return err == nil && qs.Messages == 1
	})
	within(t, 5*time.Second, "stats to no longer say held", func() bool {
		out = e.mustRun("", "stats", "orders")
		return !strings.Contains(out, "HELD")
	})
	if err := json.Unmarshal([]byte(e.mustRun("", "stats", "--json", "orders")), &st); err != nil || st.Topics[0].Held.Held {
		t.Errorf("stats --json held after the drain = %+v (%v), want not held", st.Topics[0].Held, err)
	}
}

// A rate-limited topic with more due than its limit lets through shows as
// held by the rate limit until delaybridge limit lifts the limit.
func TestStatsShowsATopicHeldByItsRateLimitUntilLifted(t *testing.T) {
	exchange := uniqueName("dbtest.heldrate.")
	q, tp := amqpTopicEnv(t, exchange)
	declareBound(t, exchange)
	t.Setenv("DELAYBRIDGE_TOPIC_ORDERS_RATE_LIMIT", "1")
	for i := range 30 {
		if _, err := q.ScheduleMember(context.Background(), tp, []byte(fmt.Sprint("m-", i)), queue.In(0)); err != nil {
			t.Fatal(err)
		}
	}
	startDaemon(t)
	e := &cliEnv{t: t, ctx: context.Background()}
	within(t, 10*time.Second, "stats to say orders is held by the rate limit", func() bool {
		return strings.Contains(e.mustRun("", "stats", "orders"), "orders: rate limit 1/s (environment); HELD by the rate limit")
	})
	var st statsHeld
	if err := json.Unmarshal([]byte(e.mustRun("", "stats", "--json", "orders")), &st); err != nil {
		t.Fatal(err)
	}
	if h := st.Topics[0].Held; !h.Held || len(h.Reasons) != 1 || h.Reasons[0] != "rate" || h.Depth != nil {
		t.Fatalf("stats --json held = %+v, want held by the rate limit, no depth", h)
	}
	e.mustRun("", "limit", "orders", "--rate", "none")
	within(t, 5*time.Second, "stats to no longer say held once the limit is lifted", func() bool {
		return !strings.Contains(e.mustRun("", "stats", "orders"), "HELD")
	})
}

// within polls cond every 100 ms until it holds, failing the test after d.
func within(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %s", what, d)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// topics (the registry) and replicas show each topic's limits in force and
// whether a replica holds it.
func TestTopicsAndReplicasShowEachTopicsLimitsAndHeldState(t *testing.T) {
	e := newCLIEnv(t)
	if _, err := e.q.Register(e.ctx, e.orders.Prefix, "r1", []queue.Layout{queue.LayoutOf(e.orders), queue.LayoutOf(e.legacy)}); err != nil {
		t.Fatal(err)
	}
	e.mustRun("", "limit", "orders", "--rate", "300")
	// The daemon serving legacy was started with 50/s; this shell says 7/s.
	t.Setenv("DELAYBRIDGE_TOPIC_LEGACY_RATE_LIMIT", "7")
	daemonEnv := flowstate.EnvLimits(50, "", 0)
	if err := flowstate.New(e.q).ReportEnv(e.ctx, e.legacy, "r1", &daemonEnv, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := flowstate.New(e.q).ReportHeld(e.ctx, e.orders, "r1", &flowstate.Held{Reasons: []string{flowstate.HeldRate}, Depth: -1}, time.Minute); err != nil {
		t.Fatal(err)
	}
	out := e.mustRun("", "topics")
	for _, want := range []string{"FLOW CONTROL", "rate limit 300/s (run time); HELD by the rate limit", "rate limit 50/s (environment)"} {
		if !strings.Contains(out, want) {
			t.Errorf("topics lacks %q:\n%s", want, out)
		}
	}
	var reg struct {
		Topics []struct {
			Topic  string     `json:"topic"`
			Limits limitsJSON `json:"limits"`
			Held   heldJSON   `json:"held"`
		}
	}
	if err := json.Unmarshal([]byte(e.mustRun("", "topics", "--json")), &reg); err != nil {
		t.Fatal(err)
	}
	for _, tp := range reg.Topics {
		switch tp.Topic {
		case "orders":
			if tp.Limits.Rate != 300 || tp.Limits.Source != "run time" || !tp.Held.Held {
				t.Errorf("topics --json orders = %+v, want rate 300 set at run time, held", tp)
			}
		case "legacy":
			if tp.Limits.Rate != 50 || tp.Limits.Source != "environment" || tp.Held.Held {
				t.Errorf("topics --json legacy = %+v, want rate 50 from the environment, not held", tp)
			}
		}
	}
	out = e.mustRun("", "replicas")
	for _, want := range []string{"orders: rate limit 300/s (run time); HELD by the rate limit", "legacy: rate limit 50/s (environment)"} {
		if !strings.Contains(out, want) {
			t.Errorf("replicas lacks %q:\n%s", want, out)
		}
	}
	var reps struct {
		Topics []struct {
			Topic  string     `json:"topic"`
			Limits limitsJSON `json:"limits"`
		}
	}
	if err := json.Unmarshal([]byte(e.mustRun("", "replicas", "--json")), &reps); err != nil || len(reps.Topics) != 2 ||
		reps.Topics[0].Limits.Rate != 300 || reps.Topics[1].Limits.Rate != 50 {
		t.Errorf("replicas --json topics = %+v (%v), want orders at 300/s and legacy at 50/s", reps.Topics, err)
	}
}
