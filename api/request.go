package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

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

// decode reads a JSON request body into v: the content type must be JSON
// (415), the body within MaxRequest (413), one JSON value whose every field
// v knows (400).
func (s *Server) decode(w http.ResponseWriter, r *http.Request, v any, types ...string) *apiError {
	dec, ae := s.jsonBody(w, r, types...)
	if ae != nil {
		return ae
	}
	err := dec.Decode(v)
	if err == nil {
		err = endOfBody(dec)
	}
	return decodeErr(err)
}

// jsonBody checks the content type (415) and returns a strict decoder of
// the body, bounded by MaxRequest.
func (s *Server) jsonBody(w http.ResponseWriter, r *http.Request, types ...string) (*json.Decoder, *apiError) {
	ct := r.Header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	if types == nil {
		types = []string{"application/json"}
	}
	if err != nil || !contains(types, mt) {
		return nil, refuse(http.StatusUnsupportedMediaType, "unsupported_media_type",
			fmt.Sprintf("Content-Type must be %s, not %q", strings.Join(types, " or "), ct))
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
