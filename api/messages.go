package api

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/delaybridge/delaybridge/queue"
)

// messageIn is one message to schedule.
type messageIn struct {
	ID         string            `json:"id,omitempty"`
	Body       rawJSON           `json:"body,omitempty"`
	BodyBase64 rawJSON           `json:"body_base64,omitempty"`
	Headers    map[string]string `json:"headers,omitempty"`
	RoutingKey string            `json:"routing_key,omitempty"`
	Key        string            `json:"key,omitempty"`
	Due        json.RawMessage   `json:"due,omitempty"`
	Delay      string            `json:"delay,omitempty"`
}

// receiptOut answers a schedule or a reschedule.
type receiptOut struct {
	ID    string `json:"id"`
	Due   string `json:"due"`
	DueMs int64  `json:"due_ms"`
	// Replaced is what the same id (or raw member) held before: "" (new),
	// "scheduled" or "in-flight".
	Replaced string `json:"replaced,omitempty"`
	// Duplicate: the id was delivered within its topic's dedup window, so
	// nothing was scheduled (200); due is the time asked for.
	Duplicate bool `json:"duplicate,omitempty"`
	// Warning says why the message, accepted, may wait for no one: no
	// live replica forwards its topic.
	Warning string `json:"warning,omitempty"`
}

func receipt(r queue.Receipt) receiptOut {
	out := receiptOut{ID: r.ID, Due: formatTime(r.Due()), DueMs: int64(r.Score), Duplicate: r.Duplicate}
	if r.Replaced != queue.ReplacedNothing {
		out.Replaced = r.Replaced.String()
	}
	return out
}

// scheduledStatus is a schedule's status: 201 for a new message, 200 for
// one that replaced another or a duplicate (nothing new was created).
func scheduledStatus(r queue.Receipt) int {
	if r.Replaced == queue.ReplacedNothing && !r.Duplicate {
		return http.StatusCreated
	}
	return http.StatusOK
}

func formatTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }

// schedule is POST /v1/topics/{topic}/messages.
func (s *Server) schedule(w http.ResponseWriter, r *http.Request, t queue.Topic, l queue.Layout) {
	var in messageIn
	if ae := s.decode(w, r, &in); ae != nil {
		writeError(w, ae.status, ae.code, ae.msg)
		return
	}
	item, ae := s.item(t, l, in)
	if ae != nil {
		writeError(w, ae.status, ae.code, ae.msg)
		return
	}
	rc, err := s.opts.Queue.Schedule(r.Context(), t, item.Message, item.When)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	status := scheduledStatus(rc)
	w.Header().Set("Location", "/v1/topics/"+url.PathEscape(t.Name)+"/messages/"+url.PathEscape(rc.ID))
	out := receipt(rc)
	out.Warning = s.unforwarded(r.Context(), t)
	writeJSON(w, status, out)
}

// item turns a request's message into what the queue schedules, checking
// everything that can be checked before Redis.
func (s *Server) item(t queue.Topic, l queue.Layout, in messageIn) (queue.Item, *apiError) {
	body, ae := bodyOf(in)
	if ae != nil {
		return queue.Item{}, ae
	}
	if limit := t.MaxMessageSize; limit > 0 && len(body) > limit {
		return queue.Item{}, refuse(http.StatusRequestEntityTooLarge, "body_too_large",
			fmt.Sprintf("the body is %d bytes, over the message size limit of %d bytes of topic %s", len(body), limit, t.Name))
	}
	if limit := s.opts.MaxBody[l.Sink]; limit > 0 && len(body) > limit {
		return queue.Item{}, refuse(http.StatusRequestEntityTooLarge, "body_too_large",
			fmt.Sprintf("the body is %d bytes, over the %d the %s sink of topic %s takes", len(body), limit, l.Sink, t.Name))
	}
	when, ae := whenOf(in.Due, in.Delay)
	if ae != nil {
		return queue.Item{}, ae
	}
	m := queue.Message{ID: in.ID, Body: body, Headers: in.Headers, RoutingKey: in.RoutingKey, Key: in.Key}
	if t.Format == queue.FormatEnvelope && m.ID == "" {
		m.ID = newID()
	}
	// Encode is what the queue runs first: its refusals (a raw topic given
	// an id, a bad header) come back before anything is written. They do
	// not depend on the body, so the probe has none: a large body is not
	// encoded twice.
	probe := m
	probe.Body = nil
	if _, err := t.Encode(probe); err != nil {
		return queue.Item{}, classify(err)
	}
	if ae := s.routingKeyAllowed(t, l, m.RoutingKey); ae != nil {
		return queue.Item{}, ae
	}
	return queue.Item{Message: m, When: when}, nil
}

