package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/delaybridge/delaybridge/internal/opstext"
	"github.com/delaybridge/delaybridge/queue"
)

// errorBody is every error's answer.
type errorBody struct {
	Error string `json:"error"`
	Code  string `json:"code"`
}

// apiError is a refusal with its status and code.
type apiError struct {
	status int
	code   string
	msg    string
}

func (e *apiError) Error() string { return e.msg }

func refuse(status int, code, msg string) *apiError {
	return &apiError{status: status, code: code, msg: msg}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	// The body is JSON served with nosniff, never HTML: escaping would turn
	// "Bearer <token>" into "Bearer \u003ctoken\u003e" for whoever reads it.
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, errorBody{Error: msg, Code: code})
}

// classify maps an error of the queue package (or a refusal) to a status,
// a code and a message. Redis's own failures are 503: the request may be
// retried (every write is idempotent by id).
func classify(err error) *apiError {
	var ae *apiError
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.Is(err, queue.ErrNotEnvelope):
		return refuse(http.StatusUnprocessableEntity, "not_envelope",
			err.Error()+": ids, headers and routing keys (and by-id lookups) need a topic with FORMAT=envelope; a raw topic's member is the body itself")
	case errors.Is(err, queue.ErrInvalidEnvelope):
		return refuse(http.StatusBadRequest, "invalid_message", err.Error())
	case errors.Is(err, queue.ErrTooLarge):
		return refuse(http.StatusRequestEntityTooLarge, "body_too_large", err.Error())
	case errors.Is(err, queue.ErrBadDueTime):
		return refuse(http.StatusUnprocessableEntity, "bad_due_time", from(err, queue.ErrBadDueTime))
	case errors.Is(err, queue.ErrNotFound):
		// The queue's words name its keys: say it without them.
		return refuse(http.StatusNotFound, "not_found", "no message with this id is scheduled (never, or cancelled, delivered or dead)")
	case errors.Is(err, queue.ErrInFlight):
		return refuse(http.StatusConflict, "in_flight", "the message is being delivered and can no longer be changed")
	case errors.Is(err, queue.ErrTick):
		return refuse(http.StatusConflict, "recurrence_tick", err.Error())
	case errors.Is(err, queue.ErrUnknownTopic):
		return refuse(http.StatusNotFound, "unknown_topic", err.Error())
	case errors.Is(err, queue.ErrLayoutMismatch):
		return refuse(http.StatusConflict, "layout_mismatch", err.Error())
	case errors.Is(err, queue.ErrNotReplicated):
		return refuse(http.StatusServiceUnavailable, "not_replicated", from(err, queue.ErrNotReplicated))
	case errors.Is(err, queue.ErrTooFewReplicas):
		return refuse(http.StatusServiceUnavailable, "too_few_replicas", opstext.WithSetting(from(err, queue.ErrTooFewReplicas), err))
	default:
		// Redis's own words and the keys they name are the operator's
		// business, not the client's: fail logs them.
		return &apiError{status: http.StatusServiceUnavailable, code: "unavailable",
			msg: "the queue cannot be reached or did not answer: retry later"}
	}
}

// from is err's text from sentinel's on: what the queue says about the
// refusal, without the context it was wrapped in (the Redis key a write
// went to is the operator's business; fail logs it).
func from(err, sentinel error) string {
	text := err.Error()
	if i := strings.Index(text, sentinel.Error()); i >= 0 {
		return text[i:]
	}
	return sentinel.Error()
}

// fail answers err; a failure of Redis is logged (a refusal is the
// client's business and is not). Queue errors name keys and ids, never a
// body.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	ae := classify(err)
	if ae.status >= 500 {
		s.opts.Log.Warn("api request failed", "route", r.Pattern, "status", ae.status, "err", err)
	}
	if queue.Unconfirmed(err) {
		w.Header().Set("Retry-After", retryAfter)
	}
	writeError(w, ae.status, ae.code, ae.msg)
}

// retryAfter is the Retry-After of an acceptance not confirmed (see
// queue.ErrNotReplicated), in seconds.
const retryAfter = "1"
