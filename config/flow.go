package config

import (
	"math"
	"strconv"
	"strings"

	"github.com/delaybridge/delaybridge/flowstate"
)

// maxRateLimit bounds RATE_LIMIT: far above what one topic can deliver, low
// enough that the limiter's arithmetic in Lua (doubles) stays exact.
const maxRateLimit = 10_000_000

// flow parses a topic's flow control variables: RATE_LIMIT (deliveries per
// second over every replica, 0 = unlimited) and HOLD_QUEUE with HOLD_ABOVE
// (hold the topic while that RabbitMQ queue holds more ready messages).
func (p *parser) flow(t *Topic, te *topicEnv, pre string) {
	if s := strings.TrimSpace(te.RateLimit); s != "" {
		r, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(r) || r < flowstate.MinRate || r > maxRateLimit {
			p.fail(pre+"RATE_LIMIT", te.RateLimit, "must be a positive decimal number of deliveries per second (e.g. 300 or 0.5), at least 0.001 (one every 1000 s; pause a topic to stop it) and at most 10000000; unset for no limit")
		} else {
			t.RateLimit = r
		}
	}
	t.HoldQueue = strings.TrimSpace(te.HoldQueue)
	above := strings.TrimSpace(te.HoldAbove)
	switch {
	case t.HoldQueue == "" && above == "":
		return
	case t.HoldQueue == "":
		p.fail(pre+"HOLD_QUEUE", "", "is required with "+Prefix+"_"+pre+"HOLD_ABOVE: the RabbitMQ queue whose ready messages are counted")
	case above == "":
		p.fail(pre+"HOLD_ABOVE", "", "is required with "+Prefix+"_"+pre+"HOLD_QUEUE: hold the topic while the queue holds more ready messages than this")
	}
	if above != "" {
		t.HoldAbove = p.intIn(pre+"HOLD_ABOVE", te.HoldAbove, 0, math.MaxInt32)
	}
	if t.Sink != "amqp" {
		p.fail(pre+"HOLD_QUEUE", te.HoldQueue, "needs "+Prefix+"_"+pre+"SINK=amqp: the depth is read from RabbitMQ")
	}
}

// flowValues are the topic's flow control settings as Redacted shows them.
func (t Topic) flowValues(pre string) map[string]string {
	m := map[string]string{pre + "RATE_LIMIT": "", pre + "HOLD_QUEUE": t.HoldQueue, pre + "HOLD_ABOVE": ""}
	if t.RateLimit > 0 {
		m[pre+"RATE_LIMIT"] = strconv.FormatFloat(t.RateLimit, 'f', -1, 64)
	}
	if t.HoldQueue != "" {
		m[pre+"HOLD_ABOVE"] = strconv.Itoa(t.HoldAbove)
	}
	return m
}
