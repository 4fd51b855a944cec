package api

import (
	"net/http"
	"testing"
)

// TestKeyIsKeptAndShown: a message's key, single or in a batch, is stored
// in its envelope and shown by GET; a key the envelope cannot hold is a 400.
func TestKeyIsKeptAndShown(t *testing.T) {
	f := newFixture(t)
	f.want(f.do("POST", "/v1/topics/orders/messages", fullToken, `{"id":"k1","body":"x","key":"tenant-1","delay":"1h"}`), http.StatusCreated, "")
	r := f.do("POST", "/v1/topics/orders/messages:batch", fullToken, `{"messages":[
		{"id":"k2","body":"y","key":"tenant-2","delay":"1h"},
		{"id":"k3","body":"z","key":"bad\u0001key","delay":"1h"}
	]}`)
	f.want(r, http.StatusOK, "")
	results, _ := r.json["results"].([]any)
	if len(results) != 2 || results[0].(map[string]any)["status"] != 201.0 || results[1].(map[string]any)["code"] != "invalid_message" {
		t.Fatalf("batch results %s", r.raw)
	}
	for id, key := range map[string]string{"k1": "tenant-1", "k2": "tenant-2"} {
		g := f.do("GET", "/v1/topics/orders/messages/"+id, fullToken, "")
		f.want(g, http.StatusOK, "")
		if g.json["key"] != key {
			t.Errorf("GET %s shows key %v, want %s", id, g.json["key"], key)
		}
	}
	f.want(f.do("POST", "/v1/topics/legacy/messages", fullToken, `{"body":"x","key":"k","delay":"1h"}`), http.StatusUnprocessableEntity, "not_envelope")
}
