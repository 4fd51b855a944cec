package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestLoadRejects: each bad configuration names exactly the variables at
// fault, and the problem says what is allowed.
func TestLoadRejects(t *testing.T) {
	pki := newTestPKI(t)
	garbage := writeFile(t, t.TempDir(), "garbage.pem", "not a certificate\n")
	tests := []struct {
		name    string
		vars    map[string]string
		want    []string // variables named, sorted
		problem string   // part of the first problem
	}{
		{"redis addrs without a mode", map[string]string{"REDIS_ADDRS": "a:1,b:2"}, []string{"REDIS_ADDRS"}, "REDIS_CLUSTER=true or"},
		{"cluster and sentinel", map[string]string{"REDIS_ADDRS": "a:1", "REDIS_CLUSTER": "true", "REDIS_SENTINEL_MASTER": "m"}, []string{"REDIS_CLUSTER"}, "cannot be true together"},
		{"sentinel user without a master", map[string]string{"REDIS_SENTINEL_USERNAME": "sentinel-user"}, []string{"REDIS_SENTINEL_USERNAME"}, "REDIS_SENTINEL_MASTER"},
		{"sentinel password without a master", map[string]string{"REDIS_SENTINEL_PASSWORD": "pw"}, []string{"REDIS_SENTINEL_PASSWORD"}, "applies only to sentinels"},
		{"sentinel credentials on a cluster", map[string]string{"REDIS_ADDRS": "a:1", "REDIS_CLUSTER": "true", "REDIS_SENTINEL_USERNAME": "u", "REDIS_SENTINEL_PASSWORD": "pw"}, []string{"REDIS_SENTINEL_PASSWORD", "REDIS_SENTINEL_USERNAME"}, "applies only to sentinels"},
		{"cluster without addrs", map[string]string{"REDIS_CLUSTER": "true"}, []string{"REDIS_ADDRS"}, "is required"},
		{"cluster with a database", map[string]string{"REDIS_ADDRS": "a:1", "REDIS_CLUSTER": "true", "REDIS_URL": "redis://a:1/3"}, []string{"REDIS_URL"}, "only database 0"},
		{"redis addr without port", map[string]string{"REDIS_ADDRS": "a", "REDIS_CLUSTER": "true"}, []string{"REDIS_ADDRS"}, "not host:port"},
		{"redis database not a number", map[string]string{"REDIS_URL": "redis://a:1/zero"}, []string{"REDIS_URL"}, "invalid database number"},
		{"redis unknown URL option", map[string]string{"REDIS_URL": "redis://a:1/0?colour=red"}, []string{"REDIS_URL"}, "unexpected option"},
		{"redis port out of range", map[string]string{"REDIS_URL": "redis://a:70000/0"}, []string{"REDIS_URL"}, "port must be"},
		{"URL cut short by a '#'", map[string]string{"AMQP_URL": "amqp://u:12#q@rabbit/"}, []string{"AMQP_URL"}, "percent-encoded"},
		{"URL cut short by a '?'", map[string]string{"REDIS_URL": "redis://u:12?q@redis/0"}, []string{"REDIS_URL"}, "percent-encoded"},
		{"URL broken by a '#'", map[string]string{"AMQP_URL": "amqp://u:p#q@rabbit/"}, []string{"AMQP_URL"}, "percent-encoded"},
		{"key prefix with a brace", map[string]string{"KEY_PREFIX": "dq{x}"}, []string{"KEY_PREFIX"}, "without braces"},
		{"http addr without port", map[string]string{"HTTP_ADDR": "localhost"}, []string{"HTTP_ADDR"}, "host:port"},
		{"http port too large", map[string]string{"HTTP_ADDR": ":65536"}, []string{"HTTP_ADDR"}, "0 to 65535"},
		{"http max conns zero", map[string]string{"HTTP_MAX_CONNS": "0"}, []string{"HTTP_MAX_CONNS"}, "1 to 1000000"},
		{"api max conns not a number", map[string]string{"API_MAX_CONNS": "many"}, []string{"API_MAX_CONNS"}, "1 to 1000000"},
		{"console max conns too many", map[string]string{"CONSOLE_MAX_CONNS": "1000001"}, []string{"CONSOLE_MAX_CONNS"}, "1 to 1000000"},
		{"api request memory under 1 MiB", map[string]string{"API_MAX_REQUEST_MEMORY": "1000"}, []string{"API_MAX_REQUEST_MEMORY"}, "1048576 to"},
		{"poll interval over an hour", map[string]string{"POLL_INTERVAL": "2h"}, []string{"POLL_INTERVAL"}, "at most 1h0m0s"},
		{"keyspace events neither auto nor off", map[string]string{"KEYSPACE_EVENTS": "on"}, []string{"KEYSPACE_EVENTS"}, "auto"},
		{"keyspace poll interval not a duration", map[string]string{"KEYSPACE_POLL_INTERVAL": "soon"}, []string{"KEYSPACE_POLL_INTERVAL"}, ""},
		{"lease too short", map[string]string{"LEASE": "10ms"}, []string{"LEASE"}, "at least 100ms"},
		{"retry max below retry", map[string]string{"RETRY_BACKOFF": "10s", "RETRY_BACKOFF_MAX": "5s"}, []string{"RETRY_BACKOFF_MAX"}, "not be shorter"},
		{"batch size too large", map[string]string{"BATCH_SIZE": "5001"}, []string{"BATCH_SIZE"}, "1 to 5000"},
		{"message size zero", map[string]string{"AMQP_MAX_MESSAGE_SIZE": "0"}, []string{"AMQP_MAX_MESSAGE_SIZE"}, "whole number"},
		{"unknown compression", map[string]string{"KAFKA_COMPRESSION": "brotli"}, []string{"KAFKA_COMPRESSION"}, "none, gzip"},
		{"sasl without password", map[string]string{"KAFKA_SASL_MECHANISM": "plain", "KAFKA_SASL_USERNAME": "u"}, []string{"KAFKA_SASL_MECHANISM"}, "KAFKA_SASL_PASSWORD"},
		{"kafka broker without port", map[string]string{"KAFKA_BROKERS": "k1"}, []string{"KAFKA_BROKERS"}, "not host:port"},
		{"ownership unknown", map[string]string{"OWNERSHIP": "leader"}, []string{"OWNERSHIP"}, "rendezvous, all"},
		{"topics only commas", map[string]string{"TOPICS": ", ,"}, []string{"TOPICS"}, "at least one entry"},
		{"topic with a brace", map[string]string{"TOPICS": "a{b}"}, []string{"TOPICS"}, "letters, digits"},
		{"console host with a scheme", map[string]string{"CONSOLE_HOSTS": "localhost,http://console.example.com"}, []string{"CONSOLE_HOSTS"}, "not a host name"},
		{"console host IPv6 without brackets", map[string]string{"CONSOLE_HOSTS": "::1"}, []string{"CONSOLE_HOSTS"}, "in brackets"},
		{"console session TTL too short", map[string]string{"CONSOLE_SESSION_TTL": "10s"}, []string{"CONSOLE_SESSION_TTL"}, "at least 1m"},
		{"topic with a slash", map[string]string{"TOPICS": "a/b"}, []string{"TOPICS"}, "letters, digits"},
		{"topic with URL characters", map[string]string{"TOPICS": "a?c#d"}, []string{"TOPICS"}, "letters, digits"},
		{"topic of dots", map[string]string{"TOPICS": ".."}, []string{"TOPICS"}, "letters, digits"},
		{"topic with markup", map[string]string{"TOPICS": "<script>"}, []string{"TOPICS"}, "letters, digits"},
		{"topic name too long", map[string]string{"TOPICS": strings.Repeat("a", 101)}, []string{"TOPICS"}, "1 to 100 bytes"},
		{"unknown format", map[string]string{"TOPIC_ORDERS_FORMAT": "protobuf"}, []string{"TOPIC_ORDERS_FORMAT"}, "raw, envelope"},
		{"rate limit zero", map[string]string{"TOPIC_ORDERS_RATE_LIMIT": "0"}, []string{"TOPIC_ORDERS_RATE_LIMIT"}, "positive decimal"},
		{"rate limit negative", map[string]string{"TOPIC_ORDERS_RATE_LIMIT": "-5"}, []string{"TOPIC_ORDERS_RATE_LIMIT"}, "positive decimal"},
		{"rate limit not a number", map[string]string{"TOPIC_ORDERS_RATE_LIMIT": "fast"}, []string{"TOPIC_ORDERS_RATE_LIMIT"}, "positive decimal"},
		{"rate limit NaN", map[string]string{"TOPIC_ORDERS_RATE_LIMIT": "NaN"}, []string{"TOPIC_ORDERS_RATE_LIMIT"}, "positive decimal"},
		{"hold above without a queue", map[string]string{"TOPIC_ORDERS_HOLD_ABOVE": "1000"}, []string{"TOPIC_ORDERS_HOLD_QUEUE"}, "is required"},
		{"hold queue without a count", map[string]string{"TOPIC_ORDERS_HOLD_QUEUE": "work"}, []string{"TOPIC_ORDERS_HOLD_ABOVE"}, "is required"},
		{"hold above negative", map[string]string{"TOPIC_ORDERS_HOLD_QUEUE": "work", "TOPIC_ORDERS_HOLD_ABOVE": "-1"}, []string{"TOPIC_ORDERS_HOLD_ABOVE"}, "whole number"},
		{"hold queue of a kafka topic", map[string]string{"KAFKA_BROKERS": "k:9092", "TOPIC_ORDERS_SINK": "kafka", "TOPIC_ORDERS_HOLD_QUEUE": "work", "TOPIC_ORDERS_HOLD_ABOVE": "10"}, []string{"TOPIC_ORDERS_HOLD_QUEUE"}, "SINK=amqp"},
		{"slots over the maximum", map[string]string{"TOPIC_ORDERS_SLOTS": "2048"}, []string{"TOPIC_ORDERS_SLOTS"}, "1 to 1024"},
		{"amqp topic without AMQP URL", map[string]string{"AMQP_URL": ""}, []string{"AMQP_URL"}, `topic "orders"`},
		{"kafka topic without brokers", map[string]string{"KAFKA_BROKERS": "", "TOPIC_ORDERS_SINK": "kafka"}, []string{"KAFKA_BROKERS"}, `topic "orders"`},
		{"CA file missing", map[string]string{"REDIS_CA_FILE": "/nonexistent/ca.pem"}, []string{"REDIS_CA_FILE"}, "cannot be read"},
		{"CA file not PEM", map[string]string{"KAFKA_CA_FILE": garbage}, []string{"KAFKA_CA_FILE"}, "no PEM certificate"},
		{"key without certificate", map[string]string{"REDIS_KEY_FILE": pki.ClientKey}, []string{"REDIS_KEY_FILE"}, "REDIS_CERT_FILE too"},
		{"certificate without key", map[string]string{"KAFKA_CERT_FILE": pki.ClientCert}, []string{"KAFKA_CERT_FILE"}, "KAFKA_KEY_FILE too"},
		{"certificate with the wrong key", map[string]string{"REDIS_CERT_FILE": pki.ClientCert, "REDIS_KEY_FILE": pki.ServerKey}, []string{"REDIS_CERT_FILE"}, "does not match"},
		{"AMQP TLS files without amqps", map[string]string{"AMQP_CERT_FILE": pki.ClientCert, "AMQP_KEY_FILE": pki.ClientKey}, []string{"AMQP_CERT_FILE", "AMQP_KEY_FILE"}, "amqps://"},
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
			want := make([]string, len(tt.want))
			for i, v := range tt.want {
				want[i] = Prefix + "_" + v
			}
			if diff := cmp.Diff(want, varsNamed(t, err)); diff != "" {
				t.Errorf("variables named (-want +got):\n%s\nerror:\n%v", diff, err)
			}
			if p := fieldErrors(t, err)[0].Problem; !strings.Contains(p, tt.problem) {
				t.Errorf("problem %q does not say %q", p, tt.problem)
			}
		})
	}
}

