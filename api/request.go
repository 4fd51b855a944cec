package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/delaybridge/delaybridge/queue"
)

// topicHandler serves a request about one registered topic.
type topicHandler func(w http.ResponseWriter, r *http.Request, t queue.Topic, l queue.Layout)

// topicRoute checks the token and its topics (403 outside them, before
// telling whether the topic exists), bounds the request's Redis calls, and
// looks the topic up in the registry.
func (s *Server) topicRoute(h topicHandler) http.Handler {
	return s.authorized(func(w http.ResponseWriter, r *http.Request, g grant) {
		name := r.PathValue("topic")
		if !g.allows(name) {
			writeError(w, http.StatusForbidden, "forbidden", fmt.Sprintf("this token may not use topic %q", name))
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), redisTimeout)
		defer cancel()
		r = r.WithContext(ctx)
		l, ok, err := s.opts.Queue.Layout(ctx, s.opts.Prefix, name)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		if !ok {
			writeError(w, http.StatusNotFound, "unknown_topic",
				fmt.Sprintf("topic %q is not registered: a daemon forwarding it registers it", name))
			return
		}
		spanTopic(r, name)
		t := l.Topic(s.opts.Prefix)
		if s.opts.MaxMessageSize != nil {
			t.MaxMessageSize = s.opts.MaxMessageSize(name)
		}
		if err := t.Validate(); err != nil {
			s.fail(w, r, fmt.Errorf("registry %s: %w", queue.TopicsKey(s.opts.Prefix), err))
			return
		}
		h(w, r, t, l)
	})
}

// withBudget serves h once the request's body has its share of the request
// memory for request bodies (see bodyMemory): a body declared over MaxRequest is refused
// with 413 before a byte of it is read, one that does not fit in time with
// 503 and Retry-After.
func (s *Server) withBudget(h topicHandler) topicHandler {
	return func(w http.ResponseWriter, r *http.Request, t queue.Topic, l queue.Layout) {
		if r.ContentLength > s.opts.MaxRequest {
			ae := decodeErr(&http.MaxBytesError{Limit: s.opts.MaxRequest})
			writeError(w, ae.status, ae.code, ae.msg)
			return
		}
		release, ok := s.reserve(w, r, s.bodyCost(r))
		if !ok {
			return
		}
		defer release()
		h(w, r, t, l)
	}
}

// decode reads a JSON request body into v: the content type must be JSON
// (415), the body within MaxRequest (413), one JSON value whose every field
// v knows (400). The body is read into one buffer of its declared length
// and decoded in place: a large body is held once, not grown and copied by
// a decoder (see bodyBytes and rawJSON).
func (s *Server) decode(w http.ResponseWriter, r *http.Request, v any, types ...string) *apiError {
	buf, ae := s.bodyBytes(w, r, types...)
	if ae != nil {
		return ae
	}
	err := knownFields(buf, v)
	if err == nil {
		err = json.Unmarshal(buf, v)
	}
	return decodeErr(err)
}

// checkType refuses (415) a request whose content type is none of types
// (default: JSON).
func checkType(r *http.Request, types []string) *apiError {
	ct := r.Header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	if types == nil {
		types = []string{"application/json"}
	}
	if err != nil || !contains(types, mt) {
		return refuse(http.StatusUnsupportedMediaType, "unsupported_media_type",
			fmt.Sprintf("Content-Type must be %s, not %q", strings.Join(types, " or "), ct))
	}
	return nil
}

// bodyBytes checks the content type (415) and reads the body, bounded by
// MaxRequest (413), into one buffer of its declared length; it must be
// UTF-8 (400).
func (s *Server) bodyBytes(w http.ResponseWriter, r *http.Request, types ...string) ([]byte, *apiError) {
	if ae := checkType(r, types); ae != nil {
		return nil, ae
	}
	body := http.MaxBytesReader(w, r.Body, s.opts.MaxRequest)
	var buf []byte
	var err error
	if n := r.ContentLength; n >= 0 && n <= s.opts.MaxRequest {
		buf = make([]byte, n)
		_, err = io.ReadFull(body, buf)
	} else {
		buf, err = io.ReadAll(body)
	}
	if err == nil && !utf8.Valid(buf) {
		err = errInvalidUTF8
	}
	if err != nil {
		return nil, decodeErr(err)
	}
	return buf, nil
}

// knownFields fails, as a decoder that disallows unknown fields would, when
// data is an object with a key that struct v (a pointer to it) has no
// field for; keys match field names without regard to case, as
// encoding/json matches them. It copies no value.
func knownFields(data []byte, v any) error {
	var keys map[string]skipJSON
	if err := json.Unmarshal(data, &keys); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			return nil // not an object: v's own decoding says so
		}
		return err
	}
	fields := jsonFields(reflect.TypeOf(v).Elem())
	for k := range keys {
		if !slices.ContainsFunc(fields, func(f string) bool { return strings.EqualFold(f, k) }) {
			return fmt.Errorf("json: unknown field %q", k)
		}
	}
	return nil
}

// skipJSON takes any JSON value and keeps nothing.
type skipJSON struct{}

func (*skipJSON) UnmarshalJSON([]byte) error { return nil }

// jsonFields are the JSON names of struct type t's fields.
func jsonFields(t reflect.Type) []string {
	var names []string
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-" || !f.IsExported():
		case name == "":
			names = append(names, f.Name)
		default:
			names = append(names, name)
		}
	}
	return names
}

// rawJSON is a JSON value kept as its text. Unlike json.RawMessage it does
// not copy it: json.Unmarshal hands an Unmarshaler a slice of the input
// itself, which decode owns for the whole request. A value decoded from a
// json.Decoder (whose buffer is reused) must be detached.
type rawJSON []byte

// UnmarshalJSON keeps data.
func (m *rawJSON) UnmarshalJSON(data []byte) error {
	*m = data[:len(data):len(data)]
	return nil
}

// jsonBody checks the content type (415) and returns a strict decoder of
// the body, bounded by MaxRequest.
func (s *Server) jsonBody(w http.ResponseWriter, r *http.Request, types ...string) (*json.Decoder, *apiError) {
	if ae := checkType(r, types); ae != nil {
		return nil, ae
	}
	dec := json.NewDecoder(&utf8Reader{r: http.MaxBytesReader(w, r.Body, s.opts.MaxRequest)})
	dec.DisallowUnknownFields()
	return dec, nil
}

// endOfBody fails unless the decoder has nothing left but white space.
func endOfBody(dec *json.Decoder) error {
	if _, extra := dec.Token(); extra != io.EOF {
		return errors.New("more than one JSON value")
	}
	return nil
}

// decodeErr maps an error of reading a JSON body to its refusal (nil: none).
func decodeErr(err error) *apiError {
	var tooBig *http.MaxBytesError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, errInvalidUTF8):
		return refuse(http.StatusBadRequest, "invalid_utf8", errInvalidUTF8.Error())
	case errors.As(err, &tooBig):
		return refuse(http.StatusRequestEntityTooLarge, "request_too_large",
			fmt.Sprintf("the request body is over %d bytes (DELAYBRIDGE_API_MAX_REQUEST_SIZE)", tooBig.Limit))
	case strings.HasPrefix(err.Error(), "json: unknown field"):
		return refuse(http.StatusBadRequest, "unknown_field", strings.TrimPrefix(err.Error(), "json: "))
	default:
		return refuse(http.StatusBadRequest, "malformed_json", "the request body is not valid JSON for this route: "+
			strings.TrimPrefix(err.Error(), "json: "))
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
