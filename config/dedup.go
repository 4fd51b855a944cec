package config

import (
	"time"

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

// fair parses a topic's FAIR: round-robin among the keys of due messages.
// Only envelopes have keys.
func (p *parser) fair(t *Topic, te *topicEnv, pre string) {
	t.Fair = p.bool(pre+"FAIR", te.Fair)
	if t.Fair && t.Format != queue.FormatEnvelope {
		p.fail(pre+"FAIR", te.Fair, "needs "+Prefix+"_"+pre+"FORMAT=envelope: only envelopes have keys")
	}
}
