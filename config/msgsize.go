package config

import (
	"strconv"
	"strings"

	"github.com/delaybridge/delaybridge/queue"
)

// maxMessageSizeVar is the suffix of DELAYBRIDGE_MAX_MESSAGE_SIZE and of
// each topic's DELAYBRIDGE_TOPIC_<NAME>_MAX_MESSAGE_SIZE.
const maxMessageSizeVar = "MAX_MESSAGE_SIZE"

// maxMessageSizeCap bounds MAX_MESSAGE_SIZE as the sinks' own size
// variables are bounded: 512 MiB, Redis's proto-max-bulk-len.
const maxMessageSizeCap = 512 << 20

// MessageSize is the message size limit every front door checks when it
// accepts a message (queue.Topic.MaxMessageSize): the HTTP API, the CLI,
// the intakes and the Go API the daemon builds.
type MessageSize struct {
	// Default is DELAYBRIDGE_MAX_MESSAGE_SIZE, bytes.
	Default int
	// Topics are the DELAYBRIDGE_TOPIC_<NAME>_MAX_MESSAGE_SIZE that are set,
	// by the topic's VarName.
	Topics map[string]int
}

// messageSize parses MAX_MESSAGE_SIZE and the MAX_MESSAGE_SIZE of every
// topic set in environ, listed in DELAYBRIDGE_TOPICS or not: the HTTP API
// and the CLI serve every topic registered in Redis.
func (p *parser) messageSize(e *env, environ []string) MessageSize {
	s := MessageSize{Default: p.intIn(maxMessageSizeVar, e.MaxMessageSize, 1, maxMessageSizeCap)}
	for _, kv := range environ {
		name, value, _ := strings.Cut(kv, "=")
		v, ok := strings.CutPrefix(name, Prefix+"_TOPIC_")
		if !ok {
			continue
		}
		if v, ok = strings.CutSuffix(v, "_"+maxMessageSizeVar); !ok || v == "" || strings.TrimSpace(value) == "" {
			continue
		}
		if s.Topics == nil {
			s.Topics = map[string]int{}
		}
		s.Topics[v] = p.intIn("TOPIC_"+v+"_"+maxMessageSizeVar, value, 1, maxMessageSizeCap)
	}
	return s
}

// Of is the limit of topic: its own variable's, or the default.
func (s MessageSize) Of(topic string) int {
	if n, ok := s.Topics[VarName(topic)]; ok {
		return n
	}
	return s.Default
}

// Apply is t with its limit set (queue.Topic.MaxMessageSize), for a topic
// the registry named.
func (s MessageSize) Apply(t queue.Topic) queue.Topic {
	t.MaxMessageSize = s.Of(t.Name)
	return t
}

// values are the MAX_MESSAGE_SIZE variables as Redacted shows them.
func (s MessageSize) values() map[string]string {
	m := map[string]string{maxMessageSizeVar: strconv.Itoa(s.Default)}
	for v, n := range s.Topics {
		m["TOPIC_"+v+"_"+maxMessageSizeVar] = strconv.Itoa(n)
	}
	return m
}

// known are the topic variables s read, listed topics or not.
func (s MessageSize) known(known map[string]bool) {
	for v := range s.Topics {
		known[Prefix+"_TOPIC_"+v+"_"+maxMessageSizeVar] = true
	}
}
