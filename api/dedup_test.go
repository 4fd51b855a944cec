package api

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
)

// deliverID claims and acks id on orders as the forwarder of a topic with
// this dedup window does once the broker confirmed it.
func (f *fixture) deliverID(id string, window time.Duration) {
	f.t.Helper()
	ctx := context.Background()
	tp := f.orders
	tp.DedupWindow = window
	slot := tp.SlotOfID(id)
	c, err := f.q.Claim(ctx, tp, slot, 10, time.Minute)
	if err != nil || len(c.Messages) != 1 {
		f.t.Fatalf("Claim = %d messages, %v; want 1", len(c.Messages), err)
	}
	if n, err := f.q.Ack(ctx, tp, slot, []string{c.Messages[0].Member}); err != nil || n != 1 {
		f.t.Fatalf("Ack = %d, %v", n, err)
	}
}

// TestScheduleOfADeliveredIDIsADuplicate: an id delivered within the
// topic's dedup window is accepted again as a no-op: 200 with "duplicate":
// true (alone and in a batch), nothing scheduled, GET still 404; once the
// window passed, 201 again. The answers match the OpenAPI document.
func TestScheduleOfADeliveredIDIsADuplicate(t *testing.T) {
	f := newFixture(t)
	const window = 600 * time.Millisecond
	f.want(f.do("POST", "/v1/topics/orders/messages", fullToken, `{"id":"a","body":"x"}`), http.StatusCreated, "")
	f.deliverID("a", window)
	acked := time.Now()

	r := f.do("POST", "/v1/topics/orders/messages", fullToken, `{"id":"a","body":"x","delay":"1h"}`)
	f.want(r, http.StatusOK, "")
	if r.json["duplicate"] != true || r.json["replaced"] != nil {
		t.Errorf("a retry of a delivered id answered %s; want duplicate true", r.raw)
	}
	r = f.do("POST", "/v1/topics/orders/messages:batch", fullToken, `{"messages":[{"id":"a","body":"x"},{"id":"b","body":"y","delay":"1h"}]}`)
	f.want(r, http.StatusOK, "")
	results, _ := r.json["results"].([]any)
	if len(results) != 2 {
		t.Fatalf("batch answered %s", r.raw)
	}
	first, _ := results[0].(map[string]any)
	second, _ := results[1].(map[string]any)
	if first["status"] != float64(http.StatusOK) || first["duplicate"] != true {
		t.Errorf("the batch's retry of a: %v; want 200, duplicate", first)
	}
	if second["status"] != float64(http.StatusCreated) || second["duplicate"] != nil {
		t.Errorf("the batch's new b: %v; want 201 without duplicate", second)
	}
	f.want(f.do("GET", "/v1/topics/orders/messages/a", fullToken, ""), http.StatusNotFound, "")
	f.want(f.do("DELETE", "/v1/topics/orders/messages/a", fullToken, ""), http.StatusNotFound, "")
	f.validAgainstOpenAPI("POST", "/v1/topics/orders/messages", `{"id":"a","body":"x"}`, http.StatusOK)

	time.Sleep(time.Until(acked.Add(window + 50*time.Millisecond)))
	r = f.do("POST", "/v1/topics/orders/messages", fullToken, `{"id":"a","body":"x","delay":"1h"}`)
	f.want(r, http.StatusCreated, "")
	if _, ok := r.json["duplicate"]; ok {
		t.Errorf("after the window: %s; want no duplicate field", r.raw)
	}
}

// validAgainstOpenAPI sends one request and checks that the answer has the
// status and matches the OpenAPI document.
func (f *fixture) validAgainstOpenAPI(method, path, body string, status int) {
	f.t.Helper()
	doc, err := libopenapi.NewDocument(OpenAPI)
	if err != nil {
		f.t.Fatal(err)
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		f.t.Fatal(errs)
	}
	req, _ := http.NewRequest(method, f.base+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+fullToken)
	resp, err := f.client.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != status {
		f.t.Fatalf("%s %s: %d %s; want %d", method, path, resp.StatusCode, b, status)
	}
	resp.Body = io.NopCloser(bytes.NewReader(b))
	req.Body = io.NopCloser(strings.NewReader(body))
	if ok, verrs := v.ValidateHttpRequestResponse(req, resp); !ok {
		for _, e := range verrs {
			f.t.Errorf("%s %s (%d %s): %s: %s %v", method, path, resp.StatusCode, b, e.Message, e.Reason, e.SchemaValidationErrors)
		}
	}
}
