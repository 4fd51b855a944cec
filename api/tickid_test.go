package api

import (
	"net/http"
	"testing"
)

// TestAnIDOfATicksFormIsRefused: an id "<recurrence>@<ms>" is a recurrence
// tick's (queue.TickID): the API answers 400 and schedules nothing, alone or
// in a batch.
func TestAnIDOfATicksFormIsRefused(t *testing.T) {
	f := newFixture(t)
	const post = "/v1/topics/orders/messages"
	for _, c := range []struct{ path, body string }{
		{post, `{"id":"hb@1764000000000","body":"fake"}`},
		{post + ":batch", `{"messages":[{"id":"ok-1","body":"x"},{"id":"hb@1764000000000","body":"fake"}]}`},
	} {
		r := f.do(http.MethodPost, c.path, fullToken, c.body)
		if r.status != http.StatusBadRequest || r.code() != "invalid_message" {
			t.Errorf("POST %s %s = %d %s, want 400 invalid_message", c.path, c.body, r.status, r.raw)
		}
	}
	for _, id := range []string{"hb@1764000000000", "ok-1"} {
		if r := f.do(http.MethodGet, post+"/"+id, fullToken, ""); r.status != http.StatusNotFound {
			t.Errorf("GET %s = %d %s, want 404: nothing was scheduled", id, r.status, r.raw)
		}
	}
	if r := f.do(http.MethodPost, post, fullToken, `{"id":"user@example.com","body":"x"}`); r.status/100 != 2 {
		t.Errorf("an id with an at sign not followed by digits only: %d %s", r.status, r.raw)
	}
}
