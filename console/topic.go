package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/delaybridge/delaybridge/internal/opstext"
	"github.com/delaybridge/delaybridge/membership"
	"github.com/delaybridge/delaybridge/queue"
)

// The topic page: per-slot backlog and pause state, then one page of
// messages in one state (queue.List, as `delaybridge ls`), filtered by due
// time. Finding by body prefix filters the rows shown in the browser (the
// prefix never leaves it); finding by id goes through /find.

type topicView struct {
	base
	Layout      topicRow
	Envelope    bool
	Stats       []queue.SlotStats
	States      []string
	State       string
	DueBefore   string
	Limit       int
	Rows        []entryRow
	Next        string // URL of the next page, "" at the end
	ListError   string
	DeadTotal   int64
	PauseReason string
	// Recurrences are the topic's recurring messages (RecurError: why
	// they could not be read).
	Recurrences []queue.RecurrenceInfo
	RecurError  string
	// FlowError is why the flow control could not be read.
	FlowError string
	// Fair: the topic shares its deliveries among keys; Keys are the keys
	// with the most messages scheduled and every paused key (KeysError:
	// why they could not be read).
	Fair      bool
	Keys      []keyRow
	KeysError string
}

// keyRow is one key of a fair topic on its page.
type keyRow struct {
	Key       string
	Scheduled int64 // -1: not among the top keys (a paused key)
	Paused    bool
	Since     time.Time
}

// topKeys is how many keys a fair topic's page lists by messages scheduled.
const topKeys = 10

// keysInto fills the keys of a fair topic: the top keys, then any paused
// key not among them.
func (s *Server) keysInto(ctx context.Context, t queue.Topic, v *topicView) {
	if v.Fair = t.Fair; !t.Fair {
		return
	}
	top, _, err := s.opts.Queue.TopKeys(ctx, t, topKeys)
	if err != nil {
		v.KeysError = err.Error()
		return
	}
	paused, err := s.opts.Queue.PausedKeys(ctx, t)
	if err != nil {
		v.KeysError = err.Error()
		return
	}
	since := map[string]time.Time{}
	for _, p := range paused {
		since[p.Key] = p.Since
	}
	for _, k := range top {
		at, ok := since[k.Key]
		v.Keys = append(v.Keys, keyRow{Key: k.Key, Scheduled: k.Count, Paused: ok, Since: at})
		delete(since, k.Key)
	}
	for _, p := range paused {
		if _, ok := since[p.Key]; ok {
			v.Keys = append(v.Keys, keyRow{Key: p.Key, Scheduled: -1, Paused: true, Since: p.Since})
		}
	}
}

// entryRow is one listed message: named by slot and MessageID in links.
type entryRow struct {
	queue.Entry
	MID     string
	ID      string // envelope id, "" if none
	Preview string
	Link    string
}

// dueLayouts are the forms a due-before filter may take (UTC).
var dueLayouts = []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02"}

func parseDue(s string) (time.Time, error) {
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.UnixMilli(ms), nil
	}
	for _, l := range dueLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("due time %q is neither RFC 3339 (2030-01-02T15:04:05Z), 2030-01-02T15:04 (UTC) nor Unix milliseconds", s)
}

// topicOr404 finds the path's topic, answering the failure itself.
func (s *Server) topicOr404(ctx context.Context, w http.ResponseWriter, r *http.Request) (queue.Layout, queue.Topic, bool) {
	l, t, err := s.layout(ctx, r.PathValue("topic"))
	switch {
	case errors.Is(err, errUnknownTopic):
		s.fail(w, r, http.StatusNotFound, err.Error())
		return l, t, false
	case err != nil:
		s.fail(w, r, http.StatusServiceUnavailable, "Redis: "+err.Error())
		return l, t, false
	}
	return l, t, true
}

func (s *Server) topicPage(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), redisTimeout)
	defer cancel()
	l, t, ok := s.topicOr404(ctx, w, r)
	if !ok {
		return
	}
	stats, err := s.opts.Queue.TopicStats(ctx, t)
	if err != nil {
		s.fail(w, r, http.StatusServiceUnavailable, "Redis: "+err.Error())
		return
	}
	v := topicView{base: s.base(r, "Topic "+t.Name), Layout: summarize(l, stats), Stats: stats,
		Envelope: t.Format == queue.FormatEnvelope, States: []string{"scheduled", "retrying", "inflight", "dead"}}
	v.DeadTotal = v.Layout.Dead
	if fw, err := membership.New(s.opts.Queue).Forwarding(ctx, s.opts.Prefix); err == nil {
		v.Layout.Unforwarded = opstext.Unforwarded(fw, t.Name)
	}
	if flows, err := s.flows(ctx, []queue.Topic{t}); err == nil {
		v.Layout.Flow = flows[0]
	} else {
		v.FlowError = err.Error()
	}
	if v.Recurrences, err = s.opts.Queue.Recurrences(ctx, t); err != nil {
		v.RecurError = err.Error()
	}
	s.keysInto(ctx, t, &v)
	s.listInto(ctx, r, t, &v)
	s.render(w, http.StatusOK, "topic", "layout.html", v)
}

// listInto fills the page of messages the query asks for.
func (s *Server) listInto(ctx context.Context, r *http.Request, t queue.Topic, v *topicView) {
	q := r.URL.Query()
	v.State, v.DueBefore, v.Limit = q.Get("state"), q.Get("due_before"), 50
	if v.State == "" {
		v.State = "scheduled"
	}
	if n, err := strconv.Atoi(q.Get("limit")); err == nil && n > 0 && n <= queue.MaxListLimit {
		v.Limit = n
	}
	opt := queue.ListOptions{State: queue.ListState(v.State), Limit: v.Limit}
	if v.DueBefore != "" {
		due, err := parseDue(v.DueBefore)
		if err != nil {
			v.ListError = err.Error()
			return
		}
		opt.DueBefore = due
	}
	if h := q.Get("page"); h != "" {
		cur, ok := s.cursors.get(h)
		if !ok {
			v.ListError = "This page of the listing has expired: start again from the first page."
			return
		}
		opt.Cursor = cur
	}
	page, err := s.opts.Queue.List(ctx, t, opt)
	if err != nil {
		v.ListError = err.Error()
		return
	}
	for _, e := range page.Entries {
		v.Rows = append(v.Rows, s.entryRow(t, e))
	}
	if page.Next != "" {
		next := url.Values{"state": {v.State}, "limit": {strconv.Itoa(v.Limit)}, "page": {s.cursors.put(page.Next)}}
		if v.DueBefore != "" {
			next.Set("due_before", v.DueBefore)
		}
		v.Next = "/topics/" + url.PathEscape(t.Name) + "?" + next.Encode()
	}
}

func (s *Server) entryRow(t queue.Topic, e queue.Entry) entryRow {
	row := entryRow{Entry: e, MID: queue.MessageID([]byte(e.Member))}
	body := []byte(e.Member)
	if t.Format == queue.FormatEnvelope || queue.IsTick(e.Member) {
		if m, err := t.Decode(e.Member); err == nil {
			row.ID, body = m.ID, m.Body
		}
	}
	row.Preview = preview(body, 200)
	row.Link = messageLink(t.Name, e.Slot, row.MID)
	return row
}

func messageLink(topic string, slot int, mid string) string {
	return "/topics/" + url.PathEscape(topic) + "/messages/" + strconv.Itoa(slot) + "/" + mid
}
