package api

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
)

func TestBatchAnswersEachMessageInOrder(t *testing.T) {
	f := newFixture(t)
	f.want(f.do("POST", "/v1/topics/orders/messages", fullToken, `{"id":"old","body":"x","delay":"1h"}`), http.StatusCreated, "")
	r := f.do("POST", "/v1/topics/orders/messages:batch", fullToken, `{"messages":[
		{"id":"b1","body":"one","delay":"1h"},
		{"id":"b2","body":"two","body_base64":"dHdv"},
		{"id":"old","body":"replaced","delay":"2h"},
		{"body":"no id","due":-1},
		{"body":"no id either","headers":{"k":"v"},"delay":"1h"},
		{"id":"b3","body":"three","headers":{"x-delaybridge-due":"1"}}
	]}`)
	f.want(r, http.StatusOK, "")
	results, _ := r.json["results"].([]any)
	want := []struct {
		status float64
		code   string
	}{{201, ""}, {400, "invalid_message"}, {200, ""}, {422, "bad_due_time"}, {201, ""}, {400, "invalid_message"}}
	if len(results) != len(want) {
		t.Fatalf("%d results for %d messages: %s", len(results), len(want), r.raw)
	}
	for i, w := range want {
		res := results[i].(map[string]any)
		if res["status"] != w.status || (w.code != "" && res["code"] != w.code) || (w.code != "" && res["error"] == nil) {
			t.Errorf("result %d = %v, want %v %s", i, res, w.status, w.code)
		}
		if w.code == "" && (res["id"] == nil || res["due_ms"] == nil) {
			t.Errorf("result %d has no receipt: %v", i, res)
		}
	}
	if results[0].(map[string]any)["id"] != "b1" || results[2].(map[string]any)["replaced"] != "scheduled" {
		t.Errorf("results %s", r.raw)
	}
	for _, id := range []string{"b1", "old", results[4].(map[string]any)["id"].(string)} {
		if _, ok := f.scoreOf(f.orders, id); !ok {
			t.Errorf("%s is not scheduled", id)
		}
	}
	for _, id := range []string{"b2", "b3"} {
		if _, ok := f.scoreOf(f.orders, id); ok {
			t.Errorf("refused %s was scheduled", id)
		}
	}
}

// roundTrips counts the commands and pipelines a client sends.
type roundTrips struct {
	mu        sync.Mutex
	commands  []string
	pipelines []int // commands in each pipeline
}

func (h *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.mu.Lock()
		h.commands = append(h.commands, cmd.Name())
		h.mu.Unlock()
		return next(ctx, cmd)
	}
}
func (h *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.mu.Lock()
		h.pipelines = append(h.pipelines, len(cmds))
		h.mu.Unlock()
		return next(ctx, cmds)
	}
}

// TestBatchIsOneScriptCallPerSlotInOnePipeline: 1,000 messages over the 4
// slots of orders travel as 4 script calls (256 messages at most each: see
// queue.ScheduleEach) in one pipeline, beside the registry's lookup.
func TestBatchIsOneScriptCallPerSlotInOnePipeline(t *testing.T) {
	f := newFixture(t)
	// Warm up: the layout check and the script load happen once.
	f.want(f.do("POST", "/v1/topics/orders/messages:batch", fullToken, `{"messages":[{"id":"warm","body":"x","delay":"1h"}]}`), http.StatusOK, "")
	h := &roundTrips{}
	f.rdb.AddHook(h)
	var b strings.Builder
	b.WriteString(`{"messages":[`)
	for i := range 600 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":"m%d","body":"%d","delay":"1h"}`, i, i)
	}
	b.WriteString(`]}`)
	r := f.do("POST", "/v1/topics/orders/messages:batch", fullToken, b.String())
	f.want(r, http.StatusOK, "")
	h.mu.Lock()
	pipelines, commands := h.pipelines, h.commands
	h.mu.Unlock()
	if len(pipelines) != 1 {
		t.Fatalf("%d pipelines (%v), want 1", len(pipelines), pipelines)
	}
	perSlot := map[int]int{}
	for i := range 600 {
		perSlot[f.orders.SlotOfID(fmt.Sprintf("m%d", i))]++
	}
	calls := 0
	for _, n := range perSlot {
		calls += (n + 255) / 256
	}
	if pipelines[0] != calls {
		t.Errorf("the pipeline holds %d commands, want %d (one per slot's 256 messages: %v)", pipelines[0], calls, perSlot)
	}
	if len(commands) > 1 {
		t.Errorf("commands beside the pipeline: %v, want only the registry lookup", commands)
	}
	var n int64
	for s := range 4 {
		n += f.rdb.ZCard(context.Background(), f.orders.Keys(s).Scheduled).Val()
	}
	if n != 601 {
		t.Errorf("%d scheduled, want 601", n)
	}
}
