package config

import (
	"errors"
	"strings"
	"testing"
)

// fuzzSecret is REDIS_PASSWORD in every fuzz run: no error may show it.
const fuzzSecret = "Zq7-fuzz-secret"

// FuzzLoad: whatever the variables hold, Load does not panic, and every
// problem it reports is a *FieldError that does not show a secret.
//
//	go test ./config -run '^$' -fuzz FuzzLoad -fuzztime 20s
func FuzzLoad(f *testing.F) {
	seeds := []struct{ topics, slots, sink, redisURL, amqpURL, lease, batch, cluster, addrs string }{
		{"orders", "1", "amqp", "redis://127.0.0.1:6379/0", "amqp://guest:guest@127.0.0.1:5672/", "30s", "500", "false", ""},
		{"orders,order-events", "16", "kafka", "rediss://u:p@h:6380/1", "amqps://u:p@h/", "1m", "1", "true", "a:1,b:2"},
		{"", "3", "sqs", "redis://u:p@h:99999/x", "http://u:p@h", "soon", "lots", "maybe", "nohost"},
		{" , ", "-1", "", "redis://u:12#p@h/0", "amqp://u:12?p@h/", "-5s", "0x10", "", ","},
		{"a{b},a_b,a-b", "1024", "KAFKA", "redis://h/0?pool_size=x", "%zz", "9999999h", "5001", "1", ":"},
		{"ſ,S,é", "2048", "amqp", "unix:///tmp/redis.sock", "amqp://[::1]:5672/", "1ns", " 7 ", "TRUE", "[::1]:7000"},
	}
	for _, s := range seeds {
		f.Add(s.topics, s.slots, s.sink, s.redisURL, s.amqpURL, s.lease, s.batch, s.cluster, s.addrs)
	}
	f.Fuzz(func(t *testing.T, topics, slots, sink, redisURL, amqpURL, lease, batch, cluster, addrs string) {
		for _, s := range []string{topics, slots, sink, redisURL, amqpURL, lease, batch, cluster, addrs} {
			if strings.ContainsRune(s, 0) {
				t.Skip("the environment cannot hold NUL")
			}
		}
		vars := map[string]string{
			"TOPICS": topics, "REDIS_URL": redisURL, "AMQP_URL": amqpURL, "LEASE": lease,
			"BATCH_SIZE": batch, "REDIS_CLUSTER": cluster, "REDIS_ADDRS": addrs, "REDIS_PASSWORD": fuzzSecret,
		}
		if first, _, _ := strings.Cut(topics, ","); strings.TrimSpace(first) != "" {
			v := VarName(strings.TrimSpace(first))
			vars["TOPIC_"+v+"_SLOTS"] = slots
			vars["TOPIC_"+v+"_SINK"] = sink
		}
		setEnv(t, vars)

		c, err := Load()
		if err == nil {
			for _, tp := range c.Topics {
				if tp.Slots < 1 || tp.Slots&(tp.Slots-1) != 0 {
					t.Errorf("topic %q accepted with %d slots", tp.Name, tp.Slots)
				}
			}
			if _, err := c.Redis.Options(); err != nil {
				t.Errorf("Load accepted a Redis configuration that Options rejects: %v", err)
			}
			for k, v := range c.Redacted() {
				if strings.Contains(v, fuzzSecret) {
					t.Errorf("Redacted()[%s] shows the secret: %q", k, v)
				}
			}
			return
		}
		for _, e := range leaves(err) {
			var fe *FieldError
			if !errors.As(e, &fe) {
				t.Errorf("error %q (%T) is not a *FieldError", e, e)
			}
		}
		if strings.Contains(err.Error(), fuzzSecret) {
			t.Errorf("error shows the secret:\n%v", err)
		}
	})
}
