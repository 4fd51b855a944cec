package api

import (
	"strings"
	"testing"
)

// TestBodyOverTheTopicLimitIs413: a body over its topic's message size
// limit (DELAYBRIDGE_TOPIC_<NAME>_MAX_MESSAGE_SIZE) is refused with 413
// naming the limit, alone or as one message of a batch, and nothing is
// written; a body at the limit is taken.
func TestBodyOverTheTopicLimitIs413(t *testing.T) {
	f := newFixture(t)
	const post = "/v1/topics/legacy/messages"
	over := strings.Repeat("b", legacyMaxMessage+1)
	r := f.do("POST", post, fullToken, `{"body":"`+over+`","delay":"1h"}`)
	f.want(r, 413, "body_too_large")
	if msg, _ := r.json["error"].(string); !strings.Contains(msg, "limit of 100 bytes") || !strings.Contains(msg, "101 bytes") {
		t.Errorf("error %q does not name the size and the limit", msg)
	}
	if left := f.keys(); len(left) != 0 {
		t.Fatalf("refused, yet Redis holds %v", left)
	}

	at := strings.Repeat("a", legacyMaxMessage)
	r = f.do("POST", post+":batch", fullToken, `{"messages":[{"body":"`+over+`","delay":"1h"},{"body":"`+at+`","delay":"1h"}]}`)
	f.want(r, 200, "")
	res, _ := r.json["results"].([]any)
	if len(res) != 2 {
		t.Fatalf("results %v", r.json)
	}
	first, _ := res[0].(map[string]any)
	second, _ := res[1].(map[string]any)
	if first["status"] != 413.0 || first["code"] != "body_too_large" || !strings.Contains(first["error"].(string), "limit of 100 bytes") {
		t.Errorf("first result %v; want 413 body_too_large naming the limit", first)
	}
	if second["status"] != 201.0 {
		t.Errorf("second result %v; want 201: a body at the limit is taken", second)
	}
	if n := f.rdb.ZCard(t.Context(), f.legacy.Keys(0).Scheduled).Val(); n != 1 {
		t.Errorf("%d scheduled; want 1", n)
	}
}