func TestVarName(t *testing.T) {
	for topic, want := range map[string]string{
		"orders":       "ORDERS",
		"order-events": "ORDER_EVENTS",
		"Orders.v2":    "ORDERS_V2",
		"a:b/c":        "A_B_C",
		"ſ":            "_", // not folded into "S"
		"é":            "_", // one character, one '_'
		"a\xffb":       "A_B",
	} {
		if got := VarName(topic); got != want {
			t.Errorf("VarName(%q) = %q, want %q", topic, got, want)
		}
	}
}

func TestLoadRejectsTopicsSharingOneVarName(t *testing.T) {
	tests := []struct {
		topics string
		want   []string // in the problem
	}{
		{"order-events,order_events", []string{`"order-events"`, `"order_events"`, "DELAYBRIDGE_TOPIC_ORDER_EVENTS_"}},
		{"Orders,orders", []string{`"Orders"`, `"orders"`}},
		{"orders,orders", []string{`"orders" twice`}},
	}
	for _, tt := range tests {
		t.Run(tt.topics, func(t *testing.T) {
			setEnv(t, map[string]string{"TOPICS": tt.topics})
			_, err := Load()
			if err == nil {
				t.Fatal("Load accepted it")
			}
			fes := fieldErrors(t, err)
			if len(fes) != 1 || fes[0].Var != Prefix+"_TOPICS" {
				t.Fatalf("want one error on %s_TOPICS, got %v", Prefix, err)
			}
			for _, w := range tt.want {
				if !strings.Contains(fes[0].Problem, w) {
					t.Errorf("problem %q does not say %s", fes[0].Problem, w)
				}
			}
		})
	}
}

