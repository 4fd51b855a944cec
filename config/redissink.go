package config

import (
	"strings"
)

// Limits of the Redis stream sink's variables.
const (
	// maxSinkRedisMessageSize is Redis's default proto-max-bulk-len: a
	// longer argument makes Redis drop the connection.
	maxSinkRedisMessageSize = 512 << 20
	maxStreamMaxLen         = 1_000_000_000_000
)

// redisSink is the Redis of the stream sink: the daemon's own (daemon)
// unless SINK_REDIS_URL or SINK_REDIS_ADDRS names another, given by the
// SINK_REDIS_ variables as REDIS_ ones give the daemon's.
func (p *parser) redisSink(e *env, daemon Redis) RedisSink {
	s := RedisSink{
		Redis:          daemon,
		MaxMessageSize: p.intIn("SINK_REDIS_MAX_MESSAGE_SIZE", e.SinkRedisMaxMessageSize, 1, maxSinkRedisMessageSize),
	}
	v := e.redisVars("SINK_REDIS_")
	if strings.TrimSpace(v.URL) != "" || strings.TrimSpace(v.Addrs) != "" {
		s.Redis = p.redis("SINK_REDIS_", v)
		return s
	}
	// The daemon's Redis with its settings: one of the sink's own would be
	// ignored, which must not look accepted.
	for _, f := range v.set {
		if f[0] != "URL" && f[0] != "ADDRS" {
			p.fail("SINK_REDIS_"+f[0], f[1], "applies only to a Redis of the streams' own: set "+Prefix+"_SINK_REDIS_URL or "+Prefix+"_SINK_REDIS_ADDRS, or unset it (without them the streams are on the daemon's Redis, with its settings)")
		}
	}
	return s
}

// stream reads the Redis stream variables of topic t: the stream key is
// required when the topic appends to a stream.
func (p *parser) stream(t *Topic, te *topicEnv, pre string) {
	t.Stream = strings.TrimSpace(te.Stream)
	t.StreamMaxLen = int64(p.intIn(pre+"STREAM_MAXLEN", te.StreamMaxLen, 0, maxStreamMaxLen))
	if t.Sink == "redis" && t.Stream == "" {
		p.fail(pre+"STREAM", te.Stream, "is required: "+Prefix+"_"+pre+"SINK=redis appends to this Redis stream key")
	}
}
