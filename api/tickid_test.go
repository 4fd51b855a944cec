package api

import (
	"encoding/json"
	"net/http"
	"testing"
)

// TestAnIDOfATicksFormIsRefused: an id "<recurrence>@<ms>" is a recurrence
// tick's (queue.TickID): the API answers 400 and schedules nothing, alone or
// as one message of a batch (whose other messages are scheduled).
func TestAnIDOfATicksFormIsRefused(t *testing.T) {
	f := newFixture(t)
	const post = "/v1/topics/orders/messages"
	const fake = "hb@1764000000000"
	r := f.do(http.MethodPost, post, fullToken, `{"id":"`+fake+`","body":"fake"}`)
	if r.status != http.StatusBadRequest || r.code() != "invalid_message" {
		t.Errorf("POST id %s = %d %s, want 400 invalid_message", fake, r.status, r.raw)
	}
	r = f.do(http.MethodPost, post+":batch", fullToken, `{"messages":[{"id":"ok-1","body":"x"},{"id":"`+fake+`","body":"fake"}]}`)
	var out struct {
		Results []struct {
			Status int    `json:"status"`
			Code   string `json:"code"`
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(r.raw), &out); err != nil || len(out.Results) != 2 {
		t.Fatalf("batch = %d %s (%v)", r.status, r.raw, err)
	}
	if out.Results[0].Status != http.StatusCreated || out.Results[1].Status != http.StatusBadRequest || out.Results[1].Code != "invalid_message" {
		t.Errorf("batch results = %s, want 201 then 400 invalid_message", r.raw)
	}
	if r := f.do(http.MethodGet, post+"/"+fake, fullToken, ""); r.status != http.StatusNotFound {
		t.Errorf("GET %s = %d %s, want 404: nothing was scheduled", fake, r.status, r.raw)
	}
	if r := f.do(http.MethodPost, post, fullToken, `{"id":"user@example.com","body":"x"}`); r.status/100 != 2 {
		t.Errorf("an id with an at sign not followed by digits only: %d %s", r.status, r.raw)
	}
}
