package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
)

// maxBatchRequests is how many batch requests are read and scheduled at
// once: each holds up to MaxBatch decoded messages (up to MaxRequest bytes
// of bodies), so the total a replica holds for batches stays bounded; one
// more waits for none and is answered 503 with Retry-After.
const maxBatchRequests = 4

// batchRetryAfter is the Retry-After of a batch refused because
// maxBatchRequests are being served.
const batchRetryAfter = 1

// errBatchFull stops reading a batch at its MaxBatch+1st message.
var errBatchFull = errors.New("batch too large")

// readBatch decodes {"messages": [...]} one message at a time and stops at
// the MaxBatch+1st, so a request of many small entries never holds more
// than MaxBatch of them (a 16 MiB body of {} entries decoded whole took
// 1.8 GB before its count was checked).
func (s *Server) readBatch(w http.ResponseWriter, r *http.Request) ([]messageIn, *apiError) {
	dec, ae := s.jsonBody(w, r)
	if ae != nil {
		return nil, ae
	}
	var msgs []messageIn
	err := readObject(dec, func(key string) error {
		if key != "messages" {
			return fmt.Errorf("json: unknown field %q", key)
		}
		if tok, err := dec.Token(); err != nil {
			return err
		} else if tok != json.Delim('[') {
			return errors.New("messages must be an array")
		}
		for dec.More() {
			if len(msgs) == MaxBatch {
				return errBatchFull
			}
			var m messageIn
			if err := dec.Decode(&m); err != nil {
				return err
			}
			m.detach()
			msgs = append(msgs, m)
		}
		_, err := dec.Token() // ]
		return err
	})
	if err == nil {
		err = endOfBody(dec)
	}
	if errors.Is(err, errBatchFull) {
		return nil, refuse(http.StatusRequestEntityTooLarge, "batch_too_large",
			fmt.Sprintf("the batch has more than %d messages", MaxBatch))
	}
	return msgs, decodeErr(err)
}

// readObject reads one JSON object, calling field for each key with the
// decoder at its value.
func readObject(dec *json.Decoder, field func(key string) error) error {
	if tok, err := dec.Token(); err != nil {
		return err
	} else if tok != json.Delim('{') {
		return errors.New("the body must be a JSON object")
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		if err := field(key); err != nil {
			return err
		}
	}
	_, err := dec.Token() // }
	return err
}

// batchSlot takes one of the maxBatchRequests places, or answers 503 with
// Retry-After and returns false.
func (s *Server) batchSlot(w http.ResponseWriter) (release func(), ok bool) {
	select {
	case s.batches <- struct{}{}:
		return func() { <-s.batches }, true
	default:
		w.Header().Set("Retry-After", strconv.Itoa(batchRetryAfter))
		writeError(w, http.StatusServiceUnavailable, "busy",
			fmt.Sprintf("%d batch requests are being served: retry in %d s", maxBatchRequests, batchRetryAfter))
		return nil, false
	}
}
