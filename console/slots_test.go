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
