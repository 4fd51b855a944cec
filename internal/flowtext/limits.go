package flowtext

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/delaybridge/delaybridge/flowstate"
)

// Limits says what l limits and where that comes from, for people: "rate
// limit 300/s (environment)", or per group of replicas when they differ
// ("rate limit 300/s on 2 replicas (a, b); no limit on 1 replica (c)
// (environment)"); "" when nothing limits the topic.
func Limits(l flowstate.Limits) string {
	if !l.Differ() {
		if s := limitsOnly(l.Rate, l.HoldQueue, l.HoldAbove); s != "" {
			return s + " (" + sourceText(l.Source) + ")"
		}
		return ""
	}
	parts := make([]string, len(l.Groups))
	source := flowstate.SourceEnv
	for i, g := range l.Groups {
		s := limitsOnly(g.Rate, g.HoldQueue, g.HoldAbove)
		if s == "" {
			s = "no limit"
		}
		if g.Source == flowstate.SourceRunTime {
			source = flowstate.SourceRunTime
		}
		parts[i] = s + " on " + replicasText(g.Replicas)
	}
	return strings.Join(parts, "; ") + " (" + sourceText(source) + ")"
}

func sourceText(source string) string {
	if source == flowstate.SourceHere {
		return "environment here: no live daemon reports its own"
	}
	return source
}

// replicasText is "1 replica (a)", "2 replicas (a, b)", …, naming the
// first three.
func replicasText(ids []string) string {
	n := fmt.Sprintf("%d replicas", len(ids))
	if len(ids) == 1 {
		n = "1 replica"
	}
	names := strings.Join(ids[:min(3, len(ids))], ", ")
	if len(ids) > 3 {
		names += ", …"
	}
	return n + " (" + names + ")"
}

// limitsOnly says what a rate (0: none) and a hold (holdAbove negative:
// none) limit, without where they come from: "" when nothing.
func limitsOnly(rate float64, holdQueue string, holdAbove int) string {
	var parts []string
	if rate > 0 {
		parts = append(parts, "rate limit "+strconv.FormatFloat(rate, 'f', -1, 64)+"/s")
	}
	if holdAbove >= 0 {
		q := holdQueue
		if q == "" {
			q = "its hold queue"
		}
		parts = append(parts, fmt.Sprintf("holds while %s has more than %d ready", q, holdAbove))
	}
	return strings.Join(parts, ", ")
}
