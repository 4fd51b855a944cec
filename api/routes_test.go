package api

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/delaybridge/delaybridge/queue"
)

// scoreOf is the score of the envelope id in orders (0 and false if absent).
func (f *fixture) scoreOf(t queue.Topic, id string) (float64, bool) {
	f.t.Helper()
	k := t.Keys(t.SlotOfID(id))
	m := f.memberOf(t, id)
	if m == "" {
		return 0, false
	}
	s, err := f.rdb.ZScore(context.Background(), k.Scheduled, m).Result()
	return s, err == nil
}

// memberOf is the member the envelope id names while it is scheduled or in
// flight ("" if none), found as the queue finds it (the id index's layout is
// the queue's own).
func (f *fixture) memberOf(t queue.Topic, id string) string {
	f.t.Helper()
	e, err := f.q.InspectID(context.Background(), t, id)
	if err != nil || (e.State != "scheduled" && e.State != "retrying" && e.State != "inflight") {
		return ""
	}
	return e.Member
}

func TestScheduleGetRescheduleCancelByID(t *testing.T) {
	f := newFixture(t)
	before := time.Now()
	r := f.do("POST", "/v1/topics/orders/messages", fullToken,
		`{"id":"order-42","body":"pay me","headers":{"tenant":"acme"},"routing_key":"eu.orders","delay":"1h"}`)
	f.want(r, http.StatusCreated, "")
	if r.json["id"] != "order-42" || r.header.Get("Location") != "/v1/topics/orders/messages/order-42" {
		t.Errorf("receipt %s, Location %q", r.raw, r.header.Get("Location"))
	}
	score, ok := f.scoreOf(f.orders, "order-42")
	due := r.json["due_ms"].(float64)
	if !ok || score != due || score < float64(before.Add(time.Hour).UnixMilli())-1000 {
		t.Errorf("stored score %v (ok %v), answered due_ms %v", score, ok, due)
	}
	if at, err := time.Parse(time.RFC3339Nano, r.json["due"].(string)); err != nil || at.UnixMilli() != int64(due) {
		t.Errorf("due %q does not match due_ms %v: %v", r.json["due"], due, err)
	}

	r = f.do("GET", "/v1/topics/orders/messages/order-42", fullToken, "")
	f.want(r, http.StatusOK, "")
	for k, want := range map[string]any{"id": "order-42", "topic": "orders", "state": "scheduled", "body": "pay me",
		"routing_key": "eu.orders", "attempts": 0.0, "due_ms": due} {
		if r.json[k] != want {
			t.Errorf("GET %s = %v, want %v", k, r.json[k], want)
		}
	}
	if h, _ := r.json["headers"].(map[string]any); h["tenant"] != "acme" {
		t.Errorf("GET headers %v", r.json["headers"])
	}

	// The same id again replaces it: 200, one message.
	r = f.do("POST", "/v1/topics/orders/messages", fullToken, `{"id":"order-42","body":"pay me now","delay":"2h"}`)
	f.want(r, http.StatusOK, "")
	if r.json["replaced"] != "scheduled" {
		t.Errorf("replaced = %v", r.json["replaced"])
	}
	if n := f.rdb.ZCard(context.Background(), f.orders.Keys(f.orders.SlotOfID("order-42")).Scheduled).Val(); n != 1 {
		t.Errorf("%d members after replacing the id, want 1", n)
	}

	// Reschedule to an exact time (Unix ms), then by delay.
	at := time.Now().Add(3 * time.Hour).UnixMilli()
	r = f.do("PATCH", "/v1/topics/orders/messages/order-42", fullToken, fmt.Sprintf(`{"due":%d}`, at))
	f.want(r, http.StatusOK, "")
	if s, _ := f.scoreOf(f.orders, "order-42"); s != float64(at) || r.json["due_ms"] != float64(at) {
		t.Errorf("after PATCH: score %v, answer %s, want %d", s, r.raw, at)
	}
	r = f.doType("PATCH", "/v1/topics/orders/messages/order-42", fullToken, "application/merge-patch+json", `{"delay":"10m"}`)
	f.want(r, http.StatusOK, "")

	f.want(f.do("DELETE", "/v1/topics/orders/messages/order-42", fullToken, ""), http.StatusNoContent, "")
	f.want(f.do("GET", "/v1/topics/orders/messages/order-42", fullToken, ""), http.StatusNotFound, "not_found")
	f.want(f.do("DELETE", "/v1/topics/orders/messages/order-42", fullToken, ""), http.StatusNotFound, "not_found")
	f.want(f.do("PATCH", "/v1/topics/orders/messages/order-42", fullToken, `{"delay":"1m"}`), http.StatusNotFound, "not_found")
	if left := f.keys(); len(left) != 0 {
		t.Errorf("cancelled, yet Redis holds %v", left)
	}
}

