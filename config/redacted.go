package config

import (
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// Redacted is the effective configuration for logging at start-up, keyed by
// variable name (DELAYBRIDGE_BATCH_SIZE → "500"), defaults and derived values
// filled in. Every variable tagged secret is redacted: a URL keeps all but
// its password, any other secret shows only whether it is set.
func (c Config) Redacted() map[string]string {
	m := c.values()
	// Redact by the env tags rather than in values, so a secret added later
	// is redacted without anyone remembering to.
	out := make(map[string]string, len(m))
	secret := secretNames()
	for k, v := range m {
		if secret[k] {
			v = redactVar(k, v)
		}
		out[Prefix+"_"+k] = v
	}
	return out
}

// values is every variable (without prefix) with its effective value, secrets
// in clear.
func (c Config) values() map[string]string {
	m := map[string]string{}
	maps.Copy(m, c.Redis.values("REDIS_"))
	maps.Copy(m, c.RedisWait.values())
	maps.Copy(m, c.RedisSink.Redis.values("SINK_REDIS_"))
	maps.Copy(m, c.brokerValues())
	maps.Copy(m, c.runValues())
	maps.Copy(m, c.Console.values())
	maps.Copy(m, c.API.values())
	maps.Copy(m, c.MessageSize.values())
	names := make([]string, len(c.Topics))
	for i, t := range c.Topics {
		names[i] = t.Name
		pre := "TOPIC_" + t.Var + "_"
		m[pre+"SINK"] = t.Sink
		m[pre+"SLOTS"] = strconv.Itoa(t.Slots)
		m[pre+"KEY"] = t.Key
		m[pre+"FORMAT"] = string(t.Format)
		m[pre+"EXCHANGE"] = t.Exchange
		m[pre+"ROUTING_KEY"] = t.RoutingKey
		m[pre+"ROUTING_KEYS"] = strings.Join(c.API.RoutingKeysOf(t.Name), ",")
		m[pre+"KAFKA_TOPIC"] = t.KafkaTopic
		m[pre+"KAFKA_KEY"] = t.KafkaKey
		m[pre+"STREAM"] = t.Stream
		m[pre+"STREAM_MAXLEN"] = strconv.FormatInt(t.StreamMaxLen, 10)
		maps.Copy(m, t.intakeValues(pre))
		maps.Copy(m, t.flowValues(pre))
		m[pre+"DEDUP_WINDOW"] = t.DedupWindow.String()
		m[pre+"MAX_MESSAGE_SIZE"] = strconv.Itoa(t.MaxMessageSize)
		m[pre+"FAIR"] = strconv.FormatBool(t.Fair)
		m[pre+"KEY_RATE_LIMIT"] = ""
		if t.KeyRateLimit > 0 {
			m[pre+"KEY_RATE_LIMIT"] = strconv.FormatFloat(t.KeyRateLimit, 'f', -1, 64)
		}
	}
	m["TOPICS"] = strings.Join(names, ",")
	return m
}

// values are r's variables, named pre+URL, pre+ADDRS, …
func (r Redis) values(pre string) map[string]string {
	return map[string]string{
		pre + "URL":               r.URL,
		pre + "ADDRS":             strings.Join(r.Addrs, ","),
		pre + "CLUSTER":           strconv.FormatBool(r.Cluster),
		pre + "SENTINEL_MASTER":   r.SentinelMaster,
		pre + "SENTINEL_USERNAME": r.SentinelUsername,
		pre + "SENTINEL_PASSWORD": r.SentinelPassword,
		pre + "USERNAME":          r.Username,
		pre + "PASSWORD":          r.Password,
		pre + "CA_FILE":           r.TLS.CAFile,
		pre + "CERT_FILE":         r.TLS.CertFile,
		pre + "KEY_FILE":          r.TLS.KeyFile,
		pre + "TLS_INSECURE":      strconv.FormatBool(r.TLS.InsecureSkipVerify),
	}
}

func (c Config) brokerValues() map[string]string {
	return map[string]string{
		"AMQP_URL":              c.AMQP.URL,
		"AMQP_CA_FILE":          c.AMQP.TLS.CAFile,
		"AMQP_CERT_FILE":        c.AMQP.TLS.CertFile,
		"AMQP_KEY_FILE":         c.AMQP.TLS.KeyFile,
		"AMQP_MAX_MESSAGE_SIZE": strconv.FormatInt(c.AMQP.MaxMessageSize, 10),

		"KAFKA_BROKERS":         strings.Join(c.Kafka.Brokers, ","),
		"KAFKA_CLIENT_ID":       c.Kafka.ClientID,
		"KAFKA_COMPRESSION":     c.Kafka.Compression,
		"KAFKA_TLS":             strconv.FormatBool(c.Kafka.TLS.Enabled),
		"KAFKA_CA_FILE":         c.Kafka.TLS.CAFile,
		"KAFKA_CERT_FILE":       c.Kafka.TLS.CertFile,
		"KAFKA_KEY_FILE":        c.Kafka.TLS.KeyFile,
		"KAFKA_SASL_MECHANISM":  c.Kafka.SASLMechanism,
		"KAFKA_SASL_USERNAME":   c.Kafka.SASLUsername,
		"KAFKA_SASL_PASSWORD":   c.Kafka.SASLPassword,
		"KAFKA_SESSION_TIMEOUT": c.Kafka.SessionTimeout.String(),

		"SINK_REDIS_MAX_MESSAGE_SIZE": strconv.Itoa(c.RedisSink.MaxMessageSize),
	}
}

// runValues are the daemon's own settings: keys, batches, retries, HTTP,
// logs and ownership.
func (c Config) runValues() map[string]string {
	return map[string]string{
		"KEY_PREFIX":             c.KeyPrefix,
		"BATCH_SIZE":             strconv.Itoa(c.BatchSize),
		"MAX_INFLIGHT_BATCHES":   strconv.Itoa(c.MaxInflightBatches),
		"LEASE":                  c.Lease.String(),
		"MAX_ATTEMPTS":           strconv.Itoa(c.MaxAttempts),
		"RETRY_BACKOFF":          c.RetryBackoff.String(),
		"RETRY_BACKOFF_MAX":      c.RetryBackoffMax.String(),
		"POLL_INTERVAL":          c.PollInterval.String(),
		"KEYSPACE_EVENTS":        c.KeyspaceEvents,
		"KEYSPACE_POLL_INTERVAL": c.KeyspacePollInterval.String(),
		"SHUTDOWN_TIMEOUT":       c.ShutdownTimeout.String(),
		"HTTP_ADDR":              c.HTTPAddr,
		"HTTP_MAX_CONNS":         strconv.Itoa(c.HTTPMaxConns),
		"LOG_LEVEL":              c.LogLevel,
		"LOG_FORMAT":             c.LogFormat,
		"REPLICA_ID":             c.ReplicaID,
		"OWNERSHIP":              c.Ownership,
		"HEARTBEAT_INTERVAL":     c.HeartbeatInterval.String(),
		"HEARTBEAT_TTL":          c.HeartbeatTTL.String(),
	}
}

// LogValue makes slog print the redacted configuration, so logging a Config
// never leaks a secret.
func (c Config) LogValue() slog.Value {
	m := c.Redacted()
	keys := slices.Sorted(maps.Keys(m))
	attrs := make([]slog.Attr, len(keys))
	for i, k := range keys {
		attrs[i] = slog.String(k, m[k])
	}
	return slog.GroupValue(attrs...)
}

// secretNames are the variables (without prefix) tagged secret.
func secretNames() map[string]bool {
	s := map[string]bool{}
	for f := range reflect.TypeFor[env]().Fields() {
		if f.Tag.Get("secret") == "true" {
			s[f.Tag.Get("envconfig")] = true
		}
	}
	return s
}
