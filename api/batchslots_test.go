package api

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestBatchRequestsBeyondTheLimitAreAnswered503WithRetryAfter: while
// maxBatchRequests batches are being served, another is answered 503 with
// Retry-After (so the memory all batches hold together stays bounded); a
// place freed is taken again.
func TestBatchRequestsBeyondTheLimitAreAnswered503WithRetryAfter(t *testing.T) {
	f := newFixture(t)
	srv, err := New(Options{Queue: f.q, Prefix: f.prefix, Tokens: []Token{{Secret: fullToken}}})
	if err != nil {
		t.Fatal(err)
	}
	var releases []func()
	for range maxBatchRequests {
		release, ok := srv.batchSlot(httptest.NewRecorder())
		if !ok {
			t.Fatalf("place %d of %d refused", len(releases)+1, maxBatchRequests)
		}
		releases = append(releases, release)
	}
	w := httptest.NewRecorder()
	if _, ok := srv.batchSlot(w); ok || w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" {
		t.Fatalf("one batch too many: ok %v, status %d, Retry-After %q; want 503 with Retry-After", ok, w.Code, w.Header().Get("Retry-After"))
	}
	releases[0]()
	if _, ok := srv.batchSlot(httptest.NewRecorder()); !ok {
		t.Fatal("a freed place was not taken again")
	}
}
