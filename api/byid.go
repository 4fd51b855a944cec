package api

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"unicode/utf8"

	"github.com/delaybridge/delaybridge/queue"
)

// messageOut answers GET of one message.
type messageOut struct {
	ID    string `json:"id"`
	Topic string `json:"topic"`
	// State is scheduled, retrying, inflight or dead.
	State      string            `json:"state"`
	Due        string            `json:"due,omitempty"`
	DueMs      int64             `json:"due_ms,omitempty"`
	LeaseUntil string            `json:"lease_until,omitempty"`
	Died       string            `json:"died,omitempty"`
	Attempts   int               `json:"attempts"`
	LastError  string            `json:"last_error,omitempty"`
	Body       *string           `json:"body,omitempty"`
	BodyBase64 *string           `json:"body_base64,omitempty"`
	Headers    map[string]string `json:"headers,omitempty"`
	RoutingKey string            `json:"routing_key,omitempty"`
	Key        string            `json:"key,omitempty"`
}

// get is GET /v1/topics/{topic}/messages/{id}: the message while it is
// scheduled, retrying, in flight or dead; 404 once delivered, cancelled or
// never scheduled.
func (s *Server) get(w http.ResponseWriter, r *http.Request, t queue.Topic, _ queue.Layout) {
	id := r.PathValue("id")
	e, err := s.opts.Queue.InspectID(r.Context(), t, id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if e.State == "absent" {
		writeError(w, http.StatusNotFound, "not_found", "no message with id "+jsonQuote(id)+" is scheduled, in flight or dead in topic "+t.Name)
		return
	}
	m, err := t.Decode(e.Member)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := messageOut{ID: id, Topic: t.Name, State: e.State, Attempts: e.Attempts, LastError: e.LastError,
		Headers: m.Headers, RoutingKey: m.RoutingKey, Key: m.Key}
	if !e.Due.IsZero() {
		out.Due, out.DueMs = formatTime(e.Due), e.Due.UnixMilli()
	}
	if !e.LeaseUntil.IsZero() {
		out.LeaseUntil = formatTime(e.LeaseUntil)
	}
	if !e.Died.IsZero() {
		out.Died = formatTime(e.Died)
	}
	if utf8.Valid(m.Body) {
		b := string(m.Body)
		out.Body = &b
	} else {
		b := base64.StdEncoding.EncodeToString(m.Body)
		out.BodyBase64 = &b
	}
	writeJSON(w, http.StatusOK, out)
}

// whenIn is the body of PATCH: a new due time.
type whenIn struct {
	Due   json.RawMessage `json:"due,omitempty"`
	Delay string          `json:"delay,omitempty"`
}

// reschedule is PATCH /v1/topics/{topic}/messages/{id}.
func (s *Server) reschedule(w http.ResponseWriter, r *http.Request, t queue.Topic, _ queue.Layout) {
	var in whenIn
	if ae := s.decode(w, r, &in, "application/json", "application/merge-patch+json"); ae != nil {
		writeError(w, ae.status, ae.code, ae.msg)
		return
	}
	if (len(in.Due) == 0 || string(in.Due) == "null") && in.Delay == "" {
		writeError(w, http.StatusBadRequest, "invalid_due", `give the new time: {"due": …} or {"delay": "30m"}`)
		return
	}
	when, ae := whenOf(in.Due, in.Delay)
	if ae != nil {
		writeError(w, ae.status, ae.code, ae.msg)
		return
	}
	rc, err := s.opts.Queue.Reschedule(r.Context(), t, queue.ByID(r.PathValue("id")), when)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := receipt(rc)
	out.Replaced = ""
	writeJSON(w, http.StatusOK, out)
}

// cancel is DELETE /v1/topics/{topic}/messages/{id}.
func (s *Server) cancel(w http.ResponseWriter, r *http.Request, t queue.Topic, _ queue.Layout) {
	id := r.PathValue("id")
	ok, err := s.opts.Queue.CancelID(r.Context(), t, id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if !ok {
		writeError(w, http.StatusNotFound, "not_found", "no message with id "+jsonQuote(id)+" is scheduled in topic "+t.Name)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func jsonQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
