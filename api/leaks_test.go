package api

import (
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delaybridge/delaybridge/queue"
)

// TestErrorBodiesNameNoKeysNorRedisErrors: a refusal or a failure says
// what happened in the API's words; the keys (prefix:{topic:0}) and Redis's
// own errors stay in the server's log. They were in the bodies.
func TestErrorBodiesNameNoKeysNorRedisErrors(t *testing.T) {
	f := newFixture(t)
	r := f.do("GET", "/v1/topics/orders/messages/nope", fullToken, "")
	f.want(r, http.StatusNotFound, "not_found")
	if strings.Contains(r.raw, f.prefix) {
		t.Errorf("404 body names a key: %s", r.raw)
	}
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: time.Second})
	defer rdb.Close()
	srv, err := New(Options{Queue: queue.New(rdb), Tokens: []Token{{Secret: fullToken}}, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	down := &fixture{t: t, base: "http://" + serve(t, srv, nil), client: &http.Client{Timeout: 20 * time.Second}}
	defer down.client.CloseIdleConnections()
	r = down.do("POST", "/v1/topics/orders/messages", fullToken, `{"body":"x"}`)
	down.want(r, http.StatusServiceUnavailable, "unavailable")
	if raw := r.raw; strings.Contains(raw, "127.0.0.1") || strings.Contains(raw, "dial") || strings.Contains(raw, "dq:") {
		t.Errorf("503 body holds Redis's own error: %s", raw)
	}
}

// TestInvalidUTF8IsRefusedNamingBodyBase64: a JSON body that is not UTF-8
// is refused with 400 naming body_base64; it was scheduled with each bad
// byte turned into U+FFFD.
func TestInvalidUTF8IsRefusedNamingBodyBase64(t *testing.T) {
	f := newFixture(t)
	for _, path := range []string{"/v1/topics/orders/messages", "/v1/topics/orders/messages:batch"} {
		body := `{"id":"a","body":"caf` + "\xe9" + `"}`
		if strings.HasSuffix(path, ":batch") {
			body = `{"messages":[` + body + `]}`
		}
		r := f.do("POST", path, fullToken, body)
		f.want(r, http.StatusBadRequest, "invalid_utf8")
		if msg, _ := r.json["error"].(string); !strings.Contains(msg, "body_base64") {
			t.Errorf("%s: %q does not name body_base64", path, msg)
		}
		if left := f.keys(); len(left) != 0 {
			t.Errorf("%s: refused, yet Redis holds %v", path, left)
		}
	}
	f.want(f.do("POST", "/v1/topics/orders/messages", fullToken, `{"id":"b","body":"café ✓"}`), http.StatusCreated, "")
}
