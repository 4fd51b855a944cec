package console

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/delaybridge/delaybridge/flowstate"
	"github.com/delaybridge/delaybridge/internal/flowtext"
	"github.com/delaybridge/delaybridge/queue"
)

// Flow control on the console: the limits in force (those each live
// daemon's environment gives the topic, flowstate's EnvOf and
// queue.Replicas, or Options.Limits while no daemon is known, overridden by
// those set at run time) and whether a replica holds the topic now
// (flowstate's HeldOf), on the overview and the topic page; and the limit
// action, the console's `delaybridge limit`. The words are flowtext's, the
// same as the CLI's.

// flowState is a topic's flow control as the console shows it.
type flowState struct {
	Limits flowstate.Limits `json:"limits"`
	// Held is true while a replica reports holding the topic; HeldBy says
	// why ("rate", "queue") and HoldDepth is the hold queue's ready count
	// last read (-1: not known).
	Held      bool     `json:"held"`
	HeldBy    []string `json:"held_by,omitempty"`
	HoldDepth int      `json:"hold_queue_depth"`
}

// LimitsText says what the limits are, for people.
func (f flowState) LimitsText() string { return flowtext.Limits(f.Limits) }

// HeldText says why the topic is held, for people ("" when it is not).
func (f flowState) HeldText() string {
	depth := ""
	if f.HoldDepth >= 0 {
		depth = strconv.Itoa(f.HoldDepth)
	}
	if why := flowtext.HeldWhy(f.HeldBy, f.Limits.HoldQueue, depth); why != "" {
		return "held " + why
	}
	return ""
}

// flows reads the flow control of every topic of ts.
func (s *Server) flows(ctx context.Context, ts []queue.Topic) ([]flowState, error) {
	ls, err := s.flow.LimitsShown(ctx, s.opts.Prefix, ts, func(t queue.Topic) flowstate.Limits {
		if env, ok := s.opts.Limits[t.Name]; ok {
			return env
		}
		return flowstate.EnvLimits(0, "", 0)
	})
	if err != nil {
		return nil, err
	}
	hs, err := s.flow.HeldOf(ctx, ts)
	if err != nil {
		return nil, err
	}
	out := make([]flowState, len(ts))
	for i := range ts {
		f := flowState{Limits: ls[i], Held: len(hs[i]) > 0, HoldDepth: -1}
		for _, h := range hs[i] {
			for _, why := range h.Reasons {
				if !slices.Contains(f.HeldBy, why) {
					f.HeldBy = append(f.HeldBy, why)
				}
			}
			if h.By(flowstate.HeldQueue) {
				f.HoldDepth = max(f.HoldDepth, h.Depth)
			}
		}
		slices.Sort(f.HeldBy)
		out[i] = f
	}
	return out, nil
}

// limitAction is `delaybridge limit` on the console: fields rate and
// hold_above (a number, or "none" to lift it), or off to clear what was
// set at run time.
func (s *Server) limitAction() action {
	parse := func(f url.Values) (flowstate.Override, error) {
		o, err := flowtext.ParseOverride(f.Get("rate"), f.Get("hold_above"))
		switch {
		case err != nil:
			return o, fmt.Errorf("%w: %w", err, errBadInput)
		case f.Get("off") != "" && !o.IsZero():
			return o, fmt.Errorf("clear the limits, or set a rate or hold-above, not both: %w", errBadInput)
		case f.Get("off") == "" && o.IsZero():
			return o, fmt.Errorf("give a rate or a hold-above (a number, or none), or clear the limits: %w", errBadInput)
		}
		return o, nil
	}
	return action{plan: func(_ context.Context, t queue.Topic, f url.Values) (string, error) {
		o, err := parse(f)
		if err != nil {
			return "", err
		}
		if o.IsZero() {
			return fmt.Sprintf("Clear the limits of %s set at run time: every replica returns to its environment's within a second.", t.Name), nil
		}
		return fmt.Sprintf("Set %s on %s: every replica within a second, over its environment's, until cleared. Held messages wait in Redis.", describe(o), t.Name), nil
	}, do: func(ctx context.Context, t queue.Topic, f url.Values) (string, error) {
		o, err := parse(f)
		if err != nil {
			return "", err
		}
		if o.IsZero() {
			had, err := s.flow.ClearLimits(ctx, t)
			if err != nil {
				return "", err
			}
			if !had {
				return t.Name + " had no limits set at run time: its environment's apply.", nil
			}
			return fmt.Sprintf("Cleared the limits of %s set at run time: its environment's apply again.", t.Name), nil
		}
		if err := s.flow.SetLimits(ctx, t, o); err != nil {
			return "", err
		}
		return fmt.Sprintf("Set %s on %s (every replica within a second).", describe(o), t.Name), nil
	}}
}

// describe says what a change of limits sets.
func describe(o flowstate.Override) string {
	var parts []string
	if o.Rate != nil {
		if *o.Rate > 0 {
			parts = append(parts, fmt.Sprintf("rate limit %g/s", *o.Rate))
		} else {
			parts = append(parts, "no rate limit")
		}
	}
	if o.HoldAbove != nil {
		if *o.HoldAbove >= 0 {
			parts = append(parts, fmt.Sprintf("hold above %d ready", *o.HoldAbove))
		} else {
			parts = append(parts, "no hold")
		}
	}
	return strings.Join(parts, ", ")
}
