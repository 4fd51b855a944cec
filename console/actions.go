package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/delaybridge/delaybridge/internal/opstext"
	"github.com/delaybridge/delaybridge/membership"
	"github.com/delaybridge/delaybridge/queue"
)

// An action is a POST to /topics/{topic}/{name}. Without confirm=yes it
// changes nothing and answers a page that says what it would do, with a
// form that posts the same fields again confirmed; with it, it runs the
// same queue function as the CLI and answers what it did.

// action describes and runs one kind of change.
type action struct {
	// plan says what the request would do, or why it cannot.
	plan func(ctx context.Context, t queue.Topic, f url.Values) (string, error)
	// do does it and says what it did.
	do func(ctx context.Context, t queue.Topic, f url.Values) (string, error)
}

// formFields are the fields an action reads, carried through the
// confirmation page.
var formFields = []string{"reason", "all", "slot", "mid", "id", "in", "at", "rid", "rate", "hold_above", "off", "key"}

// errBadInput marks a request the user must change (400).
var errBadInput = errors.New("bad input")

type confirmView struct {
	base
	Topic, Action, Plan, URL string
	Fields                   [][2]string
}

type resultView struct {
	base
	Topic, Action, Result string
	OK                    bool
}

func (s *Server) action(name string, a action) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
		if !s.authorize(w, r) {
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), 4*redisTimeout)
		defer cancel()
		_, t, ok := s.topicOr404(ctx, w, r)
		if !ok {
			return
		}
		f := url.Values{}
		for _, k := range formFields {
			if v := strings.TrimSpace(r.PostFormValue(k)); v != "" {
				f.Set(k, v)
			}
		}
		if r.PostFormValue("confirm") != "yes" {
			s.confirm(ctx, w, r, t, name, a, f)
			return
		}
		msg, err := a.do(ctx, t, f)
		status := http.StatusOK
		if err != nil {
			status, msg = actionStatus(err), opstext.WithSetting(err.Error(), err)
		} else if dueNow[name] {
			msg += s.unforwardedNote(ctx, t)
		}
		s.opts.Log.Info("console action", "topic", t.Name, "action", name, "slot", f.Get("slot"),
			"mid", f.Get("mid"), "all", f.Get("all") != "", "status", status)
		if plainAnswer(r) {
			writePlain(w, status, msg)
			return
		}
		v := resultView{base: s.base(r, name+" "+t.Name), Topic: t.Name, Action: name, Result: msg, OK: err == nil}
		s.render(w, status, "result", "layout.html", v)
	})
}

func (s *Server) confirm(ctx context.Context, w http.ResponseWriter, r *http.Request, t queue.Topic, name string, a action, f url.Values) {
	plan, err := a.plan(ctx, t, f)
	if plainAnswer(r) {
		if err != nil {
			writePlain(w, actionStatus(err), err.Error())
		} else {
			writePlain(w, http.StatusOK, plan+" Nothing was done: send confirm=yes to do it.")
		}
		return
	}
	if err != nil {
		v := resultView{base: s.base(r, name+" "+t.Name), Topic: t.Name, Action: name, Result: err.Error()}
		s.render(w, actionStatus(err), "result", "layout.html", v)
		return
	}
	v := confirmView{base: s.base(r, "Confirm: "+name), Topic: t.Name, Action: name, Plan: plan,
		URL: "/topics/" + url.PathEscape(t.Name) + "/" + name}
	for _, k := range formFields {
		if f.Has(k) {
			v.Fields = append(v.Fields, [2]string{k, f.Get(k)})
		}
	}
	s.render(w, http.StatusOK, "confirm", "layout.html", v)
}

// dueNow are the actions after which messages fall due: each says so when
// no live replica forwards the topic.
var dueNow = map[string]bool{"requeue": true, "reschedule": true, "resume": true}

// unforwardedNote is " Warning: no live replica forwards …", or "" while
// one does (or that cannot be read: the action is done either way).
func (s *Server) unforwardedNote(ctx context.Context, t queue.Topic) string {
	fw, err := membership.New(s.opts.Queue).Forwarding(ctx, s.opts.Prefix)
	if w := opstext.Unforwarded(fw, t.Name); err == nil && w != "" {
		return " Warning: " + w + "."
	}
	return ""
}

// slots is "1 slot" or "n slots".
func slots(n int) string {
	if n == 1 {
		return "1 slot"
	}
	return fmt.Sprintf("%d slots", n)
}

func actionStatus(err error) int {
	switch {
	case errors.Is(err, errBadInput), errors.Is(err, queue.ErrBadDueTime), errors.Is(err, queue.ErrNotEnvelope),
		errors.Is(err, queue.ErrInvalidEnvelope):
		return http.StatusBadRequest
	case errors.Is(err, queue.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, queue.ErrInFlight), errors.Is(err, queue.ErrTick):
		return http.StatusConflict
	}
	return http.StatusServiceUnavailable
}

