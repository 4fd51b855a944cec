package queue

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Limits are a topic's flow control in force, as stats, the console and
// the registry show it.
type Limits struct {
	// Rate is deliveries per second over every replica (0: none).
	Rate float64 `json:"rate_limit"`
	// HoldQueue and HoldAbove: the topic holds while the queue has more
	// ready messages (HoldAbove -1: no hold).
	HoldQueue string `json:"hold_queue,omitempty"`
	HoldAbove int    `json:"hold_above"`
	// Source is "environment", "run time" (delaybridge limit) or "" when
	// the topic has no limit.
	Source string `json:"source,omitempty"`
}

// EnvLimits are the limits of a topic's environment: rate (0: none), and
// holdAbove when holdQueue is set.
func EnvLimits(rate float64, holdQueue string, holdAbove int) Limits {
	l := Limits{Rate: rate, HoldQueue: holdQueue, HoldAbove: -1}
	if holdQueue != "" {
		l.HoldAbove = holdAbove
	}
	if l.Rate > 0 || l.HoldAbove >= 0 {
		l.Source = "environment"
	}
	return l
}

// InForce returns the limits in force: env's (see EnvLimits), overridden
// by o's fields that are set.
func (o Override) InForce(env Limits) Limits {
	if o.IsZero() {
		return env
	}
	env.Rate, env.HoldAbove = o.Effective(env.Rate, env.HoldAbove)
	env.Source = "run time"
	return env
}

// String says what l limits, for people: "" when nothing.
func (l Limits) String() string {
	var parts []string
	if l.Rate > 0 {
		parts = append(parts, "rate limit "+strconv.FormatFloat(l.Rate, 'f', -1, 64)+"/s")
	}
	if l.HoldAbove >= 0 {
		q := l.HoldQueue
		if q == "" {
			q = "its hold queue"
		}
		parts = append(parts, fmt.Sprintf("holds while %s has more than %d ready", q, l.HoldAbove))
	}
	return strings.Join(parts, ", ")
}

// ParseOverride reads a change of limits as delaybridge limit and the
// console take it: rate, deliveries per second (a positive decimal, or
// "none" to lift it), and holdAbove, ready messages (a whole number, or
// "none"); "" leaves a field unset.
func ParseOverride(rate, holdAbove string) (Override, error) {
	var o Override
	if rate = strings.TrimSpace(rate); rate != "" {
		r := 0.0
		if rate != "none" {
			v, err := strconv.ParseFloat(rate, 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 || v > 10_000_000 {
				return o, fmt.Errorf(`rate %q: want a positive decimal (e.g. 300 or 0.5), at most 10000000, or "none"`, rate)
			}
			r = v
		}
		o.Rate = &r
	}
	if holdAbove = strings.TrimSpace(holdAbove); holdAbove != "" {
		h := -1
		if holdAbove != "none" {
			v, err := strconv.Atoi(holdAbove)
			if err != nil || v < 0 || v > math.MaxInt32 {
				return o, fmt.Errorf(`hold-above %q: want a whole number of ready messages, or "none"`, holdAbove)
			}
			h = v
		}
		o.HoldAbove = &h
	}
	return o, nil
}
