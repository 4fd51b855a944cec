package config

import (
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/delaybridge/delaybridge/queue"
)

func defaultReplicaID(t *testing.T) string {
	t.Helper()
	host, err := os.Hostname()
	if err != nil {
		t.Fatalf("hostname: %v", err)
	}
	return fmt.Sprintf("%s-%d", host, os.Getpid())
}

func TestLoadDefaults(t *testing.T) {
	setEnv(t, map[string]string{"TOPICS": "orders"})
	got, err := Load()
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	want := defaultConfig(t)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Load() mismatch (-want +got):\n%s", diff)
	}
}

// defaultConfig is what Load returns for one topic, orders, and no other
// variable set.
func defaultConfig(t *testing.T) Config {
	t.Helper()
	return Config{
		Redis:     Redis{URL: "redis://127.0.0.1:6379/0"},
		RedisWait: RedisWait{Timeout: 500 * time.Millisecond},
		AMQP:      AMQP{URL: "amqp://guest:guest@127.0.0.1:5672/", MaxMessageSize: 128 << 20},
		Kafka:     Kafka{Brokers: []string{"127.0.0.1:9092"}, ClientID: "delaybridge", Compression: "none", SessionTimeout: 10 * time.Second},
		// The streams of SINK=redis topics live on the daemon's Redis.
		RedisSink: RedisSink{Redis: Redis{URL: "redis://127.0.0.1:6379/0"}, MaxMessageSize: 128 << 20},

		KeyPrefix:   "dq",
		MessageSize: MessageSize{Default: 1 << 20},
		Topics: []Topic{{
			Name: "orders", Var: "ORDERS", Sink: "amqp", Slots: 1, Format: queue.FormatRaw, MaxMessageSize: 1 << 20,
			RoutingKey: "orders", KafkaTopic: "orders", KafkaKey: "envelope",
		}},

		BatchSize:          500,
		MaxInflightBatches: 2,
		Lease:              30 * time.Second,
		MaxAttempts:        10,
		RetryBackoff:       time.Second,
		RetryBackoffMax:    5 * time.Minute,
		PollInterval:       time.Second,
		KeyspaceEvents:     "auto", KeyspacePollInterval: time.Minute,
		ShutdownTimeout: 20 * time.Second,

		HTTPAddr:     ":8080",
		HTTPMaxConns: 1024,
		LogLevel:     "info",
		LogFormat:    "json",

		ReplicaID:         defaultReplicaID(t),
		Ownership:         "rendezvous",
		HeartbeatInterval: time.Second,
		HeartbeatTTL:      5 * time.Second,

		Console: Console{Addr: "127.0.0.1:8081", SessionTTL: 12 * time.Hour, MaxConns: 1024},
		API:     API{MaxRequestSize: 16 << 20, MaxRequestMemory: 64 << 20, MaxConns: 1024},
	}
}

