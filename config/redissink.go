package config

import (
	"strings"

	"github.com/redis/go-redis/v9"
)

// Limits of the Redis stream sink's variables.
const (
	// maxSinkRedisMessageSize is Redis's default proto-max-bulk-len: a
	// longer argument makes Redis drop the connection.
	maxSinkRedisMessageSize = 512 << 20
	maxStreamMaxLen         = 1_000_000_000_000
)

// redisSink is the Redis of the stream sink: the daemon's own (daemon)
// unless SINK_REDIS_URL names another.
func (p *parser) redisSink(e *env, daemon Redis) RedisSink {
	s := RedisSink{
		Redis:          daemon,
		MaxMessageSize: p.intIn("SINK_REDIS_MAX_MESSAGE_SIZE", e.SinkRedisMaxMessageSize, 1, maxSinkRedisMessageSize),
	}
	raw := strings.TrimSpace(e.SinkRedisURL)
	if raw == "" {
		return s
	}
	s.Redis = Redis{URL: raw}
	if u, ok := p.url("SINK_REDIS_URL", e.SinkRedisURL, "redis", "rediss"); ok {
		s.Redis.TLS.Enabled = u.Scheme == "rediss"
		if _, err := redis.ParseURL(raw); err != nil {
			p.fail("SINK_REDIS_URL", e.SinkRedisURL, strings.TrimPrefix(err.Error(), "redis: "))
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
