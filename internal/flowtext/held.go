package flowtext

import (
	"strings"

	"github.com/delaybridge/delaybridge/flowstate"
)

// HeldWhy says why a topic is held, for people: "by the rate limit" and/or
// "by hold-above (<queue>: <depth>)", joined by "and"; "" when reasons is
// empty. depth is the hold queue's depth as the caller writes numbers, ""
// when it was not read.
func HeldWhy(reasons []string, holdQueue, depth string) string {
	var parts []string
	for _, why := range reasons {
		switch why {
		case flowstate.HeldRate:
			parts = append(parts, "by the rate limit")
		case flowstate.HeldQueue:
			if holdQueue == "" {
				holdQueue = "the hold queue"
			}
			if depth == "" {
				depth = "depth not read"
			} else {
				depth += " ready"
			}
			parts = append(parts, "by hold-above ("+holdQueue+": "+depth+")")
		}
	}
	return strings.Join(parts, " and ")
}