func (s *Server) actions() map[string]action {
	return map[string]action{
		"pause": {plan: func(_ context.Context, t queue.Topic, f url.Values) (string, error) {
			if f.Has("key") {
				return fmt.Sprintf("Pause key %q of %s: its messages wait, every other key goes on, until it is resumed.", f.Get("key"), t.Name), nil
			}
			return fmt.Sprintf("Pause %s (%s): no replica claims its messages until it is resumed.", t.Name, slots(t.SlotCount())), nil
		}, do: func(ctx context.Context, t queue.Topic, f url.Values) (string, error) {
			if f.Has("key") {
				return s.pauseKey(ctx, t, f.Get("key"), true)
			}
			if err := s.opts.Queue.Pause(ctx, t, f.Get("reason")); err != nil {
				return "", err
			}
			return fmt.Sprintf("Paused %s (%s): no replica claims its messages until it is resumed.", t.Name, slots(t.SlotCount())), nil
		}},
		"resume": {plan: func(_ context.Context, t queue.Topic, f url.Values) (string, error) {
			if f.Has("key") {
				return fmt.Sprintf("Resume key %q of %s: its messages that fell due meanwhile are delivered at once, in order.", f.Get("key"), t.Name), nil
			}
			return fmt.Sprintf("Resume %s: messages that fell due meanwhile are delivered at once, in order.", t.Name), nil
		}, do: func(ctx context.Context, t queue.Topic, f url.Values) (string, error) {
			if f.Has("key") {
				return s.pauseKey(ctx, t, f.Get("key"), false)
			}
			n, err := s.opts.Queue.Resume(ctx, t)
			if err != nil {
				return "", err
			}
			if n == 0 {
				return t.Name + " was not paused.", nil
			}
			return fmt.Sprintf("Resumed %s (%d of %d slots were paused).", t.Name, n, t.SlotCount()), nil
		}},
		"limit":      s.limitAction(),
		"requeue":    {plan: s.planDead("Requeue", "scheduled again, due now, with no attempts"), do: s.requeue},
		"purge":      {plan: s.planDead("Purge", "deleted for good"), do: s.purge},
		"cancel":     {plan: s.planCancel, do: s.cancel},
		"reschedule": {plan: s.planReschedule, do: s.reschedule},
		"recur-rm": {plan: func(_ context.Context, t queue.Topic, f url.Values) (string, error) {
			if f.Get("rid") == "" {
				return "", fmt.Errorf("name the recurrence (rid): %w", errBadInput)
			}
			return fmt.Sprintf("Remove the recurring message %s of %s: its waiting tick is dropped and no later one is delivered.", f.Get("rid"), t.Name), nil
		}, do: s.removeRecurrence},
	}
}

// pauseKey pauses (pause true) or resumes one key of a fair topic.
func (s *Server) pauseKey(ctx context.Context, t queue.Topic, key string, pause bool) (string, error) {
	if key == "" {
		return "", fmt.Errorf("name the key: %w", errBadInput)
	}
	op, verb := s.opts.Queue.ResumeKey, "Resumed"
	if pause {
		op, verb = s.opts.Queue.PauseKey, "Paused"
	}
	changed, err := op(ctx, t, key)
	if errors.Is(err, queue.ErrNotFair) {
		return "", fmt.Errorf("%w: %w", opstext.Wrap(err), errBadInput)
	}
	if err != nil {
		return "", err
	}
	if !changed && pause {
		return fmt.Sprintf("Key %q of %s was paused already.", key, t.Name), nil
	}
	if !changed {
		return fmt.Sprintf("Key %q of %s was not paused.", key, t.Name), nil
	}
	return fmt.Sprintf("%s key %q of %s.", verb, key, t.Name), nil
}

func (s *Server) removeRecurrence(ctx context.Context, t queue.Topic, f url.Values) (string, error) {
	id := f.Get("rid")
	if err := queue.CheckID(id); err != nil {
		return "", fmt.Errorf("recurrence %q: %w", id, errBadInput)
	}
	ok, err := s.opts.Queue.RemoveRecurrence(ctx, t, id)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", fmt.Errorf("no recurring message %s on %s: %w", id, t.Name, queue.ErrNotFound)
	}
	return fmt.Sprintf("Removed the recurring message %s of %s.", id, t.Name), nil
}

