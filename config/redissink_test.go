package config

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLoadRedisStreamSink(t *testing.T) {
	setEnv(t, map[string]string{
		"TOPICS":                      "orders,events",
		"REDIS_URL":                   "redis://app:pw@queue-redis:6379/2",
		"TOPIC_EVENTS_SINK":           "redis",
		"TOPIC_EVENTS_STREAM":         " events:due ",
		"TOPIC_EVENTS_STREAM_MAXLEN":  "100000",
		"SINK_REDIS_MAX_MESSAGE_SIZE": "1048576",
	})
	c, err := Load()
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	ev := c.Topics[1]
	if ev.Sink != "redis" || ev.Stream != "events:due" || ev.StreamMaxLen != 100000 {
		t.Errorf("topic events: sink %q stream %q maxlen %d", ev.Sink, ev.Stream, ev.StreamMaxLen)
	}
	// Without SINK_REDIS_URL the streams live on the daemon's Redis.
	if diff := cmp.Diff(c.Redis, c.RedisSink.Redis); diff != "" {
		t.Errorf("sink Redis differs from the daemon's (-daemon +sink):\n%s", diff)
	}
	if c.RedisSink.MaxMessageSize != 1<<20 {
		t.Errorf("max message size %d", c.RedisSink.MaxMessageSize)
	}
	if c.Topics[0].StreamMaxLen != 0 {
		t.Errorf("default STREAM_MAXLEN %d, want 0", c.Topics[0].StreamMaxLen)
	}
}

func TestLoadSinkRedisURLFromFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "url")
	writeFile(t, filepath.Dir(path), "url", "rediss://app:stream-pw@streams:6380/1\n")
	setEnv(t, map[string]string{
		"TOPICS":              "events",
		"TOPIC_EVENTS_SINK":   "redis",
		"TOPIC_EVENTS_STREAM": "events",
		"SINK_REDIS_URL_FILE": path,
	})
	c, err := Load()
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	r := c.RedisSink.Redis
	if r.URL != "rediss://app:stream-pw@streams:6380/1" || !r.TLS.Enabled || len(r.Addrs) != 0 {
		t.Errorf("sink Redis = %+v", r)
	}
	o, err := r.Options()
	if err != nil {
		t.Fatalf("Options: %v", err)
	}
	if o.Addrs[0] != "streams:6380" || o.DB != 1 || o.Password != "stream-pw" || o.TLSConfig == nil {
		t.Errorf("options: addrs %v db %d tls %v", o.Addrs, o.DB, o.TLSConfig != nil)
	}
	if got := c.Redacted()[Prefix+"_SINK_REDIS_URL"]; got != "rediss://app:xxxxx@streams:6380/1" {
		t.Errorf("Redacted SINK_REDIS_URL = %q", got)
	}
}

func TestLoadRejectsRedisStreamSink(t *testing.T) {
	tests := []struct {
		name    string
		vars    map[string]string
		want    string // the variable named
		problem string
	}{
		{"no stream", map[string]string{"TOPIC_ORDERS_SINK": "redis"}, "TOPIC_ORDERS_STREAM", "is required"},
		{"blank stream", map[string]string{"TOPIC_ORDERS_SINK": "redis", "TOPIC_ORDERS_STREAM": "  "}, "TOPIC_ORDERS_STREAM", "SINK=redis"},
		{"negative maxlen", map[string]string{"TOPIC_ORDERS_STREAM_MAXLEN": "-1"}, "TOPIC_ORDERS_STREAM_MAXLEN", "from 0"},
		{"unknown sink", map[string]string{"TOPIC_ORDERS_SINK": "nats"}, "TOPIC_ORDERS_SINK", "amqp, kafka, redis"},
		{"body limit over Redis's", map[string]string{"SINK_REDIS_MAX_MESSAGE_SIZE": "536870913"}, "SINK_REDIS_MAX_MESSAGE_SIZE", "1 to 536870912"},
		{"URL of another scheme", map[string]string{"SINK_REDIS_URL": "http://u:secret-pw@streams/"}, "SINK_REDIS_URL", "redis or rediss"},
		{"URL option unknown", map[string]string{"SINK_REDIS_URL": "redis://u:secret-pw@streams/0?colour=red"}, "SINK_REDIS_URL", "unexpected option"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vars := map[string]string{"TOPICS": "orders"}
			for k, v := range tt.vars {
				vars[k] = v
			}
			setEnv(t, vars)
			_, err := Load()
			if err == nil {
				t.Fatal("Load accepted it")
			}
			if diff := cmp.Diff([]string{Prefix + "_" + tt.want}, varsNamed(t, err)); diff != "" {
				t.Errorf("variables named (-want +got):\n%s\nerror:\n%v", diff, err)
			}
			if p := fieldErrors(t, err)[0].Problem; !strings.Contains(p, tt.problem) {
				t.Errorf("problem %q does not say %q", p, tt.problem)
			}
			if strings.Contains(err.Error(), "secret-pw") {
				t.Errorf("the error shows the password: %v", err)
			}
		})
	}
}
