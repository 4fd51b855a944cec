package api

import (
	"bufio"
	"bytes"
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
	State      string `json:"state"`
	Due        string `json:"due,omitempty"`
	DueMs      int64  `json:"due_ms,omitempty"`
	LeaseUntil string `json:"lease_until,omitempty"`
	Died       string `json:"died,omitempty"`
	Attempts   int    `json:"attempts"`
	LastError  string `json:"last_error,omitempty"`
	// The body, written last by writeMessage: body (UTF-8 text) or
	// body_base64.
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
	release, ok := s.reserve(w, r, int64(len(e.Member)))
	if !ok {
		return
	}
	defer release()
	m, err := t.Decode(e.Member)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	e.Member = "" // m holds the body: the member can go while it is written
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
	writeMessage(w, out, m.Body)
}

// writeMessage answers 200 with out and body, which it streams as the last
// field (body, or body_base64 when it is not UTF-8) rather than building
// the answer whole: a message of megabytes is written from the one copy
// the server holds.
func writeMessage(w http.ResponseWriter, out messageOut, body []byte) {
	var head bytes.Buffer
	enc := json.NewEncoder(&head)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(out)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	bw := bufio.NewWriterSize(w, 32<<10)
	_, _ = bw.Write(bytes.TrimSuffix(bytes.TrimSpace(head.Bytes()), []byte("}")))
	if utf8.Valid(body) {
		_, _ = bw.WriteString(`,"body":"`)
		writeJSONText(bw, body)
	} else {
		_, _ = bw.WriteString(`,"body_base64":"`)
		b64 := base64.NewEncoder(base64.StdEncoding, bw)
		_, _ = b64.Write(body)
		_ = b64.Close()
	}
	_, _ = bw.WriteString("\"}\n")
	_ = bw.Flush()
}

// writeJSONText writes UTF-8 text b as the content of a JSON string, as
// encoding/json escapes it (HTML escaping off): runs that need no escape
// are written as they are.
func writeJSONText(bw *bufio.Writer, b []byte) {
	const hex = "0123456789abcdef"
	start := 0
	for i := 0; i < len(b); {
		c := b[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c >= utf8.RuneSelf {
			r, n := utf8.DecodeRune(b[i:])
			if r != '\u2028' && r != '\u2029' {
				i += n
				continue
			}
			_, _ = bw.Write(b[start:i])
			_, _ = bw.WriteString(`\u202` + string(hex[r&0xf]))
			i += n
			start = i
			continue
		}
		_, _ = bw.Write(b[start:i])
		switch c {
		case '"', '\\':
			_ = bw.WriteByte('\\')
			_ = bw.WriteByte(c)
		case '\n':
			_, _ = bw.WriteString(`\n`)
		case '\r':
			_, _ = bw.WriteString(`\r`)
		case '\t':
			_, _ = bw.WriteString(`\t`)
		default:
			_, _ = bw.WriteString(`\u00`)
			_ = bw.WriteByte(hex[c>>4])
			_ = bw.WriteByte(hex[c&0xf])
		}
		i++
		start = i
	}
	_, _ = bw.Write(b[start:])
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
