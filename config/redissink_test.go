package config

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/delaybridge/delaybridge/queue"
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

// The SINK_REDIS_ variables give the go-redis options of the streams' Redis
// as the REDIS_ ones give the daemon's: a Sentinel deployment (passwords
// from files), a Cluster given by its nodes alone, TLS from the files.
func TestSinkRedisOptionsFollowTheTopology(t *testing.T) {
	pki := newTestPKI(t)
	dir := t.TempDir()
	setEnv(t, map[string]string{
		"TOPICS":                            "events",
		"TOPIC_EVENTS_SINK":                 "redis",
		"TOPIC_EVENTS_STREAM":               "events",
		"SINK_REDIS_ADDRS":                  "127.0.0.1:26379,127.0.0.1:26380",
		"SINK_REDIS_SENTINEL_MASTER":        "streams",
		"SINK_REDIS_SENTINEL_PASSWORD_FILE": writeFile(t, dir, "sentinel-pw", "sentinel-Qx7\n"),
		"SINK_REDIS_USERNAME":               "sink",
		"SINK_REDIS_PASSWORD_FILE":          writeFile(t, dir, "pw", "node-Zr4\n"),
		"SINK_REDIS_CA_FILE":                pki.CAFile,
	})
	c, err := Load()
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	o, err := c.RedisSink.Redis.Options()
	if err != nil {
		t.Fatalf("Options: %v", err)
	}
	if o.MasterName != "streams" || len(o.Addrs) != 2 || o.SentinelPassword != "sentinel-Qx7" ||
		o.Username != "sink" || o.Password != "node-Zr4" || o.TLSConfig == nil || o.TLSConfig.RootCAs == nil {
		t.Errorf("sentinel options: master %q addrs %v sentinel password %q user %q password %q TLS %v",
			o.MasterName, o.Addrs, o.SentinelPassword, o.Username, o.Password, o.TLSConfig != nil)
	}
	if c.Redis.URL != "redis://127.0.0.1:6379/0" || len(c.Redis.Addrs) != 0 || c.Redis.Password != "" {
		t.Errorf("the daemon's Redis took the sink's settings: %+v", c.Redis)
	}
	for _, name := range []string{"SINK_REDIS_PASSWORD", "SINK_REDIS_SENTINEL_PASSWORD"} {
		if got := c.Redacted()[Prefix+"_"+name]; got != redactedText {
			t.Errorf("Redacted %s = %q", name, got)
		}
	}

	setEnv(t, map[string]string{
		"TOPICS":              "events",
		"TOPIC_EVENTS_SINK":   "redis",
		"TOPIC_EVENTS_STREAM": "events",
		"SINK_REDIS_ADDRS":    "127.0.0.1:7101",
		"SINK_REDIS_CLUSTER":  "true",
	})
	if c, err = Load(); err != nil {
		t.Fatalf("Load: %v", err)
	}
	if o, err = c.RedisSink.Redis.Options(); err != nil {
		t.Fatalf("Options: %v", err)
	}
	// One address is a configuration endpoint: still a cluster client.
	if !o.IsClusterMode || len(o.Addrs) != 1 || o.DB != 0 || o.TLSConfig != nil || o.Password != "" {
		t.Errorf("cluster options: cluster %v addrs %v db %d TLS %v", o.IsClusterMode, o.Addrs, o.DB, o.TLSConfig != nil)
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
		// The streams' own Redis is named by SINK_REDIS_URL or SINK_REDIS_ADDRS;
		// without them the daemon's settings apply and a sink setting would be
		// ignored.
		{"password without a Redis of its own", map[string]string{"SINK_REDIS_PASSWORD": "secret-pw"}, "SINK_REDIS_PASSWORD", "applies only to a Redis of the streams' own"},
		{"cluster without a Redis of its own", map[string]string{"SINK_REDIS_CLUSTER": "true"}, "SINK_REDIS_CLUSTER", "SINK_REDIS_ADDRS"},
		{"addrs without cluster or sentinel", map[string]string{"SINK_REDIS_ADDRS": "s1:7000"}, "SINK_REDIS_ADDRS", "needs DELAYBRIDGE_SINK_REDIS_CLUSTER=true or DELAYBRIDGE_SINK_REDIS_SENTINEL_MASTER"},
		{"addr without a port", map[string]string{"SINK_REDIS_ADDRS": "s1", "SINK_REDIS_CLUSTER": "true"}, "SINK_REDIS_ADDRS", "not host:port"},
		{"cluster and sentinel", map[string]string{"SINK_REDIS_ADDRS": "s1:7000", "SINK_REDIS_CLUSTER": "true", "SINK_REDIS_SENTINEL_MASTER": "m"}, "SINK_REDIS_CLUSTER", "SINK_REDIS_SENTINEL_MASTER"},
		{"cluster flag not a bool", map[string]string{"SINK_REDIS_ADDRS": "s1:7000", "SINK_REDIS_CLUSTER": "yes", "SINK_REDIS_SENTINEL_MASTER": "m"}, "SINK_REDIS_CLUSTER", "true or false"},
		{"sentinel password without a master", map[string]string{"SINK_REDIS_URL": "redis://streams/0", "SINK_REDIS_SENTINEL_PASSWORD": "secret-pw"}, "SINK_REDIS_SENTINEL_PASSWORD", "applies only to sentinels"},
		{"cluster URL with a database", map[string]string{"SINK_REDIS_URL": "redis://u:secret-pw@streams/2", "SINK_REDIS_ADDRS": "s1:7000", "SINK_REDIS_CLUSTER": "true"}, "SINK_REDIS_URL", "only database 0"},
		{"CA file missing", map[string]string{"SINK_REDIS_URL": "redis://streams/0", "SINK_REDIS_CA_FILE": "/nonexistent/ca.pem"}, "SINK_REDIS_CA_FILE", "cannot be read"},
		{"certificate without key", map[string]string{"SINK_REDIS_URL": "redis://streams/0", "SINK_REDIS_CERT_FILE": "/nonexistent/c.pem"}, "SINK_REDIS_CERT_FILE", "needs DELAYBRIDGE_SINK_REDIS_KEY_FILE too"},
		{"TLS insecure not a bool", map[string]string{"SINK_REDIS_URL": "redis://streams/0", "SINK_REDIS_TLS_INSECURE": "maybe"}, "SINK_REDIS_TLS_INSECURE", "true or false"},
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

// sinkRedisConfig is the default configuration of one topic, reminders, that
// appends to the stream reminders:due on the Redis r.
func sinkRedisConfig(t *testing.T, r Redis) Config {
	t.Helper()
	c := defaultConfig(t)
	c.RedisSink.Redis = r
	c.Topics = []Topic{{
		Name: "reminders", Var: "REMINDERS", Sink: "redis", Slots: 1, Format: queue.FormatRaw, MaxMessageSize: 1 << 20,
		RoutingKey: "reminders", KafkaTopic: "reminders", KafkaKey: "envelope", Stream: "reminders:due",
	}}
	return c
}
