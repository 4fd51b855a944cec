package console_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestPauseOfAOneSlotTopicSaysOneSlot: the console said "(1 slots)".
func TestPauseOfAOneSlotTopicSaysOneSlot(t *testing.T) {
	f := newFixture(t, "secret-token-0123456789")
	res, body := f.do("POST", "/topics/events/pause", confirmed, f.bearer())
	wantStatus(t, res, body, http.StatusOK)
	wantContains(t, body, "Paused events (1 slot)")
	if strings.Contains(body, "1 slots") {
		t.Errorf("body says \"1 slots\"")
	}
}

// TestActionFromCurlAnswersPlainText: an action called with the bearer
// token and no HTML in Accept (curl) answers one line of text, not a page;
// a browser still gets the page.
func TestActionFromCurlAnswersPlainText(t *testing.T) {
	f := newFixture(t, "secret-token-0123456789")
	curl := f.bearer()
	curl["Accept"] = "*/*"
	res, body := f.do("POST", "/topics/orders/pause", confirmed, curl)
	wantStatus(t, res, body, http.StatusOK)
	if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") || body != "Paused orders (2 slots): no replica claims its messages until it is resumed.\n" {
		t.Errorf("curl answer %q (%s), want the one line as text/plain", body, ct)
	}
	_, body = f.do("POST", "/topics/orders/resume", nil, curl)
	if !strings.Contains(body, "send confirm=yes") || strings.Contains(body, "<html") {
		t.Errorf("curl plan %q, want one line saying to confirm", body)
	}
	hdr := f.bearer()
	hdr["Accept"] = "text/html"
	res, body = f.do("POST", "/topics/orders/resume", confirmed, hdr)
	wantStatus(t, res, body, http.StatusOK)
	wantContains(t, body, "<html", "Resumed orders")
}
