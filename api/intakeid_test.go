package api

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/delaybridge/delaybridge/queue"
)

// TestAnIDOfTheIntakesReservedFormIsRefused: an id "~…" is the form the
// intakes generate (queue.IntakeID): the API answers 400, alone or in a
// batch, so no token holder can take an intake message's id first and have
// it answered "duplicate" through the dedup window.
func TestAnIDOfTheIntakesReservedFormIsRefused(t *testing.T) {
	f := newFixture(t)
	const post = "/v1/topics/orders/messages"
	for _, id := range []string{"~kafka:orders/0/7", "~amqp:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"} {
		r := f.do(http.MethodPost, post, fullToken, `{"id":"`+id+`","body":"early"}`)
		if r.status != http.StatusBadRequest || r.code() != "invalid_message" {
			t.Errorf("POST id %s = %d %s, want 400 invalid_message", id, r.status, r.raw)
		}
		r = f.do(http.MethodPost, post+":batch", fullToken, `{"messages":[{"id":"`+id+`","body":"early"}]}`)
		if r.status/100 == 2 && !strings.Contains(r.raw, `"status":400`) {
			t.Errorf("batch with id %s = %d %s, want its item refused with 400", id, r.status, r.raw)
		}
	}
	if r := f.do(http.MethodPost, post, fullToken, `{"id":"orders/0/7","body":"x"}`); r.status/100 != 2 {
		t.Errorf("an id of the intakes' old form is a producer's own: %d %s", r.status, r.raw)
	}
}

// TestRefusalsNameNoRedisKey: a 503 or 422 the queue's errors cause says
// why, never which key the write went to (the queue wraps its errors in
// "schedule in <prefix>:{<topic>:<slot>}: …" for the operator's log).
func TestRefusalsNameNoRedisKey(t *testing.T) {
	for _, sentinel := range []error{queue.ErrNotReplicated, queue.ErrTooFewReplicas, queue.ErrBadDueTime} {
		err := fmt.Errorf("schedule in dq:{orders:0}: %w: 0 of 1 replicas confirmed within 500ms", sentinel)
		ae := classify(err)
		if strings.Contains(ae.msg, "dq:{") || !strings.HasPrefix(ae.msg, sentinel.Error()) || !strings.Contains(ae.msg, "0 of 1") {
			t.Errorf("%v answered %d %q: want the refusal from %q on, without the key", sentinel, ae.status, ae.msg, sentinel.Error())
		}
	}
}

// TestTooFewReplicasNamesTheVariableToLookAt: the queue's refusal names no
// variable (a Go API program set WithDurability); the API's answer does,
// at its end, as before the wording left queue.
func TestTooFewReplicasNamesTheVariableToLookAt(t *testing.T) {
	err := fmt.Errorf("schedule in dq:{orders:0}: %w: 0 connected within 10s of lag, 1 asked for", queue.ErrTooFewReplicas)
	ae := classify(err)
	if want := queue.ErrTooFewReplicas.Error() + ": 0 connected within 10s of lag, 1 asked for (DELAYBRIDGE_REDIS_WAIT_REPLICAS)"; ae.code != "too_few_replicas" || ae.msg != want {
		t.Errorf("answered %s %q, want too_few_replicas %q", ae.code, ae.msg, want)
	}
}
