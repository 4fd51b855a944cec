package console

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/delaybridge/delaybridge/queue"
)

// A message's page is /topics/{topic}/messages/{slot}/{mid}: the slot and
// the MessageID (hex SHA-256 prefix) of its member, looked up with
// queue.FindMessageID. Its bytes are never in the URL.

var midPattern = regexp.MustCompile(`^[0-9a-f]{32}$`)

// maxShownBody bounds the bytes of a body a page shows.
const maxShownBody = 1 << 20

type messageView struct {
	base
	Topic    string
	Envelope bool
	Entry    queue.Entry
	MID      string
	ID       string
	Headers  [][2]string
	Routing  string
	BodyKind string // "json", "text" or "hex"
	Body     string
	BodySize int
	Cut      bool
	Invalid  string // why an envelope does not decode
}

func (s *Server) messagePage(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), redisTimeout)
	defer cancel()
	_, t, ok := s.topicOr404(ctx, w, r)
	if !ok {
		return
	}
	e, ok := s.lookup(ctx, w, r, t, r.PathValue("slot"), r.PathValue("mid"))
	if !ok {
		return
	}
	v := messageView{base: s.base(r, "Message "+queue.MessageID([]byte(e.Member))), Topic: t.Name,
		Envelope: t.Format == queue.FormatEnvelope, Entry: e, MID: queue.MessageID([]byte(e.Member))}
	body := []byte(e.Member)
	if v.Envelope {
		m, err := t.Decode(e.Member)
		if err != nil {
			v.Invalid = err.Error()
		} else {
			v.ID, v.Routing, body = m.ID, m.RoutingKey, m.Body
			for _, k := range slices.Sorted(maps.Keys(m.Headers)) {
				v.Headers = append(v.Headers, [2]string{k, m.Headers[k]})
			}
		}
	}
	v.BodySize, v.Cut = len(body), len(body) > maxShownBody
	v.BodyKind, v.Body = showBody(body[:min(len(body), maxShownBody)])
	s.render(w, http.StatusOK, "message", "layout.html", v)
}

// lookup finds the message a slot and MessageID name, answering failures.
func (s *Server) lookup(ctx context.Context, w http.ResponseWriter, r *http.Request, t queue.Topic, slotText, mid string) (queue.Entry, bool) {
	slot, err := strconv.Atoi(slotText)
	if err != nil || slot < 0 || slot >= t.SlotCount() || !midPattern.MatchString(mid) {
		s.fail(w, r, http.StatusBadRequest, "A message is named by a slot of the topic and a message id of 32 hex digits.")
		return queue.Entry{}, false
	}
	e, err := s.opts.Queue.FindMessageID(ctx, t, slot, mid)
	switch {
	case errors.Is(err, queue.ErrNotFound):
		s.fail(w, r, http.StatusNotFound, "No message "+mid+" in slot "+slotText+" of "+t.Name+": delivered, cancelled or purged meanwhile.")
		return e, false
	case err != nil:
		s.fail(w, r, http.StatusServiceUnavailable, "Redis: "+err.Error())
		return e, false
	}
	return e, true
}

// findMessage goes to the page of an envelope id (?id=, through the :ids
// index or the dead set, as `delaybridge get`) or of a MessageID (?mid=, in
// every slot).
func (s *Server) findMessage(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), redisTimeout)
	defer cancel()
	_, t, ok := s.topicOr404(ctx, w, r)
	if !ok {
		return
	}
	id, mid := strings.TrimSpace(r.URL.Query().Get("id")), strings.TrimSpace(r.URL.Query().Get("mid"))
	if id != "" && t.Format == queue.FormatEnvelope {
		e, err := s.opts.Queue.InspectID(ctx, t, id)
		if err != nil {
			s.fail(w, r, http.StatusBadRequest, err.Error())
			return
		}
		if e.State == "absent" {
			s.fail(w, r, http.StatusNotFound, "No message with id "+strconv.Quote(id)+" on "+t.Name+".")
			return
		}
		http.Redirect(w, r, messageLink(t.Name, e.Slot, queue.MessageID([]byte(e.Member))), http.StatusSeeOther)
		return
	}
	if mid == "" {
		mid = strings.ToLower(id) // on raw topics the id is the MessageID
	}
	for slot := range t.SlotCount() {
		e, err := s.opts.Queue.FindMessageID(ctx, t, slot, mid)
		if err == nil {
			http.Redirect(w, r, messageLink(t.Name, e.Slot, mid), http.StatusSeeOther)
			return
		}
		if !errors.Is(err, queue.ErrNotFound) {
			s.fail(w, r, http.StatusServiceUnavailable, "Redis: "+err.Error())
			return
		}
	}
	s.fail(w, r, http.StatusNotFound, "No message with id "+strconv.Quote(mid)+" on "+t.Name+".")
}

// showBody picks how to show a body: JSON pretty-printed, text as is,
// anything else as a hex dump. The template escapes all three.
func showBody(b []byte) (kind, text string) {
	if json.Valid(b) && len(bytes.TrimSpace(b)) > 0 {
		var buf bytes.Buffer
		if json.Indent(&buf, b, "", "  ") == nil {
			return "json", buf.String()
		}
	}
	if isText(b) {
		return "text", string(b)
	}
	return "hex", hex.Dump(b)
}

func isText(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	for _, r := range string(b) {
		if r < 0x20 && r != '\n' && r != '\r' && r != '\t' || r == 0x7f {
			return false
		}
	}
	return true
}

// preview is the start of a body for a listing: text cut at max bytes, or
// a note for binary.
func preview(b []byte, max int) string {
	if !utf8.Valid(b) {
		return "(" + strconv.Itoa(len(b)) + " bytes of binary)"
	}
	if len(b) <= max {
		return string(b)
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(b[cut]) {
		cut--
	}
	return string(b[:cut]) + "…"
}
