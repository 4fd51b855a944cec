package config

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/delaybridge/delaybridge/flowstate"
	"github.com/delaybridge/delaybridge/queue"
)

// maxDedupWindow bounds DEDUP_WINDOW: a month of remembered ids is already
// more Redis memory than most operators mean to spend.
const maxDedupWindow = 720 * time.Hour

// dedup parses a topic's DEDUP_WINDOW: how long a delivered id stays known,
// so that a producer's retry of it is one delivery. Only envelopes have ids.
func (p *parser) dedup(t *Topic, te *topicEnv, pre string) {
	t.DedupWindow = p.duration(pre+"DEDUP_WINDOW", te.DedupWindow, 0, maxDedupWindow)
	if t.DedupWindow > 0 && t.Format != queue.FormatEnvelope {
		p.fail(pre+"DEDUP_WINDOW", te.DedupWindow, "needs "+Prefix+"_"+pre+"FORMAT=envelope: only envelopes have ids to remember")
	}
}

// fair parses a topic's FAIR: round-robin among the keys of due messages
// (only envelopes have keys), and its KEY_RATE_LIMIT.
func (p *parser) fair(t *Topic, te *topicEnv, pre string) {
	t.Fair = p.bool(pre+"FAIR", te.Fair)
	if t.Fair && t.Format != queue.FormatEnvelope {
		p.fail(pre+"FAIR", te.Fair, "needs "+Prefix+"_"+pre+"FORMAT=envelope: only envelopes have keys")
	}
	s := strings.TrimSpace(te.KeyRateLimit)
	if s == "" {
		return
	}
	r, err := strconv.ParseFloat(s, 64)
	switch {
	case err != nil || math.IsNaN(r) || r < flowstate.MinRate || r > maxRateLimit:
		p.fail(pre+"KEY_RATE_LIMIT", te.KeyRateLimit, "must be a positive decimal number of deliveries per second of each key (e.g. 20 or 0.5), at least 0.001 and at most 10000000; unset for no limit")
	case !t.Fair:
		p.fail(pre+"KEY_RATE_LIMIT", te.KeyRateLimit, "needs "+Prefix+"_"+pre+"FAIR=true: only a fair topic keeps turns per key")
	default:
		t.KeyRateLimit = r
	}
}
