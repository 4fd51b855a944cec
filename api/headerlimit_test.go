package api

import (
	"net/http"
	"strings"
	"testing"
)

// TestHeadersBeyondTheFrameLimitAreRefused: with a request cap that lets
// a 200 KB header in, the API refuses it with 400 invalid_message naming
// the limit, and nothing is written; before, it was scheduled and stalled
// its slot at delivery.
func TestHeadersBeyondTheFrameLimitAreRefused(t *testing.T) {
	f := newBigFixture(t)
	big := `{"id":"big","body":"x","headers":{"h":"` + strings.Repeat("x", 200<<10) + `"}}`
	r := f.do("POST", "/v1/topics/orders/messages", fullToken, big)
	f.want(r, http.StatusBadRequest, "invalid_message")
	if msg, _ := r.json["error"].(string); !strings.Contains(msg, "more than 65536") {
		t.Errorf("problem %v does not name the limit", r.json)
	}
	if left := f.keys(); len(left) != 0 {
		t.Errorf("refused, yet Redis holds %v", left)
	}
}
