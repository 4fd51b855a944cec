package api

import (
	"net/http"
	"strings"
	"testing"
)

// TestBadInputIsRefusedAndChangesNothing sends every kind of bad request
// to the routes that write, and checks the status, the code and that Redis
// holds nothing afterwards.
func TestBadInputIsRefusedAndChangesNothing(t *testing.T) {
	f := newFixture(t)
	const post = "/v1/topics/orders/messages"
	tests := []struct {
		name, path, ct, body string
		status               int
		code                 string
	}{
		{"malformed JSON", post, "", `{"body":`, 400, "malformed_json"},
		{"not an object", post, "", `["body"]`, 400, "malformed_json"},
		{"two JSON values", post, "", `{"body":"a"}{"body":"b"}`, 400, "malformed_json"},
		{"unknown field", post, "", `{"bdy":"x"}`, 400, "unknown_field"},
		{"body and body_base64", post, "", `{"body":"x","body_base64":"eA=="}`, 400, "invalid_message"},
		{"bad base64", post, "", `{"body_base64":"%%%"}`, 400, "invalid_message"},
		{"due before 1970", post, "", `{"body":"x","due":-5}`, 422, "bad_due_time"},
		{"due before 1970 as text", post, "", `{"body":"x","due":"1960-01-01T00:00:00Z"}`, 422, "bad_due_time"},
		{"due past 2^53 ms", post, "", `{"body":"x","due":1152921504606846976}`, 422, "bad_due_time"},
		{"due not a time", post, "", `{"body":"x","due":"tomorrow"}`, 400, "invalid_due"},
		{"due with a fraction", post, "", `{"body":"x","due":1.5}`, 400, "invalid_due"},
		{"due and delay", post, "", `{"body":"x","due":1,"delay":"1s"}`, 400, "invalid_due"},
		{"negative delay", post, "", `{"body":"x","delay":"-1s"}`, 400, "invalid_due"},
		{"reserved header", post, "", `{"body":"x","headers":{"x-delaybridge-topic":"y"}}`, 400, "invalid_message"},
		{"id too long", post, "", `{"id":"` + strings.Repeat("i", 300) + `","body":"x"}`, 400, "invalid_message"},
		{"body over the sink's maximum", "/v1/topics/small/messages", "", `{"id":"a","body":"` + strings.Repeat("b", smallMax+1) + `"}`, 413, "body_too_large"},
		{"request over the cap", post, "", `{"body":"` + strings.Repeat("b", maxRequest) + `"}`, 413, "request_too_large"},
		{"text/plain", post, "text/plain", `{"body":"x"}`, 415, "unsupported_media_type"},
		{"form", post, "application/x-www-form-urlencoded", `body=x`, 415, "unsupported_media_type"},
		{"no content type", post, "-", `{"body":"x"}`, 415, "unsupported_media_type"},
		{"unknown topic", "/v1/topics/nope/messages", "", `{"body":"x"}`, 404, "unknown_topic"},
		{"batch: malformed", post + ":batch", "", `{"messages":[{"body":"x"},`, 400, "malformed_json"},
		{"batch: unknown field in a message", post + ":batch", "", `{"messages":[{"body":"x"},{"id":"b","bodyy":"y"}]}`, 400, "unknown_field"},
		{"batch: empty", post + ":batch", "", `{"messages":[]}`, 400, "empty_batch"},
		{"batch: 1,001 messages", post + ":batch", "", `{"messages":[` + strings.Repeat(`{"body":"x"},`, 1000) + `{"body":"x"}]}`, 413, "batch_too_large"},
		{"batch: text/plain", post + ":batch", "text/plain", `{"messages":[{"body":"x"}]}`, 415, "unsupported_media_type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f.t = t
			ct := tt.ct
			switch ct {
			case "":
				ct = "application/json"
			case "-":
				ct = ""
			}
			f.want(f.doType("POST", tt.path, fullToken, ct, tt.body), tt.status, tt.code)
			if left := f.keys(); len(left) != 0 {
				t.Errorf("refused, yet Redis holds %v", left)
			}
		})
	}
}

func TestBadRescheduleIsRefusedAndChangesNothing(t *testing.T) {
	f := newFixture(t)
	r := f.do("POST", "/v1/topics/orders/messages", fullToken, `{"id":"a","body":"x","due":4000000000000}`)
	f.want(r, http.StatusCreated, "")
	const path = "/v1/topics/orders/messages/a"
	for _, tt := range []struct {
		ct, body string
		status   int
		code     string
	}{
		{"application/json", `{}`, 400, "invalid_due"},
		{"application/json", `{"due":null}`, 400, "invalid_due"},
		{"application/json", `{"due":-1}`, 422, "bad_due_time"},
		{"application/json", `{"due":"1969-12-31T23:59:59Z"}`, 422, "bad_due_time"},
		{"application/json", `{"delay":"soon"}`, 400, "invalid_due"},
		{"application/json", `{"due":1,"delay":"1s"}`, 400, "invalid_due"},
		{"application/json", `{"due":1,"body":"x"}`, 400, "unknown_field"},
		{"application/json", `{"due":`, 400, "malformed_json"},
		{"text/plain", `{"delay":"1s"}`, 415, "unsupported_media_type"},
	} {
		f.want(f.doType("PATCH", path, fullToken, tt.ct, tt.body), tt.status, tt.code)
		if s, _ := f.scoreOf(f.orders, "a"); s != 4000000000000 {
			t.Fatalf("PATCH %s refused, yet the score is %v", tt.body, s)
		}
	}
	// An id that cannot name a message.
	f.want(f.do("GET", "/v1/topics/orders/messages/%01", fullToken, ""), http.StatusBadRequest, "invalid_message")
}

func TestUnknownRoutesAndMethodsAnswerJSON(t *testing.T) {
	f := newFixture(t)
	r := f.do("PUT", "/v1/topics/orders/messages/a", fullToken, `{}`)
	f.want(r, http.StatusMethodNotAllowed, "method_not_allowed")
	if allow := r.header.Get("Allow"); !strings.Contains(allow, "PATCH") || !strings.Contains(allow, "DELETE") {
		t.Errorf("Allow = %q", allow)
	}
	f.want(f.do("GET", "/v2/topics", fullToken, ""), http.StatusNotFound, "no_route")
	f.want(f.do("GET", "/v1/topics/orders/messages", fullToken, ""), http.StatusMethodNotAllowed, "method_not_allowed")
}
