package api

import (
	"net/http"

	"github.com/delaybridge/delaybridge/queue"
)

// MaxBatch is the most messages one batch request schedules.
const MaxBatch = 1000

type batchIn struct {
	Messages []messageIn `json:"messages"`
}

// batchResult is one message's outcome: its status with a receipt, or an
// error.
type batchResult struct {
	Status int `json:"status"`
	*receiptOut
	*errorBody
}

type batchOut struct {
	Results []batchResult `json:"results"`
	// Warning: see receiptOut.Warning.
	Warning string `json:"warning,omitempty"`
}

// scheduleBatch is POST /v1/topics/{topic}/messages:batch: every valid
// message is scheduled (one script call per slot's worth, all in one
// pipeline: see queue.ScheduleEach), each invalid one answers its own
// error, in order. A request that is not a valid batch writes nothing.
func (s *Server) scheduleBatch(w http.ResponseWriter, r *http.Request, t queue.Topic, l queue.Layout) {
	release, ok := s.batchSlot(w)
	if !ok {
		return
	}
	defer release()
	var in batchIn
	var ae *apiError
	if in.Messages, ae = s.readBatch(w, r); ae != nil {
		writeError(w, ae.status, ae.code, ae.msg)
		return
	}
	if len(in.Messages) == 0 {
		writeError(w, http.StatusBadRequest, "empty_batch", `the batch has no message: {"messages": [...]}`)
		return
	}
	out := batchOut{Results: make([]batchResult, len(in.Messages))}
	items := make([]queue.Item, 0, len(in.Messages))
	index := make([]int, 0, len(in.Messages)) // items[k] is message index[k]
	for i, m := range in.Messages {
		it, ae := s.item(t, l, m)
		if ae != nil {
			out.Results[i] = batchResult{Status: ae.status, errorBody: &errorBody{Error: ae.msg, Code: ae.code}}
			continue
		}
		items = append(items, it)
		index = append(index, i)
	}
	receipts, errs := s.opts.Queue.ScheduleEach(r.Context(), t, items)
	for k, i := range index {
		if errs[k] != nil {
			if queue.Unconfirmed(errs[k]) {
				w.Header().Set("Retry-After", retryAfter)
			}
			ae := classify(errs[k])
			if ae.status >= 500 {
				s.opts.Log.Warn("api batch message failed", "route", r.Pattern, "topic", t.Name, "err", errs[k])
			}
			out.Results[i] = batchResult{Status: ae.status, errorBody: &errorBody{Error: ae.msg, Code: ae.code}}
			continue
		}
		rc := receipt(receipts[k])
		out.Results[i] = batchResult{Status: scheduledStatus(receipts[k]), receiptOut: &rc}
	}
	out.Warning = s.unforwarded(r.Context(), t)
	writeJSON(w, http.StatusOK, out)
}