// bodyOf is the body of a message: body (a JSON string is its text, any
// other JSON value its JSON text) or body_base64, never both. A string
// without escapes is the body as it is in the request, not a copy.
func bodyOf(in messageIn) ([]byte, *apiError) {
	b64 := bytes.TrimSpace(in.BodyBase64)
	hasB64 := len(b64) > 0 && string(b64) != "null"
	if in.Body != nil && hasB64 {
		return nil, refuse(http.StatusBadRequest, "invalid_message", "give body or body_base64, not both")
	}
	if hasB64 {
		text, ok := plainString(b64)
		if !ok {
			var s string
			if err := json.Unmarshal(b64, &s); err != nil {
				return nil, refuse(http.StatusBadRequest, "invalid_message", "body_base64 must be a JSON string: "+err.Error())
			}
			text = []byte(s)
		}
		b := make([]byte, base64.StdEncoding.DecodedLen(len(text)))
		n, err := base64.StdEncoding.Decode(b, text)
		if err != nil {
			return nil, refuse(http.StatusBadRequest, "invalid_message", "body_base64 is not standard base64: "+err.Error())
		}
		return b[:n], nil
	}
	raw := bytes.TrimSpace(in.Body)
	switch {
	case len(raw) == 0 || string(raw) == "null":
		return []byte{}, nil
	case raw[0] == '"':
		if text, ok := plainString(raw); ok {
			return text, nil
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, refuse(http.StatusBadRequest, "invalid_message", "body: "+err.Error())
		}
		return []byte(s), nil
	default:
		return raw, nil
	}
}

// plainString is the text of JSON string raw when it has no escape (nor a
// byte JSON forbids unescaped), as a slice of raw; ok is false otherwise.
func plainString(raw []byte) (text []byte, ok bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return nil, false
	}
	text = raw[1 : len(raw)-1]
	for _, c := range text {
		if c == '\\' || c == '"' || c < 0x20 {
			return nil, false
		}
	}
	return text, true
}

// detach gives m its own copies of the values it keeps of the JSON text,
// for a message decoded from a json.Decoder, whose buffer is reused.
func (m *messageIn) detach() {
	m.Body = bytes.Clone(m.Body)
	m.BodyBase64 = bytes.Clone(m.BodyBase64)
}

// whenOf reads a due time: due (Unix milliseconds, or RFC 3339 text) or
// delay (a Go duration: "90s", "30m"); neither is now.
func whenOf(due json.RawMessage, delay string) (queue.When, *apiError) {
	raw := bytes.TrimSpace(due)
	hasDue := len(raw) > 0 && string(raw) != "null"
	switch {
	case hasDue && delay != "":
		return queue.When{}, refuse(http.StatusBadRequest, "invalid_due", "give due or delay, not both")
	case delay != "":
		d, err := time.ParseDuration(delay)
		if err != nil || d < 0 {
			return queue.When{}, refuse(http.StatusBadRequest, "invalid_due", fmt.Sprintf("delay %q must be a duration such as 90s, 30m or 1h30m, not negative", delay))
		}
		return queue.In(d), nil
	case !hasDue:
		return queue.When{}, nil
	case raw[0] == '"':
		var s string
		_ = json.Unmarshal(raw, &s)
		at, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return queue.When{}, refuse(http.StatusBadRequest, "invalid_due", fmt.Sprintf("due %q must be Unix milliseconds or RFC 3339 (2026-11-26T08:00:00Z)", s))
		}
		return queue.At(at), nil
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || f != math.Trunc(f) {
		return queue.When{}, refuse(http.StatusBadRequest, "invalid_due", fmt.Sprintf("due %s must be whole Unix milliseconds or RFC 3339 text", raw))
	}
	if f < 0 || f > 1<<53 {
		return queue.When{}, classify(fmt.Errorf("due %s ms: %w", raw, queue.ErrBadDueTime))
	}
	return queue.At(time.UnixMilli(int64(f))), nil
}

// newID is a random id for an envelope sent without one: 128 bits, in the
// form of a UUID (version 4).
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return strings.Join([]string{h[:8], h[8:12], h[12:16], h[16:20], h[20:]}, "-")
}