func TestLoadParsesEveryVariable(t *testing.T) {
	pki := newTestPKI(t)
	tls := TLS{Enabled: true, CAFile: pki.CAFile, CertFile: pki.ClientCert, KeyFile: pki.ClientKey}
	tests := []struct {
		name string
		vars map[string]string
		want Config
	}{{
		name: "sentinel, TLS everywhere, two topics",
		vars: map[string]string{
			"REDIS_URL":                   "rediss://app:redis-url-pw@redis.internal:6380/2",
			"REDIS_ADDRS":                 "s1:26379, s2:26379",
			"REDIS_CLUSTER":               "0",
			"REDIS_SENTINEL_MASTER":       "mymaster",
			"REDIS_SENTINEL_USERNAME":     "sentinel-user",
			"REDIS_SENTINEL_PASSWORD":     "sentinel-pw",
			"REDIS_USERNAME":              "acl-user",
			"REDIS_PASSWORD":              "acl-pw",
			"REDIS_CA_FILE":               pki.CAFile,
			"REDIS_CERT_FILE":             pki.ClientCert,
			"REDIS_KEY_FILE":              pki.ClientKey,
			"REDIS_TLS_INSECURE":          "true",
			"REDIS_WAIT_REPLICAS":         "1",
			"REDIS_WAIT_TIMEOUT":          "250ms",
			"REDIS_WAIT_AOF":              "true",
			"AMQP_URL":                    "amqps://user:amqp-pw@rabbit:5671/vhost",
			"AMQP_CA_FILE":                pki.CAFile,
			"AMQP_CERT_FILE":              pki.ClientCert,
			"AMQP_KEY_FILE":               pki.ClientKey,
			"AMQP_MAX_MESSAGE_SIZE":       "1048576",
			"KAFKA_BROKERS":               "k1:9093,k2:9093",
			"KAFKA_CLIENT_ID":             "db-1",
			"KAFKA_COMPRESSION":           "ZSTD",
			"KAFKA_TLS":                   "1",
			"KAFKA_CA_FILE":               pki.CAFile,
			"KAFKA_CERT_FILE":             pki.ClientCert,
			"KAFKA_KEY_FILE":              pki.ClientKey,
			"KAFKA_SASL_MECHANISM":        "SCRAM-SHA-512",
			"KAFKA_SASL_USERNAME":         "kafka-user",
			"KAFKA_SASL_PASSWORD":         "kafka-pw",
			"KAFKA_SESSION_TIMEOUT":       "6s",
			"KEY_PREFIX":                  "dly",
			"MAX_MESSAGE_SIZE":            "2097152",
			"TOPICS":                      " orders , order-events ",
			"BATCH_SIZE":                  "1000",
			"MAX_INFLIGHT_BATCHES":        "4",
			"LEASE":                       "1m",
			"MAX_ATTEMPTS":                "3",
			"RETRY_BACKOFF":               "250ms",
			"RETRY_BACKOFF_MAX":           "10s",
			"POLL_INTERVAL":               "200ms",
			"KEYSPACE_EVENTS":             "off",
			"KEYSPACE_POLL_INTERVAL":      "30s",
			"SHUTDOWN_TIMEOUT":            "45s",
			"HTTP_ADDR":                   "127.0.0.1:9090",
			"LOG_LEVEL":                   "DEBUG",
			"LOG_FORMAT":                  "text",
			"REPLICA_ID":                  "pod-a",
			"OWNERSHIP":                   "all",
			"HEARTBEAT_INTERVAL":          "2s",
			"HEARTBEAT_TTL":               "10s",
			"CONSOLE_ADDR":                ":9091",
			"CONSOLE_TOKEN":               "console-token-0123",
			"CONSOLE_SECURE_COOKIE":       "true",
			"CONSOLE_HOSTS":               "console.example.com, localhost:9091,[::1]",
			"CONSOLE_READ_REQUIRES_TOKEN": "true",
			"CONSOLE_SESSION_TTL":         "1h",
			"API_ADDR":                    ":9092",
			"API_TOKENS":                  "api-token-0123456789:orders+order-events, other-token-0123456789",
			"API_INSECURE":                "true",
			"API_TLS_CERT_FILE":           pki.ClientCert,
			"API_TLS_KEY_FILE":            pki.ClientKey,
			"API_MAX_REQUEST_SIZE":        "1048576",
			"API_MAX_REQUEST_MEMORY":      "33554432",
			"API_MAX_CONNS":               "100",
			"CONSOLE_MAX_CONNS":           "50",
			"HTTP_MAX_CONNS":              "20",

			"TOPIC_ORDERS_SINK":               "kafka",
			"TOPIC_ORDERS_SLOTS":              "16",
			"TOPIC_ORDERS_FORMAT":             "envelope",
			"TOPIC_ORDERS_KAFKA_TOPIC":        "orders.v1",
			"TOPIC_ORDERS_KAFKA_KEY":          "envelope",
			"TOPIC_ORDERS_DEDUP_WINDOW":       "24h",
			"TOPIC_ORDERS_MAX_MESSAGE_SIZE":   "4096",
			"TOPIC_ORDERS_FAIR":               "true",
			"TOPIC_ORDERS_KEY_RATE_LIMIT":     "20",
			"TOPIC_ORDER_EVENTS_SINK":         "amqp",
			"TOPIC_ORDER_EVENTS_SLOTS":        "1",
			"TOPIC_ORDER_EVENTS_KEY":          "legacy:delayqueue",
			"TOPIC_ORDER_EVENTS_EXCHANGE":     "events",
			"TOPIC_ORDER_EVENTS_ROUTING_KEY":  "order.delayed",
			"TOPIC_ORDER_EVENTS_RATE_LIMIT":   "0.5",
			"TOPIC_ORDER_EVENTS_HOLD_QUEUE":   "order-work",
			"TOPIC_ORDER_EVENTS_HOLD_ABOVE":   "1000",
			"TOPIC_ORDER_EVENTS_ROUTING_KEYS": " order.* , audit",
		},
		want: Config{
			RedisWait: RedisWait{Replicas: 1, Timeout: 250 * time.Millisecond, AOF: true},
			Redis: Redis{
				URL: "rediss://app:redis-url-pw@redis.internal:6380/2", Addrs: []string{"s1:26379", "s2:26379"},
				SentinelMaster: "mymaster", SentinelUsername: "sentinel-user", SentinelPassword: "sentinel-pw",
				Username: "acl-user", Password: "acl-pw",
				TLS: TLS{Enabled: true, CAFile: pki.CAFile, CertFile: pki.ClientCert, KeyFile: pki.ClientKey, InsecureSkipVerify: true},
			},
			AMQP: AMQP{URL: "amqps://user:amqp-pw@rabbit:5671/vhost", TLS: tls, MaxMessageSize: 1 << 20},
			Kafka: Kafka{
				Brokers: []string{"k1:9093", "k2:9093"}, ClientID: "db-1", Compression: "zstd", TLS: tls,
				SASLMechanism: "scram-sha-512", SASLUsername: "kafka-user", SASLPassword: "kafka-pw", SessionTimeout: 6 * time.Second,
			},
			RedisSink: RedisSink{Redis: Redis{
				URL: "rediss://app:redis-url-pw@redis.internal:6380/2", Addrs: []string{"s1:26379", "s2:26379"},
				SentinelMaster: "mymaster", SentinelUsername: "sentinel-user", SentinelPassword: "sentinel-pw",
				Username: "acl-user", Password: "acl-pw",
				TLS: TLS{Enabled: true, CAFile: pki.CAFile, CertFile: pki.ClientCert, KeyFile: pki.ClientKey, InsecureSkipVerify: true},
			}, MaxMessageSize: 128 << 20},
			KeyPrefix:   "dly",
			MessageSize: MessageSize{Default: 2 << 20, Topics: map[string]int{"ORDERS": 4096}},
			Topics: []Topic{{
				Name: "orders", Var: "ORDERS", Sink: "kafka", Slots: 16, Format: queue.FormatEnvelope, MaxMessageSize: 4096,
				RoutingKey: "orders", KafkaTopic: "orders.v1", KafkaKey: "envelope", DedupWindow: 24 * time.Hour, Fair: true, KeyRateLimit: 20,
			}, {
				Name: "order-events", Var: "ORDER_EVENTS", Sink: "amqp", Slots: 1, Key: "legacy:delayqueue", MaxMessageSize: 2 << 20,
				Format: queue.FormatRaw, Exchange: "events", RoutingKey: "order.delayed", KafkaTopic: "order-events", KafkaKey: "envelope",
				RateLimit: 0.5, HoldQueue: "order-work", HoldAbove: 1000,
			}},
			BatchSize: 1000, MaxInflightBatches: 4, Lease: time.Minute, MaxAttempts: 3,
			RetryBackoff: 250 * time.Millisecond, RetryBackoffMax: 10 * time.Second,
			PollInterval: 200 * time.Millisecond, ShutdownTimeout: 45 * time.Second,
			KeyspaceEvents: "off", KeyspacePollInterval: 30 * time.Second,
			HTTPAddr: "127.0.0.1:9090", HTTPMaxConns: 20, LogLevel: "debug", LogFormat: "text",
			ReplicaID: "pod-a", Ownership: "all", HeartbeatInterval: 2 * time.Second, HeartbeatTTL: 10 * time.Second,
			Console: Console{Addr: ":9091", Token: "console-token-0123", SecureCookie: true,
				Hosts: []string{"console.example.com", "localhost:9091", "[::1]"}, ReadRequiresToken: true, SessionTTL: time.Hour, MaxConns: 50},
			API: API{Addr: ":9092", Tokens: []APIToken{{Token: "api-token-0123456789", Topics: []string{"orders", "order-events"}},
				{Token: "other-token-0123456789"}}, Insecure: true, TLS: TLS{CertFile: pki.ClientCert, KeyFile: pki.ClientKey}, MaxRequestSize: 1 << 20,
				MaxRequestMemory: 32 << 20, MaxConns: 100,
				RoutingKeys: map[string][]string{"ORDER_EVENTS": {"order.*", "audit"}}},
		},
	}, {
		name: "cluster, kafka without TLS files, empty AMQP URL",
		vars: map[string]string{
			"REDIS_URL":     "redis://:cluster-pw@c1:7000",
			"REDIS_ADDRS":   "c1:7000,c2:7000,c3:7000",
			"REDIS_CLUSTER": "true",
			"AMQP_URL":      "",
			"KAFKA_TLS":     "true",
			"TOPICS":        "reminders",

			"TOPIC_REMINDERS_SINK":      "Kafka",
			"TOPIC_REMINDERS_SLOTS":     "1024",
			"TOPIC_REMINDERS_KAFKA_KEY": "id",
		},
		want: Config{
			RedisWait: RedisWait{Timeout: 500 * time.Millisecond},
			Redis:     Redis{URL: "redis://:cluster-pw@c1:7000", Addrs: []string{"c1:7000", "c2:7000", "c3:7000"}, Cluster: true},
			AMQP:      AMQP{MaxMessageSize: 128 << 20},
			Kafka:     Kafka{Brokers: []string{"127.0.0.1:9092"}, ClientID: "delaybridge", Compression: "none", TLS: TLS{Enabled: true}, SessionTimeout: 10 * time.Second},
			RedisSink: RedisSink{
				Redis:          Redis{URL: "redis://:cluster-pw@c1:7000", Addrs: []string{"c1:7000", "c2:7000", "c3:7000"}, Cluster: true},
				MaxMessageSize: 128 << 20,
			},

			KeyPrefix:   "dq",
			MessageSize: MessageSize{Default: 1 << 20},
			Topics: []Topic{{
				Name: "reminders", Var: "REMINDERS", Sink: "kafka", Slots: 1024, Format: queue.FormatRaw, MaxMessageSize: 1 << 20,
				RoutingKey: "reminders", KafkaTopic: "reminders", KafkaKey: "id",
			}},
			BatchSize: 500, MaxInflightBatches: 2, Lease: 30 * time.Second, MaxAttempts: 10,
			RetryBackoff: time.Second, RetryBackoffMax: 5 * time.Minute, PollInterval: time.Second, ShutdownTimeout: 20 * time.Second,
			KeyspaceEvents: "auto", KeyspacePollInterval: time.Minute,
			HTTPAddr: ":8080", HTTPMaxConns: 1024, LogLevel: "info", LogFormat: "json",
			ReplicaID: defaultReplicaID(t), Ownership: "rendezvous", HeartbeatInterval: time.Second, HeartbeatTTL: 5 * time.Second,
			Console: Console{Addr: "127.0.0.1:8081", SessionTTL: 12 * time.Hour, MaxConns: 1024},
			API:     API{MaxRequestSize: 16 << 20, MaxRequestMemory: 64 << 20, MaxConns: 1024},
		},
	}, {
		name: "redis stream sink on a Redis of its own",
		vars: map[string]string{
			"TOPICS":                      "reminders",
			"SINK_REDIS_URL":              "rediss://app:stream-pw@streams:6380/1",
			"SINK_REDIS_MAX_MESSAGE_SIZE": "1048576",

			"TOPIC_REMINDERS_SINK":          "redis",
			"TOPIC_REMINDERS_STREAM":        "reminders:due",
			"TOPIC_REMINDERS_STREAM_MAXLEN": "100000",
		},
		want: Config{
			RedisWait: RedisWait{Timeout: 500 * time.Millisecond},
			Redis:     Redis{URL: "redis://127.0.0.1:6379/0"},
			AMQP:      AMQP{URL: "amqp://guest:guest@127.0.0.1:5672/", MaxMessageSize: 128 << 20},
			Kafka:     Kafka{Brokers: []string{"127.0.0.1:9092"}, ClientID: "delaybridge", Compression: "none", SessionTimeout: 10 * time.Second},
			RedisSink: RedisSink{
				Redis:          Redis{URL: "rediss://app:stream-pw@streams:6380/1", TLS: TLS{Enabled: true}},
				MaxMessageSize: 1 << 20,
			},

			KeyPrefix:   "dq",
			MessageSize: MessageSize{Default: 1 << 20},
			Topics: []Topic{{
				Name: "reminders", Var: "REMINDERS", Sink: "redis", Slots: 1, Format: queue.FormatRaw, MaxMessageSize: 1 << 20,
				RoutingKey: "reminders", KafkaTopic: "reminders", KafkaKey: "envelope",
				Stream: "reminders:due", StreamMaxLen: 100000,
			}},
			BatchSize: 500, MaxInflightBatches: 2, Lease: 30 * time.Second, MaxAttempts: 10,
			RetryBackoff: time.Second, RetryBackoffMax: 5 * time.Minute, PollInterval: time.Second, ShutdownTimeout: 20 * time.Second,
			KeyspaceEvents: "auto", KeyspacePollInterval: time.Minute,
			HTTPAddr: ":8080", HTTPMaxConns: 1024, LogLevel: "info", LogFormat: "json",
			ReplicaID: defaultReplicaID(t), Ownership: "rendezvous", HeartbeatInterval: time.Second, HeartbeatTTL: 5 * time.Second,
			Console: Console{Addr: "127.0.0.1:8081", SessionTTL: 12 * time.Hour, MaxConns: 1024},
			API:     API{MaxRequestSize: 16 << 20, MaxRequestMemory: 64 << 20, MaxConns: 1024},
		},
	}, {
		name: "redis stream sink on a Sentinel deployment of its own, with TLS",
		vars: map[string]string{
			"TOPICS":                       "reminders",
			"SINK_REDIS_URL":               "redis://streams.internal/3",
			"SINK_REDIS_ADDRS":             "ss1:26379, ss2:26379",
			"SINK_REDIS_SENTINEL_MASTER":   "streams",
			"SINK_REDIS_SENTINEL_USERNAME": "sink-sentinel-user",
			"SINK_REDIS_SENTINEL_PASSWORD": "sink-sentinel-pw",
			"SINK_REDIS_USERNAME":          "sink-user",
			"SINK_REDIS_PASSWORD":          "sink-pw",
			"SINK_REDIS_CA_FILE":           pki.CAFile,
			"SINK_REDIS_CERT_FILE":         pki.ClientCert,
			"SINK_REDIS_KEY_FILE":          pki.ClientKey,
			"SINK_REDIS_TLS_INSECURE":      "true",
			"TOPIC_REMINDERS_SINK":         "redis",
			"TOPIC_REMINDERS_STREAM":       "reminders:due",
		},
		want: sinkRedisConfig(t, Redis{
			URL: "redis://streams.internal/3", Addrs: []string{"ss1:26379", "ss2:26379"}, SentinelMaster: "streams",
			SentinelUsername: "sink-sentinel-user", SentinelPassword: "sink-sentinel-pw", Username: "sink-user", Password: "sink-pw",
			TLS: TLS{Enabled: true, CAFile: pki.CAFile, CertFile: pki.ClientCert, KeyFile: pki.ClientKey, InsecureSkipVerify: true},
		}),
	}, {
		// No SINK_REDIS_URL: the cluster's nodes are all it takes.
		name: "redis stream sink on a Redis Cluster of its own",
		vars: map[string]string{
			"TOPICS":                 "reminders",
			"SINK_REDIS_ADDRS":       "sc1:7000,sc2:7000",
			"SINK_REDIS_CLUSTER":     "true",
			"TOPIC_REMINDERS_SINK":   "redis",
			"TOPIC_REMINDERS_STREAM": "reminders:due",
		},
		want: sinkRedisConfig(t, Redis{Addrs: []string{"sc1:7000", "sc2:7000"}, Cluster: true}),
	}, {
		name: "intakes from RabbitMQ and Kafka",
		vars: map[string]string{
			"TOPICS": "orders,reminders",

			"TOPIC_ORDERS_FORMAT":          "envelope",
			"TOPIC_ORDERS_INTAKE":          "amqp",
			"TOPIC_ORDERS_INTAKE_QUEUE":    "orders.delayed",
			"TOPIC_ORDERS_INTAKE_PREFETCH": "64",

			"TOPIC_REMINDERS_FORMAT":                 "envelope",
			"TOPIC_REMINDERS_INTAKE":                 "kafka",
			"TOPIC_REMINDERS_INTAKE_KAFKA_TOPIC":     "reminders.delay",
			"TOPIC_REMINDERS_INTAKE_KEY_FROM_RECORD": "true",
			"TOPIC_REMINDERS_ROUTING_KEY":            "reminders.due",
		},
		want: Config{
			RedisWait: RedisWait{Timeout: 500 * time.Millisecond},
			Redis:     Redis{URL: "redis://127.0.0.1:6379/0"},
			AMQP:      AMQP{URL: "amqp://guest:guest@127.0.0.1:5672/", MaxMessageSize: 128 << 20},
			Kafka:     Kafka{Brokers: []string{"127.0.0.1:9092"}, ClientID: "delaybridge", Compression: "none", SessionTimeout: 10 * time.Second},
			RedisSink: RedisSink{
				Redis:          Redis{URL: "redis://127.0.0.1:6379/0"},
				MaxMessageSize: 128 << 20,
			},

			KeyPrefix:   "dq",
			MessageSize: MessageSize{Default: 1 << 20},
			Topics: []Topic{{
				Name: "orders", Var: "ORDERS", Sink: "amqp", Slots: 1, Format: queue.FormatEnvelope, MaxMessageSize: 1 << 20,
				RoutingKey: "orders", KafkaTopic: "orders", KafkaKey: "envelope",
				Intake: "amqp", IntakeQueue: "orders.delayed", IntakePrefetch: 64,
			}, {
				Name: "reminders", Var: "REMINDERS", Sink: "amqp", Slots: 1, Format: queue.FormatEnvelope, MaxMessageSize: 1 << 20,
				RoutingKey: "reminders.due", KafkaTopic: "reminders", KafkaKey: "envelope",
				Intake: "kafka", IntakeKafkaTopic: "reminders.delay", IntakePrefetch: 256, IntakeOwnRoutingKey: true, IntakeKeyFromRecord: true,
			}},
			BatchSize: 500, MaxInflightBatches: 2, Lease: 30 * time.Second, MaxAttempts: 10,
			RetryBackoff: time.Second, RetryBackoffMax: 5 * time.Minute, PollInterval: time.Second, ShutdownTimeout: 20 * time.Second,
			KeyspaceEvents: "auto", KeyspacePollInterval: time.Minute,
			HTTPAddr: ":8080", HTTPMaxConns: 1024, LogLevel: "info", LogFormat: "json",
			ReplicaID: defaultReplicaID(t), Ownership: "rendezvous", HeartbeatInterval: time.Second, HeartbeatTTL: 5 * time.Second,
			Console: Console{Addr: "127.0.0.1:8081", SessionTTL: 12 * time.Hour, MaxConns: 1024},
			API:     API{MaxRequestSize: 16 << 20, MaxRequestMemory: 64 << 20, MaxConns: 1024},
		},
	}}

	// Every variable must be set, to something other than its default, by
	// some row: a variable added without a test here fails.
	set := map[string]bool{}
	for _, tt := range tests {
		for k := range tt.vars {
			set[strings.TrimPrefix(strings.TrimPrefix(strings.TrimPrefix(k, "TOPIC_ORDERS_"), "TOPIC_ORDER_EVENTS_"), "TOPIC_REMINDERS_")] = true
		}
	}
	for _, typ := range []reflect.Type{reflect.TypeFor[env](), reflect.TypeFor[topicEnv]()} {
		for f := range typ.Fields() {
			if !set[f.Tag.Get("envconfig")] {
				t.Errorf("no row sets %s: add it to this test", f.Tag.Get("envconfig"))
			}
		}
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			setEnv(t, tt.vars)
			got, err := Load()
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Load() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLoadReportsEveryProblemAtOnce(t *testing.T) {
	tests := []struct {
		name string
		vars map[string]string
		want []string // every variable named, sorted
	}{{
		name: "no topics",
		vars: map[string]string{
			"AMQP_URL":      "amqp//no-host",
			"LEASE":         "soon",
			"BATCH_SIZE":    "lots",
			"REDIS_CLUSTER": "maybe",
			"LOG_LEVEL":     "loud",
		},
		want: []string{"AMQP_URL", "BATCH_SIZE", "LEASE", "LOG_LEVEL", "REDIS_CLUSTER", "TOPICS"},
	}, {
		name: "bad topic and globals",
		vars: map[string]string{
			"TOPICS":             "orders,orders",
			"TOPIC_ORDERS_SLOTS": "3",
			"TOPIC_ORDERS_SINK":  "sqs",
			"AMQP_URL":           "http://rabbit:5672/",
			"RETRY_BACKOFF":      "1 second",
			"MAX_ATTEMPTS":       "0",
			"KAFKA_TLS":          "yes please",
			"HEARTBEAT_TTL":      "1s",
		},
		want: []string{"AMQP_URL", "HEARTBEAT_TTL", "KAFKA_TLS", "MAX_ATTEMPTS", "RETRY_BACKOFF", "TOPICS", "TOPIC_ORDERS_SINK", "TOPIC_ORDERS_SLOTS"},
	}, {
		name: "intake without envelope format, queue or brokers",
		vars: map[string]string{
			"TOPICS":                       "orders,reminders",
			"KAFKA_BROKERS":                "",
			"TOPIC_ORDERS_INTAKE":          "amqp",
			"TOPIC_ORDERS_INTAKE_PREFETCH": "0",
			"TOPIC_REMINDERS_FORMAT":       "envelope",
			"TOPIC_REMINDERS_INTAKE":       "kafka",
		},
		want: []string{"KAFKA_BROKERS", "TOPIC_ORDERS_INTAKE", "TOPIC_ORDERS_INTAKE_PREFETCH", "TOPIC_ORDERS_INTAKE_QUEUE", "TOPIC_REMINDERS_INTAKE_KAFKA_TOPIC"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			setEnv(t, tt.vars)
			_, err := Load()
			if err == nil {
				t.Fatal("Load accepted a bad configuration")
			}
			want := make([]string, len(tt.want))
			for i, v := range tt.want {
				want[i] = Prefix + "_" + v
				if !strings.Contains(err.Error(), want[i]) {
					t.Errorf("error text does not name %s:\n%v", want[i], err)
				}
			}
			if diff := cmp.Diff(want, varsNamed(t, err)); diff != "" {
				t.Errorf("variables named (-want +got):\n%s\nerror:\n%v", diff, err)
			}
		})
	}
}

func TestLoadIgnoresUnprefixedVariables(t *testing.T) {
	// envconfig alone would read these when the DELAYBRIDGE_ ones are unset.
	setEnv(t, map[string]string{"TOPICS": "orders"})
	for k, v := range map[string]string{"LOG_LEVEL": "loud", "BATCH_SIZE": "lots", "TOPICS": "x", "KEY": "someone-elses-key", "SLOTS": "3", "SINK": "sqs", "REDIS_URL": "redis://elsewhere:1/0"} {
		t.Setenv(k, v)
	}
	c, err := Load()
	if err != nil {
		t.Fatalf("Load read unprefixed variables: %v", err)
	}
	if c.Topics[0].Key != "" || c.LogLevel != "info" || c.Redis.URL != "redis://127.0.0.1:6379/0" {
		t.Errorf("Load read unprefixed variables: topic key %q, log level %q, redis URL %q", c.Topics[0].Key, c.LogLevel, c.Redis.URL)
	}
}