func TestAdoptedKeyNeedsOneSlot(t *testing.T) {
	tests := []struct {
		slots   string // "" leaves the default
		wantErr bool
	}{{"", false}, {"1", false}, {"2", true}, {"1024", true}}
	for _, tt := range tests {
		t.Run("slots="+tt.slots, func(t *testing.T) {
			vars := map[string]string{"TOPICS": "legacy", "TOPIC_LEGACY_KEY": "delayqueue"}
			if tt.slots != "" {
				vars["TOPIC_LEGACY_SLOTS"] = tt.slots
			}
			setEnv(t, vars)
			c, err := Load()
			if !tt.wantErr {
				if err != nil {
					t.Fatalf("Load: %v", err)
				}
				if c.Topics[0].Key != "delayqueue" || c.Topics[0].Slots != 1 {
					t.Errorf("topic = %+v, want key delayqueue with 1 slot", c.Topics[0])
				}
				return
			}
			if diff := cmp.Diff([]string{Prefix + "_TOPIC_LEGACY_KEY"}, varsNamed(t, err)); diff != "" {
				t.Errorf("variables named (-want +got):\n%s", diff)
			}
		})
	}
}

func TestUnused(t *testing.T) {
	setEnv(t, map[string]string{"TOPICS": "orders"})
	c, err := Load()
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	environ := []string{
		"PATH=/bin",
		"DELAYBRIDGE_BATCH_SIZE=5",
		"DELAYBRIDGE_BATCHSIZE=5",
		"DELAYBRIDGE_AMQP_URL_FILE=/run/secrets/amqp",
		"DELAYBRIDGE_TOPIC_ORDERS_SLOTS=4",
		"DELAYBRIDGE_TOPIC_ORDRES_SLOTS=4",
		"DELAYBRIDGE_TEST_REDIS_URL=redis://x",
		"DELAYBRIDGE_LOG_LEVEL_FILE=/x",
	}
	want := []string{"DELAYBRIDGE_BATCHSIZE", "DELAYBRIDGE_LOG_LEVEL_FILE", "DELAYBRIDGE_TOPIC_ORDRES_SLOTS"}
	if diff := cmp.Diff(want, c.Unused(environ)); diff != "" {
		t.Errorf("Unused (-want +got):\n%s", diff)
	}
}