// deadRef is the dead message(s) a form names: all of them, or one by
// slot and MessageID (looked up to its member; it must be dead).
func (s *Server) deadRef(ctx context.Context, t queue.Topic, f url.Values) (queue.Ref, string, error) {
	if f.Get("all") != "" {
		n, err := s.opts.Queue.DeadCount(ctx, t)
		return queue.Ref{All: true}, fmt.Sprintf("all %d dead messages of %s", n, t.Name), err
	}
	e, err := s.findEntry(ctx, t, f)
	if err != nil {
		return queue.Ref{}, "", err
	}
	if e.State != "dead" {
		return queue.Ref{}, "", fmt.Errorf("message %s is %s, not dead: %w", f.Get("mid"), e.State, errBadInput)
	}
	return queue.ByMember([]byte(e.Member)), fmt.Sprintf("dead message %s (slot %d) of %s", f.Get("mid"), e.Slot, t.Name), nil
}

func (s *Server) findEntry(ctx context.Context, t queue.Topic, f url.Values) (queue.Entry, error) {
	var slot int
	if _, err := fmt.Sscan(f.Get("slot"), &slot); err != nil || !midPattern.MatchString(f.Get("mid")) {
		return queue.Entry{}, fmt.Errorf("name a message by slot and mid (32 hex digits), or all: %w", errBadInput)
	}
	return s.opts.Queue.FindMessageID(ctx, t, slot, f.Get("mid"))
}

func (s *Server) planDead(verb, what string) func(context.Context, queue.Topic, url.Values) (string, error) {
	return func(ctx context.Context, t queue.Topic, f url.Values) (string, error) {
		_, desc, err := s.deadRef(ctx, t, f)
		if err != nil {
			return "", err
		}
		return verb + " " + desc + ": " + what + ".", nil
	}
}

func (s *Server) requeue(ctx context.Context, t queue.Topic, f url.Values) (string, error) {
	ref, desc, err := s.deadRef(ctx, t, f)
	if err != nil {
		return "", err
	}
	res, err := s.opts.Queue.Requeue(ctx, t, ref)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("Requeued %d (%s); %d skipped (a newer message has the id).", res.Requeued, desc, res.Skipped), nil
}

func (s *Server) purge(ctx context.Context, t queue.Topic, f url.Values) (string, error) {
	ref, desc, err := s.deadRef(ctx, t, f)
	if err != nil {
		return "", err
	}
	n, err := s.opts.Queue.Purge(ctx, t, ref)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("Purged %d (%s).", n, desc), nil
}

func (s *Server) planCancel(_ context.Context, t queue.Topic, f url.Values) (string, error) {
	if f.Get("id") == "" {
		return "", fmt.Errorf("cancel needs the envelope id: %w", errBadInput)
	}
	return fmt.Sprintf("Cancel the message with id %q on %s (if it is not claimed yet).", f.Get("id"), t.Name), nil
}

func (s *Server) cancel(ctx context.Context, t queue.Topic, f url.Values) (string, error) {
	ok, err := s.opts.Queue.CancelID(ctx, t, f.Get("id"))
	if err != nil {
		return "", err
	}
	if !ok {
		return "", fmt.Errorf("id %q is not scheduled on %s: %w", f.Get("id"), t.Name, queue.ErrNotFound)
	}
	return fmt.Sprintf("Cancelled the message with id %q on %s.", f.Get("id"), t.Name), nil
}

// when reads the reschedule form: in (a duration) or at (a due time, UTC).
func when(f url.Values) (queue.When, string, error) {
	if in := f.Get("in"); in != "" {
		d, err := time.ParseDuration(in)
		if err != nil {
			return queue.When{}, "", fmt.Errorf("in %q is not a duration such as 90s, 15m or 36h: %w", in, errBadInput)
		}
		return queue.In(d), "in " + d.String(), nil
	}
	at, err := parseDue(f.Get("at"))
	if err != nil {
		return queue.When{}, "", fmt.Errorf("%w: %w", err, errBadInput)
	}
	return queue.At(at), "at " + at.UTC().Format(time.RFC3339), nil
}

func (s *Server) planReschedule(_ context.Context, t queue.Topic, f url.Values) (string, error) {
	_, desc, err := when(f)
	if err != nil {
		return "", err
	}
	if f.Get("id") == "" {
		return "", fmt.Errorf("reschedule needs the envelope id: %w", errBadInput)
	}
	return fmt.Sprintf("Reschedule the message with id %q on %s to fall due %s.", f.Get("id"), t.Name, desc), nil
}

func (s *Server) reschedule(ctx context.Context, t queue.Topic, f url.Values) (string, error) {
	w, _, err := when(f)
	if err != nil {
		return "", err
	}
	rc, err := s.opts.Queue.Reschedule(ctx, t, queue.ByID(f.Get("id")), w)
	if err != nil {
		return "", err
	}
	due := queue.MillisTime(rc.Score).UTC().Format("2006-01-02 15:04:05.000 UTC")
	return fmt.Sprintf("Rescheduled the message with id %q on %s: now due %s.", f.Get("id"), t.Name, due), nil
}