func TestScheduleWithoutIDGeneratesOneAndTakesRFC3339(t *testing.T) {
	f := newFixture(t)
	at := time.Now().Add(time.Hour).UTC().Truncate(time.Millisecond)
	r := f.do("POST", "/v1/topics/orders/messages", fullToken, `{"body":{"order":7},"due":"`+at.Format(time.RFC3339Nano)+`"}`)
	f.want(r, http.StatusCreated, "")
	id, _ := r.json["id"].(string)
	if !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`).MatchString(id) {
		t.Fatalf("generated id %q is not a UUID", id)
	}
	if s, ok := f.scoreOf(f.orders, id); !ok || s != float64(at.UnixMilli()) {
		t.Errorf("score %v (ok %v), want %d", s, ok, at.UnixMilli())
	}
	r = f.do("GET", "/v1/topics/orders/messages/"+id, fullToken, "")
	f.want(r, http.StatusOK, "")
	if r.json["body"] != `{"order":7}` {
		t.Errorf("a JSON body is delivered as its JSON text: got %v", r.json["body"])
	}
	// Neither due nor delay: due now.
	r = f.do("POST", "/v1/topics/orders/messages", fullToken, `{"id":"now","body":"x"}`)
	f.want(r, http.StatusCreated, "")
	if d := time.Since(time.UnixMilli(int64(r.json["due_ms"].(float64)))); d < -time.Second || d > 10*time.Second {
		t.Errorf("no due time: due %v is not now", r.json["due"])
	}
}

func TestBinaryBodiesTravelAsBase64AndIDsMayHoldSlashes(t *testing.T) {
	f := newFixture(t)
	bin := []byte{0, 0xff, 'a', 0x80}
	b64 := base64.StdEncoding.EncodeToString(bin)
	f.want(f.do("POST", "/v1/topics/orders/messages", fullToken, `{"id":"tenant/7 é","body_base64":"`+b64+`","delay":"1h"}`), http.StatusCreated, "")
	r := f.do("GET", "/v1/topics/orders/messages/tenant%2F7%20%C3%A9", fullToken, "")
	f.want(r, http.StatusOK, "")
	if r.json["body_base64"] != b64 || r.json["id"] != "tenant/7 é" {
		t.Errorf("GET %s", r.raw)
	}
	f.want(f.do("DELETE", "/v1/topics/orders/messages/tenant%2F7%20%C3%A9", fullToken, ""), http.StatusNoContent, "")
}

func TestRawTopicSchedulesTheBodyAsMemberAndRefusesIDs(t *testing.T) {
	f := newFixture(t)
	r := f.do("POST", "/v1/topics/legacy/messages", fullToken, `{"body":"{\"order\":1}","delay":"1h"}`)
	f.want(r, http.StatusCreated, "")
	if r.json["id"] != queue.MessageID([]byte(`{"order":1}`)) {
		t.Errorf("id %v, want the member's MessageID", r.json["id"])
	}
	if _, err := f.rdb.ZScore(context.Background(), f.legacy.Keys(0).Scheduled, `{"order":1}`).Result(); err != nil {
		t.Errorf("the body is not the member: %v", err)
	}
	for _, body := range []string{`{"id":"a","body":"x"}`, `{"body":"x","headers":{"a":"b"}}`, `{"body":"x","routing_key":"k"}`} {
		f.want(f.do("POST", "/v1/topics/legacy/messages", fullToken, body), http.StatusUnprocessableEntity, "not_envelope")
	}
	f.want(f.do("GET", "/v1/topics/legacy/messages/a", fullToken, ""), http.StatusUnprocessableEntity, "not_envelope")
	f.want(f.do("PATCH", "/v1/topics/legacy/messages/a", fullToken, `{"delay":"1s"}`), http.StatusUnprocessableEntity, "not_envelope")
	f.want(f.do("DELETE", "/v1/topics/legacy/messages/a", fullToken, ""), http.StatusUnprocessableEntity, "not_envelope")
}

func TestInFlightMessageIs409AndDeadOneIsShown(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.want(f.do("POST", "/v1/topics/orders/messages", fullToken, `{"id":"busy","body":"b","delay":"1h"}`), http.StatusCreated, "")
	// Claim it as a scanner would: out of the scheduled set, into inflight.
	k := f.orders.Keys(f.orders.SlotOfID("busy"))
	m := f.memberOf(f.orders, "busy")
	if m == "" {
		t.Fatal("busy is not scheduled")
	}
	lease := time.Now().Add(time.Minute).UnixMilli()
	f.rdb.ZRem(ctx, k.Scheduled, m)
	f.rdb.ZAdd(ctx, k.Inflight, redisZ(float64(lease), m))
	f.rdb.HSet(ctx, k.Due, m, "1000")
	f.want(f.do("PATCH", "/v1/topics/orders/messages/busy", fullToken, `{"delay":"1m"}`), http.StatusConflict, "in_flight")
	f.want(f.do("DELETE", "/v1/topics/orders/messages/busy", fullToken, ""), http.StatusConflict, "in_flight")
	r := f.do("GET", "/v1/topics/orders/messages/busy", fullToken, "")
	f.want(r, http.StatusOK, "")
	if r.json["state"] != "inflight" || r.json["lease_until"] == nil {
		t.Errorf("GET in flight: %s", r.raw)
	}
	// Dead-letter it as the forwarder would.
	f.rdb.ZRem(ctx, k.Inflight, m)
	f.rdb.HDel(ctx, k.IDs, "busy")
	f.rdb.ZAdd(ctx, k.Dead, redisZ(float64(time.Now().UnixMilli()), m))
	f.rdb.HSet(ctx, k.DeadReason, m, "broker said no")
	f.rdb.HSet(ctx, k.Attempts, m, "3")
	r = f.do("GET", "/v1/topics/orders/messages/busy", fullToken, "")
	f.want(r, http.StatusOK, "")
	if r.json["state"] != "dead" || r.json["last_error"] != "broker said no" || r.json["died"] == nil {
		t.Errorf("GET dead: %s", r.raw)
	}
}

func TestTopicsListsLayoutAndBacklogOfTheTokensTopics(t *testing.T) {
	f := newFixture(t)
	for i := range 3 {
		f.want(f.do("POST", "/v1/topics/orders/messages", fullToken, `{"id":"o`+strconv.Itoa(i)+`","body":"x","delay":"1h"}`), http.StatusCreated, "")
	}
	r := f.do("GET", "/v1/topics", fullToken, "")
	f.want(r, http.StatusOK, "")
	topics, _ := r.json["topics"].([]any)
	var names []string
	for _, x := range topics {
		tp := x.(map[string]any)
		names = append(names, tp["name"].(string))
		if tp["name"] == "orders" {
			b := tp["backlog"].(map[string]any)
			if tp["format"] != "envelope" || tp["slots"] != 4.0 || tp["sink"] != "amqp" || b["scheduled"] != 3.0 {
				t.Errorf("orders: %v", tp)
			}
		}
	}
	if strings.Join(names, ",") != "legacy,orders,small" {
		t.Errorf("topics %v", names)
	}
	r = f.do("GET", "/v1/topics", ordersOnlyToken, "")
	f.want(r, http.StatusOK, "")
	if topics, _ := r.json["topics"].([]any); len(topics) != 1 || topics[0].(map[string]any)["name"] != "orders" {
		t.Errorf("a token limited to orders sees %s", r.raw)
	}
}
